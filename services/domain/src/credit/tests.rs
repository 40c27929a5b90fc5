//! Hand-computed credits for each policy kind, caps, minimum, rounding and currency.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;

use super::*;

fn eur() -> Currency {
    Currency::new("EUR", None).unwrap()
}

fn jpy() -> Currency {
    Currency::new("JPY", None).unwrap()
}

fn name(n: &str) -> ObjectiveName {
    ObjectiveName::parse(n).unwrap()
}

/// The public clouds' table: 10% below 99.95%, 25% below 99%, 100% below 95%.
fn cloud_tiers() -> Vec<Tier> {
    vec![
        Tier {
            below_ppm: 999_500,
            percent_ppm: 100_000,
        },
        Tier {
            below_ppm: 990_000,
            percent_ppm: 250_000,
        },
        Tier {
            below_ppm: 950_000,
            percent_ppm: 1_000_000,
        },
    ]
}

fn tiered(currency: Currency, tables: Vec<(TierScope, Vec<Tier>)>) -> CreditPolicy {
    CreditPolicy {
        currency,
        kind: CreditKind::Tiered(TieredCredits {
            tables: tables
                .into_iter()
                .map(|(scope, tiers)| TierTable { scope, tiers })
                .collect(),
        }),
        cap_minor: None,
        cap_fee_ppm: None,
        fee_share_ppm: CreditPolicy::WHOLE_FEE,
        minimum_minor: None,
        rounding: Rounding::HalfEven,
    }
}

fn one(objective: &str) -> TierScope {
    TierScope::Objectives(vec![name(objective)])
}

/// An impact policy owing every incident (`owedWhen: always`), so that
/// the arithmetic is tested apart from the period's verdict.
fn impact(currency: Currency, levels: &[(&str, ServiceLevel)]) -> CreditPolicy {
    CreditPolicy {
        kind: CreditKind::Impact(ImpactCredits {
            base_rate_micro_minor: ImpactCredits::default_base_rate(&currency),
            coefficients: Coefficients::default(),
            levels: levels.iter().map(|(n, l)| (name(n), *l)).collect(),
            incidents: BTreeMap::new(),
            owed: ImpactOwed::Always,
        }),
        currency,
        cap_minor: None,
        cap_fee_ppm: None,
        fee_share_ppm: CreditPolicy::WHOLE_FEE,
        minimum_minor: None,
        rounding: Rounding::HalfEven,
    }
}

fn outcome(objective: &str, achieved_ppm: i64, met: bool) -> ObjectiveOutcome {
    ObjectiveOutcome {
        objective: name(objective),
        achieved_ppm: Some(achieved_ppm),
        met,
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().to_utc()
}

fn incident(objective: &str, start: &str, end: &str, requests: u64) -> Incident {
    Incident {
        objective: name(objective),
        start: at(start),
        end: at(end),
        requests,
    }
}

fn fee(minor: i64, currency: Currency) -> Option<Money> {
    Some(Money::new(minor, currency))
}

#[test]
fn a_tiered_credit_is_the_share_of_the_fee_of_the_tier_reached() {
    let policy = tiered(eur(), vec![(one("availability"), cloud_tiers())]);
    let inputs = CreditInputs {
        fee: fee(100_000, eur()),
        objectives: vec![outcome("availability", 995_000, false)],
        ..CreditInputs::default()
    };
    let c = compute(&policy, &inputs).unwrap();
    // 99.5% is below 99.95% only: 10% of 1000.00 EUR.
    assert_eq!(c.total, Money::new(10_000, eur()));
    let table = &c.tier_tables[0];
    assert_eq!(
        (table.percent.as_str(), table.amount.as_str()),
        ("10", "100")
    );
    let line = &table.lines[0];
    assert_eq!(line.achieved.as_deref(), Some("99.5"));
    assert_eq!(line.tier_below.as_deref(), Some("99.95"));
    assert_eq!(c.raw, "100");

    // 94.99% reaches every tier; the largest (100%) wins.
    let worst = CreditInputs {
        objectives: vec![outcome("availability", 949_900, false)],
        ..inputs.clone()
    };
    assert_eq!(compute(&policy, &worst).unwrap().total.minor, 100_000);
    // Exactly 99.95% is not below 99.95%.
    let edge = CreditInputs {
        objectives: vec![outcome("availability", 999_500, false)],
        ..inputs
    };
    let c = compute(&policy, &edge).unwrap();
    assert_eq!(c.total.minor, 0);
    assert_eq!(
        c.tier_tables[0].lines[0].note.as_deref(),
        Some("above every tier: no credit")
    );
}

#[test]
fn a_tiered_sla_breached_on_two_objectives_sums_its_tables_and_maxes_within_one() {
    let results = vec![
        outcome("availability", 985_000, false), // below 99%: 25%
        outcome("latency", 999_000, false),      // below 99.95%: 10%
    ];
    let inputs = CreditInputs {
        fee: fee(100_000, eur()),
        objectives: results,
        ..CreditInputs::default()
    };
    // Listed separately: a credit per objective, 25% + 10% of 1000.00.
    let separate = tiered(
        eur(),
        vec![
            (one("availability"), cloud_tiers()),
            (one("latency"), cloud_tiers()),
        ],
    );
    let c = compute(&separate, &inputs).unwrap();
    assert_eq!(c.total.minor, 35_000);
    let amounts: Vec<&str> = c.tier_tables.iter().map(|t| t.amount.as_str()).collect();
    assert_eq!(amounts, ["250", "100"]);

    // One table for both: one service, the largest tier reached (25%).
    let service = tiered(
        eur(),
        vec![(
            TierScope::Objectives(vec![name("availability"), name("latency")]),
            cloud_tiers(),
        )],
    );
    let c = compute(&service, &inputs).unwrap();
    assert_eq!(c.total.minor, 25_000);
    assert_eq!(c.tier_tables[0].lines.len(), 2);

    // Summing stays under the share cap: 30% of the fee.
    let mut capped = separate;
    capped.cap_fee_ppm = Some(300_000);
    let c = compute(&capped, &inputs).unwrap();
    assert_eq!((c.raw.as_str(), c.capped.as_str()), ("350", "300"));
    assert_eq!(c.total.minor, 30_000);
    assert!(c.caps[0].exceeded);
}

#[test]
fn an_sla_with_a_share_of_the_fee_credits_on_that_share_only() {
    // Found in review: one customer fee was used whole by each of its
    // SLAs, so two SLAs at 100% could credit twice the fee. With
    // `feeShare: 50`, each credits on half of it.
    let mut policy = tiered(eur(), vec![(one("availability"), cloud_tiers())]);
    policy.fee_share_ppm = 500_000;
    let inputs = CreditInputs {
        fee: fee(1_000_000, eur()),
        objectives: vec![outcome("availability", 900_000, false)],
        ..CreditInputs::default()
    };
    // 100% tier of half of 10,000.00.
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!(c.total.minor, 500_000);
    assert_eq!(c.fee_share.as_deref(), Some("50"));
    assert!(c.formula.contains("fee × feeShare ×"), "{}", c.formula);
    // The share cap is a share of that half: 30% of 5,000.00.
    policy.cap_fee_ppm = Some(300_000);
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!(c.caps[0].limit.minor, 150_000);
    assert_eq!(c.total.minor, 150_000);
    // 33.3333% of 10,000.00 at 10%: 333.333, exact until rounding.
    policy.cap_fee_ppm = None;
    policy.fee_share_ppm = 333_333;
    let slightly = CreditInputs {
        objectives: vec![outcome("availability", 999_000, false)],
        ..inputs.clone()
    };
    let c = compute(&policy, &slightly).unwrap();
    assert_eq!(c.raw, "333.333");
    assert_eq!(c.total.minor, 33_333);
    // The whole fee says nothing more than before.
    policy.fee_share_ppm = CreditPolicy::WHOLE_FEE;
    let c = compute(&policy, &slightly).unwrap();
    assert_eq!((c.total.minor, c.fee_share.as_deref()), (100_000, None));
    assert!(!c.formula.contains("feeShare"));
}

#[test]
fn a_met_objective_or_one_without_data_earns_nothing() {
    let policy = tiered(eur(), vec![(one("availability"), cloud_tiers())]);
    let met = CreditInputs {
        fee: fee(100_000, eur()),
        objectives: vec![outcome("availability", 999_000, true)],
        ..CreditInputs::default()
    };
    let c = compute(&policy, &met).unwrap();
    assert_eq!(c.total.minor, 0);
    assert_eq!(
        c.tier_tables[0].lines[0].note.as_deref(),
        Some("met: no credit")
    );
    let no_data = CreditInputs {
        objectives: vec![ObjectiveOutcome {
            objective: name("availability"),
            achieved_ppm: None,
            met: false,
        }],
        ..met
    };
    assert_eq!(compute(&policy, &no_data).unwrap().total.minor, 0);
}

#[test]
fn a_tiered_credit_without_a_fee_on_file_is_an_error_not_zero() {
    let policy = tiered(eur(), vec![(one("availability"), cloud_tiers())]);
    let breached = CreditInputs {
        objectives: vec![outcome("availability", 980_000, false)],
        ..CreditInputs::default()
    };
    let err = compute(&policy, &breached).unwrap_err();
    assert!(matches!(err, CreditError::NoFee { .. }));
    assert!(err.to_string().contains("no fee on file"), "{err}");
    // Nothing breached: nothing is owed, fee or not.
    let fine = CreditInputs {
        objectives: vec![outcome("availability", 999_900, true)],
        ..CreditInputs::default()
    };
    assert_eq!(compute(&policy, &fine).unwrap().total.minor, 0);
    // A missing result or a fee in another currency is refused too.
    let missing = CreditInputs {
        fee: fee(100, eur()),
        ..CreditInputs::default()
    };
    assert_eq!(
        compute(&policy, &missing).unwrap_err(),
        CreditError::MissingOutcome("availability".into())
    );
    let yen = CreditInputs {
        fee: fee(100, jpy()),
        ..breached
    };
    assert!(matches!(
        compute(&policy, &yen).unwrap_err(),
        CreditError::CurrencyMismatch { .. }
    ));
}

#[test]
fn the_composite_is_judged_by_its_own_table() {
    let policy = tiered(eur(), vec![(TierScope::Composite, cloud_tiers())]);
    let inputs = CreditInputs {
        fee: fee(50_000, eur()),
        // Budget overspent: composite compliance below zero.
        composite: Some(CompositeOutcome {
            achieved_ppm: Some(-120_000),
            met: false,
        }),
        ..CreditInputs::default()
    };
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!(c.total.minor, 50_000);
    assert_eq!(c.tier_tables[0].scope, "composite");
    assert_eq!(c.tier_tables[0].lines[0].achieved.as_deref(), Some("-12"));
    let none = CreditInputs {
        composite: None,
        ..inputs
    };
    assert_eq!(
        compute(&policy, &none).unwrap_err(),
        CreditError::MissingComposite
    );
}

#[test]
fn an_impact_credit_is_duration_times_qps_times_coefficient_times_rate() {
    let policy = impact(eur(), &[("checkout", ServiceLevel::L2)]);
    let inputs = CreditInputs {
        incidents: vec![incident(
            "checkout",
            "2026-03-10T12:00:00Z",
            "2026-03-10T12:01:30Z",
            45,
        )],
        ..CreditInputs::default()
    };
    let c = compute(&policy, &inputs).unwrap();
    // 90 s × 0.5 QPS × 2.5 × 0.80 EUR = 90.00 EUR.
    assert_eq!(c.total, Money::new(9_000, eur()));
    let line = &c.incidents[0];
    assert_eq!(
        (
            line.duration_seconds.as_str(),
            line.qps.as_str(),
            line.coefficient.as_str(),
            line.base_rate.as_str(),
            line.amount.as_str()
        ),
        ("90", "0.5", "2.5", "0.8", "90")
    );
    assert_eq!(line.level, Some(ServiceLevel::L2));
    assert!(c.fee.is_none(), "impact needs no fee");

    // A QPS that does not terminate is shown as a fraction; the amount stays exact.
    let thirds = CreditInputs {
        incidents: vec![incident(
            "checkout",
            "2026-03-10T12:00:00Z",
            "2026-03-10T12:00:03Z",
            100,
        )],
        ..CreditInputs::default()
    };
    let c = compute(&policy, &thirds).unwrap();
    assert_eq!(c.incidents[0].qps, "100/3");
    assert_eq!(c.total.minor, 20_000); // 100 × 2.5 × 0.80 = 200.00
}

#[test]
fn incidents_are_owed_by_default_only_in_a_period_that_missed_their_objective() {
    // Found in review: at 99.9% and 1,000 requests a minute, 30 minutes
    // with two failures each (a 99.99986% month) paid 30,000 requests ×
    // 15.0 × 0.80 EUR = 360,000 EUR at L4. A met month owes nothing.
    let mut policy = impact(eur(), &[("availability", ServiceLevel::L4)]);
    let CreditKind::Impact(terms) = &mut policy.kind else {
        unreachable!()
    };
    terms.owed = ImpactOwed::default();
    let incidents: Vec<Incident> = (0..30)
        .map(|m| Incident {
            objective: name("availability"),
            start: at("2026-03-10T12:00:00Z") + chrono::Duration::minutes(2 * m),
            end: at("2026-03-10T12:01:00Z") + chrono::Duration::minutes(2 * m),
            requests: 1_000,
        })
        .collect();
    let met = CreditInputs {
        objectives: vec![outcome("availability", 999_998, true)],
        incidents: incidents.clone(),
        ..CreditInputs::default()
    };
    let c = compute(&policy, &met).unwrap();
    assert_eq!(c.total.minor, 0);
    assert_eq!(c.incidents.len(), 30, "still listed, with why");
    assert_eq!(c.incidents[0].amount, "0");
    assert!(
        c.incidents[0]
            .note
            .as_deref()
            .unwrap()
            .contains("owed only in a period that missed it"),
        "{:?}",
        c.incidents[0].note
    );
    // The same incidents in a missed month are owed: 30,000 × 15 × 0.80.
    let missed = CreditInputs {
        objectives: vec![outcome("availability", 998_000, false)],
        incidents: incidents.clone(),
        ..CreditInputs::default()
    };
    assert_eq!(compute(&policy, &missed).unwrap().total.minor, 36_000_000);
    // Without the objective's result the verdict is unknown: refused by
    // name, never computed as owed or as zero.
    let unknown = CreditInputs {
        incidents,
        ..CreditInputs::default()
    };
    assert_eq!(
        compute(&policy, &unknown).unwrap_err(),
        CreditError::MissingOutcome("availability".into())
    );
}

#[test]
fn an_incident_across_midnight_in_berlin_is_one_span_of_its_real_length() {
    use chrono_tz::Europe::Berlin;
    // 23:30 CET on 28 March to 03:30 CEST on 29 March 2026: four hours on
    // the wall clock across local midnight and the spring-forward, three real ones.
    let i = incident(
        "search",
        "2026-03-28T22:30:00Z",
        "2026-03-29T01:30:00Z",
        10_800,
    );
    let (local_start, local_end) = (i.start.with_timezone(&Berlin), i.end.with_timezone(&Berlin));
    assert_eq!(local_start.date_naive().to_string(), "2026-03-28");
    assert_eq!(local_end.date_naive().to_string(), "2026-03-29");
    assert_eq!(
        local_end.naive_local() - local_start.naive_local(),
        chrono::Duration::hours(4)
    );
    let policy = impact(eur(), &[("search", ServiceLevel::L1)]);
    let c = compute(
        &policy,
        &CreditInputs {
            incidents: vec![i],
            ..CreditInputs::default()
        },
    )
    .unwrap();
    assert_eq!(c.incidents.len(), 1, "not split at midnight");
    assert_eq!(c.incidents[0].duration_seconds, "10800");
    assert_eq!(c.incidents[0].qps, "1");
    // 10800 s × 1 QPS × 1.0 × 0.80 EUR = 8640.00 EUR, counted once.
    assert_eq!(c.total.minor, 864_000);
}

#[test]
fn an_incident_of_an_objective_without_a_level_is_shown_but_not_credited() {
    let policy = impact(eur(), &[("checkout", ServiceLevel::L3)]);
    let inputs = CreditInputs {
        incidents: vec![
            incident(
                "checkout",
                "2026-03-10T12:00:00Z",
                "2026-03-10T12:00:10Z",
                10,
            ),
            incident(
                "reports",
                "2026-03-10T13:00:00Z",
                "2026-03-10T13:00:10Z",
                10,
            ),
        ],
        ..CreditInputs::default()
    };
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!(c.total.minor, 4_800); // 10 × 6 × 0.80
    assert_eq!(c.incidents[1].amount, "0");
    assert!(c.incidents[1].note.is_some());
    let backwards = CreditInputs {
        incidents: vec![incident(
            "checkout",
            "2026-03-10T12:00:00Z",
            "2026-03-10T12:00:00Z",
            1,
        )],
        ..CreditInputs::default()
    };
    assert!(matches!(
        compute(&policy, &backwards).unwrap_err(),
        CreditError::IncidentSpan { index: 0, .. }
    ));
}

/// An impact policy at 0.0001 EUR per second per QPS: `requests` hundredths of a cent.
fn hundredths(rounding: Rounding, requests: u64) -> CreditComputation {
    let mut policy = impact(eur(), &[("checkout", ServiceLevel::L1)]);
    if let CreditKind::Impact(i) = &mut policy.kind {
        i.base_rate_micro_minor = 10_000;
    }
    policy.rounding = rounding;
    let inputs = CreditInputs {
        incidents: vec![incident(
            "checkout",
            "2026-03-10T12:00:00Z",
            "2026-03-10T12:01:00Z",
            requests,
        )],
        ..CreditInputs::default()
    };
    compute(&policy, &inputs).unwrap()
}

#[test]
fn each_rounding_rule_rounds_to_the_minor_unit_as_named() {
    // 1.25, 1.5 and 2.5 cents.
    let cases = [
        (Rounding::Down, [1, 1, 2]),
        (Rounding::Up, [2, 2, 3]),
        (Rounding::HalfUp, [1, 2, 3]),
        (Rounding::HalfEven, [1, 2, 2]),
    ];
    for (rule, expected) in cases {
        let got: Vec<i64> = [125, 150, 250]
            .map(|r| hundredths(rule, r).total.minor)
            .to_vec();
        assert_eq!(got, expected, "{rule}");
    }
    let c = hundredths(Rounding::HalfEven, 125);
    assert_eq!((c.raw.as_str(), c.rounding), ("0.0125", Rounding::HalfEven));
}

#[test]
fn yen_have_no_minor_unit_and_euros_have_cents() {
    let policy = |c: Currency| tiered(c, vec![(one("availability"), cloud_tiers())]);
    let inputs = |c: Currency| CreditInputs {
        fee: fee(12_345, c),
        objectives: vec![outcome("availability", 999_000, false)],
        ..CreditInputs::default()
    };
    // 10% of 12345 yen = 1234.5 yen → 1234 (half to even).
    let yen = compute(&policy(jpy()), &inputs(jpy())).unwrap();
    assert_eq!((yen.raw.as_str(), yen.total.minor), ("1234.5", 1_234));
    assert_eq!(yen.total.to_string(), "1234 JPY");
    // 10% of 123.45 EUR = 12.345 EUR → 12.34.
    let euro = compute(&policy(eur()), &inputs(eur())).unwrap();
    assert_eq!((euro.raw.as_str(), euro.total.minor), ("12.345", 1_234));
    assert_eq!(euro.total.to_string(), "12.34 EUR");
    // The impact reference rate is 0.8 of the major unit in either.
    let i = |c: Currency| {
        compute(
            &impact(c, &[("checkout", ServiceLevel::L2)]),
            &CreditInputs {
                incidents: vec![incident(
                    "checkout",
                    "2026-03-10T12:00:00Z",
                    "2026-03-10T12:01:30Z",
                    45,
                )],
                ..CreditInputs::default()
            },
        )
        .unwrap()
        .total
        .to_string()
    };
    assert_eq!((i(jpy()), i(eur())), ("90 JPY".into(), "90.00 EUR".into()));
}

#[test]
fn caps_bound_the_credit_and_the_minimum_stops_small_ones() {
    let mut policy = impact(eur(), &[("checkout", ServiceLevel::L2)]);
    let inputs = CreditInputs {
        fee: fee(33_333, eur()),
        incidents: vec![incident(
            "checkout",
            "2026-03-10T12:00:00Z",
            "2026-03-10T12:01:30Z",
            45,
        )],
        ..CreditInputs::default()
    };
    // 90.00 EUR raw, capped at 50.00.
    policy.cap_minor = Some(5_000);
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!((c.capped.as_str(), c.total.minor), ("50", 5_000));
    assert_eq!(c.caps[0].rule, "cap");
    // 25% of 333.33 is 83.3325, rounded down to 83.33 even when rounding up.
    policy.cap_minor = None;
    policy.cap_fee_ppm = Some(250_000);
    policy.rounding = Rounding::Up;
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!(c.caps[0].limit.minor, 8_333);
    assert_eq!(c.total.minor, 8_333);
    // Both caps: the lower binds.
    policy.cap_minor = Some(6_000);
    let c = compute(&policy, &inputs).unwrap();
    assert_eq!(c.total.minor, 6_000);
    assert!(c.caps.iter().all(|s| s.exceeded));
    // A share cap needs a fee.
    let no_fee = CreditInputs {
        fee: None,
        ..inputs.clone()
    };
    assert!(matches!(
        compute(&policy, &no_fee).unwrap_err(),
        CreditError::NoFee { .. }
    ));
    // Below the minimum nothing is issued; at it, it is.
    let mut small = impact(eur(), &[("checkout", ServiceLevel::L2)]);
    small.minimum_minor = Some(9_001);
    let c = compute(&small, &inputs).unwrap();
    assert_eq!((c.rounded.minor, c.total.minor), (9_000, 0));
    assert!(c.minimum.as_ref().unwrap().applied);
    small.minimum_minor = Some(9_000);
    assert_eq!(compute(&small, &inputs).unwrap().total.minor, 9_000);
}

#[test]
fn the_computation_serializes_the_same_bytes_every_time_and_reads_back() {
    let policy = impact(eur(), &[("checkout", ServiceLevel::L4)]);
    let inputs = CreditInputs {
        incidents: vec![incident(
            "checkout",
            "2026-03-31T23:59:00Z",
            "2026-04-01T00:00:00.500Z",
            7,
        )],
        ..CreditInputs::default()
    };
    let a = serde_json::to_string(&compute(&policy, &inputs).unwrap()).unwrap();
    let b = serde_json::to_string(&compute(&policy, &inputs).unwrap()).unwrap();
    assert_eq!(a, b);
    let back: CreditComputation = serde_json::from_str(&a).unwrap();
    assert_eq!(back, compute(&policy, &inputs).unwrap());
    assert!(a.contains(r#""duration_seconds":"60.5""#), "{a}");
    assert!(a.contains(r#""qps":"14/121""#), "{a}");
    // 7 × 15 × 0.80 = 84.00
    assert!(a.contains(r#""total":{"minor":8400"#), "{a}");
    let inputs_json = serde_json::to_string(&inputs).unwrap();
    assert_eq!(
        serde_json::from_str::<CreditInputs>(&inputs_json).unwrap(),
        inputs
    );
}

#[test]
fn exact_texts_are_decimals_when_they_terminate() {
    assert_eq!(ratio_text(1, 8), "0.125");
    assert_eq!(ratio_text(10, 4), "2.5");
    assert_eq!(ratio_text(2, 6), "1/3");
    assert_eq!(ratio_text(0, 7), "0");
    assert_eq!(decimal_text(-120_000, 4), "-12");
    assert_eq!(Rounding::HalfEven.apply(35, 10), 4);
    assert_eq!(Rounding::HalfEven.apply(45, 10), 4);
}

fn rounding() -> impl Strategy<Value = Rounding> {
    prop_oneof![
        Just(Rounding::HalfEven),
        Just(Rounding::HalfUp),
        Just(Rounding::Down),
        Just(Rounding::Up),
    ]
}

proptest! {
    /// Whatever the inputs, a credit is never negative, never above a cap,
    /// and never a positive amount below the minimum.
    #[test]
    fn a_credit_stays_within_its_caps_and_is_never_negative(
        fee_minor in 0i64..1_000_000_000_000,
        cap in proptest::option::of(0i64..10_000_000),
        share in proptest::option::of(1u32..=1_000_000),
        minimum in proptest::option::of(0i64..100_000),
        rule in rounding(),
        jpy_currency in any::<bool>(),
        achieved in proptest::collection::vec((0i64..=1_000_000, any::<bool>()), 1..4),
        incidents in proptest::collection::vec((0u64..10_000_000, 1i64..1_000_000_000), 0..5),
        coefficient in 1u64..1_000_000_000,
        rate in 1i64..100_000_000_000,
        use_impact in any::<bool>(),
        owed_always in any::<bool>(),
    ) {
        let currency = if jpy_currency { jpy() } else { eur() };
        let names: Vec<String> = (0..achieved.len()).map(|i| format!("o{i}")).collect();
        let mut policy = if use_impact {
            let mut p = impact(currency.clone(), &[]);
            if let CreditKind::Impact(i) = &mut p.kind {
                i.base_rate_micro_minor = rate;
                i.coefficients = Coefficients([coefficient; 4]);
                i.levels = names.iter().map(|n| (name(n), ServiceLevel::L3)).collect::<BTreeMap<_, _>>();
                if !owed_always {
                    i.owed = ImpactOwed::WhenMissed;
                }
            }
            p
        } else {
            tiered(currency.clone(), names.iter().map(|n| (one(n), cloud_tiers())).collect())
        };
        policy.cap_minor = cap;
        policy.cap_fee_ppm = share;
        policy.minimum_minor = minimum;
        policy.rounding = rule;
        let start = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let inputs = CreditInputs {
            fee: fee(fee_minor, currency),
            objectives: names.iter().zip(&achieved).map(|(n, (a, met))| outcome(n, *a, *met)).collect(),
            composite: None,
            incidents: incidents.iter().enumerate().map(|(i, (requests, millis))| Incident {
                objective: name(&names[i % names.len()]),
                start,
                end: start + chrono::Duration::milliseconds(*millis),
                requests: *requests,
            }).collect(),
            priced_on: None,
        };
        let c = compute(&policy, &inputs).unwrap();
        let total = c.total.minor;
        prop_assert!(total >= 0);
        if let Some(cap) = cap {
            prop_assert!(total <= cap);
        }
        if let Some(share) = share {
            prop_assert!(i128::from(total) * 1_000_000 <= i128::from(fee_minor) * i128::from(share));
        }
        if let Some(min) = minimum {
            prop_assert!(total == 0 || total >= min);
        }
        if achieved.iter().all(|(_, met)| *met) && !(use_impact && owed_always) {
            // Every objective met: a tiered policy, and an impact policy
            // owing incidents of missed periods only, owe nothing.
            prop_assert_eq!(total, 0);
        }
        if !use_impact {
            // The sum of the tables never passes 100% per objective.
            prop_assert!(i128::from(total) <= i128::from(fee_minor) * names.len() as i128);
        }
    }
}
