//! The store's repositories against a real Postgres: SLA versions, ingest
//! keys, the job queue, the outbox and event partitions.

use std::time::Duration;

use chrono::{NaiveDate, Utc};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::{StoreError, customers, ingest_keys, jobs, outbox, partitions, slas, tenants};
use slaproof_tests::TestDatabase;

fn demo_sla() -> SlaDefinition {
    SlaDefinition::from_document(slaproof::demo::SLA_DOCUMENT).unwrap()
}

#[tokio::test]
async fn applying_an_sla_versions_changes_and_ignores_repeats() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "acme-ai", "Acme AI").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();

    // The customer named by the document must exist.
    let err = slas::apply(&mut tx, &demo_sla()).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NotFound {
                what: "customer",
                ..
            }
        ),
        "{err}"
    );
    tx.rollback().await.unwrap();

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    customers::create(&mut tx, "acme-corp", "Acme Corp")
        .await
        .unwrap();
    let first = slas::apply(&mut tx, &demo_sla()).await.unwrap();
    assert_eq!((first.version, first.applied), (1, slas::Applied::Created));

    let again = slas::apply(&mut tx, &demo_sla()).await.unwrap();
    assert_eq!(
        (again.sla, again.version, again.applied),
        (first.sla, 1, slas::Applied::Unchanged)
    );

    let changed_text = slaproof::demo::SLA_DOCUMENT.replace("target: 99.9%", "target: 99.95%");
    let changed = SlaDefinition::from_document(&changed_text).unwrap();
    let second = slas::apply(&mut tx, &changed).await.unwrap();
    assert_eq!(
        (second.sla, second.version, second.applied),
        (first.sla, 2, slas::Applied::Updated)
    );
    tx.commit().await.unwrap();

    // The version in force and the old one both read back exactly.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let current = slas::find(&mut tx, "acme-enterprise", None).await.unwrap();
    assert_eq!((current.version, current.current_version), (2, 2));
    assert_eq!(current.definition, changed);
    let old = slas::find(&mut tx, "acme-enterprise", Some(1))
        .await
        .unwrap();
    assert_eq!(old.definition, demo_sla());
    assert_eq!(old.current_version, 2);
    let err = slas::find(&mut tx, "acme-enterprise", Some(3))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("version 3"), "{err}");

    // Objectives are stored per version with their targets.
    let targets: Vec<(String, i32, i32)> = sqlx::query_as(
        "SELECT name, version, target_ppm FROM objectives WHERE name = 'availability' ORDER BY version",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    assert_eq!(
        targets,
        vec![
            ("availability".into(), 1, 999_000),
            ("availability".into(), 2, 999_500)
        ]
    );

    // History is append-only: the service role cannot rewrite a version.
    let err = sqlx::query("UPDATE sla_versions SET definition = '{}'::jsonb")
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert_eq!(
        err.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("42501")
    );
}

#[tokio::test]
async fn ingest_keys_authenticate_until_revoked_and_are_stored_hashed() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "acme-ai", "Acme AI").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "gateway").await.unwrap();
    tx.commit().await.unwrap();

    assert!(key.reveal().starts_with(&key.key.prefix));
    assert!(
        !format!("{key:?}").contains(key.reveal()),
        "Debug must not show the secret"
    );
    let who = ingest_keys::authenticate(&db, key.reveal())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((who.tenant, who.key), (tenant, key.key.id));

    // A wrong secret under a right prefix, and garbage, are both unknown.
    let mut wrong = key.reveal().to_owned();
    let last = wrong.pop().unwrap();
    wrong.push(if last == '0' { '1' } else { '0' });
    assert_eq!(ingest_keys::authenticate(&db, &wrong).await.unwrap(), None);
    assert_eq!(
        ingest_keys::authenticate(&db, "Bearer nonsense")
            .await
            .unwrap(),
        None
    );

    // Only the hash is stored.
    let mut owner = database.owner_connection().await;
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM ingest_keys WHERE position($1 in prefix || encode(secret_sha256, 'hex')) > 0")
        .bind(&key.reveal()[key.key.prefix.len() + 1..])
        .fetch_one(&mut owner)
        .await
        .unwrap();
    assert_eq!(stored, 0);

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let revoked = ingest_keys::revoke(&mut tx, &key.key.prefix).await.unwrap();
    tx.commit().await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(
        ingest_keys::authenticate(&db, key.reveal()).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn tenants_are_found_by_name_or_id_and_names_are_unique() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "acme-ai", "Acme AI").await.unwrap();
    assert_eq!(tenants::resolve(&db, "acme-ai").await.unwrap(), tenant.id);
    assert_eq!(
        tenants::resolve(&db, &tenant.id.to_string()).await.unwrap(),
        tenant.id
    );
    assert!(matches!(
        tenants::resolve(&db, "nobody").await,
        Err(StoreError::NotFound { .. })
    ));

    let err = tenants::create(&db, "acme-ai", "again").await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(err.to_string(), "a tenant with this name exists already");
    let err = tenants::create(&db, "Not A Slug", "x").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("tenant name must be"), "{err}");
}

#[tokio::test]
async fn jobs_are_claimed_once_across_workers_and_survive_a_lost_lease() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let mut tenants_ids = Vec::new();
    for name in ["t-one", "t-two", "t-three"] {
        let tenant = tenants::create(&db, name, name).await.unwrap().id;
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        let job = jobs::NewJob {
            kind: "evaluate".into(),
            payload: serde_json::json!({"tenant": name}),
            dedup_key: Some("evaluate".into()),
            run_at: Utc::now(),
        };
        let id = jobs::enqueue(&mut tx, &job).await.unwrap();
        // Enqueued twice while pending: still one job.
        assert_eq!(jobs::enqueue(&mut tx, &job).await.unwrap(), id);
        tx.commit().await.unwrap();
        tenants_ids.push(tenant);
    }

    // Two workers claiming at the same time never get the same job.
    let lease = Duration::from_secs(60);
    let (left, right) = tokio::join!(
        jobs::claim(&db, "evaluate", "worker-a", 2, lease),
        jobs::claim(&db, "evaluate", "worker-b", 2, lease)
    );
    let (left, right) = (left.unwrap(), right.unwrap());
    assert_eq!(left.len() + right.len(), 3);
    let mut claimed: Vec<_> = left.iter().chain(&right).map(|j| j.tenant).collect();
    claimed.sort();
    let mut expected = tenants_ids.clone();
    expected.sort();
    assert_eq!(claimed, expected);
    assert!(
        jobs::claim(&db, "evaluate", "worker-c", 10, lease)
            .await
            .unwrap()
            .is_empty()
    );

    // Asked again while held: done once more after it finishes.
    let job = left.first().or(right.first()).unwrap().clone();
    let mut tx = db.tenant_tx(job.tenant).await.unwrap();
    jobs::enqueue(
        &mut tx,
        &jobs::NewJob {
            kind: "evaluate".into(),
            payload: serde_json::json!({}),
            dedup_key: Some("evaluate".into()),
            run_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    assert!(jobs::complete(&mut tx, &job).await.unwrap());
    tx.commit().await.unwrap();
    let rerun = jobs::claim(&db, "evaluate", "worker-c", 10, lease)
        .await
        .unwrap();
    assert_eq!(rerun.iter().map(|j| j.id).collect::<Vec<_>>(), vec![job.id]);

    // A worker whose lease ran out cannot complete; the job goes to another.
    let short = jobs::claim(&db, "evaluate", "worker-d", 10, Duration::ZERO)
        .await
        .unwrap();
    assert!(short.is_empty(), "held jobs are not claimable");
    let mut tx = db.tenant_tx(rerun[0].tenant).await.unwrap();
    sqlx::query("UPDATE jobs SET locked_until = now() - interval '1 second'")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let stolen = jobs::claim(&db, "evaluate", "worker-e", 10, lease)
        .await
        .unwrap();
    assert_eq!(stolen.len(), 1);
    let mut tx = db.tenant_tx(rerun[0].tenant).await.unwrap();
    assert!(
        !jobs::complete(&mut tx, &rerun[0]).await.unwrap(),
        "the old holder lost its lease"
    );
    assert!(jobs::complete(&mut tx, &stolen[0]).await.unwrap());
    tx.commit().await.unwrap();

    // A failed attempt comes back after its delay, with the error kept.
    let failing = left
        .iter()
        .chain(&right)
        .find(|j| j.id != job.id)
        .unwrap()
        .clone();
    jobs::fail(&db, &failing, "boom", Duration::ZERO)
        .await
        .unwrap();
    let retried = jobs::claim(&db, "evaluate", "worker-g", 10, lease)
        .await
        .unwrap();
    let again = retried
        .iter()
        .find(|j| j.id == failing.id)
        .expect("retried");
    assert_eq!(again.attempts, 2);
}

#[tokio::test]
async fn outbox_messages_are_relayed_in_order_and_once() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "acme-ai", "Acme AI").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let first = outbox::enqueue(&mut tx, "sla.breached", &serde_json::json!({"n": 1}))
        .await
        .unwrap();
    let second = outbox::enqueue(
        &mut tx,
        "slo.budget_exhausted",
        &serde_json::json!({"n": 2}),
    )
    .await
    .unwrap();
    // Not committed yet: nothing to relay.
    assert!(
        outbox::claim(&db, "relay", 10, Duration::from_secs(30))
            .await
            .unwrap()
            .is_empty()
    );
    tx.commit().await.unwrap();

    let claimed = outbox::claim(&db, "relay", 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        claimed.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![first, second]
    );
    assert!(claimed[0].seq < claimed[1].seq);
    assert!(
        outbox::claim(&db, "relay-2", 10, Duration::from_secs(30))
            .await
            .unwrap()
            .is_empty()
    );

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    outbox::mark_dispatched(&mut tx, &[first, second])
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let err = outbox::enqueue(&mut tx, "Not An Event", &serde_json::json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
}

#[tokio::test]
async fn event_partitions_are_made_ahead_and_dropped_after_retention() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).unwrap();

    let done = partitions::upkeep(&db, day(20), 3, 5).await.unwrap();
    assert_eq!(done.created, 5, "yesterday, today and 3 days ahead");
    assert!(done.dropped.is_empty());
    assert_eq!(
        partitions::days(&db).await.unwrap(),
        (19..=23).map(day).collect::<Vec<_>>()
    );

    // Running again changes nothing; replicas can run it side by side.
    let (x, y) = tokio::join!(
        partitions::upkeep(&db, day(20), 3, 5),
        partitions::upkeep(&db, day(20), 3, 5)
    );
    assert_eq!(x.unwrap().created + y.unwrap().created, 0);

    // Eight days later with 5 days of retention: days before the 23rd go.
    let done = partitions::upkeep(&db, day(28), 3, 5).await.unwrap();
    assert_eq!(
        done.dropped,
        vec![
            "events_p20261119",
            "events_p20261120",
            "events_p20261121",
            "events_p20261122"
        ]
    );
    // The 23rd is within retention and kept; the gap days the process was
    // away for are not made up front (ingest makes a past day on demand).
    let mut expected = vec![day(23)];
    expected.extend(
        day(27)
            .iter_days()
            .take_while(|d| *d <= day(28) + chrono::Days::new(3)),
    );
    assert_eq!(partitions::days(&db).await.unwrap(), expected);

    let err = partitions::ensure(&db, day(10), day(1)).await.unwrap_err();
    assert!(err.to_string().contains("before it starts"), "{err}");
}

#[tokio::test]
async fn a_refused_write_names_the_field_never_the_constraint() {
    // Found by reading the code: 422 answers carried the schema's
    // constraint names (`customers_external_ref_format`) as their field.
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "acme-ai", "Acme AI").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let err = customers::create(&mut tx, "not a ref!", "Bad")
        .await
        .unwrap_err();
    let StoreError::Invalid { field, message, .. } = &err else {
        panic!("not refused as invalid: {err}");
    };
    assert_eq!(*field, "external_ref");
    assert!(!message.contains("customers_"), "{message}");
    assert!(!err.to_string().contains("customers_"), "{err}");
}
