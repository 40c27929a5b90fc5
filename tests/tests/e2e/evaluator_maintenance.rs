//! Maintenance changes the evaluator cannot miss (found in review, issue
//! "Customer traffic"): a customer's acceptance committed while a round
//! was measuring its day was stamped before the measurement and never
//! judged, so the day's measurement (what the period's proof opens) kept
//! the failures the period's result excludes; and a window that changes
//! nothing on a day made that day "changed" every round after.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::{SlaId, TenantId};
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{Settings, evaluate_tenant_spread};
use slaproof_store::{Database, customers, measurements, partitions, slas, tenants};
use slaproof_tests::TestDatabase;
use slaproof_tests::maintenance::{announced, customer_accepts};

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-acme
spec:
  service: chat
  customer: acme
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
"#;

/// The first round's watermark: the 9th of November is past its grace.
fn round_at() -> DateTime<Utc> {
    "2026-11-10T12:00:00Z".parse().unwrap()
}

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// Rolls up and evaluates `tenant` to `target`, over two connections.
async fn round(db: &Database, tenant: TenantId, target: DateTime<Utc>) {
    let settings = Settings {
        settle_secs: 0,
        connections: 2,
        ..Settings::default()
    };
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_spread(db, &mut tx, &settings, Some(target))
        .await
        .unwrap();
    assert!(run.failed_slas.is_empty(), "{:?}", run.failed_slas);
    tx.commit().await.unwrap();
}

/// Inserts `n` of acme's requests on `chat` a second apart from `from`,
/// answered with `status`, received at `received`.
async fn requests(
    db: &Database,
    tenant: TenantId,
    from: DateTime<Utc>,
    n: i32,
    status: i32,
    received: DateTime<Utc>,
) {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, customer, model, status, latency_us) \
         SELECT $1, $2 + make_interval(secs => r), gen_random_uuid(), $5, 'provider', 'chat', 'acme', 'big', $4, 100000 \
         FROM generate_series(0, $3 - 1) AS r",
    )
    .bind(tenant.uuid())
    .bind(from)
    .bind(n)
    .bind(status)
    .bind(received)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// The latest measurement of a day's availability: (good, bad).
async fn measured(db: &Database, tenant: TenantId, sla: SlaId, day: &str) -> (i64, i64) {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let start = at(day);
    let revisions = measurements::revisions(
        &mut tx,
        sla,
        1,
        "availability",
        start,
        start + Duration::days(1),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let last = revisions.last().expect("the day is measured");
    (last.good, last.bad)
}

#[tokio::test]
async fn an_acceptance_committed_during_a_round_is_judged_and_a_day_it_leaves_alone_settles() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let now = round_at();
    partitions::ensure(
        &db,
        at("2026-11-01T00:00:00Z").date_naive(),
        now.date_naive(),
    )
    .await
    .unwrap();
    let tenant = tenants::create(&db, "acme-provider", "Acme provider")
        .await
        .unwrap()
        .id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    customers::create(&mut tx, "acme", "Acme").await.unwrap();
    let sla = slas::apply(&mut tx, &SlaDefinition::from_document(SLA).unwrap())
        .await
        .unwrap()
        .sla;
    // Two windows proposed well ahead, neither accepted yet: one over the
    // failures of the 9th, one over the 5th, when acme sent nothing.
    let early = at("2026-10-01T00:00:00Z");
    let outage = announced(
        &mut tx,
        Some(sla),
        at("2026-11-09T09:30:00Z"),
        at("2026-11-09T10:30:00Z"),
        "database upgrade",
        early,
    )
    .await
    .unwrap();
    let quiet = announced(
        &mut tx,
        Some(sla),
        at("2026-11-05T02:00:00Z"),
        at("2026-11-05T03:00:00Z"),
        "network maintenance",
        early,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let received = now - Duration::hours(1);
    requests(&db, tenant, at("2026-11-09T10:00:00Z"), 10, 503, received).await;
    requests(&db, tenant, at("2026-11-09T14:00:00Z"), 10, 200, received).await;

    round(&db, tenant, now).await;
    assert_eq!(
        measured(&db, tenant, sla, "2026-11-09T00:00:00Z").await,
        (10, 10)
    );

    // A late success for the 9th, so the next round measures the day again,
    // while the customer's acceptance of both windows is in flight.
    requests(
        &db,
        tenant,
        at("2026-11-09T15:00:00Z"),
        1,
        200,
        now + Duration::seconds(30),
    )
    .await;
    let mut accepting = db.tenant_tx(tenant).await.unwrap();
    customer_accepts(&mut accepting, outage.id, sla)
        .await
        .unwrap();
    customer_accepts(&mut accepting, quiet.id, sla)
        .await
        .unwrap();
    let second = tokio::spawn({
        let db = db.clone();
        async move { round(&db, tenant, now + Duration::minutes(1)).await }
    });
    let mut second = std::pin::pin!(second);
    // The round waits for the change in flight rather than measuring
    // without it (on the code before the fix it finished here, measured
    // the 9th without the acceptance, after the acceptance's stamp).
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(3), &mut second)
            .await
            .is_err(),
        "a round finished while a maintenance change was in flight"
    );
    accepting.commit().await.unwrap();
    second.await.unwrap();
    round(&db, tenant, now + Duration::minutes(2)).await;

    // The accepted window excludes the ten failures; the late success counts.
    assert_eq!(
        measured(&db, tenant, sla, "2026-11-09T00:00:00Z").await,
        (11, 0)
    );
    // The 5th was measured again to the same numbers, and is not stale:
    // before, it was measured again every round.
    assert_eq!(
        measured(&db, tenant, sla, "2026-11-05T00:00:00Z").await,
        (0, 0)
    );
    let days: Vec<(DateTime<Utc>, DateTime<Utc>)> = (0..9)
        .map(|d| {
            let start = at("2026-11-01T00:00:00Z") + Duration::days(d);
            (start, start + Duration::days(1))
        })
        .collect();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let stale = measurements::stale_days(&mut tx, sla, 1, &days)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(stale, Vec::<DateTime<Utc>>::new());
}
