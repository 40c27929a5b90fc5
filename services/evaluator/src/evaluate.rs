//! Evaluation of each objective over its window from the rollups: compliance, error budget, burn rate, time to exhaustion and burn-rate alerts, maintenance excluded from numerator and denominator.
//!
//! Maintenance windows are applied here rather than in the rollups, so that
//! a window added or cancelled afterwards changes the next evaluation
//! without rewriting counts. Minutes wholly inside maintenance drop out;
//! the (at most two per window) minutes a window cuts are recounted from
//! the raw events of that minute, which keeps the exclusion exact to the
//! microsecond.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::{ErrorBudget, Tally};
use slaproof_domain::burn::{AlertTransition, BurnRate, BurnRateAlertRule, time_to_exhaustion};
use slaproof_domain::minute::{floor_minute, maintenance_minutes};
use slaproof_domain::objective::{Objective, Sli, TimeSlicesSli};
use slaproof_domain::risk::{DegradeLevel, Outlook};
use slaproof_domain::slices::slice_objective_tally;
use slaproof_domain::window::Period;
use slaproof_store::{TenantTx, alert_states, maintenance, rollup_sums};

use crate::error::{Doing, EvaluatorError};
use crate::maintenance::recount_cut_minutes;
use crate::tracked::TrackedSla;

/// The verdict on one objective at one instant, with every number behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectiveEvaluation {
    pub id: uuid::Uuid,
    pub sla: slaproof_domain::ids::SlaId,
    pub sla_name: String,
    pub version: i32,
    pub objective: String,
    /// The period measured; data up to `as_of` (the end, once it has passed).
    pub period: Period,
    pub as_of: DateTime<Utc>,
    pub budget: ErrorBudget,
    /// Events left out because they occurred during maintenance.
    pub excluded: Tally,
    /// Events that arrived after their minute but before their period
    /// closed, and were folded in: part of `budget.tally`, or of
    /// `excluded` when maintenance took them out (`tests/tests/e2e/oracle.rs`
    /// pins this).
    pub late_folded: u64,
    /// Events that arrived after the grace period: reported, not counted.
    pub late: Tally,
    /// Over the last hour.
    pub burn_rate: BurnRate,
    pub time_to_exhaustion: Option<Duration>,
    pub alerts: Vec<AlertCheck>,
    /// Where the period is heading at its expected volume (see
    /// [`slaproof_domain::risk`]); `None` with no events.
    pub outlook: Option<Outlook>,
    /// The degrade level [`crate::signals::record`] set (0 until then).
    pub degrade_level: DegradeLevel,
}

/// One burn-rate rule checked at an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertCheck {
    pub rule: BurnRateAlertRule,
    pub long: Tally,
    pub short: Tally,
    pub fires: bool,
}

/// An objective's counts over a whole period, summed by Postgres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PeriodCounts {
    pub tally: Tally,
    pub excluded: Tally,
    pub late_folded: u64,
    pub late: Tally,
}

/// Sums the rollups of `[from, to)` per objective in the database (exact:
/// integer sums) from hourly rows and, at the edges, minute rows, taking
/// maintenance out: whole minutes by a second sum over their ranges, cut
/// minutes by recounting their events.
#[tracing::instrument(skip(tx, sla, windows))]
pub async fn period_counts(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    windows: &[Period],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<HashMap<String, PeriodCounts>, EvaluatorError> {
    let mut all = counts_over(tx, sla, windows, &[(from, to)], as_of, grace).await?;
    Ok(all.pop().unwrap_or_default())
}

/// [`period_counts`] over each of `ranges`, the rollups of all of them
/// summed in one statement (a round reads its period and every burn-rate
/// lookback: one round trip, not one per range).
#[tracing::instrument(skip(tx, sla, windows, ranges))]
pub async fn counts_over(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    windows: &[Period],
    ranges: &[(DateTime<Utc>, DateTime<Utc>)],
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Vec<HashMap<String, PeriodCounts>>, EvaluatorError> {
    let unsigned = |v: i64| u64::try_from(v).unwrap_or(0);
    let sums = rollup_sums::over_ranges(tx, sla.id, sla.version, ranges)
        .await
        .doing("summing rollups")?;
    let mut all = Vec::with_capacity(ranges.len());
    for (&(from, to), sums) in ranges.iter().zip(sums) {
        let mut out: HashMap<String, PeriodCounts> = sla
            .counted_objectives()
            .map(|o| (o.name.as_str().to_owned(), PeriodCounts::default()))
            .collect();
        if from >= to {
            all.push(out);
            continue;
        }
        for (objective, s) in sums {
            if let Some(c) = out.get_mut(&objective) {
                c.tally = Tally {
                    good: unsigned(s.good),
                    total: unsigned(s.total),
                };
                c.late_folded = unsigned(s.late_folded);
                c.late = Tally {
                    good: unsigned(s.late_good),
                    total: unsigned(s.late_total),
                };
            }
        }
        let (whole, cut) = maintenance_minutes(windows, from, to);
        if !whole.is_empty() {
            let (starts, ends): (Vec<_>, Vec<_>) = whole.into_iter().unzip();
            let sums = rollup_sums::over_minutes(tx, sla.id, sla.version, &starts, &ends)
                .await
                .doing("summing rollups under maintenance")?;
            for (objective, good, total) in sums {
                if let Some(c) = out.get_mut(&objective) {
                    c.excluded = c.excluded
                        + Tally {
                            good: unsigned(good),
                            total: unsigned(total),
                        };
                }
            }
        }
        for (objective, minutes) in
            recount_cut_minutes(tx, sla, windows, &cut, as_of, grace).await?
        {
            if let Some(c) = out.get_mut(&objective) {
                c.excluded = c.excluded + minutes.into_values().sum();
            }
        }
        for c in out.values_mut() {
            c.tally = Tally {
                good: c.tally.good.saturating_sub(c.excluded.good),
                total: c.tally.total.saturating_sub(c.excluded.total),
            };
        }
        all.push(out);
    }
    Ok(all)
}

/// Whether an objective is judged on counts of events, or of gauge values
/// (time slices are judged on slices, see [`counted_slices`]).
pub fn is_event_ratio(objective: &Objective) -> bool {
    matches!(
        objective.sli,
        Sli::Ratio(_) | Sli::Threshold(_) | Sli::Gauge(_)
    )
}

/// The time-slice SLI of an objective judged on slices: by good slices
/// (`Timeslices`) or by the mean of the slices' ratios (`RatioTimeslices`).
pub fn counted_slices(objective: &Objective) -> Option<&TimeSlicesSli> {
    match &objective.sli {
        Sli::TimeSlices(t) => Some(t),
        _ => None,
    }
}

/// The slice tally of a time-slice objective over `[from, to)`: good and
/// total slices (`Timeslices`), or the mean of the slices' ratios as
/// millionths of a slice (`RatioTimeslices`, exact: see
/// [`slaproof_domain::slices`]).
///
/// Slices follow the window's time zone (UTC for a rolling window), as
/// [`slaproof_domain::slice_grid`] lays them out: one-day slices are the
/// local days, a DST day one slice of 23 or 25 hours; shorter slices step
/// from local midnight and end at the next. Partial slices are judged on
/// their minutes inside and weigh equally: a slice cut by `from` (the
/// start of a rolling window or of a lookback) or still running at `to`
/// counts like any other. Events during maintenance are taken out first
/// (whole minutes by leaving their rollups out, cut minutes by subtracting
/// their recount from their slice), so a slice wholly in maintenance is
/// empty and, like any empty slice, weighs nothing.
#[tracing::instrument(skip(tx, sla, sli, windows))]
#[allow(clippy::too_many_arguments)]
pub async fn slice_tally(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    objective: &str,
    sli: &TimeSlicesSli,
    windows: &[Period],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Tally, EvaluatorError> {
    if from >= to {
        return Ok(Tally::default());
    }
    let grid =
        slaproof_domain::slice_grid::SliceGrid::new(sli.slice_length, &sla.definition.window);
    // Minutes are summed in SQL by stretches that never straddle a slice
    // boundary (a day for UTC days, an hour for Berlin days), then each
    // stretch is put in its slice here.
    let grain = i64::try_from(grid.aligned_grain(from, to)).unwrap_or(60);
    let (whole, cut) = maintenance_minutes(windows, from, to);
    let (starts, ends): (Vec<_>, Vec<_>) = whole.into_iter().unzip();
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT extract(epoch FROM r.minute)::int8 / $7, sum(r.good)::int8, sum(r.total)::int8 \
         FROM evaluator_rollups r \
         WHERE r.tenant_id = $1 AND r.sla_id = $2 AND r.version = $3 AND r.minute >= $4 AND r.minute < $5 \
           AND r.objective = $6 \
           AND NOT EXISTS (SELECT 1 FROM unnest($8::timestamptz[], $9::timestamptz[]) AS w(s, e) \
                           WHERE r.minute >= w.s AND r.minute < w.e) \
         GROUP BY 1 ORDER BY 1",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.id.uuid())
    .bind(sla.version)
    .bind(from)
    .bind(to)
    .bind(objective)
    .bind(grain)
    .bind(&starts)
    .bind(&ends)
    .fetch_all(&mut **tx)
    .await
    .doing("summing time slices")?;
    // Stretches come in order: remember the last slice found.
    let mut last: Option<Period> = None;
    let mut slice_of = |at: DateTime<Utc>| match last {
        Some(slice) if slice.contains(at) => slice.start,
        _ => {
            let slice = grid.slice_containing(at);
            last = Some(slice);
            slice.start
        }
    };
    let unsigned = |v: i64| u64::try_from(v).unwrap_or(0);
    let mut slices: BTreeMap<DateTime<Utc>, Tally> = BTreeMap::new();
    for (stretch, good, total) in rows {
        let at = DateTime::from_timestamp(stretch.saturating_mul(grain), 0).unwrap_or(from);
        let t = slices.entry(slice_of(at.max(from))).or_default();
        t.good += unsigned(good);
        t.total += unsigned(total);
    }
    if let Some(minutes) = recount_cut_minutes(tx, sla, windows, &cut, as_of, grace)
        .await?
        .remove(objective)
    {
        for (minute, out) in minutes {
            if let Some(t) = slices.get_mut(&slice_of(minute)) {
                t.good = t.good.saturating_sub(out.good);
                t.total = t.total.saturating_sub(out.total);
            }
        }
    }
    Ok(slice_objective_tally(
        sli,
        sla.definition.policy.no_data.slices,
        &grid,
        windows,
        Period {
            start: from,
            end: to,
        },
        &slices,
    ))
}

/// Evaluates every event-count objective of one SLA as of `as_of` (a
/// minute boundary: the watermark).
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name))]
pub async fn evaluate_sla(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Vec<ObjectiveEvaluation>, EvaluatorError> {
    let period = sla.definition.window.period_containing(as_of);
    evaluate_period(tx, sla, period, as_of, grace).await
}

/// Evaluates every event-count objective of one SLA over `period` with the
/// events received before `as_of` (a past period, to close it, or the
/// current one). Burn rates and alert checks look back from `as_of`.
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name))]
pub async fn evaluate_period(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    period: Period,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Vec<ObjectiveEvaluation>, EvaluatorError> {
    let window = sla.definition.window;
    let period_start = floor_minute(period.start).max(sla.covers_from);
    let until = floor_minute(period.end.min(as_of));
    let nominal = window.nominal_duration();
    let rules = BurnRateAlertRule::workbook(nominal);
    // Burn rates and alerts look back as far as the longest rule's long
    // lookback (it scales with the window: a year's ticket, 36.5 days) and
    // at least the burn rate's hour; each lookback is summed like the
    // period (hours, then minutes at the edges).
    let longest_lookback = rules
        .iter()
        .map(|r| r.long_window)
        .fold(Duration::hours(1), Duration::max);
    // Gauge objectives look back from `policy.gaugeDelay` before `as_of`:
    // their scores arrive late, and the last minutes hold only the few
    // that came fast.
    let has_gauge = sla
        .definition
        .objectives
        .iter()
        .any(|o| matches!(o.sli, Sli::Gauge(_)));
    let gauge_delay = if has_gauge {
        sla.definition.policy.gauge_delay.chrono()
    } else {
        Duration::zero()
    };
    let recent = (as_of - gauge_delay - longest_lookback).max(sla.covers_from);
    let windows =
        maintenance::periods(tx, sla.id, &sla.definition, period_start.min(recent), as_of).await?;
    let mut lookbacks: Vec<Duration> = rules
        .iter()
        .flat_map(|r| [r.long_window, r.short_window])
        .chain([Duration::hours(1)])
        .collect();
    lookbacks.sort();
    lookbacks.dedup();
    // The period, then each lookback back from `as_of`, then (for gauges)
    // each lookback back from the gauge delay: summed in one statement.
    let mut ranges = vec![(period_start, until)];
    for &lookback in &lookbacks {
        ranges.push(((as_of - lookback).max(sla.covers_from), as_of));
    }
    if has_gauge {
        let to = (as_of - gauge_delay).max(sla.covers_from);
        for &lookback in &lookbacks {
            ranges.push(((to - lookback).max(sla.covers_from), to));
        }
    }
    let mut summed = counts_over(tx, sla, &windows, &ranges, as_of, grace)
        .await?
        .into_iter();
    let counts = summed.next().unwrap_or_default();
    let recent_counts: HashMap<Duration, HashMap<String, PeriodCounts>> =
        lookbacks.iter().copied().zip(summed.by_ref()).collect();
    let delayed_counts: HashMap<Duration, HashMap<String, PeriodCounts>> =
        lookbacks.iter().copied().zip(summed).collect();
    // Time-slice objectives count slices, over the period and each lookback.
    let mut slice_counts: HashMap<(String, Option<Duration>), Tally> = HashMap::new();
    for objective in &sla.definition.objectives {
        let Some(sli) = counted_slices(objective) else {
            continue;
        };
        let name = objective.name.as_str();
        let t = slice_tally(
            tx,
            sla,
            name,
            sli,
            &windows,
            period_start,
            until,
            as_of,
            grace,
        )
        .await?;
        slice_counts.insert((name.to_owned(), None), t);
        for lookback in recent_counts.keys().copied().collect::<Vec<_>>() {
            let from = (as_of - lookback).max(sla.covers_from);
            let t = slice_tally(tx, sla, name, sli, &windows, from, as_of, as_of, grace).await?;
            slice_counts.insert((name.to_owned(), Some(lookback)), t);
        }
    }
    let gauges: Vec<&str> = sla
        .definition
        .objectives
        .iter()
        .filter(|o| matches!(o.sli, Sli::Gauge(_)))
        .map(|o| o.name.as_str())
        .collect();
    let over = |lookback: Duration, objective: &str| {
        if let Some(t) = slice_counts.get(&(objective.to_owned(), Some(lookback))) {
            return *t;
        }
        let counts = if gauges.contains(&objective) {
            &delayed_counts
        } else {
            &recent_counts
        };
        counts
            .get(&lookback)
            .and_then(|c| c.get(objective))
            .map_or(Tally::default(), |c| c.tally)
    };
    let mut out = Vec::new();
    for objective in sla
        .definition
        .objectives
        .iter()
        .filter(|o| is_event_ratio(o) || counted_slices(o).is_some())
    {
        let name = objective.name.as_str();
        let Some(c) = counts.get(name) else {
            continue;
        };
        // Slices for time-slice objectives, events for the others.
        let tally = slice_counts
            .get(&(name.to_owned(), None))
            .copied()
            .unwrap_or(c.tally);
        let budget = ErrorBudget::new(objective.target, tally);
        let last_hour = over(Duration::hours(1), name);
        let burn_rate = BurnRate::of(last_hour, objective.target);
        let alerts = rules
            .iter()
            .map(|rule| {
                let long = over(rule.long_window, name);
                let short = over(rule.short_window, name);
                AlertCheck {
                    rule: *rule,
                    long,
                    short,
                    fires: rule.fires(objective.target, long, short),
                }
            })
            .collect::<Vec<AlertCheck>>();
        // The recent bad rate: over the longest alert lookback.
        let recent = alerts
            .iter()
            .max_by_key(|a| a.rule.long_window)
            .map_or(Tally::default(), |a| a.long);
        let outlook = Outlook::of(
            objective.target,
            tally,
            recent,
            until - period_start,
            period.end - period_start,
        );
        out.push(ObjectiveEvaluation {
            id: uuid::Uuid::now_v7(),
            sla: sla.id,
            sla_name: sla.name.clone(),
            version: sla.version,
            objective: objective.name.as_str().to_owned(),
            period: Period {
                start: period_start,
                end: period.end,
            },
            as_of,
            budget,
            excluded: c.excluded,
            late_folded: c.late_folded,
            late: c.late,
            burn_rate,
            time_to_exhaustion: time_to_exhaustion(&budget, nominal, burn_rate),
            outlook,
            degrade_level: 0,
            alerts,
        });
    }
    Ok(out)
}

/// Records alert transitions: state rows (all rules of the objective in
/// one statement), and one outbox message per firing or resolving
/// (`slo.burn_rate_alert`).
#[tracing::instrument(skip_all, fields(objective = %evaluation.objective))]
pub async fn record_alerts(
    tx: &mut TenantTx,
    evaluation: &ObjectiveEvaluation,
) -> Result<usize, EvaluatorError> {
    let milli = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let burns: Vec<(u64, u64)> = evaluation
        .alerts
        .iter()
        .map(|check| {
            (
                BurnRate::of(check.long, evaluation.budget.target).milli(),
                BurnRate::of(check.short, evaluation.budget.target).milli(),
            )
        })
        .collect();
    let checks: Vec<alert_states::RuleCheck<'_>> = evaluation
        .alerts
        .iter()
        .zip(&burns)
        .map(|(check, &(long, short))| alert_states::RuleCheck {
            rule: check.rule.name,
            fires: check.fires,
            long_burn_milli: milli(long),
            short_burn_milli: milli(short),
        })
        .collect();
    let was_firing = alert_states::record(
        tx,
        evaluation.sla,
        evaluation.version,
        &evaluation.objective,
        evaluation.as_of,
        &checks,
    )
    .await?;
    let mut told = 0;
    for ((check, &(long, short)), was) in evaluation.alerts.iter().zip(&burns).zip(was_firing) {
        let transition = AlertTransition::between(was, check.fires);
        let changed = matches!(
            transition,
            AlertTransition::Fired | AlertTransition::Resolved
        );
        if changed {
            let payload = serde_json::json!({
                "sla": evaluation.sla.to_string(),
                "slaName": evaluation.sla_name,
                "version": evaluation.version,
                "objective": evaluation.objective,
                "rule": check.rule.name,
                "severity": check.rule.severity.as_str(),
                "state": if transition.firing() { "firing" } else { "resolved" },
                "at": evaluation.as_of,
                "threshold": check.rule.threshold_for(evaluation.budget.target).to_string(),
                "longWindowSecs": check.rule.long_window.num_seconds(),
                "shortWindowSecs": check.rule.short_window.num_seconds(),
                "longBurnRateMilli": long,
                "shortBurnRateMilli": short,
                "long": {"good": check.long.good, "total": check.long.total},
                "short": {"good": check.short.good, "total": check.short.total},
                "evaluation": evaluation.id,
            });
            slaproof_store::outbox::enqueue(tx, "slo.burn_rate_alert", &payload).await?;
            told += 1;
        }
    }
    Ok(told)
}
