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
use slaproof_ingest::loadgen::{Customers, Stretch};
use slaproof_store::events::StoredEvent;
use slaproof_tests::scenario::{Scenario, at, settings};

/// The demo's incident, starting at `start`.
fn incident_from(start: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let length = Duration::from_std(slaproof::demo::INCIDENT_LENGTH).unwrap();
    (start, start + length)
}

/// The loadgen's traffic over `stretch`, as the demo's history draws it.
fn traffic(stretch: &Stretch) -> Vec<(StoredEvent, DateTime<Utc>)> {
    slaproof::demo::history::traffic(stretch, 30)
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

#[tokio::test]
async fn the_demos_history_closes_acme_corps_month_missed_and_every_other_met() {
    // What `slaproof up` writes on its first start, on the 5th of a month:
    // the loadgen's traffic from the previous month's start (in Berlin),
    // with the 70B model's six-hour incident on the 12th.
    let now = at("2026-12-05T06:00:00Z");
    let plan = slaproof::demo::history::HistoryPlan::for_demo(now, 0.1).unwrap();
    // acme-corp's November in Berlin; the first round within every demo
    // SLA's November (globex's in New York starts last).
    assert_eq!(plan.closed.start, at("2026-10-31T23:00:00Z"));
    assert_eq!(plan.closed.end, at("2026-11-30T23:00:00Z"));
    assert_eq!(plan.stretch.from, plan.closed.start);
    assert_eq!(plan.first_round, at("2026-11-01T04:00:00Z"));
    // Less than a day into a month, the month before is the one closed.
    let early =
        slaproof::demo::history::HistoryPlan::for_demo(at("2026-12-01T02:00:00Z"), 0.1).unwrap();
    assert_eq!(early.closed.start, at("2026-09-30T22:00:00Z"));
    assert_eq!(early.first_round, at("2026-10-01T04:00:00Z"));
    let (from, to) = plan.incident();
    assert_eq!(
        (from, to),
        (at("2026-11-12T08:00:00Z"), at("2026-11-12T14:00:00Z"))
    );

    let s = Scenario::new(slaproof::demo::SLA_DOCUMENT, "2026-11-01", "2026-12-05").await;
    s.customers(&["globex", "initech"]).await;
    for (document, _) in slaproof::demo::OTHER_SLAS {
        s.apply(document).await;
    }
    let written = slaproof::demo::history::write(&s.db, s.tenant, &plan, 400, &settings())
        .await
        .unwrap();
    // About 0.1 a second over 34¼ days, none received after now.
    assert!((250_000..330_000).contains(&written), "{written}");
    // Written once: a tenant with events gets no second history.
    assert_eq!(
        slaproof::demo::history::write(&s.db, s.tenant, &plan, 400, &settings())
            .await
            .unwrap(),
        0
    );

    // The history's rounds closed each SLA's month, as the live evaluator
    // would have: what they froze.
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let results: Vec<(String, String, DateTime<Utc>, i64, i64, bool)> = sqlx::query_as(
        "SELECT s.name, r.objective, r.period_start, r.good, r.total, r.met \
         FROM period_results r JOIN slas s ON s.tenant_id = r.tenant_id AND s.id = r.sla_id",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let closed = |sla: &str, objective: &str| {
        results
            .iter()
            .find(|r| r.0 == sla && r.1 == objective)
            .unwrap_or_else(|| panic!("{sla} {objective} closed: {results:?}"))
    };
    // acme-corp's availability misses its 99.9%: the incident failed about
    // a sixth of its requests for six hours; its latency objectives hold.
    let availability = closed("acme-enterprise", "availability");
    assert_eq!(availability.2, plan.closed.start);
    let compliance = availability.3 as f64 / availability.4 as f64;
    assert!(!availability.5, "{availability:?}");
    assert!((0.997..0.999).contains(&compliance), "{availability:?}");
    for objective in ["ttft-p95", "latency-p99"] {
        let result = closed("acme-enterprise", objective);
        assert!(result.5, "{result:?}");
    }
    // Available minutes sit at their target's edge at this volume (about
    // three of acme-corp's requests a minute: one failure fails a minute),
    // so the story does not rest on them; the credit policy does not
    // either.
    let minutes = closed("acme-enterprise", "minutes-available");
    assert!(minutes.4 > 30_000, "most minutes had requests: {minutes:?}");
    // Globex never uses the 70B model, Initech barely; the public SLA
    // spreads the incident over every customer's requests. Each closes the
    // month of its own zone (New York, London, UTC).
    for sla in ["globex-standard", "initech-pro", "chat-public"] {
        let of: Vec<_> = results.iter().filter(|r| r.0 == sla).collect();
        assert!(!of.is_empty(), "{sla} closed");
        for result in of {
            assert!(result.5, "{result:?}");
        }
    }
}
