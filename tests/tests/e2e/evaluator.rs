//! The evaluator against a real database: exact verdicts with maintenance
//! and thresholds, incremental rollups equal to a recount from scratch on
//! random streams with late events, and two instances sharing tenants.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use proptest::prelude::*;
use slaproof_domain::budget::Tally;
use slaproof_domain::composite::{ObjectiveCounts, combine};
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::recount::recount;
use slaproof_evaluator::{Settings, TrackedSla, evaluate_tenant_up_to, rollup, work_due};
use slaproof_store::evaluations;
use slaproof_store::{Database, partitions, slas, tenants};
use slaproof_tests::TestDatabase;

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
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
  - name: latency-p90
    target: 90%
    threshold:
      field: latency
      op: lte
      value: 800ms
"#;

/// [`SLA`] with weights: it has a composite (availability weighs 3).
const WEIGHTED_SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  window:
    calendar: month
    timeZone: UTC
  objectives:
  - name: availability
    target: 99%
    weight: 3
    ratio:
      good: status < 500
  - name: latency-p90
    target: 90%
    threshold:
      field: latency
      op: lte
      value: 800ms
"#;

const SECOND_SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-rolling
spec:
  service: chat
  window:
    rolling: 2d
  objectives:
  - name: fast-success
    target: 95%
    ratio:
      good: status < 500 and latency_ms <= 500
      total: model == "big"
"#;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// One event to insert, with its arrival time.
#[derive(Debug, Clone)]
struct Ev {
    occurred_at: DateTime<Utc>,
    received_at: DateTime<Utc>,
    service: &'static str,
    model: &'static str,
    status: i32,
    latency_us: Option<i64>,
}

fn settings() -> Settings {
    Settings {
        grace_secs: 300,
        settle_secs: 0,
        ..Settings::default()
    }
}

async fn insert_events(db: &Database, tenant: TenantId, events: &[Ev]) {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for chunk in events.chunks(5_000) {
        let occurred: Vec<_> = chunk.iter().map(|e| e.occurred_at).collect();
        let received: Vec<_> = chunk.iter().map(|e| e.received_at).collect();
        let ids: Vec<_> = chunk.iter().map(|_| uuid::Uuid::now_v7()).collect();
        let service: Vec<_> = chunk.iter().map(|e| e.service.to_owned()).collect();
        let model: Vec<_> = chunk.iter().map(|e| e.model.to_owned()).collect();
        let status: Vec<_> = chunk.iter().map(|e| e.status).collect();
        let latency: Vec<_> = chunk.iter().map(|e| e.latency_us).collect();
        sqlx::query(
            // Every request served acme-corp: the customer of the SLAs
            // that have one, and counted by the service-wide ones too.
            "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, status, latency_us, customer) \
             SELECT $1, o, i, r, 'provider', s, m, st, l, 'acme-corp' FROM UNNEST($2::timestamptz[], $3::uuid[], \
                 $4::timestamptz[], $5::text[], $6::text[], $7::int4[], $8::int8[]) AS t(o, i, r, s, m, st, l)",
        )
        .bind(tenant.uuid())
        .bind(&occurred)
        .bind(&ids)
        .bind(&received)
        .bind(&service)
        .bind(&model)
        .bind(&status)
        .bind(&latency)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

async fn tenant_with_sla(db: &Database, name: &str, documents: &[&str]) -> TenantId {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for doc in documents {
        slas::apply(&mut tx, &SlaDefinition::from_document(doc).unwrap())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    tenant
}

async fn ensure_days(db: &Database, from: NaiveDate, to: NaiveDate) {
    partitions::ensure(db, from, to).await.unwrap();
}

#[tokio::test]
async fn verdicts_are_exact_counts_with_maintenance_excluded_and_the_threshold_good() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-11-30".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;

    let base = at("2026-11-10T10:00:00Z");
    let mut events = Vec::new();
    // 1000 events, one per 3 s from 10:00: 990 good; latency 800 ms exactly
    // on 900 (good: at the threshold), 800.001 ms on 100 (bad).
    for i in 0..1000i64 {
        let occurred_at = base + Duration::seconds(3 * i);
        events.push(Ev {
            occurred_at,
            received_at: occurred_at + Duration::seconds(1),
            service: "chat",
            model: "big",
            status: if i % 100 == 7 { 503 } else { 200 },
            latency_us: Some(if i % 10 == 3 { 800_001 } else { 800_000 }),
        });
    }
    // Another service's events never count.
    events.push(Ev {
        service: "embeddings",
        status: 500,
        ..events[0].clone()
    });
    // During maintenance [10:20:30, 10:25:10): 30 bad events that must not count.
    for i in 0..30i64 {
        let occurred_at = at("2026-11-10T10:20:30Z") + Duration::seconds(9 * i);
        events.push(Ev {
            occurred_at,
            received_at: occurred_at,
            service: "chat",
            model: "big",
            status: 500,
            latency_us: Some(9_000_000),
        });
    }
    insert_events(&db, tenant, &events).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
    slaproof_tests::maintenance::agreed(
        &mut tx,
        sla.id,
        at("2026-11-10T10:20:30Z"),
        at("2026-11-10T10:25:10Z"),
        "upgrade",
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at("2026-11-10T12:00:00Z")))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    assert_eq!(run.advance.as_of, at("2026-11-10T12:00:00Z"));
    let by_name: BTreeMap<_, _> = run
        .evaluations
        .iter()
        .map(|e| (e.objective.as_str(), e))
        .collect();
    // The maintenance window covers 93 of the regular events' 3-second slots too.
    let in_maintenance = (0..1000i64)
        .filter(|i| {
            let t = base + Duration::seconds(3 * i);
            t >= at("2026-11-10T10:20:30Z") && t < at("2026-11-10T10:25:10Z")
        })
        .collect::<Vec<_>>();
    let kept: Vec<i64> = (0..1000i64)
        .filter(|i| !in_maintenance.contains(i))
        .collect();
    let availability = by_name["availability"];
    assert_eq!(availability.period.start, at("2026-11-01T00:00:00Z"));
    assert_eq!(availability.period.end, at("2026-12-01T00:00:00Z"));
    assert_eq!(
        availability.budget.tally,
        Tally {
            good: kept.iter().filter(|i| *i % 100 != 7).count() as u64,
            total: kept.len() as u64
        }
    );
    assert_eq!(
        availability.excluded.total,
        in_maintenance.len() as u64 + 30
    );
    let latency = by_name["latency-p90"];
    assert_eq!(
        latency.budget.tally,
        Tally {
            good: kept.iter().filter(|i| *i % 10 != 3).count() as u64,
            total: kept.len() as u64
        }
    );
    // 90% target, exactly 10% over the threshold: the budget is exactly
    // spent and still met.
    assert!(latency.budget.met());

    // Explainability: the stored record reads back the same numbers.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let stored = evaluations::latest(&mut tx, sla.id).await.unwrap();
    tx.commit().await.unwrap();
    let stored_availability = stored
        .iter()
        .find(|e| e.objective == "availability")
        .unwrap();
    assert_eq!(
        stored_availability.good as u64,
        availability.budget.tally.good
    );
    assert_eq!(
        stored_availability.total as u64,
        availability.budget.tally.total
    );
    assert_eq!(
        stored_availability.excluded as u64,
        availability.excluded.total
    );
    assert_eq!(
        stored_availability.budget_consumed as u64,
        availability.budget.consumed()
    );
    assert_eq!(stored_availability.met, availability.budget.met());
}

#[tokio::test]
async fn events_arriving_after_their_minute_are_folded_in_while_the_month_is_open() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-11-30".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    let t = at("2026-11-10T10:00:30Z");
    let ev = |received_at, status| Ev {
        occurred_at: t,
        received_at,
        service: "chat",
        model: "big",
        status,
        latency_us: Some(1),
    };
    insert_events(
        &db,
        tenant,
        &[
            ev(t, 200),
            ev(at("2026-11-10T10:04:00Z"), 500), // folded: 3 min after its minute
            // 8 min after its minute, past the old per-minute grace: the
            // month is open, so it counts (evaluator_lateness.rs has what
            // arrives after the close).
            ev(at("2026-11-10T10:09:00Z"), 500),
        ],
    )
    .await;
    // The first run sees only the on-time event; the later ones arrive after it.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let first = evaluate_tenant_up_to(&mut tx, &settings(), Some(at("2026-11-10T10:02:00Z")))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let a = first
        .evaluations
        .iter()
        .find(|e| e.objective == "availability")
        .unwrap();
    assert_eq!(a.budget.tally, Tally { good: 1, total: 1 });

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let second = evaluate_tenant_up_to(&mut tx, &settings(), Some(at("2026-11-10T10:30:00Z")))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let a = second
        .evaluations
        .iter()
        .find(|e| e.objective == "availability")
        .unwrap();
    assert_eq!(a.budget.tally, Tally { good: 1, total: 3 });
    assert_eq!(a.late_folded, 2);
    assert_eq!(a.late, Tally::default());
}

/// A random scenario: events over six hours with random arrival delays,
/// random maintenance windows, a second SLA applied midway (backfilled),
/// and the watermark advanced in random steps.
#[derive(Debug, Clone)]
struct Scenario {
    events: Vec<(i64, i64, u8, u32, bool)>,
    windows: Vec<(i64, i64)>,
    steps: Vec<i64>,
    second_after: usize,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        // (occurred offset s, arrival delay s, status class, latency ms, big model)
        prop::collection::vec(
            (
                0i64..6 * 3600,
                0i64..1200,
                0u8..10,
                0u32..1200,
                any::<bool>(),
            ),
            0..400,
        ),
        prop::collection::vec((0i64..6 * 3600, 1i64..3 * 3600), 0..4),
        prop::collection::vec(1i64..3 * 3600, 1..5),
        0usize..5,
    )
        .prop_map(|(events, windows, steps, second_after)| Scenario {
            events,
            windows,
            steps,
            second_after,
        })
}

async fn check_scenario(db: &Database, index: usize, s: Scenario) {
    let base = at("2026-11-12T00:00:00Z");
    let tenant = tenant_with_sla(db, &format!("prop-{index}"), &[WEIGHTED_SLA]).await;
    let events: Vec<Ev> = s
        .events
        .iter()
        .map(|&(offset, delay, class, latency_ms, big)| {
            // Milliseconds off the minute, so some events sit on boundaries.
            let occurred_at = base
                + Duration::seconds(offset)
                + Duration::milliseconds(i64::from(latency_ms % 7) * 100);
            Ev {
                occurred_at,
                received_at: occurred_at + Duration::seconds(delay),
                service: if class == 9 { "other" } else { "chat" },
                model: if big { "big" } else { "small" },
                status: if class < 2 { 503 } else { 200 },
                // 800 ms exactly is common: the threshold boundary.
                latency_us: (class != 8).then_some(if latency_ms % 5 == 0 {
                    800_000
                } else {
                    i64::from(latency_ms) * 1000
                }),
            }
        })
        .collect();
    insert_events(db, tenant, &events).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
    for &(start, length) in &s.windows {
        let start = base + Duration::seconds(start) + Duration::milliseconds(start % 997);
        slaproof_tests::maintenance::agreed(
            &mut tx,
            sla.id,
            start,
            start + Duration::seconds(length),
            "m",
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    let mut as_of = base;
    let mut last = None;
    for (i, step) in s.steps.iter().enumerate() {
        if i == s.second_after.min(s.steps.len() - 1) {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            slas::apply(&mut tx, &SlaDefinition::from_document(SECOND_SLA).unwrap())
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
        as_of += Duration::seconds(*step);
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        last = Some(
            evaluate_tenant_up_to(&mut tx, &settings(), Some(as_of))
                .await
                .unwrap(),
        );
        tx.commit().await.unwrap();
    }
    let run = last.unwrap();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let (tracked, _) = rollup::track(&mut tx, run.advance.as_of).await.unwrap();
    for evaluation in &run.evaluations {
        let sla: &TrackedSla = tracked.iter().find(|t| t.id == evaluation.sla).unwrap();
        let to = evaluation.period.end.min(run.advance.as_of);
        let expected = recount(
            &mut tx,
            sla,
            &evaluation.objective,
            evaluation.period.start,
            to,
            run.advance.as_of,
            settings().grace(),
        )
        .await
        .unwrap();
        let context = format!(
            "{} / {} as of {}",
            sla.name, evaluation.objective, run.advance.as_of
        );
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
        // The burn-rate lookbacks are sums over their own ranges: the same
        // numbers as recounting those ranges.
        for check in &evaluation.alerts {
            for (lookback, tally) in [
                (check.rule.long_window, check.long),
                (check.rule.short_window, check.short),
            ] {
                let from = (run.advance.as_of - lookback).max(sla.covers_from);
                let expected = recount(
                    &mut tx,
                    sla,
                    &evaluation.objective,
                    from,
                    run.advance.as_of,
                    run.advance.as_of,
                    settings().grace(),
                )
                .await
                .unwrap();
                assert_eq!(
                    tally, expected.tally,
                    "{} over {lookback}: {context}",
                    check.rule.name
                );
            }
        }
    }
    assert_eq!(
        run.evaluations.len(),
        3,
        "both SLAs' objectives are evaluated"
    );
    // The composite (only the weighted SLA has one) equals the domain's
    // combination of the recounted objectives.
    assert_eq!(run.composites.len(), 1);
    let composite = &run.composites[0];
    let sla: &TrackedSla = tracked.iter().find(|t| t.id == composite.sla).unwrap();
    let mut parts = Vec::new();
    for objective in &sla.definition.objectives {
        let expected = recount(
            &mut tx,
            sla,
            objective.name.as_str(),
            composite.period.start,
            composite.period.end.min(run.advance.as_of),
            run.advance.as_of,
            settings().grace(),
        )
        .await
        .unwrap();
        parts.push(ObjectiveCounts {
            weight: objective.weight.unwrap_or_default(),
            target: objective.target,
            good: expected.tally.good,
            total: expected.tally.total,
        });
    }
    assert_eq!(
        composite.result,
        combine(&parts),
        "composite of {}",
        sla.name
    );
    let stored: (i64, Option<bool>) =
        sqlx::query_as("SELECT consumed_pico, met FROM composite_evaluations WHERE id = $1")
            .bind(composite.id)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    assert_eq!(stored, (composite.consumed_pico(), composite.met()));
    tx.commit().await.unwrap();
}

#[test]
fn incremental_rollups_equal_a_recount_from_scratch() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(TestDatabase::create());
    let db = runtime.block_on(async {
        let db = database.service_database().await;
        ensure_days(
            &db,
            "2026-11-11".parse().unwrap(),
            "2026-11-13".parse().unwrap(),
        )
        .await;
        db
    });
    let index = std::cell::Cell::new(0);
    proptest!(ProptestConfig { cases: 24, ..ProptestConfig::default() }, |(s in scenario())| {
        index.set(index.get() + 1);
        runtime.block_on(check_scenario(&db, index.get(), s));
    });
}

#[tokio::test]
async fn two_instances_share_tenants_and_agree_with_one() {
    // Both arrangements use the same instant: which events are late
    // depends on where `now` falls within its minute.
    async fn arrange(db: &Database, now: chrono::DateTime<Utc>) -> Vec<TenantId> {
        let today = now.date_naive();
        ensure_days(db, today - chrono::Days::new(1), today).await;
        let mut out = Vec::new();
        for t in 0..6 {
            let tenant = tenant_with_sla(db, &format!("tenant-{t}"), &[SLA, SECOND_SLA]).await;
            let events: Vec<Ev> = (0..200i64)
                .map(|i| {
                    let occurred_at = now - Duration::minutes(30) + Duration::seconds(7 * i);
                    Ev {
                        occurred_at,
                        received_at: now - Duration::minutes(30) + Duration::seconds(7 * 200),
                        service: "chat",
                        model: if i % 3 == 0 { "big" } else { "small" },
                        status: if (i + t) % 17 == 0 { 500 } else { 200 },
                        latency_us: Some((i * 7919 + t * 104_729) % 1_500_000),
                    }
                })
                .collect();
            insert_events(db, tenant, &events).await;
            out.push(tenant);
        }
        out
    }
    type Summary = BTreeMap<(usize, String), (Tally, Tally)>;
    fn summarize(tenants: &[TenantId], runs: &[slaproof_evaluator::TenantRun]) -> Summary {
        let mut out = BTreeMap::new();
        for run in runs {
            let t = tenants.iter().position(|x| *x == run.tenant).unwrap();
            for e in &run.evaluations {
                out.insert(
                    (t, format!("{}/{}", e.sla_name, e.objective)),
                    (e.budget.tally, e.late),
                );
            }
        }
        out
    }

    // Two instances: two pools, two workers, one database.
    let shared = TestDatabase::create().await;
    let first = shared.service_database().await;
    let second = shared.service_database().await;
    let now = Utc::now();
    let tenants = arrange(&first, now).await;
    slaproof_evaluator::schedule_all(&first).await.unwrap();
    let settings = Settings {
        batch: 1,
        ..settings()
    };
    let (a, b) = tokio::join!(
        work_due(&first, &settings, "instance-a"),
        work_due(&second, &settings, "instance-b")
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(
        a.failures.is_empty() && b.failures.is_empty(),
        "{:?} {:?}",
        a.failures,
        b.failures
    );
    let mut runs = a.runs.clone();
    runs.extend(b.runs.clone());
    let mut evaluated: Vec<_> = runs.iter().map(|r| r.tenant).collect();
    evaluated.sort();
    let mut expected = tenants.clone();
    expected.sort();
    assert_eq!(evaluated, expected, "every tenant once, none twice");

    // One instance on its own database with the same data.
    let alone = TestDatabase::create().await;
    let single = alone.service_database().await;
    let single_tenants = arrange(&single, now).await;
    slaproof_evaluator::schedule_all(&single).await.unwrap();
    let one = work_due(&single, &settings, "alone").await.unwrap();
    assert!(one.failures.is_empty());
    let together = summarize(&tenants, &runs);
    assert_eq!(together.len(), 6 * 3);
    assert_eq!(together, summarize(&single_tenants, &one.runs));
}

#[tokio::test]
async fn the_application_runs_the_evaluator() {
    let app = slaproof_tests::spawn_app_with(|c| {
        c.evaluator.interval_secs = 1;
        c.evaluator.settle_secs = 0;
    })
    .await;
    let today = Utc::now().date_naive();
    ensure_days(&app.db, today - chrono::Days::new(1), today).await;
    let tenant = tenant_with_sla(&app.db, "acme", &[SLA]).await;
    let received_at = Utc::now() - Duration::minutes(5);
    let events: Vec<Ev> = (0..50i64)
        .map(|i| Ev {
            occurred_at: received_at - Duration::seconds(i),
            received_at,
            service: "chat",
            model: "big",
            status: if i == 0 { 500 } else { 200 },
            latency_us: Some(1_000),
        })
        .collect();
    insert_events(&app.db, tenant, &events).await;
    // Not a speed check: a bound so that a broken worker fails the test
    // rather than hanging it (30 s proved too short on a loaded box).
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let mut tx = app.db.tenant_tx(tenant).await.unwrap();
        let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
        let latest = evaluations::latest(&mut tx, sla.id).await.unwrap();
        tx.commit().await.unwrap();
        let availability = latest.iter().find(|e| e.objective == "availability");
        // Events may straddle the month boundary only if this runs at midnight
        // on the 1st; the count is then lower, never higher.
        if let Some(e) = availability.filter(|e| e.total > 0) {
            assert!(e.total <= 50 && e.good == e.total - 1, "{e:?}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no evaluation within 120 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    app.stop().await.unwrap();
}

async fn outbox_types(db: &Database, tenant: TenantId) -> Vec<(String, serde_json::Value)> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rows: Vec<(String, serde_json::Value)> =
        sqlx::query_as("SELECT event_type, payload FROM outbox ORDER BY seq")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    rows
}

#[tokio::test]
async fn alerts_breaches_and_period_close_are_told_once_and_corrections_supersede() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-12-02".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    // Ten hours of one event every 10 s up to 12:00; 5% fail, and in the
    // last hour 25% fail (a 25× burn of the 1% budget).
    let end = at("2026-11-20T12:00:00Z");
    let events: Vec<Ev> = (1..=3600i64)
        .map(|i| {
            let occurred_at = end - Duration::seconds(10 * i);
            let failing = if i <= 360 { i % 4 == 0 } else { i % 20 == 0 };
            Ev {
                occurred_at,
                received_at: occurred_at,
                service: "chat",
                model: "big",
                status: if failing { 503 } else { 200 },
                latency_us: Some(1_000),
            }
        })
        .collect();
    insert_events(&db, tenant, &events).await;
    let evaluate = |as_of: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
                .await
                .unwrap();
            tx.commit().await.unwrap();
            run
        }
    };

    evaluate("2026-11-20T12:00:00Z").await;
    let told = outbox_types(&db, tenant).await;
    let kinds: Vec<_> = told
        .iter()
        .map(|(t, p)| {
            format!(
                "{t} {}",
                p["rule"]
                    .as_str()
                    .unwrap_or(p["objective"].as_str().unwrap())
            )
        })
        .collect();
    assert!(
        kinds.contains(&"slo.burn_rate_alert page-1h".to_owned()),
        "{kinds:?}"
    );
    // 252 bad of 3,600 while the month is expected to hold about 5,500
    // (1% = 55 allowed): exhausted at the expected volume, and at risk.
    assert!(
        kinds.contains(&"slo.budget_exhausted availability".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"slo.at_risk availability".to_owned()),
        "{kinds:?}"
    );
    // A breach is a closed period not met: nothing of it while open.
    assert!(
        !kinds.iter().any(|k| k.starts_with("sla.breached")),
        "{kinds:?}"
    );
    let page = told
        .iter()
        .find(|(t, p)| t == "slo.burn_rate_alert" && p["rule"] == "page-1h")
        .unwrap();
    assert_eq!(page.1["state"], "firing");
    assert_eq!(page.1["longBurnRateMilli"], 25_000);

    // Told once: the same state again says nothing new.
    evaluate("2026-11-20T12:01:00Z").await;
    assert_eq!(outbox_types(&db, tenant).await.len(), told.len());

    // After the month and its grace: the alerts resolve, the period closes.
    let run = evaluate("2026-12-01T00:10:00Z").await;
    assert_eq!(run.closed.len(), 2);
    assert!(run.closed.iter().all(|c| c.revision == 1));
    let availability = run
        .closed
        .iter()
        .find(|c| c.evaluation.objective == "availability")
        .unwrap();
    assert_eq!(
        availability.evaluation.budget.tally,
        Tally {
            good: 3600 - 90 - 162,
            total: 3600
        }
    );
    assert!(!availability.evaluation.budget.met());
    let after = outbox_types(&db, tenant).await;
    let new: Vec<_> = after[told.len()..]
        .iter()
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(
        new.iter().filter(|t| **t == "sla.period_closed").count(),
        2,
        "{new:?}"
    );
    // The month missed availability (latency was met): one breach, told
    // at the close with its revision.
    let breaches: Vec<_> = after[told.len()..]
        .iter()
        .filter(|(t, _)| t == "sla.breached")
        .collect();
    assert_eq!(breaches.len(), 1, "{new:?}");
    assert_eq!(breaches[0].1["objective"], "availability");
    assert_eq!(breaches[0].1["revision"], 1);
    assert_eq!(breaches[0].1["periodStart"], "2026-11-01T00:00:00Z");
    assert!(new.contains(&"slo.burn_rate_alert"), "resolved: {new:?}");

    // Closing again changes nothing.
    assert!(evaluate("2026-12-01T00:11:00Z").await.closed.is_empty());

    // Maintenance declared afterwards over the bad last hour is an
    // emergency window: it counts against the provider and corrects
    // nothing...
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
    let window = slaproof_tests::maintenance::announced(
        &mut tx,
        Some(sla.id),
        end - Duration::hours(1),
        end,
        "retroactive",
        Utc::now(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(evaluate("2026-12-01T00:12:00Z").await.closed.is_empty());
    // ...until the customer accepts it: a correction supersedes the frozen
    // result with revision 2; revision 1 stays.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slaproof_tests::maintenance::customer_accepts(&mut tx, window.id, sla.id)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let run = evaluate("2026-12-01T00:13:00Z").await;
    let corrected = run
        .closed
        .iter()
        .find(|c| c.evaluation.objective == "availability")
        .unwrap();
    assert_eq!(corrected.revision, 2);
    assert_eq!(
        corrected.evaluation.budget.tally,
        Tally {
            good: 3240 - 162,
            total: 3240
        }
    );
    assert_eq!(corrected.evaluation.excluded.total, 360);
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let revisions: Vec<(i32, i64)> = sqlx::query_as(
        "SELECT revision, total FROM period_results WHERE objective = 'availability' ORDER BY revision",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(revisions, vec![(1, 3600), (2, 3240)]);
}

#[tokio::test]
async fn time_slices_are_good_when_their_ratio_meets_the_slice_target_and_maintenance_weighs_nothing()
 {
    const SLICES: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: minutes
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: good-minutes
    target: 99%
    timeSlices:
      sliceLength: 1m
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {good: status < 500}
"#;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-11-30".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLICES]).await;
    let base = at("2026-11-10T10:00:00Z");
    let mut events = Vec::new();
    for minute in 0..10i64 {
        for i in 0..20i64 {
            let occurred_at = base + Duration::minutes(minute) + Duration::seconds(3 * i);
            let bad = match minute {
                3 => i < 2,                 // 90%: a bad slice
                5 => i == 0,                // 95% exactly: a good slice
                7 => true,                  // all bad, but under maintenance
                8 => (10..13).contains(&i), // bad only inside the cut maintenance
                _ => false,
            };
            events.push(Ev {
                occurred_at,
                received_at: occurred_at,
                service: "chat",
                model: "big",
                status: if bad { 500 } else { 200 },
                latency_us: Some(1),
            });
        }
    }
    insert_events(&db, tenant, &events).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "minutes", None).await.unwrap();
    for (start, end) in [
        ("2026-11-10T10:07:00Z", "2026-11-10T10:08:00Z"),
        ("2026-11-10T10:08:30Z", "2026-11-10T10:08:39Z"),
    ] {
        slaproof_tests::maintenance::agreed(&mut tx, sla.id, at(start), at(end), "m")
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at("2026-11-10T10:30:00Z")))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let e = &run.evaluations[0];
    assert_eq!(e.objective, "good-minutes");
    assert_eq!(e.budget.tally, Tally { good: 8, total: 9 });
    assert_eq!(e.excluded.total, 20 + 3);
    assert!(!e.budget.met());
}

/// The watermark never passes the start of an ingest transaction that is
/// still running: its events carry that start as `received_at` and become
/// visible only at commit. Waits for a minute boundary, so it takes up to
/// a minute.
#[tokio::test]
async fn the_watermark_waits_for_ingest_transactions_still_running() {
    use chrono::Timelike;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let today = Utc::now().date_naive();
    ensure_days(
        &db,
        today - chrono::Days::new(1),
        today + chrono::Days::new(1),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    // Start the ingest transaction two seconds before a minute ends.
    let second = Utc::now().second();
    if second != 58 {
        let wait = (58 + 60 - i64::from(second)) % 60;
        tokio::time::sleep(std::time::Duration::from_secs(wait as u64)).await;
    }
    let mut ingest = db.tenant_tx(tenant).await.unwrap();
    let started: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&mut *ingest)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, source, service, status) \
         VALUES ($1, now() - interval '2 minutes', $2, 'provider', 'chat', 500)",
    )
    .bind(tenant.uuid())
    .bind(uuid::Uuid::now_v7())
    .execute(&mut *ingest)
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    let settings = Settings {
        settle_secs: 0,
        ..Settings::default()
    };
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = slaproof_evaluator::evaluate_tenant(&mut tx, &settings)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(
        run.advance.as_of <= started,
        "the watermark {} passed a running transaction started at {started}",
        run.advance.as_of
    );
    ingest.commit().await.unwrap();
    // Once committed, the next round moves past it and counts the event.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = slaproof_evaluator::evaluate_tenant(&mut tx, &settings)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(run.advance.as_of > started);
    let availability = run
        .evaluations
        .iter()
        .find(|e| e.objective == "availability")
        .unwrap();
    assert_eq!(availability.budget.tally, Tally { good: 0, total: 1 });
}

#[tokio::test]
async fn a_composite_is_breached_told_frozen_at_the_close_and_superseded_by_a_correction() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-12-02".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[WEIGHTED_SLA]).await;
    // 1000 events every 10 s; the first 15 fail; latency always good.
    let base = at("2026-11-20T10:00:00Z");
    let events: Vec<Ev> = (0..1000i64)
        .map(|i| {
            let occurred_at = base + Duration::seconds(10 * i);
            Ev {
                occurred_at,
                received_at: occurred_at,
                service: "chat",
                model: "big",
                status: if i < 15 { 503 } else { 200 },
                latency_us: Some(1_000),
            }
        })
        .collect();
    insert_events(&db, tenant, &events).await;
    let evaluate = |as_of: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
                .await
                .unwrap();
            tx.commit().await.unwrap();
            run
        }
    };
    let run = evaluate("2026-11-21T00:00:00Z").await;
    // availability: 15 bad of 1000 at a 1% budget is 1.5 budgets; latency
    // 0: C = (3 × 1.5 + 1 × 0) / 4 = 1.125.
    let c = &run.composites[0];
    assert_eq!(c.result.consumed_pico, 1_125_000_000_000);
    assert_eq!(c.met(), Some(false));
    assert_eq!(c.remaining_pico(), -125_000_000_000);
    assert!(c.exhausted());
    assert_eq!(c.parts.len(), 2);
    assert_eq!((c.parts[0].good, c.parts[0].total), (985, 1000));
    let told = outbox_types(&db, tenant).await;
    let composite_facts: Vec<&str> = told
        .iter()
        .filter(|(_, p)| p["objective"] == "_composite")
        .map(|(t, _)| t.as_str())
        .collect();
    // The period is open: the composite's breach waits for its close.
    assert!(composite_facts.is_empty(), "{told:?}");
    // Told once.
    let again = evaluate("2026-11-21T00:01:00Z").await;
    assert_eq!(outbox_types(&db, tenant).await.len(), told.len());
    // Read back as the API would: the latest composite, with its parts.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let stored = slaproof_evaluator::composite::latest(&mut tx, again.composites[0].sla)
        .await
        .unwrap()
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(stored.id, again.composites[0].id);
    assert_eq!(
        (stored.consumed_pico, stored.remaining_pico, stored.met),
        (1_125_000_000_000, -125_000_000_000, Some(false))
    );
    assert_eq!(stored.parts[0]["objective"], "availability");
    assert_eq!(stored.parts[0]["weightMicros"], 3_000_000);
    assert_eq!(stored.parts[0]["consumedPico"], 1_500_000_000_000u64);
    assert_eq!(stored.parts[1]["consumedPico"], 0);

    // The month closes: the composite is frozen beside the objectives.
    let run = evaluate("2026-12-01T00:10:00Z").await;
    assert_eq!(run.closed.len(), 2);
    let closed = run.closed_composites.first().expect("a frozen composite");
    assert_eq!(closed.revision, 1);
    assert_eq!(closed.composite.result.consumed_pico, 1_125_000_000_000);
    assert!(
        evaluate("2026-12-01T00:11:00Z")
            .await
            .closed_composites
            .is_empty()
    );

    // Maintenance declared afterwards over the first ten (bad) events and
    // accepted by the customer: 5 bad of 990 is 0.505050505050… budgets;
    // C = 3 × that / 4, met.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
    let window = slaproof_tests::maintenance::announced(
        &mut tx,
        Some(sla.id),
        base,
        base + Duration::seconds(100),
        "retroactive",
        Utc::now(),
    )
    .await
    .unwrap();
    slaproof_tests::maintenance::customer_accepts(&mut tx, window.id, sla.id)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let run = evaluate("2026-12-01T00:12:00Z").await;
    let corrected = run.closed_composites.first().expect("a correction");
    assert_eq!(corrected.revision, 2);
    assert_eq!(corrected.composite.result.consumed_pico, 378_787_878_787);
    assert_eq!(corrected.composite.met(), Some(true));

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let revisions: Vec<(i32, i64, Option<bool>, i64)> = sqlx::query_as(
        "SELECT revision, consumed_pico, met, remaining_pico FROM composite_period_results ORDER BY revision",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    assert_eq!(
        revisions,
        vec![
            (1, 1_125_000_000_000, Some(false), -125_000_000_000),
            (2, 378_787_878_787, Some(true), 621_212_121_213)
        ]
    );
    // Each part names an objective evaluation frozen in period_results.
    let dangling: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM composite_period_results c, jsonb_array_elements(c.parts) AS p \
         WHERE NOT EXISTS (SELECT 1 FROM period_results r \
                           WHERE r.evaluation_id = (p ->> 'evaluation')::uuid AND r.objective = p ->> 'objective')",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    assert_eq!(dangling, 0);
    tx.commit().await.unwrap();
    let closes = outbox_types(&db, tenant)
        .await
        .into_iter()
        .filter(|(t, p)| t == "sla.period_closed" && p["composite"] == true)
        .map(|(_, p)| p["revision"].as_i64().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(closes, [1, 2]);
}

#[tokio::test]
async fn sketches_chart_the_services_latency_and_fold_in_late_events_like_the_counts() {
    use slaproof_store::charts::percentiles;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-11-30".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    let base = at("2026-11-10T10:00:00Z");
    let ev = |occurred_at: DateTime<Utc>, received_at, service, latency_ms: i64| Ev {
        occurred_at,
        received_at,
        service,
        model: "big",
        status: 200,
        latency_us: Some(latency_ms * 1000),
    };
    // 10:00: 100 events of 1..=100 ms; 10:01: 10 events of 50 ms; another
    // service's slow event is not charted.
    let mut events: Vec<Ev> = (1..=100i64)
        .map(|i| {
            let t = base + Duration::milliseconds(500 * i);
            ev(t, t, "chat", i)
        })
        .collect();
    events.extend((0..10i64).map(|i| {
        let t = base + Duration::minutes(1) + Duration::seconds(i);
        ev(t, t, "chat", 50)
    }));
    events.push(ev(base, base, "embeddings", 60_000));
    insert_events(&db, tenant, &events).await;
    let run = |as_of: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
    };
    let chart = |from: &'static str, to: &'static str, step: Duration| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
            let points =
                percentiles(&mut tx, sla.id, None, at(from), at(to), step, &[0.5, 1.0]).await;
            tx.commit().await.unwrap();
            points
        }
    };
    run("2026-11-10T10:03:00Z").await;
    let minutes = chart(
        "2026-11-10T10:00:00Z",
        "2026-11-10T10:03:00Z",
        Duration::minutes(1),
    )
    .await
    .unwrap();
    assert_eq!(minutes.len(), 3);
    assert_eq!(minutes[0].start, base);
    assert_eq!(minutes[0].latency.count, 100);
    // p50 of 1..=100 ms is 50 ms (rank 49) within 1%; the maximum is exact.
    let p50 = minutes[0].latency.quantiles[0];
    assert!((p50 - 50_000.0).abs() <= 500.0, "p50 {p50}");
    assert_eq!(minutes[0].latency.quantiles[1], 100_000.0);
    assert_eq!(minutes[0].ttft.count, 0, "no event carried a TTFT");
    assert!(minutes[0].ttft.quantiles.is_empty());
    assert_eq!(minutes[1].latency.count, 10);
    assert_eq!(minutes[2].latency.count, 0);

    // Slow events of 10:00 arriving at 10:04 and 10:20, while the month is
    // open, are folded into their minute's sketch like the counts; in the
    // same advance, a minute with no sketch yet (10:05) gets its own.
    insert_events(
        &db,
        tenant,
        &[
            ev(base, at("2026-11-10T10:04:00Z"), "chat", 9_000),
            ev(base, at("2026-11-10T10:20:00Z"), "chat", 20_000),
            ev(
                base + Duration::minutes(5),
                at("2026-11-10T10:06:00Z"),
                "chat",
                70,
            ),
        ],
    )
    .await;
    run("2026-11-10T10:30:00Z").await;
    let minutes = chart(
        "2026-11-10T10:00:00Z",
        "2026-11-10T10:06:00Z",
        Duration::minutes(1),
    )
    .await
    .unwrap();
    assert_eq!(minutes[0].latency.count, 102);
    assert_eq!(minutes[0].latency.quantiles[1], 20_000_000.0);
    assert_eq!(minutes[1].latency.count, 10, "untouched: {minutes:?}");
    assert_eq!(minutes[5].latency.count, 1);
    assert_eq!(minutes[5].latency.quantiles[1], 70_000.0);

    // The hour, from the hourly sketches: the merge of its minutes.
    let hour = chart(
        "2026-11-10T10:00:00Z",
        "2026-11-10T11:00:00Z",
        Duration::hours(1),
    )
    .await
    .unwrap();
    assert_eq!(hour.len(), 1);
    assert_eq!(hour[0].latency.count, 113);
    assert_eq!(hour[0].latency.quantiles[1], 20_000_000.0);
    let halves = chart(
        "2026-11-10T10:00:00Z",
        "2026-11-10T11:00:00Z",
        Duration::minutes(30),
    )
    .await
    .unwrap();
    assert_eq!(halves.len(), 2);
    assert_eq!(halves[0].latency, hour[0].latency);

    let err = chart(
        "2026-11-10T10:00:00Z",
        "2026-11-10T11:00:00Z",
        Duration::seconds(90),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().starts_with("step "), "{err}");
}

#[tokio::test]
async fn ratio_timeslices_are_judged_on_the_exact_mean_of_the_slices_ratios() {
    const RATIOS: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: mean-minutes
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: half
    target: 50%
    weight: 1
    timeSlices:
      sliceLength: 1m
      budgeting: RatioTimeslices
      ratio: {good: status < 500}
  - name: just-over-half
    target: 50.0001%
    timeSlices:
      sliceLength: 1m
      budgeting: RatioTimeslices
      ratio: {good: status < 500}
"#;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-11-30".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[RATIOS]).await;
    let base = at("2026-11-10T10:00:00Z");
    // 10:00: 1 of 3 good; 10:01: 4 of 6 good — a mean of exactly 1/2
    // (although 5 of 9 events were good); 10:02: nothing; 10:03: all bad,
    // wholly under maintenance, so empty too.
    let mut events = Vec::new();
    for (minute, total, good) in [(0i64, 3i64, 1i64), (1, 6, 4), (3, 5, 0)] {
        for i in 0..total {
            let occurred_at = base + Duration::minutes(minute) + Duration::seconds(5 * i);
            events.push(Ev {
                occurred_at,
                received_at: occurred_at,
                service: "chat",
                model: "big",
                status: if i < good { 200 } else { 503 },
                latency_us: Some(1),
            });
        }
    }
    insert_events(&db, tenant, &events).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "mean-minutes", None).await.unwrap();
    slaproof_tests::maintenance::agreed(
        &mut tx,
        sla.id,
        at("2026-11-10T10:03:00Z"),
        at("2026-11-10T10:04:00Z"),
        "m",
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at("2026-11-10T10:30:00Z")))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let by_name: BTreeMap<_, _> = run
        .evaluations
        .iter()
        .map(|e| (e.objective.as_str(), e))
        .collect();
    // Two non-empty slices, in millionths of a slice.
    let half = by_name["half"];
    assert_eq!(
        half.budget.tally,
        Tally {
            good: 1_000_000,
            total: 2_000_000
        }
    );
    assert_eq!(half.budget.tally.compliance_ppm(), Some(500_000));
    assert!(half.budget.met(), "a mean of exactly 50% meets 50%");
    assert_eq!(half.excluded.total, 5);
    let over = by_name["just-over-half"];
    assert_eq!(over.budget.tally, half.budget.tally);
    assert!(!over.budget.met());
    // The composite reads the same tallies: "half" has spent its budget
    // exactly (1), "just-over-half" 0.5 / 0.499999 = 1.000002000004…;
    // C is their mean, to 10⁻¹².
    assert_eq!(
        run.composites[0].parts[0].consumed_pico,
        Some(1_000_000_000_000)
    );
    assert_eq!(run.composites[0].result.consumed_pico, 1_000_001_000_002);
    assert_eq!(run.composites[0].met(), Some(false));
}

/// [`SLA`] for a customer, whose own alert lines the evaluator checks.
const CUSTOMER_SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  customer: acme-corp
  window:
    calendar: month
    timeZone: UTC
  objectives:
  - name: availability
    target: 99%
    ratio:
      good: status < 500
"#;

#[tokio::test]
async fn a_customers_threshold_is_told_once_when_crossed_and_once_when_recovered() {
    use slaproof_store::{customers, thresholds};
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-20".parse().unwrap(),
        "2026-11-20".parse().unwrap(),
    )
    .await;
    let tenant = tenants::create(&db, "acme", "acme").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let customer = customers::create(&mut tx, "acme-corp", "Acme")
        .await
        .unwrap()
        .id;
    let sla = slas::apply(
        &mut tx,
        &SlaDefinition::from_document(CUSTOMER_SLA).unwrap(),
    )
    .await
    .unwrap()
    .sla;
    // Tell me when compliance falls below 90% (the contract says 99%).
    thresholds::set(
        &mut tx,
        sla,
        customer,
        "availability",
        thresholds::Lines {
            compliance_below_ppm: Some(900_000),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let events = |from: &str, count: i64, bad: i64| -> Vec<Ev> {
        let start = at(from);
        (0..count)
            .map(|i| {
                let occurred_at = start + Duration::seconds(i);
                Ev {
                    occurred_at,
                    received_at: occurred_at,
                    service: "chat",
                    model: "big",
                    status: if i < bad { 503 } else { 200 },
                    latency_us: Some(1_000),
                }
            })
            .collect()
    };
    let evaluate = |as_of: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
    };
    let told = |db: Database| async move {
        outbox_types(&db, tenant)
            .await
            .into_iter()
            .filter(|(t, _)| t.starts_with("sla.threshold_"))
            .collect::<Vec<_>>()
    };

    // 100 good events: above the line, nothing to tell.
    insert_events(&db, tenant, &events("2026-11-20T10:00:00Z", 100, 0)).await;
    evaluate("2026-11-20T10:05:00Z").await;
    assert_eq!(told(db.clone()).await, []);

    // 100 more, half bad: 150 of 200 good, 75% < 90%: crossed, told once.
    insert_events(&db, tenant, &events("2026-11-20T10:10:00Z", 100, 50)).await;
    evaluate("2026-11-20T10:15:00Z").await;
    let crossed = told(db.clone()).await;
    assert_eq!(crossed.len(), 1, "{crossed:?}");
    let (kind, payload) = &crossed[0];
    assert_eq!(kind, "sla.threshold_crossed");
    assert_eq!(payload["threshold"], "compliance");
    assert_eq!(payload["line"], 900_000);
    assert_eq!(payload["value"], 750_000);
    assert_eq!(payload["objective"], "availability");
    assert_eq!(payload["customer"], customer.to_string());
    // The contract is untouched: the verdict is on the 99% target.
    assert_eq!(payload["targetPpm"], 990_000);

    // The same state at the next round: nothing new.
    evaluate("2026-11-20T10:16:00Z").await;
    assert_eq!(told(db.clone()).await.len(), 1);

    // 400 good events: 550 of 600 (91.7%) is above the line again: told once.
    insert_events(&db, tenant, &events("2026-11-20T10:20:00Z", 400, 0)).await;
    evaluate("2026-11-20T10:30:00Z").await;
    let after = told(db.clone()).await;
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(after[1].0, "sla.threshold_recovered");
    assert_eq!(after[1].1["value"], 916_666);
    evaluate("2026-11-20T10:31:00Z").await;
    assert_eq!(told(db.clone()).await.len(), 2);

    // The row keeps the state the messages told.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rows = thresholds::list(&mut tx, sla, Some(customer))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].crossed.compliance);
    assert_eq!(rows[0].evaluated_at, Some(at("2026-11-20T10:31:00Z")));
}

/// Dates a version's application (`sla_versions.created_at`, stamped by
/// the database clock) to the test's calendar, as the owner.
async fn applied_at(database: &TestDatabase, tenant: TenantId, version: i32, when: &str) {
    use sqlx::Connection;
    let mut owner = database.owner_connection().await;
    let mut tx = owner.begin().await.unwrap();
    sqlx::query("SELECT set_config('app.tenant_id', $1, true)")
        .bind(tenant.uuid().to_string())
        .execute(&mut *tx)
        .await
        .unwrap();
    let updated = sqlx::query(
        "UPDATE sla_versions SET created_at = $2 WHERE tenant_id = $1 AND version = $3",
    )
    .bind(tenant.uuid())
    .bind(at(when))
    .bind(version)
    .execute(&mut *tx)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(updated, 1);
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn a_period_is_closed_once_by_the_version_in_force_at_its_start_when_a_new_one_comes_in_its_grace()
 {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-12-02".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    applied_at(&database, tenant, 1, "2026-10-15T00:00:00Z").await;
    // November: 1,000 events, 20 failing (98%: v1's 99% is missed).
    let start = at("2026-11-10T00:00:00Z");
    let mut events: Vec<Ev> = (0..1000i64)
        .map(|i| Ev {
            occurred_at: start + Duration::minutes(i),
            received_at: start + Duration::minutes(i),
            service: "chat",
            model: "big",
            status: if i % 50 == 0 { 503 } else { 200 },
            latency_us: Some(1_000),
        })
        .collect();
    insert_events(&db, tenant, &events).await;
    let evaluate = |as_of: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
                .await
                .unwrap();
            tx.commit().await.unwrap();
            run
        }
    };
    evaluate("2026-11-30T12:00:00Z").await;

    // Version 2 (a 95% target: it would be met) is applied two minutes
    // after November ended, within its five minutes of grace; a failing
    // event of November's last minute arrives in the grace too.
    let relaxed = SLA.replacen("target: 99%", "target: 95%", 1);
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(&relaxed).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    applied_at(&database, tenant, 2, "2026-12-01T00:02:00Z").await;
    let late = Ev {
        occurred_at: at("2026-11-30T23:59:30Z"),
        received_at: at("2026-12-01T00:03:00Z"),
        service: "chat",
        model: "big",
        status: 503,
        latency_us: Some(1_000),
    };
    insert_events(&db, tenant, std::slice::from_ref(&late)).await;
    events.push(late);

    // Still in the grace: nothing closes. Applied in December, version 2
    // takes effect in January: December's verdicts are still version 1's.
    let run = evaluate("2026-12-01T00:04:00Z").await;
    assert!(run.closed.is_empty(), "{:?}", run.closed);
    assert!(!run.evaluations.is_empty());
    assert!(run.evaluations.iter().all(|e| e.version == 1));

    // Past the grace: November closes once, judged by version 1 (in
    // force at its start) with the event folded in during the grace.
    let run = evaluate("2026-12-01T00:10:00Z").await;
    assert_eq!(run.closed.len(), 2, "{:?}", run.closed);
    assert!(
        run.closed
            .iter()
            .all(|c| c.revision == 1 && c.evaluation.version == 1)
    );
    assert!(run.evaluations.iter().all(|e| e.version == 1));
    let availability = run
        .closed
        .iter()
        .find(|c| c.evaluation.objective == "availability")
        .unwrap();
    assert_eq!(
        availability.evaluation.period.start,
        at("2026-11-01T00:00:00Z")
    );
    assert_eq!(
        availability.evaluation.budget.tally,
        Tally {
            good: 1001 - 21,
            total: 1001
        }
    );
    assert_eq!(availability.evaluation.budget.target.ppm(), 990_000);
    assert!(!availability.evaluation.budget.met());
    assert_eq!(availability.evaluation.late_folded, 1);

    // Again, and a day later: nothing more is closed or told.
    assert!(evaluate("2026-12-01T00:11:00Z").await.closed.is_empty());
    assert!(evaluate("2026-12-02T00:10:00Z").await.closed.is_empty());
    let closed: Vec<serde_json::Value> = outbox_types(&db, tenant)
        .await
        .into_iter()
        .filter(|(t, _)| t == "sla.period_closed")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(closed.len(), 2, "{closed:?}");
    assert!(
        closed
            .iter()
            .all(|p| p["version"] == 1 && p["revision"] == 1)
    );
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let frozen: Vec<(i32, String, i32, i64)> = sqlx::query_as(
        "SELECT version, objective, revision, total FROM period_results ORDER BY objective",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        frozen,
        vec![
            (1, "availability".to_owned(), 1, 1001),
            (1, "latency-p90".to_owned(), 1, 1001)
        ]
    );
}

#[tokio::test]
async fn old_evaluations_are_thinned_to_the_last_of_each_hour_and_named_ones_kept() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None)
        .await
        .unwrap()
        .id
        .uuid();
    // Ten days of evaluations every 20 minutes (:10, :30, :50) of both
    // objectives.
    sqlx::query(
        "INSERT INTO evaluations (tenant_id, id, sla_id, version, objective, evaluated_at, as_of, \
             period_start, period_end, target_ppm, good, total, excluded, late_folded, late_total, met, \
             compliance_ppm, budget_allowed, budget_consumed, budget_remaining, burn_rate_milli) \
         SELECT $1, gen_random_uuid(), $2, 1, o, t, t, '2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z', \
             990000, 100, 100, 0, 0, 0, true, 1000000, 1, 0, 1, 0 \
         FROM unnest(ARRAY['availability', 'latency-p90']) AS o, \
              generate_series('2026-12-01T00:10:00Z'::timestamptz, '2026-12-10T23:50:00Z', '20 minutes') AS t",
    )
    .bind(tenant.uuid())
    .bind(sla)
    .execute(&mut *tx)
    .await
    .unwrap();
    let id_at = |when: &'static str| {
        sqlx::query_scalar::<_, uuid::Uuid>(
            "SELECT id FROM evaluations WHERE objective = 'availability' AND evaluated_at = $1",
        )
        .bind(at(when))
    };
    // Named, though not the last of their hour: a frozen period result's
    // evaluation, a part of a kept composite (07:50, the last of its hour),
    // a part of a frozen composite result (its composite, 08:10, is not
    // the last of its hour either). The part of a composite thinned away
    // (07:10) goes with it.
    let frozen = id_at("2026-12-02T05:10:00Z")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO period_results (tenant_id, id, sla_id, version, objective, period_start, period_end, \
             revision, as_of, target_ppm, good, total, excluded, late_total, met, evaluation_id) \
         VALUES ($1, gen_random_uuid(), $2, 1, 'availability', '2026-11-01T00:00:00Z', \
             '2026-12-01T00:00:00Z', 1, '2026-12-02T05:10:00Z', 990000, 1, 1, 0, 0, true, $3)",
    )
    .bind(tenant.uuid())
    .bind(sla)
    .bind(frozen)
    .execute(&mut *tx)
    .await
    .unwrap();
    let mut composites = Vec::new();
    for (when, part) in [
        ("2026-12-02T07:10:00Z", "2026-12-02T07:10:00Z"),
        ("2026-12-02T07:50:00Z", "2026-12-02T06:30:00Z"),
        ("2026-12-02T08:10:00Z", "2026-12-02T08:30:00Z"),
        ("2026-12-02T08:50:00Z", "2026-12-02T08:50:00Z"),
    ] {
        let part = id_at(part).fetch_one(&mut *tx).await.unwrap();
        let id: uuid::Uuid = sqlx::query_scalar(
            "INSERT INTO composite_evaluations (tenant_id, id, sla_id, version, evaluated_at, as_of, \
                 period_start, period_end, consumed_pico, met, burn_rate_milli, parts) \
             VALUES ($1, gen_random_uuid(), $2, 1, $3, $3, '2026-12-01T00:00:00Z', \
                 '2027-01-01T00:00:00Z', 0, true, 0, $4) RETURNING id",
        )
        .bind(tenant.uuid())
        .bind(sla)
        .bind(at(when))
        .bind(serde_json::json!([{"objective": "availability", "evaluation": part}]))
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        composites.push(id);
    }
    sqlx::query(
        "INSERT INTO composite_period_results (tenant_id, id, sla_id, version, period_start, period_end, \
             revision, as_of, consumed_pico, met, parts, composite_evaluation_id) \
         SELECT tenant_id, gen_random_uuid(), sla_id, 1, '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', \
             1, as_of, consumed_pico, met, parts, id FROM composite_evaluations WHERE id = $1",
    )
    .bind(composites[2])
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();

    // Seven full days before 2026-12-11T00:30: thinned before 12-04T00:00.
    let now = at("2026-12-11T00:30:00Z");
    assert_eq!(
        slaproof_evaluator::thinning::thinning_cutoff(now, 7),
        at("2026-12-04T00:00:00Z")
    );
    let done = slaproof_evaluator::thinning::thin_all(&db, now, 7)
        .await
        .unwrap();
    // Per objective 216 rows in the 72 old hours, 72 kept; three more
    // of availability are named.
    assert_eq!(done.evaluations, 2 * (216 - 72) - 3);
    assert_eq!(done.composites, 1);

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let old: Vec<(String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT objective, evaluated_at FROM evaluations WHERE evaluated_at < '2026-12-04T00:00:00Z' \
         ORDER BY objective, evaluated_at",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let recent: Vec<(String, i64)> = sqlx::query_as(
        "SELECT objective, count(*) FROM evaluations WHERE evaluated_at >= '2026-12-04T00:00:00Z' \
         GROUP BY objective ORDER BY objective",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let kept_composites: Vec<DateTime<Utc>> =
        sqlx::query_scalar("SELECT evaluated_at FROM composite_evaluations ORDER BY evaluated_at")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    let hourly = |named: &[&str]| {
        let mut expected: Vec<DateTime<Utc>> = (0..72)
            .map(|h| at("2026-12-01T00:50:00Z") + Duration::hours(h))
            .chain(named.iter().map(|n| at(n)))
            .collect();
        expected.sort();
        expected
    };
    let of = |objective: &str| {
        old.iter()
            .filter(|(o, _)| o == objective)
            .map(|(_, t)| *t)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of("availability"),
        hourly(&[
            "2026-12-02T05:10:00Z",
            "2026-12-02T06:30:00Z",
            "2026-12-02T08:30:00Z"
        ])
    );
    assert_eq!(of("latency-p90"), hourly(&[]));
    // The seven days from 12-04 on, at three an hour: all kept.
    assert_eq!(
        recent,
        vec![
            ("availability".to_owned(), 7 * 72),
            ("latency-p90".to_owned(), 7 * 72)
        ]
    );
    assert_eq!(
        kept_composites,
        vec![
            at("2026-12-02T07:50:00Z"),
            at("2026-12-02T08:10:00Z"),
            at("2026-12-02T08:50:00Z")
        ]
    );

    // Thinning again deletes nothing.
    let again = slaproof_evaluator::thinning::thin_all(&db, now, 7)
        .await
        .unwrap();
    assert_eq!(again, slaproof_evaluator::thinning::Thinned::default());
}

#[tokio::test]
async fn a_version_applied_mid_period_takes_effect_at_the_next_period() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    ensure_days(
        &db,
        "2026-11-01".parse().unwrap(),
        "2026-12-02".parse().unwrap(),
    )
    .await;
    let tenant = tenant_with_sla(&db, "acme", &[SLA]).await;
    applied_at(&database, tenant, 1, "2026-10-15T00:00:00Z").await;
    // 1,000 events from 11-10, 20 failing: v1's 99% is missed, v2's 95% met.
    let start = at("2026-11-10T00:00:00Z");
    let events: Vec<Ev> = (0..1000i64)
        .map(|i| Ev {
            occurred_at: start + Duration::minutes(i),
            received_at: start + Duration::minutes(i),
            service: "chat",
            model: "big",
            status: if i % 50 == 0 { 503 } else { 200 },
            latency_us: Some(1_000),
        })
        .collect();
    insert_events(&db, tenant, &events).await;
    let evaluate = |as_of: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
                .await
                .unwrap();
            tx.commit().await.unwrap();
            run
        }
    };
    evaluate("2026-11-19T00:00:00Z").await;
    let relaxed = SLA.replacen("target: 99%", "target: 95%", 1);
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(&relaxed).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    applied_at(&database, tenant, 2, "2026-11-20T00:00:00Z").await;
    // The target lowered on the 20th does not judge November: version 1
    // keeps evaluating it.
    let run = evaluate("2026-11-25T00:00:00Z").await;
    assert!(run.closed.is_empty());
    assert!(run.evaluations.iter().all(|e| e.version == 1));
    let run = evaluate("2026-12-01T00:10:00Z").await;
    assert_eq!(run.closed.len(), 2, "{:?}", run.closed);
    // December is version 2's.
    assert!(run.evaluations.iter().all(|e| e.version == 2));
    let availability = run
        .closed
        .iter()
        .find(|c| c.evaluation.objective == "availability")
        .unwrap();
    assert_eq!(availability.evaluation.version, 1);
    assert_eq!(
        availability.evaluation.period.start,
        at("2026-11-01T00:00:00Z")
    );
    assert_eq!(
        availability.evaluation.budget.tally,
        Tally {
            good: 980,
            total: 1000
        }
    );
    // 98% misses version 1's 99%: November is breached.
    assert!(!availability.evaluation.budget.met());
    assert_eq!(availability.evaluation.budget.target.ppm(), 990_000);
    assert!(evaluate("2026-12-01T00:20:00Z").await.closed.is_empty());
    let closed: Vec<serde_json::Value> = outbox_types(&db, tenant)
        .await
        .into_iter()
        .filter(|(t, _)| t == "sla.period_closed")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(closed.len(), 2, "{closed:?}");
    assert!(closed.iter().all(|p| p["version"] == 1));
}
