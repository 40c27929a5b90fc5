//! The evaluator's test scenario: a tenant under one SLA document, events
//! inserted with chosen times and statuses, rounds run at chosen instants,
//! and what they told through the outbox — so that evaluator tests state
//! their traffic and their expectations, not the plumbing.

use chrono::{DateTime, NaiveDate, Utc};
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{Settings, TenantRun, evaluate_tenant_up_to};
use slaproof_store::{Database, customers, partitions, slas, tenants};

use crate::TestDatabase;

/// An instant from RFC 3339 text.
pub fn at(text: &str) -> DateTime<Utc> {
    text.parse().expect("an RFC 3339 instant")
}

/// The evaluator's settings for tests: 5 minutes of grace, no settling.
pub fn settings() -> Settings {
    Settings {
        grace_secs: 300,
        settle_secs: 0,
        ..Settings::default()
    }
}

/// One `chat` request: when it occurred, when it was received, its status.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub occurred_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
    pub status: i32,
}

impl Request {
    /// Received when it occurred; good (200) or failed (503).
    pub fn at(occurred_at: DateTime<Utc>, good: bool) -> Self {
        Self {
            occurred_at,
            received_at: occurred_at,
            status: if good { 200 } else { 503 },
        }
    }
}

/// A tenant under one SLA, on a database of its own.
#[derive(Debug)]
pub struct Scenario {
    pub db: Database,
    pub tenant: TenantId,
    // Dropped last: the database goes with it.
    _database: TestDatabase,
}

impl Scenario {
    /// A tenant `acme` (with the customer `acme-corp`) under `document`,
    /// with event partitions for the days `from` to `to`.
    pub async fn new(document: &str, from: &str, to: &str) -> Self {
        let database = TestDatabase::create().await;
        let db = database.service_database().await;
        let (from, to): (NaiveDate, NaiveDate) =
            (from.parse().expect("a date"), to.parse().expect("a date"));
        partitions::ensure(&db, from, to).await.unwrap();
        let tenant = tenants::create(&db, "acme", "Acme AI").await.unwrap().id;
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        customers::create(&mut tx, "acme-corp", "Acme Corp")
            .await
            .unwrap();
        slas::apply(&mut tx, &SlaDefinition::from_document(document).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
        Self {
            db,
            tenant,
            _database: database,
        }
    }

    /// Registers more customers, by reference.
    pub async fn customers(&self, refs: &[&str]) {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        for r in refs {
            customers::create(&mut tx, r, r).await.unwrap();
        }
        tx.commit().await.unwrap();
    }

    /// Applies another SLA document (its customer must exist).
    pub async fn apply(&self, document: &str) {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        slas::apply(&mut tx, &SlaDefinition::from_document(document).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    /// The platform running over this scenario's database (every service
    /// but attestation, see [`crate::spawn_app_on`]): what it stored is
    /// read through the real HTTP API.
    pub async fn serve(
        self,
        adjust: impl FnOnce(&mut slaproof::Config),
    ) -> (crate::TestApp, TenantId) {
        let tenant = self.tenant;
        (crate::spawn_app_on(self._database, adjust).await, tenant)
    }

    /// Stores `chat` requests of model `big` (latency 1 ms) that served
    /// the customer `acme-corp`.
    pub async fn insert(&self, requests: &[Request]) {
        self.insert_of(Some("acme-corp"), requests).await;
    }

    /// Stores `chat` requests of model `big` (latency 1 ms) that served
    /// `customer` (by reference; none when `None`).
    pub async fn insert_of(&self, customer: Option<&str>, requests: &[Request]) {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        for chunk in requests.chunks(10_000) {
            let occurred: Vec<_> = chunk.iter().map(|r| r.occurred_at).collect();
            let received: Vec<_> = chunk.iter().map(|r| r.received_at).collect();
            let status: Vec<_> = chunk.iter().map(|r| r.status).collect();
            let ids: Vec<_> = chunk.iter().map(|_| uuid::Uuid::now_v7()).collect();
            sqlx::query(
                "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, status, latency_us, customer) \
                 SELECT $1, o, i, r, 'provider', 'chat', 'big', s, 1000, $6 \
                 FROM UNNEST($2::timestamptz[], $3::uuid[], $4::timestamptz[], $5::int4[]) AS t(o, i, r, s)",
            )
            .bind(self.tenant.uuid())
            .bind(&occurred)
            .bind(&ids)
            .bind(&received)
            .bind(&status)
            .bind(customer)
            .execute(&mut *tx)
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();
    }

    /// Stores events with every field as ingest validated them (latency,
    /// TTFT, tokens, streaming…), each received at the instant paired with
    /// it — when the request finished, say — so that simulated traffic
    /// reaches the evaluator in the order it would have arrived.
    pub async fn insert_events(
        &self,
        events: &[(slaproof_store::events::StoredEvent, DateTime<Utc>)],
    ) {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        slaproof_store::events::insert_received(&mut tx, events)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    /// Runs a round with the watermark moved to `as_of`; no SLA may fail.
    pub async fn run(&self, as_of: &str) -> TenantRun {
        self.run_with(as_of, &settings()).await
    }

    /// [`Scenario::run`] with other settings.
    pub async fn run_with(&self, as_of: &str, settings: &Settings) -> TenantRun {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        let run = evaluate_tenant_up_to(&mut tx, settings, Some(at(as_of)))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert!(run.failed_slas.is_empty(), "{:?}", run.failed_slas);
        run
    }

    /// Runs `sql` as the harness's admin, below the service role: the
    /// provider tampering with its own data.
    pub async fn owner_sql(&self, sql: &str) {
        let mut owner = self.owner().await;
        sqlx::query(sql).execute(&mut owner).await.unwrap();
    }

    /// A connection to this database as the harness's admin.
    pub async fn owner(&self) -> sqlx::PgConnection {
        use sqlx::Connection;
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        let name: String = sqlx::query_scalar("SELECT current_database()::text")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        sqlx::PgConnection::connect_with(&crate::admin_options().database(&name))
            .await
            .unwrap()
    }

    /// The application layer over this database, and a provider admin of
    /// the tenant: reads as REST and GraphQL make them.
    pub async fn app(&self) -> (slaproof_app::App, slaproof_app::Caller) {
        let app = slaproof_app::App::with_default_policy(self.db.clone())
            .await
            .expect("the shipped authorization policy");
        let admin = app
            .caller(slaproof_app::Principal::provider_admin(self.tenant))
            .await
            .expect("a provider admin's scopes");
        (app, admin)
    }

    /// A `customer_admin` of the customer `reference` (subject
    /// `user@<reference>`), as `app` resolves it.
    pub async fn customer_user(
        &self,
        app: &slaproof_app::App,
        reference: &str,
    ) -> slaproof_app::Caller {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        let customer = customers::find_by_ref(&mut tx, reference)
            .await
            .unwrap()
            .expect("the customer exists");
        tx.commit().await.unwrap();
        app.caller(slaproof_app::Principal {
            subject: format!("user@{reference}"),
            tenant: self.tenant,
            roles: vec!["customer_admin".into()],
            customer: Some(customer.id),
            embed: None,
        })
        .await
        .expect("a customer admin's scopes")
    }

    /// Everything told through the outbox so far, in order: (type, payload).
    pub async fn told(&self) -> Vec<(String, serde_json::Value)> {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        let rows = sqlx::query_as("SELECT event_type, payload FROM outbox ORDER BY seq")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        rows
    }

    /// The outbox messages of `event_type` told so far.
    pub async fn told_of(&self, event_type: &str) -> Vec<serde_json::Value> {
        self.told()
            .await
            .into_iter()
            .filter(|(t, _)| t == event_type)
            .map(|(_, p)| p)
            .collect()
    }
}
