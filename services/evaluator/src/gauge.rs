//! Gauge objectives: values delivered later by callback (a quality score for a request id), attributed to their request's event and counted exactly into the same per-minute rollups as events.
//!
//! A value counts at its request's time: the `occurred_at` of the first
//! stored event with the value's `(service, request_id)`. Ingest stores a
//! value at once (`gauge_values`), pending; each evaluator round looks up
//! the requests of the pending values received before its watermark and,
//! for those found (the event also received before the watermark), sets the
//! request's time and the pair's arrival (the later of the two) and adds
//! the values to the rollups, in the one transaction that also moves the
//! watermark. A value is counted when and only when its attribution
//! commits, so exactly once, however late or early it came.
//!
//! Finding requests. Events are not indexed by request id: such an index
//! costs every event of every tenant a write (docs/BENCHMARKS.md) for a
//! feature only gauge objectives use. Instead the round, which reads every
//! new event once anyway, keeps the first event of each request of a
//! service a gauge objective measures in `gauge_requests` ([`Requests`],
//! [`record_requests`]); a new version with a gauge objective first gets
//! the requests already behind the watermark. The rows stand for events,
//! so they go when the events' partitions go (past retention).
//!
//! One corner differs from a lookup among all stored events: a row keeps a
//! request's first event from the earliest gauge coverage at the time it
//! was read; if that coverage later moves forward (the earliest gauge
//! version replaced by a later-covering one) past the row, a second event
//! of the same request after the new start is not found and the value
//! waits. Request ids repeated across days are not what they are for.
//!
//! Expiry. A value still pending [`PENDING_LIMIT`] after it was received
//! is given up on ([`expire`], in the round after attribution): marked
//! `expired_at`, kept as a record that it arrived, and never attributed
//! after, even if its event comes; recounts leave it out too, so rollups
//! and a recount still agree.
//!
//! Lateness. Scores routinely come hours after their request; like events
//! (see [`slaproof_domain::minute::Arrival`]) a value is on time when it
//! arrives within its minute, folded in late (and counted as folded) when
//! it arrives before its period closes (the SLA's late grace after its
//! end), and late — kept out of the verdict, counted and reported — after
//! that. Rolling windows never close, so their values are never late. The
//! rule is a pure function of the value, so incremental rollups and a
//! recount from scratch agree.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};
use futures_util::TryStreamExt;
use slaproof_domain::budget::Tally;
use slaproof_domain::objective::{GaugeSli, Sli};
use slaproof_domain::window::Period;
use slaproof_store::TenantTx;

use crate::error::{Doing, EvaluatorError};
use crate::events::ReadEvent;
use crate::tracked::Recount;
use crate::tracked::{MinuteCounts, TrackedSla};
use slaproof_domain::minute::{Arrival, floor_minute};
use slaproof_domain::window::in_any;

/// How far a value may be received before its request's time (clock skew
/// between the sender of the value and the sender of the event) and still
/// be looked for.
const SKEW: Duration = Duration::days(1);

/// How long a value may wait for its request's event: the events' default
/// retention (`events.retention_days`). A request whose event is older is
/// gone from events and could never be found; a value pending longer is
/// expired by [`expire`] and never counts, even if its event comes after.
pub const PENDING_LIMIT: Duration = Duration::days(400);

/// The gauge SLI of an objective, if it is one.
pub fn gauge_sli(sli: &Sli) -> Option<&GaugeSli> {
    match sli {
        Sli::Gauge(g) => Some(g),
        _ => None,
    }
}

/// A value placed at its request's time.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PlacedValue {
    pub metric: String,
    pub service: String,
    /// The customer of the value's request (its first event's), which
    /// decides the customer SLAs it counts for.
    pub customer: Option<String>,
    pub value: f64,
    pub occurred_at: DateTime<Utc>,
    pub arrived_at: DateTime<Utc>,
}

/// Key of a rollup row: (index of the tracked SLA, objective name, minute).
pub type RollupKey = (usize, String, DateTime<Utc>);

/// Adds one value to every gauge objective of the tracked SLAs (or of the
/// `only` ones) that measures it.
fn add(
    rows: &mut HashMap<RollupKey, MinuteCounts>,
    tracked: &[TrackedSla],
    only: Option<&[usize]>,
    v: &PlacedValue,
    grace: Duration,
) {
    for (i, sla) in tracked.iter().enumerate() {
        if only.is_some_and(|o| !o.contains(&i))
            || !sla
                .definition
                .measures(Some(&v.service), v.customer.as_deref())
            || v.occurred_at < sla.covers_from
        {
            continue;
        }
        for objective in &sla.definition.objectives {
            let Some(g) = gauge_sli(&objective.sli).filter(|g| g.metric.as_str() == v.metric)
            else {
                continue;
            };
            let verdict = if g.is_good(v.value) {
                slaproof_domain::objective::EventVerdict::Good
            } else {
                slaproof_domain::objective::EventVerdict::Bad
            };
            let arrival = sla.arrival(v.occurred_at, v.arrived_at, grace);
            rows.entry((
                i,
                objective.name.as_str().to_owned(),
                floor_minute(v.occurred_at),
            ))
            .or_default()
            .add(verdict, arrival);
        }
    }
}

/// The earliest time a tracked SLA with a gauge objective covers, if any
/// SLA has one: values about requests before it are never counted.
fn earliest_coverage(tracked: &[TrackedSla], only: Option<&[usize]>) -> Option<DateTime<Utc>> {
    tracked
        .iter()
        .enumerate()
        .filter(|(i, _)| only.is_none_or(|o| o.contains(i)))
        .filter(|(_, s)| {
            s.definition
                .objectives
                .iter()
                .any(|o| gauge_sli(&o.sli).is_some())
        })
        .map(|(_, s)| s.covers_from)
        .min()
}

/// The earliest time a gauge objective covers and the services gauge
/// objectives measure, if any SLA has one.
fn gauge_scope(tracked: &[TrackedSla]) -> Option<(DateTime<Utc>, BTreeSet<String>)> {
    let since = earliest_coverage(tracked, None)?;
    let services = tracked
        .iter()
        .filter(|s| {
            s.definition
                .objectives
                .iter()
                .any(|o| gauge_sli(&o.sli).is_some())
        })
        .map(|s| s.definition.service.clone())
        .collect();
    Some((since, services))
}

/// When a request's first event occurred and arrived, and the customer
/// it served.
type FirstEvent = (DateTime<Utc>, DateTime<Utc>, Option<String>);

/// The first event of each request seen in one round, for the services
/// gauge objectives measure, from the earliest gauge coverage on (the
/// events attribution may place values at; the others are never looked
/// for).
#[derive(Debug, Default)]
pub struct Requests {
    scope: Option<(DateTime<Utc>, BTreeSet<String>)>,
    /// (service, request id) → its first event.
    first: HashMap<(String, String), FirstEvent>,
}

impl Requests {
    /// Collects for the gauge objectives of `tracked`; collects nothing if
    /// there are none.
    pub fn new(tracked: &[TrackedSla]) -> Self {
        Self {
            scope: gauge_scope(tracked),
            first: HashMap::new(),
        }
    }

    /// Notes an event read by the round.
    pub fn note(&mut self, event: &ReadEvent) {
        let (Some((since, services)), Some(request_id), Some(service)) = (
            &self.scope,
            event.request_id.as_deref(),
            event.fields.service.as_deref(),
        ) else {
            return;
        };
        if event.occurred_at < *since || !services.contains(service) {
            return;
        }
        let seen = (event.occurred_at, event.received_at, event.customer.clone());
        self.first
            .entry((service.to_owned(), request_id.to_owned()))
            .and_modify(|first| {
                if (seen.0, seen.1) < (first.0, first.1) {
                    *first = seen.clone();
                }
            })
            .or_insert(seen);
    }

    /// Requests noted.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// Whether none was noted.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

/// The upsert of `gauge_requests` rows: on conflict the earlier event
/// (by occurred_at, then received_at) stays.
const KEEP_FIRST: &str = "ON CONFLICT (tenant_id, service, request_id) DO UPDATE \
     SET occurred_at = EXCLUDED.occurred_at, received_at = EXCLUDED.received_at, customer = EXCLUDED.customer \
     WHERE (EXCLUDED.occurred_at, EXCLUDED.received_at) \
         < (gauge_requests.occurred_at, gauge_requests.received_at)";

/// Stores the requests a round noted and, when a version with a gauge
/// objective is new, the requests of events received before the round
/// (`from`) that the gauge objectives now measure; drops the rows of events
/// past retention. Runs before [`attribute`] in the same transaction.
#[tracing::instrument(skip(tx, tracked, new, requests), fields(requests = requests.len()))]
pub async fn record_requests(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    new: &[usize],
    from: DateTime<Utc>,
    requests: Requests,
) -> Result<(), EvaluatorError> {
    const BATCH: usize = 5_000;
    let tenant = tx.tenant().uuid();
    let sql = format!(
        "INSERT INTO gauge_requests (tenant_id, service, request_id, occurred_at, received_at, customer) \
         SELECT $1, * FROM UNNEST($2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[]) {KEEP_FIRST}"
    );
    let rows: Vec<_> = requests.first.into_iter().collect();
    for chunk in rows.chunks(BATCH) {
        let mut service = Vec::with_capacity(chunk.len());
        let mut request_id = Vec::with_capacity(chunk.len());
        let mut occurred_at = Vec::with_capacity(chunk.len());
        let mut received_at = Vec::with_capacity(chunk.len());
        let mut customer = Vec::with_capacity(chunk.len());
        for ((s, r), (o, at, c)) in chunk {
            service.push(s.as_str());
            request_id.push(r.as_str());
            occurred_at.push(*o);
            received_at.push(*at);
            customer.push(c.as_deref());
        }
        sqlx::query(&sql)
            .bind(tenant)
            .bind(&service)
            .bind(&request_id)
            .bind(&occurred_at)
            .bind(&received_at)
            .bind(&customer)
            .execute(&mut **tx)
            .await
            .doing("recording gauge requests")?;
    }
    // A new gauge version may measure a service, or reach back to a time,
    // no gauge objective did: the requests behind the watermark must be
    // found as the round's are. All gauge services from the earliest
    // coverage, so the rows are what reading every event since would give.
    let gauge_is_new = new.iter().any(|&i| {
        tracked[i]
            .definition
            .objectives
            .iter()
            .any(|o| gauge_sli(&o.sli).is_some())
    });
    if let Some((since, services)) = gauge_scope(tracked).filter(|_| gauge_is_new) {
        let services: Vec<String> = services.into_iter().collect();
        let sql = format!(
            "INSERT INTO gauge_requests (tenant_id, service, request_id, occurred_at, received_at, customer) \
             SELECT DISTINCT ON (service, request_id) $1, service, request_id, occurred_at, received_at, customer \
             FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND received_at < $3 \
               AND service = ANY($4) AND request_id IS NOT NULL \
             ORDER BY service, request_id, occurred_at, received_at {KEEP_FIRST}"
        );
        sqlx::query(&sql)
            .bind(tenant)
            .bind(since)
            .bind(from)
            .bind(&services)
            .execute(&mut **tx)
            .await
            .doing("backfilling gauge requests")?;
    }
    // Retention: a row whose event's partition is gone would not be found
    // among events either. Values arriving for such a request stay
    // pending, as they did when events were looked up directly.
    sqlx::query(
        "DELETE FROM gauge_requests WHERE tenant_id = $1 \
         AND occurred_at < (SELECT min(d) FROM slaproof_event_partition_days() d)::timestamp AT TIME ZONE 'UTC'",
    )
    .bind(tenant)
    .execute(&mut **tx)
    .await
    .doing("pruning gauge requests")?;
    Ok(())
}

/// What one round of attribution did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributed {
    /// Values placed at their request's time in this round.
    pub values: u64,
    /// Rollup rows the round's values (and a new version's backfill) add to.
    pub rows: HashMap<RollupKey, MinuteCounts>,
}

/// Attributes the pending values whose event is stored and backfills the
/// `new` SLA versions with the values attributed before; returns the counts
/// to add to the rollups in the same transaction. Values and events received
/// at or after `as_of` wait for a later round.
#[tracing::instrument(skip(tx, tracked, new))]
pub async fn attribute(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    new: &[usize],
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Attributed, EvaluatorError> {
    let mut out = Attributed::default();
    let tenant = tx.tenant().uuid();
    // Backfill first, while only earlier rounds' values are attributed.
    if let Some(since) = earliest_coverage(tracked, Some(new)) {
        let mut rows = sqlx::query_as::<_, PlacedValue>(
            "SELECT metric, service, customer, value, occurred_at, arrived_at FROM gauge_values \
             WHERE tenant_id = $1 AND occurred_at >= $2 AND attributed_at IS NOT NULL",
        )
        .bind(tenant)
        .bind(since)
        .fetch(&mut **tx);
        while let Some(v) = rows
            .try_next()
            .await
            .doing("reading gauge values to backfill")?
        {
            add(&mut out.rows, tracked, Some(new), &v, grace);
        }
    }
    let Some(since) = earliest_coverage(tracked, None) else {
        // No gauge objective: values wait, pending, for one.
        return Ok(out);
    };
    // Only values some gauge objective measures are looked for; the others
    // wait, pending, without costing each round a lookup.
    let (services, metrics): (Vec<String>, Vec<String>) = tracked
        .iter()
        .flat_map(|s| {
            s.definition.objectives.iter().filter_map(|o| {
                gauge_sli(&o.sli)
                    .map(|g| (s.definition.service.clone(), g.metric.as_str().to_owned()))
            })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .unzip();
    // Requests are found from `since` on (rows recorded before the
    // earliest coverage moved later are not used); values received long
    // before it are about requests no objective counts and stay pending.
    // The rows hold events received before this round's watermark only
    // ([`record_requests`] ran before, in this transaction).
    let placed: Vec<PlacedValue> = sqlx::query_as(
        "WITH found AS ( \
             SELECT g.metric, g.service, g.request_id, r.occurred_at, r.customer, \
                 greatest(g.received_at, r.received_at) AS arrived_at \
             FROM gauge_values g \
             JOIN gauge_requests r \
               ON r.tenant_id = g.tenant_id AND r.service = g.service AND r.request_id = g.request_id \
             WHERE r.occurred_at >= $3 AND r.received_at < $2 \
               AND g.tenant_id = $1 AND g.attributed_at IS NULL AND g.expired_at IS NULL \
               AND g.received_at < $2 \
               AND g.received_at >= $4 \
               AND (g.service, g.metric) IN (SELECT * FROM UNNEST($5::text[], $6::text[]))) \
         UPDATE gauge_values g SET occurred_at = f.occurred_at, arrived_at = f.arrived_at, attributed_at = $2, \
             customer = f.customer \
         FROM found f \
         WHERE g.tenant_id = $1 AND g.metric = f.metric AND g.service = f.service AND g.request_id = f.request_id \
         RETURNING g.metric, g.service, g.customer, g.value, g.occurred_at, g.arrived_at",
    )
    .bind(tenant)
    .bind(as_of)
    .bind(since)
    .bind(since - SKEW)
    .bind(&services)
    .bind(&metrics)
    .fetch_all(&mut **tx)
    .await
    .doing("attributing gauge values")?;
    out.values = placed.len() as u64;
    for v in &placed {
        add(&mut out.rows, tracked, None, v, grace);
    }
    Ok(out)
}

/// Expires the values received before `as_of - limit` that are still
/// pending: marked (the fact that they arrived stays), never attributed
/// after, so never counted. Runs in the round, after [`attribute`], so a
/// value whose event this round found counts rather than expiring. Returns
/// how many were expired.
pub async fn expire(
    tx: &mut TenantTx,
    as_of: DateTime<Utc>,
    limit: Duration,
) -> Result<u64, EvaluatorError> {
    let expired = sqlx::query(
        "UPDATE gauge_values SET expired_at = $2 \
         WHERE tenant_id = $1 AND attributed_at IS NULL AND expired_at IS NULL AND received_at < $3",
    )
    .bind(tx.tenant().uuid())
    .bind(as_of)
    .bind(as_of - limit)
    .execute(&mut **tx)
    .await
    .doing("expiring gauge values")?
    .rows_affected();
    if expired > 0 {
        tracing::info!(
            expired,
            "gauge values pending past the limit expired; they will never count"
        );
    }
    Ok(expired)
}

/// Attributed values of one gauge objective whose request occurred in
/// `[from, to)`, arrived before `as_of`, that the SLA measures (its
/// service, and its customer's requests for a customer's SLA).
async fn placed_values(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    metric: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: DateTime<Utc>,
) -> Result<Vec<PlacedValue>, EvaluatorError> {
    let values: Vec<PlacedValue> = sqlx::query_as(
        "SELECT metric, service, customer, value, occurred_at, arrived_at FROM gauge_values \
         WHERE tenant_id = $1 AND service = $2 AND metric = $3 AND occurred_at >= $4 AND occurred_at < $5 \
           AND arrived_at < $6",
    )
    .bind(tx.tenant().uuid())
    .bind(&sla.definition.service)
    .bind(metric)
    .bind(from.max(sla.covers_from))
    .bind(to)
    .bind(as_of)
    .fetch_all(&mut **tx)
    .await
    .doing("reading gauge values")?;
    Ok(values
        .into_iter()
        .filter(|v| {
            sla.definition
                .measures(Some(&v.service), v.customer.as_deref())
        })
        .collect())
}

/// Per gauge objective, the values of each cut minute that fall inside
/// maintenance (the gauge side of `maintenance::recount_cut_minutes`).
pub async fn recount_cut_minutes(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    windows: &[Period],
    minutes: &[DateTime<Utc>],
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<HashMap<String, std::collections::BTreeMap<DateTime<Utc>, Tally>>, EvaluatorError> {
    let mut out: HashMap<String, std::collections::BTreeMap<DateTime<Utc>, Tally>> = HashMap::new();
    for objective in &sla.definition.objectives {
        let Some(g) = gauge_sli(&objective.sli) else {
            continue;
        };
        for &minute in minutes {
            let values = placed_values(
                tx,
                sla,
                g.metric.as_str(),
                minute,
                minute + Duration::minutes(1),
                as_of,
            )
            .await?;
            for v in values {
                if !in_any(windows, v.occurred_at)
                    || !sla.arrival(v.occurred_at, v.arrived_at, grace).counts()
                {
                    continue;
                }
                let t = out
                    .entry(objective.name.as_str().to_owned())
                    .or_default()
                    .entry(minute)
                    .or_default();
                t.total += 1;
                t.good += u64::from(g.is_good(v.value));
            }
        }
    }
    Ok(out)
}

/// Recounts a gauge objective from scratch over `[from, to)` as of `as_of`:
/// every stored value of the metric joined to its request's first event
/// directly, not through the attribution the rollups rest on, so the two
/// are checked against each other.
#[allow(clippy::too_many_arguments)]
pub async fn recount(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    sli: &GaugeSli,
    windows: &[Period],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Recount, EvaluatorError> {
    let values: Vec<PlacedValue> = sqlx::query_as(
        "SELECT g.metric, g.service, e.customer, g.value, e.occurred_at, \
             greatest(g.received_at, e.received_at) AS arrived_at \
         FROM gauge_values g \
         CROSS JOIN LATERAL ( \
             SELECT occurred_at, received_at, customer FROM events e \
             WHERE e.tenant_id = g.tenant_id AND e.service = g.service AND e.request_id = g.request_id \
               AND e.received_at < $5 \
             ORDER BY e.occurred_at, e.received_at LIMIT 1) e \
         WHERE g.tenant_id = $1 AND g.service = $2 AND g.metric = $3 AND g.received_at < $5 \
           AND g.expired_at IS NULL \
           AND e.occurred_at >= $4 AND e.occurred_at < $6",
    )
    .bind(tx.tenant().uuid())
    .bind(&sla.definition.service)
    .bind(sli.metric.as_str())
    .bind(from.max(sla.covers_from))
    .bind(as_of)
    .bind(to)
    .fetch_all(&mut **tx)
    .await
    .doing("recounting gauge values")?;
    let mut out = Recount::default();
    for v in values {
        if !sla
            .definition
            .measures(Some(&v.service), v.customer.as_deref())
        {
            continue;
        }
        let one = Tally {
            good: u64::from(sli.is_good(v.value)),
            total: 1,
        };
        match sla.arrival(v.occurred_at, v.arrived_at, grace) {
            Arrival::Late => {
                out.late = out.late + one;
                continue;
            }
            Arrival::LateFolded => out.late_folded += 1,
            Arrival::OnTime => {}
        }
        if in_any(windows, v.occurred_at) {
            out.excluded = out.excluded + one;
        } else {
            out.tally = out.tally + one;
        }
    }
    Ok(out)
}
