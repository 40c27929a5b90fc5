//! The composite verdict of an SLA whose objectives carry weights: the objectives' evaluations combined by the domain's `composite::combine`, recorded, told and frozen beside them.
//!
//! The composite is computed from the objectives' evaluations, not from
//! the rollups a second time, so it rests on exactly the counts (events or
//! slices, maintenance out, late events apart) the objectives' verdicts
//! rest on, and each stored composite names the evaluations it combined.
//! Its error budget is the share C of the weighted budgets consumed:
//! consumed = C, remaining = 1 − C, met when C ≤ 1.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::burn::BurnRate;
use slaproof_domain::composite::{CompositeResult, ObjectiveCounts, combine};
use slaproof_domain::ids::SlaId;
use slaproof_domain::window::Period;
use slaproof_store::TenantTx;

use crate::error::{Doing, EvaluatorError};
use crate::evaluate::ObjectiveEvaluation;
use crate::tracked::TrackedSla;

/// The name the composite goes by where objectives are named (alert state,
/// outbox facts). Not a valid objective name (those start with a letter or
/// digit), so it can never be mistaken for one.
pub const COMPOSITE: &str = "_composite";

/// C = 1 in the units of [`CompositeResult::consumed_pico`].
pub const PICO: u128 = 1_000_000_000_000;

/// One objective's share in a composite.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompositePart {
    pub objective: String,
    pub weight_micros: u64,
    pub target_ppm: u32,
    /// Good and total events (or slices) of the objective's evaluation.
    pub good: u64,
    pub total: u64,
    /// The objective's own share of its budget used, × 10¹²; `None` with
    /// no counted events (such an objective is left out of C).
    pub consumed_pico: Option<u64>,
    /// The objective's evaluation these numbers come from.
    pub evaluation: uuid::Uuid,
}

impl CompositePart {
    /// The same part, whichever evaluation recorded it: what a correction
    /// compares.
    fn counts(&self) -> (&str, u64, u32, u64, u64) {
        (
            &self.objective,
            self.weight_micros,
            self.target_ppm,
            self.good,
            self.total,
        )
    }
}

/// The composite verdict of one SLA at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct CompositeEvaluation {
    pub id: uuid::Uuid,
    pub sla: SlaId,
    pub sla_name: String,
    pub version: i32,
    pub period: Period,
    pub as_of: DateTime<Utc>,
    pub result: CompositeResult,
    /// The objectives combined, in the definition's order. Objectives with
    /// no evaluation at this instant (gauges, until they are evaluated) are
    /// absent, which weighs them like objectives without data.
    pub parts: Vec<CompositePart>,
    /// The weighted mean of the parts' burn rates over the last hour.
    pub burn_rate: BurnRate,
    pub time_to_exhaustion: Option<Duration>,
}

impl CompositeEvaluation {
    /// C × 10¹², as stored (at most 10¹⁸, see the migration).
    pub fn consumed_pico(&self) -> i64 {
        i64::try_from(self.result.consumed_pico).unwrap_or(i64::MAX)
    }

    /// (1 − C) × 10¹²; negative once overspent.
    pub fn remaining_pico(&self) -> i128 {
        PICO as i128 - i128::try_from(self.result.consumed_pico).unwrap_or(i128::MAX)
    }

    /// Whether the composite is met (`None` with no data at all).
    pub fn met(&self) -> Option<bool> {
        self.result.met
    }

    /// Whether the weighted budget is used up (C ≥ 1).
    pub fn exhausted(&self) -> bool {
        self.result.met.is_some() && self.result.consumed_pico >= PICO
    }
}

/// The composite of `sla` from its objectives' evaluations at one instant
/// (all of one period and `as_of`); `None` when the SLA has no composite
/// or nothing was evaluated.
pub fn compose(
    sla: &TrackedSla,
    evaluations: &[ObjectiveEvaluation],
) -> Option<CompositeEvaluation> {
    if !sla.definition.is_composite() {
        return None;
    }
    let mine: Vec<&ObjectiveEvaluation> = evaluations.iter().filter(|e| e.sla == sla.id).collect();
    let first = mine.first()?;
    let mut parts = Vec::new();
    let mut counts = Vec::new();
    let mut burns: Vec<(u64, &BurnRate)> = Vec::new();
    for objective in &sla.definition.objectives {
        let Some(e) = mine.iter().find(|e| e.objective == objective.name.as_str()) else {
            continue;
        };
        let weight = objective.weight.unwrap_or_default();
        let tally = e.budget.tally;
        let these = ObjectiveCounts {
            weight,
            target: objective.target,
            good: tally.good,
            total: tally.total,
        };
        let own = combine(&[these]);
        parts.push(CompositePart {
            objective: e.objective.clone(),
            weight_micros: weight.micros(),
            target_ppm: objective.target.ppm(),
            good: tally.good,
            total: tally.total,
            consumed_pico: own
                .met
                .map(|_| u64::try_from(own.consumed_pico).unwrap_or(u64::MAX)),
            evaluation: e.id,
        });
        counts.push(these);
        if tally.total > 0 {
            burns.push((weight.micros(), &e.burn_rate));
        }
    }
    let result = combine(&counts);
    let burn_rate = weighted_burn(&burns);
    let window = sla.definition.window.nominal_duration();
    Some(CompositeEvaluation {
        id: uuid::Uuid::now_v7(),
        sla: sla.id,
        sla_name: sla.name.clone(),
        version: sla.version,
        period: first.period,
        as_of: first.as_of,
        result,
        parts,
        burn_rate,
        time_to_exhaustion: exhaustion(&result, window, burn_rate),
    })
}

/// Σ wᵢ·burnᵢ / Σ wᵢ over the objectives that take part in C: an
/// objective's burn rate over the last hour is its consumption of budget
/// over that hour, so this is C measured over the last hour (to 10⁻¹²,
/// like C). An objective quiet in the last hour burns nothing but still
/// weighs, as it does in C.
fn weighted_burn(burns: &[(u64, &BurnRate)]) -> BurnRate {
    let mut weighted: u128 = 0;
    let mut weights: u128 = 0;
    for &(weight, burn) in burns {
        // A burn rate is at most 10⁶ (all bad at a 1 ppm budget): × 10¹² × a
        // weight ≤ 10⁹ stays below 10²⁸.
        let pico = burn
            .numerator()
            .saturating_mul(PICO)
            .checked_div(burn.denominator())
            .unwrap_or(0);
        weighted = weighted.saturating_add(u128::from(weight).saturating_mul(pico));
        weights += u128::from(weight);
    }
    BurnRate::from_fraction(weighted, weights.saturating_mul(PICO)).unwrap_or(BurnRate::ZERO)
}

/// When the composite budget runs out at `burn`: (1 − C) of a window at
/// burn rate 1, so (1 − C) × window / burn. `None` when not burning.
fn exhaustion(result: &CompositeResult, window: Duration, burn: BurnRate) -> Option<Duration> {
    if burn.numerator() == 0 {
        return None;
    }
    let remaining = PICO.saturating_sub(result.consumed_pico);
    let window_secs = u128::try_from(window.num_seconds().max(0)).unwrap_or(0);
    // remaining × window ≤ 10¹² × 3·10⁷; × den (< 2¹⁰⁴) may overflow for
    // vanishingly slow burns: saturate to "beyond any window".
    let secs = (remaining * window_secs)
        .checked_mul(burn.denominator())
        .map_or(u128::from(u64::MAX >> 2), |n| {
            n / (burn.numerator().saturating_mul(PICO))
        });
    Some(Duration::seconds(
        i64::try_from(secs)
            .unwrap_or(i64::MAX / 1000)
            .min(i64::MAX / 1000),
    ))
}

fn parts_json(parts: &[CompositePart]) -> serde_json::Value {
    serde_json::to_value(parts).unwrap_or(serde_json::Value::Null)
}

/// Appends a composite evaluation.
#[tracing::instrument(skip_all, fields(sla = %c.sla_name))]
pub async fn insert(tx: &mut TenantTx, c: &CompositeEvaluation) -> Result<(), EvaluatorError> {
    sqlx::query(
        "INSERT INTO composite_evaluations (tenant_id, id, sla_id, version, as_of, period_start, period_end, \
             consumed_pico, met, burn_rate_milli, exhaustion_secs, parts) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(tx.tenant().uuid())
    .bind(c.id)
    .bind(c.sla.uuid())
    .bind(c.version)
    .bind(c.as_of)
    .bind(c.period.start)
    .bind(c.period.end)
    .bind(c.consumed_pico())
    .bind(c.met())
    .bind(i64::try_from(c.burn_rate.milli()).unwrap_or(i64::MAX))
    .bind(c.time_to_exhaustion.map(|d| d.num_seconds()))
    .bind(parts_json(&c.parts))
    .execute(&mut **tx)
    .await
    .doing("recording a composite evaluation")?;
    Ok(())
}

/// A composite evaluation as stored: for the API's reads.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredComposite {
    pub id: uuid::Uuid,
    pub sla_id: uuid::Uuid,
    pub version: i32,
    pub evaluated_at: DateTime<Utc>,
    pub as_of: DateTime<Utc>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// C × 10¹²: 10¹² is the weighted budget exactly spent.
    pub consumed_pico: i64,
    /// (1 − C) × 10¹²; negative once overspent.
    pub remaining_pico: i64,
    /// C ≤ 1; `None` when no objective had data.
    pub met: Option<bool>,
    pub burn_rate_milli: i64,
    pub exhaustion_secs: Option<i64>,
    /// `[{objective, weightMicros, targetPpm, good, total, consumedPico, evaluation}]`.
    pub parts: serde_json::Value,
}

/// The latest composite evaluation of an SLA; `None` when it has no
/// composite (or none was evaluated yet). One a period close froze (named
/// by a `composite_period_results` row) is that closed period's, not the
/// SLA's current state, and is left out (as `slaproof_store::evaluations::latest`
/// leaves out frozen objective evaluations).
#[tracing::instrument(skip(tx))]
pub async fn latest(
    tx: &mut TenantTx,
    sla: SlaId,
) -> Result<Option<StoredComposite>, EvaluatorError> {
    sqlx::query_as(
        "SELECT id, sla_id, version, evaluated_at, as_of, period_start, period_end, consumed_pico, \
             remaining_pico, met, burn_rate_milli, exhaustion_secs, parts \
         FROM composite_evaluations WHERE tenant_id = $1 AND sla_id = $2 \
           AND NOT EXISTS (SELECT 1 FROM composite_period_results p WHERE p.tenant_id = $1 \
               AND p.sla_id = $2 AND p.composite_evaluation_id = composite_evaluations.id) \
         ORDER BY evaluated_at DESC, id DESC LIMIT 1",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .fetch_optional(&mut **tx)
    .await
    .doing("reading the latest composite")
}

/// What the outbox is told about a composite.
pub fn summary(c: &CompositeEvaluation) -> serde_json::Value {
    serde_json::json!({
        "sla": c.sla.to_string(),
        "slaName": c.sla_name,
        "version": c.version,
        "objective": COMPOSITE,
        "composite": true,
        "periodStart": c.period.start,
        "periodEnd": c.period.end,
        "asOf": c.as_of,
        "consumedPico": c.consumed_pico(),
        "remainingPico": i64::try_from(c.remaining_pico()).unwrap_or(i64::MIN),
        "met": c.met(),
        "burnRateMilli": c.burn_rate.milli(),
        "parts": parts_json(&c.parts),
        "compositeEvaluation": c.id,
    })
}

/// A composite period result frozen at a period's close.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedComposite {
    pub composite: CompositeEvaluation,
    /// 1 at the close; higher for a correction that supersedes it.
    pub revision: i32,
}

/// Freezes the composite of a closed period (recording the evaluation too)
/// as a new revision, unless the revision in force combined the same
/// numbers. Its parts must name the objectives' frozen evaluations.
/// Returns the revision written and whether the one it supersedes was met.
#[tracing::instrument(skip_all, fields(sla = %c.sla_name))]
pub async fn freeze(
    tx: &mut TenantTx,
    c: &CompositeEvaluation,
    cause: &serde_json::Value,
) -> Result<Option<(i32, Option<bool>)>, EvaluatorError> {
    let tenant = tx.tenant().uuid();
    let previous: Option<(i32, serde_json::Value, Option<bool>)> = sqlx::query_as(
        "SELECT revision, parts, met FROM composite_period_results \
         WHERE tenant_id = $1 AND sla_id = $2 AND period_start = $3 ORDER BY revision DESC LIMIT 1",
    )
    .bind(tenant)
    .bind(c.sla.uuid())
    .bind(c.period.start)
    .fetch_optional(&mut **tx)
    .await
    .doing("reading the period's composite result")?;
    if let Some((_, parts, _)) = &previous {
        let parts: Vec<CompositePart> =
            serde_json::from_value(parts.clone()).map_err(|e| EvaluatorError::Corrupt {
                what: "composite parts",
                reason: e.to_string(),
            })?;
        if parts
            .iter()
            .map(CompositePart::counts)
            .eq(c.parts.iter().map(CompositePart::counts))
        {
            return Ok(None);
        }
    }
    let revision = previous.as_ref().map_or(1, |p| p.0 + 1);
    insert(tx, c).await?;
    sqlx::query(
        "INSERT INTO composite_period_results (tenant_id, id, sla_id, version, period_start, period_end, \
             revision, as_of, consumed_pico, met, parts, composite_evaluation_id, cause) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(tenant)
    .bind(uuid::Uuid::now_v7())
    .bind(c.sla.uuid())
    .bind(c.version)
    .bind(c.period.start)
    .bind(c.period.end)
    .bind(revision)
    .bind(c.as_of)
    .bind(c.consumed_pico())
    .bind(c.met())
    .bind(parts_json(&c.parts))
    .bind(c.id)
    .bind(cause)
    .execute(&mut **tx)
    .await
    .doing("freezing a composite period result")?;
    Ok(Some((revision, previous.and_then(|p| p.2))))
}

/// The objectives' evaluations in force in `period`'s frozen results, by
/// objective: what a frozen composite's parts point at.
#[tracing::instrument(skip(tx))]
pub async fn frozen_evaluations(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: DateTime<Utc>,
) -> Result<Vec<(String, uuid::Uuid)>, EvaluatorError> {
    sqlx::query_as(
        "SELECT DISTINCT ON (objective) objective, evaluation_id FROM period_results \
         WHERE tenant_id = $1 AND sla_id = $2 AND period_start = $3 ORDER BY objective, revision DESC",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period_start)
    .fetch_all(&mut **tx)
    .await
    .doing("reading the period's frozen results")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_composite_burn_is_the_weighted_mean_of_burn_rates() {
        // 3 × 2.0 and 1 × 0.0: 1.5.
        let two = BurnRate::from_fraction(2, 1).unwrap();
        let zero = BurnRate::ZERO;
        let b = weighted_burn(&[(3_000_000, &two), (1_000_000, &zero)]);
        assert_eq!(b.milli(), 1_500);
        assert_eq!(weighted_burn(&[]), BurnRate::ZERO);
    }

    #[test]
    fn half_spent_at_burn_one_lasts_half_a_window() {
        let result = CompositeResult {
            consumed_pico: PICO / 2,
            met: Some(true),
        };
        let one = BurnRate::from_fraction(1, 1).unwrap();
        assert_eq!(
            exhaustion(&result, Duration::days(30), one),
            Some(Duration::days(15))
        );
        assert_eq!(
            exhaustion(&result, Duration::days(30), BurnRate::ZERO),
            None
        );
    }
}
