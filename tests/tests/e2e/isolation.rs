//! Tenant isolation, proven from the catalog: every table of the schema is
//! walked, and for each, a transaction acting for tenant A can neither read
//! nor write tenant B's rows. A table added later without a policy, or
//! without a row in the fixture below, fails this test.

use chrono::{Duration, Utc};
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_store::{
    Database, customers, events, ingest_keys, jobs, maintenance, outbox, partitions, slas, tenants,
};
use slaproof_tests::TestDatabase;
use sqlx::{Connection, PgConnection, Row};

/// Tables that are not tenant data, each with the reason.
const NOT_TENANT_TABLES: &[(&str, &str)] = &[
    (
        "_sqlx_migrations",
        "the migration ledger; the service role has no access",
    ),
    (
        "platform_secrets",
        "the platform's own secrets, reached through slaproof_platform_secret() only",
    ),
];

/// Puts one row for `name` into every tenant table, through the store, as a
/// service would. Add a line here when you add a tenant table.
async fn seed_tenant(db: &Database, name: &str) -> TenantId {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let today = Utc::now().date_naive();
    partitions::ensure(db, today, today).await.unwrap();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let acme = customers::create(&mut tx, "acme-corp", "Acme")
        .await
        .unwrap()
        .id;
    ingest_keys::create(&mut tx, "seed").await.unwrap();
    let definition = SlaDefinition::from_document(slaproof::demo::SLA_DOCUMENT).unwrap();
    let applied = slas::apply(&mut tx, &definition).await.unwrap();
    let window = maintenance::create(
        &mut tx,
        &maintenance::Announcement {
            sla: Some(applied.sla),
            starts_at: Utc::now(),
            ends_at: Utc::now() + Duration::hours(1),
            description: "seed",
            by: "seed",
            at: None,
        },
    )
    .await
    .unwrap();
    // Its acceptance by the customer, and an audit record of it.
    maintenance::accept(&mut tx, window.id, applied.sla, Some(acme), "seed")
        .await
        .unwrap();
    slaproof_store::audit::record(
        &mut tx,
        applied.sla,
        "maintenance.accepted",
        &slaproof_store::audit::Actor {
            subject: "seed",
            customer: None,
        },
        &serde_json::json!({}),
    )
    .await
    .unwrap();
    events::insert(
        &mut tx,
        &StoredEvent {
            id: Default::default(),
            occurred_at: Utc::now(),
            source: EventSource::Provider,
            service: "chat-completions".into(),
            // Named, so the evaluator's run below tallies the reference
            // (customer_references) and the demo SLA counts the event.
            customer: Some("acme-corp".into()),
            model: Some("llama-3".into()),
            request_id: Some(format!("{name}-1")),
            status: Some(200),
            error_class: None,
            latency_us: Some(120_000),
            ttft_us: Some(30_000),
            tpot_us: Some(9_000),
            input_tokens: Some(100),
            output_tokens: Some(20),
            streaming: Some(true),
            attributes: serde_json::json!({"cache_hit": 1}),
        },
    )
    .await
    .unwrap();
    jobs::enqueue(
        &mut tx,
        &jobs::NewJob {
            kind: "evaluate".into(),
            payload: serde_json::json!({}),
            dedup_key: Some("all".into()),
            run_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    // A webhook endpoint (created before the fact, so the fact fans out to
    // it), the fact, its delivery and one attempt.
    let endpoint = slaproof_store::webhooks::create(
        &mut tx,
        &slaproof_store::webhooks::NewEndpoint {
            id: slaproof_domain::ids::WebhookEndpointId::new(),
            url: "https://hooks.example.com/slaproof".into(),
            description: "seed".into(),
            event_types: vec!["sla.*".into()],
            enabled: true,
            secret_sealed: vec![0; 60],
            headers: Default::default(),
            flow: Default::default(),
        },
    )
    .await
    .unwrap();
    let message = outbox::enqueue(&mut tx, "sla.breached", &serde_json::json!({"seed": true}))
        .await
        .unwrap();
    let seed = serde_json::json!({"seed": true});
    let fanned = slaproof_store::webhooks::fan_out(
        &mut tx,
        &[slaproof_store::webhooks::Relayed {
            message,
            event_type: "sla.breached".into(),
            payload: seed,
            created_at: Utc::now(),
        }],
    )
    .await
    .unwrap();
    assert_eq!(fanned, 1, "the seeded fact reaches the seeded endpoint");
    sqlx::query(
        "INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, started_at, duration_ms, status) \
         SELECT tenant_id, id, 1, now(), 12, 500 FROM webhook_deliveries WHERE endpoint_id = $1",
    )
    .bind(endpoint.id.uuid())
    .execute(&mut *tx)
    .await
    .unwrap();
    // The API's embed origins.
    sqlx::query("INSERT INTO api_embed_origins (tenant_id, origin) VALUES ($1, 'https://console.example.com')")
        .bind(tenant.uuid())
        .execute(&mut *tx)
        .await
        .unwrap();
    // A revoked embed token.
    slaproof_store::embed_tokens::revoke(&mut tx, uuid::Uuid::new_v4())
        .await
        .unwrap();
    // The API's idempotency keys.
    sqlx::query(
        "INSERT INTO api_idempotency_keys (tenant_id, subject, key, fingerprint, status, response) \
         VALUES ($1, 'seed', 'seed', '\\x00', 201, '{}')",
    )
    .bind(tenant.uuid())
    .execute(&mut *tx)
    .await
    .unwrap();
    // A gauge value by callback, about the seeded event's request.
    slaproof_store::gauges::insert(
        &mut tx,
        &[slaproof_store::gauges::GaugeValue {
            metric: "quality_score".into(),
            service: "chat-completions".into(),
            request_id: format!("{name}-1"),
            value: 0.9,
            measured_at: None,
        }],
    )
    .await
    .unwrap();
    // A GenAI histogram point from OTLP metrics.
    slaproof_store::histograms::insert(
        &mut tx,
        &[slaproof_store::histograms::HistogramPoint {
            id: uuid::Uuid::now_v7(),
            metric: "gen_ai.server.time_to_first_token".into(),
            unit: "s".into(),
            service: "chat-completions".into(),
            model: Some("llama-3".into()),
            attributes: serde_json::json!({}),
            temporality: slaproof_store::histograms::Temporality::Delta,
            start_time: None,
            time: Utc::now(),
            bounds: vec![0.5],
            bucket_counts: vec![1, 0],
            count: 1,
            sum: Some(0.2),
            min: None,
            max: None,
        }],
    )
    .await
    .unwrap();
    // A synthetic probe.
    slaproof_store::probes::create(
        &mut tx,
        &slaproof_store::probes::ProbeDefinition {
            name: "seed".into(),
            service: "chat-completions".into(),
            customer: None,
            model: None,
            kind: slaproof_store::probes::ProbeKind::Http,
            method: "GET".into(),
            url: "https://api.example.com/health".into(),
            headers: [("authorization".to_owned(), "Bearer seed".to_owned())].into(),
            body: None,
            expected_status: 200,
            interval_secs: 60,
            timeout_ms: 1000,
            enabled: true,
        },
    )
    .await
    .unwrap();
    // The first event of the seeded request, as the evaluator records it
    // for gauge objectives.
    sqlx::query(
        "INSERT INTO gauge_requests (tenant_id, service, request_id, occurred_at, received_at) \
         VALUES ($1, 'chat-completions', $2, now(), now())",
    )
    .bind(tenant.uuid())
    .bind(format!("{name}-1"))
    .execute(&mut *tx)
    .await
    .unwrap();
    // A customer's own alert line on the demo SLA (the evaluator keeps its
    // crossing state below).
    let acme = customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap();
    slaproof_store::thresholds::set(
        &mut tx,
        applied.sla,
        acme.id,
        "availability",
        slaproof_store::thresholds::Lines {
            compliance_below_ppm: Some(999_500),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    // The evaluator's tables: a run as of two minutes after the seeded
    // event fills rollups, watermark, coverage, evaluations and alert
    // state; its first evaluation is frozen as a period result.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = slaproof_evaluator::evaluate_tenant_up_to(
        &mut tx,
        &slaproof_evaluator::Settings::default(),
        Some(Utc::now() + Duration::minutes(2)),
    )
    .await
    .unwrap();
    // Frozen as its own record, as a period close does.
    let mut frozen = run.evaluations[0].clone();
    frozen.id = uuid::Uuid::now_v7();
    slaproof_evaluator::records::freeze_period(
        &mut tx,
        &frozen,
        &serde_json::json!({ "kind": "close" }),
    )
    .await
    .unwrap();
    // Its attestation, as the close records it.
    let attestation = slaproof_store::attestations::request(
        &mut tx,
        &slaproof_store::attestations::NewAttestation {
            sla: applied.sla,
            version: frozen.version,
            objective: frozen.objective.clone(),
            period_start: frozen.period.start,
            period_end: frozen.period.end,
            revision: 1,
            vector: Err("seed".into()),
            anchor_path: slaproof_domain::anchoring::AnchorPath::Batched,
        },
    )
    .await
    .unwrap()
    .unwrap();
    // And a batch it joins, as the batched path gathers them.
    slaproof_store::attestation_batches::join(
        &mut tx,
        attestation,
        std::time::Duration::from_secs(3600),
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    // The demo SLA has weights: its composite is evaluated; frozen likewise.
    let mut composite = run.composites[0].clone();
    composite.id = uuid::Uuid::now_v7();
    slaproof_evaluator::composite::freeze(
        &mut tx,
        &composite,
        &serde_json::json!({ "kind": "close" }),
    )
    .await
    .unwrap();
    // A closed period judged again, as the evaluator notes it.
    sqlx::query(
        "INSERT INTO period_checks (tenant_id, sla_id, period_start) VALUES ($1, $2, now())",
    )
    .bind(tenant.uuid())
    .bind(applied.sla.uuid())
    .execute(&mut *tx)
    .await
    .unwrap();
    // A day measured again to the same numbers, as the evaluator notes it.
    sqlx::query(
        "INSERT INTO measurement_checks (tenant_id, sla_id, sla_version, day_start, checked_at) \
         VALUES ($1, $2, 1, date_trunc('day', now()), now())",
    )
    .bind(tenant.uuid())
    .bind(applied.sla.uuid())
    .execute(&mut *tx)
    .await
    .unwrap();
    // A customer's fee and a credit owed, as compensation writes it.
    let customer = customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap()
        .id;
    slaproof_store::credits::add_fee(
        &mut tx,
        &slaproof_store::credits::Fee {
            customer,
            effective_from: Utc::now() - Duration::days(60),
            effective_on: None,
            currency: "EUR".into(),
            minor_units: 2,
            amount_minor: 100_000,
            created_at: Utc::now(),
            created_by: "seed".into(),
        },
    )
    .await
    .unwrap();
    slaproof_store::credits::append(
        &mut tx,
        &slaproof_store::credits::CreditEntry {
            id: slaproof_domain::ids::CreditId::new(),
            sla: applied.sla,
            customer,
            period_start: Utc::now() - Duration::days(30),
            period_end: Utc::now(),
            version: 1,
            revision: 1,
            kind: slaproof_store::credits::EntryKind::Issued,
            corrects: None,
            currency: "EUR".into(),
            minor_units: 2,
            amount_minor: 100,
            total_minor: 100,
            computation: serde_json::json!({}),
            results: serde_json::json!([]),
            attestation: None,
            created_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    // The provider's correction of that period's fee.
    let eur = slaproof_domain::credit::Currency::new("EUR", None).unwrap();
    slaproof_store::fee_corrections::record(
        &mut tx,
        &slaproof_store::fee_corrections::FeeCorrection {
            id: uuid::Uuid::nil(),
            sla: applied.sla,
            customer,
            period_start: Utc::now() - Duration::days(30),
            fee: slaproof_domain::credit::Money::new(120_000, eur.clone()),
            was: slaproof_domain::credit::Money::new(100_000, eur),
            reason: "seed".into(),
            created_by: "seed".into(),
            created_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    // An SLA whose evaluation failed, as the evaluator records it (after
    // the run above, which would clear it).
    sqlx::query(
        "INSERT INTO evaluation_failures (tenant_id, sla_id, version, last_error) VALUES ($1, $2, 1, 'seed')",
    )
    .bind(tenant.uuid())
    .bind(applied.sla.uuid())
    .execute(&mut *tx)
    .await
    .unwrap();
    // A transparency log of one leaf, its day's head and a check's report,
    // as the builder and a check write them.
    for statement in [
        "INSERT INTO transparency_logs (tenant_id, size, logged_through) VALUES ($1, 1, '2026-11-30')",
        "INSERT INTO transparency_entries (tenant_id, occurred_at, event_id, leaf_index, log_day, late) \
         VALUES ($1, '2026-11-30T12:00:00Z', gen_random_uuid(), 0, '2026-11-30', false)",
        "INSERT INTO transparency_hashes (tenant_id, chunk, hashes) VALUES ($1, 0, decode(repeat('ab', 32), 'hex'))",
        "INSERT INTO transparency_heads (tenant_id, log_day, first_index, size, root, checkpoint, verifier_key, built_at) \
         VALUES ($1, '2026-11-30', 0, 1, decode(repeat('ab', 32), 'hex'), 'seed', 'seed', now())",
        "INSERT INTO transparency_anchors (tenant_id, log_day, head_id, anchor) \
         VALUES ($1, '2026-11-30', '0x' || repeat('ab', 32), '{}')",
        "INSERT INTO transparency_checks (tenant_id, id, checked_by, checked_at, requests, included, \
             disagreeing, altered, not_logged, missing, report) \
         VALUES ($1, gen_random_uuid(), 'seed', now(), 0, 0, 0, 0, 0, 0, '{}')",
    ] {
        sqlx::query(statement)
            .bind(tenant.uuid())
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    // A day's measurement of the SLA's objective and its anchored
    // commitment, as the evaluator and the attestation worker write them.
    for statement in [
        "INSERT INTO transparency_measurements (tenant_id, sla_id, sla_version, objective, day_start, \
             revision, day_end, field, unit, threshold, good, bad, measured_at) \
         SELECT $1, $2, 1, 'seed', '2026-11-29T00:00:00Z', 1, '2026-11-30T00:00:00Z', 'ratio', \
             'verdict', 0, 10, 1, now()",
        "INSERT INTO transparency_commitments (tenant_id, sla_id, sla_version, objective, day_start, \
             revision, commitment, member_id, log_day, proof) \
         VALUES ($1, $2, 1, 'seed', '2026-11-29T00:00:00Z', 1, '1', '0x' || repeat('cd', 32), \
             '2026-11-30', '[]')",
    ] {
        sqlx::query(statement)
            .bind(tenant.uuid())
            .bind(applied.sla.uuid())
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    tenant
}

#[derive(Debug)]
struct Table {
    name: String,
    is_partition: bool,
    rls: bool,
    forced: bool,
    policies: i64,
    has_tenant_id: bool,
}

async fn tables(owner: &mut PgConnection) -> Vec<Table> {
    sqlx::query(
        "SELECT c.relname::text AS name, c.relispartition, c.relrowsecurity, c.relforcerowsecurity, \
                (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid) AS policies, \
                EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' \
                        AND NOT a.attisdropped) AS has_tenant_id \
         FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') \
         ORDER BY c.relname",
    )
    .fetch_all(owner)
    .await
    .unwrap()
    .into_iter()
    .map(|r| Table {
        name: r.get("name"),
        is_partition: r.get("relispartition"),
        rls: r.get("relrowsecurity"),
        forced: r.get("relforcerowsecurity"),
        policies: r.get("policies"),
        has_tenant_id: r.get("has_tenant_id"),
    })
    .collect()
}

/// The column naming a row's tenant.
fn tenant_column(table: &str) -> &'static str {
    if table == "tenants" {
        "id"
    } else {
        "tenant_id"
    }
}

async fn count_for(conn: &mut PgConnection, table: &str, tenant: TenantId) -> i64 {
    sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {table} WHERE {} = $1",
        tenant_column(table)
    ))
    .bind(tenant.uuid())
    .fetch_one(conn)
    .await
    .unwrap()
}

/// Insertable columns of a table (generated ones are left to the database).
async fn insertable_columns(owner: &mut PgConnection, table: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 \
         AND NOT a.attisdropped AND a.attidentity = '' AND a.attgenerated = '' ORDER BY a.attnum",
    )
    .bind(table)
    .fetch_all(owner)
    .await
    .unwrap()
}

/// Runs one write as the service role acting for `actor` and returns how
/// many rows it touched, or the SQLSTATE that refused it. Rolled back
/// either way: only refusal matters here.
async fn attempt(
    db: &Database,
    actor: TenantId,
    sql: &str,
    other: TenantId,
) -> Result<u64, String> {
    let mut tx = db.tenant_tx(actor).await.unwrap();
    let result = sqlx::query(sql)
        .bind(other.uuid())
        .bind(actor.uuid())
        .execute(&mut *tx)
        .await;
    tx.rollback().await.unwrap();
    match result {
        Ok(done) => Ok(done.rows_affected()),
        Err(err) => Err(err
            .as_database_error()
            .and_then(|e| e.code().map(|c| c.into_owned()))
            .unwrap_or_else(|| err.to_string())),
    }
}

/// 42501: insufficient_privilege, which is also what a row-level security
/// WITH CHECK failure raises.
const REFUSED: &str = "42501";

#[tokio::test]
async fn a_tenant_can_neither_read_nor_write_another_tenants_rows_in_any_table() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let a = seed_tenant(&db, "tenant-a").await;
    let b = seed_tenant(&db, "tenant-b").await;
    let mut owner = database.owner_connection().await;

    let tables = tables(&mut owner).await;
    assert!(
        tables.iter().any(|t| t.name == "events"),
        "catalog walk found no tables"
    );
    let mut checked = 0;
    for table in &tables {
        let name = table.name.as_str();
        if let Some((_, why)) = NOT_TENANT_TABLES.iter().find(|(n, _)| *n == name) {
            let privileged: bool = sqlx::query_scalar(
                "SELECT has_table_privilege($1, $2, 'SELECT,INSERT,UPDATE,DELETE')",
            )
            .bind(database.service.get_username())
            .bind(name)
            .fetch_one(&mut owner)
            .await
            .unwrap();
            assert!(
                !privileged,
                "{name} is not tenant data ({why}) but the service role can touch it"
            );
            continue;
        }
        assert!(
            table.has_tenant_id || name == "tenants",
            "table {name} has no tenant_id column: every table holds one tenant's rows (or is listed in \
             NOT_TENANT_TABLES with a reason)"
        );
        assert!(table.rls, "table {name}: row-level security is not enabled");
        assert!(
            table.forced,
            "table {name}: row-level security is not forced"
        );
        assert!(
            table.policies > 0,
            "table {name}: no row-level security policy"
        );
        if table.is_partition {
            // Reached through its parent, whose checks below cover its rows;
            // directly, the service role must have no way in at all.
            let privileged: bool = sqlx::query_scalar(
                "SELECT has_table_privilege($1, $2, 'SELECT') OR has_table_privilege($1, $2, 'INSERT') \
                 OR has_table_privilege($1, $2, 'UPDATE') OR has_table_privilege($1, $2, 'DELETE')",
            )
            .bind(database.service.get_username())
            .bind(name)
            .fetch_one(&mut owner)
            .await
            .unwrap();
            assert!(
                !privileged,
                "partition {name} is reachable directly by the service role"
            );
            continue;
        }

        let b_rows = count_for(&mut owner, name, b).await;
        let a_rows = count_for(&mut owner, name, a).await;
        assert!(
            b_rows > 0 && a_rows > 0,
            "table {name} has no seeded rows: add one to seed_tenant so its isolation is proven"
        );
        let key = tenant_column(name);

        // Read: B's rows are invisible to A, A's own rows are all there.
        let mut tx = db.tenant_tx(a).await.unwrap();
        assert_eq!(
            count_for(&mut tx, name, b).await,
            0,
            "{name}: tenant A reads tenant B's rows"
        );
        let visible: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {name}"))
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!(
            visible, a_rows,
            "{name}: tenant A should see exactly its own rows"
        );
        tx.rollback().await.unwrap();

        // Update and delete of B's rows touch nothing (or are not allowed).
        for sql in [
            format!("UPDATE {name} SET {key} = {key} WHERE {key} = $1 AND $2::uuid IS NOT NULL"),
            format!("DELETE FROM {name} WHERE {key} = $1 AND $2::uuid IS NOT NULL"),
        ] {
            match attempt(&db, a, &sql, b).await {
                Ok(0) => {}
                Err(code) if code == REFUSED => {}
                other => panic!("{name}: `{sql}` as tenant A gave {other:?}"),
            }
        }

        // Insert a row for B, and move one of A's rows to B: both refused.
        let columns = insertable_columns(&mut owner, name).await;
        let select: Vec<String> = columns
            .iter()
            .map(|c| if c == key { "$1".to_owned() } else { c.clone() })
            .collect();
        let insert = format!(
            "INSERT INTO {name} ({}) SELECT {} FROM {name} WHERE {key} = $2 LIMIT 1",
            columns.join(", "),
            select.join(", ")
        );
        let update = format!("UPDATE {name} SET {key} = $1 WHERE {key} = $2");
        for sql in [insert, update] {
            match attempt(&db, a, &sql, b).await {
                Err(code) if code == REFUSED => {}
                other => panic!("{name}: `{sql}` as tenant A should be refused, gave {other:?}"),
            }
        }

        // And nothing of B's changed.
        assert_eq!(
            count_for(&mut owner, name, b).await,
            b_rows,
            "{name}: B's rows changed"
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} tenant tables were checked");

    // A connection that never set a tenant sees nothing at all.
    let mut bare = PgConnection::connect_with(&database.service).await.unwrap();
    for table in tables
        .iter()
        .filter(|t| !t.is_partition && !NOT_TENANT_TABLES.iter().any(|(n, _)| *n == t.name))
    {
        let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {}", table.name))
            .fetch_one(&mut bare)
            .await
            .unwrap();
        assert_eq!(n, 0, "{}: rows visible without a tenant", table.name);
    }
    bare.close().await.unwrap();
}

#[tokio::test]
async fn the_tenant_setting_does_not_outlive_its_transaction() {
    let database = TestDatabase::create().await;
    // One connection, so every transaction below reuses the same session.
    let db = Database::connect(&database.service, 1).await.unwrap();
    let a = seed_tenant(&db, "tenant-a").await;
    let b = seed_tenant(&db, "tenant-b").await;

    let mut tx = db.tenant_tx(a).await.unwrap();
    let setting: String = sqlx::query_scalar("SELECT current_setting('app.tenant_id')")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(setting, a.uuid().to_string());
    tx.commit().await.unwrap();
    assert_no_tenant_set(&db).await;

    // A rolled-back transaction must not leave its tenant behind either.
    let tx = db.tenant_tx(b).await.unwrap();
    tx.rollback().await.unwrap();
    assert_no_tenant_set(&db).await;

    let mut tx = db.tenant_tx(a).await.unwrap();
    assert_eq!(
        customers::list(&mut tx, &slaproof_tests::all_rows())
            .await
            .unwrap()
            .len(),
        1
    );
    let setting: String = sqlx::query_scalar("SELECT current_setting('app.tenant_id')")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(setting, a.uuid().to_string());
    tx.commit().await.unwrap();
}

/// On the pool's one connection, outside any tenant transaction: no tenant
/// is set, and no tenant's rows are visible.
async fn assert_no_tenant_set(db: &Database) {
    let (tenant, customers) = db.session_tenant().await.unwrap();
    assert_eq!(tenant, None, "the tenant setting outlived its transaction");
    assert_eq!(customers, 0);
}

#[tokio::test]
async fn services_refuse_a_role_that_bypasses_row_level_security() {
    let database = TestDatabase::create().await;
    // The owner (a superuser here) would see every tenant.
    let db = Database::connect(&database.owner, 1).await.unwrap();
    let err = db.check_service_role().await.unwrap_err().to_string();
    assert!(err.contains("superuser"), "{err}");
    assert!(err.contains("slaproof_service"), "{err}");
}

#[tokio::test]
async fn services_refuse_a_role_that_may_create_in_public() {
    // A role that may create in `public` could plant a function there for
    // the owner's sessions (and, before their search_path was pinned, the
    // SECURITY DEFINER functions) to run as the owner.
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    db.check_service_role().await.unwrap();
    let mut owner = database.owner_connection().await;
    sqlx::query(&format!(
        "GRANT CREATE ON SCHEMA public TO {}",
        database.service.get_username()
    ))
    .execute(&mut owner)
    .await
    .unwrap();
    let err = db.check_service_role().await.unwrap_err().to_string();
    assert!(err.contains("create objects in the schema public"), "{err}");
}
