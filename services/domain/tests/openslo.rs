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

fn refusal(doc: &str) -> slaproof_domain::DefinitionError {
    SlaDefinition::from_document(doc).unwrap_err()
}

fn assert_has(err: &slaproof_domain::DefinitionError, path: &str, rule: &str) {
    assert!(err.has(path, rule), "expected {path}: …{rule}… in:\n{err}");
}

const ONE_SLO: &str = r#"
apiVersion: openslo/v1
kind: SLO
metadata:
  name: web-availability
spec:
  service: web
  indicator:
    metadata:
      name: web-success
    spec:
      ratioMetric:
        counter: true
        good:
          metricSource:
            type: slaproof
            spec:
              filter: status < 500
        total:
          metricSource:
            type: slaproof
  timeWindow:
    - duration: 28d
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - displayName: Good
      targetPercent: 99.9
"#;

#[test]
fn single_slo_with_rolling_window_names_the_sla_after_the_service() {
    let sla = SlaDefinition::from_document(ONE_SLO).unwrap();
    assert_eq!(sla.name.as_str(), "web");
    assert_eq!(sla.objectives[0].name.as_str(), "web-availability");
    assert_eq!(sla.objectives[0].target.ppm(), 999_000);
    assert!(
        matches!(sla.window, TimeWindow::Rolling { duration } if duration.to_string() == "28d")
    );
    let again = SlaDefinition::from_document(&sla.to_openslo_yaml()).unwrap();
    assert_eq!(again, sla);
}

#[test]
fn single_document_paths_have_no_prefix() {
    let err = refusal(&ONE_SLO.replace("targetPercent: 99.9", "targetPercent: 100.5"));
    assert_has(
        &err,
        "spec.objectives[0].targetPercent",
        "must be below 100, got 100.5",
    );
    let err = refusal(&ONE_SLO.replace("targetPercent: 99.9", "target: 0.9999999"));
    assert_has(
        &err,
        "spec.objectives[0].target",
        "more precise than 0.000001",
    );
    let err = refusal(&ONE_SLO.replace(
        "targetPercent: 99.9",
        "targetPercent: 99.9\n      target: 0.999",
    ));
    assert_has(
        &err,
        "spec.objectives[0]",
        "either `target` or `targetPercent`",
    );
}

#[test]
fn foreign_metric_sources_are_refused_saying_what_to_use() {
    let doc = ONE_SLO
        .replacen("type: slaproof", "type: Prometheus", 1)
        .replacen(
            "              filter: status < 500",
            "              query: sum(rate(http_requests_total[5m]))",
            1,
        );
    let err = refusal(&doc);
    assert_has(
        &err,
        "spec.indicator.spec.ratioMetric.good.metricSource.type",
        "metric source \"Prometheus\" is not supported; slaproof measures the provider's own events: use `type: slaproof`",
    );
    let doc = ONE_SLO.replacen("type: slaproof", "metricSourceRef: my-datadog", 1);
    assert_has(
        &refusal(&doc),
        "spec.indicator.spec.ratioMetric.good.metricSource.metricSourceRef",
        "refers to a DataSource",
    );
}

#[test]
fn unknown_spec_keys_are_refused_but_labels_and_annotations_ignored() {
    let doc = ONE_SLO.replace("  service: web\n", "  service: web\n  serviec: typo\n");
    assert_has(&refusal(&doc), "spec.serviec", "did you mean `service`?");
    let doc = ONE_SLO.replace(
        "  name: web-availability\n",
        "  name: web-availability\n  labels: {team: [a, b]}\n  annotations: {other.io/x: y}\n",
    );
    assert!(SlaDefinition::from_document(&doc).is_ok());
}

#[test]
fn budgeting_rules_are_enforced() {
    let doc = ONE_SLO.replace(
        "budgetingMethod: Occurrences",
        "budgetingMethod: Timeslices",
    );
    let err = refusal(&doc);
    assert_has(&err, "spec.objectives[0].timeSliceWindow", "is required");
    assert_has(&err, "spec.objectives[0].timeSliceTarget", "is required");
    let doc = ONE_SLO.replace(
        "targetPercent: 99.9",
        "targetPercent: 99.9\n      timeSliceWindow: 1m",
    );
    assert_has(
        &refusal(&doc),
        "spec.objectives[0].timeSliceWindow",
        "applies only with budgetingMethod Timeslices",
    );
    let doc = ONE_SLO
        .replace(
            "budgetingMethod: Occurrences",
            "budgetingMethod: RatioTimeslices",
        )
        .replace(
            "targetPercent: 99.9",
            "targetPercent: 99.9\n      timeSliceWindow: 1m\n      timeSliceTarget: 0.9",
        );
    assert_has(
        &refusal(&doc),
        "spec.objectives[0].timeSliceTarget",
        "applies only with budgetingMethod Timeslices",
    );
    let doc = ONE_SLO.replace("budgetingMethod: Occurrences", "budgetingMethod: Sometimes");
    assert_has(
        &refusal(&doc),
        "spec.budgetingMethod",
        "must be Occurrences, Timeslices or RatioTimeslices",
    );
    let doc = ONE_SLO.replace("  budgetingMethod: Occurrences\n", "");
    assert_has(&refusal(&doc), "spec.budgetingMethod", "is required");
}

#[test]
fn raw_ratios_and_bad_windows_are_refused() {
    let doc = ONE_SLO.replace(
        "        counter: true\n",
        "        counter: true\n        rawType: success\n",
    );
    assert_has(
        &refusal(&doc),
        "spec.indicator.spec.ratioMetric.rawType",
        "precomputed ratios are not supported",
    );
    let doc = ONE_SLO.replace(
        "    - duration: 28d\n      isRolling: true\n",
        "    - duration: 1M\n      calendar:\n        startTime: 2024-01-15 00:00:00\n        timeZone: Europe/Paris\n",
    );
    assert_has(
        &refusal(&doc),
        "spec.timeWindow[0].calendar.startTime",
        "must be the start of a month",
    );
    let doc = ONE_SLO.replace("duration: 28d", "duration: 2M");
    assert_has(
        &refusal(&doc),
        "spec.timeWindow[0].duration",
        "calendar length",
    );
    let doc = ONE_SLO.replace(
        "    - duration: 28d\n      isRolling: true\n",
        "    - duration: 2M\n      calendar: {timeZone: UTC}\n",
    );
    assert_has(
        &refusal(&doc),
        "spec.timeWindow[0].duration",
        "one week, month, quarter or year",
    );
}

#[test]
fn multi_document_rules() {
    let other = ONE_SLO
        .replace("name: web-availability", "name: web-two")
        .replace("duration: 28d", "duration: 30d");
    let err = refusal(&format!("{ONE_SLO}---{other}"));
    assert_has(
        &err,
        "documents[1].spec.timeWindow",
        "must be the same on every SLO",
    );
    let other = ONE_SLO
        .replace("service: web", "service: api")
        .replace("name: web-availability", "name: api-a");
    let err = refusal(&format!("{ONE_SLO}---{other}"));
    assert_has(
        &err,
        "documents[1].spec.service",
        "one SLA measures one service",
    );
    let dup = format!("{ONE_SLO}---{ONE_SLO}");
    assert_has(
        &refusal(&dup),
        "documents[1].spec.objectives[0].name",
        "must be unique",
    );
    let referenced = ONE_SLO.replace(
        "  indicator:\n    metadata:\n      name: web-success\n    spec:\n      ratioMetric:",
        "  indicatorRef: missing-sli\n  x:\n    y:\n      ratioMetric:",
    );
    let err = refusal(&referenced);
    assert_has(&err, "spec.indicatorRef", "refers to no SLI");
    let alert = "apiVersion: openslo/v1\nkind: AlertPolicy\nmetadata: {name: a}\nspec: {}\n";
    assert_has(
        &refusal(&format!("{ONE_SLO}---\n{alert}")),
        "documents[1].kind",
        "AlertPolicy documents are not imported",
    );
}
