//! The story the demo tells a newcomer, replayed in simulated time: the
//! loadgen's normal traffic meets every objective of the demo SLA with room
//! to spare, its incident pages and puts availability at risk, and the page
//! resolves once the incident is over.
//!
//! The traffic is the loadgen's own (`slaproof_ingest::loadgen::requests`,
//! seeded), validated as ingest validates it, stored as received when each
//! request finished, and evaluated a round a minute at chosen instants —
//! a day and an hour of traffic in seconds instead of waiting for them.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::{AlertSeverity, EventVerdict, EventView, MeasuredField, SlaDefinition, Sli};
use slaproof_evaluator::TenantRun;
use slaproof_ingest::EventIn;
use slaproof_ingest::event::{IdSeed, TimeBounds};
use slaproof_ingest::loadgen::{self, Customers, Stretch};
use slaproof_store::events::StoredEvent;
use slaproof_tests::scenario::{Scenario, at};

/// The demo's incident, starting at `start`.
fn incident_from(start: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let length = Duration::from_std(slaproof::demo::INCIDENT_LENGTH).unwrap();
    (start, start + length)
}

/// The loadgen's traffic over `stretch`, validated as ingest validates it,
/// each request with the instant it finished (when it was sent).
fn traffic(stretch: &Stretch) -> Vec<(StoredEvent, DateTime<Utc>)> {
    let bounds = TimeBounds::at(stretch.to, 30, Duration::minutes(5));
    loadgen::requests(stretch)
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let json = r.to_event(&format!("demo-{i}"));
            let event: EventIn = serde_json::from_value(json).unwrap();
            let stored = event.validate(i, &bounds, IdSeed::Fresh).unwrap();
            (stored, r.finished_at())
        })
        .collect()
}

/// The events that started in `[from, to)`.
fn started_in(
    events: &[(StoredEvent, DateTime<Utc>)],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<&StoredEvent> {
    events
        .iter()
        .map(|(e, _)| e)
        .filter(|e| e.occurred_at >= from && e.occurred_at < to)
        .collect()
}

/// The event as filters and objectives read it.
fn view(e: &StoredEvent) -> EventView {
    let unsigned = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
    EventView {
        service: Some(e.service.clone()),
        model: e.model.clone(),
        status: e.status.and_then(|s| u16::try_from(s).ok()),
        error_class: e.error_class.clone(),
        source: Some(e.source),
        streaming: e.streaming,
        latency_us: unsigned(e.latency_us),
        ttft_us: unsigned(e.ttft_us),
        tpot_us: unsigned(e.tpot_us),
        input_tokens: unsigned(e.input_tokens.map(i64::from)),
        output_tokens: unsigned(e.output_tokens.map(i64::from)),
        attrs: Default::default(),
    }
}

/// What one objective makes of a stretch of events, computed straight from
/// the events with the objective's own classification: the share of good
/// events (of good minutes for the time-slice objective) and, for a
/// threshold objective, the percentile its target names.
#[derive(Debug)]
struct Figure {
    objective: String,
    good_share: f64,
    percentile_ms: Option<f64>,
}

fn figures(sla: &SlaDefinition, events: &[&StoredEvent]) -> Vec<Figure> {
    // The SLA's own customer's requests, as the evaluator counts them.
    let events: Vec<&StoredEvent> = events
        .iter()
        .copied()
        .filter(|e| sla.measures(Some(&e.service), e.customer.as_deref()))
        .collect();
    let views: Vec<EventView> = events.iter().map(|e| view(e)).collect();
    sla.objectives
        .iter()
        .map(|objective| {
            let verdicts: Vec<(usize, EventVerdict)> = views
                .iter()
                .enumerate()
                .map(|(i, v)| (i, objective.classify(v)))
                .filter(|(_, v)| *v != EventVerdict::NotCounted)
                .collect();
            let good = |vs: &[(usize, EventVerdict)]| {
                vs.iter().filter(|(_, v)| *v == EventVerdict::Good).count() as f64
                    / vs.len().max(1) as f64
            };
            let name = objective.name.as_str().to_owned();
            if let Sli::TimeSlices(_) = &objective.sli {
                // Minutes (of the events' start) with at least 95% good.
                let mut minutes = std::collections::BTreeMap::<i64, Vec<_>>::new();
                for (i, v) in &verdicts {
                    let minute = events[*i].occurred_at.timestamp().div_euclid(60);
                    minutes.entry(minute).or_default().push((*i, *v));
                }
                let good_minutes = minutes.values().filter(|m| good(m) >= 0.95).count();
                return Figure {
                    objective: name,
                    good_share: good_minutes as f64 / minutes.len().max(1) as f64,
                    percentile_ms: None,
                };
            }
            let percentile_ms = match &objective.sli {
                Sli::Threshold(t) => {
                    let mut values: Vec<i64> = verdicts
                        .iter()
                        .filter_map(|(i, _)| match t.field {
                            MeasuredField::Ttft => events[*i].ttft_us,
                            _ => events[*i].latency_us,
                        })
                        .collect();
                    values.sort_unstable();
                    let q = f64::from(objective.target.ppm()) / 1e6;
                    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
                    Some(values[rank - 1] as f64 / 1000.0)
                }
                _ => None,
            };
            Figure {
                objective: name,
                good_share: good(&verdicts),
                percentile_ms,
            }
        })
        .collect()
}

/// One line per objective: its share of good events (or minutes) and the
/// percentile its target names.
fn describe(figures: &[Figure]) -> String {
    figures
        .iter()
        .map(|f| {
            let percentile = f
                .percentile_ms
                .map_or(String::new(), |ms| format!(", percentile {ms:.0} ms"));
            format!(
                "  {}: {:.3}% good{percentile}\n",
                f.objective,
                f.good_share * 100.0
            )
        })
        .collect()
}

/// Runs a round a minute after `from` up to `to` (inclusive), as the
/// evaluator does.
async fn rounds(s: &Scenario, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<TenantRun> {
    let mut runs = Vec::new();
    let mut minute = from;
    while minute < to {
        minute += Duration::minutes(1);
        runs.push(s.run(&minute.to_rfc3339()).await);
    }
    runs
}

/// The page rules firing after a round: (objective, rule).
fn pages_firing(run: &TenantRun) -> Vec<(String, &'static str)> {
    run.evaluations
        .iter()
        .flat_map(|e| {
            e.alerts
                .iter()
                .filter(|a| a.fires && a.rule.severity == AlertSeverity::Page)
                .map(|a| (e.objective.clone(), a.rule.name))
        })
        .collect()
}

/// Every in-period signal told so far, one line each, in order.
async fn signals(s: &Scenario) -> Vec<String> {
    s.told()
        .await
        .into_iter()
        .filter(|(kind, _)| kind.starts_with("slo.") || kind.starts_with("sla."))
        .map(|(kind, p)| {
            let when = p.get("at").unwrap_or(&p["asOf"]).as_str().unwrap_or("");
            let what = match (p.get("rule"), p.get("to")) {
                (Some(rule), _) => format!("{} {}", rule.as_str().unwrap_or(""), p["state"]),
                (None, Some(to)) => format!("level {} -> {to}", p["from"]),
                (None, None) => p["state"].to_string(),
            };
            format!(
                "{when} {kind} {} {what}",
                p["objective"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// When `objective` was first told `what` of `kind` (a rule and state such
/// as `page-1h "firing"`, or a state such as `"at_risk"`).
async fn first_told(s: &Scenario, kind: &str, objective: &str, what: &str) -> DateTime<Utc> {
    s.told_of(kind)
        .await
        .into_iter()
        .filter(|p| p["objective"] == objective)
        .find(|p| {
            let said = match p.get("rule") {
                Some(rule) => format!("{} {}", rule.as_str().unwrap_or(""), p["state"]),
                None => p["state"].to_string(),
            };
            said == what
        })
        .and_then(|p| p.get("at").unwrap_or(&p["asOf"]).as_str()?.parse().ok())
        .unwrap_or_else(|| panic!("{objective} was never told {kind} {what}"))
}

/// Every evaluation of `sla` in `run` is met, not at risk, and quiet.
fn assert_met_and_quiet(run: &TenantRun, sla: &str, objectives: usize) {
    let evaluations: Vec<_> = run
        .evaluations
        .iter()
        .filter(|e| e.sla_name == sla)
        .collect();
    assert_eq!(evaluations.len(), objectives, "{sla}");
    for e in evaluations {
        let outlook = e.outlook.unwrap();
        assert!(
            e.budget.met(),
            "{} {}: {:?}",
            e.as_of,
            e.objective,
            e.budget
        );
        assert!(
            !outlook.at_risk && !outlook.exhausted,
            "{} {}: {outlook:?}",
            e.as_of,
            e.objective
        );
        assert!(
            e.alerts.iter().all(|a| !a.fires),
            "{} {}: {:?}",
            e.as_of,
            e.objective,
            e.alerts
        );
        assert_eq!(e.degrade_level, 0, "{} {}", e.as_of, e.objective);
    }
}

/// Every evaluation of the demo SLA in `run` is met, not at risk, and quiet.
fn assert_all_met_and_quiet(run: &TenantRun) {
    assert_met_and_quiet(run, "acme-enterprise", 4);
}

/// The incident part of the story: the page fires while the incident
/// lasts (within `within` of its start) and availability goes at risk; the
/// page resolves within 6 minutes of its end (its short lookback, 5
/// minutes, clean again); no page fires by the last round; no breach (that
/// is told only when the month closes).
async fn assert_the_incident_pages_and_resolves(
    s: &Scenario,
    runs: &[TenantRun],
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    within: Duration,
) {
    for run in runs {
        eprintln!(
            "{} paging {:?}",
            run.advance.as_of.format("%H:%M"),
            pages_firing(run)
        );
    }
    eprintln!("told:\n  {}", signals(s).await.join("\n  "));
    let fired = first_told(
        s,
        "slo.burn_rate_alert",
        "availability",
        "page-1h \"firing\"",
    )
    .await;
    assert!(fired > from && fired <= from + within, "paged at {fired}");
    let at_risk = first_told(s, "slo.at_risk", "availability", "\"at_risk\"").await;
    assert!(at_risk > from && at_risk <= to, "at risk at {at_risk}");
    let resolved = first_told(
        s,
        "slo.burn_rate_alert",
        "availability",
        "page-1h \"resolved\"",
    )
    .await;
    assert!(
        resolved > to && resolved <= to + Duration::minutes(6),
        "resolved at {resolved}"
    );
    let last = runs.last().unwrap();
    assert!(pages_firing(last).is_empty(), "{:?}", pages_firing(last));
    assert!(s.told_of("sla.breached").await.is_empty());
}

#[tokio::test]
async fn after_a_normal_day_the_incident_pages_puts_availability_at_risk_and_resolves() {
    let sla = SlaDefinition::from_document(slaproof::demo::SLA_DOCUMENT).unwrap();
    // A day of normal traffic from mid-morning (UTC), then an hour with
    // the demo's incident a quarter of an hour in; 2 requests a second at
    // the day's mean, about 170,000 a day.
    let (day, hour) = (at("2026-11-16T10:00:00Z"), at("2026-11-17T10:00:00Z"));
    let end = hour + Duration::hours(1);
    let incident = incident_from(hour + Duration::minutes(15));
    let events = traffic(&Stretch {
        from: day,
        to: end,
        rate: 2.0,
        diurnal: true,
        incident: Some(incident),
        seed: 12,
        customers: std::sync::Arc::new(Customers::demo()),
    });

    // What the traffic itself is, objective by objective.
    let normal = figures(&sla, &started_in(&events, day, hour));
    let during = figures(&sla, &started_in(&events, incident.0, incident.1));
    eprintln!(
        "a normal day:\n{}the incident:\n{}",
        describe(&normal),
        describe(&during)
    );
    // Normal traffic keeps within every target with room to spare: it
    // spends less than half of each error budget.
    for (figure, objective) in normal.iter().zip(&sla.objectives) {
        let budget = 1.0 - f64::from(objective.target.ppm()) / 1e6;
        assert!(1.0 - figure.good_share < budget / 2.0, "{figure:?}");
    }
    // The incident misses every target.
    for (figure, objective) in during.iter().zip(&sla.objectives) {
        assert!(
            figure.good_share < f64::from(objective.target.ppm()) / 1e6,
            "{figure:?}"
        );
    }

    let s = Scenario::new(slaproof::demo::SLA_DOCUMENT, "2026-11-16", "2026-11-17").await;
    s.insert_events(&events).await;
    // After the day: every objective met, none at risk, nothing told.
    assert_all_met_and_quiet(&s.run(&hour.to_rfc3339()).await);
    assert!(signals(&s).await.is_empty(), "{:?}", signals(&s).await);

    let runs = rounds(&s, hour, end).await;
    // The quarter of an hour before the incident stays quiet.
    for run in runs.iter().filter(|r| r.advance.as_of <= incident.0) {
        assert_all_met_and_quiet(run);
    }
    // With a day behind it, the hour's page needs a few minutes of the
    // incident to reach 14.4× (2% of the month's budget in an hour).
    assert_the_incident_pages_and_resolves(&s, &runs, incident, Duration::minutes(6)).await;
}

#[tokio::test]
async fn the_live_demo_meets_its_sla_then_pages_at_the_incidents_first_round() {
    // What `slaproof up --loadgen 50` sends: 50 requests a second from the
    // start, the demo's incident `INCIDENT_AT` in.
    let start = at("2026-11-17T10:00:00Z");
    let end = start + Duration::hours(1);
    let incident = incident_from(start + Duration::from_std(slaproof::demo::INCIDENT_AT).unwrap());
    let events = traffic(&Stretch {
        from: start,
        to: end,
        rate: 50.0,
        diurnal: true,
        incident: Some(incident),
        seed: 50,
        customers: std::sync::Arc::new(Customers::demo()),
    });
    let s = Scenario::new(slaproof::demo::SLA_DOCUMENT, "2026-11-17", "2026-11-17").await;
    // Globex, on the 8B model the incident spares, with its SLA beside.
    s.customers(&["globex"]).await;
    s.apply(slaproof::demo::OTHER_SLAS[0].0).await;
    s.insert_events(&events).await;

    let runs = rounds(&s, start, end).await;
    // Met from the first minute until the incident.
    for run in runs.iter().filter(|r| r.advance.as_of <= incident.0) {
        assert_all_met_and_quiet(run);
    }
    // With minutes of history only, the incident is most of the last hour:
    // the page fires at its first round.
    assert_the_incident_pages_and_resolves(&s, &runs, incident, Duration::minutes(1)).await;
    // Globex's SLA, judged on its own requests, stays met and quiet
    // throughout: the incident never touched them.
    for run in &runs {
        assert_met_and_quiet(run, "globex-standard", 2);
    }
}
