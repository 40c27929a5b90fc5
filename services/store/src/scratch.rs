//! A scratch database for benchmarks: made on the server of `SLAPROOF_TEST_DATABASE_URL`, migrated, given a service login role, and dropped afterwards.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection, Executor};

use crate::{Database, StoreError};

const SERVICE_ROLE: &str = "slaproof_bench_service";
const SERVICE_PASSWORD: &str = "slaproof-bench-service";

/// The scratch database and the roles to reach it.
#[derive(Debug, Clone)]
pub struct Scratch {
    admin: PgConnectOptions,
    name: String,
    /// The schema owner's connection (migrations ran as it).
    pub owner: PgConnectOptions,
    /// The service login: what every service connects as.
    pub service: PgConnectOptions,
}

impl Scratch {
    /// A new migrated database named `<prefix>_<uuid>` with a service login
    /// role (shared by every scratch database of the server).
    pub async fn create(prefix: &str) -> Result<Self, StoreError> {
        let url = std::env::var("SLAPROOF_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let admin = PgConnectOptions::from_str(&url)?;
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect_with(&admin).await?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await?;
        let owner = admin.clone().database(&name);
        crate::migrate(&owner).await?;
        let mut conn = PgConnection::connect_with(&owner).await?;
        conn.execute(
            format!(
                "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SERVICE_ROLE}') THEN \
                 CREATE ROLE {SERVICE_ROLE} LOGIN PASSWORD '{SERVICE_PASSWORD}' IN ROLE slaproof_service; \
                 END IF; END $$"
            )
            .as_str(),
        )
        .await?;
        conn.close().await?;
        let service = admin
            .clone()
            .username(SERVICE_ROLE)
            .password(SERVICE_PASSWORD)
            .database(&name);
        Ok(Self {
            admin,
            name,
            owner,
            service,
        })
    }

    /// A pool of `connections` as the service role, checked as services
    /// check theirs.
    pub async fn service_database(&self, connections: u32) -> Result<Database, StoreError> {
        let db = Database::connect(&self.service, connections).await?;
        db.check_service_role().await?;
        Ok(db)
    }

    /// The service login as a URL, for a process of its own.
    pub fn service_url(&self) -> String {
        format!(
            "postgres://{SERVICE_ROLE}:{SERVICE_PASSWORD}@{}:{}/{}",
            self.service.get_host(),
            self.service.get_port(),
            self.name
        )
    }

    /// Drops the database, whoever is still connected.
    pub async fn drop_database(&self) -> Result<(), StoreError> {
        let mut conn = PgConnection::connect_with(&self.admin).await?;
        conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
            .await?;
        Ok(())
    }
}
