//! In-period signals of each objective, told once per change and per period: at risk (and recovered), budget exhausted at the expected volume (and recovered), and the degrade level a gateway should apply.
//!
//! The rules are [`slaproof_domain::risk`]'s. A breach is not one of
//! them: it is a closed period not met, told at the close
//! ([`crate::facts`]). The state is kept per objective with the period it
//! belongs to, so a period that ends at risk does not hide the next one's
//! signals: a new period starts clean (its old state is neither recovered
//! nor carried over). The degrade level is operational rather than
//! contractual, so its streak carries across a period's end.

use chrono::{DateTime, Utc};
use slaproof_domain::burn::BurnRate;
use slaproof_domain::risk::{self, DegradeLevel};
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::window::TimeWindow;
use slaproof_store::signals as store_signals;
use slaproof_store::{TenantTx, outbox};

use crate::error::EvaluatorError;
use crate::evaluate::ObjectiveEvaluation;
use crate::facts::summary;

/// The stored state of an objective's signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct State {
    at_risk: bool,
    exhausted: bool,
    degrade_level: DegradeLevel,
    light_streak: u32,
}

/// Judges `e`'s signals against the stored state, tells each change
/// through the outbox, stores the new state and sets `e.degrade_level`.
/// Returns the number of messages written.
#[tracing::instrument(skip_all, fields(objective = %e.objective))]
pub(crate) async fn record(
    tx: &mut TenantTx,
    e: &mut ObjectiveEvaluation,
    definition: &SlaDefinition,
) -> Result<usize, EvaluatorError> {
    let policy = &definition.policy;
    // The period the state belongs to. A rolling window's "period" moves
    // with every round: its signals run on as one stretch.
    let period_start = match definition.window {
        TimeWindow::Rolling { .. } => DateTime::<Utc>::UNIX_EPOCH,
        TimeWindow::Calendar { .. } => e.period.start,
    };
    let stored = store_signals::find(tx, e.sla, &e.objective).await?;
    let before = stored.map_or(State::default(), |s| {
        let same_period = s.period_start == period_start;
        State {
            at_risk: s.at_risk && same_period,
            exhausted: s.exhausted && same_period,
            degrade_level: DegradeLevel::try_from(s.degrade_level).unwrap_or(0),
            light_streak: u32::try_from(s.light_streak).unwrap_or(0),
        }
    });
    // The shortest lookback any alert rule checks: the page rule's short one.
    let short_burn = e
        .alerts
        .iter()
        .min_by_key(|a| a.rule.short_window)
        .map_or(BurnRate::ZERO, |a| BurnRate::of(a.short, e.budget.target));
    // Rounds repeat a minute until the watermark moves: only a minute not
    // evaluated before lengthens the streak.
    let advanced = stored.is_none_or(|s| e.as_of > s.evaluated_at);
    let light_streak =
        risk::light_streak(&policy.degrade, short_burn, before.light_streak, advanced);
    let outlook = e.outlook.as_ref();
    let now = State {
        at_risk: outlook.is_some_and(|o| o.at_risk),
        exhausted: outlook.is_some_and(|o| o.exhausted),
        degrade_level: risk::degrade_level(&policy.degrade, short_burn, light_streak, outlook),
        light_streak,
    };
    e.degrade_level = now.degrade_level;
    let mut told = 0;
    if now.at_risk != before.at_risk {
        let mut payload = summary(e);
        payload["state"] = if now.at_risk { "at_risk" } else { "recovered" }.into();
        outbox::enqueue(tx, "slo.at_risk", &payload).await?;
        told += 1;
    }
    if now.exhausted != before.exhausted {
        let mut payload = summary(e);
        payload["state"] = if now.exhausted {
            "exhausted"
        } else {
            "recovered"
        }
        .into();
        outbox::enqueue(tx, "slo.budget_exhausted", &payload).await?;
        told += 1;
    }
    if now.degrade_level != before.degrade_level {
        let mut payload = summary(e);
        payload["from"] = before.degrade_level.into();
        payload["to"] = now.degrade_level.into();
        payload["shortBurnRateMilli"] = short_burn.milli().into();
        payload["lightStreak"] = light_streak.into();
        payload["policy"] = serde_json::json!({
            "lightBurnRateMilli": policy.degrade.light_burn_milli,
            "lightEvaluations": policy.degrade.light_evaluations,
            "fullBurnRateMilli": policy.degrade.full_burn_milli,
            "fullBudgetRemainingPpm": policy.degrade.full_remaining_ppm,
        });
        outbox::enqueue(tx, "slo.degrade_level_changed", &payload).await?;
        told += 1;
    }
    let changed = now.at_risk != before.at_risk
        || now.exhausted != before.exhausted
        || now.degrade_level != before.degrade_level
        || stored.is_none_or(|s| s.period_start != period_start);
    store_signals::record(
        tx,
        e.sla,
        &e.objective,
        &store_signals::Signals {
            period_start,
            at_risk: now.at_risk,
            exhausted: now.exhausted,
            degrade_level: i16::from(now.degrade_level),
            light_streak: i32::try_from(now.light_streak).unwrap_or(i32::MAX),
            evaluated_at: e.as_of,
        },
        changed,
    )
    .await?;
    Ok(told)
}
