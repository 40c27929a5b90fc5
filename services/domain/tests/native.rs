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
