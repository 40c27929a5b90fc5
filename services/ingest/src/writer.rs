//! The durable write: a batch goes into the tenant's events with `COPY`, in
//! one transaction, skipping events already stored.
//!
//! Postgres refuses `COPY FROM` into a table with row-level security, so
//! rows are copied into a per-connection temporary staging table (no RLS,
//! private to the session, emptied at commit) and moved into `events` with
//! one `INSERT … SELECT … ON CONFLICT DO NOTHING` in the same transaction:
//! the policy's `WITH CHECK` still refuses any row of another tenant, and a
//! retried event, whose `(tenant_id, occurred_at, id)` is stored already, is
//! counted as a duplicate instead of failing the batch.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use chrono::{NaiveDate, SecondsFormat};
use slaproof_domain::ids::TenantId;
use slaproof_store::events::StoredEvent;
use slaproof_store::{Database, StoreError, partitions};

/// Bytes of COPY data sent per message: large enough to keep the pipe full,
/// small enough that a batch is never held twice in memory at once.
const COPY_CHUNK: usize = 256 * 1024;

/// Quiets the "already exists, skipping" notice of [`STAGING`]. A statement
/// of its own: Citus sends a `SET LOCAL` to the workers of the transaction
/// with the whole query string it came in, and a temporary table created
/// on a worker makes the distributed commit (two-phase) fail.
const QUIET: &str = "SET LOCAL client_min_messages = warning";

const STAGING: &str = "CREATE TEMP TABLE IF NOT EXISTS ingest_staging ( \
        occurred_at timestamptz, id uuid, source text, service text, model text, request_id text, \
        status integer, error_class text, latency_us bigint, ttft_us bigint, tpot_us bigint, \
        input_tokens integer, output_tokens integer, streaming boolean, attributes jsonb, customer text \
    ) ON COMMIT DELETE ROWS";

const COPY: &str = "COPY ingest_staging (occurred_at, id, source, service, model, request_id, status, \
    error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, streaming, attributes, customer) \
    FROM STDIN";

const MOVE: &str = "INSERT INTO events (tenant_id, occurred_at, id, source, service, model, request_id, \
        status, error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, streaming, attributes, \
        customer) \
    SELECT $1, occurred_at, id, source, service, model, request_id, status, error_class, latency_us, \
        ttft_us, tpot_us, input_tokens, output_tokens, streaming, attributes, customer FROM ingest_staging \
    ON CONFLICT DO NOTHING";

/// What a committed batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Written {
    /// Rows new to the store.
    pub stored: u64,
    /// Events that were stored already (a retry), left as they were.
    pub duplicates: u64,
}

/// Why a batch was not stored. Nothing of it is, in every case.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("creating event partitions: {0}")]
    Partitions(#[source] StoreError),
    #[error("writing events: {0}")]
    Store(#[from] StoreError),
    #[error("writing events: {0}")]
    Sql(#[from] sqlx::Error),
}

impl WriteError {
    /// Whether the cause is passing (the database is unreachable,
    /// restarting, out of connections or resources, or a transaction
    /// conflict), so that the client should retry the same batch.
    pub fn is_transient(&self) -> bool {
        let err = match self {
            WriteError::Sql(err) => err,
            WriteError::Store(StoreError::Database(err) | StoreError::Connect(err))
            | WriteError::Partitions(StoreError::Database(err) | StoreError::Connect(err)) => err,
            WriteError::Store(StoreError::Timeout(_))
            | WriteError::Partitions(StoreError::Timeout(_)) => return true,
            _ => return false,
        };
        match err {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::Protocol(_) => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| {
                // 08 connection, 40 rollback (serialization, deadlock),
                // 53 resources, 57 operator intervention (shutdown), and
                // 23514 raised when a partition was dropped under us.
                ["08", "40", "53", "57"]
                    .iter()
                    .any(|class| code.starts_with(class))
                    || code == "23514"
            }),
            _ => false,
        }
    }
}

/// Writes batches for any tenant. Remembers which days have a partition,
/// so the partition check costs nothing after the first batch of a day.
#[derive(Debug)]
pub struct EventWriter {
    db: Database,
    known_days: Mutex<HashSet<NaiveDate>>,
}

impl EventWriter {
    pub fn new(db: Database) -> Self {
        Self {
            db,
            known_days: Mutex::new(HashSet::new()),
        }
    }

    /// Stores `events` for `tenant` in one transaction; returns after the
    /// commit. On error nothing of the batch is stored.
    #[tracing::instrument(skip(self, events), fields(events = events.len()))]
    pub async fn write(
        &self,
        tenant: TenantId,
        events: &[StoredEvent],
    ) -> Result<Written, WriteError> {
        if events.is_empty() {
            return Ok(Written::default());
        }
        self.ensure_partitions(events).await?;
        let result = self.copy(tenant, events).await;
        if let Err(err) = &result
            && err.is_transient()
        {
            // A day's partition may have been dropped by retention since it
            // was remembered; the retry checks again.
            self.forget_days();
        }
        result
    }

    /// Boxed as `Send` here, where the lifetimes are concrete: rustc cannot
    /// prove the sqlx executor futures `Send` for every lifetime at the
    /// handler (rust-lang/rust#100013).
    fn copy<'a>(
        &'a self,
        tenant: TenantId,
        events: &'a [StoredEvent],
    ) -> Pin<Box<dyn Future<Output = Result<Written, WriteError>> + Send + 'a>> {
        Box::pin(self.copy_inner(tenant, events))
    }

    async fn copy_inner(
        &self,
        tenant: TenantId,
        events: &[StoredEvent],
    ) -> Result<Written, WriteError> {
        let mut tx = self.db.tenant_tx(tenant).await?;
        sqlx::Executor::execute(&mut *tx, QUIET).await?;
        sqlx::Executor::execute(&mut *tx, STAGING).await?;
        let mut copy = tx.copy_in_raw(COPY).await?;
        let mut buf = Vec::with_capacity(COPY_CHUNK + 4096);
        for event in events {
            encode_row(&mut buf, event);
            if buf.len() >= COPY_CHUNK {
                copy.send(buf.as_slice()).await?;
                buf.clear();
            }
        }
        if !buf.is_empty() {
            copy.send(buf.as_slice()).await?;
        }
        let staged = copy.finish().await?;
        let stored = sqlx::query(MOVE)
            .bind(tenant.uuid())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(Written {
            stored,
            duplicates: staged.saturating_sub(stored),
        })
    }

    /// Creates the partitions of the batch's days that are not known to
    /// exist. Days are within retention (validated), so creating them is
    /// always right; housekeeping creates the usual ones ahead of time.
    async fn ensure_partitions(&self, events: &[StoredEvent]) -> Result<(), WriteError> {
        let days: BTreeSet<NaiveDate> = events.iter().map(|e| e.occurred_at.date_naive()).collect();
        let missing: Vec<NaiveDate> = {
            let known = self.lock_days();
            days.into_iter().filter(|d| !known.contains(d)).collect()
        };
        for day in missing {
            partitions::ensure(&self.db, day, day)
                .await
                .map_err(WriteError::Partitions)?;
            self.lock_days().insert(day);
        }
        Ok(())
    }

    fn lock_days(&self) -> std::sync::MutexGuard<'_, HashSet<NaiveDate>> {
        // A panic while holding the set cannot leave it inconsistent (it
        // only ever grows or empties), so a poisoned lock is still usable.
        self.known_days
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn forget_days(&self) {
        self.lock_days().clear();
    }
}

/// Appends one row in COPY text format: tab-separated, `\N` for NULL.
pub fn encode_row(buf: &mut Vec<u8>, e: &StoredEvent) {
    text(
        buf,
        &e.occurred_at.to_rfc3339_opts(SecondsFormat::Micros, true),
    );
    buf.push(b'\t');
    text(buf, &e.id.uuid().hyphenated().to_string());
    buf.push(b'\t');
    text(buf, e.source.as_str());
    buf.push(b'\t');
    text(buf, &e.service);
    buf.push(b'\t');
    opt_text(buf, e.model.as_deref());
    buf.push(b'\t');
    opt_text(buf, e.request_id.as_deref());
    buf.push(b'\t');
    opt_num(buf, e.status.map(i64::from));
    buf.push(b'\t');
    opt_text(buf, e.error_class.as_deref());
    buf.push(b'\t');
    opt_num(buf, e.latency_us);
    buf.push(b'\t');
    opt_num(buf, e.ttft_us);
    buf.push(b'\t');
    opt_num(buf, e.tpot_us);
    buf.push(b'\t');
    opt_num(buf, e.input_tokens.map(i64::from));
    buf.push(b'\t');
    opt_num(buf, e.output_tokens.map(i64::from));
    buf.push(b'\t');
    match e.streaming {
        Some(true) => buf.push(b't'),
        Some(false) => buf.push(b'f'),
        None => buf.extend_from_slice(b"\\N"),
    }
    buf.push(b'\t');
    text(buf, &e.attributes.to_string());
    buf.push(b'\t');
    opt_text(buf, e.customer.as_deref());
    buf.push(b'\n');
}

fn opt_text(buf: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(v) => text(buf, v),
        None => buf.extend_from_slice(b"\\N"),
    }
}

fn opt_num(buf: &mut Vec<u8>, value: Option<i64>) {
    match value {
        Some(v) => buf.extend_from_slice(v.to_string().as_bytes()),
        None => buf.extend_from_slice(b"\\N"),
    }
}

/// Escapes the characters COPY's text format gives meaning to.
fn text(buf: &mut Vec<u8>, value: &str) {
    for &b in value.as_bytes() {
        match b {
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'\t' => buf.extend_from_slice(b"\\t"),
            b'\n' => buf.extend_from_slice(b"\\n"),
            b'\r' => buf.extend_from_slice(b"\\r"),
            _ => buf.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slaproof_store::events::EventSource;

    #[test]
    fn rows_escape_what_copy_would_misread() {
        let event = StoredEvent {
            id: slaproof_domain::ids::EventId::from_uuid(uuid::Uuid::nil()),
            occurred_at: "2026-11-30T12:00:00.5Z".parse().unwrap(),
            source: EventSource::Provider,
            service: "a\tb\\c\nd".into(),
            customer: Some("acme-corp".into()),
            model: None,
            request_id: Some("r\r".into()),
            status: Some(200),
            error_class: None,
            latency_us: Some(5),
            ttft_us: None,
            tpot_us: None,
            input_tokens: Some(1),
            output_tokens: None,
            streaming: Some(false),
            attributes: serde_json::json!({"q\"": 1}),
        };
        let mut buf = Vec::new();
        encode_row(&mut buf, &event);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "2026-11-30T12:00:00.500000Z\t00000000-0000-0000-0000-000000000000\tprovider\t\
             a\\tb\\\\c\\nd\t\\N\tr\\r\t200\t\\N\t5\t\\N\t\\N\t1\t\\N\tf\t{\"q\\\\\"\":1}\tacme-corp\n"
        );
    }
}
