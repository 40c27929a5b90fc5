//! The native document: the demo fixture, round trips and refusals.

use slaproof_domain::{
    BudgetingMethod, CalendarUnit, EventView, SlaDefinition, Sli, ThresholdValue, TimeWindow,
};

const DEMO: &str = include_str!("../fixtures/demo-sla.yaml");

#[test]
fn demo_fixture_parses_into_the_expected_model() {
    let sla = SlaDefinition::from_document(DEMO).unwrap();
    assert_eq!(sla.name.as_str(), "acme-enterprise");
    assert_eq!(sla.customer.as_deref(), Some("acme-corp"));
    assert_eq!(sla.service, "chat-completions");
    assert_eq!(
        sla.window,
        TimeWindow::Calendar {
            unit: CalendarUnit::Month,
            time_zone: chrono_tz::Europe::Berlin
        }
    );
    let kinds: Vec<_> = sla.objectives.iter().map(|o| o.kind_name()).collect();
    assert_eq!(kinds, ["ratio", "threshold", "threshold", "time_slices"]);
    let ppm: Vec<_> = sla.objectives.iter().map(|o| o.target.ppm()).collect();
    assert_eq!(ppm, [999_000, 950_000, 990_000, 995_000]);
    assert_eq!(
        sla.objectives[0].weight.map(|w| w.micros()),
        Some(2_000_000)
    );
    assert_eq!(sla.objectives[3].weight, None);
    assert_eq!(
        sla.objectives[3].budgeting_method(),
        BudgetingMethod::Timeslices
    );
    let Sli::Threshold(p99) = &sla.objectives[2].sli else {
        panic!("threshold")
    };
    assert_eq!(
        p99.value,
        ThresholdValue::Duration(slaproof_domain::Micros::new(3_200_000))
    );

    // An event exactly at 3.2 s is good for P99 latency.
    let at_threshold = EventView {
        latency_us: Some(3_200_000),
        ..EventView::default()
    };
    assert_eq!(
        sla.objectives[2].classify(&at_threshold),
        slaproof_domain::EventVerdict::Good
    );
    // Found in review: a timeout without a latency vanished from the
    // latency promise. It is bad; a failure that reported no latency, or
    // a call without the field, is not counted.
    let timed_out = EventView {
        status: Some(200),
        error_class: Some("timeout".to_owned()),
        ..EventView::default()
    };
    let gateway_timeout = EventView {
        status: Some(504),
        ..EventView::default()
    };
    let failed = EventView {
        status: Some(500),
        ..EventView::default()
    };
    for (event, verdict) in [
        (&timed_out, slaproof_domain::EventVerdict::Bad),
        (&gateway_timeout, slaproof_domain::EventVerdict::Bad),
        (&failed, slaproof_domain::EventVerdict::NotCounted),
        (
            &EventView::default(),
            slaproof_domain::EventVerdict::NotCounted,
        ),
    ] {
        assert_eq!(sla.objectives[2].classify(event), verdict, "{event:?}");
    }
    // TTFT only counts streaming requests with short prompts.
    let long_prompt = EventView {
        streaming: Some(true),
        input_tokens: Some(5000),
        ttft_us: Some(2_000_000),
        ..EventView::default()
    };
    assert_eq!(
        sla.objectives[1].classify(&long_prompt),
        slaproof_domain::EventVerdict::NotCounted
    );
}

#[test]
fn demo_fixture_round_trips_textually() {
    let sla = SlaDefinition::from_document(DEMO).unwrap();
    let yaml = sla.to_native_yaml();
    let body: String = DEMO
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(yaml, body);
    assert_eq!(SlaDefinition::from_document(&yaml).unwrap(), sla);
}

#[test]
fn json_is_the_same_document() {
    let sla = SlaDefinition::from_document(DEMO).unwrap();
    let json = serde_json::to_string_pretty(&sla).unwrap();
    assert!(json.contains("\"apiVersion\": \"slaproof/v1\""));
    assert_eq!(SlaDefinition::from_document(&json).unwrap(), sla);
    let back: SlaDefinition = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sla);
    assert_eq!(serde_json::to_value(&back).unwrap(), sla.to_native_json());
}

const EVERY_FIELD: &str = include_str!("../fixtures/native-every-field.yaml");

#[test]
fn every_field_round_trips_textually_and_through_openslo() {
    let sla = SlaDefinition::from_document(EVERY_FIELD).unwrap();
    let body: String = EVERY_FIELD
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(sla.to_native_yaml(), body);
    assert_eq!(
        sla.window,
        TimeWindow::Rolling {
            duration: slaproof_domain::Span::parse("28d").unwrap()
        }
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
    let methods: Vec<_> = sla
        .objectives
        .iter()
        .map(|o| o.budgeting_method())
        .collect();
    assert_eq!(methods[4], BudgetingMethod::Timeslices);
    assert_eq!(methods[5], BudgetingMethod::RatioTimeslices);
    let openslo = sla.to_openslo_yaml();
    assert_eq!(SlaDefinition::from_document(&openslo).unwrap(), sla);
}

fn refusal(doc: &str) -> slaproof_domain::DefinitionError {
    SlaDefinition::from_document(doc).unwrap_err()
}

fn assert_has(err: &slaproof_domain::DefinitionError, path: &str, rule: &str) {
    assert!(err.has(path, rule), "expected {path}: …{rule}… in:\n{err}");
}

#[test]
fn refusals_name_the_path_and_rule_and_collect_them_all() {
    let doc = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: Bad_Name
  displayNme: typo
spec:
  service: chat
  customer: acme corp
  window:
    calendar: fortnight
    timeZone: Mars/Olympus
  objectives:
  - name: availability
    target: 100.5%
    ratio:
      good: status <
  - name: availability
    target: 0.99
    weight: 0
    threshold:
      field: latency
      op: lte
      value: 3.2 parsecs
  - name: slices
    target: 99%
    timeSlices:
      sliceLength: 7m
      budgeting: Timeslices
      ratio:
        good: model < 3
  - name: nothing
    target: 99%
"#;
    let err = refusal(doc);
    assert_has(&err, "metadata.name", "lowercase letters, digits and `-`");
    assert_has(&err, "metadata.displayNme", "did you mean `displayName`?");
    assert_has(
        &err,
        "spec.window.calendar",
        "must be one of week, month, quarter, year",
    );
    assert_has(&err, "spec.window.timeZone", "IANA time zone");
    assert_has(
        &err,
        "spec.objectives[0].target",
        "must be below 100, got 100.5",
    );
    assert_has(
        &err,
        "spec.objectives[0].ratio.good",
        "column 9: expected a number",
    );
    assert_has(&err, "spec.objectives[1].weight", "must be above 0");
    assert_has(
        &err,
        "spec.objectives[1].threshold.value",
        "must be a duration",
    );
    assert_has(
        &err,
        "spec.objectives[2].timeSlices.sliceLength",
        "divides a day",
    );
    assert_has(
        &err,
        "spec.objectives[2].timeSlices.sliceTarget",
        "is required",
    );
    assert_has(
        &err,
        "spec.objectives[2].timeSlices.ratio.good",
        "cannot compare `model`",
    );
    assert_has(&err, "spec.objectives[3]", "must give one SLI");
    // One per line.
    assert_eq!(err.to_string().lines().count(), err.problems.len());
    assert!(err.problems.len() >= 12, "{err}");
}

#[test]
fn duplicate_objective_names_and_cross_rules() {
    let doc = r#"
apiVersion: slaproof/v1
kind: SLA
metadata: {name: x}
spec:
  service: chat
  window: {rolling: 30d}
  objectives:
  - {name: a, target: 99%, ratio: {good: status < 500}}
  - {name: a, target: 99%, ratio: {good: status < 500, bad: status >= 500}}
"#;
    let err = refusal(doc);
    assert_has(&err, "spec.objectives[1].ratio", "either `good` or `bad`");
    let doc = doc.replace(", bad: status >= 500", "");
    let err = refusal(&doc);
    assert_has(&err, "spec.objectives[1].name", "must be unique");
    let doc = r#"
apiVersion: slaproof/v1
kind: SLA
metadata: {name: x}
spec: {service: chat, window: {rolling: 1M}, objectives: [], extra: 1}
"#;
    let err = refusal(doc);
    assert_has(&err, "spec.objectives", "at least one objective");
    assert_has(&err, "spec.window.rolling", "calendar length");
    assert_has(&err, "spec.extra", "unknown key");
}

#[test]
fn refuses_documents_that_are_not_slas() {
    assert_has(&refusal(""), "", "document is empty");
    assert_has(
        &refusal("apiVersion: v2\nkind: SLA\n"),
        "apiVersion",
        "must be \"slaproof/v1\" or \"openslo/v1\"",
    );
    assert_has(&refusal("kind: SLA\n"), "apiVersion", "is required");
    assert_has(&refusal("{ not yaml"), "", "not valid YAML or JSON");
    let two = format!("{DEMO}\n---\n{DEMO}");
    assert_has(
        &refusal(&two),
        "documents[0].apiVersion",
        "must be the only document",
    );
}

#[test]
fn maintenance_window_api() {
    use chrono::{Duration, TimeZone, Utc};
    let start = Utc.with_ymd_and_hms(2024, 3, 1, 2, 0, 0).unwrap();
    let w = slaproof_domain::MaintenanceWindow::new(start, start + Duration::hours(2), "upgrade")
        .unwrap();
    let march = TimeWindow::Calendar {
        unit: CalendarUnit::Month,
        time_zone: chrono_tz::UTC,
    }
    .period_containing(start);
    let covered = march.intersection(&w.period()).unwrap();
    assert_eq!(covered.duration(), Duration::hours(2));
    assert!(slaproof_domain::MaintenanceWindow::new(start, start, "upgrade").is_err());
}
