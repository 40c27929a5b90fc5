//! Writes the OTLP seed bodies under `corpus/otlp_*/`: a few exports built
//! as the tests build them, each as protobuf and as OTLP/JSON, with times
//! just before the fuzzers' fixed clock. The native and gauge seeds are
//! written by hand.
//!
//!     cargo run --manifest-path services/ingest/fuzz/Cargo.toml --example seeds

use std::path::Path;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as V};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, ExponentialHistogram, ExponentialHistogramDataPoint, Histogram,
    HistogramDataPoint, Metric, ResourceMetrics, ScopeMetrics, Sum, metric,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, status};
use prost::Message;
use slaproof_ingest_fuzz::NOW_SECS;

const SECOND: u64 = 1_000_000_000;

fn now_nanos() -> u64 {
    u64::try_from(NOW_SECS).unwrap() * SECOND
}

fn kv(key: &str, value: V) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn resource(service: &str) -> Option<Resource> {
    Some(Resource {
        attributes: vec![kv("service.name", V::StringValue(service.into()))],
        ..Default::default()
    })
}

fn llm_span(id: u8, start: u64) -> Span {
    Span {
        trace_id: vec![id; 16],
        span_id: vec![id; 8],
        name: "chat llama-3-8b".into(),
        start_time_unix_nano: start,
        end_time_unix_nano: start + 640_000_000,
        attributes: vec![
            kv("gen_ai.request.model", V::StringValue("llama-3-8b".into())),
            kv("gen_ai.response.id", V::StringValue(format!("cmpl-{id}"))),
            kv("gen_ai.usage.input_tokens", V::IntValue(100)),
            kv("gen_ai.usage.output_tokens", V::IntValue(20)),
            kv("gen_ai.server.time_to_first_token", V::DoubleValue(0.08)),
            kv("gen_ai.request.stream", V::BoolValue(true)),
            kv("http.response.status_code", V::IntValue(200)),
            kv("cache_hit", V::IntValue(1)),
        ],
        ..Default::default()
    }
}

fn traces(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: resource("gateway"),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn trace_seeds() -> Vec<(&'static str, ExportTraceServiceRequest)> {
    let start = now_nanos() - 10 * SECOND;
    let not_llm = Span {
        trace_id: vec![9; 16],
        span_id: vec![50; 8],
        start_time_unix_nano: start,
        end_time_unix_nano: start + 1,
        ..Default::default()
    };
    let too_new = llm_span(3, now_nanos() + 3600 * SECOND);
    let mut failed = llm_span(4, start);
    failed.status = Some(Status {
        code: status::StatusCode::Error as i32,
        message: "upstream overloaded".into(),
    });
    failed.attributes.extend([
        kv("http.response.status_code", V::IntValue(700)),
        kv("gen_ai.usage.input_tokens", V::StringValue("-1".into())),
        kv(
            "gen_ai.response.time_per_output_token",
            V::StringValue("0.01".into()),
        ),
    ]);
    let mut backwards = llm_span(5, start);
    backwards.end_time_unix_nano = start - 1;
    vec![
        ("one-span", traces(vec![llm_span(1, start)])),
        (
            "mixed",
            traces(vec![
                llm_span(1, start),
                not_llm,
                too_new,
                failed,
                backwards,
                llm_span(2, start),
            ]),
        ),
    ]
}

fn point(model: &str, end: u64, counts: Vec<u64>) -> HistogramDataPoint {
    HistogramDataPoint {
        attributes: vec![
            kv("gen_ai.request.model", V::StringValue(model.into())),
            kv("gen_ai.operation.name", V::StringValue("chat".into())),
        ],
        start_time_unix_nano: end - 60 * SECOND,
        time_unix_nano: end,
        count: counts.iter().sum(),
        sum: Some(4.25),
        bucket_counts: counts,
        explicit_bounds: vec![0.1, 0.25, 0.5, 1.0],
        min: Some(0.05),
        max: Some(2.0),
        ..Default::default()
    }
}

fn histogram(name: &str, points: Vec<HistogramDataPoint>) -> Metric {
    Metric {
        name: name.into(),
        unit: "s".into(),
        data: Some(metric::Data::Histogram(Histogram {
            data_points: points,
            aggregation_temporality: AggregationTemporality::Delta as i32,
        })),
        ..Default::default()
    }
}

fn metrics(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: resource("gateway"),
            scope_metrics: vec![ScopeMetrics {
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn metric_seeds() -> Vec<(&'static str, ExportMetricsServiceRequest)> {
    let end = now_nanos() - 60 * SECOND;
    let mut bad = point("llama-3-8b", end, vec![1, 1, 1, 1, 1]);
    bad.count = 7;
    let mut empty = point("llama-3-8b", end, vec![]);
    empty.flags = 1; // no recorded value
    let mut cumulative = histogram(
        "gen_ai.client.token.usage",
        vec![point("llama-3-70b", end, vec![0, 0, 0, 0, 2])],
    );
    if let Some(metric::Data::Histogram(h)) = &mut cumulative.data {
        h.aggregation_temporality = AggregationTemporality::Cumulative as i32;
    }
    vec![
        (
            "one-histogram",
            metrics(vec![histogram(
                "gen_ai.server.time_to_first_token",
                vec![point("llama-3-8b", end, vec![3, 4, 2, 1, 0])],
            )]),
        ),
        (
            "mixed",
            metrics(vec![
                histogram(
                    "gen_ai.server.time_to_first_token",
                    vec![
                        point("llama-3-8b", end, vec![3, 4, 2, 1, 0]),
                        point("llama-3-70b", end, vec![0, 1, 5, 3, 1]),
                        bad,
                        empty,
                    ],
                ),
                cumulative,
                histogram(
                    "http.server.request.duration",
                    vec![point("x", end, vec![1, 0, 0, 0, 0])],
                ),
                Metric {
                    name: "gen_ai.server.request.duration".into(),
                    unit: "s".into(),
                    data: Some(metric::Data::ExponentialHistogram(ExponentialHistogram {
                        data_points: vec![ExponentialHistogramDataPoint {
                            time_unix_nano: end,
                            count: 1,
                            ..Default::default()
                        }],
                        aggregation_temporality: AggregationTemporality::Delta as i32,
                    })),
                    ..Default::default()
                },
                Metric {
                    name: "gen_ai.client.operation.count".into(),
                    data: Some(metric::Data::Sum(Sum::default())),
                    ..Default::default()
                },
            ]),
        ),
    ]
}

fn write<T: Message + serde::Serialize>(signal: &str, name: &str, message: &T) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (encoding, ext, bytes) in [
        ("protobuf", "pb", message.encode_to_vec()),
        ("json", "json", serde_json::to_vec(message).unwrap()),
    ] {
        let dir = corpus.join(format!("otlp_{signal}_{encoding}"));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.{ext}"));
        std::fs::write(&path, bytes).unwrap();
        println!("{}", path.display());
    }
}

fn main() {
    for (name, export) in trace_seeds() {
        write("traces", name, &export);
    }
    for (name, export) in metric_seeds() {
        write("metrics", name, &export);
    }
}
