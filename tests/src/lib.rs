//! Test harness: a fresh, migrated database per test, and the whole
//! application started on port 0 against it with a typed client.
//!
//! Tests find Postgres through `SLAPROOF_TEST_DATABASE_URL` (a role allowed
//! to create databases and roles; default
//! `postgres://postgres@127.0.0.1:5432/postgres`). Each test gets a database
//! of its own, named `slaproof_test_<uuid>`, dropped when the test's handle
//! is dropped, so no test depends on what another test or an earlier run
//! left behind.

pub mod chain;
pub mod fixtures;
pub mod maintenance;
pub mod scenario;
pub mod traffic;
pub mod world;

use std::net::SocketAddr;
use std::str::FromStr;

use anyhow::Context;
use slaproof::{Application, Config, Service};
use slaproof_store::Database;
use slaproof_store::scratch::{SERVICE_PASSWORD, SERVICE_ROLE, Scratch};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The variable naming the server tests create their databases on.
pub const DATABASE_URL_VAR: &str = "SLAPROOF_TEST_DATABASE_URL";
const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// Connection options of the administrative connection tests start from.
pub fn admin_options() -> PgConnectOptions {
    let url = std::env::var(DATABASE_URL_VAR).unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_owned());
    PgConnectOptions::from_str(&url)
        .unwrap_or_else(|e| panic!("{DATABASE_URL_VAR} is not a postgres URL: {e}"))
}

/// A database of one test's own, migrated, with a service login role.
/// Dropped (with its connections) when this handle is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    pub name: String,
    /// The schema owner: the admin role, as migrations run in production.
    pub owner: PgConnectOptions,
    /// The services' role: behind row-level security.
    pub service: PgConnectOptions,
    admin: PgConnectOptions,
}

impl TestDatabase {
    /// Creates and migrates a fresh database.
    pub async fn create() -> Self {
        Self::create_on(admin_options()).await
    }

    /// Creates and migrates a fresh database on the server `admin` reaches
    /// (a test's own cluster, say).
    pub async fn create_on(admin: PgConnectOptions) -> Self {
        Self::try_create(admin)
            .await
            .expect("creating a test database")
    }

    async fn try_create(admin: PgConnectOptions) -> anyhow::Result<Self> {
        let scratch = Scratch::create_on(admin.clone(), "slaproof_test")
            .await
            .with_context(|| {
                format!(
                    "making a test database; is Postgres running? set {DATABASE_URL_VAR} to point elsewhere"
                )
            })?;
        Ok(Self {
            name: scratch.name().to_owned(),
            owner: scratch.owner.clone(),
            service: scratch.service.clone(),
            admin,
        })
    }

    /// A pool as the services' role.
    pub async fn service_database(&self) -> Database {
        let db = Database::connect(&self.service, 5)
            .await
            .expect("connecting as the service role");
        db.check_service_role()
            .await
            .expect("the test service role is safe");
        db
    }

    /// A direct connection as the owner, to look behind row-level security.
    pub async fn owner_connection(&self) -> PgConnection {
        PgConnection::connect_with(&self.owner)
            .await
            .expect("connecting as the owner")
    }

    /// A `postgres://` URL of the service role, for processes under test.
    pub fn service_url(&self) -> String {
        url_of(&self.service, SERVICE_ROLE, Some(SERVICE_PASSWORD))
    }

    /// A `postgres://` URL of the owner, for processes under test.
    pub fn owner_url(&self) -> String {
        let user = self.owner.get_username().to_owned();
        let password = std::env::var(DATABASE_URL_VAR)
            .ok()
            .and_then(|u| url_password(&u));
        url_of(&self.owner, &user, password.as_deref())
    }
}

fn url_of(options: &PgConnectOptions, user: &str, password: Option<&str>) -> String {
    let auth = match password {
        Some(p) => format!("{user}:{p}"),
        None => user.to_owned(),
    };
    format!(
        "postgres://{auth}@{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("postgres")
    )
}

fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let userinfo = rest.split_once('@')?.0;
    userinfo.split_once(':').map(|(_, p)| p.to_owned())
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime, which cannot be blocked on;
        // a thread with a runtime of its own drops the database.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect_with(&admin).await.ok()?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}

/// The application running against a test database.
#[derive(Debug)]
pub struct TestApp {
    pub address: SocketAddr,
    pub client: TestClient,
    /// The services' pool, for arranging and asserting.
    pub db: Database,
    shutdown: CancellationToken,
    server: Option<JoinHandle<anyhow::Result<()>>>,
    // Last: dropped after the application has let go of it.
    pub database: TestDatabase,
}

/// Starts every service but attestation on port 0 against a fresh database.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Like [`spawn_app`], with a chance to change the configuration first.
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_on(TestDatabase::create().await, adjust).await
}

/// Like [`spawn_app_with`], against a database the test made.
pub async fn spawn_app_on(database: TestDatabase, adjust: impl FnOnce(&mut Config)) -> TestApp {
    let (address, db, shutdown, server) =
        start(&database, &database.service, &every_service(), adjust).await;
    TestApp {
        address,
        client: TestClient::new(address),
        db,
        shutdown,
        server: Some(server),
        database,
    }
}

/// One more copy of the application (every service but attestation, a
/// pool of its own) against `database`, as a second process would be.
#[derive(Debug)]
pub struct Replica {
    pub address: SocketAddr,
    pub client: TestClient,
    pub db: Database,
    shutdown: CancellationToken,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

/// Starts a [`Replica`] on port 0.
pub async fn spawn_replica(database: &TestDatabase, adjust: impl FnOnce(&mut Config)) -> Replica {
    spawn_replica_via(database, &database.service, adjust).await
}

/// Starts a [`Replica`] on port 0 whose services connect with `service`
/// (through a connection pooler, say).
pub async fn spawn_replica_via(
    database: &TestDatabase,
    service: &PgConnectOptions,
    adjust: impl FnOnce(&mut Config),
) -> Replica {
    replica(database, service, &every_service(), adjust).await
}

/// A [`Replica`] running only `services` (ingest alone, say, for a
/// benchmark that drives the evaluator itself).
pub async fn spawn_services(
    database: &TestDatabase,
    services: &[Service],
    adjust: impl FnOnce(&mut Config),
) -> Replica {
    replica(database, &database.service, services, adjust).await
}

async fn replica(
    database: &TestDatabase,
    service: &PgConnectOptions,
    services: &[Service],
    adjust: impl FnOnce(&mut Config),
) -> Replica {
    let (address, db, shutdown, server) = start(database, service, services, adjust).await;
    Replica {
        address,
        client: TestClient::new(address),
        db,
        shutdown,
        server: Some(server),
    }
}

/// Every service but attestation, which would make proving keys (seconds
/// of CPU) in the data folder for each test: the attestation tests run its
/// worker themselves, with keys made once.
fn every_service() -> Vec<Service> {
    Service::ALL
        .iter()
        .copied()
        .filter(|s| *s != Service::Attestation)
        .collect()
}

/// Builds and runs the application's `services`.
async fn start(
    database: &TestDatabase,
    service: &PgConnectOptions,
    services: &[Service],
    adjust: impl FnOnce(&mut Config),
) -> (
    SocketAddr,
    Database,
    CancellationToken,
    JoinHandle<anyhow::Result<()>>,
) {
    let mut config = Config::default();
    config.server.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.server.shutdown_grace_secs = 5;
    adjust(&mut config);
    let db = slaproof::app::open_database(&config, &database.owner, service, false)
        .await
        .expect("opening the test database");
    let app = Application::build(config, db.clone(), services)
        .await
        .expect("building the application");
    let address = app.local_addr();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run(shutdown.clone()));
    (address, db, shutdown, server)
}

impl Replica {
    /// Stops it gracefully and reports how its run ended.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        match self.server.take() {
            Some(server) => server.await.context("the server task panicked")?,
            None => Ok(()),
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl TestApp {
    /// Stops the application gracefully and reports how its run ended.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        match self.server.take() {
            Some(server) => server.await.context("the server task panicked")?,
            None => Ok(()),
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A typed client of the application's HTTP API.
#[derive(Debug, Clone)]
pub struct TestClient {
    base: String,
    http: reqwest::Client,
}

/// An answer: status, content type and JSON body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: serde_json::Value,
}

impl TestClient {
    pub fn new(address: SocketAddr) -> Self {
        Self {
            base: format!("http://{address}"),
            http: reqwest::Client::new(),
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.json().await.unwrap_or(serde_json::Value::Null);
        Answer {
            status,
            content_type,
            body,
        }
    }

    pub async fn healthz(&self) -> Answer {
        self.get("/healthz").await
    }

    pub async fn readyz(&self) -> Answer {
        self.get("/readyz").await
    }
}

/// A keyset that reads a whole list in one page, for tests that look at
/// everything a repository holds.
pub fn all_rows() -> slaproof_store::Keyset {
    slaproof_store::Keyset {
        after: None,
        limit: u32::MAX,
    }
}
