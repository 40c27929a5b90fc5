//! The evaluator's jobs when evaluations fail (issue #12, item 5): a
//! tenant's job is retried with a growing delay and never given up on, one
//! SLA that cannot be evaluated does not stop the others, and what is stuck
//! is shown.
//!
//! On the code before the fix, `a_tenant_whose_evaluation_failed_ten_times_is_evaluated_when_asked_again`
//! failed (the job was marked failed for good and claiming skipped it even
//! after it was enqueued again), and so did
//! `one_sla_whose_definition_no_longer_parses_does_not_stop_the_others` (the
//! whole tenant's evaluation failed on it, every round).

use chrono::{Days, Duration, Utc};
use slaproof_domain::ids::{SlaId, TenantId};
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{JOB_KIND, Settings, schedule_all, work_due};
use slaproof_store::jobs::{self, NewJob};
use slaproof_store::{Database, evaluations, partitions, slas, tenants};
use slaproof_tests::TestDatabase;
use sqlx::PgConnection;

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
"#;

fn settings() -> Settings {
    Settings {
        settle_secs: 0,
        ..Settings::default()
    }
}

/// A tenant with `documents` applied and 50 events of `chat` received five
/// minutes ago (one of them a 500).
async fn tenant_with_events(db: &Database, name: &str, documents: &[&str]) -> TenantId {
    let today = Utc::now().date_naive();
    partitions::ensure(db, today - Days::new(1), today)
        .await
        .unwrap();
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for doc in documents {
        slas::apply(&mut tx, &SlaDefinition::from_document(doc).unwrap())
            .await
            .unwrap();
    }
    let received_at = Utc::now() - Duration::minutes(5);
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, status, latency_us) \
         SELECT $1, $2 - make_interval(secs => i), gen_random_uuid(), $2, 'provider', 'chat', 'big', \
                CASE WHEN i = 0 THEN 500 ELSE 200 END, 1000 \
         FROM generate_series(0, 49) AS i",
    )
    .bind(tenant.uuid())
    .bind(received_at)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    tenant
}

/// Runs `sql` as the owner in a transaction acting for `tenant` (behind
/// the service role's back: what a hand edit or an old release left).
async fn as_owner(database: &TestDatabase, tenant: TenantId, sql: &str) -> u64 {
    use sqlx::Connection;
    let mut owner = database.owner_connection().await;
    let mut tx = owner.begin().await.unwrap();
    sqlx::query("SELECT set_config('app.tenant_id', $1, true)")
        .bind(tenant.uuid().to_string())
        .execute(&mut *tx)
        .await
        .unwrap();
    let done = sqlx::query(sql)
        .bind(tenant.uuid())
        .execute(&mut *tx)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .rows_affected();
    tx.commit().await.unwrap();
    done
}

/// Makes the tenant's pending job due now, as the passing of its retry
/// delay would.
async fn make_due(database: &TestDatabase, tenant: TenantId) {
    let made = as_owner(
        database,
        tenant,
        "UPDATE jobs SET run_at = now() WHERE tenant_id = $1 AND run_at IS NOT NULL",
    )
    .await;
    assert_eq!(made, 1, "the tenant has one pending job");
}

/// Another session holding the tenant's evaluation lock: every run of the
/// tenant fails as busy until it lets go.
async fn hold_tenant_lock(database: &TestDatabase, tenant: TenantId) -> PgConnection {
    let mut holder = database.owner_connection().await;
    sqlx::query("SELECT pg_advisory_lock(hashtextextended('slaproof-evaluate:' || $1, 0))")
        .bind(tenant.uuid().to_string())
        .execute(&mut holder)
        .await
        .unwrap();
    holder
}

async fn release_tenant_lock(mut holder: PgConnection) {
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut holder)
        .await
        .unwrap();
}

/// The latest evaluations of the SLA called `name`.
async fn latest(db: &Database, tenant: TenantId, name: &str) -> Vec<evaluations::StoredEvaluation> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let sla = slas::find(&mut tx, name, None).await.unwrap();
    let latest = evaluations::latest(&mut tx, sla.id).await.unwrap();
    tx.commit().await.unwrap();
    latest
}

/// Asks for the tenant's evaluation explicitly (not the routine ask of
/// every round).
async fn enqueue(db: &Database, tenant: TenantId) {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    jobs::enqueue(
        &mut tx,
        &NewJob {
            kind: JOB_KIND.to_owned(),
            payload: serde_json::json!({}),
            dedup_key: Some("tenant".to_owned()),
            run_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// Fails the tenant's evaluation `times` times in a row through the
/// worker, each once its retry is due.
async fn fail_times(database: &TestDatabase, db: &Database, tenant: TenantId, times: usize) {
    for attempt in 1..=times {
        make_due(database, tenant).await;
        let round = work_due(db, &settings(), "worker").await.unwrap();
        assert!(round.runs.is_empty(), "attempt {attempt} ran");
        assert_eq!(round.failures.len(), 1, "attempt {attempt}: {round:?}");
        assert!(
            round.failures[0]
                .1
                .contains("being evaluated by another worker"),
            "{round:?}"
        );
    }
}

#[tokio::test]
async fn a_tenant_whose_evaluation_failed_ten_times_is_evaluated_when_asked_again() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA]).await;
    schedule_all(&db).await.unwrap();

    let holder = hold_tenant_lock(&database, tenant).await;
    fail_times(&database, &db, tenant, 10).await;
    release_tenant_lock(holder).await;

    // The cause is gone and the evaluation is asked for again.
    enqueue(&db, tenant).await;
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert!(round.failures.is_empty(), "{:?}", round.failures);
    assert_eq!(
        round.runs.iter().map(|r| r.tenant).collect::<Vec<_>>(),
        vec![tenant],
        "the tenant is evaluated again"
    );
    let availability = latest(&db, tenant, "chat-sla").await;
    assert_eq!(availability.len(), 1);
    assert_eq!(
        (availability[0].good, availability[0].total),
        (49, 50),
        "{availability:?}"
    );
}

#[tokio::test]
async fn one_sla_whose_definition_no_longer_parses_does_not_stop_the_others() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA, SECOND_SLA]).await;
    // A stored version a newer release no longer reads.
    let broken = as_owner(
        &database,
        tenant,
        "UPDATE sla_versions SET definition = jsonb_set(definition, '{spec,objectives,0,target}', '\"most of the time\"') \
         WHERE tenant_id = $1 AND sla_id = (SELECT id FROM slas WHERE tenant_id = $1 AND name = 'chat-rolling')",
    )
    .await;
    assert_eq!(broken, 1);

    schedule_all(&db).await.unwrap();
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert!(
        round.failures.is_empty(),
        "the tenant's job fails: {:?}",
        round.failures
    );
    assert_eq!(round.runs.len(), 1);
    let evaluated = latest(&db, tenant, "chat-sla").await;
    assert_eq!(evaluated.len(), 1, "the healthy SLA is evaluated");
    assert_eq!((evaluated[0].good, evaluated[0].total), (49, 50));
}

/// The tenant's evaluate job as it stands.
async fn job_state(db: &Database, tenant: TenantId) -> jobs::JobState {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let state = jobs::state(&mut tx, JOB_KIND).await.unwrap();
    tx.commit().await.unwrap();
    state.expect("the tenant has an evaluate job")
}

async fn failing_slas(
    db: &Database,
    tenant: TenantId,
) -> Vec<slaproof_store::evaluation_failures::FailingSla> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let failing = slaproof_store::evaluation_failures::failing_slas(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    failing
}

/// The delay the job waits before its next attempt, in seconds.
fn delay_secs(state: &jobs::JobState) -> f64 {
    let (Some(run_at), Some(failed_at)) = (state.run_at, state.last_failed_at) else {
        panic!("not waiting after a failure: {state:?}");
    };
    (run_at - failed_at).as_seconds_f64()
}

#[tokio::test]
async fn a_failing_job_waits_longer_after_each_failure_and_is_retried_when_stuck() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA]).await;
    schedule_all(&db).await.unwrap();
    let holder = hold_tenant_lock(&database, tenant).await;

    let mut previous = 0.0;
    for attempt in 1..=10 {
        fail_times(&database, &db, tenant, 1).await;
        let state = job_state(&db, tenant).await;
        assert_eq!(state.attempts, attempt, "{state:?}");
        assert!(
            state
                .last_error
                .as_deref()
                .unwrap_or_default()
                .contains("another worker"),
            "{state:?}"
        );
        assert!(state.failing_since.is_some() && !state.running, "{state:?}");
        // 2^attempts seconds, at most ten minutes, less up to a quarter.
        let full = 2f64.powi(attempt).min(600.0);
        let delay = delay_secs(&state);
        assert!(
            delay <= full && delay >= full * 0.75,
            "attempt {attempt}: {delay} s"
        );
        if attempt < 10 {
            assert!(
                delay > previous,
                "attempt {attempt}: {delay} s after {previous} s"
            );
            assert_eq!(state.stuck_since, None, "attempt {attempt}");
        } else {
            assert_eq!(
                state.stuck_since, state.last_failed_at,
                "stuck at the tenth"
            );
        }
        previous = delay;

        // The routine request of every round leaves the delay alone.
        let scheduled = schedule_all(&db).await.unwrap();
        assert_eq!(job_state(&db, tenant).await, state);
        assert_eq!(
            (
                scheduled.stuck.failing_tenants,
                scheduled.stuck.stuck_tenants
            ),
            (1, u64::from(attempt == 10))
        );
        let round = work_due(&db, &settings(), "worker").await.unwrap();
        assert!(
            round.runs.is_empty() && round.failures.is_empty(),
            "{round:?}"
        );
    }

    // Stuck, and still retried at the longest delay; stuck since the tenth.
    let stuck = job_state(&db, tenant).await;
    fail_times(&database, &db, tenant, 1).await;
    let state = job_state(&db, tenant).await;
    assert_eq!(state.attempts, 11);
    assert_eq!(state.stuck_since, stuck.stuck_since);
    assert_eq!(state.failing_since, stuck.failing_since);
    assert!((450.0..=600.0).contains(&delay_secs(&state)), "{state:?}");

    // Its time comes, the cause is gone: a success clears everything, and
    // the job is kept until the next round asks again.
    release_tenant_lock(holder).await;
    make_due(&database, tenant).await;
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert_eq!(round.runs.len(), 1, "{:?}", round.failures);
    let state = job_state(&db, tenant).await;
    assert_eq!(
        (state.attempts, state.run_at, state.running),
        (0, None, false),
        "{state:?}"
    );
    assert_eq!(
        (
            state.failing_since,
            state.last_failed_at,
            state.stuck_since,
            state.last_error.clone()
        ),
        (None, None, None, None)
    );
    assert!(state.succeeded_at.is_some());
    let scheduled = schedule_all(&db).await.unwrap();
    assert_eq!(scheduled.stuck, slaproof_evaluator::Stuck::default());
    assert!(job_state(&db, tenant).await.run_at.is_some(), "asked again");
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert_eq!(round.runs.len(), 1);
}

#[tokio::test]
async fn asking_for_a_stuck_evaluation_explicitly_starts_it_afresh() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA]).await;
    schedule_all(&db).await.unwrap();
    let holder = hold_tenant_lock(&database, tenant).await;
    fail_times(&database, &db, tenant, 10).await;
    assert!(job_state(&db, tenant).await.stuck_since.is_some());

    enqueue(&db, tenant).await;
    let state = job_state(&db, tenant).await;
    assert_eq!(
        (
            state.attempts,
            state.failing_since,
            state.stuck_since,
            state.last_error.clone()
        ),
        (0, None, None, None),
        "{state:?}"
    );
    assert!(state.run_at.unwrap() <= Utc::now());
    // Failing again starts from the shortest delay.
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert_eq!(round.failures.len(), 1);
    let state = job_state(&db, tenant).await;
    assert_eq!(state.attempts, 1);
    assert!(delay_secs(&state) <= 2.0, "{state:?}");
    release_tenant_lock(holder).await;
}

/// Makes the database refuse every evaluation of `sla` (a trigger, as
/// the owner): an error after other statements of the round ran, which
/// aborts the transaction but for a savepoint.
async fn refuse_evaluations_of(owner: &mut PgConnection, sla: SlaId) {
    for statement in [
        "CREATE FUNCTION public.test_refuse_evaluation() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'evaluations of this SLA are refused'; END $$"
            .to_owned(),
        format!(
            "CREATE TRIGGER test_refuse_evaluation BEFORE INSERT ON evaluations FOR EACH ROW \
             WHEN (NEW.sla_id = '{}') EXECUTE FUNCTION public.test_refuse_evaluation()",
            sla.uuid()
        ),
    ] {
        sqlx::query(&statement).execute(&mut *owner).await.unwrap();
    }
}

#[tokio::test]
async fn an_sla_whose_evaluation_fails_midway_is_rolled_back_alone_and_cleared_once_evaluated() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA, SECOND_SLA]).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rolling = slas::find(&mut tx, "chat-rolling", None).await.unwrap().id;
    tx.commit().await.unwrap();
    // The database refuses the SLA's evaluations: an error after other
    // statements of the round ran, which aborts the transaction but for
    // the SLA's savepoint. chat-rolling is evaluated before chat-sla.
    let mut owner = database.owner_connection().await;
    refuse_evaluations_of(&mut owner, rolling).await;

    for round_number in 1..=10 {
        schedule_all(&db).await.unwrap();
        let round = work_due(&db, &settings(), "worker").await.unwrap();
        assert!(round.failures.is_empty(), "{:?}", round.failures);
        let run = &round.runs[0];
        assert_eq!(run.failed_slas.len(), 1, "{run:?}");
        assert_eq!(run.failed_slas[0].name, "chat-rolling");
        assert!(
            run.evaluations.iter().all(|e| e.sla_name == "chat-sla") && !run.evaluations.is_empty(),
            "{run:?}"
        );
        let failing = failing_slas(&db, tenant).await;
        assert_eq!(failing.len(), 1);
        assert_eq!(
            (
                failing[0].name.as_str(),
                failing[0].version,
                failing[0].failures
            ),
            ("chat-rolling", 1, round_number)
        );
        assert!(
            failing[0]
                .last_error
                .contains("evaluations of this SLA are refused"),
            "{failing:?}"
        );
        assert_eq!(failing[0].stuck(), round_number >= 10);
    }
    assert!(latest(&db, tenant, "chat-rolling").await.is_empty());
    assert_eq!(latest(&db, tenant, "chat-sla").await.len(), 1);
    let scheduled = schedule_all(&db).await.unwrap();
    assert_eq!(
        (scheduled.stuck.failing_slas, scheduled.stuck.stuck_slas),
        (1, 1)
    );
    assert_eq!(
        scheduled.stuck.failing_tenants, 0,
        "the job itself succeeds"
    );

    sqlx::query("DROP TRIGGER test_refuse_evaluation ON evaluations")
        .execute(&mut owner)
        .await
        .unwrap();
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert!(round.runs[0].failed_slas.is_empty());
    assert!(failing_slas(&db, tenant).await.is_empty());
    assert_eq!(latest(&db, tenant, "chat-rolling").await.len(), 1);
    assert_eq!(
        schedule_all(&db).await.unwrap().stuck,
        slaproof_evaluator::Stuck::default()
    );
}

#[tokio::test]
async fn an_unreadable_sla_is_shown_failing_and_evaluated_once_it_reads_again() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA, SECOND_SLA]).await;
    let break_it = "UPDATE sla_versions SET definition = jsonb_set(definition, '{spec,objectives,0,target}', '\"most of the time\"') \
         WHERE tenant_id = $1 AND sla_id = (SELECT id FROM slas WHERE tenant_id = $1 AND name = 'chat-rolling')";
    assert_eq!(as_owner(&database, tenant, break_it).await, 1);
    for _ in 0..2 {
        schedule_all(&db).await.unwrap();
        work_due(&db, &settings(), "worker").await.unwrap();
    }
    let failing = failing_slas(&db, tenant).await;
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(
        (failing[0].name.as_str(), failing[0].failures),
        ("chat-rolling", 2)
    );
    assert!(
        failing[0]
            .last_error
            .starts_with("stored SLA definition is unreadable: spec.objectives[0].target"),
        "{failing:?}"
    );
    assert!(failing[0].first_failed_at < failing[0].last_failed_at);

    // Repaired (as a release that reads it again would): never covered, so
    // backfilled like a new version, and its events all count.
    let repair = "UPDATE sla_versions SET definition = jsonb_set(definition, '{spec,objectives,0,target}', '\"95%\"') \
         WHERE tenant_id = $1 AND sla_id = (SELECT id FROM slas WHERE tenant_id = $1 AND name = 'chat-rolling')";
    assert_eq!(as_owner(&database, tenant, repair).await, 1);
    schedule_all(&db).await.unwrap();
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert!(round.runs[0].failed_slas.is_empty());
    assert!(failing_slas(&db, tenant).await.is_empty());
    let rolling = latest(&db, tenant, "chat-rolling").await;
    assert_eq!(rolling.len(), 1);
    assert_eq!((rolling[0].good, rolling[0].total), (49, 50));
}

#[tokio::test]
async fn the_api_shows_the_tenants_failing_slas_to_its_provider_only() {
    use reqwest::StatusCode;
    use slaproof_tests::fixtures::{self, trust_test_key};

    let app = slaproof_tests::spawn_app_with(|c| {
        trust_test_key(c);
        c.evaluator.interval_secs = 1;
        c.evaluator.settle_secs = 0;
    })
    .await;
    let database = &app.database;
    let broken = "UPDATE sla_versions SET definition = jsonb_set(definition, '{spec,objectives,0,target}', '\"most of the time\"') \
         WHERE tenant_id = $1 AND sla_id = (SELECT id FROM slas WHERE tenant_id = $1 AND name = 'chat-rolling')";
    let mine = tenant_with_events(&app.db, "provider", &[SLA, SECOND_SLA]).await;
    assert_eq!(as_owner(database, mine, broken).await, 1);
    let other = tenant_with_events(&app.db, "other", &[SECOND_SLA]).await;
    assert_eq!(as_owner(database, other, broken).await, 1);
    let mut tx = app.db.tenant_tx(mine).await.unwrap();
    let customer = slaproof_store::customers::create(&mut tx, "acme-corp", "Acme")
        .await
        .unwrap()
        .id;
    tx.commit().await.unwrap();

    let http = reqwest::Client::new();
    let admin = fixtures::token(mine, &["provider_admin"], None);
    let get = async |token: &str| {
        fixtures::call(
            &http,
            app.address,
            token,
            "GET",
            "/v1/evaluation-status",
            None,
        )
        .await
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let body = loop {
        let (status, body) = get(&admin).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["failing_slas"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
            && body["job"]["last_succeeded_at"].is_string()
        {
            break body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no failing SLA shown within 30 s: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let failing = body["failing_slas"].as_array().unwrap();
    assert_eq!(failing.len(), 1, "only the tenant's own: {body}");
    assert_eq!(failing[0]["sla"], "chat-rolling");
    assert_eq!(failing[0]["version"], 1);
    assert!(failing[0]["failures"].as_i64().unwrap() >= 1);
    assert!(
        failing[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("stored SLA definition is unreadable"),
        "{body}"
    );
    assert!(failing[0]["failing_since"].is_string());
    assert!(failing[0]["stuck"].is_boolean());
    // The job succeeded: the other SLA was evaluated.
    // (A round may hold it now: one attempt, the running one.)
    assert!(body["job"]["attempts"].as_i64().unwrap() <= 1, "{body}");
    assert!(body["job"].get("failing_since").is_none(), "{body}");
    assert!(body["job"].get("last_error").is_none(), "{body}");
    assert!(
        ["idle", "scheduled", "running"].contains(&body["job"]["state"].as_str().unwrap()),
        "{body}"
    );
    assert!(!latest(&app.db, mine, "chat-sla").await.is_empty());

    // Another provider role with sla:read sees it; a customer's user, or a
    // role without sla:read, does not.
    let (status, _) = get(&fixtures::token(mine, &["operations_viewer"], None)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(&fixtures::token(mine, &["customer_admin"], Some(customer))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = get(&fixtures::token(mine, &["auditor"], None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["scope"], "sla:read", "{body}");
    app.stop().await.unwrap();
}

/// SLAs share a savepoint on the first try (`SAVEPOINT_CHUNK`): when one
/// fails after another of its chunk was evaluated, the chunk's writes are
/// rolled back and each evaluated again alone, so the one before it is
/// recorded once, not twice and not lost.
#[tokio::test]
async fn an_sla_failing_after_another_of_its_chunk_leaves_that_one_recorded_once() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenant_with_events(&db, "acme", &[SLA, SECOND_SLA]).await;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let (rolling, calendar) = (
        slas::find(&mut tx, "chat-rolling", None).await.unwrap().id,
        slas::find(&mut tx, "chat-sla", None).await.unwrap().id,
    );
    tx.commit().await.unwrap();
    // chat-rolling is evaluated before chat-sla: refuse the second.
    let mut owner = database.owner_connection().await;
    refuse_evaluations_of(&mut owner, calendar).await;
    schedule_all(&db).await.unwrap();
    let round = work_due(&db, &settings(), "worker").await.unwrap();
    assert!(round.failures.is_empty(), "{:?}", round.failures);
    let run = &round.runs[0];
    assert_eq!(
        run.failed_slas
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>(),
        ["chat-sla"]
    );
    assert_eq!(
        run.evaluations
            .iter()
            .map(|e| e.sla_name.as_str())
            .collect::<Vec<_>>(),
        ["chat-rolling"]
    );
    // Read as the owner acting for the tenant (row-level security).
    sqlx::query("SELECT set_config('app.tenant_id', $1, false)")
        .bind(tenant.uuid().to_string())
        .execute(&mut owner)
        .await
        .unwrap();
    let rows: Vec<(uuid::Uuid, i64)> = sqlx::query_as(
        "SELECT sla_id, count(*) FROM evaluations WHERE tenant_id = $1 GROUP BY sla_id",
    )
    .bind(tenant.uuid())
    .fetch_all(&mut owner)
    .await
    .unwrap();
    assert_eq!(rows, [(rolling.uuid(), 1)], "one objective, one round");
    let signals: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sla_signals WHERE tenant_id = $1 AND sla_id = $2")
            .bind(tenant.uuid())
            .bind(calendar.uuid())
            .fetch_one(&mut owner)
            .await
            .unwrap();
    assert_eq!(signals, 0, "nothing of the failing SLA is kept");
}
