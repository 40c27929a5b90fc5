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
async fn a_small_gzip_of_millions_of_empty_events_is_refused_before_it_is_parsed() {
    // Found as a new user would (hardening issue, item 1): a 58 KB gzip of
    // `[{},{},…]` (20 million events, under the decoded-size cap) drove the
    // process to 19.4 GB and answered 1.35 GB of per-event errors. Now a
    // batch past 10,000 events is refused with 413 as soon as the next one
    // is seen, and an answer lists at most 100 refusals.
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let million = format!("[{}{{}}]", "{},".repeat(2_000_000 - 1));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(million.as_bytes()).unwrap();
    let body = gz.finish().unwrap();
    assert!(body.len() < 64 * 1024, "{} bytes", body.len());
    let refused = post(
        &app,
        "/v1/events",
        Some(&key),
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        body,
    )
    .await;
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert!(
        refused.body["detail"].as_str().unwrap().contains("10000"),
        "{}",
        refused.body
    );
    assert!(refused.body.get("errors").is_none());

    // 5,000 invalid events: refused, counted, and the first 100 listed.
    let invalid: Vec<Value> = (0..5_000).map(|_| json!({})).collect();
    let reply = post_json(&app, &key, &json!(invalid)).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert!(
        reply.body["detail"].as_str().unwrap().contains("5000"),
        "{}",
        reply.body
    );
    assert_eq!(reply.body["errors"].as_array().unwrap().len(), 100);
    // Invalid events beside valid ones: all counted, 100 listed.
    let mut mixed: Vec<Value> = (0..300).map(|_| json!({})).collect();
    mixed.push(event("kept"));
    let reply = post_json(&app, &key, &json!(mixed)).await;
    assert_eq!(reply.status, 207, "{}", reply.body);
    assert_eq!(reply.body["rejected"], 300);
    assert_eq!(reply.body["errors"].as_array().unwrap().len(), 100);
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

mod otlp {
    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    };
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as V};
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message;

    use super::*;

    fn kv(key: &str, value: V) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    fn nanos(time: DateTime<Utc>) -> u64 {
        time.timestamp_nanos_opt().unwrap() as u64
    }

    fn span(span_id: u8, start: DateTime<Utc>) -> Span {
        Span {
            trace_id: vec![9; 16],
            span_id: vec![span_id; 8],
            name: "chat llama-3".into(),
            kind: 2,
            start_time_unix_nano: nanos(start),
            end_time_unix_nano: nanos(start) + 640_000_000,
            attributes: vec![
                kv("gen_ai.operation.name", V::StringValue("chat".into())),
                kv("gen_ai.request.model", V::StringValue("llama-3-8b".into())),
                kv(
                    "gen_ai.response.id",
                    V::StringValue(format!("cmpl-{span_id}")),
                ),
                kv("gen_ai.usage.input_tokens", V::IntValue(100)),
                kv("gen_ai.usage.output_tokens", V::IntValue(20)),
                kv("gen_ai.server.time_to_first_token", V::DoubleValue(0.08)),
                kv("http.response.status_code", V::IntValue(200)),
            ],
            ..Default::default()
        }
    }

    fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", V::StringValue("gateway".into()))],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    async fn post_protobuf(
        app: &TestApp,
        key: Option<&str>,
        export: &ExportTraceServiceRequest,
    ) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
        let mut request = reqwest::Client::new()
            .post(format!("http://{}/v1/traces", app.address))
            .header("content-type", "application/x-protobuf")
            .body(export.encode_to_vec());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.bytes().await.unwrap().to_vec())
    }

    #[tokio::test]
    async fn protobuf_spans_become_events_with_partial_success_for_bad_ones() {
        let app = spawn_app().await;
        let (tenant, key) = tenant_with_key(&app.db, "acme").await;
        let now = Utc::now() - chrono::Duration::seconds(10);
        let not_llm = Span {
            trace_id: vec![9; 16],
            span_id: vec![50; 8],
            start_time_unix_nano: nanos(now),
            end_time_unix_nano: nanos(now) + 1,
            ..Default::default()
        };
        let too_new = span(3, Utc::now() + chrono::Duration::hours(1));
        let batch = export(vec![span(1, now), not_llm, too_new, span(2, now)]);

        let (status, headers, body) = post_protobuf(&app, Some(&key), &batch).await;
        let (retry_status, _, retry_body) = post_protobuf(&app, Some(&key), &batch).await;

        assert_eq!(status, 200);
        assert_eq!(headers["content-type"], "application/x-protobuf");
        let answer = ExportTraceServiceResponse::decode(body.as_slice()).unwrap();
        let partial = answer.partial_success.unwrap();
        assert_eq!(partial.rejected_spans, 1);
        assert!(
            partial.error_message.contains("span 2"),
            "{}",
            partial.error_message
        );
        assert_eq!(retry_status, 200);
        assert_eq!(
            ExportTraceServiceResponse::decode(retry_body.as_slice())
                .unwrap()
                .partial_success
                .unwrap()
                .rejected_spans,
            1
        );
        let rows = stored(&app.db, tenant).await;
        assert_eq!(
            rows.len(),
            2,
            "two GenAI spans, stored once despite the retry"
        );
        assert_eq!(
            rows[0],
            Row {
                request_id: Some("cmpl-1".into()),
                source: "provider".into(),
                service: "gateway".into(),
                model: Some("llama-3-8b".into()),
                status: Some(200),
                latency_us: Some(640_000),
                ttft_us: Some(80_000),
                tpot_us: None,
                input_tokens: Some(100),
                output_tokens: Some(20),
                streaming: None,
                attributes: json!({}),
            }
        );
    }

    #[tokio::test]
    async fn otlp_json_is_answered_in_json() {
        let app = spawn_app().await;
        let (tenant, key) = tenant_with_key(&app.db, "acme").await;
        let start = nanos(Utc::now() - chrono::Duration::seconds(5));
        // Written as the OTLP/JSON spec has it: hex ids, 64-bit integers as
        // strings, camelCase names.
        let body = json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "gateway"}}]},
            "scopeSpans": [{"scope": {"name": "openai"}, "spans": [{
                "traceId": "5b8efff798038103d269b633813fc60c",
                "spanId": "eee19b7ec3c1b174",
                "name": "chat gpt-4o",
                "kind": 3,
                "startTimeUnixNano": start.to_string(),
                "endTimeUnixNano": (start + 1_500_000_000).to_string(),
                "attributes": [
                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "42"}},
                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 7}},
                    {"key": "http.response.status_code", "value": {"intValue": "503"}},
                    {"key": "error.type", "value": {"stringValue": "overloaded"}}
                ],
                "status": {"code": 2, "message": "upstream overloaded"}
            }]}]
        }]});

        let reply = post(
            &app,
            "/v1/traces",
            Some(&key),
            &[("content-type", "application/json")],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
        let unauthorized = post(
            &app,
            "/v1/traces",
            None,
            &[("content-type", "application/json")],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;

        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.headers["content-type"], "application/json");
        assert!(
            reply.body.get("partialSuccess").is_none_or(|p| p.is_null()),
            "{}",
            reply.body
        );
        let rows = stored(&app.db, tenant).await;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, Some(503));
        assert_eq!(rows[0].latency_us, Some(1_500_000));
        assert_eq!(
            (rows[0].input_tokens, rows[0].output_tokens),
            (Some(42), Some(7))
        );
        assert_eq!(unauthorized.status, 401);
        assert_eq!(unauthorized.headers["content-type"], "application/json");
        assert_eq!(
            unauthorized.body["code"], 16,
            "google.rpc.Status UNAUTHENTICATED"
        );
    }

    #[tokio::test]
    async fn undecodable_exports_get_400_in_the_request_encoding() {
        let app = spawn_app().await;
        let (_, key) = tenant_with_key(&app.db, "acme").await;
        let reply = post(
            &app,
            "/v1/traces",
            Some(&key),
            &[("content-type", "application/x-protobuf")],
            vec![0xff, 0xff, 0xff],
        )
        .await;
        assert_eq!(reply.status, 400);
        assert_eq!(reply.headers["content-type"], "application/x-protobuf");
    }
}

#[tokio::test]
async fn loadgen_traffic_is_acknowledged_and_stored_exactly() {
    let app = spawn_app_with(|c| {
        c.ingest.writers = 2;
        c.ingest.max_in_flight = 2;
    })
    .await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;

    // Four connections against two admissions: some batches get 429 and
    // are sent again.
    let report = slaproof_ingest::loadgen::run(slaproof_ingest::loadgen::LoadPlan {
        url: format!("http://{}", app.address),
        key,
        rate: None,
        duration: None,
        events: Some(3_000),
        batch: 250,
        connections: 4,
        incident: Some((Duration::ZERO, Duration::from_secs(60))),
        diurnal: false,
        customers: std::sync::Arc::new(slaproof_ingest::loadgen::Customers::demo()),
    })
    .await
    .unwrap();

    assert_eq!(report.acknowledged, 3_000, "{report:?}");
    assert_eq!((report.rejected, report.failed), (0, 0), "{report:?}");
    let rows = stored(&app.db, tenant).await;
    assert_eq!(rows.len(), 3_000);
    // The incident hits the 70B model (about 37% of the demo's requests):
    // a quarter of those fail, against 3 in 1,000 outside it.
    let errors = rows.iter().filter(|r| r.status != Some(200)).count();
    assert!(errors > 150, "the incident shows: {errors} errors");
}

#[tokio::test]
async fn with_connections_cut_while_sending_every_acknowledged_event_is_stored_once() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let service_role = app.database.service.get_username().to_owned();
    // Cuts every service connection of this database every 50 ms: commits
    // fail, some after Postgres made them durable but before the answer.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        let mut owner = app.database.owner_connection().await;
        tokio::spawn(async move {
            let mut cut = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let n: i64 = sqlx::query_scalar(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND usename = $1",
                )
                .bind(&service_role)
                .fetch_one(&mut owner)
                .await
                .unwrap();
                cut += n;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            cut
        })
    };

    let report = slaproof_ingest::loadgen::run(slaproof_ingest::loadgen::LoadPlan {
        url: format!("http://{}", app.address),
        key,
        rate: None,
        duration: None,
        events: Some(10_000),
        batch: 200,
        connections: 4,
        incident: None,
        diurnal: false,
        customers: std::sync::Arc::new(slaproof_ingest::loadgen::Customers::demo()),
    })
    .await
    .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let cut = killer.await.unwrap();

    assert!(cut > 0, "no connection was cut");
    assert!(
        report.throttled > 0,
        "no batch had to be retried: {report:?}"
    );
    assert_eq!(report.acknowledged, 10_000, "{report:?}");
    assert_eq!((report.failed, report.rejected), (0, 0), "{report:?}");
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let (rows, distinct): (i64, i64) =
        sqlx::query_as("SELECT count(*), count(DISTINCT request_id) FROM events")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    assert_eq!(
        (rows, distinct),
        (10_000, 10_000),
        "each event exactly once"
    );
}

/// A venv with the OpenTelemetry Python SDK (tests/otel/requirements.txt),
/// made once under the cargo target folder.
fn otel_python() -> std::path::PathBuf {
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("otel-venv");
    let python = venv.join("bin/python");
    let requirements =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("otel/requirements.txt");
    let run = |cmd: &mut std::process::Command| {
        let status = cmd
            .status()
            .unwrap_or_else(|e| panic!("running {cmd:?}: {e}; python3 with venv is needed"));
        assert!(status.success(), "{cmd:?} failed");
    };
    if !python.exists() {
        run(std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv));
    }
    run(std::process::Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements));
    python
}

#[tokio::test]
async fn spans_from_the_official_python_sdk_are_stored_as_events() {
    let python = tokio::task::spawn_blocking(otel_python).await.unwrap();
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("otel/send_genai_spans.py");

    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .arg("5")
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("http://{}/v1/traces", app.address),
        )
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            format!("Authorization=Bearer%20{key}"),
        )
        .env("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
        .output()
        .await
        .unwrap();

    assert!(
        output.status.success(),
        "the SDK's export failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows = stored(&app.db, tenant).await;
    assert_eq!(
        rows.len(),
        5,
        "five GenAI spans; the db.query spans are not events"
    );
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.request_id.as_deref(), Some(format!("py-{i}").as_str()));
        assert_eq!(row.service, "py-gateway");
        assert_eq!(row.model.as_deref(), Some("llama-3.1-8b"));
        assert_eq!(row.status, Some(200));
        assert_eq!(row.ttft_us, Some(50_000));
        assert_eq!(row.streaming, Some(true));
        assert_eq!(row.input_tokens, Some(100 + i as i32));
        assert_eq!(row.output_tokens, Some(10 + i as i32));
        assert!(row.latency_us.is_some());
    }
    // The customer: the span's own attribute, else its resource's.
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let named: Vec<Option<String>> =
        sqlx::query_scalar("SELECT customer FROM events ORDER BY request_id")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    let expected: Vec<Option<String>> = (0..5)
        .map(|i| Some(if i % 2 == 0 { "acme-corp" } else { "globex" }.to_owned()))
        .collect();
    assert_eq!(named, expected);
}

#[tokio::test]
async fn nine_thousand_bad_events_answer_the_first_hundred_and_counts_of_all() {
    // Hardening issue, item 1: an answer lists at most 100 refusals, and
    // counts them all by field and by the rule they broke.
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let time = at(Utc::now() - chrono::Duration::seconds(30));
    let events: Vec<Value> = (0..9_000)
        .map(|i| match i % 3 {
            0 => json!({}),
            n => json!({"time": time, "service": "chat", "status": 600 + n}),
        })
        .collect();

    let reply = post_json(&app, &key, &json!(events)).await;

    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.body["errors"].as_array().unwrap().len(), 100);
    assert_eq!(reply.body["errors"][0]["index"], 0);
    assert_eq!(reply.body["errors"][99]["index"], 99);
    assert_eq!(
        reply.body["counts"],
        json!([
            {"field": "status", "reason": "must be an HTTP status between 100 and 599", "count": 6_000},
            {"field": "time", "reason": "is required (RFC 3339)", "count": 3_000},
        ]),
        "{}",
        reply.body["counts"]
    );
    // Beside valid events (207) too, summing to `rejected`.
    let mut mixed = events[..300].to_vec();
    mixed.push(event("kept"));
    let reply = post_json(&app, &key, &json!(mixed)).await;
    assert_eq!(reply.status, 207, "{}", reply.body);
    let counted: u64 = reply.body["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!((reply.body["rejected"].as_u64(), counted), (Some(300), 300));
    assert_eq!(stored(&app.db, tenant).await.len(), 1);
}

/// A request whose body never finishes: its headers and the first byte of
/// a body announced longer, then nothing, until the stream is dropped.
async fn slow_upload(app: &TestApp, key: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
    let head = format!(
        "POST /v1/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n[",
        app.address
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// `n` slow uploads of `key`'s, once they hold their places in the gate.
/// Nothing else is sent meanwhile, so each is let in as soon as its key
/// is checked; a second and a half is far more than that takes.
async fn holding(app: &TestApp, key: &str, n: usize) -> Vec<tokio::net::TcpStream> {
    use tokio::io::AsyncReadExt;
    let mut streams = Vec::new();
    for _ in 0..n {
        streams.push(slow_upload(app, key).await);
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    for stream in &mut streams {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(10), stream.read(&mut buf)).await;
        assert!(
            read.is_err(),
            "a slow upload was answered: {}",
            String::from_utf8_lossy(&buf)
        );
    }
    streams
}

#[tokio::test]
async fn bad_keys_are_refused_before_the_gate_and_take_no_place_in_it() {
    // Hardening issue, item 6: the gate was taken before authentication, so
    // a flood of bad keys answered 429 to every tenant.
    let app = spawn_app_with(|c| {
        c.ingest.writers = 1;
        c.ingest.max_in_flight = 2;
        c.ingest.max_in_flight_per_tenant = Some(2);
    })
    .await;
    let (_, slow_key) = tenant_with_key(&app.db, "slow").await;
    let (_, other_key) = tenant_with_key(&app.db, "other").await;
    let _slow = holding(&app, &slow_key, 2).await;
    let full = post_json(&app, &other_key, &json!([event("o1")])).await;
    assert_eq!(full.status, 429, "the slow uploads fill the gate");
    assert_eq!(
        full.body["type"], "https://slaproof.dev/problems/overloaded",
        "{}",
        full.body
    );

    let unknown = format!("spk_abcdefghij01_{}", "0f".repeat(32));
    let flood = (0..40).map(|i| {
        let key = if i % 2 == 0 {
            unknown.clone()
        } else {
            format!("nope-{i}")
        };
        let app = &app;
        async move {
            post(
                app,
                "/v1/events",
                Some(&key),
                &[("content-type", "application/json")],
                b"[{}]".to_vec(),
            )
            .await
            .status
        }
    });
    let statuses = futures_util::future::join_all(flood).await;

    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
}

#[tokio::test]
async fn a_tenant_holding_its_share_gets_429_while_another_is_admitted() {
    let app = spawn_app_with(|c| {
        c.ingest.writers = 2;
        c.ingest.max_in_flight = 8;
    })
    .await;
    let (_, busy) = tenant_with_key(&app.db, "busy").await;
    let (other, other_key) = tenant_with_key(&app.db, "other").await;
    // A quarter of 8: two slow uploads are the busy tenant's whole share.
    let _slow = holding(&app, &busy, 2).await;

    let refused = post_json(&app, &busy, &json!([event("busy-1")])).await;
    let admitted = post_json(&app, &other_key, &json!([event("other-1")])).await;

    assert_eq!(refused.status, 429, "the busy tenant is held to its share");
    assert_eq!(refused.headers["retry-after"], "1");
    assert_eq!(
        refused.body["type"], "https://slaproof.dev/problems/tenant-at-capacity",
        "{}",
        refused.body
    );
    assert_eq!(admitted.status, 200, "{}", admitted.body);
    assert_eq!(stored(&app.db, other).await.len(), 1);
}

#[tokio::test]
async fn a_body_slower_than_the_timeout_is_cut_with_408() {
    use tokio::io::AsyncReadExt;
    let app = spawn_app_with(|c| {
        c.ingest.writers = 1;
        c.ingest.max_in_flight = 1;
        c.ingest.body_timeout_secs = 1;
    })
    .await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let started = std::time::Instant::now();
    let mut slow = slow_upload(&app, &key).await;

    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut answer)).await;
    let waited = started.elapsed();

    assert!(
        read.is_ok(),
        "no answer in 10 s, and the connection still open"
    );
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 408"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(answer.contains("/problems/request-timeout"), "{answer}");
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    // Its place in the gate is free again.
    let after = post_json(&app, &key, &json!([event("after")])).await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(stored(&app.db, tenant).await.len(), 1);
}

#[tokio::test]
async fn a_key_past_its_rate_gets_429_with_retry_after() {
    let app = spawn_app_with(|c| {
        // A token every 5 s: the five requests below come well within it.
        c.ingest.rate_limit_per_sec = 0.2;
        c.ingest.rate_limit_burst = 3;
    })
    .await;
    let (_, fast) = tenant_with_key(&app.db, "fast").await;
    let (_, calm) = tenant_with_key(&app.db, "calm").await;

    let mut statuses = Vec::new();
    let mut last = None;
    for i in 0..5 {
        let reply = post_json(&app, &fast, &json!([event(&format!("f{i}"))])).await;
        statuses.push(reply.status);
        last = Some(reply);
    }
    let other = post_json(&app, &calm, &json!([event("c1")])).await;

    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let limited = last.unwrap();
    assert_eq!(
        limited.body["type"], "https://slaproof.dev/problems/rate-limited",
        "{}",
        limited.body
    );
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=5).contains(&retry), "{retry}");
    assert_eq!(other.status, 200, "another key keeps its own rate");
}

mod otlp_limits {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as V};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message;

    use super::*;

    fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    async fn post_traces(app: &TestApp, key: &str, content_type: &str, body: Vec<u8>) -> Reply {
        post(
            app,
            "/v1/traces",
            Some(key),
            &[("content-type", content_type)],
            body,
        )
        .await
    }

    #[tokio::test]
    async fn an_export_of_more_than_ten_thousand_spans_is_refused_with_413() {
        let app = spawn_app().await;
        let (_, key) = tenant_with_key(&app.db, "acme").await;
        let over = export(vec![Span::default(); 10_001]);
        let at_limit = export(vec![Span::default(); 10_000]);

        let protobuf =
            post_traces(&app, &key, "application/x-protobuf", over.encode_to_vec()).await;
        let json = post_traces(
            &app,
            &key,
            "application/json",
            serde_json::to_vec(&over).unwrap(),
        )
        .await;
        let accepted = post_traces(
            &app,
            &key,
            "application/x-protobuf",
            at_limit.encode_to_vec(),
        )
        .await;

        assert_eq!(protobuf.status, 413);
        assert_eq!(protobuf.headers["content-type"], "application/x-protobuf");
        assert_eq!(json.status, 413, "{}", json.body);
        assert_eq!(json.body["code"], 8, "RESOURCE_EXHAUSTED");
        assert!(
            json.body["message"]
                .as_str()
                .unwrap()
                .contains("10000 spans"),
            "{}",
            json.body
        );
        assert_eq!(
            accepted.status, 200,
            "spans other than GenAI ones are skipped"
        );
    }

    #[tokio::test]
    async fn an_export_that_would_decode_past_the_memory_budget_is_refused_before_it_is() {
        // 10,000 spans of 60 one-letter attributes: 6 MB of protobuf, over
        // 100 MB of decoded messages.
        let app = spawn_app_with(|c| c.ingest.max_memory_bytes = 32 * 1024 * 1024).await;
        let (tenant, key) = tenant_with_key(&app.db, "acme").await;
        let attributes: Vec<KeyValue> = (0..60u8)
            .map(|i| KeyValue {
                key: char::from(b'A' + i).to_string(),
                value: Some(AnyValue {
                    value: Some(V::BoolValue(true)),
                }),
                ..Default::default()
            })
            .collect();
        let span = Span {
            attributes,
            ..Default::default()
        };
        let body = export(vec![span; 10_000]).encode_to_vec();
        assert!(body.len() < 8 * 1024 * 1024, "{} bytes", body.len());

        let refused = post_traces(&app, &key, "application/x-protobuf", body).await;
        let small = post_traces(
            &app,
            &key,
            "application/x-protobuf",
            export(vec![Span::default(); 10]).encode_to_vec(),
        )
        .await;

        assert_eq!(refused.status, 413);
        assert_eq!(small.status, 200, "what was charged is given back");
        assert!(stored(&app.db, tenant).await.is_empty());
    }
}
