//! The native ingest API over real HTTP against a real Postgres: formats,
//! authentication, the partial-accept policy, time limits, idempotent
//! retries, body limits and backpressure.

use std::io::Write;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use slaproof_domain::ids::TenantId;
use slaproof_store::{Database, ingest_keys, tenants};
use slaproof_tests::{TestApp, spawn_app, spawn_app_with};
use sqlx::Connection;

/// A tenant and a fresh ingest key for it.
async fn tenant_with_key(db: &Database, name: &str) -> (TenantId, String) {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "test").await.unwrap();
    tx.commit().await.unwrap();
    (tenant, key.reveal().to_owned())
}

fn at(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn event(request_id: &str) -> Value {
    json!({
        "time": at(Utc::now() - chrono::Duration::seconds(30)),
        "service": "chat-completions",
        "model": "llama-3-70b",
        "request_id": request_id,
        "status": 200,
        "latency_ms": 812.5,
        "ttft_ms": 95,
        "tpot_ms": 12.25,
        "input_tokens": 812,
        "output_tokens": 64,
        "streaming": true,
        "attributes": {"cache_hit": true, "region_code": 3}
    })
}

struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
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
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

async fn post_json(app: &TestApp, key: &str, events: &Value) -> Reply {
    post(
        app,
        "/v1/events",
        Some(key),
        &[("content-type", "application/json")],
        serde_json::to_vec(events).unwrap(),
    )
    .await
}

/// A row as stored, for comparing.
#[derive(Debug, PartialEq, sqlx::FromRow)]
struct Row {
    request_id: Option<String>,
    source: String,
    service: String,
    model: Option<String>,
    status: Option<i32>,
    latency_us: Option<i64>,
    ttft_us: Option<i64>,
    tpot_us: Option<i64>,
    input_tokens: Option<i32>,
    output_tokens: Option<i32>,
    streaming: Option<bool>,
    attributes: Value,
}

async fn stored(db: &Database, tenant: TenantId) -> Vec<Row> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rows = sqlx::query_as(
        "SELECT request_id, source, service, model, status, latency_us, ttft_us, tpot_us, \
                input_tokens, output_tokens, streaming, attributes \
         FROM events ORDER BY request_id, occurred_at",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    rows
}

#[tokio::test]
async fn a_json_array_is_stored_with_every_field_in_microseconds() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;

    let reply = post_json(&app, &key, &json!([event("r1"), event("r2")])).await;

    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["received"], 2);
    assert_eq!(reply.body["accepted"], 2);
    assert_eq!(reply.body["stored"], 2);
    assert_eq!(reply.body["rejected"], 0);
    let rows = stored(&app.db, tenant).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0],
        Row {
            request_id: Some("r1".into()),
            source: "provider".into(),
            service: "chat-completions".into(),
            model: Some("llama-3-70b".into()),
            status: Some(200),
            latency_us: Some(812_500),
            ttft_us: Some(95_000),
            tpot_us: Some(12_250),
            input_tokens: Some(812),
            output_tokens: Some(64),
            streaming: Some(true),
            attributes: json!({"cache_hit": 1, "region_code": 3}),
        }
    );
}

#[tokio::test]
async fn ndjson_and_gzip_bodies_are_accepted_and_unknown_fields_ignored() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let mut first = event("n1");
    first["some_future_field"] = json!({"nested": [1, 2]});
    let ndjson = format!("{first}\n\n{}\n", event("n2"));

    let plain = post(
        &app,
        "/v1/events",
        Some(&key),
        &[("content-type", "application/x-ndjson")],
        ndjson.into_bytes(),
    )
    .await;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&serde_json::to_vec(&json!([event("g1")])).unwrap())
        .unwrap();
    let zipped = post(
        &app,
        "/v1/events",
        Some(&key),
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        gz.finish().unwrap(),
    )
    .await;

    assert_eq!(plain.status, 200, "{}", plain.body);
    assert_eq!(plain.body["stored"], 2);
    assert_eq!(zipped.status, 200, "{}", zipped.body);
    let ids: Vec<_> = stored(&app.db, tenant)
        .await
        .into_iter()
        .filter_map(|r| r.request_id)
        .collect();
    assert_eq!(ids, ["g1", "n1", "n2"]);
}

#[tokio::test]
async fn missing_wrong_and_revoked_keys_get_401_problems() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let body = serde_json::to_vec(&json!([event("x")])).unwrap();
    let json_type = [("content-type", "application/json")];
    let wrong = format!("spk_abcdefghij01_{}", "0f".repeat(32));

    let missing = post(&app, "/v1/events", None, &json_type, body.clone()).await;
    let wrong = post(&app, "/v1/events", Some(&wrong), &json_type, body.clone()).await;
    let garbage = post(&app, "/v1/events", Some("nope"), &json_type, body.clone()).await;
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let prefix = &key[..16];
    ingest_keys::revoke(&mut tx, prefix).await.unwrap();
    tx.commit().await.unwrap();
    let revoked = post(&app, "/v1/events", Some(&key), &json_type, body).await;

    for reply in [missing, wrong, garbage, revoked] {
        assert_eq!(reply.status, 401, "{}", reply.body);
        assert_eq!(
            reply.headers["content-type"], "application/problem+json",
            "RFC 9457"
        );
        assert!(reply.headers.contains_key("www-authenticate"));
        assert_eq!(reply.body["status"], 401);
    }
    assert!(stored(&app.db, tenant).await.is_empty());
}

#[tokio::test]
async fn a_key_writes_only_its_own_tenant() {
    let app = spawn_app().await;
    let (a, key_a) = tenant_with_key(&app.db, "tenant-a").await;
    let (b, _) = tenant_with_key(&app.db, "tenant-b").await;
    let mut sneaky = event("s1");
    sneaky["tenant_id"] = json!(b.to_string());
    sneaky["tenant"] = json!(b.to_string());

    let reply = post_json(&app, &key_a, &json!([sneaky])).await;

    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(stored(&app.db, a).await.len(), 1);
    assert!(stored(&app.db, b).await.is_empty());
}

/// One valid event, then five invalid ones, then one valid event.
fn mixed_batch() -> Value {
    let mut no_service = event("bad-service");
    no_service.as_object_mut().unwrap().remove("service");
    let mut future = event("bad-future");
    future["time"] = json!(at(Utc::now() + chrono::Duration::hours(2)));
    let mut old = event("bad-old");
    old["time"] = json!(at(Utc::now() - chrono::Duration::days(500)));
    let mut bad_status = event("bad-status");
    bad_status["status"] = json!("ok");
    let mut bad_attr = event("bad-attr");
    bad_attr["attributes"] = json!({"region": "eu-west"});
    json!([
        event("ok-1"),
        no_service,
        future,
        old,
        bad_status,
        bad_attr,
        event("ok-2")
    ])
}

#[tokio::test]
async fn valid_events_are_stored_and_each_invalid_one_is_reported() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;

    let reply = post_json(&app, &key, &mixed_batch()).await;

    assert_eq!(reply.status, 207, "{}", reply.body);
    assert_eq!(reply.body["received"], 7);
    assert_eq!(reply.body["accepted"], 2);
    assert_eq!(reply.body["rejected"], 5);
    let errors: Vec<(u64, String)> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert!(!e["reason"].as_str().unwrap().is_empty());
            (
                e["index"].as_u64().unwrap(),
                e["field"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            (1, "service".to_owned()),
            (2, "time".to_owned()),
            (3, "time".to_owned()),
            (4, "status".to_owned()),
            (5, "attributes.region".to_owned()),
        ]
    );
    let reasons = reply.body["errors"].to_string();
    assert!(reasons.contains("future"), "{reasons}");
    assert!(reasons.contains("retention"), "{reasons}");
    let ids: Vec<_> = stored(&app.db, tenant)
        .await
        .into_iter()
        .filter_map(|r| r.request_id)
        .collect();
    assert_eq!(ids, ["ok-1", "ok-2"]);
}

#[tokio::test]
async fn an_atomic_batch_with_one_invalid_event_stores_nothing() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;

    let reply = post(
        &app,
        "/v1/events?atomic=true",
        Some(&key),
        &[("content-type", "application/json")],
        serde_json::to_vec(&mixed_batch()).unwrap(),
    )
    .await;
    let all_bad = post_json(&app, &key, &json!([{"service": "x"}])).await;

    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.headers["content-type"], "application/problem+json");
    assert_eq!(reply.body["errors"].as_array().unwrap().len(), 5);
    assert_eq!(all_bad.status, 422, "{}", all_bad.body);
    assert_eq!(all_bad.body["errors"][0]["field"], "time");
    assert!(stored(&app.db, tenant).await.is_empty());
}

#[tokio::test]
async fn retries_store_each_event_once() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let time = at(Utc::now() - chrono::Duration::minutes(1));
    // No id, no request id: the Idempotency-Key names the batch.
    let anonymous = json!([
        {"time": time, "service": "chat", "status": 200},
        {"time": time, "service": "chat", "status": 200}
    ]);
    let with_ids = json!([
        {"id": "0190c7c2-7e1a-7000-8000-000000000001", "time": time, "service": "chat"},
        {"time": time, "service": "chat", "request_id": "req-7"}
    ]);
    let send_keyed = || {
        post(
            &app,
            "/v1/events",
            Some(&key),
            &[
                ("content-type", "application/json"),
                ("idempotency-key", "batch-0001"),
            ],
            serde_json::to_vec(&anonymous).unwrap(),
        )
    };

    let first = send_keyed().await;
    let retry = send_keyed().await;
    let ids_first = post_json(&app, &key, &with_ids).await;
    let ids_retry = post_json(&app, &key, &with_ids).await;

    assert_eq!((first.status, retry.status), (200, 200));
    assert_eq!(first.body["stored"], 2);
    assert_eq!(retry.body["stored"], 0);
    assert_eq!(retry.body["duplicates"], 2);
    assert_eq!(retry.body["accepted"], 2, "a retry is still acknowledged");
    assert_eq!(ids_first.body["stored"], 2);
    assert_eq!(ids_retry.body["duplicates"], 2);
    assert_eq!(stored(&app.db, tenant).await.len(), 4);
}

#[tokio::test]
async fn a_day_without_a_partition_is_created_on_demand() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let mut old = event("old");
    // Housekeeping creates partitions from yesterday on; this day has none.
    old["time"] = json!(at(Utc::now() - chrono::Duration::days(20)));

    let reply = post_json(&app, &key, &json!([old])).await;

    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(stored(&app.db, tenant).await.len(), 1);
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_and_bad_bodies_400_or_415() {
    let app = spawn_app_with(|c| c.ingest.max_body_bytes = 4096).await;
    let (_, key) = tenant_with_key(&app.db, "acme").await;
    let big: Vec<Value> = (0..100).map(|i| event(&format!("r{i}"))).collect();

    let too_large = post_json(&app, &key, &json!(big)).await;
    let broken = post(
        &app,
        "/v1/events",
        Some(&key),
        &[("content-type", "application/json")],
        b"[{\"time\":".to_vec(),
    )
    .await;
    let wrong_type = post(
        &app,
        "/v1/events",
        Some(&key),
        &[("content-type", "text/plain")],
        b"[]".to_vec(),
    )
    .await;

    assert_eq!(too_large.status, 413, "{}", too_large.body);
    assert_eq!(too_large.body["status"], 413);
    assert_eq!(broken.status, 400, "{}", broken.body);
    assert_eq!(wrong_type.status, 415, "{}", wrong_type.body);
}

#[tokio::test]
async fn when_the_writers_are_behind_the_next_batch_gets_429_with_retry_after() {
    let app = spawn_app_with(|c| {
        c.ingest.writers = 1;
        c.ingest.max_in_flight = 1;
        c.ingest.retry_after_secs = 2;
    })
    .await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    // Housekeeping must be done with today's partition, or it would be the
    // one waiting on the lock below.
    let today = Utc::now().date_naive();
    for _ in 0..100 {
        if slaproof_store::partitions::days(&app.db)
            .await
            .unwrap()
            .contains(&today)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Hold the events table so the only writer waits inside its batch.
    let mut owner = app.database.owner_connection().await;
    let mut lock = owner.begin().await.unwrap();
    sqlx::query("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let waiting = {
        let key = key.clone();
        let address = app.address;
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("http://{address}/v1/events"))
                .bearer_auth(key)
                .json(&json!([event("first")]))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    // Until the first batch is inside the gate, waiting on the lock.
    let mut admitted = false;
    for _ in 0..100 {
        let waiting_on_lock: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut *lock)
        .await
        .unwrap();
        if waiting_on_lock > 0 {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(admitted, "the first batch never reached the database");

    let refused = post_json(&app, &key, &json!([event("second")])).await;
    lock.commit().await.unwrap();
    let first = waiting.await.unwrap();

    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(refused.headers["retry-after"], "2");
    assert_eq!(refused.headers["content-type"], "application/problem+json");
    assert_eq!(first, 200, "acknowledged once committed");
    let ids: Vec<_> = stored(&app.db, tenant)
        .await
        .into_iter()
        .filter_map(|r| r.request_id)
        .collect();
    assert_eq!(ids, ["first"]);
}
