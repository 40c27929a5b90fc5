//! Period close against a real database: after the evaluator did not run
//! for several periods, every period that is due closes, oldest first; and
//! the round that closes a period leaves `latest` and the series on the
//! period now running.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::Tally;
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{Settings, TenantRun, evaluate_tenant_up_to};
use slaproof_store::{Database, evaluations, partitions, slas, tenants};
use slaproof_tests::TestDatabase;

const WEEKLY: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-weekly
spec:
  service: chat
  window:
    calendar: week
    timeZone: UTC
  objectives:
  - name: availability
    target: 99%
    ratio:
      good: status < 500
"#;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn settings() -> Settings {
    Settings {
        grace_secs: 300,
        settle_secs: 0,
        ..Settings::default()
    }
}

/// One event every minute of `[from, from + minutes)`, each `bad_every`-th
/// failing, received when it occurred.
async fn insert_minutes(
    db: &Database,
    tenant: TenantId,
    from: DateTime<Utc>,
    minutes: i64,
    bad_every: i64,
) {
    let occurred: Vec<_> = (0..minutes).map(|i| from + Duration::minutes(i)).collect();
    let ids: Vec<_> = occurred.iter().map(|_| uuid::Uuid::now_v7()).collect();
    let status: Vec<i32> = (0..minutes)
        .map(|i| if i % bad_every == 0 { 503 } else { 200 })
        .collect();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, status) \
         SELECT $1, o, i, o, 'provider', 'chat', 'big', st \
         FROM UNNEST($2::timestamptz[], $3::uuid[], $4::int4[]) AS t(o, i, st)",
    )
    .bind(tenant.uuid())
    .bind(&occurred)
    .bind(&ids)
    .bind(&status)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

async fn weekly_tenant(db: &Database) -> TenantId {
    partitions::ensure(
        db,
        "2026-11-01".parse().unwrap(),
        "2026-12-10".parse().unwrap(),
    )
    .await
    .unwrap();
    let tenant = tenants::create(db, "acme", "acme").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(WEEKLY).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    tenant
}

async fn evaluate(db: &Database, tenant: TenantId, as_of: &str) -> TenantRun {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    run
}

/// Three weeks of events (1 in 10, 20 and 40 failing) after a first round
/// on the Monday the first of them starts, then one round after all three
/// ended: the platform was down meanwhile.
async fn three_weeks_unevaluated(db: &Database) -> (TenantId, TenantRun) {
    let tenant = weekly_tenant(db).await;
    // The first round sees the SLA: its rollups cover the week it runs in.
    evaluate(db, tenant, "2026-11-09T00:00:00Z").await;
    for (week, bad_every) in [
        ("2026-11-09T00:00:00Z", 10),
        ("2026-11-16T00:00:00Z", 20),
        ("2026-11-23T00:00:00Z", 40),
    ] {
        insert_minutes(db, tenant, at(week), 200, bad_every).await;
    }
    let run = evaluate(db, tenant, "2026-12-01T00:10:00Z").await;
    (tenant, run)
}

#[tokio::test]
async fn every_due_period_closes_oldest_first_after_an_outage() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let (tenant, run) = three_weeks_unevaluated(&db).await;

    let closed: Vec<_> = run
        .closed
        .iter()
        .map(|c| {
            (
                c.evaluation.period.start,
                c.evaluation.budget.tally,
                c.revision,
            )
        })
        .collect();
    assert_eq!(
        closed,
        vec![
            (
                at("2026-11-09T00:00:00Z"),
                Tally {
                    good: 180,
                    total: 200
                },
                1
            ),
            (
                at("2026-11-16T00:00:00Z"),
                Tally {
                    good: 190,
                    total: 200
                },
                1
            ),
            (
                at("2026-11-23T00:00:00Z"),
                Tally {
                    good: 195,
                    total: 200
                },
                1
            ),
        ]
    );
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let frozen: Vec<(DateTime<Utc>, i32, i64)> = sqlx::query_as(
        "SELECT period_start, revision, good FROM period_results ORDER BY period_start, revision",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let told: i64 =
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE event_type = 'sla.period_closed'")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        frozen,
        vec![
            (at("2026-11-09T00:00:00Z"), 1, 180),
            (at("2026-11-16T00:00:00Z"), 1, 190),
            (at("2026-11-23T00:00:00Z"), 1, 195),
        ]
    );
    assert_eq!(told, 3);

    // Closed once: the next round closes nothing.
    let again = evaluate(&db, tenant, "2026-12-01T00:11:00Z").await;
    assert!(again.closed.is_empty(), "{:?}", again.closed);
}

#[tokio::test]
async fn the_round_that_closes_a_period_leaves_latest_and_the_series_on_the_new_one() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let (tenant, run) = three_weeks_unevaluated(&db).await;
    assert!(!run.closed.is_empty());

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-weekly", None).await.unwrap();
    let latest = evaluations::latest(&mut tx, sla.id).await.unwrap();
    assert_eq!(latest.len(), 1);
    // The week now running, as of the round: not a closed one.
    assert_eq!(latest[0].period_start, at("2026-11-30T00:00:00Z"));
    assert_eq!(latest[0].as_of, at("2026-12-01T00:10:00Z"));
    let now = Utc::now();
    let (points, truncated) = evaluations::series(
        &mut tx,
        sla.id,
        None,
        "availability",
        now - Duration::days(1),
        now + Duration::days(1),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(!truncated);
    // One point a round (the first one and the closing one), none for the
    // closed weeks.
    let as_of: Vec<_> = points.iter().map(|p| p.as_of).collect();
    assert_eq!(
        as_of,
        vec![at("2026-11-09T00:00:00Z"), at("2026-12-01T00:10:00Z")]
    );
}
