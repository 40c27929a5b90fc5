//! Reading and writing an SLA's credit policy (`spec.credits` natively, the `slaproof.dev/credits` annotation in OpenSLO).
//!
//! ```yaml
//! credits:
//!   currency: EUR              # ISO 4217; `minorUnits: 2` for a code slaproof does not know
//!   rounding: half-even        # half-even (default), half-up, down or up, to the minor unit
//!   cap: "500.00"              # at most this per period
//!   capPercentOfFee: 50        # at most this share of the period's fee
//!   feeShare: 100              # this SLA's share of the customer's fee (default 100): the fee it credits on
//!   minimum: "1.00"            # below this, nothing is issued
//!   tiered:                    # or `impact:`, not both
//!     - objective: availability           # or `objectives: [a, b]` (one service), or `scope: composite`
//!       tiers:
//!         - {below: 99.95, percent: 10}
//!         - {below: 99, percent: 25}
//!         - {below: 95, percent: 100}
//! ```
//!
//! or, for the impact formula:
//!
//! ```yaml
//! credits:
//!   currency: EUR
//!   impact:
//!     baseRate: 0.8                       # per second per QPS, in major units (default 0.8)
//!     coefficients: {L1: 1, L2: 2.5, L3: 6, L4: 15}   # defaults; give only those that differ
//!     levels: {checkout: L3, search: L1}  # objectives not listed earn no impact credit
//!     incidents:                          # what an incident is, per objective (defaults below)
//!       checkout: {minuteBelow: 95, minRequests: 20, minMinutes: 5}
//!     owedWhen: missed                    # missed (default): only in a period that missed the objective; or always
//! ```
//!
//! A provider's document is also held to what a contract can mean (see
//! [`contract_problems`]): an impact policy needs a cap, a policy on a
//! rolling window (which never closes) is refused, tiers judge objectives
//! by name (a composite has no compliance to compare), and no tier sits
//! above its objective's target. Versions already stored are read as they
//! were written.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::error::Problems;
use super::tree::{Node, Obj};
use crate::credit::{
    Coefficients, CreditKind, CreditPolicy, Currency, ImpactCredits, ImpactOwed, IncidentTerms,
    Rounding, ServiceLevel, Tier, TierScope, TierTable, TieredCredits,
};
use crate::decimal::{Decimal, format_scaled};
use crate::objective::{Objective, ObjectiveName};
use crate::quantity::{ShareNotation, SliceTarget};
use crate::window::TimeWindow;

/// More tier tables than this is a generated document gone wrong.
const MAX_TABLES: usize = crate::sla::MAX_OBJECTIVES;
/// Public clouds publish three or four tiers.
const MAX_TIERS: usize = 20;
/// The largest coefficient, in millionths (1000.0): a typo guard.
const MAX_COEFFICIENT_MICROS: u128 = 1_000 * 1_000_000;
/// The largest base rate, in major units per second per QPS.
const MAX_BASE_RATE_MAJOR: u128 = 1_000_000;
/// The most requests a minute may need to be judged.
const MAX_MIN_REQUESTS: u32 = 1_000_000;
/// The longest shortest incident: a day.
const MAX_MIN_MINUTES: u32 = 1_440;

/// What a policy must mean as a contract, checked on a provider's
/// document (never on a stored version, which keeps the meaning it was
/// agreed with).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Contract<'a> {
    pub window: Option<&'a TimeWindow>,
}

/// Reads a credit policy. With `objectives`, also checks that every
/// objective it names is one of them, and that `scope: composite` has a
/// composite to judge.
pub(crate) fn read(
    node: &Node<'_>,
    objectives: Option<&[Objective]>,
    contract: Option<Contract<'_>>,
    p: &mut Problems,
) -> Option<CreditPolicy> {
    let o = node.object(
        &[
            "currency",
            "minorUnits",
            "rounding",
            "cap",
            "capPercentOfFee",
            "feeShare",
            "minimum",
            "tiered",
            "impact",
        ],
        false,
        p,
    )?;
    let before = p.0.len();
    let minor_units = o.get("minorUnits").and_then(|n| {
        let v = n.number(p)?.parse::<u8>().ok();
        if v.is_none() {
            p.push(&n.path, "must be a whole number from 0 to 4");
        }
        v
    });
    let currency = o.required("currency", p).and_then(|n| {
        let code = n.str(p)?;
        p.check(&n.path, Currency::new(code, minor_units))
    });
    let rounding = match o.get("rounding") {
        None => Some(Rounding::default()),
        Some(n) => n.str(p).and_then(|t| {
            let r = Rounding::parse(t);
            if r.is_none() {
                p.push(
                    &n.path,
                    format!("must be half-even, half-up, down or up, got {t:?}"),
                );
            }
            r
        }),
    };
    let amount = |key: &str, p: &mut Problems| -> Option<Option<i64>> {
        let Some(n) = o.get(key) else {
            return Some(None);
        };
        let text = n.number_text(p)?;
        let currency = currency.as_ref()?;
        p.check(&n.path, currency.parse_amount(&text)).map(Some)
    };
    let cap = amount("cap", p);
    let minimum = amount("minimum", p);
    let cap_fee = match o.get("capPercentOfFee") {
        None => Some(None),
        Some(n) => percent(&n, p).map(Some),
    };
    let fee_share = match o.get("feeShare") {
        None => Some(CreditPolicy::WHOLE_FEE),
        Some(n) => percent(&n, p),
    };
    let kind = match (o.get("tiered"), o.get("impact")) {
        (Some(t), None) => read_tiered(&t, objectives, p).map(CreditKind::Tiered),
        (None, Some(i)) => {
            read_impact(&i, currency.as_ref(), objectives, p).map(CreditKind::Impact)
        }
        (Some(_), Some(_)) => {
            p.push(&o.path, "must give either `tiered` or `impact`, not both");
            None
        }
        (None, None) => {
            p.push(
                &o.path,
                "must give `tiered` (shares of the fee by achieved compliance) or `impact` (duration × QPS × coefficient × base rate)",
            );
            None
        }
    };
    if let (Some(Some(cap)), Some(Some(min))) = (cap, minimum)
        && min > cap
    {
        p.push(
            &o.path_of("minimum"),
            "must not be above `cap`: no credit could ever be issued",
        );
    }
    let policy = CreditPolicy {
        currency: currency?,
        kind: kind?,
        cap_minor: cap?,
        cap_fee_ppm: cap_fee?,
        fee_share_ppm: fee_share?,
        minimum_minor: minimum?,
        rounding: rounding?,
    };
    if let Some(contract) = contract {
        for (path, rule) in contract_problems(&policy, objectives, contract.window) {
            p.push(&format!("{}{path}", o.path), rule);
        }
    }
    (p.0.len() == before).then_some(policy)
}

/// Where a policy read without fault still cannot be a contract: each
/// problem's path below the policy (`.impact`, `.tiered[0].tiers[1].below`)
/// and the rule, in words that say what would happen otherwise.
pub(crate) fn contract_problems(
    policy: &CreditPolicy,
    objectives: Option<&[Objective]>,
    window: Option<&TimeWindow>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(TimeWindow::Rolling { duration }) = window {
        out.push((
            String::new(),
            format!(
                "needs a calendar window: credits are computed when a period closes, and a rolling window ({duration}) never closes, so this policy could never pay"
            ),
        ));
    }
    match &policy.kind {
        CreditKind::Impact(_) => {
            if policy.cap_minor.is_none() && policy.cap_fee_ppm.is_none() {
                out.push((
                    ".impact".to_owned(),
                    "needs a ceiling: give `cap` or `capPercentOfFee` beside it, as incidents have none of their own".to_owned(),
                ));
            }
        }
        CreditKind::Tiered(tiered) => {
            for (t, table) in tiered.tables.iter().enumerate() {
                let names = match &table.scope {
                    TierScope::Composite => {
                        out.push((
                            format!(".tiered[{t}].scope"),
                            "must name objectives: a composite's figure is 1 − the weighted share of error budget spent, below 0% for any breach, so the largest tier would always pay".to_owned(),
                        ));
                        continue;
                    }
                    TierScope::Objectives(names) => names,
                };
                let Some(objectives) = objectives else {
                    continue;
                };
                for (i, tier) in table.tiers.iter().enumerate() {
                    for name in names {
                        let Some(o) = objectives.iter().find(|o| o.name == *name) else {
                            continue;
                        };
                        if tier.below_ppm > o.target.ppm() {
                            out.push((
                                format!(".tiered[{t}].tiers[{i}].below"),
                                format!(
                                    "must be at most the target of {name} ({}%): an objective at or above its target is met and earns no credit, so this tier would never pay between {}% and {}%",
                                    format_scaled(u128::from(o.target.ppm()), 4),
                                    format_scaled(u128::from(o.target.ppm()), 4),
                                    format_scaled(u128::from(tier.below_ppm), 4),
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// A share in percent (`10`, `"99.95"`, `"10%"`): above 0, at most 100, to 1 ppm.
fn percent(n: &Node<'_>, p: &mut Problems) -> Option<u32> {
    let text = n.number_text(p)?;
    let bare = text.trim().strip_suffix('%').unwrap_or(text.trim());
    p.check(&n.path, SliceTarget::parse_in(bare, ShareNotation::Percent))
        .map(SliceTarget::ppm)
}

fn read_tiered(
    node: &Node<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<TieredCredits> {
    let items = node.list(p)?;
    if items.is_empty() || items.len() > MAX_TABLES {
        p.push(
            &node.path,
            format!(
                "must hold 1 to {MAX_TABLES} tier tables, got {}",
                items.len()
            ),
        );
        return None;
    }
    let tables: Vec<Option<TierTable>> = items
        .iter()
        .map(|item| read_table(item, objectives, p))
        .collect();
    tables
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .map(|tables| TieredCredits { tables })
}

fn read_table(
    node: &Node<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<TierTable> {
    let t = node.object(&["objective", "objectives", "scope", "tiers"], false, p)?;
    let given: Vec<&str> = ["objective", "objectives", "scope"]
        .into_iter()
        .filter(|k| t.has(k))
        .collect();
    let scope = match given.as_slice() {
        ["objective"] => t
            .get("objective")
            .and_then(|n| objective_name(&n, objectives, p))
            .map(|name| TierScope::Objectives(vec![name])),
        ["objectives"] => read_objective_list(&t, objectives, p).map(TierScope::Objectives),
        ["scope"] => {
            let n = t.get("scope")?;
            match n.str(p)? {
                "composite" => {
                    if let Some(objectives) = objectives
                        && !objectives.iter().any(|o| o.weight.is_some())
                    {
                        p.push(
                            &n.path,
                            "needs a composite: give at least one objective a `weight`",
                        );
                    }
                    Some(TierScope::Composite)
                }
                other => {
                    p.push(
                        &n.path,
                        format!("must be composite (or name objectives with `objective` or `objectives`), got {other:?}"),
                    );
                    None
                }
            }
        }
        [] => {
            p.push(
                &t.path,
                "must say what the tiers judge: `objective: <name>`, `objectives: [<names>]` or `scope: composite`",
            );
            None
        }
        many => {
            p.push(
                &t.path,
                format!("must give only one of {}", many.join(", ")),
            );
            None
        }
    };
    let tiers = t.required("tiers", p).and_then(|n| {
        let items = n.list(p)?;
        if items.is_empty() || items.len() > MAX_TIERS {
            p.push(
                &n.path,
                format!("must hold 1 to {MAX_TIERS} tiers, got {}", items.len()),
            );
            return None;
        }
        let tiers: Vec<Option<Tier>> = items.iter().map(|i| read_tier(i, p)).collect();
        tiers.into_iter().collect::<Option<Vec<_>>>()
    });
    Some(TierTable {
        scope: scope?,
        tiers: tiers?,
    })
}

fn read_objective_list(
    t: &Obj<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<Vec<ObjectiveName>> {
    let n = t.get("objectives")?;
    let items = n.list(p)?;
    if items.is_empty() {
        p.push(&n.path, "must name at least one objective");
        return None;
    }
    let mut names: Vec<ObjectiveName> = Vec::new();
    let mut ok = true;
    for item in &items {
        match objective_name(item, objectives, p) {
            Some(name) if names.contains(&name) => {
                p.push(&item.path, format!("must not repeat objective {name:?}"));
                ok = false;
            }
            Some(name) => names.push(name),
            None => ok = false,
        }
    }
    ok.then_some(names)
}

/// An objective's name, which must be one of `objectives` when given.
fn objective_name(
    n: &Node<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<ObjectiveName> {
    let text = n.str(p)?;
    let name = p.check(&n.path, ObjectiveName::parse(text))?;
    if let Some(objectives) = objectives
        && !objectives.iter().any(|o| o.name == name)
    {
        let known: Vec<&str> = objectives.iter().map(|o| o.name.as_str()).collect();
        p.push(
            &n.path,
            format!(
                "must name an objective of this SLA ({}), got {text:?}",
                known.join(", ")
            ),
        );
        return None;
    }
    Some(name)
}

fn read_tier(node: &Node<'_>, p: &mut Problems) -> Option<Tier> {
    let t = node.object(&["below", "percent"], false, p)?;
    let below = t.required("below", p).and_then(|n| percent(&n, p));
    let share = t.required("percent", p).and_then(|n| percent(&n, p));
    Some(Tier {
        below_ppm: below?,
        percent_ppm: share?,
    })
}

/// Without a valid `currency` (already reported), the base rate is not checked.
fn read_impact(
    node: &Node<'_>,
    currency: Option<&Currency>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<ImpactCredits> {
    let i = node.object(
        &[
            "baseRate",
            "coefficients",
            "levels",
            "incidents",
            "owedWhen",
        ],
        false,
        p,
    )?;
    let base_rate = currency.and_then(|c| match i.get("baseRate") {
        None => Some(ImpactCredits::default_base_rate(c)),
        Some(n) => base_rate(&n, c, p),
    });
    let mut coefficients = Coefficients::default();
    let mut coefficients_ok = true;
    if let Some(c) = i
        .get("coefficients")
        .and_then(|c| c.object(&["L1", "L2", "L3", "L4"], false, p))
    {
        for level in ServiceLevel::ALL {
            if let Some(n) = c.get(level.as_str()) {
                match coefficient(&n, p) {
                    Some(v) => coefficients.set(level, v),
                    None => coefficients_ok = false,
                }
            }
        }
    }
    let levels = i.required("levels", p).and_then(|n| {
        let map = n.object(&[], true, p)?;
        if map.map().is_empty() {
            p.push(&n.path, "must give at least one objective's service level");
            return None;
        }
        by_objective(&map, objectives, p, |item, p| {
            item.str(p).and_then(|t| {
                let l = ServiceLevel::parse(t);
                if l.is_none() {
                    p.push(&item.path, format!("must be L1, L2, L3 or L4, got {t:?}"));
                }
                l
            })
        })
    });
    let incidents = match i.get("incidents") {
        None => Some(BTreeMap::new()),
        Some(n) => read_incidents(&n, objectives, p),
    };
    let owed = match i.get("owedWhen") {
        None => Some(ImpactOwed::default()),
        Some(n) => n.str(p).and_then(|t| {
            let o = ImpactOwed::parse(t);
            if o.is_none() {
                p.push(
                    &n.path,
                    format!("must be missed (only in a period that missed the objective) or always, got {t:?}"),
                );
            }
            o
        }),
    };
    Some(ImpactCredits {
        base_rate_micro_minor: base_rate?,
        coefficients: coefficients_ok.then_some(coefficients)?,
        levels: levels?,
        incidents: incidents?,
        owed: owed?,
    })
}

/// A map keyed by objective name (each a name of the SLA's objectives when
/// they are known), each value read by `read`; every bad key and value
/// named.
fn by_objective<T>(
    map: &Obj<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
    mut read: impl FnMut(&Node<'_>, &mut Problems) -> Option<T>,
) -> Option<BTreeMap<ObjectiveName, T>> {
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (key, value) in map.map() {
        let item = Node {
            value,
            path: map.path_of(key),
        };
        let name = objective_name(
            &Node {
                value: &Value::String(key.clone()),
                path: item.path.clone(),
            },
            objectives,
            p,
        );
        match (name, read(&item, p)) {
            (Some(name), Some(v)) => {
                out.insert(name, v);
            }
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

/// `{objective: {minuteBelow, minRequests, minMinutes}}`, each key optional.
fn read_incidents(
    node: &Node<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<BTreeMap<ObjectiveName, IncidentTerms>> {
    let map = node.object(&[], true, p)?;
    by_objective(&map, objectives, p, |item, p| {
        let t = item.object(&["minuteBelow", "minRequests", "minMinutes"], false, p)?;
        let defaults = IncidentTerms::default();
        let minute_below = match t.get("minuteBelow") {
            None => Some(None),
            Some(n) => percent(&n, p).map(Some),
        };
        let whole = |key: &str, default: u32, max: u32, what: &str, p: &mut Problems| {
            let Some(n) = t.get(key) else {
                return Some(default);
            };
            let text = n.number_text(p)?;
            let v = text.parse::<u32>().ok().filter(|v| (1..=max).contains(v));
            if v.is_none() {
                p.push(
                    &n.path,
                    format!("must be a whole number of {what} from 1 to {max}, got {text}"),
                );
            }
            v
        };
        let min_requests = whole(
            "minRequests",
            defaults.min_requests,
            MAX_MIN_REQUESTS,
            "requests",
            p,
        );
        let min_minutes = whole(
            "minMinutes",
            defaults.min_minutes,
            MAX_MIN_MINUTES,
            "minutes",
            p,
        );
        Some(IncidentTerms {
            minute_below_ppm: minute_below?,
            min_requests: min_requests?,
            min_minutes: min_minutes?,
        })
    })
}

/// A coefficient above 0, at most 1000, to 10⁻⁶, in millionths.
fn coefficient(n: &Node<'_>, p: &mut Problems) -> Option<u64> {
    let text = n.number_text(p)?;
    let v = Decimal::parse(&text)
        .filter(|d| !d.negative && !d.is_zero())
        .and_then(|d| d.scaled(6).ok())
        .filter(|v| *v <= MAX_COEFFICIENT_MICROS)
        .and_then(|v| u64::try_from(v).ok());
    if v.is_none() {
        p.push(
            &n.path,
            format!("must be a number above 0 and at most 1000 with at most six decimals, such as 2.5, got {text}"),
        );
    }
    v
}

/// Money per second per QPS in major units, to 10⁻⁶ of the minor unit, in 10⁻⁶ minor units.
fn base_rate(n: &Node<'_>, currency: &Currency, p: &mut Problems) -> Option<i64> {
    let text = n.number_text(p)?;
    let places = 6 + u32::from(currency.exponent());
    let max = MAX_BASE_RATE_MAJOR * 10u128.pow(places);
    let v = Decimal::parse(&text)
        .filter(|d| !d.negative && !d.is_zero())
        .and_then(|d| d.scaled(places).ok())
        .filter(|v| *v <= max)
        .and_then(|v| i64::try_from(v).ok());
    if v.is_none() {
        p.push(
            &n.path,
            format!(
                "must be an amount of {currency} per second per QPS above 0 and at most {MAX_BASE_RATE_MAJOR}, with at most {places} decimals, such as 0.8, got {text}"
            ),
        );
    }
    v
}

// ---- writing ----

/// The policy as written: defaults left out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreditsDoc {
    currency: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    minor_units: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rounding: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cap: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cap_percent_of_fee: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fee_share: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    minimum: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tiered: Option<Vec<TableDoc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    impact: Option<ImpactDoc>,
}

#[derive(Serialize)]
struct TableDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    objective: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    objectives: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'static str>,
    tiers: Vec<TierDoc>,
}

#[derive(Serialize)]
struct TierDoc {
    below: String,
    percent: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImpactDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    base_rate: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    coefficients: BTreeMap<&'static str, Value>,
    levels: BTreeMap<String, &'static str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    incidents: BTreeMap<String, IncidentDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owed_when: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IncidentDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    minute_below: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_requests: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_minutes: Option<u32>,
}

fn percent_text(ppm: u32) -> String {
    format_scaled(u128::from(ppm), 4)
}

pub(crate) fn write(policy: &CreditPolicy) -> CreditsDoc {
    let currency = &policy.currency;
    let (tiered, impact) = match &policy.kind {
        CreditKind::Tiered(t) => (
            Some(
                t.tables
                    .iter()
                    .map(|table| {
                        let (objective, objectives, scope) = match &table.scope {
                            TierScope::Objectives(names) => match names.as_slice() {
                                [one] => (Some(one.to_string()), None, None),
                                many => (
                                    None,
                                    Some(many.iter().map(ToString::to_string).collect()),
                                    None,
                                ),
                            },
                            TierScope::Composite => (None, None, Some("composite")),
                        };
                        TableDoc {
                            objective,
                            objectives,
                            scope,
                            tiers: table
                                .tiers
                                .iter()
                                .map(|t| TierDoc {
                                    below: percent_text(t.below_ppm),
                                    percent: percent_text(t.percent_ppm),
                                })
                                .collect(),
                        }
                    })
                    .collect(),
            ),
            None,
        ),
        CreditKind::Impact(i) => {
            let defaults = Coefficients::default();
            let coefficients = ServiceLevel::ALL
                .into_iter()
                .filter(|l| i.coefficients.micros(*l) != defaults.micros(*l))
                .map(|l| {
                    let text = format_scaled(u128::from(i.coefficients.micros(l)), 6);
                    (l.as_str(), super::numbers::number(&text))
                })
                .collect();
            let places = 6 + u32::from(currency.exponent());
            (
                None,
                Some(ImpactDoc {
                    base_rate: (i.base_rate_micro_minor
                        != ImpactCredits::default_base_rate(currency))
                    .then(|| format_scaled(i.base_rate_micro_minor.unsigned_abs().into(), places)),
                    coefficients,
                    levels: i
                        .levels
                        .iter()
                        .map(|(name, level)| (name.to_string(), level.as_str()))
                        .collect(),
                    incidents: i
                        .incidents
                        .iter()
                        .map(|(name, t)| {
                            let d = IncidentTerms::default();
                            (
                                name.to_string(),
                                IncidentDoc {
                                    minute_below: t.minute_below_ppm.map(percent_text),
                                    min_requests: (t.min_requests != d.min_requests)
                                        .then_some(t.min_requests),
                                    min_minutes: (t.min_minutes != d.min_minutes)
                                        .then_some(t.min_minutes),
                                },
                            )
                        })
                        .collect(),
                    owed_when: (i.owed != ImpactOwed::default()).then(|| i.owed.as_str()),
                }),
            )
        }
    };
    CreditsDoc {
        currency: currency.code().to_owned(),
        minor_units: currency.needs_minor_units().then(|| currency.exponent()),
        rounding: (policy.rounding != Rounding::default()).then(|| policy.rounding.as_str()),
        cap: policy.cap_minor.map(|m| currency.amount_text(m)),
        cap_percent_of_fee: policy.cap_fee_ppm.map(percent_text),
        fee_share: (policy.fee_share_ppm != CreditPolicy::WHOLE_FEE)
            .then(|| percent_text(policy.fee_share_ppm)),
        minimum: policy.minimum_minor.map(|m| currency.amount_text(m)),
        tiered,
        impact,
    }
}

#[cfg(test)]
mod tests;
