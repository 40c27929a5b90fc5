//! Gauge values by callback over real HTTP against a real Postgres: values
//! placed at their request's time whether they come before or after its
//! event, counted exactly once by the evaluator into a gauge objective's
//! verdict, bad values named by field, retries idempotent and a different
//! value for a stored request refused.

use std::io::Write;

use chrono::{DateTime, Duration, SecondsFormat, SubsecRound, Utc};
use serde_json::{Value, json};
use slaproof_domain::budget::Tally;
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{EvaluatorError, Settings, TenantRun, evaluate_tenant_up_to};
use slaproof_store::{Database, gauges, ingest_keys, slas, tenants};
use slaproof_tests::{TestApp, spawn_app_with};

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: judged-chat
spec:
  service: chat
  window:
    calendar: month
    timeZone: UTC
  objectives:
  - name: availability
    target: 99%
    ratio:
      good: status < 500
  - name: quality
    target: 90%
    gauge:
      metric: quality_score
      op: gte
      value: 0.7
"#;

/// The application with its own evaluator rounds far apart: the test runs
/// the evaluator itself, at the instants it chooses.
async fn app() -> TestApp {
    spawn_app_with(|c| c.evaluator.interval_secs = 3600).await
}

async fn tenant_with_key(db: &Database, name: &str, sla: Option<&str>) -> (TenantId, String) {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "test").await.unwrap();
    if let Some(doc) = sla {
        slas::apply(&mut tx, &SlaDefinition::from_document(doc).unwrap())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    (tenant, key.reveal().to_owned())
}

fn at(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

struct Reply {
    status: u16,
    body: Value,
}

async fn post(
    app: &TestApp,
    path: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let mut request = reqwest::Client::new()
        .post(format!("http://{}{path}", app.address))
        .body(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("sending a batch");
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    Reply { status, body }
}

async fn post_json(app: &TestApp, path: &str, key: &str, items: &Value) -> Reply {
    post(
        app,
        path,
        Some(key),
        &[("content-type", "application/json")],
        serde_json::to_vec(items).unwrap(),
    )
    .await
}

fn score(request_id: &str, value: f64) -> Value {
    json!({"metric": "quality_score", "service": "chat", "request_id": request_id, "value": value})
}

/// Runs the evaluator for the tenant up to `target`, waiting out a round
/// of the application's own evaluator if one holds the tenant.
async fn evaluate(db: &Database, tenant: TenantId, target: DateTime<Utc>) -> TenantRun {
    let settings = Settings {
        settle_secs: 0,
        ..Settings::default()
    };
    for _ in 0..100 {
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        match evaluate_tenant_up_to(&mut tx, &settings, Some(target)).await {
            Ok(run) => {
                tx.commit().await.unwrap();
                return run;
            }
            Err(EvaluatorError::Busy { .. }) => {
                tx.rollback().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(err) => panic!("evaluating: {err}"),
        }
    }
    panic!("the tenant stayed busy");
}

#[tokio::test]
async fn scores_count_at_their_requests_time_exactly_once_whether_before_or_after_the_event() {
    let app = app().await;
    let (tenant, key) = tenant_with_key(&app.db, "judge", Some(SLA)).await;
    // Twenty requests a few minutes ago (within this month's period unless
    // the test runs in the first minutes of a month).
    // To the microsecond, as stored.
    let base = (Utc::now() - Duration::minutes(10)).trunc_subsecs(6);
    let event = |i: usize| {
        json!({
            "time": at(base + Duration::seconds(i as i64 * 7)),
            "service": "chat", "request_id": format!("r{i}"), "status": 200, "latency_ms": 100
        })
    };
    // Scores of r0..r14 come after their events, those of r15..r19 before.
    let first: Vec<Value> = (0..15).map(event).collect();
    assert_eq!(
        post_json(&app, "/v1/events", &key, &json!(first))
            .await
            .status,
        200
    );
    let after: Vec<Value> = (0..15)
        .map(|i| score(&format!("r{i}"), if i == 3 || i == 7 { 0.5 } else { 0.9 }))
        .collect();
    let early = vec![
        score("r15", 0.69),
        score("r16", 0.7),
        score("r17", 1.0),
        score("r18", 0.75),
        score("r19", 0.8),
        // A request whose event never comes: stored, never counted.
        score("ghost", 0.1),
        // A metric no objective measures: stored, left pending.
        json!({"metric": "helpfulness", "service": "chat", "request_id": "r1", "value": 0.2}),
    ];
    let reply = post_json(&app, "/v1/gauges", &key, &json!(after)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["stored"], 15);
    let reply = post_json(&app, "/v1/gauges", &key, &json!(early)).await;
    assert_eq!(
        (reply.status, reply.body["stored"].as_u64()),
        (200, Some(7))
    );

    // Evaluated before the late events exist: r15..r19 and ghost wait.
    let run = evaluate(&app.db, tenant, Utc::now() + Duration::minutes(2)).await;
    let quality = |run: &TenantRun| {
        run.evaluations
            .iter()
            .find(|e| e.objective == "quality")
            .expect("the gauge objective is evaluated")
            .clone()
    };
    let q = quality(&run);
    assert_eq!(
        q.budget.tally,
        Tally {
            good: 13,
            total: 15
        }
    );
    // Events sent ten minutes after their minute count like the scores:
    // both are judged against the period's close.
    let availability = run
        .evaluations
        .iter()
        .find(|e| e.objective == "availability")
        .unwrap();
    assert_eq!(
        availability.budget.tally,
        Tally {
            good: 15,
            total: 15
        }
    );
    assert_eq!(availability.late, Tally::default());
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    assert_eq!(gauges::pending(&mut tx).await.unwrap(), 7);
    tx.commit().await.unwrap();

    // The late events arrive after that round. (The evaluator ran ahead of
    // the clock above, which in service it never does; it finds requests by
    // reading events from its watermark on, so these are stored as ingest
    // would store them after that round: received after its watermark.)
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    for i in 15..20 {
        sqlx::query(
            "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, request_id, \
                 status, latency_us) \
             VALUES ($1, $2, $3, $4, 'provider', 'chat', $5, 200, 100000)",
        )
        .bind(tenant.uuid())
        .bind(base + Duration::seconds(i as i64 * 7))
        .bind(uuid::Uuid::now_v7())
        .bind(run.advance.as_of + Duration::seconds(1))
        .bind(format!("r{i}"))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let run = evaluate(&app.db, tenant, Utc::now() + Duration::minutes(3)).await;
    let q = quality(&run);
    // 0.69 is under 0.7; 0.7 itself meets `gte 0.7`.
    assert_eq!(
        q.budget.tally,
        Tally {
            good: 17,
            total: 20
        }
    );
    // Every value came after its request's minute, before the period
    // closed: all folded in, none late.
    assert_eq!(q.late_folded, 20);
    assert_eq!(q.late, Tally::default());
    assert!(!q.budget.met(), "85% is under the 90% target");

    // Placed at the request's time, not at the callback's.
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let r16 = gauges::find(&mut tx, "quality_score", "chat", "r16")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r16.occurred_at, Some(base + Duration::seconds(16 * 7)));
    assert!(
        r16.arrived_at.unwrap() > r16.received_at,
        "its event came later"
    );
    assert_eq!(
        gauges::pending(&mut tx).await.unwrap(),
        2,
        "the ghost and the metric no objective measures wait"
    );
    tx.commit().await.unwrap();

    // Another round counts nothing twice.
    let run = evaluate(&app.db, tenant, Utc::now() + Duration::minutes(4)).await;
    assert_eq!(
        quality(&run).budget.tally,
        Tally {
            good: 17,
            total: 20
        }
    );
    app.stop().await.unwrap();
}

#[tokio::test]
async fn a_gauge_sla_applied_after_its_requests_were_rolled_up_still_places_their_scores() {
    let app = app().await;
    let (tenant, key) = tenant_with_key(&app.db, "late-sla", None).await;
    let base = (Utc::now() - Duration::minutes(10)).trunc_subsecs(6);
    let events: Vec<Value> = (0..5)
        .map(|i| {
            json!({
                "time": at(base + Duration::seconds(i * 11)),
                "service": "chat", "request_id": format!("q{i}"), "status": 200
            })
        })
        .collect();
    assert_eq!(
        post_json(&app, "/v1/events", &key, &json!(events))
            .await
            .status,
        200
    );
    // The events are read while no gauge objective exists: no request is
    // noted for gauges then.
    evaluate(&app.db, tenant, Utc::now() + Duration::minutes(2)).await;
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(SLA).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let scores: Vec<Value> = (0..5)
        .map(|i| score(&format!("q{i}"), if i == 2 { 0.5 } else { 0.9 }))
        .collect();
    assert_eq!(
        post_json(&app, "/v1/gauges", &key, &json!(scores))
            .await
            .status,
        200
    );
    // The new version's coverage reaches back over those events: their
    // requests are found behind the watermark.
    let run = evaluate(&app.db, tenant, Utc::now() + Duration::minutes(3)).await;
    let quality = run
        .evaluations
        .iter()
        .find(|e| e.objective == "quality")
        .unwrap();
    assert_eq!(quality.budget.tally, Tally { good: 4, total: 5 });
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    assert_eq!(gauges::pending(&mut tx).await.unwrap(), 0);
    let q1 = gauges::find(&mut tx, "quality_score", "chat", "q1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(q1.occurred_at, Some(base + Duration::seconds(11)));
    tx.commit().await.unwrap();
    app.stop().await.unwrap();
}

#[tokio::test]
async fn requests_whose_events_are_past_retention_are_forgotten() {
    let app = app().await;
    let (tenant, key) = tenant_with_key(&app.db, "retention", Some(SLA)).await;
    let now = Utc::now().trunc_subsecs(6);
    let event = json!([{"time": at(now - Duration::minutes(1)), "service": "chat",
        "request_id": "kept", "status": 200}]);
    assert_eq!(
        post_json(&app, "/v1/events", &key, &event).await.status,
        200
    );
    // A request from before the oldest event partition: its event is gone.
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    sqlx::query(
        "INSERT INTO gauge_requests (tenant_id, service, request_id, occurred_at, received_at) \
         VALUES ($1, 'chat', 'gone', '2020-01-01T00:00:00Z', '2020-01-01T00:00:01Z')",
    )
    .bind(tenant.uuid())
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    evaluate(&app.db, tenant, Utc::now() + Duration::minutes(2)).await;
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let left: Vec<String> =
        sqlx::query_scalar("SELECT request_id FROM gauge_requests ORDER BY request_id")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    assert_eq!(left, ["kept"]);
    tx.commit().await.unwrap();
    app.stop().await.unwrap();
}

#[tokio::test]
async fn bad_values_are_named_retries_are_duplicates_and_a_different_value_is_refused() {
    let app = app().await;
    let (tenant, key) = tenant_with_key(&app.db, "callbacks", None).await;

    let mixed = json!([
        score("a", 0.5),
        {"service": "chat", "request_id": "b", "value": 1},
        {"metric": "quality_score", "service": "chat", "request_id": "c", "value": "high"},
        {"metric": "Quality Score", "service": "chat", "request_id": "d", "value": 1},
        {"metric": "quality_score", "service": "chat", "value": 1},
        {"metric": "quality_score", "service": "chat", "request_id": "e", "value": 1,
         "time": at(Utc::now() + Duration::hours(1))},
        score("f", 0.25),
    ]);
    let reply = post_json(&app, "/v1/gauges", &key, &mixed).await;
    assert_eq!(reply.status, 207, "{}", reply.body);
    assert_eq!(reply.body["stored"], 2);
    assert_eq!(reply.body["rejected"], 5);
    let errors: Vec<(u64, &str)> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["index"].as_u64().unwrap(), e["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        errors,
        [
            (1, "metric"),
            (2, "value"),
            (3, "metric"),
            (4, "request_id"),
            (5, "time")
        ]
    );

    // Atomic: one bad value and nothing is stored.
    let reply = post(
        &app,
        "/v1/gauges?atomic=true",
        Some(&key),
        &[("content-type", "application/json")],
        serde_json::to_vec(&json!([score("g", 1.0), {"metric": "quality_score"}])).unwrap(),
    )
    .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.body["type"].as_str().unwrap().rsplit('/').next(),
        Some("invalid-gauges")
    );

    // A retry is a duplicate, as NDJSON and gzip too.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for v in [score("a", 0.5), score("f", 0.25), score("h", 0.75)] {
        writeln!(gz, "{v}").unwrap();
    }
    let reply = post(
        &app,
        "/v1/gauges",
        Some(&key),
        &[
            ("content-type", "application/x-ndjson"),
            ("content-encoding", "gzip"),
        ],
        gz.finish().unwrap(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        (
            reply.body["stored"].as_u64(),
            reply.body["duplicates"].as_u64()
        ),
        (Some(1), Some(2))
    );

    // A different value for a stored request: refused, the first kept.
    let reply = post_json(&app, "/v1/gauges", &key, &json!([score("a", 0.9)])).await;
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(reply.body["errors"][0]["field"], "value");
    let reply = post_json(
        &app,
        "/v1/gauges",
        &key,
        &json!([score("i", 0.9), score("a", 0.9)]),
    )
    .await;
    assert_eq!(reply.status, 207, "{}", reply.body);
    assert_eq!(
        (
            reply.body["stored"].as_u64(),
            reply.body["rejected"].as_u64()
        ),
        (Some(1), Some(1))
    );
    // Atomic with a conflict: refused whole, the new value not stored.
    let reply = post(
        &app,
        "/v1/gauges?atomic=true",
        Some(&key),
        &[("content-type", "application/json")],
        serde_json::to_vec(&json!([score("j", 0.9), score("a", 0.9)])).unwrap(),
    )
    .await;
    assert_eq!(reply.status, 409, "{}", reply.body);

    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let a = gauges::find(&mut tx, "quality_score", "chat", "a")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.value, 0.5);
    assert!(
        gauges::find(&mut tx, "quality_score", "chat", "j")
            .await
            .unwrap()
            .is_none()
    );
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM gauge_values")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(count, 4, "a, f, h and i");
    tx.commit().await.unwrap();

    // No key, no values.
    let reply = post(
        &app,
        "/v1/gauges",
        None,
        &[("content-type", "application/json")],
        b"[]".to_vec(),
    )
    .await;
    assert_eq!(reply.status, 401);
    app.stop().await.unwrap();
}

const MONTHLY: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: judged-monthly
spec:
  service: chat
  window:
    calendar: month
    timeZone: UTC
  objectives:
  - name: availability
    target: 99%
    ratio:
      good: status < 500
  - name: quality
    target: 90%
    gauge:
      metric: quality_score
      op: gte
      value: 0.7
"#;

const ROLLING: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: judged-rolling
spec:
  service: chat
  window:
    rolling: 2d
  objectives:
  - name: few-bad-scores
    target: 80%
    gauge:
      metric: quality_score
      op: gt
      value: 0.3
"#;

/// A random scenario across a month's end: requests with random arrival
/// delays, scores that come before their event or hours after it (some for
/// requests that never arrive), maintenance windows, a second SLA applied
/// midway, and the evaluator advanced in random steps.
#[derive(Debug, Clone)]
struct Scenario {
    /// (occurred offset s, event arrival delay s, score in hundredths,
    /// score arrival offset from the request s, the event is sent)
    requests: Vec<(i64, i64, u8, i64, bool)>,
    windows: Vec<(i64, i64)>,
    steps: Vec<i64>,
    second_after: usize,
}

fn scenario() -> impl proptest::strategy::Strategy<Value = Scenario> {
    use proptest::prelude::*;
    (
        prop::collection::vec(
            (
                0i64..6 * 3600,
                0i64..900,
                0u8..=100,
                -600i64..5 * 3600,
                prop::bool::weighted(0.9),
            ),
            0..200,
        ),
        prop::collection::vec((0i64..6 * 3600, 1i64..2 * 3600), 0..3),
        prop::collection::vec(600i64..3 * 3600, 1..6),
        0usize..6,
    )
        .prop_map(|(requests, windows, steps, second_after)| Scenario {
            requests,
            windows,
            steps,
            second_after,
        })
}

async fn check_scenario(db: &Database, index: usize, s: Scenario) {
    use slaproof_evaluator::recount::recount;
    use slaproof_tests::maintenance;

    let tenant = tenants::create(db, &format!("p{index}"), &format!("p{index}"))
        .await
        .unwrap()
        .id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::apply(&mut tx, &SlaDefinition::from_document(MONTHLY).unwrap())
        .await
        .unwrap()
        .sla;
    // Three hours before November ends, so scores of November's requests
    // come after its close, late.
    let base: DateTime<Utc> = "2026-11-30T21:00:00Z".parse().unwrap();
    for &(start, length) in &s.windows {
        let start = base + Duration::seconds(start) + Duration::milliseconds(start % 997);
        maintenance::agreed(&mut tx, sla, start, start + Duration::seconds(length), "m")
            .await
            .unwrap();
    }
    for (i, &(offset, delay, score, score_offset, sent)) in s.requests.iter().enumerate() {
        let occurred = base + Duration::seconds(offset) + Duration::milliseconds(i as i64 % 1000);
        let request = format!("r{i}");
        if sent {
            sqlx::query(
                "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, request_id, status) \
                 VALUES ($1, $2, $3, $4, 'provider', 'chat', $5, 200)",
            )
            .bind(tenant.uuid())
            .bind(occurred)
            .bind(uuid::Uuid::now_v7())
            .bind(occurred + Duration::seconds(delay))
            .bind(&request)
            .execute(&mut *tx)
            .await
            .unwrap();
        }
        sqlx::query(
            "INSERT INTO gauge_values (tenant_id, metric, service, request_id, value, received_at) \
             VALUES ($1, 'quality_score', 'chat', $2, $3, $4)",
        )
        .bind(tenant.uuid())
        .bind(&request)
        .bind(f64::from(score) / 100.0)
        .bind(occurred + Duration::seconds(score_offset))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    let settings = Settings {
        grace_secs: 300,
        settle_secs: 0,
        ..Settings::default()
    };
    let mut as_of = base;
    let mut checked = 0;
    for (i, step) in s.steps.iter().enumerate() {
        if i == s.second_after.min(s.steps.len() - 1) {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            slas::apply(&mut tx, &SlaDefinition::from_document(ROLLING).unwrap())
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
        as_of += Duration::seconds(*step);
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        let run = evaluate_tenant_up_to(&mut tx, &settings, Some(as_of))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let as_of = run.advance.as_of;
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        let (tracked, _) = slaproof_evaluator::rollup::track(&mut tx, as_of)
            .await
            .unwrap();
        assert!(
            run.evaluations.iter().any(|e| e.objective == "quality"),
            "the gauge objective is evaluated; failed: {:?}",
            run.failed_slas
        );
        let frozen = run.closed.iter().map(|c| &c.evaluation);
        for evaluation in run.evaluations.iter().chain(frozen) {
            let sla = tracked.iter().find(|t| t.id == evaluation.sla).unwrap();
            let expected = recount(
                &mut tx,
                sla,
                &evaluation.objective,
                evaluation.period.start,
                evaluation.period.end.min(as_of),
                as_of,
                settings.grace(),
            )
            .await
            .unwrap();
            let context = format!("{} / {} as of {as_of}", sla.name, evaluation.objective);
            assert_eq!(evaluation.budget.tally, expected.tally, "tally: {context}");
            assert_eq!(
                evaluation.excluded, expected.excluded,
                "excluded: {context}"
            );
            assert_eq!(
                evaluation.late_folded, expected.late_folded,
                "late folded: {context}"
            );
            assert_eq!(evaluation.late, expected.late, "late: {context}");
            checked += 1;
        }
        tx.commit().await.unwrap();
    }
    assert!(checked > 0);
}

#[test]
fn gauge_rollups_equal_a_recount_from_scratch() {
    use proptest::prelude::*;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(slaproof_tests::TestDatabase::create());
    let db = runtime.block_on(async {
        let db = database.service_database().await;
        slaproof_store::partitions::ensure(
            &db,
            "2026-11-30".parse().unwrap(),
            "2026-12-01".parse().unwrap(),
        )
        .await
        .unwrap();
        db
    });
    let index = std::cell::Cell::new(0);
    proptest!(ProptestConfig { cases: 16, ..ProptestConfig::default() }, |(s in scenario())| {
        index.set(index.get() + 1);
        runtime.block_on(check_scenario(&db, index.get(), s));
    });
}

/// A value pending past the limit is expired by the evaluator, marked and
/// kept (not deleted); a fresh one is not; and an expired value never
/// counts, even when its request's event arrives after. The limit is the
/// round's (`PENDING_LIMIT`, 400 days); here `expire` runs with a short one
/// so a value received minutes ago is "old", and then the evaluator's own
/// round must leave it out.
#[tokio::test]
async fn values_pending_too_long_expire_and_never_count_even_when_their_event_comes() {
    let app = app().await;
    let (tenant, key) = tenant_with_key(&app.db, "judge", Some(SLA)).await;
    let now = Utc::now().trunc_subsecs(6);
    // "old" was received ten minutes ago, "fresh" now.
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    sqlx::query(
        "INSERT INTO gauge_values (tenant_id, metric, service, request_id, value, received_at) \
         VALUES ($1, 'quality_score', 'chat', 'old', 0.9, $2)",
    )
    .bind(tenant.uuid())
    .bind(now - Duration::minutes(10))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let reply = post_json(&app, "/v1/gauges", &key, &json!([score("fresh", 0.9)])).await;
    assert_eq!(reply.status, 200, "{}", reply.body);

    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let expired = slaproof_evaluator::gauge::expire(&mut tx, Utc::now(), Duration::minutes(5))
        .await
        .unwrap();
    assert_eq!(expired, 1);
    let old = gauges::find(&mut tx, "quality_score", "chat", "old")
        .await
        .unwrap()
        .expect("an expired value is kept");
    assert!(old.expired_at.is_some(), "{old:?}");
    let fresh = gauges::find(&mut tx, "quality_score", "chat", "fresh")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fresh.expired_at, None);
    assert_eq!(gauges::pending(&mut tx).await.unwrap(), 1);
    assert_eq!(gauges::expired(&mut tx).await.unwrap(), 1);
    // Expiring again changes nothing.
    assert_eq!(
        slaproof_evaluator::gauge::expire(&mut tx, Utc::now(), Duration::minutes(5))
            .await
            .unwrap(),
        0
    );
    tx.commit().await.unwrap();

    // Both requests' events arrive now; a round places "fresh" only.
    let events: Vec<Value> = ["old", "fresh"]
        .iter()
        .map(|r| {
            json!({"time": at(now - Duration::seconds(30)), "service": "chat",
                   "request_id": r, "status": 200, "latency_ms": 100})
        })
        .collect();
    assert_eq!(
        post_json(&app, "/v1/events", &key, &json!(events))
            .await
            .status,
        200
    );
    let run = evaluate(&app.db, tenant, Utc::now() + Duration::minutes(2)).await;
    let quality = run
        .evaluations
        .iter()
        .find(|e| e.objective == "quality")
        .expect("the gauge objective is evaluated");
    assert_eq!(quality.budget.tally, Tally { good: 1, total: 1 });
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let old = gauges::find(&mut tx, "quality_score", "chat", "old")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (old.attributed_at, old.occurred_at),
        (None, None),
        "{old:?}"
    );
    assert!(old.expired_at.is_some());
    let fresh = gauges::find(&mut tx, "quality_score", "chat", "fresh")
        .await
        .unwrap()
        .unwrap();
    assert!(fresh.attributed_at.is_some(), "{fresh:?}");
    assert_eq!(gauges::pending(&mut tx).await.unwrap(), 0);
    tx.commit().await.unwrap();
    app.stop().await.unwrap();
}
