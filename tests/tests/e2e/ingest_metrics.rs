//! OTLP/HTTP `POST /v1/metrics` over real HTTP against a real Postgres:
//! GenAI histogram points stored as sent (protobuf and JSON, and from the
//! official Python SDK), everything else refused through partial success,
//! undecodable bodies answered 400 in the request's encoding.

use chrono::{DateTime, Duration, Utc};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as V};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, ExponentialHistogram, ExponentialHistogramDataPoint, Histogram,
    HistogramDataPoint, Metric, ResourceMetrics, ScopeMetrics, Sum, metric,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use slaproof_domain::ids::TenantId;
use slaproof_store::histograms::{self, StoredPoint};
use slaproof_store::{Database, ingest_keys, tenants};
use slaproof_tests::{TestApp, spawn_app};

async fn tenant_with_key(db: &Database, name: &str) -> (TenantId, String) {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "test").await.unwrap();
    tx.commit().await.unwrap();
    (tenant, key.reveal().to_owned())
}

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(V::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn nanos(time: DateTime<Utc>) -> u64 {
    u64::try_from(time.timestamp_nanos_opt().unwrap()).unwrap()
}

/// Time to first token of one minute, in the GenAI advisory buckets.
fn ttft_point(model: &str, end: DateTime<Utc>, counts: Vec<u64>) -> HistogramDataPoint {
    HistogramDataPoint {
        attributes: vec![
            kv("gen_ai.request.model", model),
            kv("gen_ai.operation.name", "chat"),
        ],
        start_time_unix_nano: nanos(end - Duration::minutes(1)),
        time_unix_nano: nanos(end),
        count: counts.iter().sum(),
        sum: Some(4.25),
        bucket_counts: counts,
        explicit_bounds: vec![0.1, 0.25, 0.5, 1.0],
        min: Some(0.05),
        max: Some(2.0),
        ..Default::default()
    }
}

fn histogram(name: &str, unit: &str, points: Vec<HistogramDataPoint>) -> Metric {
    Metric {
        name: name.into(),
        unit: unit.into(),
        data: Some(metric::Data::Histogram(Histogram {
            data_points: points,
            aggregation_temporality: AggregationTemporality::Delta as i32,
        })),
        ..Default::default()
    }
}

fn export(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "gateway")],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// An export with two good GenAI points, one bad one, a non-GenAI
/// histogram, a GenAI exponential histogram and a GenAI sum.
fn mixed_export(end: DateTime<Utc>) -> ExportMetricsServiceRequest {
    let mut bad = ttft_point("llama-3-8b", end, vec![1, 1, 1, 1, 1]);
    bad.count = 7;
    export(vec![
        histogram(
            "gen_ai.server.time_to_first_token",
            "s",
            vec![
                ttft_point("llama-3-8b", end, vec![3, 4, 2, 1, 0]),
                ttft_point("llama-3-70b", end, vec![0, 1, 5, 3, 1]),
                bad,
            ],
        ),
        histogram(
            "http.server.request.duration",
            "s",
            vec![ttft_point("x", end, vec![1, 0, 0, 0, 0])],
        ),
        Metric {
            name: "gen_ai.server.request.duration".into(),
            unit: "s".into(),
            data: Some(metric::Data::ExponentialHistogram(ExponentialHistogram {
                data_points: vec![ExponentialHistogramDataPoint {
                    time_unix_nano: nanos(end),
                    count: 1,
                    ..Default::default()
                }],
                aggregation_temporality: AggregationTemporality::Delta as i32,
            })),
            ..Default::default()
        },
        Metric {
            name: "gen_ai.client.token.usage".into(),
            unit: "{token}".into(),
            data: Some(metric::Data::Sum(Sum {
                data_points: vec![Default::default(), Default::default()],
                aggregation_temporality: AggregationTemporality::Delta as i32,
                is_monotonic: true,
            })),
            ..Default::default()
        },
    ])
}

async fn post(
    app: &TestApp,
    key: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/metrics", app.address))
        .bearer_auth(key)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

async fn points(db: &Database, tenant: TenantId, metric: &str) -> Vec<StoredPoint> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let now = Utc::now();
    let rows = histograms::list(
        &mut tx,
        metric,
        now - Duration::days(1),
        now + Duration::days(1),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    rows
}

#[tokio::test]
async fn protobuf_gen_ai_histograms_are_stored_as_sent_and_the_rest_refused_by_data_point() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let end = Utc::now() - Duration::seconds(5);
    let body = mixed_export(end).encode_to_vec();

    let (status, headers, answer) = post(&app, &key, "application/x-protobuf", body.clone()).await;
    // Sent again (a retry): stored once.
    let (retry, _, _) = post(&app, &key, "application/x-protobuf", body).await;

    assert_eq!((status, retry), (200, 200));
    assert_eq!(headers["content-type"], "application/x-protobuf");
    let partial = ExportMetricsServiceResponse::decode(answer.as_slice())
        .unwrap()
        .partial_success
        .unwrap();
    // The bad point, the HTTP histogram, the exponential one, two sums.
    assert_eq!(partial.rejected_data_points, 5);
    let message = &partial.error_message;
    for expected in [
        "data point 2 of gen_ai.server.time_to_first_token",
        "add up to 5 but count is 7",
        "data point 3 of http.server.request.duration",
        "exponential histograms are not stored",
        "data point 5 of gen_ai.client.token.usage",
    ] {
        assert!(message.contains(expected), "{expected:?} not in {message}");
    }

    let rows = points(&app.db, tenant, "gen_ai.server.time_to_first_token").await;
    assert_eq!(
        rows.len(),
        2,
        "two good points, once each despite the retry"
    );
    let big = rows
        .iter()
        .find(|p| p.model.as_deref() == Some("llama-3-70b"))
        .unwrap();
    assert_eq!(big.service, "gateway");
    assert_eq!(big.unit, "s");
    assert_eq!(big.temporality, "delta");
    assert_eq!(big.bounds, [0.1, 0.25, 0.5, 1.0]);
    assert_eq!(big.bucket_counts, [0, 1, 5, 3, 1]);
    assert_eq!((big.count, big.sum), (10, Some(4.25)));
    assert_eq!(
        big.attributes,
        serde_json::json!({"gen_ai.operation.name": "chat"})
    );
    let micros = |t: DateTime<Utc>| t.timestamp_micros();
    assert_eq!(micros(big.time), micros(end));
    assert_eq!(
        big.start_time.map(micros),
        Some(micros(end - Duration::minutes(1)))
    );
    assert!(
        points(&app.db, tenant, "http.server.request.duration")
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn otlp_json_is_answered_in_json_and_garbage_with_400() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let end = Utc::now() - Duration::seconds(5);
    let body = serde_json::to_vec(&export(vec![histogram(
        "gen_ai.server.time_per_output_token",
        "s",
        vec![ttft_point("llama-3-8b", end, vec![2, 0, 0, 0, 0])],
    )]))
    .unwrap();

    let (status, headers, answer) = post(&app, &key, "application/json", body).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert!(
        answer.get("partialSuccess").is_none_or(|p| p.is_null()),
        "{answer}"
    );
    let rows = points(&app.db, tenant, "gen_ai.server.time_per_output_token").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].bucket_counts, [2, 0, 0, 0, 0]);

    let (status, headers, answer) = post(
        &app,
        &key,
        "application/json",
        b"{\"resourceMetrics\": 3}".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(headers["content-type"], "application/json");
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["code"], 3, "INVALID_ARGUMENT: {answer}");
    let (status, _, _) = post(&app, &key, "application/x-protobuf", vec![0xff, 0xff, 0xff]).await;
    assert_eq!(status, 400);
    let (status, _, _) = post(&app, &key, "text/plain", b"x".to_vec()).await;
    assert_eq!(status, 415);
}

/// A venv with the OpenTelemetry Python SDK (tests/otel/requirements.txt),
/// made once under the cargo target folder; its own, so it is never
/// installed into by two test processes at once (see `ingest.rs`).
fn otel_python() -> std::path::PathBuf {
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("otel-metrics-venv");
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
async fn histograms_from_the_official_python_sdk_are_stored() {
    let python = tokio::task::spawn_blocking(otel_python).await.unwrap();
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("otel/send_genai_metrics.py");

    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .arg("5")
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            format!("http://{}/v1/metrics", app.address),
        )
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            format!("Authorization=Bearer%20{key}"),
        )
        .env("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip")
        .output()
        .await
        .unwrap();

    assert!(
        output.status.success(),
        "the SDK's export failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows = points(&app.db, tenant, "gen_ai.server.time_to_first_token").await;
    assert_eq!(rows.len(), 1, "one series, exported once at shutdown");
    let p = &rows[0];
    assert_eq!(p.service, "py-gateway");
    assert_eq!(p.model.as_deref(), Some("llama-3.1-8b"));
    assert_eq!(p.temporality, "cumulative");
    assert_eq!(p.bounds.len(), 16, "the advisory boundaries");
    // 0.03, 0.05, 0.07, 0.09, 0.11 s: one in each bucket from (0.02, 0.04].
    let expected: Vec<i64> = (0..17).map(|b| i64::from((4..9).contains(&b))).collect();
    assert_eq!(p.bucket_counts, expected);
    assert_eq!(p.count, 5);
    assert!(
        points(&app.db, tenant, "http.server.active_requests")
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn an_export_of_more_than_ten_thousand_data_points_is_refused_with_413() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let end = Utc::now() - Duration::seconds(5);
    // Points of every type count: 1 histogram point, 10,000 of a sum.
    let sum = |n: usize| Metric {
        name: "http.server.active_requests".into(),
        data: Some(metric::Data::Sum(Sum {
            data_points: vec![Default::default(); n],
            aggregation_temporality: AggregationTemporality::Delta as i32,
            is_monotonic: false,
        })),
        ..Default::default()
    };
    let ttft = || {
        histogram(
            "gen_ai.server.time_to_first_token",
            "s",
            vec![ttft_point("llama-3-8b", end, vec![3, 4, 2, 1, 0])],
        )
    };
    let over = export(vec![ttft(), sum(10_000)]);
    let at_limit = export(vec![ttft(), sum(9_999)]);

    let (protobuf, headers, _) =
        post(&app, &key, "application/x-protobuf", over.encode_to_vec()).await;
    let (json, _, body) = post(
        &app,
        &key,
        "application/json",
        serde_json::to_vec(&over).unwrap(),
    )
    .await;
    assert!(
        points(&app.db, tenant, "gen_ai.server.time_to_first_token")
            .await
            .is_empty()
    );
    let (accepted, _, answer) = post(
        &app,
        &key,
        "application/x-protobuf",
        at_limit.encode_to_vec(),
    )
    .await;

    assert_eq!(protobuf, 413);
    assert_eq!(headers["content-type"], "application/x-protobuf");
    assert_eq!(json, 413);
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["code"], 8, "RESOURCE_EXHAUSTED");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("10000 metric data points"),
        "{status}"
    );
    assert_eq!(accepted, 200);
    let partial = ExportMetricsServiceResponse::decode(answer.as_slice())
        .unwrap()
        .partial_success
        .unwrap();
    assert_eq!(partial.rejected_data_points, 9_999);
    assert_eq!(
        points(&app.db, tenant, "gen_ai.server.time_to_first_token")
            .await
            .len(),
        1
    );
}
