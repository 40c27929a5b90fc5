//! Serves the whole application on a fresh test database with one tenant,
//! its customer `acme-corp` and the demo SLA, and prints the address and a
//! provider-admin token: what an outside client (schemathesis, curl) needs.
//! Runs until SIGINT or SIGTERM.
//!
//!     cargo run -p slaproof-tests --example api-serve

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use slaproof_api::settings::{KeyAlgorithm, KeySettings};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::{customers, slas, tenants};
use slaproof_tests::spawn_app_with;

const RS_PRIVATE: &str = include_str!("../../services/api/fixtures/rs256-private.pem");
const RS_PUBLIC: &str = include_str!("../../services/api/fixtures/rs256-public.pem");
const DEMO_SLA: &str = include_str!("../../services/domain/fixtures/demo-sla.yaml");

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let app = spawn_app_with(|config| {
        config.api.keys = vec![KeySettings {
            id: "serve".into(),
            algorithm: KeyAlgorithm::RS256,
            public_key_pem: Some(RS_PUBLIC.into()),
            secret: None,
            operator: false,
            tenants: Vec::new(),
        }];
    })
    .await;
    let tenant = tenants::create(&app.db, "serve", "Serve").await?.id;
    let mut tx = app.db.tenant_tx(tenant).await?;
    customers::create(&mut tx, "acme-corp", "Acme").await?;
    slas::apply(&mut tx, &SlaDefinition::from_document(DEMO_SLA)?).await?;
    tx.commit().await?;
    let claims = json!({
        "sub": "serve", "iss": "slaproof", "aud": "slaproof-api",
        "exp": jsonwebtoken::get_current_timestamp() + 4 * 3600,
        "tenant": tenant.to_string(), "roles": ["provider_admin"],
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("serve".into());
    let token = jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(RS_PRIVATE.as_bytes())?,
    )?;
    println!("ADDRESS=http://{}", app.address);
    println!("TOKEN={token}");
    let shutdown = tokio_util::sync::CancellationToken::new();
    slaproof::app::cancel_on_signals(shutdown.clone());
    shutdown.cancelled().await;
    app.stop().await?;
    Ok(())
}
