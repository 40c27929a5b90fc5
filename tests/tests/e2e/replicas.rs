//! Past one machine: two copies of the application, each running every
//! service but attestation with a pool of its own (as two processes of
//! each would), against one database, share the work and do none of it
//! twice. Events sent to both ingest replicas, every batch retried on the
//! other, are stored once; the two evaluators count each event once; the
//! two webhook workers deliver each fact once; the two probe runners run
//! each slot once. (Attestation's replicas are the attestation tests' own:
//! each proof and anchor is claimed under a lease like these.)

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::routing::{get, post};
use chrono::Utc;
use serde_json::{Value, json};
use slaproof::Config;
use slaproof_app::webhooks::NewWebhookEndpoint;
use slaproof_app::{App, Principal};
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::probes::{self, ProbeDefinition, ProbeKind};
use slaproof_store::{Database, evaluations, ingest_keys, outbox, partitions, slas, tenants};
use slaproof_tests::{Replica, TestDatabase, spawn_replica};

/// One ratio objective over a calendar month (also the pooler test's).
pub(crate) const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat-completions
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio:
      good: status < 500
"#;

const TENANTS: usize = 3;
const BATCHES: usize = 6;
const PER_BATCH: usize = 20;
const FACTS: usize = 20;
const PROBES: usize = 6;

/// What the outside world saw: webhook deliveries by `webhook-id`, probe
/// requests by path.
#[derive(Default)]
struct Seen {
    deliveries: BTreeMap<String, usize>,
    probed: BTreeMap<String, usize>,
}

/// A provider's webhook receiver and probe target in one, on 127.0.0.1.
async fn outside() -> (SocketAddr, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (hooks, probed) = (seen.clone(), seen.clone());
    let app = axum::Router::new()
        .route(
            "/hook",
            post(move |headers: HeaderMap| {
                let seen = hooks.clone();
                async move {
                    let id = headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    *seen.lock().unwrap().deliveries.entry(id).or_default() += 1;
                    "received"
                }
            }),
        )
        .route(
            "/probe/{n}",
            get(move |axum::extract::Path(n): axum::extract::Path<String>| {
                let seen = probed.clone();
                async move {
                    *seen.lock().unwrap().probed.entry(n).or_default() += 1;
                    "ok"
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, seen)
}

fn settings(config: &mut Config) {
    config.evaluator.interval_secs = 1;
    config.evaluator.settle_secs = 0;
    config.webhooks.poll_interval_ms = 100;
    config.webhooks.batch = 4;
    config.probes.poll_interval_ms = 100;
    config.outbound = OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
}

/// A tenant with the SLA, an ingest key, a webhook endpoint for every fact
/// and `PROBES` probes of `target`; its ingest key.
async fn tenant(db: &Database, app: &App, n: usize, target: SocketAddr) -> (TenantId, String) {
    let tenant = tenants::create(db, &format!("t{n}"), &format!("Tenant {n}"))
        .await
        .unwrap()
        .id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(SLA).unwrap())
        .await
        .unwrap();
    let key = ingest_keys::create(&mut tx, "replicas").await.unwrap();
    for p in 0..PROBES {
        probes::create(
            &mut tx,
            &ProbeDefinition {
                name: format!("p{p}"),
                // Not the SLA's service: the SLA counts the sent events only.
                service: "status-page".into(),
                customer: None,
                model: None,
                kind: ProbeKind::Http,
                method: "GET".into(),
                url: format!("http://{target}/probe/t{n}-p{p}"),
                headers: Default::default(),
                body: None,
                expected_status: 200,
                interval_secs: 3600,
                timeout_ms: 5000,
                enabled: true,
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let admin = app
        .caller(Principal {
            subject: "admin".into(),
            tenant,
            roles: vec!["provider_admin".into()],
            customer: None,
            embed: None,
        })
        .await
        .unwrap();
    app.create_webhook_endpoint(
        &admin,
        NewWebhookEndpoint {
            url: format!("http://{target}/hook"),
            event_types: Some(vec!["*".into()]),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    (tenant, key.reveal().to_owned())
}

/// Sends one batch to `replica`; the answer's status.
async fn send(http: &reqwest::Client, replica: &Replica, key: &str, batch: &[Value]) -> u16 {
    http.post(format!("http://{}/v1/events", replica.address))
        .bearer_auth(key)
        .json(batch)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_of_every_service_share_the_work_and_none_is_done_twice() {
    let (target, seen) = outside().await;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let today = Utc::now().date_naive();
    partitions::ensure(
        &db,
        today - chrono::Days::new(1),
        today + chrono::Days::new(1),
    )
    .await
    .unwrap();
    let app = App::with_default_policy(db.clone())
        .await
        .unwrap()
        .with_outbound(OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]));
    let mut tenants = Vec::new();
    for n in 0..TENANTS {
        tenants.push(tenant(&db, &app, n, target).await);
    }

    let a = spawn_replica(&database, settings).await;
    let b = spawn_replica(&database, settings).await;
    let replicas = [&a, &b];
    let http = reqwest::Client::new();

    // Each batch to one replica, then the same batch again to the other:
    // a client retrying through a load balancer. One request in ten fails.
    let at = Utc::now() - chrono::Duration::seconds(90);
    for (n, (_, key)) in tenants.iter().enumerate() {
        for batch in 0..BATCHES {
            let events: Vec<Value> = (0..PER_BATCH)
                .map(|i| {
                    let r = batch * PER_BATCH + i;
                    json!({
                        "time": at.to_rfc3339(),
                        "service": "chat-completions",
                        "request_id": format!("t{n}-r{r}"),
                        "status": if r.is_multiple_of(10) { 503 } else { 200 },
                        "latency_ms": 250.0
                    })
                })
                .collect();
            let first = replicas[batch % 2];
            let retry = replicas[(batch + 1) % 2];
            assert_eq!(send(&http, first, key, &events).await, 200);
            assert_eq!(send(&http, retry, key, &events).await, 200);
        }
    }
    // Facts for the webhook workers of both replicas.
    for (tenant, _) in &tenants {
        let mut tx = db.tenant_tx(*tenant).await.unwrap();
        for n in 0..FACTS {
            outbox::enqueue(&mut tx, "sla.threshold_crossed", &json!({"n": n}))
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
    }

    // Until every tenant's SLA counts its events, every fact sent here is
    // delivered and every probe has run (a bound, not a speed check). The
    // evaluators add facts of their own (the SLA is breached).
    let sent = (BATCHES * PER_BATCH) as i64;
    let mut owner = database.owner_connection().await;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let mut counted = Vec::new();
        for (tenant, _) in &tenants {
            let mut tx = db.tenant_tx(*tenant).await.unwrap();
            let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
            let latest = evaluations::latest(&mut tx, sla.id).await.unwrap();
            tx.commit().await.unwrap();
            counted.push(latest.first().map(|e| (e.good, e.total)));
        }
        let delivered: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM webhook_deliveries d JOIN outbox o \
             ON o.tenant_id = d.tenant_id AND o.id = d.message_id \
             WHERE o.event_type = 'sla.threshold_crossed' AND d.delivered_at IS NOT NULL",
        )
        .fetch_one(&mut owner)
        .await
        .unwrap();
        let probed = seen.lock().unwrap().probed.len();
        let evaluated = counted
            .iter()
            .all(|c| c.is_some_and(|(_, total)| total >= sent));
        if evaluated && delivered == (TENANTS * FACTS) as i64 && probed == TENANTS * PROBES {
            // Counted once: not twice the events, however many replicas
            // took or evaluated them.
            let expected = Some((sent - sent / 10, sent));
            assert!(counted.iter().all(|c| *c == expected), "{counted:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "within 240 s: counted {counted:?}, {delivered} of the facts delivered, {probed} probes run"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Time for a second delivery or run, had a replica taken work twice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.stop().await.unwrap();
    b.stop().await.unwrap();

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert!(
        seen.deliveries.values().all(|&n| n == 1),
        "a fact delivered twice: {:?}",
        seen.deliveries
    );
    // A probe's first run is at its creation and its next on its own phase
    // grid, which may fall within this test: a path may be asked twice for
    // two slots. Each request must be a slot's one stored run, and no slot
    // may be stored twice.
    let slots: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT t.name || '-' || p.name, count(*), count(DISTINCT e.request_id) \
         FROM events e JOIN tenants t ON t.id = e.tenant_id \
         JOIN probes p ON p.tenant_id = e.tenant_id \
          AND split_part(e.request_id, '@', 1) = 'prb_' || replace(p.id::text, '-', '') \
         WHERE e.source = 'probe' GROUP BY 1",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    assert!(
        slots.iter().all(|(_, runs, distinct)| runs == distinct),
        "a probe slot stored twice: {slots:?}"
    );
    let stored_slots: BTreeMap<String, usize> = slots
        .into_iter()
        .map(|(path, _, distinct)| (path, distinct as usize))
        .collect();
    assert_eq!(
        seen.probed, stored_slots,
        "a probe slot run twice: requests by path against the slots stored"
    );
    // Every event stored once, and every probe run stored once.
    let stored: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT source, count(*), count(DISTINCT (tenant_id, request_id, occurred_at)) \
         FROM events GROUP BY source ORDER BY source",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    let by_source: BTreeMap<String, (i64, i64)> =
        stored.into_iter().map(|(s, n, d)| (s, (n, d))).collect();
    let total = (TENANTS as i64) * sent;
    assert_eq!(
        by_source.get("provider"),
        Some(&(total, total)),
        "{by_source:?}"
    );
    let runs = seen.probed.values().sum::<usize>() as i64;
    assert!(runs >= (TENANTS * PROBES) as i64);
    assert_eq!(
        by_source.get("probe").map(|p| p.0),
        Some(runs),
        "{by_source:?}"
    );
    // One attempt per delivery, and each delivery made once: no fact was
    // sent by both workers.
    let (attempts, delivered): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM webhook_attempts), \
                (SELECT count(*) FROM webhook_deliveries WHERE delivered_at IS NOT NULL)",
    )
    .fetch_one(&mut owner)
    .await
    .unwrap();
    assert_eq!(attempts, delivered);
    assert_eq!(
        seen.deliveries.len() as i64,
        delivered,
        "{:?}",
        seen.deliveries
    );
    // Nothing failed on either replica.
    let failures: i64 = sqlx::query_scalar("SELECT count(*) FROM evaluation_failures")
        .fetch_one(&mut owner)
        .await
        .unwrap();
    assert_eq!(failures, 0);
}
