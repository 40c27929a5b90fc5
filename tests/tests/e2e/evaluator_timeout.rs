//! The evaluator's statement timeout: a statement of a tenant's evaluation
//! that runs (or waits) past `evaluator.statement_timeout_secs` is
//! cancelled, the round fails naming the timeout, and the job is retried
//! like any failed one, instead of holding the tenant forever.

use std::time::{Duration, Instant};

use chrono::Utc;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{JOB_KIND, Settings, schedule_all, work_due};
use slaproof_store::{jobs, partitions, slas, tenants};
use slaproof_tests::TestDatabase;
use sqlx::Connection;

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  window: {rolling: 1d}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
"#;

#[tokio::test]
async fn a_statement_past_the_timeout_fails_the_round_naming_it_and_is_retried() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let today = Utc::now().date_naive();
    partitions::ensure(&db, today - chrono::Days::new(1), today)
        .await
        .unwrap();
    let tenant = tenants::create(&db, "acme", "Acme").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(SLA).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    schedule_all(&db).await.unwrap();

    // Another session holds the watermarks: the round's statement waits on
    // it, as it would behind a pathological query.
    let mut holder = database.owner_connection().await;
    let mut held = holder.begin().await.unwrap();
    sqlx::query("LOCK TABLE evaluator_watermarks IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *held)
        .await
        .unwrap();
    let settings = Settings {
        settle_secs: 0,
        statement_timeout_secs: 1,
        ..Settings::default()
    };
    let started = Instant::now();
    let round = tokio::time::timeout(Duration::from_secs(60), work_due(&db, &settings, "worker"))
        .await
        .expect("the round ends")
        .unwrap();
    let took = started.elapsed();
    assert!(round.runs.is_empty(), "{round:?}");
    assert_eq!(round.failures.len(), 1, "{round:?}");
    let error = &round.failures[0].1;
    assert!(
        error.contains("statement timeout") && error.contains("evaluator.statement_timeout_secs"),
        "{error}"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(30),
        "{took:?}"
    );

    // Failed like any run: to be retried after a delay.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let state = jobs::state(&mut tx, JOB_KIND).await.unwrap().unwrap();
    tx.commit().await.unwrap();
    assert_eq!(state.attempts, 1, "{state:?}");
    assert!(
        state
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("evaluator.statement_timeout_secs"),
        "{state:?}"
    );
    assert!(state.run_at > state.last_failed_at, "{state:?}");

    // Once the other session lets go and the retry is due, it runs.
    held.rollback().await.unwrap();
    let mut owner = database.owner_connection().await;
    sqlx::query("UPDATE jobs SET run_at = now() WHERE tenant_id = $1 AND run_at IS NOT NULL")
        .bind(tenant.uuid())
        .execute(&mut owner)
        .await
        .unwrap();
    let round = work_due(&db, &settings, "worker").await.unwrap();
    assert_eq!(
        (round.runs.len(), round.failures.len()),
        (1, 0),
        "{round:?}"
    );
}
