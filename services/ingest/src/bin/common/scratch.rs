//! The scratch database the ingest bench binaries (`ingest-bench`,
//! `ingest-rss`) run against: made, migrated, given a service role, and
//! dropped afterwards. Included by both with `#[path]`.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection, Executor};

const SERVICE_ROLE: &str = "slaproof_bench_service";
const SERVICE_PASSWORD: &str = "slaproof-bench-service";

/// The scratch database and the roles to reach it.
pub(crate) struct Scratch {
    admin: PgConnectOptions,
    name: String,
    /// The schema owner's connection (ingest-rss does not use it).
    #[allow(dead_code)]
    pub(crate) owner: PgConnectOptions,
    pub(crate) service: PgConnectOptions,
}

impl Scratch {
    /// A new migrated database named `<prefix>_<uuid>` on the server of
    /// `SLAPROOF_TEST_DATABASE_URL`, with a service login role.
    pub(crate) async fn create(prefix: &str) -> anyhow::Result<Self> {
        let url = std::env::var("SLAPROOF_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let admin = PgConnectOptions::from_str(&url)?;
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect_with(&admin).await?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await?;
        let owner = admin.clone().database(&name);
        slaproof_store::migrate(&owner).await?;
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

    pub(crate) fn service_url(&self) -> String {
        format!(
            "postgres://{SERVICE_ROLE}:{SERVICE_PASSWORD}@{}:{}/{}",
            self.service.get_host(),
            self.service.get_port(),
            self.name
        )
    }

    pub(crate) async fn drop_database(&self) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect_with(&self.admin).await?;
        conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
            .await?;
        Ok(())
    }
}
