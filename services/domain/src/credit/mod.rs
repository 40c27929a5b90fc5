//! Service credits: the policy an SLA states for turning a missed promise into money, and the exact arithmetic that computes it.
//!
//! A [`CreditPolicy`] is part of the SLA document (`spec.credits` natively,
//! the annotation `slaproof.dev/credits` in OpenSLO). It has one kind:
//!
//! - **Tiered** ([`TieredCredits`]): a share of the period's fee chosen by
//!   the achieved compliance of a closed period, as public clouds publish
//!   them (10% below 99.95%, 25% below 99%, 100% below 95%). A tier applies
//!   when the achieved compliance is *strictly* below its `below`; only an
//!   objective that was **not met** earns a credit (a credit pays for a
//!   missed promise, whatever the tiers say about a met one).
//! - **Impact** ([`ImpactCredits`]): per incident, duration × the customer's
//!   QPS during it × the service level's coefficient × a base rate per
//!   second per QPS. Duration × QPS is the incident's request count, so the
//!   amount is computed as requests × coefficient × base rate, exactly; the
//!   duration and QPS are still shown. What an incident is the contract
//!   says ([`IncidentTerms`]: the minute threshold, the requests a minute
//!   needs to be judged, the shortest incident), and by default incidents
//!   are owed only in a period whose objective was missed ([`ImpactOwed`]),
//!   as public clouds credit.
//!
//! **Several objectives.** A tiered policy is a list of tier tables, each
//! with a scope: some objectives, or the SLA's composite.
//!
//! - Within one table, the *largest* percent reached by any objective of
//!   its scope counts, once: this is how public clouds credit a service
//!   (one monthly uptime, one tier), and a table listing several
//!   objectives treats them as one service.
//! - Across tables, credits are *summed*: a policy that lists objectives in
//!   separate tables promises a credit per objective (as clouds do for
//!   separately priced features).
//! - Caps then bound the sum (see below), so summing cannot pay more than
//!   the contract's ceiling.
//!
//! **Order of the steps**, the same for every kind:
//!
//! ```text
//! raw      = Σ parts                                   exact, in 10⁻¹² minor units
//! limit    = min(cap, ⌊fee × capPercentOfFee⌋)         whole minor units; absent caps are left out
//! capped   = min(raw, limit)
//! rounded  = round(capped, rounding)                   to the minor unit; never above limit, as limit is whole
//! total    = rounded, or 0 when rounded < minimum      nothing is issued below the minimum
//! ```
//!
//! No float is used anywhere: money is an integer of minor units, shares are
//! parts per million, coefficients millionths, and intermediate amounts
//! integers of 10⁻¹² minor units (every product of the inputs is exact at
//! that scale). Each step is kept in [`CreditComputation`] so that a ledger
//! row, a webhook and a statement can show the formula and every input.

mod compute;
mod fee;
pub mod ledger;
mod money;

pub use compute::{
    CapStep, CompositeOutcome, CreditComputation, CreditError, CreditInputs, CreditRecord,
    FeeCorrectionNote, ImpactLine, Incident, MinimumStep, ObjectiveOutcome, PricedOn, TierLine,
    TierTableLine, compute,
};
pub use fee::FeeStart;
pub use money::{Currency, Money, MoneyError};

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::objective::ObjectiveName;

/// Ten to the twelfth: intermediate amounts are in 10⁻¹² minor units.
pub(crate) const PICO: i128 = 1_000_000_000_000;
/// Parts per million in a whole (shares, coefficients).
pub(crate) const MICRO: i128 = 1_000_000;

/// An SLA's credit policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditPolicy {
    /// The currency of every amount of the policy (and of the fee).
    pub currency: Currency,
    pub kind: CreditKind,
    /// The most a period's credit may be, in minor units of `currency`.
    pub cap_minor: Option<i64>,
    /// The most a period's credit may be as a share of the period's fee, in ppm (50% = 500000).
    pub cap_fee_ppm: Option<u32>,
    /// The share of the customer's fee this SLA credits on, in ppm
    /// ([`Self::WHOLE_FEE`] unless the document says): a customer with
    /// several credited SLAs splits its fee among them, so that together
    /// they never credit on more than the whole of it. Tiers and
    /// `capPercentOfFee` are shares of this part.
    pub fee_share_ppm: u32,
    /// A credit below this (after rounding), in minor units, is not issued.
    pub minimum_minor: Option<i64>,
    pub rounding: Rounding,
}

impl CreditPolicy {
    /// The whole fee (100%), the share an SLA credits on unless its
    /// document gives `feeShare`.
    pub const WHOLE_FEE: u32 = 1_000_000;

    /// A share in ppm as the percent a document writes (`50`, `33.3333`).
    pub fn percent_text(ppm: u64) -> String {
        crate::decimal::format_scaled(u128::from(ppm), 4)
    }
}

/// What the credit is computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreditKind {
    Tiered(TieredCredits),
    Impact(ImpactCredits),
}

impl CreditKind {
    /// `"tiered"` or `"impact"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Tiered(_) => "tiered",
            Self::Impact(_) => "impact",
        }
    }
}

/// Tier tables, summed (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TieredCredits {
    pub tables: Vec<TierTable>,
}

/// One tier table and what it applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierTable {
    pub scope: TierScope,
    /// At least one; in any order (the largest applicable percent wins).
    pub tiers: Vec<Tier>,
}

/// What a tier table judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TierScope {
    /// These objectives, as one service: the largest tier any reaches counts.
    Objectives(Vec<ObjectiveName>),
    /// The SLA's weighted composite.
    Composite,
}

/// Achieved compliance strictly below `below_ppm` earns `percent_ppm` of the fee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    /// Compliance in ppm (99.95% = 999500); above 0, at most 100%.
    pub below_ppm: u32,
    /// Share of the period's fee in ppm (10% = 100000); above 0, at most 100%.
    pub percent_ppm: u32,
}

/// The impact formula's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImpactCredits {
    /// Money per second per QPS, in 10⁻⁶ minor units of the policy's
    /// currency (0.80 EUR = 80 cents = 80000000).
    pub base_rate_micro_minor: i64,
    pub coefficients: Coefficients,
    /// The service level of each objective that earns impact credits; an
    /// incident of an objective not listed earns nothing (and says so).
    pub levels: BTreeMap<ObjectiveName, ServiceLevel>,
    /// What an incident of an objective is; an objective not listed has
    /// [`IncidentTerms::default`].
    pub incidents: BTreeMap<ObjectiveName, IncidentTerms>,
    /// In which periods incidents are owed.
    pub owed: ImpactOwed,
}

/// In which periods an impact policy owes its incidents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImpactOwed {
    /// Only in a period that missed the incident's objective: a bad
    /// minute inside a met month was within the promise (the default, as
    /// public clouds credit only a missed monthly commitment).
    #[default]
    WhenMissed,
    /// In every period: each incident is owed whatever the month came to.
    Always,
}

impl ImpactOwed {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::WhenMissed => "missed",
            Self::Always => "always",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::WhenMissed, Self::Always]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// What one objective's incident is, as the contract defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncidentTerms {
    /// A minute is bad when its share of good events is strictly below
    /// this, in ppm; `None`: the objective's own floor
    /// ([`crate::objective::Objective::incident_floor_ppm`]).
    pub minute_below_ppm: Option<u32>,
    /// A minute with fewer requests than this is not judged: it neither
    /// counts nor breaks an incident (one failed request of two is not an
    /// outage).
    pub min_requests: u32,
    /// A run of bad minutes shorter than this is no incident.
    pub min_minutes: u32,
}

impl Default for IncidentTerms {
    fn default() -> Self {
        Self {
            minute_below_ppm: None,
            min_requests: 1,
            min_minutes: 1,
        }
    }
}

/// The reference base rate, 0.8 major units per second per QPS, in 10⁻⁶ major units.
pub const DEFAULT_BASE_RATE_MICRO_MAJOR: i64 = 800_000;

impl ImpactCredits {
    /// The incident terms of `objective`.
    pub fn terms(&self, objective: &ObjectiveName) -> IncidentTerms {
        self.incidents.get(objective).copied().unwrap_or_default()
    }

    /// The reference base rate (0.8) in 10⁻⁶ minor units of `currency`.
    pub fn default_base_rate(currency: &Currency) -> i64 {
        DEFAULT_BASE_RATE_MICRO_MAJOR * 10i64.pow(u32::from(currency.exponent()))
    }
}

/// A service level: how much an objective's outage weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ServiceLevel {
    /// Non-core queries.
    L1,
    L2,
    /// The main transaction path.
    L3,
    L4,
}

impl ServiceLevel {
    pub const ALL: [Self; 4] = [Self::L1, Self::L2, Self::L3, Self::L4];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::L1 => "L1",
            Self::L2 => "L2",
            Self::L3 => "L3",
            Self::L4 => "L4",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == text)
    }

    const fn index(self) -> usize {
        match self {
            Self::L1 => 0,
            Self::L2 => 1,
            Self::L3 => 2,
            Self::L4 => 3,
        }
    }
}

impl fmt::Display for ServiceLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Each level's coefficient in millionths (2.5 = 2500000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coefficients(pub [u64; 4]);

impl Default for Coefficients {
    /// The reference formula's: L1 1.0, L2 2.5, L3 6.0, L4 15.0.
    fn default() -> Self {
        Self([1_000_000, 2_500_000, 6_000_000, 15_000_000])
    }
}

impl Coefficients {
    /// The coefficient of `level` in millionths.
    pub const fn micros(self, level: ServiceLevel) -> u64 {
        self.0[level.index()]
    }

    pub fn set(&mut self, level: ServiceLevel, micros: u64) {
        self.0[level.index()] = micros;
    }
}

/// How the exact amount becomes whole minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rounding {
    /// To the nearest; a half to the even neighbour (banker's rounding):
    /// no bias over many credits.
    #[default]
    HalfEven,
    /// To the nearest; a half up.
    HalfUp,
    /// Toward zero.
    Down,
    /// Away from zero.
    Up,
}

impl Rounding {
    pub const ALL: [Self; 4] = [Self::HalfEven, Self::HalfUp, Self::Down, Self::Up];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::HalfEven => "half-even",
            Self::HalfUp => "half-up",
            Self::Down => "down",
            Self::Up => "up",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    /// `value / unit` as a whole number, rounded by this rule; `value ≥ 0`, `unit > 0`.
    pub(crate) fn apply(self, value: i128, unit: i128) -> i128 {
        let (q, r) = (value / unit, value % unit);
        let up = match self {
            Self::Down => false,
            Self::Up => r > 0,
            Self::HalfUp => 2 * r >= unit,
            Self::HalfEven => 2 * r > unit || (2 * r == unit && q % 2 == 1),
        };
        q + i128::from(up)
    }
}

impl fmt::Display for Rounding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Writes a non-negative `value / 10^places` as the shortest exact decimal.
pub(crate) fn decimal_text(value: i128, places: u32) -> String {
    let sign = if value < 0 { "-" } else { "" };
    format!(
        "{sign}{}",
        crate::decimal::format_scaled(value.unsigned_abs(), places)
    )
}

/// `num / den` exactly: a decimal when it terminates, else the reduced fraction `a/b`.
pub(crate) fn ratio_text(num: i128, den: i128) -> String {
    use num_integer::Integer;
    if den == 0 {
        return "undefined".to_owned();
    }
    let g = num.gcd(&den).max(1);
    let (num, den) = (num / g, den / g);
    // A reduced fraction terminates when its denominator is 2^a·5^b.
    let (mut rest, mut twos, mut fives) = (den, 0u32, 0u32);
    while rest % 2 == 0 {
        rest /= 2;
        twos += 1;
    }
    while rest % 5 == 0 {
        rest /= 5;
        fives += 1;
    }
    if rest != 1 {
        return format!("{num}/{den}");
    }
    let places = twos.max(fives);
    // num/den = num · (10^places / den) / 10^places.
    match 10i128
        .checked_pow(places)
        .and_then(|p| num.checked_mul(p / den))
    {
        Some(scaled) => decimal_text(scaled, places),
        None => format!("{num}/{den}"),
    }
}

#[cfg(test)]
mod tests;
