//! The evaluator worker: asks for an evaluation of every tenant each round and works through due `evaluate` jobs, one tenant per claim, so replicas share tenants and never evaluate one twice at once; a failing job is retried with a growing delay, and a failing SLA is left out of its tenant's round, not the tenant.

use std::collections::HashSet;

use chrono::Utc;
use slaproof_domain::ids::{SlaId, TenantId};
use slaproof_store::jobs::{self, ClaimedJob, NewJob};
use slaproof_store::{Database, Savepoint, TenantTx, tenants};
use tokio_util::sync::CancellationToken;

use crate::composite::{self, ClosedComposite, CompositeEvaluation};
use crate::error::{Doing, EvaluatorError};
use crate::evaluate::{ObjectiveEvaluation, evaluate_sla, record_alerts};
use crate::facts::{ClosedPeriod, close_periods};
use crate::failures::{self, SlaFailure, Stuck};
use crate::records::insert_evaluation;
use crate::rollup::{Advance, advance, advance_to};
use crate::settings::Settings;
use crate::thresholds::record_threshold_crossings;
use crate::tracked::TrackedSla;

/// The kind of the job rows the evaluator claims.
pub const JOB_KIND: &str = jobs::EVALUATE;

/// What evaluating one tenant did.
#[derive(Debug, Clone)]
pub struct TenantRun {
    pub tenant: TenantId,
    pub advance: Advance,
    pub evaluations: Vec<ObjectiveEvaluation>,
    /// Outbox messages written: alerts firing or resolving, budgets
    /// exhausted, breaches, customers' thresholds crossed or recovered.
    pub alerts_told: usize,
    /// Period results frozen (or superseded) by this run.
    pub closed: Vec<ClosedPeriod>,
    /// The composites of SLAs whose objectives carry weights.
    pub composites: Vec<CompositeEvaluation>,
    /// Composite period results frozen (or superseded) by this run.
    pub closed_composites: Vec<ClosedComposite>,
    /// Daily measurements recorded for the transparency log's anchors.
    pub days_measured: usize,
    /// SLAs left out of this run because evaluating them failed (their
    /// work rolled back, the others' kept), recorded in
    /// `evaluation_failures`.
    pub failed_slas: Vec<SlaFailure>,
}

/// What evaluating one tracked SLA version did, merged into the
/// [`TenantRun`] once it has all succeeded.
#[derive(Debug, Default)]
struct SlaRun {
    evaluations: Vec<ObjectiveEvaluation>,
    alerts_told: usize,
    composite: Option<CompositeEvaluation>,
    closed: Vec<ClosedPeriod>,
    closed_composites: Vec<ClosedComposite>,
    /// Daily measurements recorded (`crate::measurements`).
    days_measured: usize,
}

/// Evaluates one tracked SLA version: its objectives and composite (the
/// version in force), and the periods it closes.
async fn evaluate_one(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    at: RoundAt,
    settings: &Settings,
) -> Result<SlaRun, EvaluatorError> {
    let RoundAt { as_of, seen } = at;
    let mut run = SlaRun::default();
    // A version waiting for its period, or still learning its history,
    // does nothing yet but roll up.
    if sla.dormant_until.is_some() || sla.backfill.is_some() {
        return Ok(run);
    }
    // An earlier version kept to judge its last period only closes it.
    if sla.closing.is_none() {
        for mut evaluation in evaluate_sla(tx, sla, as_of, settings.grace()).await? {
            run.alerts_told += crate::signals::record(tx, &mut evaluation, &sla.definition).await?;
            insert_evaluation(tx, &evaluation).await?;
            run.alerts_told += record_alerts(tx, &evaluation).await?;
            run.alerts_told += record_threshold_crossings(tx, &evaluation).await?;
            run.evaluations.push(evaluation);
        }
        run.alerts_told += crate::nodata::record(tx, sla, as_of).await?;
        run.alerts_told += crate::removed::resolve(tx, sla, as_of).await?;
        if let Some(c) = composite::compose(sla, &run.evaluations) {
            composite::insert(tx, &c).await?;
            run.composite = Some(c);
        }
    }
    // Days past their grace are measured (and so later anchored) before
    // any period they end is closed, in the same transaction.
    run.days_measured =
        crate::measurements::measure_days(tx, sla, as_of, seen, settings.grace()).await?;
    let done = close_periods(tx, sla, as_of, seen, settings.grace()).await?;
    run.closed = done.objectives;
    run.closed_composites = done.composites;
    Ok(run)
}

/// [`evaluate_one`] in a savepoint: when it fails, what it wrote is rolled
/// back and the transaction goes on for the tenant's other SLAs. The outer
/// error is the savepoint's own (the connection is gone): the tenant's.
async fn in_savepoint(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    at: RoundAt,
    settings: &Settings,
) -> Result<Result<SlaRun, EvaluatorError>, EvaluatorError> {
    tx.savepoint(Savepoint::SLA)
        .await
        .doing("opening a savepoint")?;
    let outcome = evaluate_one(tx, sla, at, settings).await;
    if outcome.is_err() {
        tx.rollback_to(Savepoint::SLA)
            .await
            .doing("rolling back to a savepoint")?;
    }
    tx.release(Savepoint::SLA)
        .await
        .doing("releasing a savepoint")?;
    Ok(outcome)
}

/// How many SLAs share one savepoint on the first try (see
/// [`in_savepoints`]).
const SAVEPOINT_CHUNK: usize = 64;

/// Evaluates the tracked versions at `chunk`, all in one savepoint: two
/// statements for the chunk instead of two per SLA, which is a round's
/// share at thousands of customer SLAs. When one fails, everything the
/// chunk wrote is rolled back and each of its SLAs is evaluated again in
/// a savepoint of its own ([`in_savepoint`]), so the failing one is left
/// out and the others kept, as if each had had its own from the start.
async fn in_savepoints(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    chunk: &[usize],
    at: RoundAt,
    settings: &Settings,
) -> Result<Vec<Result<SlaRun, EvaluatorError>>, EvaluatorError> {
    tx.savepoint(Savepoint::SLA_CHUNK)
        .await
        .doing("opening a savepoint")?;
    let mut runs = Vec::with_capacity(chunk.len());
    for &index in chunk {
        match evaluate_one(tx, &tracked[index], at, settings).await {
            Ok(run) => runs.push(Ok(run)),
            Err(_) => break,
        }
    }
    if runs.len() == chunk.len() {
        tx.release(Savepoint::SLA_CHUNK)
            .await
            .doing("releasing a savepoint")?;
        return Ok(runs);
    }
    tx.rollback_to(Savepoint::SLA_CHUNK)
        .await
        .doing("rolling back to a savepoint")?;
    tx.release(Savepoint::SLA_CHUNK)
        .await
        .doing("releasing a savepoint")?;
    let mut runs = Vec::with_capacity(chunk.len());
    for &index in chunk {
        runs.push(in_savepoint(tx, &tracked[index], at, settings).await?);
    }
    Ok(runs)
}

/// Rolls a tenant's new events up and evaluates all its SLAs, inside the
/// caller's transaction (which a job completes in, so work and completion
/// commit together).
///
/// A transaction-scoped advisory lock on the tenant backs up the job queue:
/// were two workers ever to hold one tenant (a lease lost mid-run), the
/// second stops here instead of waiting on the first.
#[tracing::instrument(skip(tx, settings), fields(tenant = %tx.tenant()))]
pub async fn evaluate_tenant(
    tx: &mut TenantTx,
    settings: &Settings,
) -> Result<TenantRun, EvaluatorError> {
    evaluate_tenant_up_to(tx, settings, None).await
}

/// [`evaluate_tenant`] with the watermark moved to `target` instead of
/// following the clock (see [`crate::rollup::advance_to`]).
#[tracing::instrument(skip(tx, settings), fields(tenant = %tx.tenant()))]
pub async fn evaluate_tenant_up_to(
    tx: &mut TenantTx,
    settings: &Settings,
    target: Option<chrono::DateTime<Utc>>,
) -> Result<TenantRun, EvaluatorError> {
    settings.bound_statements(tx).await?;
    hold_tenant(tx).await?;
    let (advance, tracked) = roll_up(tx, settings, target).await?;
    let failing_before = failures::failing(tx).await?;
    let all: Vec<usize> = (0..tracked.len()).collect();
    let outcomes = evaluate_group(tx, &tracked, &all, advance.as_of, settings).await?;
    finish(tx, advance, &tracked, failing_before, outcomes).await
}

/// Rolls a tenant's new events up and commits them, then evaluates its
/// SLAs spread over `settings.connections` transactions at once: `holder`
/// (the caller's, which a job completes in) holds the tenant for the
/// whole run and evaluates one group, the others each commit theirs when
/// done. A round is about a dozen round trips per SLA (the period and
/// its lookbacks summed in one, an objective's alert rules written in
/// one, 64 SLAs to a savepoint), mostly waiting, so a provider with
/// thousands of customer SLAs is evaluated up to that many times faster.
///
/// Each SLA's evaluation stays atomic (a savepoint it shares with at most
/// 63 others, its own when one of them fails: [`in_savepoints`]); a
/// run failing part-way leaves the groups that committed at the new
/// watermark and the retried run evaluates every SLA again, as every
/// round does. With `connections = 1` this is [`evaluate_tenant_up_to`]:
/// one transaction, rollups included.
#[tracing::instrument(skip(db, holder, settings), fields(tenant = %holder.tenant()))]
pub async fn evaluate_tenant_spread(
    db: &Database,
    holder: &mut TenantTx,
    settings: &Settings,
    target: Option<chrono::DateTime<Utc>>,
) -> Result<TenantRun, EvaluatorError> {
    let connections = usize::try_from(settings.connections).unwrap_or(1).max(1);
    if connections == 1 {
        return evaluate_tenant_up_to(holder, settings, target).await;
    }
    let tenant = holder.tenant();
    settings.bound_statements(holder).await?;
    hold_tenant(holder).await?;
    // The groups read the rollups from their own transactions: commit
    // them first (the holder's lock still keeps other workers off).
    let (advance, tracked) = {
        let mut tx = db.tenant_tx(tenant).await?;
        settings.bound_statements(&mut tx).await?;
        let rolled = roll_up(&mut tx, settings, target).await?;
        tx.commit().await?;
        rolled
    };
    let failing_before = failures::failing(holder).await?;
    let as_of = advance.as_of;
    // Shared with the groups' tasks, not copied: each SLA's definition.
    let tracked = std::sync::Arc::new(tracked);
    let mut groups = spread(&tracked, connections).into_iter();
    let own = groups.next().unwrap_or_default();
    let mut others = tokio::task::JoinSet::new();
    for group in groups {
        let (db, settings, tracked) = (db.clone(), settings.clone(), tracked.clone());
        others.spawn(async move {
            let mut tx = db.tenant_tx(tenant).await?;
            settings.bound_statements(&mut tx).await?;
            let outcomes = evaluate_group(&mut tx, &tracked, &group, as_of, &settings).await?;
            tx.commit().await?;
            Ok::<_, EvaluatorError>(outcomes)
        });
    }
    let (own, others) = tokio::join!(
        evaluate_group(holder, &tracked, &own, as_of, settings),
        others.join_all()
    );
    let mut outcomes = own?;
    for group in others {
        outcomes.extend(group?);
    }
    outcomes.sort_by_key(|o| o.index);
    finish(holder, advance, &tracked, failing_before, outcomes).await
}

/// Takes the tenant for the transaction, or answers [`EvaluatorError::Busy`].
///
/// A transaction-scoped advisory lock on the tenant backs up the job queue:
/// were two workers ever to hold one tenant (a lease lost mid-run), the
/// second stops here instead of waiting on the first.
async fn hold_tenant(tx: &mut TenantTx) -> Result<(), EvaluatorError> {
    let tenant = tx.tenant();
    let locked: bool = sqlx::query_scalar(
        "SELECT pg_try_advisory_xact_lock(hashtextextended('slaproof-evaluate:' || $1, 0))",
    )
    .bind(tenant.uuid().to_string())
    .fetch_one(&mut **tx)
    .await
    .doing("locking the tenant")?;
    if locked {
        Ok(())
    } else {
        Err(EvaluatorError::Busy {
            tenant: tenant.to_string(),
        })
    }
}

/// Rolls the tenant's new events up, to the clock's watermark or to
/// `target`.
async fn roll_up(
    tx: &mut TenantTx,
    settings: &Settings,
    target: Option<chrono::DateTime<Utc>>,
) -> Result<(Advance, Vec<TrackedSla>), EvaluatorError> {
    match target {
        Some(target) => advance_to(tx, settings, target).await,
        None => advance(tx, settings).await,
    }
}

/// Deals the tracked versions into at most `groups` groups, round-robin by
/// SLA: the versions of one SLA (an earlier one closing its last period,
/// the newest) stay in one group and in order, since they share the
/// SLA's signals and alert states.
fn spread(tracked: &[TrackedSla], groups: usize) -> Vec<Vec<usize>> {
    let mut group_of: std::collections::HashMap<SlaId, usize> = std::collections::HashMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (index, sla) in tracked.iter().enumerate() {
        let next = group_of.len() % groups.max(1);
        let g = *group_of.entry(sla.id).or_insert(next);
        if out.len() <= g {
            out.resize_with(g + 1, Vec::new);
        }
        out[g].push(index);
    }
    out
}

/// One tracked version's outcome, by its place among the tenant's.
struct Outcome {
    index: usize,
    sla: SlaId,
    name: String,
    version: i32,
    run: Result<SlaRun, EvaluatorError>,
}

/// The instants an SLA's evaluation in a group is judged at.
#[derive(Debug, Clone, Copy)]
struct RoundAt {
    /// The round's watermark.
    as_of: chrono::DateTime<Utc>,
    /// When the group's maintenance changes were settled: every change
    /// stamped before it is visible to the group's reads, every later one
    /// is stamped after it (`slaproof_store::maintenance::settled`).
    seen: chrono::DateTime<Utc>,
}

/// Evaluates the tracked versions at `indexes` in savepoints of `tx` (see
/// [`in_savepoints`]): a failing one is left out, the others kept.
async fn evaluate_group(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    indexes: &[usize],
    as_of: chrono::DateTime<Utc>,
    settings: &Settings,
) -> Result<Vec<Outcome>, EvaluatorError> {
    let seen = slaproof_store::maintenance::settled(tx)
        .await
        .doing("settling maintenance changes")?;
    let at = RoundAt { as_of, seen };
    let mut out = Vec::with_capacity(indexes.len());
    for chunk in indexes.chunks(SAVEPOINT_CHUNK) {
        let runs = in_savepoints(tx, tracked, chunk, at, settings).await?;
        for (&index, run) in chunk.iter().zip(runs) {
            let sla = &tracked[index];
            out.push(Outcome {
                index,
                sla: sla.id,
                name: sla.name.clone(),
                version: sla.version,
                run,
            });
        }
    }
    Ok(out)
}

/// Merges the outcomes (in the tenant's order) into its run, and records
/// in `tx` which SLAs failed and which recovered.
async fn finish(
    tx: &mut TenantTx,
    advance: Advance,
    tracked: &[TrackedSla],
    failing_before: HashSet<SlaId>,
    outcomes: Vec<Outcome>,
) -> Result<TenantRun, EvaluatorError> {
    let mut failed: Vec<SlaFailure> = advance.unreadable.clone();
    let mut evaluations = Vec::new();
    let mut alerts_told = 0;
    let mut closed = Vec::new();
    let mut composites = Vec::new();
    let mut closed_composites = Vec::new();
    let mut days_measured = 0;
    for outcome in outcomes {
        match outcome.run {
            Ok(run) => {
                evaluations.extend(run.evaluations);
                alerts_told += run.alerts_told;
                composites.extend(run.composite);
                closed.extend(run.closed);
                closed_composites.extend(run.closed_composites);
                days_measured += run.days_measured;
            }
            Err(err) => failed.push(SlaFailure::new(
                outcome.sla,
                &outcome.name,
                outcome.version,
                &err,
            )),
        }
    }
    // An SLA tracked twice (an earlier version closing its last period)
    // fails once.
    let mut seen = HashSet::new();
    failed.retain(|f| seen.insert(f.sla));
    for failure in &failed {
        tracing::warn!(
            sla = %failure.name, version = failure.version, error = %failure.error,
            "evaluating an SLA failed; its tenant's other SLAs go on"
        );
        crate::metrics::sla_failed();
        failures::record(tx, failure).await?;
    }
    let recovered: Vec<SlaId> = failing_before
        .into_iter()
        .filter(|id| !seen.contains(id) && tracked.iter().any(|t| t.id == *id))
        .collect();
    failures::clear(tx, &recovered).await?;
    Ok(TenantRun {
        tenant: tx.tenant(),
        advance,
        evaluations,
        alerts_told,
        closed,
        composites,
        closed_composites,
        days_measured,
        failed_slas: failed,
    })
}

/// What [`schedule_all`] did and saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scheduled {
    pub tenants: usize,
    /// What is failing or stuck across all tenants (also the operators'
    /// gauges).
    pub stuck: Stuck,
}

/// Asks for an evaluation of every tenant now. One pending job per tenant:
/// asking again while one is pending changes nothing, while a worker holds
/// it makes it run once more afterwards, and while it waits to be retried
/// after failing leaves its retry time alone. Counts, on the way, what is
/// failing and stuck, and sets the gauges.
#[tracing::instrument(skip(db))]
pub async fn schedule_all(db: &Database) -> Result<Scheduled, EvaluatorError> {
    let all = tenants::list(db).await?;
    let mut stuck = Stuck::default();
    for tenant in &all {
        let mut tx = db.tenant_tx(tenant.id).await?;
        jobs::enqueue_routine(
            &mut tx,
            &NewJob {
                kind: JOB_KIND.to_owned(),
                payload: serde_json::json!({}),
                dedup_key: Some("tenant".to_owned()),
                run_at: Utc::now(),
            },
        )
        .await?;
        stuck.add(failures::census(&mut tx).await?);
        tx.commit().await?;
    }
    crate::metrics::stuck(stuck);
    Ok(Scheduled {
        tenants: all.len(),
        stuck,
    })
}

/// Runs one claimed job: the tenant's evaluation and the job's completion
/// in one transaction.
#[tracing::instrument(skip(db, settings, job), fields(tenant = %job.tenant))]
pub async fn run_job(
    db: &Database,
    settings: &Settings,
    job: &ClaimedJob,
) -> Result<TenantRun, EvaluatorError> {
    let mut tx = db.tenant_tx(job.tenant).await?;
    let run = evaluate_tenant_spread(db, &mut tx, settings, None).await?;
    if !jobs::complete(&mut tx, job).await? {
        tx.rollback().await?;
        return Err(EvaluatorError::LeaseLost {
            tenant: job.tenant.to_string(),
        });
    }
    tx.commit().await?;
    Ok(run)
}

/// What one round did.
#[derive(Debug, Clone, Default)]
pub struct Round {
    pub runs: Vec<TenantRun>,
    pub failures: Vec<(TenantId, String)>,
}

/// Claims and runs due jobs until none is left.
#[tracing::instrument(skip(db, settings))]
pub async fn work_due(
    db: &Database,
    settings: &Settings,
    worker: &str,
) -> Result<Round, EvaluatorError> {
    let mut round = Round::default();
    loop {
        let claimed = jobs::claim(db, JOB_KIND, worker, settings.batch, settings.lease()).await?;
        if claimed.is_empty() {
            return Ok(round);
        }
        for job in &claimed {
            let started = std::time::Instant::now();
            match run_job(db, settings, job).await {
                Ok(run) => {
                    let lag = (Utc::now() - run.advance.as_of).as_seconds_f64();
                    crate::metrics::evaluated(started.elapsed(), lag);
                    round.runs.push(run);
                }
                Err(err) => {
                    crate::metrics::failed();
                    let retry = jobs::retry_delay(job.attempts);
                    tracing::error!(
                        tenant = %job.tenant, error = %err, attempts = job.attempts,
                        retry_in_secs = retry.as_secs_f64(), "evaluation failed; will retry"
                    );
                    if let Err(fail) = jobs::fail(db, job, &err.to_string(), retry).await {
                        tracing::error!(tenant = %job.tenant, error = %fail, "could not record the failure");
                    }
                    round.failures.push((job.tenant, err.to_string()));
                }
            }
        }
    }
}

/// Runs rounds every `settings.interval_secs` until cancelled.
pub async fn run(db: Database, settings: Settings, worker: String, shutdown: CancellationToken) {
    loop {
        if let Err(err) = schedule_all(&db).await {
            tracing::error!(error = %err, "could not schedule evaluations");
        }
        match work_due(&db, &settings, &worker).await {
            Ok(round) if !round.runs.is_empty() => {
                let events: u64 = round.runs.iter().map(|r| r.advance.events_read).sum();
                tracing::info!(
                    tenants = round.runs.len(),
                    events,
                    failures = round.failures.len(),
                    "evaluated"
                );
            }
            Ok(_) => {}
            Err(err) => tracing::error!(error = %err, "evaluation round failed"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(settings.interval()) => {}
        }
    }
}
