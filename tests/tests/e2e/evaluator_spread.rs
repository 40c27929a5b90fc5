//! A tenant's SLAs spread over several connections (`evaluator.connections`,
//! issue "Customer traffic": a round at 10,000 customer SLAs has to fit its
//! interval): the same verdicts as one transaction, each group committed in
//! a transaction of its own, and the tenant held for the whole run.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{
    EvaluatorError, ObjectiveEvaluation, Settings, evaluate_tenant_spread, evaluate_tenant_up_to,
};
use slaproof_store::{Database, customers, measurements, partitions, slas, tenants};
use slaproof_tests::TestDatabase;

/// SLA `{I}` on `chat`: customers' SLAs and a service-wide one, with
/// objectives that count different events.
const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-{I}
spec:
  service: chat
  {CUSTOMER}
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
  - name: fast
    target: 90%
    ratio: {good: status < 500 and latency_ms <= 400}
"#;

const SLAS: usize = 7;

/// The watermark of the rounds: mid-month, so the last hour's requests
/// are all in the period whenever the test runs.
fn round_at() -> DateTime<Utc> {
    "2026-11-10T12:00:00Z".parse().unwrap()
}

fn settings(connections: u32) -> Settings {
    Settings {
        settle_secs: 0,
        connections,
        ..Settings::default()
    }
}

/// A tenant with [`SLAS`] SLAs (the last one service-wide) and, for each
/// customer, 20 requests from 23:42 the day before `now` to 00:30, the i-th
/// customer's first i failed and every third slow: the day before is past
/// its grace at `now`, and measured.
async fn tenant(db: &Database, name: &str, now: DateTime<Utc>) -> TenantId {
    let today = now.date_naive();
    partitions::ensure(db, today - chrono::Days::new(1), today)
        .await
        .unwrap();
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for i in 0..SLAS {
        let customer = if i + 1 < SLAS {
            let reference = format!("customer-{i}");
            customers::create(&mut tx, &reference, &reference)
                .await
                .unwrap();
            format!("customer: {reference}")
        } else {
            String::new()
        };
        let document = SLA
            .replace("{I}", &i.to_string())
            .replace("{CUSTOMER}", &customer);
        slas::apply(&mut tx, &SlaDefinition::from_document(&document).unwrap())
            .await
            .unwrap();
    }
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, customer, model, status, latency_us) \
         SELECT $1, $2 - make_interval(secs => 150 * r + c), gen_random_uuid(), $2 + interval '1 minute', 'provider', 'chat', \
                'customer-' || c, 'big', CASE WHEN r < c THEN 500 ELSE 200 END, \
                CASE WHEN r % 3 = 0 THEN 900000 ELSE 100000 END \
         FROM generate_series(0, 5) AS c, generate_series(0, 19) AS r",
    )
    .bind(tenant.uuid())
    .bind(now - Duration::minutes(11 * 60 + 30))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    tenant
}

/// What an evaluation says, without its ids.
fn verdicts(evaluations: &[ObjectiveEvaluation]) -> Vec<String> {
    evaluations
        .iter()
        .map(|e| {
            format!(
                "{} {} {}/{} burn {:?} alerts {:?}",
                e.sla_name,
                e.objective,
                e.budget.tally.good,
                e.budget.tally.total,
                e.burn_rate,
                e.alerts.iter().map(|a| a.fires).collect::<Vec<_>>()
            )
        })
        .collect()
}

/// The tenant's evaluations committed so far, seen by the owner.
async fn evaluations_committed(database: &TestDatabase, tenant: TenantId) -> i64 {
    let mut owner = database.owner_connection().await;
    sqlx::query_scalar("SELECT count(*) FROM evaluations WHERE tenant_id = $1")
        .bind(tenant.uuid())
        .fetch_one(&mut owner)
        .await
        .unwrap()
}

#[tokio::test]
async fn slas_spread_over_connections_get_the_verdicts_of_one_transaction() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let now = round_at();
    let alone = tenant(&db, "alone", now).await;
    let spread = tenant(&db, "spread", now).await;

    let mut tx = db.tenant_tx(alone).await.unwrap();
    let one = evaluate_tenant_up_to(&mut tx, &settings(1), Some(now))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut tx = db.tenant_tx(spread).await.unwrap();
    let three = evaluate_tenant_spread(&db, &mut tx, &settings(3), Some(now))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    assert!(one.failed_slas.is_empty() && three.failed_slas.is_empty());
    assert_eq!(one.evaluations.len(), 2 * SLAS);
    // Same numbers, in the same (the tenant's) order.
    assert_eq!(verdicts(&three.evaluations), verdicts(&one.evaluations));
    // Customer 2's own requests only; the service-wide SLA counts all 120.
    let of = |name: &str, objective: &str| {
        let e = three
            .evaluations
            .iter()
            .find(|e| e.sla_name == name && e.objective == objective)
            .unwrap();
        (e.budget.tally.good, e.budget.tally.total)
    };
    assert_eq!(of("chat-2", "availability"), (18, 20));
    assert_eq!(of("chat-6", "availability"), (105, 120));
    assert_eq!(three.advance.events_read, one.advance.events_read);
    // Every day past its grace was measured once, and no later round
    // counts it again: on the code before the fix, the days of the SLAs
    // the holding transaction evaluated were measured at its start, before
    // the rollups it read had been committed, and stayed stale for good.
    for tenant in [alone, spread] {
        assert_eq!(stale_days(&db, tenant).await, Vec::<String>::new());
    }
}

/// The SLAs' days of November up to `round_at` that the next round would
/// measure again.
async fn stale_days(db: &Database, tenant: TenantId) -> Vec<String> {
    let first: DateTime<Utc> = "2026-11-01T00:00:00Z".parse().unwrap();
    let days: Vec<(DateTime<Utc>, DateTime<Utc>)> = (0..9)
        .map(|d| (first + Duration::days(d), first + Duration::days(d + 1)))
        .collect();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let mut stale = Vec::new();
    for i in 0..SLAS {
        let sla = slas::find(&mut tx, &format!("chat-{i}"), None)
            .await
            .unwrap();
        for day in measurements::stale_days(&mut tx, sla.id, 1, &days)
            .await
            .unwrap()
        {
            stale.push(format!("chat-{i} {day}"));
        }
    }
    tx.commit().await.unwrap();
    stale
}

#[tokio::test]
async fn a_spread_run_holds_the_tenant_so_a_second_run_is_refused() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let now = round_at();
    let tenant = tenant(&db, "acme", now).await;
    let mut first = db.tenant_tx(tenant).await.unwrap();
    evaluate_tenant_spread(&db, &mut first, &settings(2), Some(now))
        .await
        .unwrap();
    // The first run's other group has committed (SLAs 1, 3 and 5, two
    // objectives each), its holder's (0, 2, 4 and 6) has not, and the
    // tenant is still held.
    assert_eq!(evaluations_committed(&database, tenant).await, 6);
    let mut second = db.tenant_tx(tenant).await.unwrap();
    let err = evaluate_tenant_spread(&db, &mut second, &settings(2), Some(now))
        .await
        .unwrap_err();
    assert!(matches!(err, EvaluatorError::Busy { .. }), "{err}");
    second.rollback().await.unwrap();
    first.commit().await.unwrap();
    assert_eq!(
        evaluations_committed(&database, tenant).await,
        2 * SLAS as i64
    );
    let mut again = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_spread(&db, &mut again, &settings(2), Some(now))
        .await
        .unwrap();
    again.commit().await.unwrap();
    assert_eq!(run.evaluations.len(), 2 * SLAS);
}
