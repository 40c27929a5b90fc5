//! One scenario many API tests start from: the application trusting the
//! test keys, a tenant with two customers, and the demo SLA for the first.

use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_domain::ids::{CustomerId, TenantId};
use slaproof_store::{customers, tenants};

use crate::fixtures::{self, trust_test_key};
use crate::{TestApp, spawn_app_with};

/// The demo SLA document (`acme-enterprise`, for `acme-corp`).
pub const DEMO_SLA: &str = include_str!("../../services/domain/fixtures/demo-sla.yaml");

/// A running application trusting the RS256 fixture key (and the
/// operator's), with one tenant, its customers `acme-corp` and `globex`,
/// and the demo SLA for `acme-corp`.
#[derive(Debug)]
pub struct World {
    pub app: TestApp,
    pub http: reqwest::Client,
    pub tenant: TenantId,
    pub acme: CustomerId,
    pub other_customer: CustomerId,
}

/// A new [`World`], on a database of its own.
pub async fn world() -> World {
    world_with(|_| {}).await
}

/// Like [`world`], with a chance to change the configuration first (the
/// test keys are trusted before `adjust` runs).
pub async fn world_with(adjust: impl FnOnce(&mut slaproof::Config)) -> World {
    let app = spawn_app_with(|config| {
        trust_test_key(config);
        adjust(config);
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let acme = customers::create(&mut tx, "acme-corp", "Acme")
        .await
        .unwrap()
        .id;
    let other_customer = customers::create(&mut tx, "globex", "Globex")
        .await
        .unwrap()
        .id;
    tx.commit().await.unwrap();
    let world = World {
        app,
        http: reqwest::Client::new(),
        tenant,
        acme,
        other_customer,
    };
    let admin = world.token(&["provider_admin"], None);
    let (status, body) = world
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": DEMO_SLA })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    world
}

impl World {
    pub fn claims(&self, roles: &[&str], customer: Option<CustomerId>) -> Value {
        fixtures::claims(self.tenant, roles, customer)
    }

    pub fn token(&self, roles: &[&str], customer: Option<CustomerId>) -> String {
        fixtures::token(self.tenant, roles, customer)
    }

    /// Calls the API as `token` (see [`fixtures::call`]).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        fixtures::call(&self.http, self.app.address, token, method, path, body).await
    }

    /// A GraphQL query as `token`; the answer must be 200.
    pub async fn graphql(&self, token: &str, query: &str) -> Value {
        let (status, body) = self
            .call("POST", "/graphql", token, Some(json!({ "query": query })))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}
