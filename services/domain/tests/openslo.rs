//! OpenSLO import and export: the sample, round trips and refusals.

use slaproof_domain::{
    BudgetingMethod, CalendarUnit, Micros, RatioCount, SlaDefinition, Sli, SliceBudgeting,
    SliceIndicator, ThresholdOp, ThresholdValue, TimeWindow,
};

const SAMPLE: &str = include_str!("../fixtures/openslo-sample.yaml");

#[test]
fn sample_imports_every_field() {
    let sla = SlaDefinition::from_document(SAMPLE).unwrap();
    assert_eq!(sla.name.as_str(), "globex-premium");
    assert_eq!(sla.display_name.as_deref(), Some("Globex — Premium tier"));
    assert_eq!(
        sla.description.as_deref(),
        Some("Premium tier commitments for Globex.")
    );
    assert_eq!(sla.customer.as_deref(), Some("globex-4711"));
    assert_eq!(sla.service, "chat-completions");
    assert_eq!(
        sla.window,
        TimeWindow::Calendar {
            unit: CalendarUnit::Month,
            time_zone: chrono_tz::America::New_York
        }
    );
    let names: Vec<_> = sla.objectives.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "availability",
            "ttft-p95",
            "latency-p99",
            "latency-p90",
            "good-minutes",
            "smooth-slices",
            "answer-quality"
        ]
    );
    let kinds: Vec<_> = sla.objectives.iter().map(|o| o.kind_name()).collect();
    assert_eq!(
        kinds,
        [
            "ratio",
            "threshold",
            "threshold",
            "threshold",
            "time_slices",
            "time_slices",
            "gauge"
        ]
    );
    let targets: Vec<_> = sla.objectives.iter().map(|o| o.target.ppm()).collect();
    assert_eq!(
        targets,
        [
            999_500, 950_000, 990_000, 900_000, 995_000, 990_000, 900_000
        ]
    );

    let avail = &sla.objectives[0];
    assert_eq!(avail.weight.map(|w| w.micros()), Some(3_000_000));
    assert_eq!(
        avail.description.as_deref(),
        Some("Requests served without a server error.")
    );
    let Sli::Ratio(r) = &avail.sli else {
        panic!("ratio")
    };
    assert!(matches!(&r.count, RatioCount::Bad(f) if f.to_string() == "status >= 500"));
    assert_eq!(
        r.total.as_ref().map(ToString::to_string).as_deref(),
        Some("source == \"provider\"")
    );

    let Sli::Threshold(ttft) = &sla.objectives[1].sli else {
        panic!("threshold")
    };
    assert_eq!(ttft.value, ThresholdValue::Duration(Micros::new(800_000)));
    assert_eq!(
        ttft.filter.as_ref().map(ToString::to_string).as_deref(),
        Some("streaming == true and input_tokens <= 4096")
    );
    assert_eq!(
        sla.objectives[1].display_name.as_deref(),
        Some("P95 time to first token")
    );

    let Sli::Threshold(p90) = &sla.objectives[3].sli else {
        panic!("threshold")
    };
    assert_eq!(p90.op, ThresholdOp::Lt);
    assert_eq!(p90.value, ThresholdValue::Duration(Micros::new(1_500_500)));

    let Sli::TimeSlices(minutes) = &sla.objectives[4].sli else {
        panic!("slices")
    };
    assert_eq!(minutes.slice_length.to_string(), "1m");
    assert!(
        matches!(minutes.budgeting, SliceBudgeting::Timeslices { slice_target } if slice_target.ppm() == 950_000)
    );
    assert!(matches!(&minutes.indicator, SliceIndicator::Ratio(r) if r.total.is_none()));
    assert_eq!(
        sla.objectives[4].budgeting_method(),
        BudgetingMethod::Timeslices
    );

    let Sli::TimeSlices(smooth) = &sla.objectives[5].sli else {
        panic!("slices")
    };
    assert_eq!(smooth.slice_length.to_string(), "5m");
    assert_eq!(
        sla.objectives[5].budgeting_method(),
        BudgetingMethod::RatioTimeslices
    );

    let Sli::Gauge(quality) = &sla.objectives[6].sli else {
        panic!("gauge")
    };
    assert_eq!(quality.metric.as_str(), "quality_score");
    assert_eq!(quality.op, ThresholdOp::Gte);
    assert_eq!(quality.threshold, 0.8);
}

#[test]
fn sample_round_trips_through_export() {
    let sla = SlaDefinition::from_document(SAMPLE).unwrap();
    let exported = sla.to_openslo_yaml();
    let again = SlaDefinition::from_document(&exported).unwrap();
    assert_eq!(again, sla);
    assert_eq!(again.to_openslo_yaml(), exported);
    // And through the native form.
    assert_eq!(
        SlaDefinition::from_document(&sla.to_native_yaml()).unwrap(),
        sla
    );
}

#[test]
fn demo_sla_round_trips_through_openslo() {
    let demo = SlaDefinition::from_document(include_str!("../fixtures/demo-sla.yaml")).unwrap();
    let exported = demo.to_openslo_yaml();
    assert!(exported.contains("apiVersion: openslo/v1"));
    assert!(exported.contains("kind: SLI"));
    assert_eq!(SlaDefinition::from_document(&exported).unwrap(), demo);
}
