//! Customer traffic: each customer's SLA judged on its own requests. Three
//! customers share one service with a service-wide SLA beside theirs; a
//! week of their traffic (and of traffic that names no customer, or a
//! customer not registered yet) closes as plain SQL over the raw events
//! counts each SLA, to the event; impact credits are priced on each
//! customer's own volume; an unknown reference is counted for the provider
//! and judged, history intact, once registered.

use chrono::{DateTime, Duration, Utc};
use slaproof_compensation::{Settings, work_due};
use slaproof_domain::budget::Tally;
use slaproof_store::customers;
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_tests::scenario::{Request, Scenario, at};
use slaproof_tests::traffic::Xorshift;

/// The objectives every SLA of the week states: a ratio, a latency
/// threshold and minutes good at 95%, over ISO weeks in UTC.
/// `{NAME}` and `{WHOSE}` are spliced in.
const WEEKLY: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: {NAME}
spec:
  service: chat
{WHOSE}
  window: {calendar: week, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
  - name: latency
    target: 95%
    threshold: {field: latency, op: lte, value: 500ms}
  - name: minutes
    target: 99%
    timeSlices:
      sliceLength: 1m
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {good: status < 500}
"#;

fn weekly(name: &str, whose: &str) -> String {
    WEEKLY.replace("{NAME}", name).replace("{WHOSE}", whose)
}

/// The week judged: Monday 2026-11-02 to Monday 2026-11-09, UTC.
const START: &str = "2026-11-02T00:00:00Z";
const END: &str = "2026-11-09T00:00:00Z";

/// The SLAs of the week and whose requests each counts (`None`: every
/// request of the service). `delta-sla` is applied mid-week, for a
/// customer whose traffic came before it was registered.
const SLAS: [(&str, Option<&str>); 5] = [
    ("alpha-sla", Some("alpha")),
    ("beta-sla", Some("beta")),
    ("gamma-sla", Some("gamma")),
    ("delta-sla", Some("delta")),
    ("public-sla", None),
];

/// The contract, read with SQL for one SLA: the service's events in the
/// week that served its customer (every one, for the service-wide SLA),
/// received before the close (the end plus the platform's five minutes of
/// grace); the three objectives over them. Met when good × 10⁶ ≥ target
/// (ppm) × total. Minutes without requests weigh nothing.
const ORACLE: &str = "
WITH counted AS (
    SELECT occurred_at, status, latency_us FROM events
    WHERE service = 'chat' AND occurred_at >= $1 AND occurred_at < $2
      AND received_at < $2 + interval '5 minutes'
      AND ($3::text IS NULL OR customer = $3) -- CUSTOMER
),
minutes AS (
    SELECT count(*) FILTER (WHERE status < 500) AS good, count(*) AS total
    FROM counted GROUP BY date_trunc('minute', occurred_at)
),
objectives AS (
    SELECT 'availability' AS objective,
           count(*) FILTER (WHERE status < 500) AS good, count(*) AS total FROM counted
    UNION ALL
    SELECT 'latency', count(*) FILTER (WHERE latency_us <= 500000),
           count(*) FILTER (WHERE latency_us IS NOT NULL) FROM counted
    UNION ALL
    SELECT 'minutes', (SELECT count(*) FILTER (WHERE good * 100 >= 95 * total) FROM minutes),
           (SELECT count(*) FROM minutes)
)
SELECT o.objective, o.good, o.total, o.good * 1000000 >= t.target_ppm * o.total AS met
FROM objectives o
JOIN (VALUES ('availability', 990000), ('latency', 950000), ('minutes', 990000))
    AS t (objective, target_ppm) USING (objective)
ORDER BY o.objective
";

/// How one source of traffic behaves: a request every `every`, failing
/// and slow so many times in a thousand, and a bad stretch of its own.
struct Source {
    customer: Option<&'static str>,
    every: Duration,
    bad: i64,
    slow: i64,
    incident: Option<(&'static str, &'static str)>,
}

/// The week's traffic: alpha has a two-hour outage on Wednesday; beta is
/// up but slow all week; gamma has short bursts of failures; requests that
/// name no customer, and those of delta (not registered until Thursday),
/// fail often. Each is received within two seconds.
fn week() -> Vec<(StoredEvent, DateTime<Utc>)> {
    let sources = [
        Source {
            customer: Some("alpha"),
            every: Duration::seconds(90),
            bad: 2,
            slow: 20,
            incident: Some(("2026-11-04T10:00:00Z", "2026-11-04T12:00:00Z")),
        },
        Source {
            customer: Some("beta"),
            every: Duration::seconds(120),
            bad: 3,
            slow: 80,
            incident: None,
        },
        Source {
            customer: Some("gamma"),
            every: Duration::seconds(60),
            bad: 30,
            slow: 10,
            incident: None,
        },
        Source {
            customer: Some("delta"),
            every: Duration::seconds(300),
            bad: 150,
            slow: 30,
            incident: None,
        },
        Source {
            customer: None,
            every: Duration::seconds(600),
            bad: 400,
            slow: 300,
            incident: None,
        },
    ];
    let mut rng = Xorshift(0xc057_0e12_2026_1102);
    let mut out = Vec::new();
    for source in &sources {
        let (mut t, end) = (at(START), at(END));
        while t < end {
            let jitter =
                Duration::microseconds(rng.below(source.every.num_microseconds().unwrap_or(1)));
            let occurred_at = t + jitter;
            let in_incident = source
                .incident
                .is_some_and(|(a, b)| occurred_at >= at(a) && occurred_at < at(b));
            let bad = if in_incident { 700 } else { source.bad };
            let status = if rng.chance(bad) { 503 } else { 200 };
            let latency_us = if rng.chance(source.slow) {
                500_001 + rng.below(3_000_000)
            } else if rng.chance(10) {
                500_000
            } else {
                5_000 + rng.below(495_000)
            };
            let received_at = occurred_at + Duration::microseconds(rng.below(2_000_000));
            out.push((
                StoredEvent {
                    id: Default::default(),
                    occurred_at,
                    source: EventSource::Provider,
                    service: "chat".into(),
                    customer: source.customer.map(str::to_owned),
                    model: Some("big".into()),
                    request_id: None,
                    status: Some(status),
                    error_class: None,
                    latency_us: Some(latency_us),
                    ttft_us: None,
                    tpot_us: None,
                    input_tokens: None,
                    output_tokens: None,
                    streaming: None,
                    attributes: serde_json::json!({}),
                },
                received_at,
            ));
            t += source.every;
        }
    }
    // Another service's requests for alpha: not any of these SLAs'.
    for i in 0..200 {
        let occurred_at = at(START) + Duration::minutes(i * 37);
        out.push((
            StoredEvent {
                service: "embed".into(),
                status: Some(503),
                ..out[0].0.clone()
            },
            occurred_at,
        ));
        out.last_mut().unwrap().0.occurred_at = occurred_at;
        out.last_mut().unwrap().0.id = Default::default();
    }
    out.sort_by_key(|(_, received_at)| *received_at);
    out
}

/// One objective's figures at the close.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Figures {
    sla: String,
    objective: String,
    tally: Tally,
    met: bool,
}

async fn oracle(s: &Scenario, sql: &str) -> Vec<Figures> {
    let mut out = Vec::new();
    for (sla, customer) in SLAS {
        let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
        let rows: Vec<(String, i64, i64, bool)> = sqlx::query_as(sql)
            .bind(at(START))
            .bind(at(END))
            .bind(customer)
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        for (objective, good, total, met) in rows {
            out.push(Figures {
                sla: sla.to_owned(),
                objective,
                tally: Tally {
                    good: u64::try_from(good).unwrap(),
                    total: u64::try_from(total).unwrap(),
                },
                met,
            });
        }
    }
    out.sort_by(|a, b| (&a.sla, &a.objective).cmp(&(&b.sla, &b.objective)));
    out
}

#[tokio::test]
async fn three_customers_on_one_service_close_as_plain_sql_counts_each_customer() {
    // Scenario::new registers acme-corp and applies its document; the
    // week's SLAs come beside it (acme-corp sends nothing this week).
    let s = Scenario::new(
        &weekly("acme-sla", "  customer: acme-corp"),
        "2026-11-01",
        "2026-11-10",
    )
    .await;
    s.customers(&["alpha", "beta", "gamma"]).await;
    for (sla, customer) in SLAS {
        if sla == "delta-sla" {
            continue;
        }
        let whose = match customer {
            Some(c) => format!("  customer: {c}"),
            None => "  scope: service".to_owned(),
        };
        s.apply(&weekly(sla, &whose)).await;
    }
    let traffic = week();
    // Rounds through the week; delta registered (and its SLA applied) on
    // Thursday, after its requests had been counted as unknown.
    let rounds = [
        "2026-11-02T00:00:00Z",
        "2026-11-03T12:00:00Z",
        "2026-11-05T00:00:00Z",
        "2026-11-07T06:00:00Z",
        "2026-11-08T23:59:00Z",
        "2026-11-09T00:10:00Z",
    ];
    let mut sent = 0;
    let mut closed = Vec::new();
    for round in rounds {
        let arrived = traffic.partition_point(|(_, received_at)| *received_at < at(round));
        s.insert_events(&traffic[sent..arrived]).await;
        sent = arrived;
        if round == "2026-11-05T00:00:00Z" {
            // Delta's requests so far are kept and counted for the
            // provider as an unknown reference.
            let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
            let (unknown, count) = customers::unknown_references(&mut tx, 10).await.unwrap();
            tx.commit().await.unwrap();
            assert_eq!(count, 1, "{unknown:?}");
            assert_eq!(unknown[0].external_ref, "delta");
            // What the rounds so far read: received before the last one.
            let expected = traffic
                .iter()
                .filter(|(e, received_at)| {
                    e.customer.as_deref() == Some("delta")
                        && *received_at < at("2026-11-03T12:00:00Z")
                })
                .count();
            assert_eq!(unknown[0].events, i64::try_from(expected).unwrap());
            s.customers(&["delta"]).await;
            s.apply(&weekly("delta-sla", "  customer: delta")).await;
            let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
            let (_, count) = customers::unknown_references(&mut tx, 10).await.unwrap();
            tx.commit().await.unwrap();
            assert_eq!(count, 0, "registered: no longer unknown");
        }
        let run = s.run(round).await;
        closed.extend(run.closed);
    }
    // Delta's SLA learns what came before it was seen in chunks, a round
    // each: rounds after the close let it finish and close its week.
    for round in ["2026-11-09T00:20:00Z", "2026-11-09T00:30:00Z"] {
        closed.extend(s.run(round).await.closed);
    }
    assert_eq!(sent, traffic.len());

    let mut evaluator: Vec<Figures> = closed
        .iter()
        .filter(|c| c.evaluation.sla_name != "acme-sla")
        .map(|c| {
            let e = &c.evaluation;
            assert_eq!((e.period.start, e.period.end), (at(START), at(END)));
            Figures {
                sla: e.sla_name.clone(),
                objective: e.objective.clone(),
                tally: e.budget.tally,
                met: e.budget.met(),
            }
        })
        .collect();
    evaluator.sort_by(|a, b| (&a.sla, &a.objective).cmp(&(&b.sla, &b.objective)));
    let expected = oracle(&s, ORACLE).await;
    assert_eq!(evaluator, expected);

    // Not vacuous: each SLA counted its own, the verdicts differ by
    // customer, and the service-wide SLA counted every request.
    let of = |sla: &str, objective: &str| {
        expected
            .iter()
            .find(|f| f.sla == sla && f.objective == objective)
            .unwrap()
            .clone()
    };
    let totals: u64 = ["alpha-sla", "beta-sla", "gamma-sla", "delta-sla"]
        .iter()
        .map(|s| of(s, "availability").tally.total)
        .sum();
    let public = of("public-sla", "availability").tally.total;
    assert!(
        public > totals,
        "unattributed requests count for the service"
    );
    assert!(!of("alpha-sla", "minutes").met && of("beta-sla", "minutes").met);
    assert!(!of("beta-sla", "latency").met && of("alpha-sla", "latency").met);
    assert!(!of("gamma-sla", "availability").met && of("beta-sla", "availability").met);
    assert!(of("delta-sla", "availability").tally.total > 1_000);
    // The same SQL blind to the customer gives other numbers.
    let blind = oracle(
        &s,
        &ORACLE.replace("AND ($3::text IS NULL OR customer = $3) -- CUSTOMER", ""),
    )
    .await;
    assert_ne!(blind, expected);
}

/// An impact policy on `chat` for `customer`; `{SCOPE}` may widen it.
fn impact(name: &str, customer: &str, scope: &str) -> String {
    format!(
        r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: {name}
spec:
  service: chat
  customer: {customer}
{scope}  window: {{calendar: month, timeZone: UTC}}
  objectives:
  - name: availability
    target: 99%
    ratio: {{good: status < 500}}
  credits:
    currency: EUR
    cap: "100000.00"
    impact:
      levels: {{availability: L3}}
"#
    )
}

/// `per_minute` requests a minute for two hours from 10:00 on November
/// 14th, all failing from 10:50 to 11:10.
fn outage(per_minute: i64) -> Vec<Request> {
    let start = at("2026-11-14T10:00:00Z");
    (0..120 * per_minute)
        .map(|i| {
            let occurred_at = start + Duration::microseconds(i * 60_000_000 / per_minute);
            let minute = i / per_minute;
            Request {
                occurred_at,
                received_at: occurred_at,
                status: if (50..70).contains(&minute) { 500 } else { 200 },
            }
        })
        .collect()
}

#[tokio::test]
async fn two_customers_sharing_a_service_are_each_credited_on_their_own_requests() {
    let s = Scenario::new(
        &impact("acme-sla", "acme-corp", ""),
        "2026-11-01",
        "2026-12-02",
    )
    .await;
    s.customers(&["globex"]).await;
    s.apply(&impact("globex-sla", "globex", "")).await;
    // A service-wide promise to globex too: priced on every request.
    s.apply(&impact("globex-public", "globex", "  scope: service\n"))
        .await;
    let (app, admin) = s.app().await;
    s.run("2026-11-01T00:00:00Z").await;
    // The same 20-minute outage hits both; acme-corp sends one request a
    // minute, globex four. acme: 20 requests × 6.0 (L3) × 0.80 EUR =
    // 96.00; globex: 80 × 6.0 × 0.80 = 384.00; the service-wide SLA: the
    // 100 requests of both, 480.00.
    s.insert_of(Some("acme-corp"), &outage(1)).await;
    s.insert_of(Some("globex"), &outage(4)).await;
    s.run("2026-12-01T00:10:00Z").await;
    work_due(&s.db, &Settings::default(), "compensation-test")
        .await
        .unwrap();
    let credits = app
        .list_credits(
            &admin,
            &slaproof_app::credits::CreditQuery::default(),
            &slaproof_app::PageRequest::default(),
        )
        .await
        .unwrap()
        .items;
    let mut by_sla = Vec::new();
    for c in &credits {
        let incidents = &c.computation["computation"]["incidents"];
        by_sla.push((
            c.sla.clone(),
            c.total.clone(),
            incidents[0]["requests"].as_u64(),
            c.computation["inputs"]["priced_on"]["customer"]
                .as_str()
                .map(str::to_owned),
        ));
    }
    by_sla.sort();
    assert_eq!(
        by_sla,
        vec![
            (
                "acme-sla".to_owned(),
                "96.00".to_owned(),
                Some(20),
                Some("acme-corp".to_owned())
            ),
            (
                "globex-public".to_owned(),
                "480.00".to_owned(),
                Some(100),
                None
            ),
            (
                "globex-sla".to_owned(),
                "384.00".to_owned(),
                Some(80),
                Some("globex".to_owned())
            ),
        ]
    );
    // The statement names the requests each was priced on.
    let html = slaproof_app::credit_statement::statement_html(
        &app.credit_statement(&admin, "acme-sla", at("2026-11-01T00:00:00Z"))
            .await
            .unwrap(),
    );
    assert!(
        html.contains("the requests of customer acme-corp on service chat"),
        "{html}"
    );
}
