//! The transparency log's rows: each tenant's log (size, last day built),
//! its entries (which event is which leaf), its stored hashes packed in
//! chunks, and its signed daily heads. The math is the domain's
//! (`slaproof_domain::transparency`); this module only keeps and reads.

use chrono::{DateTime, NaiveDate, Utc};
use slaproof_domain::transparency::Hash;
use slaproof_domain::transparency::tree::Hashes;

use crate::{StoreError, TenantTx};

/// Stored hashes per chunk row.
pub const CHUNK_HASHES: u64 = 1024;
/// Rows written per statement when a day is appended.
const WRITE_BATCH: usize = 10_000;

/// A tenant's log as its builder found it, locked for this transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogState {
    pub size: u64,
    pub logged_through: Option<NaiveDate>,
}

/// Takes the tenant's log for building (made on first use), or `None` when
/// another builder holds it: one builder per tenant across replicas.
#[tracing::instrument(skip(tx))]
pub async fn lock_log(tx: &mut TenantTx) -> Result<Option<LogState>, StoreError> {
    sqlx::query("INSERT INTO transparency_logs (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(tx.tenant().uuid())
        .execute(&mut **tx)
        .await?;
    let row: Option<(i64, Option<NaiveDate>)> = sqlx::query_as(
        "SELECT size, logged_through FROM transparency_logs WHERE tenant_id = $1 \
         FOR UPDATE SKIP LOCKED",
    )
    .bind(tx.tenant().uuid())
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(|(size, logged_through)| LogState {
        size: size as u64,
        logged_through,
    }))
}

/// The tenant's log as last built, without locking it.
pub async fn log_state(tx: &mut TenantTx) -> Result<Option<LogState>, StoreError> {
    let row: Option<(i64, Option<NaiveDate>)> =
        sqlx::query_as("SELECT size, logged_through FROM transparency_logs WHERE tenant_id = $1")
            .bind(tx.tenant().uuid())
            .fetch_optional(&mut **tx)
            .await?;
    Ok(row.map(|(size, logged_through)| LogState {
        size: size as u64,
        logged_through,
    }))
}

/// The earliest time of an event at or after `since` that no log holds.
pub async fn first_unlogged(
    tx: &mut TenantTx,
    since: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT min(e.occurred_at) FROM events e WHERE e.tenant_id = $1 AND e.occurred_at >= $2 \
           AND NOT EXISTS (SELECT 1 FROM transparency_entries t WHERE t.tenant_id = e.tenant_id \
                           AND t.occurred_at = e.occurred_at AND t.event_id = e.id)",
    )
    .bind(tx.tenant().uuid())
    .bind(since)
    .fetch_one(&mut **tx)
    .await?)
}

/// An event's fields as the log's leaf holds them.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LoggedEvent {
    pub id: uuid::Uuid,
    pub occurred_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
    pub source: String,
    pub service: String,
    /// The customer the request served, when the event named one.
    pub customer: Option<String>,
    pub model: Option<String>,
    pub request_id: Option<String>,
    pub status: Option<i32>,
    pub error_class: Option<String>,
    pub latency_us: Option<i64>,
    pub ttft_us: Option<i64>,
    pub tpot_us: Option<i64>,
    pub input_tokens: Option<i32>,
    pub output_tokens: Option<i32>,
    pub streaming: Option<bool>,
}

const EVENT_COLUMNS: &str = "e.id, e.occurred_at, e.received_at, e.source, e.service, e.customer, e.model, \
    e.request_id, e.status, e.error_class, e.latency_us, e.ttft_us, e.tpot_us, e.input_tokens, \
    e.output_tokens, e.streaming";

/// Which events a page of a day's batch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// Events of earlier days in `[since, start)` that no log holds,
    /// stored from `received_from` on (no earlier build could have missed
    /// an event stored before it). Read by a scan filtered on the time
    /// stored, so the days already logged are not probed event by event.
    Late {
        since: DateTime<Utc>,
        start: DateTime<Utc>,
        received_from: DateTime<Utc>,
    },
    /// The day's own events, `[start, until)`: no earlier batch can hold
    /// one, so none is looked up in the log.
    Day {
        start: DateTime<Utc>,
        until: DateTime<Utc>,
    },
}

/// Up to `limit` events of `batch` after the key `after`, in the log's
/// order (time, then id).
#[tracing::instrument(skip(tx))]
pub async fn batch_page(
    tx: &mut TenantTx,
    batch: Batch,
    after: Option<(DateTime<Utc>, uuid::Uuid)>,
    limit: i64,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let (from, until, received_from, late) = match batch {
        Batch::Late {
            since,
            start,
            received_from,
        } => (since, start, received_from, true),
        Batch::Day { start, until } => (start, until, start, false),
    };
    let (after_at, after_id) = after.unwrap_or((from, uuid::Uuid::nil()));
    let unlogged = if late {
        "AND e.received_at >= $7 \
         AND NOT EXISTS (SELECT 1 FROM transparency_entries t WHERE t.tenant_id = e.tenant_id \
                         AND t.occurred_at = e.occurred_at AND t.event_id = e.id)"
    } else {
        "AND $7::timestamptz IS NOT NULL"
    };
    Ok(sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM events e \
         WHERE e.tenant_id = $1 AND e.occurred_at >= $2 AND e.occurred_at < $3 \
           AND (e.occurred_at, e.id) > ($4, $5) {unlogged} \
         ORDER BY e.occurred_at, e.id LIMIT $6"
    ))
    .bind(tx.tenant().uuid())
    .bind(from)
    .bind(until)
    .bind(after_at)
    .bind(after_id)
    .bind(limit)
    .bind(received_from)
    .fetch_all(&mut **tx)
    .await?)
}

/// The stored hashes at `indexes`: each read as its 32-byte slice of its
/// chunk. An index the log does not hold is an error naming it.
#[tracing::instrument(skip(tx, indexes), fields(count = indexes.len()))]
pub async fn read_hashes(tx: &mut TenantTx, indexes: &[u64]) -> Result<Hashes, StoreError> {
    let wanted: Vec<i64> = indexes.iter().map(|&i| i as i64).collect();
    let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT i, substring(h.hashes FROM CAST((i % $3) * 32 + 1 AS integer) FOR 32) \
         FROM unnest($2::bigint[]) AS i \
         JOIN transparency_hashes h ON h.tenant_id = $1 AND h.chunk = i / $3",
    )
    .bind(tx.tenant().uuid())
    .bind(&wanted)
    .bind(CHUNK_HASHES as i64)
    .fetch_all(&mut **tx)
    .await?;
    let mut hashes = Hashes::new();
    for (index, bytes) in rows {
        if let Ok(bytes) = <[u8; 32]>::try_from(bytes.as_slice()) {
            hashes.insert(index as u64, Hash(bytes));
        }
    }
    Ok(hashes)
}

/// Appends `added` to the log's stored hashes, the first at stored index
/// `from` (the count the log held): the last partial chunk is extended,
/// the rest written as new chunks.
#[tracing::instrument(skip(tx, added), fields(count = added.len()))]
pub async fn append_hashes(tx: &mut TenantTx, from: u64, added: &[Hash]) -> Result<(), StoreError> {
    let mut at = from;
    let mut rest = added;
    let offset = (from % CHUNK_HASHES) as usize;
    if offset != 0 && !rest.is_empty() {
        let take = rest.len().min(CHUNK_HASHES as usize - offset);
        let bytes: Vec<u8> = rest[..take].iter().flat_map(|h| h.0).collect();
        let updated = sqlx::query(
            "UPDATE transparency_hashes SET hashes = hashes || $3 \
             WHERE tenant_id = $1 AND chunk = $2 AND octet_length(hashes) = $4",
        )
        .bind(tx.tenant().uuid())
        .bind((from / CHUNK_HASHES) as i64)
        .bind(bytes)
        .bind((offset * 32) as i32)
        .execute(&mut **tx)
        .await?
        .rows_affected();
        if updated != 1 {
            return Err(StoreError::Conflict {
                constraint: "transparency_hashes_whole".into(),
                message: format!("the log's last chunk does not end at stored hash {from}"),
            });
        }
        at += take as u64;
        rest = &rest[take..];
    }
    let chunks: Vec<(i64, Vec<u8>)> = rest
        .chunks(CHUNK_HASHES as usize)
        .enumerate()
        .map(|(k, hashes)| {
            (
                (at / CHUNK_HASHES) as i64 + k as i64,
                hashes.iter().flat_map(|h| h.0).collect(),
            )
        })
        .collect();
    for batch in chunks.chunks(WRITE_BATCH / 100) {
        let (ids, data): (Vec<i64>, Vec<Vec<u8>>) = batch.iter().cloned().unzip();
        sqlx::query(
            "INSERT INTO transparency_hashes (tenant_id, chunk, hashes) \
             SELECT $1, c, d FROM unnest($2::bigint[], $3::bytea[]) AS x (c, d)",
        )
        .bind(tx.tenant().uuid())
        .bind(&ids)
        .bind(&data)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// One logged event's place in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntry {
    pub occurred_at: DateTime<Utc>,
    pub event_id: uuid::Uuid,
    pub leaf_index: u64,
    pub late: bool,
    pub request_id: Option<String>,
    /// The customer the event named, kept as logged.
    pub customer: Option<String>,
}

/// Records the leaves of `log_day`'s batch.
#[tracing::instrument(skip(tx, entries), fields(count = entries.len()))]
pub async fn insert_entries(
    tx: &mut TenantTx,
    log_day: NaiveDate,
    entries: &[NewEntry],
) -> Result<(), StoreError> {
    for batch in entries.chunks(WRITE_BATCH) {
        let at: Vec<DateTime<Utc>> = batch.iter().map(|e| e.occurred_at).collect();
        let ids: Vec<uuid::Uuid> = batch.iter().map(|e| e.event_id).collect();
        let index: Vec<i64> = batch.iter().map(|e| e.leaf_index as i64).collect();
        let late: Vec<bool> = batch.iter().map(|e| e.late).collect();
        let requests: Vec<Option<&str>> = batch.iter().map(|e| e.request_id.as_deref()).collect();
        let customers: Vec<Option<&str>> = batch.iter().map(|e| e.customer.as_deref()).collect();
        sqlx::query(
            "INSERT INTO transparency_entries (tenant_id, occurred_at, event_id, leaf_index, log_day, late, request_id, \
                 customer) \
             SELECT $1, a, i, n, $2, l, r, c \
             FROM unnest($3::timestamptz[], $4::uuid[], $5::bigint[], $6::bool[], $7::text[], $8::text[]) \
                 AS x (a, i, n, l, r, c)",
        )
        .bind(tx.tenant().uuid())
        .bind(log_day)
        .bind(&at)
        .bind(&ids)
        .bind(&index)
        .bind(&late)
        .bind(&requests)
        .bind(&customers)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// A day's signed head.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DayHead {
    pub log_day: NaiveDate,
    pub first_index: i64,
    pub size: i64,
    pub root: Vec<u8>,
    pub late_entries: i64,
    pub checkpoint: String,
    pub verifier_key: String,
    pub built_at: DateTime<Utc>,
    /// Where the head is anchored, once it is (read only: written by
    /// [`record_anchor`]).
    #[sqlx(default)]
    pub anchor: Option<serde_json::Value>,
}

/// Records where the head of `day` is anchored.
pub async fn record_anchor(
    tx: &mut TenantTx,
    day: NaiveDate,
    head_id: &str,
    anchor: &serde_json::Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO transparency_anchors (tenant_id, log_day, head_id, anchor) VALUES ($1, $2, $3, $4)",
    )
    .bind(tx.tenant().uuid())
    .bind(day)
    .bind(head_id)
    .bind(anchor)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Records `head` and moves the log to its size and day.
#[tracing::instrument(skip(tx, head), fields(day = %head.log_day, size = head.size))]
pub async fn record_head(tx: &mut TenantTx, head: &DayHead) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO transparency_heads (tenant_id, log_day, first_index, size, root, late_entries, \
             checkpoint, verifier_key, built_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(tx.tenant().uuid())
    .bind(head.log_day)
    .bind(head.first_index)
    .bind(head.size)
    .bind(&head.root)
    .bind(head.late_entries)
    .bind(&head.checkpoint)
    .bind(&head.verifier_key)
    .bind(head.built_at)
    .execute(&mut **tx)
    .await?;
    sqlx::query("UPDATE transparency_logs SET size = $2, logged_through = $3 WHERE tenant_id = $1")
        .bind(tx.tenant().uuid())
        .bind(head.size)
        .bind(head.log_day)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

const HEAD_COLUMNS: &str = "h.log_day, h.first_index, h.size, h.root, h.late_entries, \
    h.checkpoint, h.verifier_key, h.built_at, a.anchor";
const HEADS: &str = "transparency_heads h LEFT JOIN transparency_anchors a \
    ON a.tenant_id = h.tenant_id AND a.log_day = h.log_day";

/// The heads of days in `[from, to]`, oldest first.
pub async fn heads(
    tx: &mut TenantTx,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<DayHead>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {HEAD_COLUMNS} FROM {HEADS} \
         WHERE h.tenant_id = $1 AND h.log_day BETWEEN $2 AND $3 ORDER BY h.log_day"
    ))
    .bind(tx.tenant().uuid())
    .bind(from)
    .bind(to)
    .fetch_all(&mut **tx)
    .await?)
}

/// The head of `day`, if that day is built.
pub async fn head(tx: &mut TenantTx, day: NaiveDate) -> Result<Option<DayHead>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {HEAD_COLUMNS} FROM {HEADS} WHERE h.tenant_id = $1 AND h.log_day = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(day)
    .fetch_optional(&mut **tx)
    .await?)
}

/// The latest head.
pub async fn latest_head(tx: &mut TenantTx) -> Result<Option<DayHead>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {HEAD_COLUMNS} FROM {HEADS} WHERE h.tenant_id = $1 \
         ORDER BY h.log_day DESC LIMIT 1"
    ))
    .bind(tx.tenant().uuid())
    .fetch_optional(&mut **tx)
    .await?)
}

/// A logged event's leaf index and batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Entry {
    pub leaf_index: i64,
    pub log_day: NaiveDate,
    pub late: bool,
}

/// Where the log holds `event`, if it does.
pub async fn entry(
    tx: &mut TenantTx,
    occurred_at: DateTime<Utc>,
    event: uuid::Uuid,
) -> Result<Option<Entry>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT leaf_index, log_day, late FROM transparency_entries \
         WHERE tenant_id = $1 AND occurred_at = $2 AND event_id = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(occurred_at)
    .bind(event)
    .fetch_optional(&mut **tx)
    .await?)
}

/// The stored events with these request ids, of the requests that served
/// `customer` only when given (a customer's own, by its reference), newest
/// first per id. Logged events are found through the
/// log's request-id index; ids the log does not hold are looked for among
/// the events from `unlogged_since` on (a scan of those partitions: the
/// events table has no request-id index), every partition when `None`.
#[tracing::instrument(skip(tx, request_ids), fields(count = request_ids.len()))]
pub async fn events_by_request(
    tx: &mut TenantTx,
    request_ids: &[String],
    customer: Option<&str>,
    unlogged_since: Option<DateTime<Utc>>,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let mut found: Vec<LoggedEvent> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM transparency_entries t \
         JOIN events e ON e.tenant_id = t.tenant_id AND e.occurred_at = t.occurred_at \
              AND e.id = t.event_id \
         WHERE t.tenant_id = $1 AND t.request_id = ANY($2) \
           AND ($3::text IS NULL OR t.customer = $3)"
    ))
    .bind(tx.tenant().uuid())
    .bind(request_ids)
    .bind(customer)
    .fetch_all(&mut **tx)
    .await?;
    let seen: std::collections::HashSet<&str> = found
        .iter()
        .filter_map(|e| e.request_id.as_deref())
        .collect();
    let rest: Vec<&str> = request_ids
        .iter()
        .map(String::as_str)
        .filter(|id| !seen.contains(id))
        .collect();
    if !rest.is_empty() {
        let unlogged: Vec<LoggedEvent> = sqlx::query_as(&format!(
            "SELECT {EVENT_COLUMNS} FROM events e \
             WHERE e.tenant_id = $1 AND e.request_id = ANY($2) \
               AND ($3::text IS NULL OR e.customer = $3) \
               AND ($4::timestamptz IS NULL OR e.occurred_at >= $4) \
               AND NOT EXISTS (SELECT 1 FROM transparency_entries t WHERE t.tenant_id = e.tenant_id \
                               AND t.occurred_at = e.occurred_at AND t.event_id = e.id)"
        ))
        .bind(tx.tenant().uuid())
        .bind(&rest)
        .bind(customer)
        .bind(unlogged_since)
        .fetch_all(&mut **tx)
        .await?;
        found.extend(unlogged);
    }
    found.sort_by(|a, b| {
        (&a.request_id, std::cmp::Reverse(a.occurred_at), a.id).cmp(&(
            &b.request_id,
            std::cmp::Reverse(b.occurred_at),
            b.id,
        ))
    });
    Ok(found)
}

/// The day batch `[first, end)` of the log: each entry's event, in leaf
/// order, `None` where the event is gone. For export and audit.
pub async fn batch_events(
    tx: &mut TenantTx,
    first: i64,
    end: i64,
) -> Result<Vec<(i64, bool, Option<LoggedEvent>)>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        leaf_index: i64,
        late: bool,
        #[sqlx(flatten)]
        event: LoggedEventRow,
    }
    #[derive(sqlx::FromRow)]
    struct LoggedEventRow {
        id: Option<uuid::Uuid>,
        occurred_at: Option<DateTime<Utc>>,
        received_at: Option<DateTime<Utc>>,
        source: Option<String>,
        service: Option<String>,
        customer: Option<String>,
        model: Option<String>,
        request_id: Option<String>,
        status: Option<i32>,
        error_class: Option<String>,
        latency_us: Option<i64>,
        ttft_us: Option<i64>,
        tpot_us: Option<i64>,
        input_tokens: Option<i32>,
        output_tokens: Option<i32>,
        streaming: Option<bool>,
    }
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT t.leaf_index, t.late, {EVENT_COLUMNS} FROM transparency_entries t \
         LEFT JOIN events e ON e.tenant_id = t.tenant_id AND e.occurred_at = t.occurred_at \
              AND e.id = t.event_id \
         WHERE t.tenant_id = $1 AND t.leaf_index >= $2 AND t.leaf_index < $3 \
         ORDER BY t.leaf_index"
    ))
    .bind(tx.tenant().uuid())
    .bind(first)
    .bind(end)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let e = r.event;
            let event = match (e.id, e.occurred_at, e.received_at, e.source, e.service) {
                (Some(id), Some(occurred_at), Some(received_at), Some(source), Some(service)) => {
                    Some(LoggedEvent {
                        id,
                        occurred_at,
                        received_at,
                        source,
                        service,
                        customer: e.customer,
                        model: e.model,
                        request_id: e.request_id,
                        status: e.status,
                        error_class: e.error_class,
                        latency_us: e.latency_us,
                        ttft_us: e.ttft_us,
                        tpot_us: e.tpot_us,
                        input_tokens: e.input_tokens,
                        output_tokens: e.output_tokens,
                        streaming: e.streaming,
                    })
                }
                _ => None,
            };
            (r.leaf_index, r.late, event)
        })
        .collect())
}

/// Where the log holds each of these events (by events key), if it does.
pub async fn entries_of(
    tx: &mut TenantTx,
    keys: &[(DateTime<Utc>, uuid::Uuid)],
) -> Result<Vec<(uuid::Uuid, Entry)>, StoreError> {
    let at: Vec<DateTime<Utc>> = keys.iter().map(|k| k.0).collect();
    let ids: Vec<uuid::Uuid> = keys.iter().map(|k| k.1).collect();
    let rows: Vec<(uuid::Uuid, i64, NaiveDate, bool)> = sqlx::query_as(
        "SELECT t.event_id, t.leaf_index, t.log_day, t.late \
         FROM unnest($2::timestamptz[], $3::uuid[]) AS k (a, i) \
         JOIN transparency_entries t ON t.tenant_id = $1 AND t.occurred_at = k.a AND t.event_id = k.i",
    )
    .bind(tx.tenant().uuid())
    .bind(&at)
    .bind(&ids)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, leaf_index, log_day, late)| {
            (
                id,
                Entry {
                    leaf_index,
                    log_day,
                    late,
                },
            )
        })
        .collect())
}

/// A logged request of a customer that its own records do not hold.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Unclaimed {
    pub request_id: Option<String>,
    pub event_id: uuid::Uuid,
    pub occurred_at: DateTime<Utc>,
    pub log_day: NaiveDate,
    pub leaf_index: i64,
}

/// How many unclaimed requests started on each UTC day, in day order.
pub type UnclaimedByDay = Vec<(NaiveDate, i64)>;

/// The logged requests that served `customer` (its reference) and started
/// in `[from, to)` whose request id is not among `claimed` (or that have
/// none): per UTC day of their start, how many; and the first `limit` of
/// them in time order.
#[tracing::instrument(skip(tx, claimed), fields(claimed = claimed.len()))]
pub async fn unclaimed(
    tx: &mut TenantTx,
    customer: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    claimed: &[String],
    limit: i64,
) -> Result<(UnclaimedByDay, Vec<Unclaimed>), StoreError> {
    // The customer as logged, not the events' column: a request the
    // provider re-attributed afterwards is still the customer's to see.
    const LOGGED_FOR: &str = "FROM transparency_entries t \
         WHERE t.tenant_id = $1 AND t.customer = $4 AND t.occurred_at >= $2 AND t.occurred_at < $3 \
           AND (t.request_id IS NULL OR NOT (t.request_id = ANY($5)))";
    let by_day: UnclaimedByDay = sqlx::query_as(&format!(
        "SELECT (t.occurred_at AT TIME ZONE 'UTC')::date AS day, count(*) {LOGGED_FOR} \
         GROUP BY day ORDER BY day"
    ))
    .bind(tx.tenant().uuid())
    .bind(from)
    .bind(to)
    .bind(customer)
    .bind(claimed)
    .fetch_all(&mut **tx)
    .await?;
    let first: Vec<Unclaimed> = sqlx::query_as(&format!(
        "SELECT t.request_id, t.event_id, t.occurred_at, t.log_day, t.leaf_index {LOGGED_FOR} \
         ORDER BY t.occurred_at, t.event_id LIMIT $6"
    ))
    .bind(tx.tenant().uuid())
    .bind(from)
    .bind(to)
    .bind(customer)
    .bind(claimed)
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    Ok((by_day, first))
}

/// A kept check report's summary.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct CheckSummary {
    pub id: uuid::Uuid,
    pub customer_id: Option<uuid::Uuid>,
    pub checked_by: String,
    pub checked_at: DateTime<Utc>,
    pub head_day: Option<NaiveDate>,
    pub head_size: Option<i64>,
    pub requests: i32,
    pub included: i32,
    pub disagreeing: i32,
    pub altered: i32,
    pub not_logged: i32,
    pub missing: i32,
}

/// Keeps a check's report.
pub async fn record_check(
    tx: &mut TenantTx,
    summary: &CheckSummary,
    report: &serde_json::Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO transparency_checks (tenant_id, id, customer_id, checked_by, checked_at, \
             head_day, head_size, requests, included, disagreeing, altered, not_logged, missing, report) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(tx.tenant().uuid())
    .bind(summary.id)
    .bind(summary.customer_id)
    .bind(&summary.checked_by)
    .bind(summary.checked_at)
    .bind(summary.head_day)
    .bind(summary.head_size)
    .bind(summary.requests)
    .bind(summary.included)
    .bind(summary.disagreeing)
    .bind(summary.altered)
    .bind(summary.not_logged)
    .bind(summary.missing)
    .bind(report)
    .execute(&mut **tx)
    .await?;
    // Only the newest reports of this caller's side stay.
    sqlx::query(
        "DELETE FROM transparency_checks WHERE tenant_id = $1 \
           AND customer_id IS NOT DISTINCT FROM $2 AND id NOT IN ( \
             SELECT id FROM transparency_checks WHERE tenant_id = $1 \
               AND customer_id IS NOT DISTINCT FROM $2 \
             ORDER BY checked_at DESC, id DESC LIMIT $3)",
    )
    .bind(tx.tenant().uuid())
    .bind(summary.customer_id)
    .bind(CHECKS_KEPT)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The reports of bulk checks kept per customer (and for the provider's
/// own checks): the newest, older ones deleted as new ones are recorded.
pub const CHECKS_KEPT: i64 = 20;

const CHECK_COLUMNS: &str = "id, customer_id, checked_by, checked_at, head_day, head_size, \
    requests, included, disagreeing, altered, not_logged, missing";

/// The latest check run for `customer` (the provider's own when `None`).
pub async fn latest_check(
    tx: &mut TenantTx,
    customer: Option<uuid::Uuid>,
) -> Result<Option<CheckSummary>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {CHECK_COLUMNS} FROM transparency_checks \
         WHERE tenant_id = $1 AND customer_id IS NOT DISTINCT FROM $2 \
         ORDER BY checked_at DESC, id DESC LIMIT 1"
    ))
    .bind(tx.tenant().uuid())
    .bind(customer)
    .fetch_optional(&mut **tx)
    .await?)
}

/// A kept report, if `customer` may read it (`None`: the provider, who
/// reads all).
pub async fn check_report(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    customer: Option<uuid::Uuid>,
) -> Result<Option<serde_json::Value>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT report FROM transparency_checks WHERE tenant_id = $1 AND id = $2 \
           AND ($3::uuid IS NULL OR customer_id = $3)",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(customer)
    .fetch_optional(&mut **tx)
    .await?)
}
