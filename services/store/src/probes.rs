//! Synthetic probe definitions, their schedule and their last result.
//!
//! Runners claim due probes across tenants with [`claim_due`] (one statement
//! that locks with `SKIP LOCKED` and moves `next_run_at` on), then read each
//! definition in the probe's own tenant transaction.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{EventId, ProbeId, TenantId};

use crate::{Database, Keyset, StoreError, TenantTx};

/// What a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// One request; good when it answers the expected status.
    Http,
    /// An OpenAI-style chat completion with `stream: true`: time to first
    /// token, time per output token.
    StreamingCompletion,
}

impl ProbeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Http => "http",
            ProbeKind::StreamingCompletion => "streaming_completion",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "http" => Some(ProbeKind::Http),
            "streaming_completion" => Some(ProbeKind::StreamingCompletion),
            _ => None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// Answered as expected.
    Good,
    /// Answered, but not as expected (another status, no token).
    Bad,
    /// No usable answer: timeout, refused connection, unresolvable host.
    Error,
}

impl ProbeOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeOutcome::Good => "good",
            ProbeOutcome::Bad => "bad",
            ProbeOutcome::Error => "error",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "good" => Some(ProbeOutcome::Good),
            "bad" => Some(ProbeOutcome::Bad),
            "error" => Some(ProbeOutcome::Error),
            _ => None,
        }
    }
}

/// A probe as its owner defines it. Checked by the service layer; the
/// schema's constraints are the last wall. `Debug` shows header names only:
/// their values may be credentials and must not reach a log.
#[derive(Clone, PartialEq, Eq)]
pub struct ProbeDefinition {
    pub name: String,
    pub service: String,
    /// The customer the probe measures for (its reference): its events
    /// name it. `None`: the provider's own probe.
    pub customer: Option<String>,
    pub model: Option<String>,
    pub kind: ProbeKind,
    pub method: String,
    pub url: String,
    /// Lower-case names; values may be credentials and are never answered.
    pub headers: BTreeMap<String, String>,
    pub body: Option<serde_json::Value>,
    pub expected_status: i32,
    pub interval_secs: i32,
    pub timeout_ms: i32,
    pub enabled: bool,
}

impl std::fmt::Debug for ProbeDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeDefinition")
            .field("name", &self.name)
            .field("service", &self.service)
            .field("customer", &self.customer)
            .field("model", &self.model)
            .field("kind", &self.kind)
            .field("method", &self.method)
            .field("url", &self.url)
            .field("header_names", &self.headers.keys().collect::<Vec<_>>())
            .field("body", &self.body.as_ref().map(|_| "…"))
            .field("expected_status", &self.expected_status)
            .field("interval_secs", &self.interval_secs)
            .field("timeout_ms", &self.timeout_ms)
            .field("enabled", &self.enabled)
            .finish()
    }
}

/// The summary of a probe's last run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProbeResult {
    pub at: DateTime<Utc>,
    pub outcome: ProbeOutcome,
    pub status: Option<i32>,
    /// The error class and what happened, for people.
    pub error: Option<String>,
    pub latency_us: Option<i64>,
}

/// A probe as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredProbe {
    pub id: ProbeId,
    pub definition: ProbeDefinition,
    pub next_run_at: DateTime<Utc>,
    pub last: Option<ProbeResult>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A due probe a runner has claimed: its slot is its alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimedProbe {
    pub tenant: TenantId,
    pub id: ProbeId,
    /// The slot this run stands for (the `next_run_at` it was claimed at).
    pub scheduled_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: uuid::Uuid,
    name: String,
    service: String,
    customer: Option<String>,
    model: Option<String>,
    kind: String,
    method: String,
    url: String,
    headers: serde_json::Value,
    body: Option<serde_json::Value>,
    expected_status: i32,
    interval_secs: i32,
    timeout_ms: i32,
    enabled: bool,
    next_run_at: DateTime<Utc>,
    last_run_at: Option<DateTime<Utc>>,
    last_outcome: Option<String>,
    last_status: Option<i32>,
    last_error: Option<String>,
    last_latency_us: Option<i64>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<Row> for StoredProbe {
    type Error = StoreError;

    fn try_from(r: Row) -> Result<Self, StoreError> {
        let corrupt = |reason: String| StoreError::Corrupt {
            what: "probe",
            reason,
        };
        let kind = ProbeKind::parse(&r.kind).ok_or_else(|| corrupt(format!("kind {}", r.kind)))?;
        let headers: BTreeMap<String, String> =
            serde_json::from_value(r.headers).map_err(|e| corrupt(format!("headers: {e}")))?;
        let last = match (r.last_run_at, r.last_outcome) {
            (Some(at), Some(outcome)) => Some(ProbeResult {
                at,
                outcome: ProbeOutcome::parse(&outcome)
                    .ok_or_else(|| corrupt(format!("last_outcome {outcome}")))?,
                status: r.last_status,
                error: r.last_error,
                latency_us: r.last_latency_us,
            }),
            _ => None,
        };
        Ok(StoredProbe {
            id: ProbeId::from_uuid(r.id),
            definition: ProbeDefinition {
                name: r.name,
                service: r.service,
                customer: r.customer,
                model: r.model,
                kind,
                method: r.method,
                url: r.url,
                headers,
                body: r.body,
                expected_status: r.expected_status,
                interval_secs: r.interval_secs,
                timeout_ms: r.timeout_ms,
                enabled: r.enabled,
            },
            next_run_at: r.next_run_at,
            last,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

const COLUMNS: &str = "id, name, service, customer, model, kind, method, url, headers, body, expected_status, \
    interval_secs, timeout_ms, enabled, next_run_at, last_run_at, last_outcome, last_status, last_error, \
    last_latency_us, created_at, updated_at";

fn headers_json(headers: &BTreeMap<String, String>) -> serde_json::Value {
    serde_json::Value::Object(
        headers
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

/// Every probe's request headers as stored, locked to the end of the
/// transaction (an edit meanwhile waits rather than being overwritten):
/// for a re-seal under a new key.
pub async fn all_headers(
    tx: &mut TenantTx,
) -> Result<Vec<(ProbeId, BTreeMap<String, String>)>, StoreError> {
    let rows: Vec<(uuid::Uuid, sqlx::types::Json<BTreeMap<String, String>>)> = sqlx::query_as(
        "SELECT id, headers FROM probes WHERE tenant_id = $1 ORDER BY id FOR UPDATE",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, headers)| (ProbeId::from_uuid(id), headers.0))
        .collect())
}

/// Replaces a probe's request headers with the same headers sealed anew.
/// `updated_at` stays: nothing the provider set changed.
pub async fn reseal_headers(
    tx: &mut TenantTx,
    id: ProbeId,
    headers: &BTreeMap<String, String>,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE probes SET headers = $3 WHERE tenant_id = $1 AND id = $2")
        .bind(tx.tenant().uuid())
        .bind(id.uuid())
        .bind(headers_json(headers))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Adds a probe; its first run is due at once, so a new probe shows a
/// result within a poll of the runners. Its later runs fall on slots of its
/// own (a phase from its id, see `slaproof_claim_probes`), so probes
/// created together do not keep firing together.
#[tracing::instrument(skip(tx, definition), fields(name = %definition.name))]
pub async fn create(
    tx: &mut TenantTx,
    definition: &ProbeDefinition,
) -> Result<StoredProbe, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO probes (tenant_id, id, name, service, model, kind, method, url, headers, body, \
             expected_status, interval_secs, timeout_ms, enabled, next_run_at, customer) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now(), $15) RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(ProbeId::new().uuid())
    .bind(&definition.name)
    .bind(&definition.service)
    .bind(&definition.model)
    .bind(definition.kind.as_str())
    .bind(&definition.method)
    .bind(&definition.url)
    .bind(headers_json(&definition.headers))
    .bind(&definition.body)
    .bind(definition.expected_status)
    .bind(definition.interval_secs)
    .bind(definition.timeout_ms)
    .bind(definition.enabled)
    .bind(&definition.customer)
    .fetch_one(&mut **tx)
    .await?;
    row.try_into()
}

/// How many probes the tenant has, counted under a per-tenant lock held to
/// the end of the transaction, so that concurrent creations each see the
/// others' (a cap checked with it holds).
pub async fn count_locked(tx: &mut TenantTx) -> Result<i64, StoreError> {
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashtextextended('slaproof.probes:' || $1::text, 0))",
    )
    .bind(tx.tenant().uuid())
    .execute(&mut **tx)
    .await?;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM probes WHERE tenant_id = $1")
        .bind(tx.tenant().uuid())
        .fetch_one(&mut **tx)
        .await?;
    Ok(n)
}

/// Every probe of the tenant, by name.
pub async fn list(tx: &mut TenantTx, page: &Keyset) -> Result<Vec<StoredProbe>, StoreError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM probes WHERE tenant_id = $1 AND ($2::text IS NULL OR name > $2) \
         ORDER BY name LIMIT $3"
    ))
    .bind(tx.tenant().uuid())
    .bind(&page.after)
    .bind(page.fetch())
    .fetch_all(&mut **tx)
    .await?;
    rows.into_iter().map(TryInto::try_into).collect()
}

/// The probe with this id.
pub async fn find(tx: &mut TenantTx, id: ProbeId) -> Result<StoredProbe, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM probes WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or_else(|| StoreError::not_found("probe", id))?
        .try_into()
}

/// The probe with this name.
pub async fn find_by_name(tx: &mut TenantTx, name: &str) -> Result<StoredProbe, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM probes WHERE tenant_id = $1 AND name = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(name)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or_else(|| StoreError::not_found("probe", name))?
        .try_into()
}

/// Replaces a probe's definition. A probe switched on is due at once; a
/// shorter interval brings the next run forward, never past its new
/// cadence.
#[tracing::instrument(skip(tx, definition), fields(name = %definition.name))]
pub async fn update(
    tx: &mut TenantTx,
    id: ProbeId,
    definition: &ProbeDefinition,
) -> Result<StoredProbe, StoreError> {
    let now = Utc::now();
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE probes SET name = $3, service = $4, model = $5, kind = $6, method = $7, url = $8, \
             headers = $9, body = $10, expected_status = $11, interval_secs = $12, timeout_ms = $13, \
             next_run_at = CASE WHEN $14 AND NOT enabled THEN $15::timestamptz \
                                ELSE least(next_run_at, $16::timestamptz) END, \
             enabled = $14, updated_at = $15, customer = $17 \
         WHERE tenant_id = $1 AND id = $2 RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(&definition.name)
    .bind(&definition.service)
    .bind(&definition.model)
    .bind(definition.kind.as_str())
    .bind(&definition.method)
    .bind(&definition.url)
    .bind(headers_json(&definition.headers))
    .bind(&definition.body)
    .bind(definition.expected_status)
    .bind(definition.interval_secs)
    .bind(definition.timeout_ms)
    .bind(definition.enabled)
    // Bound, not now() and not now() plus the interval: Citus refuses
    // anything not immutable inside CASE in an UPDATE.
    .bind(now)
    .bind(now + chrono::Duration::seconds(i64::from(definition.interval_secs)))
    .bind(&definition.customer)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or_else(|| StoreError::not_found("probe", id))?
        .try_into()
}

/// Makes a probe due now: the next poll of any runner runs it.
pub async fn run_now(tx: &mut TenantTx, id: ProbeId) -> Result<StoredProbe, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE probes SET next_run_at = least(next_run_at, now()) \
         WHERE tenant_id = $1 AND id = $2 RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or_else(|| StoreError::not_found("probe", id))?
        .try_into()
}

/// Deletes a probe. Its events stay: they are facts that SLAs counted.
pub async fn delete(tx: &mut TenantTx, id: ProbeId) -> Result<(), StoreError> {
    let deleted = sqlx::query("DELETE FROM probes WHERE tenant_id = $1 AND id = $2")
        .bind(tx.tenant().uuid())
        .bind(id.uuid())
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(StoreError::not_found("probe", id));
    }
    Ok(())
}

/// Records a run's summary, unless a later run has been recorded already
/// (two slots' runs may finish out of order).
pub async fn record_result(
    tx: &mut TenantTx,
    id: ProbeId,
    result: &ProbeResult,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE probes SET last_run_at = $3, last_outcome = $4, last_status = $5, last_error = $6, \
             last_latency_us = $7 \
         WHERE tenant_id = $1 AND id = $2 AND (last_run_at IS NULL OR last_run_at <= $3)",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(result.at)
    .bind(result.outcome.as_str())
    .bind(result.status)
    .bind(&result.error)
    .bind(result.latency_us)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Claims up to `limit` due probes across tenants, the tenants taking
/// turns, none given more than `per_tenant` runs counting the ones the
/// caller says it `held` already. Each claimed slot is this caller's
/// alone: the claim moved the probe's `next_run_at` on in the same
/// statement.
#[tracing::instrument(skip(db, held))]
pub async fn claim_due(
    db: &Database,
    limit: i32,
    per_tenant: i32,
    held: &[(TenantId, i32)],
) -> Result<Vec<ClaimedProbe>, StoreError> {
    let tenants: Vec<uuid::Uuid> = held.iter().map(|(t, _)| t.uuid()).collect();
    let counts: Vec<i32> = held.iter().map(|(_, n)| *n).collect();
    let mut tx = db.platform_tx().await?;
    let rows: Vec<(uuid::Uuid, uuid::Uuid, DateTime<Utc>)> = sqlx::query_as(
        "SELECT tenant_id, id, scheduled_at FROM slaproof_claim_probes($1, $2, $3, $4)",
    )
    .bind(limit)
    .bind(per_tenant)
    .bind(&tenants)
    .bind(&counts)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(|(tenant, id, scheduled_at)| ClaimedProbe {
            tenant: TenantId::from_uuid(tenant),
            id: ProbeId::from_uuid(id),
            scheduled_at,
        })
        .collect())
}

/// Whether the event stored under `(occurred_at, id)` is the probe run
/// `request_id`'s own: it has source `probe`, which only the probe runner
/// writes (the ingest API refuses it), and the run's request id. The runner
/// asks when its write found the key taken: a retry whose first attempt
/// committed finds its own event; anything else holds the key unfairly.
pub async fn holds_run(
    tx: &mut TenantTx,
    occurred_at: DateTime<Utc>,
    id: EventId,
    request_id: &str,
) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM events WHERE tenant_id = $1 AND occurred_at = $2 AND id = $3 \
             AND source = 'probe' AND request_id = $4)",
    )
    .bind(tx.tenant().uuid())
    .bind(occurred_at)
    .bind(id.uuid())
    .bind(request_id)
    .fetch_one(&mut **tx)
    .await?)
}

/// One recorded run of a probe, from its event.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ProbeRun {
    pub occurred_at: DateTime<Utc>,
    pub status: Option<i32>,
    pub error_class: Option<String>,
    pub latency_us: Option<i64>,
    pub ttft_us: Option<i64>,
    pub tpot_us: Option<i64>,
    pub output_tokens: Option<i32>,
}

/// The runs of a probe since `since`, newest first, at most `limit`: read
/// from its events (a run's request id is `<probe id>@<slot>`), bounded in
/// time so only the recent daily partitions are read.
#[tracing::instrument(skip(tx))]
pub async fn runs(
    tx: &mut TenantTx,
    probe: ProbeId,
    since: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<ProbeRun>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT occurred_at, status, error_class, latency_us, ttft_us, tpot_us, output_tokens \
         FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND source = 'probe' \
           AND request_id LIKE $3 \
         ORDER BY occurred_at DESC LIMIT $4",
    )
    .bind(tx.tenant().uuid())
    .bind(since)
    .bind(format!("{probe}@%"))
    .bind(i64::from(limit))
    .fetch_all(&mut **tx)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_header_values() {
        let definition = ProbeDefinition {
            name: "p".into(),
            service: "s".into(),
            customer: None,
            model: None,
            kind: ProbeKind::Http,
            method: "GET".into(),
            url: "https://api.example.com/".into(),
            headers: [("authorization".to_owned(), "Bearer sk-live-1".to_owned())].into(),
            body: None,
            expected_status: 200,
            interval_secs: 60,
            timeout_ms: 1000,
            enabled: true,
        };
        let shown = format!("{definition:?}");
        assert!(shown.contains("authorization"), "{shown}");
        assert!(!shown.contains("sk-live-1"), "{shown}");
    }
}
