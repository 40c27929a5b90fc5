//! Incremental rollups: exact good and total counts per SLA version, objective and minute, advanced from the tenant's watermark.
//!
//! Events are read in arrival order (`received_at`) from the watermark to a
//! minute boundary a little behind the clock, classified in Rust by the
//! domain's [`Objective::classify`] — the one definition of what a filter
//! or threshold means, so rollups cannot drift from the documented
//! semantics the way a second, SQL translation of the filter language
//! could — and added to the minute's counts. The rollups, the coverage of
//! new versions and the new watermark commit in one transaction: each event
//! is counted exactly once.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use futures_util::TryStreamExt;
use slaproof_domain::ids::SlaId;
use slaproof_domain::objective::EventVerdict;
use slaproof_store::coverage::{self, NewCoverage};
use slaproof_store::{TenantTx, slas};

use crate::error::{Doing, EvaluatorError};
use crate::events::{EVENT_COLUMNS, EventRow, ReadEvent};
use crate::failures::SlaFailure;
use crate::settings::Settings;
use crate::tracked::{Backfill, MinuteCounts, Routes, TrackedSla, coverage_start};
use crate::versions;
use slaproof_domain::minute::{floor_hour, floor_minute};

/// The start of time for a watermark that has never moved.
fn epoch() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH
}

/// Key of a rollup row: (index of the tracked SLA, objective name, minute).
type RollupKey = (usize, String, DateTime<Utc>);

/// Counts events into rollup rows.
#[derive(Debug, Default)]
struct Accumulator {
    rows: HashMap<RollupKey, MinuteCounts>,
    /// Chart sketches per SLA and minute (see [`crate::sketch`]).
    sketches: crate::sketch::MinuteSketches,
    events: u64,
    /// The customer references the round's new events named.
    references: crate::references::Seen,
}

impl Accumulator {
    fn add(
        &mut self,
        tracked: &[TrackedSla],
        routes: &Routes,
        only: Option<&[usize]>,
        event: &ReadEvent,
        grace: Duration,
    ) {
        self.events += 1;
        let minute = floor_minute(event.occurred_at);
        // A backfill asks its own SLA only; a round, the event's routes.
        let candidates = only
            .map(|only| only.iter().copied())
            .into_iter()
            .flatten()
            .chain(
                only.is_none()
                    .then(|| routes.candidates(event))
                    .into_iter()
                    .flatten(),
            );
        for i in candidates {
            let sla = &tracked[i];
            if !sla.scopes(event) {
                continue;
            }
            let arrival = sla.arrival(event.occurred_at, event.received_at, grace);
            if arrival.counts() {
                self.sketches.add((i, minute), &event.fields);
            }
            for objective in sla.counted_objectives() {
                let verdict = objective.classify(&event.fields);
                if verdict == EventVerdict::NotCounted {
                    continue;
                }
                self.rows
                    .entry((i, objective.name.as_str().to_owned(), minute))
                    .or_default()
                    .add(verdict, arrival);
            }
        }
    }
}

/// What one advance did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advance {
    /// The new watermark: every event received before it is in the rollups.
    pub as_of: DateTime<Utc>,
    /// The watermark before this advance.
    pub from: DateTime<Utc>,
    pub events_read: u64,
    pub rollup_rows: usize,
    /// Versions seen for the first time (and backfilled).
    pub new_versions: usize,
    /// SLAs left out because their stored definition (or an earlier
    /// version's they need) cannot be read: neither rolled up nor evaluated.
    pub unreadable: Vec<SlaFailure>,
    /// How long the advance took, its commit aside: what of a round the
    /// new events cost, apart from evaluating the SLAs.
    pub took: std::time::Duration,
    /// Of [`Advance::took`], writing the counts and sketches (the rest is
    /// reading and classifying the events).
    pub writing: std::time::Duration,
}

/// The database's clock, which stamps `received_at`.
pub(crate) async fn database_now(tx: &mut TenantTx) -> Result<DateTime<Utc>, EvaluatorError> {
    sqlx::query_scalar("SELECT now()")
        .fetch_one(&mut **tx)
        .await
        .doing("reading the clock")
}

/// The SLA versions in force and where their rollups begin, adding
/// coverage for versions seen for the first time. Returns them with the
/// indexes of the new ones. Fails on an SLA whose stored definition cannot
/// be read, where the evaluator's rounds leave such an SLA out instead
/// (and say so in [`Advance::unreadable`]).
#[tracing::instrument(skip(tx))]
pub async fn track(
    tx: &mut TenantTx,
    as_of: DateTime<Utc>,
) -> Result<(Vec<TrackedSla>, Vec<usize>), EvaluatorError> {
    let tracking = track_readable(tx, as_of, epoch(), Settings::default().grace()).await?;
    match tracking.unreadable.into_iter().next() {
        Some((_, err)) => Err(err),
        None => Ok((tracking.tracked, tracking.new)),
    }
}

/// What [`track_readable`] found.
struct Tracking {
    tracked: Vec<TrackedSla>,
    /// Indexes of the versions seen for the first time.
    new: Vec<usize>,
    /// SLAs left out, with why.
    unreadable: Vec<(SlaFailure, EvaluatorError)>,
}

/// [`track`], leaving out (with why) each SLA whose stored definition, or
/// an earlier version's it would need, cannot be read: nothing is written
/// for it, so it is backfilled as new once it can be read.
async fn track_readable(
    tx: &mut TenantTx,
    as_of: DateTime<Utc>,
    watermark: DateTime<Utc>,
    default_grace: Duration,
) -> Result<Tracking, EvaluatorError> {
    let mut covered: HashMap<(SlaId, i32), DateTime<Utc>> = HashMap::new();
    let mut backfills: HashMap<(SlaId, i32), Backfill> = HashMap::new();
    for c in coverage::all(tx).await.doing("reading rollup coverage")? {
        covered.insert((c.sla, c.version), c.covers_from);
        if let Some(before) = c.backfill_before {
            backfills.insert(
                (c.sla, c.version),
                Backfill {
                    before,
                    cursor: c.cursor,
                },
            );
        }
    }
    let mut tracked = Vec::new();
    let mut new = Vec::new();
    // Recorded at once after the loop: a provider's first round sees
    // thousands of customer SLAs.
    let mut first_seen: Vec<NewCoverage> = Vec::new();
    let mut unreadable = Vec::new();
    let mut stored = versions::read_all(tx).await?;
    for summary in slas::list(tx).await? {
        let read = stored.remove(&summary.id).unwrap_or_else(|| Ok(Vec::new()));
        let all = match read {
            Ok(all) if !all.is_empty() => all,
            Ok(_) => continue,
            Err(err) if err.is_unreadable() => {
                let failure =
                    SlaFailure::new(summary.id, &summary.name, summary.current_version, &err);
                unreadable.push((failure, err));
                continue;
            }
            Err(err) => return Err(err),
        };
        let judges = versions::judges(&all, as_of);
        // The version in force, and the newest while it waits for its
        // period: both rolled up, from when first seen.
        let (live, live_from) = judges.live;
        let roles = std::iter::once((live, live_from, None)).chain(
            judges
                .pending
                .map(|(pending, from)| (pending, Some(from), Some(from))),
        );
        for (i, judges_from, dormant_until) in roles {
            let v = &all[i];
            let key = (summary.id, v.version);
            let (covers_from, backfill) = match covered.get(&key) {
                Some(from) => (*from, backfills.get(&key).copied()),
                None => {
                    let from = coverage_start(&v.definition, as_of);
                    // What was received before the watermark is learnt in
                    // chunks (`backfill_step`), one a round.
                    let backfill = (watermark > epoch()).then_some(Backfill {
                        before: watermark,
                        cursor: None,
                    });
                    first_seen.push(NewCoverage {
                        sla: summary.id,
                        version: v.version,
                        covers_from: from,
                        backfill_before: backfill.map(|b| b.before),
                    });
                    new.push(tracked.len());
                    (from, backfill)
                }
            };
            tracked.push(TrackedSla {
                id: summary.id,
                name: summary.name.clone(),
                version: v.version,
                definition: v.definition.clone(),
                applied_at: v.created_at,
                covers_from,
                backfill,
                closing: None,
                judges_from,
                dormant_until,
            });
        }
        // The version that judged the last period before the one in force
        // took effect closes it while it can still close or be corrected
        // (until the next one ends, and at least a day past its close), if
        // its rollups cover all of it.
        if let Some((i, period)) = judges.closing {
            let v = &all[i];
            let grace = v.definition.late_grace_or(default_grace);
            let horizon = v
                .definition
                .window
                .period_containing(period.end)
                .end
                .max(period.end + grace + Duration::days(1));
            let covers = covered.get(&(summary.id, v.version)).copied();
            if as_of < horizon
                && let Some(covers_from) = covers.filter(|from| *from <= period.start)
            {
                tracked.push(TrackedSla {
                    id: summary.id,
                    name: summary.name.clone(),
                    version: v.version,
                    definition: v.definition.clone(),
                    applied_at: v.created_at,
                    covers_from,
                    backfill: None,
                    closing: Some(period),
                    judges_from: None,
                    dormant_until: None,
                });
            }
        }
    }
    coverage::record_new(tx, &first_seen)
        .await
        .doing("recording rollup coverage")?;
    Ok(Tracking {
        tracked,
        new,
        unreadable,
    })
}

/// Advances the tenant's rollups to the last minute boundary at least
/// `settings.settle_secs` behind the database clock. Takes the tenant's
/// watermark row lock, so two runs for one tenant never interleave.
#[tracing::instrument(skip(tx, settings), fields(tenant = %tx.tenant()))]
pub async fn advance(
    tx: &mut TenantTx,
    settings: &Settings,
) -> Result<(Advance, Vec<TrackedSla>), EvaluatorError> {
    let now = database_now(tx).await?;
    // `received_at` is stamped when an ingest transaction starts, and its
    // events become visible only when it commits: never move past the
    // start of a transaction still running. Sessions of other roles are
    // not visible here; `settle_secs` covers those. Each later statement
    // takes a fresh snapshot (read committed), so a transaction that
    // committed after this look is seen by the event reads below.
    let running: Option<DateTime<Utc>> = sqlx::query_scalar(
        "SELECT min(xact_start) FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND xact_start IS NOT NULL",
    )
    .fetch_one(&mut **tx)
    .await
    .doing("looking for running transactions")?;
    let mut target = now - settings.settle();
    if let Some(running) = running {
        if running < now - Duration::minutes(5) {
            // A session left idle in a transaction holds every tenant back.
            tracing::warn!(%running, "a transaction running since {running} holds the evaluator's watermark back");
        }
        target = target.min(running);
    }
    advance_to(tx, settings, floor_minute(target)).await
}

/// Advances the tenant's rollups to `target` (rounded down to a minute;
/// never backwards). Every event received before `target` must have
/// committed: [`advance`] keeps `settle_secs` behind the clock for that;
/// tests and backfills that control `received_at` call this directly.
#[tracing::instrument(skip(tx, settings), fields(tenant = %tx.tenant()))]
pub async fn advance_to(
    tx: &mut TenantTx,
    settings: &Settings,
    target: DateTime<Utc>,
) -> Result<(Advance, Vec<TrackedSla>), EvaluatorError> {
    let started = std::time::Instant::now();
    let tenant = tx.tenant().uuid();
    sqlx::query(
        "INSERT INTO evaluator_watermarks (tenant_id, received_before) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    )
    .bind(tenant)
    .bind(epoch())
    .execute(&mut **tx)
    .await
    .doing("creating the watermark")?;
    let from: DateTime<Utc> = sqlx::query_scalar(
        "SELECT received_before FROM evaluator_watermarks WHERE tenant_id = $1 FOR UPDATE",
    )
    .bind(tenant)
    .fetch_one(&mut **tx)
    .await
    .doing("locking the watermark")?;
    let as_of = floor_minute(target).max(from);
    let Tracking {
        mut tracked,
        new,
        unreadable,
    } = track_readable(tx, as_of, from, settings.grace()).await?;
    let grace = settings.grace();
    let mut acc = Accumulator::default();
    let routes = Routes::new(&tracked);

    // New versions learn what arrived before they were first seen, a
    // bounded chunk a round.
    let mut budget = settings.backfill_events_per_round;
    for i in 0..tracked.len() {
        if budget == 0 {
            break;
        }
        if let Some(backfill) = tracked[i].backfill {
            let (read, done) =
                backfill_step(tx, &tracked, &routes, i, backfill, budget, grace, &mut acc).await?;
            budget = budget.saturating_sub(read);
            if done {
                tracked[i].backfill = None;
            }
        }
    }
    // The requests gauge values are placed at, noted while the new events
    // are read (no index on events finds them: see `crate::gauge`).
    let mut requests = crate::gauge::Requests::new(&tracked);
    if as_of > from {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE tenant_id = $1 AND received_at >= $2 AND received_at < $3"
        );
        let mut rows = sqlx::query_as::<_, EventRow>(&sql)
            .bind(tenant)
            .bind(from)
            .bind(as_of)
            .fetch(&mut **tx);
        while let Some(row) = rows.try_next().await.doing("reading new events")? {
            let event = ReadEvent::from(row);
            requests.note(&event);
            acc.references.note(&event);
            acc.add(&tracked, &routes, None, &event, grace);
        }
    }
    crate::gauge::record_requests(tx, &tracked, &new, from, requests).await?;
    // Gauge values whose request's event is stored, into the same rows.
    let gauges = crate::gauge::attribute(tx, &tracked, &new, as_of, grace).await?;
    // Values that waited too long for their event are given up on, after
    // this round had its chance to place them.
    crate::gauge::expire(tx, as_of, crate::gauge::PENDING_LIMIT).await?;
    for (key, c) in gauges.rows {
        acc.rows.entry(key).or_default().merge(c);
    }
    let rollup_rows = acc.rows.len();
    let writing = std::time::Instant::now();
    write_rollups(tx, &tracked, acc.rows).await?;
    crate::sketch::write(tx, &tracked, acc.sketches).await?;
    let writing = writing.elapsed();
    crate::references::write(tx, acc.references).await?;
    if as_of > from {
        sqlx::query(
            "UPDATE evaluator_watermarks SET received_before = $2, updated_at = now() WHERE tenant_id = $1",
        )
        .bind(tenant)
        .bind(as_of)
        .execute(&mut **tx)
        .await
        .doing("moving the watermark")?;
    }
    Ok((
        Advance {
            as_of,
            from,
            events_read: acc.events,
            rollup_rows,
            new_versions: new.len(),
            unreadable: unreadable.into_iter().map(|(failure, _)| failure).collect(),
            took: started.elapsed(),
            writing,
        },
        tracked,
    ))
}

/// An event read by [`backfill_step`], with the id its cursor needs.
#[derive(sqlx::FromRow)]
struct BackfillRow {
    id: uuid::Uuid,
    #[sqlx(flatten)]
    event: EventRow,
}

/// Reads the next chunk (at most `limit` events) of tracked version `i`'s
/// backfill into `acc` and moves its cursor, or marks it done when the
/// chunk was the last. Returns the events read and whether it is done.
/// The backfill reads only events received before the version was first
/// seen, and the rounds read only those received after: each event is
/// counted once, whatever order the chunks and rounds come in.
#[allow(clippy::too_many_arguments)]
async fn backfill_step(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    routes: &Routes,
    i: usize,
    backfill: Backfill,
    limit: u64,
    grace: Duration,
    acc: &mut Accumulator,
) -> Result<(u64, bool), EvaluatorError> {
    let sla = &tracked[i];
    let sql = format!(
        "SELECT id, {EVENT_COLUMNS} FROM events WHERE tenant_id = $1 AND occurred_at >= $2 \
           AND received_at < $3 AND service = $4 \
           AND ($5::timestamptz IS NULL OR (occurred_at, id) > ($5, $6)) \
           AND ($8::text IS NULL OR customer = $8) \
         ORDER BY occurred_at, id LIMIT $7"
    );
    let mut rows = sqlx::query_as::<_, BackfillRow>(&sql)
        .bind(tx.tenant().uuid())
        .bind(sla.covers_from)
        .bind(backfill.before)
        .bind(&sla.definition.service)
        .bind(backfill.cursor.map(|c| c.0))
        .bind(backfill.cursor.map(|c| c.1))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(sla.definition.measured_customer())
        .fetch(&mut **tx);
    let mut read = 0u64;
    let mut last = backfill.cursor;
    while let Some(row) = rows.try_next().await.doing("reading events to backfill")? {
        let event = ReadEvent::from(row.event);
        last = Some((event.occurred_at, row.id));
        acc.add(tracked, routes, Some(&[i]), &event, grace);
        read += 1;
    }
    drop(rows);
    let done = read < limit;
    coverage::move_backfill(tx, sla.id, sla.version, done, last)
        .await
        .doing("moving a backfill")?;
    Ok((read, done))
}

fn count(v: u64) -> i64 {
    // Counts past 2⁶³ events are not reached; saturate rather than wrap.
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Adds counts to rollup rows, in batches of arrays (one round trip per
/// batch, not per row).
async fn write_rollups(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    rows: HashMap<RollupKey, MinuteCounts>,
) -> Result<(), EvaluatorError> {
    // The same counts summed per hour go to the hourly table.
    let mut hourly: HashMap<RollupKey, MinuteCounts> = HashMap::new();
    for ((i, name, minute), c) in &rows {
        let h = hourly
            .entry((*i, name.clone(), floor_hour(*minute)))
            .or_default();
        h.good += c.good;
        h.total += c.total;
        h.late_folded += c.late_folded;
        h.late_good += c.late_good;
        h.late_total += c.late_total;
    }
    upsert_counts(tx, tracked, rows, "evaluator_rollups", "minute").await?;
    upsert_counts(tx, tracked, hourly, "evaluator_rollups_hourly", "hour").await
}

/// Adds counts to the rows of `table`, keyed by `(sla, version, objective, unit)`.
async fn upsert_counts(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    rows: HashMap<RollupKey, MinuteCounts>,
    table: &'static str,
    unit: &'static str,
) -> Result<(), EvaluatorError> {
    const BATCH: usize = 5_000;
    let tenant = tx.tenant().uuid();
    let rows: Vec<_> = rows.into_iter().collect();
    let sql = format!(
        "INSERT INTO {table} (tenant_id, sla_id, version, objective, {unit}, good, total, \
             late_folded, late_good, late_total, updated_at) \
         SELECT $1, u.*, now() FROM UNNEST($2::uuid[], $3::int4[], $4::text[], $5::timestamptz[], $6::int8[], \
             $7::int8[], $8::int8[], $9::int8[], $10::int8[]) AS u \
         ON CONFLICT (tenant_id, sla_id, version, {unit}, objective) DO UPDATE SET \
             good = {table}.good + EXCLUDED.good, \
             total = {table}.total + EXCLUDED.total, \
             late_folded = {table}.late_folded + EXCLUDED.late_folded, \
             late_good = {table}.late_good + EXCLUDED.late_good, \
             late_total = {table}.late_total + EXCLUDED.late_total, \
             updated_at = EXCLUDED.updated_at"
    );
    for chunk in rows.chunks(BATCH) {
        let mut sla = Vec::with_capacity(chunk.len());
        let mut version = Vec::with_capacity(chunk.len());
        let mut objective = Vec::with_capacity(chunk.len());
        let mut minute = Vec::with_capacity(chunk.len());
        let mut cols: [Vec<i64>; 5] = Default::default();
        for ((i, name, m), c) in chunk {
            sla.push(tracked[*i].id.uuid());
            version.push(tracked[*i].version);
            objective.push(name.clone());
            minute.push(*m);
            for (col, v) in
                cols.iter_mut()
                    .zip([c.good, c.total, c.late_folded, c.late_good, c.late_total])
            {
                col.push(count(v));
            }
        }
        let [good, total, late_folded, late_good, late_total] = cols;
        sqlx::query(&sql)
            .bind(tenant)
            .bind(&sla)
            .bind(&version)
            .bind(&objective)
            .bind(&minute)
            .bind(&good)
            .bind(&total)
            .bind(&late_folded)
            .bind(&late_good)
            .bind(&late_total)
            .execute(&mut **tx)
            .await
            .doing("writing rollups")?;
    }
    Ok(())
}
