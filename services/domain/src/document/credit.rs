//! Reading and writing an SLA's credit policy (`spec.credits` natively, the `slaproof.dev/credits` annotation in OpenSLO).
//!
//! ```yaml
//! credits:
//!   currency: EUR              # ISO 4217; `minorUnits: 2` for a code slaproof does not know
//!   rounding: half-even        # half-even (default), half-up, down or up, to the minor unit
//!   cap: "500.00"              # at most this per period
//!   capPercentOfFee: 50        # at most this share of the period's fee
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
//! ```

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::error::Problems;
use super::tree::{Node, Obj};
use crate::credit::{
    Coefficients, CreditKind, CreditPolicy, Currency, ImpactCredits, Rounding, ServiceLevel, Tier,
    TierScope, TierTable, TieredCredits,
};
use crate::decimal::{Decimal, format_scaled};
use crate::objective::{Objective, ObjectiveName};
use crate::quantity::{ShareNotation, SliceTarget};

/// More tier tables than this is a generated document gone wrong.
const MAX_TABLES: usize = crate::sla::MAX_OBJECTIVES;
/// Public clouds publish three or four tiers.
const MAX_TIERS: usize = 20;
/// The largest coefficient, in millionths (1000.0): a typo guard.
const MAX_COEFFICIENT_MICROS: u128 = 1_000 * 1_000_000;
/// The largest base rate, in major units per second per QPS.
const MAX_BASE_RATE_MAJOR: u128 = 1_000_000;

/// Reads a credit policy. With `objectives`, also checks that every
/// objective it names is one of them, and that `scope: composite` has a
/// composite to judge.
pub(crate) fn read(
    node: &Node<'_>,
    objectives: Option<&[Objective]>,
    p: &mut Problems,
) -> Option<CreditPolicy> {
    let o = node.object(
        &[
            "currency",
            "minorUnits",
            "rounding",
            "cap",
            "capPercentOfFee",
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
        minimum_minor: minimum?,
        rounding: rounding?,
    };
    (p.0.len() == before).then_some(policy)
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
    let i = node.object(&["baseRate", "coefficients", "levels"], false, p)?;
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
        let mut levels = BTreeMap::new();
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
            let level = item.str(p).and_then(|t| {
                let l = ServiceLevel::parse(t);
                if l.is_none() {
                    p.push(&item.path, format!("must be L1, L2, L3 or L4, got {t:?}"));
                }
                l
            });
            match (name, level) {
                (Some(name), Some(level)) => {
                    levels.insert(name, level);
                }
                _ => ok = false,
            }
        }
        ok.then_some(levels)
    });
    Some(ImpactCredits {
        base_rate_micro_minor: base_rate?,
        coefficients: coefficients_ok.then_some(coefficients)?,
        levels: levels?,
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
                    (l.as_str(), super::native::number(&text))
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
        minimum: policy.minimum_minor.map(|m| currency.amount_text(m)),
        tiered,
        impact,
    }
}

#[cfg(test)]
mod tests {
    use crate::credit::{CreditKind, Rounding, ServiceLevel, TierScope};
    use crate::sla::SlaDefinition;

    const OBJECTIVES: &str = "    - {name: availability, target: 99.9%, ratio: {good: \"status < 500\"}}\n    - {name: latency, target: 99%, threshold: {field: latency_ms, op: lte, value: 800ms}}\n";

    fn doc(credits: &str) -> String {
        format!(
            "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {{name: acme}}\nspec:\n  service: chat\n  window: {{calendar: month, timeZone: Europe/Berlin}}\n  objectives:\n{OBJECTIVES}{credits}"
        )
    }

    fn round_trips(sla: &SlaDefinition) {
        let native = SlaDefinition::from_document(&sla.to_native_yaml()).unwrap();
        assert_eq!(&native, sla);
        let json: SlaDefinition = serde_json::from_value(sla.to_native_json()).unwrap();
        assert_eq!(&json, sla);
        let openslo_text = sla.to_openslo_yaml();
        assert!(
            openslo_text.contains("slaproof.dev/credits"),
            "{openslo_text}"
        );
        let openslo = SlaDefinition::from_document(&openslo_text).unwrap();
        assert_eq!(&openslo, sla);
    }

    #[test]
    fn a_document_without_credits_has_none_and_writes_none() {
        let sla = SlaDefinition::from_document(&doc("")).unwrap();
        assert_eq!(sla.credits, None);
        assert!(!sla.to_native_yaml().contains("credits"));
        assert!(!sla.to_openslo_yaml().contains("credits"));
    }

    #[test]
    fn a_tiered_policy_is_read_exactly_and_written_back() {
        let sla = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: EUR\n    rounding: half-up\n    cap: \"500.00\"\n    capPercentOfFee: 50\n    minimum: 1.5\n    tiered:\n      - objective: availability\n        tiers:\n          - {below: \"99.95\", percent: \"10\"}\n          - {below: 99, percent: 25}\n          - {below: 95%, percent: 100}\n      - objectives: [availability, latency]\n        tiers: [{below: 99.5, percent: 5}]\n",
        ))
        .unwrap();
        let credits = sla.credits.clone().unwrap();
        assert_eq!(credits.currency.code(), "EUR");
        assert_eq!(credits.rounding, Rounding::HalfUp);
        assert_eq!(
            (
                credits.cap_minor,
                credits.cap_fee_ppm,
                credits.minimum_minor
            ),
            (Some(50_000), Some(500_000), Some(150))
        );
        let CreditKind::Tiered(t) = &credits.kind else {
            panic!("tiered")
        };
        let first: Vec<(u32, u32)> = t.tables[0]
            .tiers
            .iter()
            .map(|t| (t.below_ppm, t.percent_ppm))
            .collect();
        assert_eq!(
            first,
            [(999_500, 100_000), (990_000, 250_000), (950_000, 1_000_000)]
        );
        assert!(matches!(&t.tables[1].scope, TierScope::Objectives(n) if n.len() == 2));
        round_trips(&sla);
    }

    #[test]
    fn an_impact_policy_and_a_composite_scope_round_trip() {
        let impact = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: JPY\n    impact:\n      baseRate: 1.25\n      coefficients: {L2: 3, L4: 20.5}\n      levels: {availability: L3, latency: L1}\n",
        ))
        .unwrap();
        let credits = impact.credits.clone().unwrap();
        let CreditKind::Impact(i) = &credits.kind else {
            panic!("impact")
        };
        assert_eq!(i.base_rate_micro_minor, 1_250_000);
        assert_eq!(
            i.coefficients.0,
            [1_000_000, 3_000_000, 6_000_000, 20_500_000]
        );
        assert_eq!(
            i.levels.values().copied().collect::<Vec<_>>(),
            [ServiceLevel::L3, ServiceLevel::L1]
        );
        round_trips(&impact);
        // Defaults: the reference rate 0.8 and coefficients, not written back.
        let plain = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: EUR\n    impact: {levels: {availability: L2}}\n",
        ))
        .unwrap();
        let CreditKind::Impact(i) = &plain.credits.as_ref().unwrap().kind else {
            panic!("impact")
        };
        assert_eq!(i.base_rate_micro_minor, 80_000_000);
        assert!(!plain.to_native_yaml().contains("baseRate"));
        round_trips(&plain);

        let weighted = doc("  credits:\n    currency: XTS\n    minorUnits: 3\n    tiered:\n      - scope: composite\n        tiers: [{below: 99, percent: 10}]\n")
            .replace("target: 99.9%,", "target: 99.9%, weight: 2,");
        let composite = SlaDefinition::from_document(&weighted).unwrap();
        assert_eq!(composite.credits.as_ref().unwrap().currency.exponent(), 3);
        assert!(composite.to_native_yaml().contains("minorUnits: 3"));
        round_trips(&composite);
    }

    #[test]
    fn every_bad_credit_field_is_named() {
        let err = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: eur\n    rounding: nearest\n    capPercentOfFee: 150\n    tiered:\n      - objective: availabilty\n        tiers: [{below: 99.95, percent: 0}, {below: abc, percent: 10}]\n      - scope: composite\n        tiers: []\n      - {tiers: [{below: 99}]}\n    typo: 1\n",
        ))
        .unwrap_err();
        for (path, needle) in [
            ("spec.credits.currency", "three upper-case letters"),
            ("spec.credits.rounding", "half-even, half-up, down or up"),
            ("spec.credits.capPercentOfFee", "at most 100"),
            (
                "spec.credits.tiered[0].objective",
                "must name an objective of this SLA",
            ),
            ("spec.credits.tiered[0].tiers[0].percent", "above 0"),
            ("spec.credits.tiered[0].tiers[1].below", "must be a number"),
            ("spec.credits.tiered[1].scope", "needs a composite"),
            ("spec.credits.tiered[1].tiers", "1 to 20 tiers"),
            ("spec.credits.tiered[2]", "must say what the tiers judge"),
            ("spec.credits.tiered[2].tiers[0].percent", "is required"),
            ("spec.credits.typo", "unknown key"),
        ] {
            assert!(err.has(path, needle), "{path}: {err}");
        }
        let err = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: JPY\n    cap: 10.5\n    minimum: 20\n    tiered: [{objective: latency, tiers: [{below: 99, percent: 10}]}]\n    impact: {levels: {latency: L9}}\n",
        ))
        .unwrap_err();
        for (path, needle) in [
            ("spec.credits.cap", "0 decimals"),
            ("spec.credits", "either `tiered` or `impact`"),
        ] {
            assert!(err.has(path, needle), "{path}: {err}");
        }
        let err = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: XTS\n    impact: {baseRate: -1, coefficients: {L1: 0, L5: 2}, levels: {nope: L1, latency: L9}}\n",
        ))
        .unwrap_err();
        for (path, needle) in [
            ("spec.credits.currency", "minorUnits"),
            ("spec.credits.impact.coefficients.L5", "unknown key"),
            ("spec.credits.impact.levels.nope", "must name an objective"),
            ("spec.credits.impact.levels.latency", "L1, L2, L3 or L4"),
        ] {
            assert!(err.has(path, needle), "{path}: {err}");
        }
        let err = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: EUR\n    cap: 1\n    minimum: 2\n    impact: {baseRate: -1, coefficients: {L1: 0}, levels: {latency: L1}}\n",
        ))
        .unwrap_err();
        for (path, needle) in [
            ("spec.credits.minimum", "must not be above `cap`"),
            ("spec.credits.impact.baseRate", "above 0"),
            ("spec.credits.impact.coefficients.L1", "above 0"),
        ] {
            assert!(err.has(path, needle), "{path}: {err}");
        }
    }

    #[test]
    fn a_bad_openslo_credits_annotation_is_named() {
        let sla = SlaDefinition::from_document(&doc(
            "  credits:\n    currency: EUR\n    tiered: [{objective: latency, tiers: [{below: 99, percent: 10}]}]\n",
        ))
        .unwrap();
        let text = sla.to_openslo_yaml();
        let broken = text.replace(r#""percent":"10""#, r#""percent":"ten""#);
        assert_ne!(broken, text, "{text}");
        let err = SlaDefinition::from_document(&broken).unwrap_err();
        assert!(
            err.problems
                .iter()
                .any(|p| p.path.ends_with(
                    "metadata.annotations.slaproof.dev/credits.tiered[0].tiers[0].percent"
                ) && p.rule.contains("must be a number")),
            "{err}"
        );
        let garbled = text.replace("'{\"currency\"", "'{currency");
        assert_ne!(garbled, text, "{text}");
        let err = SlaDefinition::from_document(&garbled).unwrap_err();
        assert!(err.to_string().contains("must be a JSON object"), "{err}");
    }
}
