//! Service credits: customers' fees, the frozen results a credit is computed
//! from, incidents found in the minute rollups, and the append-only ledger.

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};
use slaproof_domain::credit::Currency;
use slaproof_domain::ids::{CreditId, CustomerId, SlaId};

use crate::jobs::{self, NewJob};
use crate::{Keyset, StoreError, TenantTx};

/// A credit job's payload: the SLA's period whose credit compensation
/// computes from the results in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreditRequest {
    pub sla: SlaId,
    pub period_start: DateTime<Utc>,
}

/// Asks compensation for the period's credit, in `tx`: one job per SLA and
/// period (asking again while one is pending makes it due now, or runs it
/// once more after the worker holding it).
pub async fn request(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: DateTime<Utc>,
) -> Result<(), StoreError> {
    let request = CreditRequest { sla, period_start };
    jobs::enqueue(
        tx,
        &NewJob {
            kind: jobs::CREDIT.to_owned(),
            payload: serde_json::to_value(request).unwrap_or_default(),
            dedup_key: Some(format!("{sla}:{}", period_start.to_rfc3339())),
            run_at: Utc::now(),
        },
    )
    .await?;
    Ok(())
}

/// A customer's fee per SLA period from an instant on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fee {
    pub customer: CustomerId,
    /// From when it applies; for a date, the date's midnight UTC (see
    /// `effective_on`).
    pub effective_from: DateTime<Utc>,
    /// The date it applies from in each SLA's time zone, when recorded as
    /// a date.
    pub effective_on: Option<NaiveDate>,
    pub currency: String,
    pub minor_units: i16,
    pub amount_minor: i64,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
}

impl Fee {
    /// The fee's currency, as recorded.
    pub fn currency(&self) -> Result<Currency, StoreError> {
        currency_of(&self.currency, self.minor_units)
    }
}

/// A currency as a row records it (code and minor-unit exponent), checked
/// when it was written.
pub(crate) fn currency_of(code: &str, minor_units: i16) -> Result<Currency, StoreError> {
    Currency::new(code, u8::try_from(minor_units).ok()).map_err(|e| StoreError::Corrupt {
        what: "recorded currency",
        reason: e.to_string(),
    })
}

type FeeRow = (
    uuid::Uuid,
    DateTime<Utc>,
    Option<NaiveDate>,
    String,
    i16,
    i64,
    DateTime<Utc>,
    String,
);

fn fee(row: FeeRow) -> Fee {
    let (
        customer,
        effective_from,
        effective_on,
        currency,
        minor_units,
        amount_minor,
        created_at,
        created_by,
    ) = row;
    Fee {
        customer: CustomerId::from_uuid(customer),
        effective_from,
        effective_on,
        currency,
        minor_units,
        amount_minor,
        created_at,
        created_by,
    }
}

const FEE_COLUMNS: &str = "customer_id, effective_from, effective_on, currency, minor_units, \
     amount_minor, created_at, created_by";

/// Records a fee from `fee.effective_from` on. A fee already recorded from
/// that very instant is a conflict: the history is never rewritten.
pub async fn add_fee(tx: &mut TenantTx, new: &Fee) -> Result<Fee, StoreError> {
    let row: FeeRow = sqlx::query_as(&format!(
        "INSERT INTO customer_fees (tenant_id, customer_id, effective_from, effective_on, currency, \
             minor_units, amount_minor, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         RETURNING {FEE_COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(new.customer.uuid())
    .bind(new.effective_from)
    .bind(new.effective_on)
    .bind(&new.currency)
    .bind(new.minor_units)
    .bind(new.amount_minor)
    .bind(&new.created_by)
    .fetch_one(&mut **tx)
    .await?;
    Ok(fee(row))
}

/// A customer's fees, oldest first.
pub async fn fees(tx: &mut TenantTx, customer: CustomerId) -> Result<Vec<Fee>, StoreError> {
    let rows: Vec<FeeRow> = sqlx::query_as(&format!(
        "SELECT {FEE_COLUMNS} FROM customer_fees WHERE tenant_id = $1 AND customer_id = $2 \
         ORDER BY effective_from"
    ))
    .bind(tx.tenant().uuid())
    .bind(customer.uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(fee).collect())
}

/// The latest period credited to `customer` on a fee (an entry in the
/// ledger for it, under any SLA, whose computation read a fee): its start
/// and end. Credits that needed no fee (impact under a money cap) do not
/// count: a fee recorded for them changes nothing they were told.
pub async fn last_credited(
    tx: &mut TenantTx,
    customer: CustomerId,
) -> Result<Option<(DateTime<Utc>, DateTime<Utc>)>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT period_start, period_end FROM credit_entries WHERE tenant_id = $1 AND customer_id = $2 \
           AND jsonb_typeof(computation #> '{inputs,fee}') = 'object' \
         ORDER BY period_end DESC LIMIT 1",
    )
    .bind(tx.tenant().uuid())
    .bind(customer.uuid())
    .fetch_optional(&mut **tx)
    .await?)
}

/// The fee of the period starting at `period_start` of an SLA in `zone`
/// (an IANA name): the latest in effect then, a fee from a date taking
/// effect at that date's midnight in `zone`.
pub async fn fee_at(
    tx: &mut TenantTx,
    customer: CustomerId,
    period_start: DateTime<Utc>,
    zone: &str,
) -> Result<Option<Fee>, StoreError> {
    let row: Option<FeeRow> = sqlx::query_as(&format!(
        "SELECT {FEE_COLUMNS} FROM ( \
             SELECT *, coalesce(effective_on::timestamp AT TIME ZONE $4, effective_from) AS takes_effect \
             FROM customer_fees WHERE tenant_id = $1 AND customer_id = $2) f \
         WHERE takes_effect <= $3 ORDER BY takes_effect DESC, effective_from DESC LIMIT 1"
    ))
    .bind(tx.tenant().uuid())
    .bind(customer.uuid())
    .bind(period_start)
    .bind(zone)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(fee))
}

/// The first local date no credit of `customer` on a fee has reached: the
/// latest end of such a credited period, read in its SLA's time zone (a
/// period ends at a local midnight, the first of the next period).
pub async fn first_date_not_credited(
    tx: &mut TenantTx,
    customer: CustomerId,
) -> Result<Option<NaiveDate>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT max((e.period_end AT TIME ZONE coalesce(v.definition #>> '{spec,window,timeZone}', 'UTC'))::date) \
         FROM credit_entries e \
         JOIN sla_versions v ON v.tenant_id = e.tenant_id AND v.sla_id = e.sla_id AND v.version = e.version \
         WHERE e.tenant_id = $1 AND e.customer_id = $2 \
           AND jsonb_typeof(e.computation #> '{inputs,fee}') = 'object'",
    )
    .bind(tx.tenant().uuid())
    .bind(customer.uuid())
    .fetch_one(&mut **tx)
    .await?)
}

/// An objective's frozen result in force for a period (its highest
/// revision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrozenResult {
    pub id: uuid::Uuid,
    pub objective: String,
    pub version: i32,
    pub revision: i32,
    pub period_end: DateTime<Utc>,
    pub target_ppm: i32,
    pub compliance_ppm: Option<i32>,
    pub met: bool,
}

/// Every objective's result in force for the SLA's period starting at
/// `period_start`.
pub async fn frozen_results(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: DateTime<Utc>,
) -> Result<Vec<FrozenResult>, StoreError> {
    type Row = (
        uuid::Uuid,
        String,
        i32,
        i32,
        DateTime<Utc>,
        i32,
        Option<i32>,
        bool,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT DISTINCT ON (objective) id, objective, version, revision, period_end, target_ppm, \
                compliance_ppm, met \
         FROM period_results WHERE tenant_id = $1 AND sla_id = $2 AND period_start = $3 \
         ORDER BY objective, revision DESC",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period_start)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, objective, version, revision, period_end, target_ppm, compliance_ppm, met)| {
                FrozenResult {
                    id,
                    objective,
                    version,
                    revision,
                    period_end,
                    target_ppm,
                    compliance_ppm,
                    met,
                }
            },
        )
        .collect())
}

/// The composite's frozen result in force for a period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrozenComposite {
    pub id: uuid::Uuid,
    pub revision: i32,
    /// Share of the weighted error budget spent, in 10⁻¹².
    pub consumed_pico: i64,
    pub met: Option<bool>,
}

pub async fn frozen_composite(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: DateTime<Utc>,
) -> Result<Option<FrozenComposite>, StoreError> {
    let row: Option<(uuid::Uuid, i32, i64, Option<bool>)> = sqlx::query_as(
        "SELECT id, revision, consumed_pico, met FROM composite_period_results \
         WHERE tenant_id = $1 AND sla_id = $2 AND period_start = $3 ORDER BY revision DESC LIMIT 1",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period_start)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(
        row.map(|(id, revision, consumed_pico, met)| FrozenComposite {
            id,
            revision,
            consumed_pico,
            met,
        }),
    )
}

/// A run of consecutive bad minutes of an objective: minutes whose
/// compliance was under the contract's minute threshold, and the requests
/// counted in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadRun {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub requests: i64,
}

/// What makes minutes an incident, as the contract says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRule {
    /// A minute is bad when good × 10⁶ < this × total.
    pub below_ppm: u32,
    /// Minutes with fewer requests are not judged.
    pub min_requests: u32,
    /// Runs shorter than this many minutes (end − start) are left out.
    pub min_minutes: u32,
}

/// The objective's runs of bad minutes in `[from, to)` from the minute
/// rollups of `version`, the minutes wholly inside `excluded` (the SLA's
/// maintenance as the evaluator applies it) left out. A minute with fewer
/// requests than the rule's floor (none, at least) is neither bad nor a
/// break in a run.
#[allow(clippy::too_many_arguments)]
pub async fn bad_runs(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    objective: &str,
    rule: RunRule,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    excluded: &[(DateTime<Utc>, DateTime<Utc>)],
) -> Result<Vec<BadRun>, StoreError> {
    let starts: Vec<DateTime<Utc>> = excluded.iter().map(|e| e.0).collect();
    let ends: Vec<DateTime<Utc>> = excluded.iter().map(|e| e.1).collect();
    let rows: Vec<(DateTime<Utc>, DateTime<Utc>, i64)> = sqlx::query_as(
        "WITH minutes AS ( \
             SELECT r.minute, r.total, \
                    r.good::numeric * 1000000 < $5::numeric * r.total AS bad \
             FROM evaluator_rollups r \
             WHERE r.tenant_id = $1 AND r.sla_id = $2 AND r.version = $3 AND r.objective = $4 \
               AND r.minute >= $6 AND r.minute < $7 AND r.total > 0 AND r.total >= $10 \
               AND NOT EXISTS (SELECT 1 FROM unnest($8::timestamptz[], $9::timestamptz[]) AS x(s, e) \
                   WHERE x.s <= r.minute AND x.e >= r.minute + interval '1 minute') \
         ), runs AS ( \
             SELECT minute, total, bad, \
                    sum(CASE WHEN bad THEN 0 ELSE 1 END) OVER (ORDER BY minute) AS island \
             FROM minutes \
         ) \
         SELECT min(minute), max(minute) + interval '1 minute', sum(total)::bigint \
         FROM runs WHERE bad GROUP BY island \
         HAVING max(minute) + interval '1 minute' - min(minute) >= make_interval(mins => $11) \
         ORDER BY 1",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(objective)
    .bind(i64::from(rule.below_ppm))
    .bind(from)
    .bind(to)
    .bind(&starts)
    .bind(&ends)
    .bind(i64::from(rule.min_requests))
    .bind(i32::try_from(rule.min_minutes).unwrap_or(i32::MAX))
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(start, end, requests)| BadRun {
            start,
            end,
            requests,
        })
        .collect())
}

/// Whether an entry issues a period's credit or corrects an earlier entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Issued,
    Corrected,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Issued => "issued",
            EntryKind::Corrected => "corrected",
        }
    }
}

/// A ledger entry as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CreditEntry {
    pub id: CreditId,
    pub sla: SlaId,
    pub customer: CustomerId,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub version: i32,
    pub revision: i32,
    pub kind: EntryKind,
    pub corrects: Option<CreditId>,
    pub currency: String,
    pub minor_units: i16,
    pub amount_minor: i64,
    pub total_minor: i64,
    pub computation: serde_json::Value,
    pub results: serde_json::Value,
    pub attestation: Option<uuid::Uuid>,
    pub created_at: DateTime<Utc>,
}

impl CreditEntry {
    /// The entry's currency, as recorded.
    pub fn currency(&self) -> Result<Currency, StoreError> {
        currency_of(&self.currency, self.minor_units)
    }
}

#[derive(sqlx::FromRow)]
struct EntryRow {
    id: uuid::Uuid,
    sla_id: uuid::Uuid,
    customer_id: uuid::Uuid,
    period_start: DateTime<Utc>,
    period_end: DateTime<Utc>,
    version: i32,
    revision: i32,
    kind: String,
    corrects: Option<uuid::Uuid>,
    currency: String,
    minor_units: i16,
    amount_minor: i64,
    total_minor: i64,
    computation: serde_json::Value,
    results: serde_json::Value,
    attestation_id: Option<uuid::Uuid>,
    created_at: DateTime<Utc>,
}

const ENTRY_COLUMNS: &str = "id, sla_id, customer_id, period_start, period_end, version, revision, \
                             kind, corrects, currency, minor_units, amount_minor, total_minor, \
                             computation, results, attestation_id, created_at";

fn entry(row: EntryRow) -> CreditEntry {
    CreditEntry {
        id: CreditId::from_uuid(row.id),
        sla: SlaId::from_uuid(row.sla_id),
        customer: CustomerId::from_uuid(row.customer_id),
        period_start: row.period_start,
        period_end: row.period_end,
        version: row.version,
        revision: row.revision,
        kind: if row.kind == "corrected" {
            EntryKind::Corrected
        } else {
            EntryKind::Issued
        },
        corrects: row.corrects.map(CreditId::from_uuid),
        currency: row.currency,
        minor_units: row.minor_units,
        amount_minor: row.amount_minor,
        total_minor: row.total_minor,
        computation: row.computation,
        results: row.results,
        attestation: row.attestation_id,
        created_at: row.created_at,
    }
}

/// The period's latest entry for this customer, if any, whichever SLA
/// version wrote it: a period re-judged under another version corrects the
/// credit it had rather than starting a second one.
pub async fn latest_entry(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: CustomerId,
    period_start: DateTime<Utc>,
) -> Result<Option<CreditEntry>, StoreError> {
    let row: Option<EntryRow> = sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM credit_entries WHERE tenant_id = $1 AND sla_id = $2 \
           AND customer_id = $3 AND period_start = $4 \
         ORDER BY created_at DESC, revision DESC LIMIT 1"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.uuid())
    .bind(period_start)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(entry))
}

/// Appends an entry; a second entry with the same SLA, customer, period,
/// version and revision is refused by the database (`Conflict`).
pub async fn append(tx: &mut TenantTx, new: &CreditEntry) -> Result<CreditEntry, StoreError> {
    let row: EntryRow = sqlx::query_as(&format!(
        "INSERT INTO credit_entries (tenant_id, id, sla_id, customer_id, period_start, period_end, \
             version, revision, kind, corrects, currency, minor_units, amount_minor, total_minor, \
             computation, results) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         RETURNING {ENTRY_COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(new.id.uuid())
    .bind(new.sla.uuid())
    .bind(new.customer.uuid())
    .bind(new.period_start)
    .bind(new.period_end)
    .bind(new.version)
    .bind(new.revision)
    .bind(new.kind.as_str())
    .bind(new.corrects.map(|c| c.uuid()))
    .bind(&new.currency)
    .bind(new.minor_units)
    .bind(new.amount_minor)
    .bind(new.total_minor)
    .bind(&new.computation)
    .bind(&new.results)
    .fetch_one(&mut **tx)
    .await?;
    Ok(entry(row))
}

/// Which entries a listing reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryFilter {
    pub customer: Option<CustomerId>,
    pub sla: Option<SlaId>,
    /// Entries of periods starting at or after this.
    pub from: Option<DateTime<Utc>>,
    /// Entries of periods starting before this.
    pub to: Option<DateTime<Utc>>,
}

/// Entries in the order written (ids are time-ordered; the keyset is the
/// last id, `cred_…`).
pub async fn list(
    tx: &mut TenantTx,
    filter: &EntryFilter,
    page: &Keyset,
) -> Result<Vec<CreditEntry>, StoreError> {
    let after: Option<uuid::Uuid> = match &page.after {
        Some(key) => Some(
            CreditId::from_str(key)
                .map_err(|_| StoreError::not_found("page of credits after", key))?
                .uuid(),
        ),
        None => None,
    };
    let rows: Vec<EntryRow> = sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM credit_entries WHERE tenant_id = $1 \
           AND ($2::uuid IS NULL OR customer_id = $2) AND ($3::uuid IS NULL OR sla_id = $3) \
           AND ($4::timestamptz IS NULL OR period_start >= $4) \
           AND ($5::timestamptz IS NULL OR period_start < $5) \
           AND ($6::uuid IS NULL OR id > $6) \
         ORDER BY id LIMIT $7"
    ))
    .bind(tx.tenant().uuid())
    .bind(filter.customer.map(|c| c.uuid()))
    .bind(filter.sla.map(|s| s.uuid()))
    .bind(filter.from)
    .bind(filter.to)
    .bind(after)
    .bind(page.fetch())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(entry).collect())
}

pub async fn find(tx: &mut TenantTx, id: CreditId) -> Result<CreditEntry, StoreError> {
    let row: Option<EntryRow> = sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM credit_entries WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.map(entry)
        .ok_or_else(|| StoreError::not_found("credit", id))
}

/// Every entry of one period for one customer and SLA, in order.
pub async fn period_entries(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: CustomerId,
    period_start: DateTime<Utc>,
) -> Result<Vec<CreditEntry>, StoreError> {
    let rows: Vec<EntryRow> = sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM credit_entries WHERE tenant_id = $1 AND sla_id = $2 \
           AND customer_id = $3 AND period_start = $4 ORDER BY created_at, revision"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.uuid())
    .bind(period_start)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(entry).collect())
}

/// The latest entry of each of the SLA's periods for the customer (the
/// period's credit as it stands), newest period first, at most `limit`.
pub async fn period_totals(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: CustomerId,
    limit: i64,
) -> Result<Vec<CreditEntry>, StoreError> {
    let rows: Vec<EntryRow> = sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM ( \
             SELECT DISTINCT ON (period_start) * FROM credit_entries \
             WHERE tenant_id = $1 AND sla_id = $2 AND customer_id = $3 \
             ORDER BY period_start, created_at DESC, revision DESC \
         ) latest ORDER BY period_start DESC LIMIT $4"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.uuid())
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(entry).collect())
}
