//! Reading and writing credit policies: each field exactly, defaults left out, every bad field named, and the contract rules a provider's document is held to.

use crate::credit::{CreditKind, ImpactOwed, Rounding, ServiceLevel, TierScope};
use crate::sla::SlaDefinition;

const OBJECTIVES: &str = "    - {name: availability, target: 99.95%, ratio: {good: \"status < 500\"}}\n    - {name: latency, target: 99%, threshold: {field: latency_ms, op: lte, value: 800ms}}\n";

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
        "  credits:\n    currency: EUR\n    rounding: half-up\n    cap: \"500.00\"\n    capPercentOfFee: 50\n    minimum: 1.5\n    tiered:\n      - objective: availability\n        tiers:\n          - {below: \"99.95\", percent: \"10\"}\n          - {below: 99, percent: 25}\n          - {below: 95%, percent: 100}\n      - objectives: [availability, latency]\n        tiers: [{below: 98.5, percent: 5}]\n",
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
fn a_share_of_the_fee_is_read_written_back_and_bounded() {
    let tiers =
        "    tiered:\n      - objective: availability\n        tiers: [{below: 99, percent: 25}]\n";
    let with = |share: &str| doc(&format!("  credits:\n    currency: EUR\n{share}{tiers}"));
    let sla = SlaDefinition::from_document(&with("    feeShare: 33.5\n")).unwrap();
    assert_eq!(sla.credits.as_ref().unwrap().fee_share_ppm, 335_000);
    assert!(
        sla.to_native_yaml().contains("feeShare: '33.5'"),
        "{}",
        sla.to_native_yaml()
    );
    round_trips(&sla);
    // The whole fee is the default, and left out.
    let whole = SlaDefinition::from_document(&with("")).unwrap();
    assert_eq!(whole.credits.as_ref().unwrap().fee_share_ppm, 1_000_000);
    assert!(!whole.to_native_yaml().contains("feeShare"));
    for bad in ["0", "100.5", "half"] {
        let err =
            SlaDefinition::from_document(&with(&format!("    feeShare: {bad}\n"))).unwrap_err();
        assert!(err.has("spec.credits.feeShare", ""), "{bad}: {err}");
    }
}

#[test]
fn an_impact_policy_and_a_composite_scope_round_trip() {
    let impact = SlaDefinition::from_document(&doc(
        "  credits:\n    currency: JPY\n    cap: 100000\n    impact:\n      baseRate: 1.25\n      coefficients: {L2: 3, L4: 20.5}\n      levels: {availability: L3, latency: L1}\n      incidents:\n        availability: {minuteBelow: 95, minRequests: 20, minMinutes: 5}\n        latency: {minRequests: 10}\n      owedWhen: always\n",
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
    assert_eq!(i.owed, ImpactOwed::Always);
    let availability = i.terms(&crate::objective::ObjectiveName::parse("availability").unwrap());
    assert_eq!(
        (
            availability.minute_below_ppm,
            availability.min_requests,
            availability.min_minutes
        ),
        (Some(950_000), 20, 5)
    );
    let latency = i.terms(&crate::objective::ObjectiveName::parse("latency").unwrap());
    assert_eq!(
        (
            latency.minute_below_ppm,
            latency.min_requests,
            latency.min_minutes
        ),
        (None, 10, 1)
    );
    round_trips(&impact);
    // Defaults: the reference rate 0.8 and coefficients, not written back.
    let plain = SlaDefinition::from_document(&doc(
        "  credits:\n    currency: EUR\n    capPercentOfFee: 50\n    impact: {levels: {availability: L2}}\n",
    ))
    .unwrap();
    let CreditKind::Impact(i) = &plain.credits.as_ref().unwrap().kind else {
        panic!("impact")
    };
    assert_eq!(i.base_rate_micro_minor, 80_000_000);
    assert_eq!(i.owed, ImpactOwed::WhenMissed);
    assert!(i.incidents.is_empty());
    let text = plain.to_native_yaml();
    assert!(
        !text.contains("baseRate") && !text.contains("owedWhen") && !text.contains("incidents"),
        "{text}"
    );
    round_trips(&plain);

    let weighted = doc("  credits:\n    currency: XTS\n    minorUnits: 3\n    tiered:\n      - objective: latency\n        tiers: [{below: 99, percent: 10}]\n")
        .replace("target: 99.95%,", "target: 99.95%, weight: 2,");
    let minor = SlaDefinition::from_document(&weighted).unwrap();
    assert_eq!(minor.credits.as_ref().unwrap().currency.exponent(), 3);
    assert!(minor.to_native_yaml().contains("minorUnits: 3"));
    round_trips(&minor);
}

/// A stored version is read as it was agreed, even where a provider's
/// document would now be refused (here: tiers over a composite).
#[test]
fn a_stored_version_keeps_a_policy_a_provider_can_no_longer_apply() {
    let weighted = doc("  credits:\n    currency: EUR\n    tiered:\n      - scope: composite\n        tiers: [{below: 99, percent: 10}]\n")
        .replace("target: 99.95%,", "target: 99.95%, weight: 2,");
    let err = SlaDefinition::from_document(&weighted).unwrap_err();
    assert!(
        err.has("spec.credits.tiered[0].scope", "must name objectives"),
        "{err}"
    );
    let value: serde_json::Value = serde_yaml_ng::from_str(&weighted).unwrap();
    let stored: SlaDefinition = serde_json::from_value(value).unwrap();
    assert!(matches!(
        &stored.credits.as_ref().unwrap().kind,
        CreditKind::Tiered(t) if t.tables[0].scope == TierScope::Composite
    ));
}

/// Found in review: policies that read without fault but cannot work
/// as a contract. Each is refused, by the field, with what would happen.
#[test]
fn a_policy_that_could_not_work_as_a_contract_is_refused_by_the_field() {
    // An impact policy without a ceiling.
    let err = SlaDefinition::from_document(&doc(
        "  credits:\n    currency: EUR\n    impact: {levels: {availability: L4}}\n",
    ))
    .unwrap_err();
    assert!(err.has("spec.credits.impact", "needs a ceiling"), "{err}");
    // A tier above its objective's target (99%): 99.5 would never pay
    // between 99% and 99.5%, as the objective is met there.
    let err = SlaDefinition::from_document(&doc(
        "  credits:\n    currency: EUR\n    tiered:\n      - objective: latency\n        tiers: [{below: 99, percent: 5}, {below: 99.5, percent: 10}]\n",
    ))
    .unwrap_err();
    assert!(
        err.has(
            "spec.credits.tiered[0].tiers[1].below",
            "must be at most the target of latency (99%)"
        ),
        "{err}"
    );
    assert!(
        !err.has("spec.credits.tiered[0].tiers[0].below", ""),
        "{err}"
    );
    // A rolling window never closes: nothing would ever be paid.
    let err = SlaDefinition::from_document(
        &doc("  credits:\n    currency: EUR\n    tiered: [{objective: latency, tiers: [{below: 99, percent: 10}]}]\n")
            .replace("{calendar: month, timeZone: Europe/Berlin}", "{rolling: 28d}"),
    )
    .unwrap_err();
    assert!(err.has("spec.credits", "needs a calendar window"), "{err}");
    // Bad incident terms are named.
    let err = SlaDefinition::from_document(&doc(
        "  credits:\n    currency: EUR\n    cap: 100\n    impact:\n      levels: {availability: L1}\n      incidents: {availability: {minuteBelow: 101, minRequests: 0, minMinutes: 2000}, nope: {}}\n      owedWhen: sometimes\n",
    ))
    .unwrap_err();
    for (path, needle) in [
        (
            "spec.credits.impact.incidents.availability.minuteBelow",
            "at most 100",
        ),
        (
            "spec.credits.impact.incidents.availability.minRequests",
            "from 1 to 1000000",
        ),
        (
            "spec.credits.impact.incidents.availability.minMinutes",
            "from 1 to 1440",
        ),
        (
            "spec.credits.impact.incidents.nope",
            "must name an objective",
        ),
        ("spec.credits.impact.owedWhen", "missed"),
    ] {
        assert!(err.has(path, needle), "{path}: {err}");
    }
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
        err.problems.iter().any(|p| p
            .path
            .ends_with("metadata.annotations.slaproof.dev/credits.tiered[0].tiers[0].percent")
            && p.rule.contains("must be a number")),
        "{err}"
    );
    let garbled = text.replace("'{\"currency\"", "'{currency");
    assert_ne!(garbled, text, "{text}");
    let err = SlaDefinition::from_document(&garbled).unwrap_err();
    assert!(err.to_string().contains("must be a JSON object"), "{err}");
}
