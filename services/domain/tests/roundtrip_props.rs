//! Property tests: any valid SLA survives native YAML, JSON and OpenSLO unchanged.

use proptest::prelude::*;
use slaproof_domain::anchoring::{AnchorPath, AttestationPolicy, KeyHash, ProofCircuit};
use slaproof_domain::policy::{
    DegradePolicy, MaintenancePolicy, NoDataPolicy, NoDataSlices, ScheduleSlot, SlaPolicy,
};
use slaproof_domain::quantity::SpanUnit;
use slaproof_domain::{
    CalendarUnit, CompositeWeight, EventFilter, GaugeName, GaugeSli, MeasuredField, Micros,
    Objective, ObjectiveName, RatioCount, RatioSli, SlaDefinition, SlaName, SlaScope, Sli,
    SliceBudgeting, SliceIndicator, SliceTarget, Span, TargetPpm, ThresholdOp, ThresholdSli,
    ThresholdValue, TimeSlicesSli, TimeWindow,
};

const FILTERS: &[&str] = &[
    "status < 500",
    "status >= 500 or error_class == \"timeout\"",
    "streaming == true and input_tokens <= 4096",
    "model in [\"gpt-4o\", \"llama-3\"]",
    "not (source == \"probe\")",
    "attr.cache_hit == 1 and latency_ms < 250.5",
    "error_class != \"a: b # c\"",
];

fn filter() -> impl Strategy<Value = EventFilter> {
    proptest::sample::select(FILTERS).prop_map(|f| EventFilter::parse(f).unwrap())
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9][A-Za-z0-9 —:#'\",.-]{0,30}",
        Just("true".to_owned()),
        Just("null".to_owned()),
        Just("1.5".to_owned()),
        Just("line one\nline two".to_owned()),
        Just("- looks like a list".to_owned()),
    ]
}

fn op() -> impl Strategy<Value = ThresholdOp> {
    proptest::sample::select(vec![
        ThresholdOp::Lte,
        ThresholdOp::Lt,
        ThresholdOp::Gte,
        ThresholdOp::Gt,
    ])
}

fn threshold() -> impl Strategy<Value = ThresholdSli> {
    let duration = (
        proptest::sample::select(vec![
            MeasuredField::Latency,
            MeasuredField::Ttft,
            MeasuredField::Tpot,
        ]),
        0u64..=Micros::MAX,
    )
        .prop_map(|(f, us)| (f, ThresholdValue::Duration(Micros::new(us))));
    let attr = ("[a-z_][a-z0-9_]{0,10}", -1e6f64..1e6)
        .prop_map(|(name, v)| (MeasuredField::Attr(name), ThresholdValue::Number(v)));
    (
        prop_oneof![duration, attr],
        op(),
        proptest::option::of(filter()),
    )
        .prop_map(|((field, value), op, filter)| ThresholdSli {
            field,
            op,
            value,
            filter,
        })
}

fn ratio() -> impl Strategy<Value = RatioSli> {
    (filter(), any::<bool>(), proptest::option::of(filter())).prop_map(|(f, good, total)| {
        RatioSli {
            count: if good {
                RatioCount::Good(f)
            } else {
                RatioCount::Bad(f)
            },
            total,
        }
    })
}

fn sli() -> impl Strategy<Value = Sli> {
    let slices = (
        prop_oneof![
            ratio().prop_map(SliceIndicator::Ratio),
            threshold().prop_map(SliceIndicator::Threshold)
        ],
        proptest::sample::select(vec!["1m", "5m", "15m", "1h", "1d"]),
        proptest::option::of(1u32..=1_000_000),
    )
        .prop_map(|(indicator, length, target)| {
            Sli::TimeSlices(TimeSlicesSli {
                indicator,
                slice_length: Span::parse(length).unwrap(),
                budgeting: match target {
                    Some(ppm) => SliceBudgeting::Timeslices {
                        slice_target: SliceTarget::from_ppm(ppm).unwrap(),
                    },
                    None => SliceBudgeting::RatioTimeslices,
                },
            })
        });
    let gauge = ("[a-z][a-z0-9_]{0,10}", op(), -10.0f64..10.0).prop_map(|(m, op, threshold)| {
        Sli::Gauge(GaugeSli {
            metric: GaugeName::parse(&m).unwrap(),
            op,
            threshold,
        })
    });
    prop_oneof![
        ratio().prop_map(Sli::Ratio),
        threshold().prop_map(Sli::Threshold),
        slices,
        gauge
    ]
}

fn objective(index: usize) -> impl Strategy<Value = Objective> {
    (
        "[a-z0-9]{1,8}",
        proptest::option::of(text()),
        proptest::option::of(text()),
        1u32..1_000_000,
        proptest::option::of(1u64..=CompositeWeight::MAX_MICROS),
        sli(),
    )
        .prop_map(
            move |(name, display_name, description, ppm, weight, sli)| Objective {
                name: ObjectiveName::parse(&format!("o{index}-{name}")).unwrap(),
                display_name,
                description,
                target: TargetPpm::from_ppm(ppm).unwrap(),
                weight: weight.map(|w| {
                    CompositeWeight::parse(&format!("{}.{:06}", w / 1_000_000, w % 1_000_000))
                        .unwrap()
                }),
                sli,
            },
        )
}

fn window() -> impl Strategy<Value = TimeWindow> {
    let calendar = (
        proptest::sample::select(vec![
            CalendarUnit::Week,
            CalendarUnit::Month,
            CalendarUnit::Quarter,
            CalendarUnit::Year,
        ]),
        proptest::sample::select(vec![
            "UTC",
            "Europe/Berlin",
            "America/New_York",
            "Asia/Kolkata",
        ]),
    )
        .prop_map(|(unit, tz)| TimeWindow::Calendar {
            unit,
            time_zone: tz.parse().unwrap(),
        });
    let rolling = proptest::sample::select(vec!["1h", "30m", "7d", "28d", "30d", "4w"])
        .prop_map(|s| TimeWindow::rolling(Span::parse(s).unwrap()).unwrap());
    prop_oneof![calendar, rolling]
}

fn sla() -> impl Strategy<Value = SlaDefinition> {
    let objectives = (1usize..5).prop_flat_map(|n| (0..n).map(objective).collect::<Vec<_>>());
    (
        "[a-z][a-z0-9-]{0,30}",
        proptest::option::of(text()),
        proptest::option::of(text()),
        "[a-z][a-z0-9-]{0,15}",
        proptest::option::of("[A-Za-z0-9][A-Za-z0-9._:-]{0,19}"),
        window(),
        objectives,
        policy(),
        proptest::sample::select(AnchorPath::ALL.to_vec()),
        any::<bool>(),
        proptest::sample::select(ProofCircuit::ALL.to_vec()),
        proptest::option::of(any::<[u8; 32]>().prop_map(KeyHash)),
    )
        .prop_map(
            |(
                name,
                display_name,
                description,
                service,
                customer,
                window,
                objectives,
                policy,
                anchor,
                service_wide,
                circuit,
                verifying_key,
            )| {
                // A customer's SLA may be its customer's or the service's;
                // one without a customer is the service's.
                let scope = if service_wide || customer.is_none() {
                    SlaScope::Service
                } else {
                    SlaScope::Customer
                };
                SlaDefinition {
                    name: SlaName::parse(&name).unwrap(),
                    display_name,
                    description,
                    service,
                    customer,
                    scope,
                    window,
                    objectives,
                    policy,
                    credits: None,
                    attestation: AttestationPolicy {
                        anchor,
                        circuit,
                        verifying_key,
                    },
                }
            },
        )
}

/// Any policy a document can state, defaults included.
fn policy() -> impl Strategy<Value = SlaPolicy> {
    let hours = |n: u32| Span::new(n, SpanUnit::Hour).unwrap();
    (
        proptest::option::of(1u32..48),
        1u32..200,
        proptest::option::of((1u32..100, 0u8..128, 0u16..1439, 1u16..1441)),
        (1u64..20_000, 1u32..10, 0u64..20_000, 1u32..1_000_000),
        1u32..600,
        prop_oneof![
            Just(NoDataSlices::Ignored),
            Just(NoDataSlices::Bad),
            Just(NoDataSlices::Good)
        ],
    )
        .prop_map(
            move |(grace, notice, cap, (light, evaluations, extra, remaining), after, slices)| {
                SlaPolicy {
                    late_grace: grace.map(hours),
                    late_corrections: grace.is_some_and(|g| g % 2 == 0),
                    maintenance: MaintenancePolicy {
                        notice: hours(notice),
                        max_per_period: cap.map(|(h, ..)| hours(h)),
                        // A schedule needs a cap; some caps come without one.
                        schedule: cap
                            .filter(|&(_, days, ..)| days != 0)
                            .map(|(_, days, from, length)| ScheduleSlot {
                                days: std::array::from_fn(|i| days & (1 << i) != 0),
                                from_minute: from,
                                to_minute: (from + length).min(1440),
                            })
                            .into_iter()
                            .collect(),
                    },
                    degrade: DegradePolicy {
                        light_burn_milli: light,
                        light_evaluations: evaluations,
                        full_burn_milli: light + extra,
                        full_remaining_ppm: remaining,
                    },
                    no_data: NoDataPolicy {
                        after: Span::new(after, SpanUnit::Minute).unwrap(),
                        slices,
                    },
                    gauge_delay: Span::new(after, SpanUnit::Minute).unwrap(),
                    // 1 to 400 days.
                    settlement: Span::new(1 + after % 400, SpanUnit::Day).unwrap(),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn native_yaml_round_trips(sla in sla()) {
        let yaml = sla.to_native_yaml();
        let back = SlaDefinition::from_document(&yaml);
        prop_assert!(back.is_ok(), "{yaml}\n{:?}", back.err());
        let back = back.unwrap();
        prop_assert_eq!(&back, &sla);
        prop_assert_eq!(back.to_native_yaml(), yaml);
    }

    #[test]
    fn json_round_trips(sla in sla()) {
        let json = serde_json::to_string(&sla).unwrap();
        let back: SlaDefinition = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, sla);
    }

    #[test]
    fn openslo_round_trips(sla in sla()) {
        let docs = sla.to_openslo_yaml();
        let back = SlaDefinition::from_document(&docs);
        prop_assert!(back.is_ok(), "{docs}\n{:?}", back.err());
        prop_assert_eq!(back.unwrap(), sla);
    }

    #[test]
    fn from_document_never_panics(text in "\\PC{0,200}") {
        let _ = SlaDefinition::from_document(&text);
    }
}
