//! Postgres access for every slaproof service: the pool, migrations, the one
//! tenant-scoped way to touch tenant rows, and the repositories.
//!
//! Tenant data is reached only through [`TenantTx`], a transaction that sets
//! `app.tenant_id` with `SET LOCAL`: the setting ends with the transaction,
//! so a pooled connection never carries a tenant into the next request, and
//! row-level security in the schema refuses every row of other tenants even
//! where a query forgets to filter.

pub mod alert_states;
pub mod attestation_batches;
pub mod attestations;
pub mod audit;
pub mod backlog;
pub mod charts;
pub mod coverage;
pub mod credits;
pub mod customers;
pub mod embed_origins;
pub mod embed_tokens;
mod error;
pub mod evaluation_failures;
pub mod evaluations;
pub mod event_reads;
pub mod events;
pub mod fee_corrections;
pub mod gauges;
pub mod histograms;
pub mod idempotency;
pub mod ingest_keys;
pub mod jobs;
pub mod maintenance;
pub mod measurements;
pub mod outbox;
pub mod partitions;
pub mod platform_secrets;
pub mod probes;
pub mod rollup_sums;
pub mod scratch;
pub mod signals;
pub mod sketch_rows;
pub mod slas;
pub mod tenants;
pub mod thresholds;
pub mod transparency;
pub mod webhooks;

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use slaproof_domain::ids::TenantId;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

pub use error::StoreError;

/// One page of a list ordered by a unique text key, read in SQL: the rows
/// whose key is after `after`, at most `limit + 1` of them (the extra row
/// says that another page follows). Stable under inserts: a row added
/// while a client pages shows up on a later page or not at all, never
/// twice, and no row is skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyset {
    /// The key of the last row of the previous page.
    pub after: Option<String>,
    /// Rows per page.
    pub limit: u32,
}

impl Keyset {
    /// The SQL `LIMIT`: one row past the page.
    pub fn fetch(&self) -> i64 {
        i64::from(self.limit) + 1
    }
}

/// The migrations every service shares, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Applies pending migrations, connected as the schema owner.
#[tracing::instrument(skip_all)]
pub async fn migrate(owner: &PgConnectOptions) -> Result<(), StoreError> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(owner.clone())
        .await
        .map_err(StoreError::Connect)?;
    MIGRATOR.run(&pool).await?;
    pool.close().await;
    Ok(())
}

/// The services' connection pool, logged in as a role behind row-level
/// security.
#[derive(Debug, Clone)]
pub struct Database {
    pool: PgPool,
}

impl Database {
    /// Connects lazily-checked: the first connection is made here, so a wrong
    /// URL fails at start, not on the first request.
    #[tracing::instrument(skip_all, fields(max_connections))]
    pub async fn connect(
        options: &PgConnectOptions,
        max_connections: u32,
    ) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await
            .map_err(StoreError::Connect)?;
        Ok(Self { pool })
    }

    /// Refuses a service role that row-level security would not bind: a
    /// superuser, a role with BYPASSRLS, or one that owns (or inherits the
    /// owner of) any table; and one that may create objects in `public`,
    /// where it could plant a function for the owner's sessions to run.
    /// Services call this at start.
    #[tracing::instrument(skip_all)]
    pub async fn check_service_role(&self) -> Result<(), StoreError> {
        type Row = (String, bool, bool, Option<String>, bool);
        let mut tx = self.pool.begin().await?;
        let (role, superuser, bypass, owns, creates): Row = sqlx::query_as(
            "SELECT r.rolname::text, r.rolsuper, r.rolbypassrls, \
                    (SELECT c.relname::text FROM pg_class c \
                     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') \
                       AND pg_has_role(current_user, c.relowner, 'USAGE') LIMIT 1), \
                    has_schema_privilege(current_user, 'public', 'CREATE') \
             FROM pg_roles r WHERE r.rolname = current_user",
        )
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        let problem = if superuser {
            Some("is a superuser")
        } else if bypass {
            Some("has BYPASSRLS")
        } else if owns.is_some() {
            Some("owns tables of the schema")
        } else if creates {
            Some(
                "may create objects in the schema public (REVOKE CREATE ON SCHEMA public FROM PUBLIC)",
            )
        } else {
            None
        };
        match problem {
            Some(problem) => Err(StoreError::UnsafeServiceRole {
                role,
                problem,
                table: owns,
            }),
            None => Ok(()),
        }
    }

    /// Opens a transaction acting for one tenant. Commit it with
    /// [`TenantTx::commit`]; dropping it rolls back.
    pub async fn tenant_tx(&self, tenant: TenantId) -> Result<TenantTx, StoreError> {
        let mut tx = self.pool.begin().await?;
        // `SET LOCAL`, not `set_config(…, true)`: Citus carries a `SET LOCAL`
        // to the workers a transaction touches (with
        // `citus.propagate_set_commands = 'local'`), and a function call it
        // does not. SET takes no parameter, so the id goes in as a literal:
        // a UUID's canonical text (hex digits and hyphens), never text
        // from a request. Not persistent: one statement per tenant would
        // crowd the connection's prepared-statement cache.
        let set = format!(
            "SET LOCAL app.tenant_id = '{}'",
            tenant.uuid().as_hyphenated()
        );
        sqlx::query(&set)
            .persistent(false)
            .execute(&mut *tx)
            .await?;
        Ok(TenantTx { tx, tenant })
    }

    /// Whether the database answers, within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> Result<(), StoreError> {
        // The simple protocol: one message, whatever pooler is in between.
        match tokio::time::timeout(timeout, sqlx::raw_sql("SELECT 1").execute(&self.pool)).await {
            Ok(result) => result.map(|_| ()).map_err(StoreError::from),
            Err(_) => Err(StoreError::Timeout("database ping")),
        }
    }

    /// The tenant a pooled session has set outside any transaction, and
    /// how many tenant rows (customers) it sees: always none and 0, since
    /// [`TenantTx`] sets the tenant for its transaction only. For tests
    /// of exactly that.
    pub async fn session_tenant(&self) -> Result<(Option<uuid::Uuid>, i64), StoreError> {
        let mut tx = self.pool.begin().await?;
        let seen =
            sqlx::query_as("SELECT slaproof_current_tenant(), (SELECT count(*) FROM customers)")
                .fetch_one(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok(seen)
    }

    /// A transaction acting for no tenant, for the cross-tenant functions
    /// of this crate (claims, key lookups, partitions). Not public: tenant
    /// data goes through [`Database::tenant_tx`]. Explicit even around one
    /// statement: behind a pooler in transaction mode (pgbouncer before
    /// 1.21) a statement's parse and its execution reach the same server
    /// connection only inside an open transaction.
    pub(crate) async fn platform_tx(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        Ok(self.pool.begin().await?)
    }

    /// Closes every connection; waits for connections in use to return.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A transaction acting for one tenant: the only door to tenant rows.
#[derive(Debug)]
pub struct TenantTx {
    tx: Transaction<'static, Postgres>,
    tenant: TenantId,
}

impl TenantTx {
    /// The tenant this transaction acts for.
    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    /// Makes the work durable.
    pub async fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().await.map_err(StoreError::from)
    }

    /// Abandons the work.
    pub async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await.map_err(StoreError::from)
    }

    /// Opens the savepoint `name` inside the transaction (`SAVEPOINT`):
    /// what follows can be undone alone ([`Self::rollback_to`]) while the
    /// transaction goes on.
    pub async fn savepoint(&mut self, name: Savepoint) -> Result<(), StoreError> {
        self.savepoint_statement("SAVEPOINT", name).await
    }

    /// Undoes what was done since the savepoint `name` was opened, which
    /// stays open (`ROLLBACK TO SAVEPOINT`).
    pub async fn rollback_to(&mut self, name: Savepoint) -> Result<(), StoreError> {
        self.savepoint_statement("ROLLBACK TO SAVEPOINT", name)
            .await
    }

    /// Keeps what was done since the savepoint `name` was opened as part
    /// of the transaction, and closes it (`RELEASE SAVEPOINT`).
    pub async fn release(&mut self, name: Savepoint) -> Result<(), StoreError> {
        self.savepoint_statement("RELEASE SAVEPOINT", name).await
    }

    async fn savepoint_statement(&mut self, verb: &str, name: Savepoint) -> Result<(), StoreError> {
        sqlx::query(&format!("{verb} {}", name.0))
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }
}

/// A savepoint's name: one of the few the code names, never text from
/// outside (it is written into the statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint(&'static str);

impl Savepoint {
    /// One SLA's evaluation.
    pub const SLA: Self = Self("slaproof_sla");
    /// The evaluations of a chunk of SLAs.
    pub const SLA_CHUNK: Self = Self("slaproof_chunk");
}

impl Deref for TenantTx {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.tx
    }
}

impl DerefMut for TenantTx {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.tx
    }
}
