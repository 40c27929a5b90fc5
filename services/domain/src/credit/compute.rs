//! Computing a closed period's credit from its policy and results, keeping every input and step for the ledger and the statement.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    CreditKind, CreditPolicy, ImpactCredits, ImpactOwed, MICRO, PICO, Rounding, TierScope,
    TieredCredits, decimal_text, ratio_text,
};
use super::{Currency, Money};
use crate::decimal::format_scaled;
use crate::objective::ObjectiveName;

/// What a closed period gives the policy to judge.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CreditInputs {
    /// The customer's fee for the period, from its contract data; `None`
    /// when none is on file (a credit that needs it is then an error).
    pub fee: Option<Money>,
    /// Each objective's result for the period.
    pub objectives: Vec<ObjectiveOutcome>,
    /// The composite's result, when the SLA has one.
    pub composite: Option<CompositeOutcome>,
    /// The incidents of the period, for impact credits.
    pub incidents: Vec<Incident>,
    /// Whose requests the incidents' volumes count. Absent from records
    /// written before SLAs had scopes (they counted the whole service's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priced_on: Option<PricedOn>,
}

/// Whose requests a credit's volumes were counted on: the SLA's scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PricedOn {
    pub service: String,
    /// The customer whose requests alone count; `None`: every request of
    /// the service (`scope: service`).
    pub customer: Option<String>,
}

impl PricedOn {
    /// In words, for a statement.
    pub fn describe(&self) -> String {
        match &self.customer {
            Some(c) => format!("the requests of customer {c} on service {}", self.service),
            None => format!(
                "every request of service {}, whichever customer sent it (scope: service)",
                self.service
            ),
        }
    }
}

/// One objective's frozen result for a closed period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectiveOutcome {
    pub objective: ObjectiveName,
    /// Achieved compliance in ppm (99.95% = 999500); `None`: no data.
    pub achieved_ppm: Option<i64>,
    pub met: bool,
}

/// The composite's frozen result: compliance is 1 − the weighted share of
/// error budget spent, so it may be negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompositeOutcome {
    pub achieved_ppm: Option<i64>,
    pub met: bool,
}

impl CompositeOutcome {
    /// The outcome of a composite that spent `consumed_pico` of its
    /// weighted error budget (10⁻¹² of it; more than a whole when over).
    pub fn of_consumed(consumed_pico: i64, met: bool) -> Self {
        Self {
            achieved_ppm: Some(1_000_000 - consumed_pico.div_euclid(1_000_000)),
            met,
        }
    }
}

/// A span in which an objective was failing, with the customer's requests in it.
///
/// Instants are UTC: an incident across local midnight (or a DST change)
/// stays one span of its real length. The caller assigns each incident to
/// one period; it is never split here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    pub objective: ObjectiveName,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// The customer's requests (stored events) in `[start, end)`.
    pub requests: u64,
}

/// Why no credit could be computed. Each is a fact the provider must fix
/// (contract data, results), never a reason to issue zero silently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreditError {
    #[error("no fee on file for this customer and period: {needed_for} is a share of the fee")]
    NoFee { needed_for: String },
    #[error("the fee is in {fee}, the credit policy in {policy}: they must be the same currency")]
    CurrencyMismatch { fee: String, policy: String },
    #[error("the fee must not be negative, got {0}")]
    NegativeFee(String),
    #[error("no result for objective {0:?}, which the credit policy names")]
    MissingOutcome(String),
    #[error("no composite result, which the credit policy's `scope: composite` needs")]
    MissingComposite,
    #[error("incidents[{index}] must end after it starts, got {start} to {end}")]
    IncidentSpan {
        index: usize,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    },
    #[error("the credit is too large to compute exactly ({0})")]
    TooLarge(&'static str),
}

/// A computed credit: the total and every input and step that led to it.
///
/// Amounts written as text are exact, in major units of `currency`: a
/// decimal when it terminates, else a fraction `a/b`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditComputation {
    /// `tiered` or `impact`.
    pub kind: String,
    /// The formula, in words.
    pub formula: String,
    pub currency: Currency,
    /// The customer's fee for the period.
    pub fee: Option<Money>,
    /// The SLA's share of that fee in percent (`50`), when the policy
    /// gives one: tiers and `capPercentOfFee` are shares of fee × this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_share: Option<String>,
    /// Tiered: each tier table's result, in the policy's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tier_tables: Vec<TierTableLine>,
    /// Impact: each incident's result, in the input's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incidents: Vec<ImpactLine>,
    /// Σ of the parts, before caps and rounding.
    pub raw: String,
    pub caps: Vec<CapStep>,
    /// `raw` bounded by the caps.
    pub capped: String,
    pub rounding: Rounding,
    /// `capped` rounded to the minor unit.
    pub rounded: Money,
    pub minimum: Option<MinimumStep>,
    /// What is owed.
    pub total: Money,
}

/// What the ledger keeps beside each credit: the inputs as read and the
/// computation with every step, so that a statement shows what was
/// recorded and nothing recomputed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditRecord {
    pub inputs: CreditInputs,
    pub computation: CreditComputation,
    /// The provider's correction of the fee this period is credited on,
    /// when one was made: the fee in `inputs` is then the corrected one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_correction: Option<FeeCorrectionNote>,
}

impl CreditRecord {
    /// The fee a ledger entry's recorded computation was credited on;
    /// `None` when it needed none, or the record cannot be read.
    pub fn credited_fee(computation: &serde_json::Value) -> Option<Money> {
        Self::deserialize(computation)
            .ok()
            .and_then(|r| r.inputs.fee)
    }
}

/// Why a credited period's fee was stated again, by whom and when, and
/// what it had been credited on before: the audited act that alone may
/// change the fee of a period already credited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeeCorrectionNote {
    pub reason: String,
    pub corrected_by: String,
    pub corrected_at: DateTime<Utc>,
    /// The fee the period had been credited on.
    pub was: Option<Money>,
}

/// One tier table: the largest percent its scope reached, and what that is of the fee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierTableLine {
    /// `objectives` or `composite`.
    pub scope: String,
    pub lines: Vec<TierLine>,
    /// The percent of the fee this table gives (`10`, `0` when none applies).
    pub percent: String,
    /// fee × feeShare × percent, exact.
    pub amount: String,
}

/// How one objective (or the composite) fared against a tier table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierLine {
    /// `None` for the composite.
    pub objective: Option<ObjectiveName>,
    /// Achieved compliance in percent (`99.1`); `None`: no data.
    pub achieved: Option<String>,
    pub met: bool,
    /// The `below` of the tier chosen, in percent.
    pub tier_below: Option<String>,
    /// The chosen tier's percent of the fee, `0` when none applies.
    pub percent: String,
    /// Why no tier applies, when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One incident under the impact formula.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImpactLine {
    pub objective: ObjectiveName,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// end − start in seconds, exact.
    pub duration_seconds: String,
    pub requests: u64,
    /// requests / duration, exact.
    pub qps: String,
    pub level: Option<super::ServiceLevel>,
    /// The level's coefficient (`6`), `0` without a level.
    pub coefficient: String,
    /// Money per second per QPS, in major units.
    pub base_rate: String,
    /// duration × qps × coefficient × base rate, exact.
    pub amount: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One cap and whether the raw credit went over it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapStep {
    /// `cap` (money) or `cap_percent_of_fee`.
    pub rule: String,
    /// The share of the fee, for `cap_percent_of_fee` (`50`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<String>,
    /// The most this cap allows, in whole minor units (a share of the fee rounded down).
    pub limit: Money,
    /// Whether the raw credit was above this limit.
    pub exceeded: bool,
}

/// The minimum and whether it stopped the credit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinimumStep {
    pub minimum: Money,
    /// Whether the rounded credit was below it, so nothing is issued.
    pub applied: bool,
}

const TIERED_FORMULA: &str = "sum over tier tables of fee × the largest percent reached in the table (a tier applies to a missed objective whose achieved compliance is below it); then caps, rounding to the minor unit and the minimum";
const IMPACT_FORMULA: &str = "sum over incidents of duration × QPS × service-level coefficient × base rate (duration × QPS = requests), owed as the policy's owedWhen says; then caps, rounding to the minor unit and the minimum";

/// Computes the credit `policy` gives for a closed period's `inputs`, as
/// the steps of [`crate::credit`]'s doc describe. Pure and deterministic:
/// the same inputs give a byte-identical serialized result.
pub fn compute(
    policy: &CreditPolicy,
    inputs: &CreditInputs,
) -> Result<CreditComputation, CreditError> {
    let currency = &policy.currency;
    if let Some(fee) = &inputs.fee {
        if fee.currency != *currency {
            return Err(CreditError::CurrencyMismatch {
                fee: fee.currency.to_string(),
                policy: currency.to_string(),
            });
        }
        if fee.minor < 0 {
            return Err(CreditError::NegativeFee(fee.to_string()));
        }
    }
    // The SLA's part of the fee, in 10⁻⁶ minor units: fee × feeShare
    // (ppm), exact.
    let share = i128::from(policy.fee_share_ppm);
    let fee_micro = |needed_for: &str| {
        inputs
            .fee
            .as_ref()
            .map(|f| i128::from(f.minor) * share)
            .ok_or_else(|| CreditError::NoFee {
                needed_for: needed_for.to_owned(),
            })
    };
    let places = 12 + u32::from(currency.exponent());
    let exact = |pico: i128| decimal_text(pico, places);

    let (formula, tier_tables, incidents, raw) = match &policy.kind {
        CreditKind::Tiered(tiered) => {
            let (lines, raw) = tiered_parts(tiered, inputs, &fee_micro, &exact)?;
            (TIERED_FORMULA, lines, Vec::new(), raw)
        }
        CreditKind::Impact(impact) => {
            let (lines, raw) = impact_parts(impact, currency, inputs, &exact)?;
            (IMPACT_FORMULA, Vec::new(), lines, raw)
        }
    };

    let mut caps = Vec::new();
    let mut limit: Option<i128> = None;
    if let Some(cap) = policy.cap_minor {
        let cap = i128::from(cap);
        caps.push(CapStep {
            rule: "cap".to_owned(),
            percent: None,
            limit: money(cap, currency)?,
            exceeded: raw > cap * PICO,
        });
        limit = Some(cap);
    }
    if let Some(share) = policy.cap_fee_ppm {
        let fee = fee_micro("the cap `capPercentOfFee`")?;
        // Rounded down so that no rounding rule can lift the credit above it.
        let cap = fee * i128::from(share) / (MICRO * MICRO);
        caps.push(CapStep {
            rule: "cap_percent_of_fee".to_owned(),
            percent: Some(format_scaled(u128::from(share), 4)),
            limit: money(cap, currency)?,
            exceeded: raw > cap * PICO,
        });
        limit = Some(limit.map_or(cap, |l| l.min(cap)));
    }
    // A policy built in code (not read from a document) could carry a
    // negative rate or cap; a credit is never a debit.
    let capped = match limit {
        Some(l) => raw.min(l * PICO),
        None => raw,
    }
    .max(0);
    let rounded = policy.rounding.apply(capped, PICO);
    let minimum = policy.minimum_minor.map(|m| MinimumStep {
        minimum: Money::new(m, currency.clone()),
        applied: rounded < i128::from(m),
    });
    let total = if minimum.as_ref().is_some_and(|m| m.applied) {
        0
    } else {
        rounded
    };
    Ok(CreditComputation {
        kind: policy.kind.as_str().to_owned(),
        formula: if policy.fee_share_ppm == CreditPolicy::WHOLE_FEE {
            formula.to_owned()
        } else {
            formula.replacen(" of fee × ", " of fee × feeShare × ", 1)
        },
        currency: currency.clone(),
        fee: inputs.fee.clone(),
        fee_share: (policy.fee_share_ppm != CreditPolicy::WHOLE_FEE)
            .then(|| format_scaled(u128::from(policy.fee_share_ppm), 4)),
        tier_tables,
        incidents,
        raw: exact(raw),
        caps,
        capped: exact(capped),
        rounding: policy.rounding,
        rounded: money(rounded, currency)?,
        minimum,
        total: money(total, currency)?,
    })
}

fn money(minor: i128, currency: &Currency) -> Result<Money, CreditError> {
    i64::try_from(minor)
        .map(|m| Money::new(m, currency.clone()))
        .map_err(|_| CreditError::TooLarge("more minor units than fit in 64 bits"))
}

fn percent_text(ppm: i64) -> String {
    decimal_text(i128::from(ppm), 4)
}

/// The SLA's part of the fee in 10⁻⁶ minor units, or why there is none.
type FeeFn<'a> = dyn Fn(&str) -> Result<i128, CreditError> + 'a;

/// Each table's lines and amount, and their sum in 10⁻¹² minor units.
fn tiered_parts(
    tiered: &TieredCredits,
    inputs: &CreditInputs,
    fee_micro: &FeeFn<'_>,
    exact: &dyn Fn(i128) -> String,
) -> Result<(Vec<TierTableLine>, i128), CreditError> {
    let mut tables = Vec::new();
    let mut raw: i128 = 0;
    for table in &tiered.tables {
        let judged: Vec<(Option<ObjectiveName>, Option<i64>, bool)> = match &table.scope {
            TierScope::Objectives(names) => names
                .iter()
                .map(|name| {
                    inputs
                        .objectives
                        .iter()
                        .find(|o| o.objective == *name)
                        .map(|o| (Some(name.clone()), o.achieved_ppm, o.met))
                        .ok_or_else(|| CreditError::MissingOutcome(name.to_string()))
                })
                .collect::<Result<_, _>>()?,
            TierScope::Composite => {
                let c = inputs.composite.ok_or(CreditError::MissingComposite)?;
                vec![(None, c.achieved_ppm, c.met)]
            }
        };
        let mut lines = Vec::new();
        let mut best: u32 = 0;
        for (objective, achieved, met) in judged {
            let (tier, note) = match (achieved, met) {
                (_, true) => (None, Some("met: no credit")),
                (None, false) => (None, Some("no data: no tier applies")),
                (Some(a), false) => {
                    // The largest percent among the tiers it is below; the
                    // first such tier in the policy's order on a tie.
                    let tier = table
                        .tiers
                        .iter()
                        .filter(|t| a < i64::from(t.below_ppm))
                        .fold(None, |best: Option<&super::Tier>, t| match best {
                            Some(b) if b.percent_ppm >= t.percent_ppm => Some(b),
                            _ => Some(t),
                        });
                    (
                        tier,
                        tier.is_none().then_some("above every tier: no credit"),
                    )
                }
            };
            let percent = tier.map_or(0, |t| t.percent_ppm);
            best = best.max(percent);
            lines.push(TierLine {
                objective,
                achieved: achieved.map(percent_text),
                met,
                tier_below: tier.map(|t| percent_text(i64::from(t.below_ppm))),
                percent: percent_text(i64::from(percent)),
                note: note.map(str::to_owned),
            });
        }
        let amount = if best == 0 {
            0
        } else {
            let fee = fee_micro("a tiered credit")?;
            // (fee × share) × ppm / 10⁶ in 10⁻¹² minor units.
            fee.checked_mul(i128::from(best))
                .ok_or(CreditError::TooLarge("a tier table's amount"))?
        };
        raw = raw
            .checked_add(amount)
            .ok_or(CreditError::TooLarge("sum of tier tables"))?;
        tables.push(TierTableLine {
            scope: match table.scope {
                TierScope::Objectives(_) => "objectives",
                TierScope::Composite => "composite",
            }
            .to_owned(),
            lines,
            percent: percent_text(i64::from(best)),
            amount: exact(amount),
        });
    }
    Ok((tables, raw))
}

/// Each incident's line, and their sum in 10⁻¹² minor units.
fn impact_parts(
    impact: &ImpactCredits,
    currency: &Currency,
    inputs: &CreditInputs,
    exact: &dyn Fn(i128) -> String,
) -> Result<(Vec<ImpactLine>, i128), CreditError> {
    let base_rate = i128::from(impact.base_rate_micro_minor);
    // The rate is in 10⁻⁶ minor units: major units need 6 + exponent places.
    let rate_places = 6 + u32::from(currency.exponent());
    let mut lines = Vec::new();
    let mut raw: i128 = 0;
    for (index, incident) in inputs.incidents.iter().enumerate() {
        let millis = (incident.end - incident.start).num_milliseconds();
        if millis <= 0 {
            return Err(CreditError::IncidentSpan {
                index,
                start: incident.start,
                end: incident.end,
            });
        }
        let requests = i128::from(incident.requests);
        let level = impact.levels.get(&incident.objective).copied();
        // Owed only in a period that missed the objective, unless the
        // contract says always: the incident is still listed, at zero.
        let met = match impact.owed {
            ImpactOwed::Always => false,
            ImpactOwed::WhenMissed => {
                inputs
                    .objectives
                    .iter()
                    .find(|o| o.objective == incident.objective)
                    .ok_or_else(|| CreditError::MissingOutcome(incident.objective.to_string()))?
                    .met
            }
        };
        let coefficient = match level {
            Some(l) if !met => i128::from(impact.coefficients.micros(l)),
            _ => 0,
        };
        // duration × (requests / duration) × coefficient × rate: the
        // durations cancel, leaving an exact integer of 10⁻¹² minor units
        // (coefficient in 10⁻⁶, rate in 10⁻⁶ minor units).
        let amount = requests
            .checked_mul(coefficient)
            .and_then(|v| v.checked_mul(base_rate))
            .ok_or(CreditError::TooLarge("requests × coefficient × base rate"))?;
        raw = raw
            .checked_add(amount)
            .ok_or(CreditError::TooLarge("sum of incidents"))?;
        lines.push(ImpactLine {
            objective: incident.objective.clone(),
            start: incident.start,
            end: incident.end,
            duration_seconds: ratio_text(i128::from(millis), 1000),
            requests: incident.requests,
            qps: ratio_text(requests * 1000, i128::from(millis)),
            level,
            coefficient: decimal_text(coefficient, 6),
            base_rate: decimal_text(base_rate, rate_places),
            amount: exact(amount),
            note: if level.is_none() {
                Some("the objective has no service level in the policy: not credited".into())
            } else if met {
                Some("the period met the objective: incidents are owed only in a period that missed it (owedWhen: missed)".into())
            } else {
                None
            },
        });
    }
    Ok((lines, raw))
}
