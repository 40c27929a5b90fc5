//! A scratch database for benchmarks and tests: made on the server of `SLAPROOF_TEST_DATABASE_URL` (or one given), migrated, given a service login role, and dropped afterwards.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection, Executor};

use crate::{Database, StoreError};

/// The login role every scratch database's services connect as: one per
/// server, since roles are cluster-wide.
pub const SERVICE_ROLE: &str = "slaproof_scratch_service";
/// Its password (scratch servers only).
pub const SERVICE_PASSWORD: &str = "slaproof-scratch-service";

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
    /// role (shared by every scratch database of the server), on the server
    /// of `SLAPROOF_TEST_DATABASE_URL` (default: the local one as `postgres`).
    pub async fn create(prefix: &str) -> Result<Self, StoreError> {
        let url = std::env::var("SLAPROOF_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        Self::create_on(PgConnectOptions::from_str(&url)?, prefix).await
    }

    /// Like [`Scratch::create`], on the server `admin` reaches (a role that
    /// may create databases and roles).
    pub async fn create_on(admin: PgConnectOptions, prefix: &str) -> Result<Self, StoreError> {
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect_with(&admin).await?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await?;
        let owner = admin.clone().database(&name);
        crate::migrate(&owner).await?;
        // Roles are cluster-wide and tests run in parallel: several may try
        // to create the role at once, and a duplicate is fine.
        let mut conn = PgConnection::connect_with(&owner).await?;
        conn.execute(
            format!(
                "DO $$ BEGIN \
                   IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SERVICE_ROLE}') THEN \
                     BEGIN \
                       CREATE ROLE {SERVICE_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS \
                         PASSWORD '{SERVICE_PASSWORD}' IN ROLE slaproof_service; \
                     EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; \
                     END; \
                   END IF; \
                 END $$"
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

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's admin connection (the role that made the database).
    pub fn admin(&self) -> &PgConnectOptions {
        &self.admin
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
