//! slaproof's own telemetry end to end: `slaproof up` exporting to a real
//! OTLP/HTTP receiver on loopback, which decodes what arrives with the
//! OpenTelemetry project's own protobuf types. A process of its own, since
//! the tracing subscriber and the meter provider are process-wide.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Histogram, HistogramDataPoint, Metric, ResourceMetrics, ScopeMetrics,
    metric, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use serde_json::json;

use crate::support;

use crate::support::{Up, shared_tempdir, slaproof};

/// What the receiver was sent.
#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

type Shared = Arc<Mutex<Received>>;

/// An OTLP/HTTP receiver on 127.0.0.1; its base URL.
async fn receiver(received: Shared) -> String {
    async fn traces(State(received): State<Shared>, body: Bytes) -> Vec<u8> {
        let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
        received.lock().unwrap().traces.push(request);
        Vec::new()
    }
    async fn metrics(State(received): State<Shared>, body: Bytes) -> Vec<u8> {
        let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
        received.lock().unwrap().metrics.push(request);
        Vec::new()
    }
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Every exported metric called `name`.
fn metrics_named<'a>(received: &'a Received, name: &str) -> Vec<&'a Metric> {
    received
        .metrics
        .iter()
        .flat_map(|r| &r.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .filter(|m| m.name == name)
        .collect()
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// The largest value of a cumulative counter across exports.
fn counter_total(received: &Received, name: &str) -> f64 {
    metrics_named(received, name)
        .into_iter()
        .filter_map(|m| match &m.data {
            Some(metric::Data::Sum(sum)) => Some(&sum.data_points),
            _ => None,
        })
        .flatten()
        .filter_map(|p| match p.value {
            Some(number_data_point::Value::AsInt(v)) => Some(v as f64),
            Some(number_data_point::Value::AsDouble(v)) => Some(v),
            None => None,
        })
        .fold(0.0, f64::max)
}

/// The largest count of a histogram's points whose attributes satisfy `matches`.
fn histogram_count(
    received: &Received,
    name: &str,
    unit: &str,
    matches: impl Fn(&[KeyValue]) -> bool,
) -> u64 {
    metrics_named(received, name)
        .into_iter()
        .filter(|m| m.unit == unit)
        .filter_map(|m| match &m.data {
            Some(metric::Data::Histogram(h)) => Some(&h.data_points),
            _ => None,
        })
        .flatten()
        .filter(|p| matches(&p.attributes))
        .map(|p| p.count)
        .max()
        .unwrap_or(0)
}

/// The largest value of a cumulative counter's series with one attribute
/// value (`counter_total` would take the largest of all series).
fn counter_with(received: &Received, name: &str, key: &str, value: &str) -> f64 {
    metrics_named(received, name)
        .into_iter()
        .filter_map(|m| match &m.data {
            Some(metric::Data::Sum(sum)) => Some(&sum.data_points),
            _ => None,
        })
        .flatten()
        .filter(|p| {
            matches!(attribute(&p.attributes, key), Some(any_value::Value::StringValue(s)) if s == value)
        })
        .filter_map(|p| match p.value {
            Some(number_data_point::Value::AsInt(v)) => Some(v as f64),
            Some(number_data_point::Value::AsDouble(v)) => Some(v),
            None => None,
        })
        .fold(0.0, f64::max)
}

/// An OTLP export with one GenAI histogram point to store and a non-GenAI
/// histogram point to refuse.
fn histogram_export(end: chrono::DateTime<chrono::Utc>) -> Vec<u8> {
    let kv = |key: &str, value: &str| KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    };
    let nanos = |t: chrono::DateTime<chrono::Utc>| t.timestamp_nanos_opt().unwrap() as u64;
    let point = HistogramDataPoint {
        attributes: vec![kv("gen_ai.request.model", "llama-3-70b")],
        start_time_unix_nano: nanos(end - chrono::Duration::minutes(1)),
        time_unix_nano: nanos(end),
        count: 2,
        sum: Some(0.5),
        bucket_counts: vec![1, 1, 0],
        explicit_bounds: vec![0.1, 1.0],
        ..Default::default()
    };
    let histogram = |name: &str| Metric {
        name: name.into(),
        unit: "s".into(),
        data: Some(metric::Data::Histogram(Histogram {
            data_points: vec![point.clone()],
            aggregation_temporality: AggregationTemporality::Delta as i32,
        })),
        ..Default::default()
    };
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "chat-completions")],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                metrics: vec![
                    histogram("gen_ai.server.time_to_first_token"),
                    histogram("http.server.request.duration"),
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

fn gauge_seen(received: &Received, name: &str) -> bool {
    metrics_named(received, name)
        .iter()
        .any(|m| matches!(&m.data, Some(metric::Data::Gauge(g)) if !g.data_points.is_empty()))
}

fn span_names(received: &Received) -> Vec<String> {
    received
        .traces
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| s.name.clone())
        .collect()
}

fn service_names(received: &Received) -> Vec<String> {
    let traces = received
        .traces
        .iter()
        .flat_map(|r| &r.resource_spans)
        .filter_map(|r| r.resource.as_ref());
    let metrics = received
        .metrics
        .iter()
        .flat_map(|r| &r.resource_metrics)
        .filter_map(|r| r.resource.as_ref());
    traces
        .chain(metrics)
        .map(|r| match attribute(&r.attributes, "service.name") {
            Some(any_value::Value::StringValue(s)) => s.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Waits, within a bound, until `done` holds for what was received.
async fn wait_for(received: &Shared, what: &str, done: impl Fn(&Received) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if done(&received.lock().unwrap()) {
            return;
        }
        if Instant::now() > deadline {
            let got = received.lock().unwrap();
            let names: Vec<String> = got
                .metrics
                .iter()
                .flat_map(|r| &r.resource_metrics)
                .flat_map(|r| &r.scope_metrics)
                .flat_map(|s| &s.metrics)
                .map(|m| m.name.clone())
                .collect();
            panic!(
                "no {what} within 90 s; metrics seen: {names:?}; spans seen: {:?}",
                span_names(&got)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `slaproof up` in `dir` with a clean slaproof environment, exporting to
/// `endpoint`.
fn start_up(dir: &Path, endpoint: &str) -> Up {
    let data_dir = dir.join("data");
    let mut command = slaproof(
        dir,
        &[
            // The ingest handler's spans are at info; the rest need not be.
            ("RUST_LOG", "warn,slaproof_ingest=info"),
            ("SLAPROOF_SERVER__LISTEN", "127.0.0.1:0"),
            ("SLAPROOF_TELEMETRY__OTLP_ENDPOINT", endpoint),
            ("SLAPROOF_TELEMETRY__SERVICE_NAME", "slaproof-under-test"),
            ("SLAPROOF_TELEMETRY__EXPORT_INTERVAL_SECS", "1"),
            ("SLAPROOF_EVALUATOR__INTERVAL_SECS", "1"),
            // No chain here: anvil has its own tests.
            ("SLAPROOF_EMBEDDED__ANVIL", "false"),
        ],
    );
    command.env("SLAPROOF_EMBEDDED__DATA_DIR", data_dir);
    support::start(command)
}

#[tokio::test(flavor = "multi_thread")]
async fn up_exports_its_spans_and_operator_metrics_over_otlp_http() {
    let received = Shared::default();
    let endpoint = receiver(received.clone()).await;
    let dir = shared_tempdir("slaproof-otel-");
    let mut up = start_up(dir.path(), &endpoint);
    let (url, key) = (up.url.clone(), up.ingest_key());

    let now = chrono::Utc::now() - chrono::Duration::seconds(30);
    let sent = 5;
    let mut events: Vec<serde_json::Value> = (0..sent)
        .map(|i| {
            json!({
                "time": now.to_rfc3339(),
                "service": "chat-completions",
                "model": "llama-3-70b",
                "request_id": format!("otel-{i}"),
                "status": 200,
                "latency_ms": 812.5
            })
        })
        .collect();
    // One invalid event, refused on its own (207).
    events.push(json!({"time": now.to_rfc3339(), "service": "chat-completions", "latency_ms": -5}));
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{url}/v1/events"))
        .bearer_auth(&key)
        .json(&events)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 207);
    // Gauge values: one new and one invalid, then the new one again (a
    // duplicate).
    let gauge = json!({"metric": "quality_score", "value": 0.9, "service": "chat-completions", "request_id": "otel-0"});
    let response = http
        .post(format!("{url}/v1/gauges"))
        .bearer_auth(&key)
        .json(&json!([gauge, {"metric": "quality_score", "service": "chat-completions"}]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 207);
    let response = http
        .post(format!("{url}/v1/gauges"))
        .bearer_auth(&key)
        .json(&json!([gauge]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // OTLP histogram points: one stored, one refused (not GenAI).
    let response = http
        .post(format!("{url}/v1/metrics"))
        .bearer_auth(&key)
        .header("content-type", "application/x-protobuf")
        .body(histogram_export(now))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // An API request without a token: a 401, still a request to count.
    let response = http.get(format!("{url}/v1/slas")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);

    wait_for(&received, "ingest and API metrics", |r| {
        counter_total(r, "slaproof.ingest.events.accepted") >= sent as f64
            && counter_total(r, "slaproof.ingest.events.refused") >= 1.0
            && histogram_count(r, "http.server.request.duration", "s", |a| {
                matches!(attribute(a, "http.route"), Some(any_value::Value::StringValue(s)) if s == "/v1/slas")
                    && matches!(attribute(a, "http.response.status_code"), Some(any_value::Value::IntValue(401)))
            }) >= 1
            && histogram_count(r, "http.server.request.duration", "s", |a| {
                matches!(attribute(a, "http.route"), Some(any_value::Value::StringValue(s)) if s == "/v1/events")
                    && matches!(attribute(a, "http.response.status_code"), Some(any_value::Value::IntValue(207)))
            }) >= 1
            && histogram_count(r, "slaproof.ingest.write.duration", "s", |_| true) >= 1
            && counter_with(r, "slaproof.ingest.gauges.accepted", "outcome", "new") >= 1.0
            && counter_with(r, "slaproof.ingest.gauges.accepted", "outcome", "duplicate") >= 1.0
            && counter_with(r, "slaproof.ingest.gauges.refused", "reason", "invalid") >= 1.0
            && counter_with(r, "slaproof.ingest.histogram_points.stored", "outcome", "new") >= 1.0
            && counter_total(r, "slaproof.ingest.histogram_points.refused") >= 1.0
    })
    .await;
    wait_for(&received, "evaluator metrics", |r| {
        counter_total(r, "slaproof.evaluator.tenants.evaluated") >= 1.0
            && histogram_count(r, "slaproof.evaluator.evaluation.duration", "s", |_| true) >= 1
            && gauge_seen(r, "slaproof.evaluator.watermark.lag")
    })
    .await;
    {
        let got = received.lock().unwrap();
        // Plausible: no more accepted than sent, exactly one refused as invalid.
        assert_eq!(
            counter_total(&got, "slaproof.ingest.events.accepted"),
            sent as f64
        );
        assert_eq!(counter_total(&got, "slaproof.ingest.events.refused"), 1.0);
        // Gauges: one new and one duplicate accepted, one invalid refused.
        let gauges =
            |outcome| counter_with(&got, "slaproof.ingest.gauges.accepted", "outcome", outcome);
        assert_eq!((gauges("new"), gauges("duplicate")), (1.0, 1.0));
        assert_eq!(counter_total(&got, "slaproof.ingest.gauges.refused"), 1.0);
        assert_eq!(
            counter_with(&got, "slaproof.ingest.gauges.refused", "reason", "invalid"),
            1.0
        );
        assert_eq!(
            counter_total(&got, "slaproof.ingest.histogram_points.stored"),
            1.0
        );
        assert_eq!(
            counter_total(&got, "slaproof.ingest.histogram_points.refused"),
            1.0
        );
    }

    // Spans arrive in batches, and at the latest on the graceful stop.
    let status = up.stop().expect("slaproof up exits within 60 s of SIGTERM");
    assert!(status.success(), "slaproof up exited with {status}");
    wait_for(&received, "the ingest handler's span", |r| {
        span_names(r).iter().any(|n| n == "post_events")
    })
    .await;
    let got = received.lock().unwrap();
    assert!(
        service_names(&got)
            .iter()
            .all(|name| name == "slaproof-under-test"),
        "{:?}",
        service_names(&got)
    );
}
