//! The worst-case request bodies ("shapes"), built at the server's default
//! limits: native batches, gzip bombs, and OTLP exports encoded by hand.

use std::io::Write;

use axum::body::Bytes;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// One worst-case request, sent `max_in_flight` times at once.
pub(crate) struct Shape {
    pub(crate) name: &'static str,
    pub(crate) what: String,
    pub(crate) path: &'static str,
    pub(crate) content_type: &'static str,
    pub(crate) gzip: bool,
    pub(crate) decoded_len: usize,
    pub(crate) body: Bytes,
}

pub(crate) const MIB: usize = 1024 * 1024;

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

fn shape(
    name: &'static str,
    what: impl Into<String>,
    path: &'static str,
    content_type: &'static str,
    gzip: bool,
    decoded: Vec<u8>,
) -> Shape {
    let decoded_len = decoded.len();
    let body = if gzip { gz(&decoded) } else { decoded };
    Shape {
        name,
        what: what.into(),
        path,
        content_type,
        gzip,
        decoded_len,
        body: Bytes::from(body),
    }
}

/// A JSON array of `count` copies of `item` (then `tail`), within `cap` bytes.
fn json_array(item: &str, count: usize, cap: usize) -> Vec<u8> {
    let count = count.min((cap - 2) / (item.len() + 1));
    let mut out = Vec::with_capacity(count * (item.len() + 1) + 2);
    out.push(b'[');
    for i in 0..count {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.as_bytes());
    }
    out.push(b']');
    out
}

pub(crate) fn now_rfc3339() -> String {
    (chrono::Utc::now() - chrono::Duration::seconds(30))
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn nanos_now() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)).unwrap_or(0)
}

/// `bytes` as field `tag` of a message (length-delimited).
fn field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// An export of one resource (`service.name`) and one scope whose spans
/// are `spans`, each already encoded: encoded by hand, so that millions of
/// spans cost the sender their bytes only.
fn traces(spans: impl Iterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut scope = Vec::new();
    for span in spans {
        field(&mut scope, 2, &span);
    }
    let resource = Resource {
        attributes: vec![kv(
            "service.name",
            any_value::Value::StringValue("rss".into()),
        )],
        ..Default::default()
    }
    .encode_to_vec();
    let mut resource_spans = Vec::new();
    field(&mut resource_spans, 1, &resource);
    field(&mut resource_spans, 2, &scope);
    let mut export = Vec::new();
    field(&mut export, 1, &resource_spans);
    export
}

/// `count` valid events, every field at its longest, with 64 attributes of
/// `name_len`-character names.
fn max_events(count: usize, name_len: usize) -> Vec<u8> {
    let text = |c: char| c.to_string().repeat(256);
    let time = now_rfc3339();
    let attributes: serde_json::Map<String, serde_json::Value> = (0..64)
        .map(|a| {
            (
                format!("a{a:02}{}", "x".repeat(name_len - 3)),
                serde_json::Value::from(-1.234_567_890_123_456_7e-300),
            )
        })
        .collect();
    let mut body = Vec::new();
    body.push(b'[');
    for i in 0..count {
        let event = serde_json::json!({
            "time": time,
            "service": text('s'),
            "model": text('m'),
            "request_id": format!("{i:0256}"),
            "error_class": text('e'),
            "status": 503,
            "latency_ms": 86_399_999.999,
            "ttft_ms": 86_399_999.999,
            "tpot_ms": 86_399_999.999,
            "input_tokens": 2_147_483_647,
            "output_tokens": 2_147_483_647,
            "streaming": true,
            "attributes": attributes,
        });
        if i > 0 {
            body.push(b',');
        }
        serde_json::to_writer(&mut body, &event).expect("writing to memory");
    }
    body.push(b']');
    body
}

/// The shapes, built at the server's default limits.
pub(crate) fn shapes(wanted: &[String]) -> Vec<Shape> {
    let defaults = slaproof_ingest::Settings::default();
    let cap = defaults.max_decoded_bytes;
    let items = 10_000;
    let want = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let mut out = Vec::new();

    if want("empty-objects-gzip") {
        out.push(shape(
            "empty-objects-gzip",
            "`[{},{},…]` up to the decoded cap (22 million events)",
            "/v1/events",
            "application/json",
            true,
            json_array("{}", usize::MAX, cap),
        ));
    }
    if want("max-events-gzip") {
        // Every field at its longest, 64 attributes with names as long as
        // fit the decoded cap: valid, so all 10,000 are checked and written.
        let (body, name_len) = (8..=64)
            .rev()
            .map(|len| (max_events(items, len), len))
            .find(|(body, _)| body.len() <= cap)
            .expect("events that fit");
        out.push(shape(
            "max-events-gzip",
            format!(
                "10,000 valid events, every field at its longest, 64 attributes of {name_len}-character names ({:.1} MiB decoded)",
                body.len() as f64 / MIB as f64
            ),
            "/v1/events",
            "application/json",
            true,
            body,
        ));
    }
    if want("max-events-plain") {
        // As many such events as fit the limit on a body as sent.
        let limit = defaults.max_body_bytes;
        // Events are all as long (request ids are padded), so one tells.
        let one = max_events(1, 64).len() - 2;
        let count = ((limit - 2) / (one + 1)).min(items);
        out.push(shape(
            "max-events-plain",
            format!("{count} valid events of 64-character attribute names, uncompressed"),
            "/v1/events",
            "application/json",
            false,
            max_events(count, 64),
        ));
    }
    if want("many-attributes-gzip") {
        // Far more attributes than the 64 allowed, small enough that there
        // are as many as the decoded cap holds.
        let per_event = cap / items / 8;
        let attributes: Vec<String> = (0..per_event).map(|a| format!("\"{a:x}\":1")).collect();
        let item = format!("{{\"attributes\":{{{}}}}}", attributes.join(","));
        out.push(shape(
            "many-attributes-gzip",
            format!("10,000 events with {per_event} attributes each"),
            "/v1/events",
            "application/json",
            true,
            json_array(&item, items, cap),
        ));
    }
    if want("long-reasons-gzip") {
        // A refusal that quotes the value: `invalid type: string "…"`.
        let item = format!(
            "{{\"time\":\"{}\",\"service\":\"s\",\"status\":\"{}\"}}",
            now_rfc3339(),
            "x".repeat(cap / items - 80)
        );
        out.push(shape(
            "long-reasons-gzip",
            "10,000 invalid events, each with a 6.6 kB string where a number goes",
            "/v1/events",
            "application/json",
            true,
            json_array(&item, items, cap),
        ));
    }
    if want("ndjson-huge-lines-gzip") {
        let line = format!("{{\"status\":\"{}\"}}\n", "x".repeat(cap / 8 - 20));
        out.push(shape(
            "ndjson-huge-lines-gzip",
            "NDJSON, 8 lines of 8 MiB, each a string where a number goes",
            "/v1/events",
            "application/x-ndjson",
            true,
            line.repeat(8).into_bytes(),
        ));
    }
    if want("ndjson-one-huge-line-gzip") {
        let line = format!("{{\"status\":\"{}\"}}\n", "x".repeat(cap - 20));
        out.push(shape(
            "ndjson-one-huge-line-gzip",
            "NDJSON, one 64 MiB line, a string where a number goes",
            "/v1/events",
            "application/x-ndjson",
            true,
            line.into_bytes(),
        ));
    }
    if want("deep-nesting-gzip") {
        let depth = (cap - 16) / 2;
        let mut body = Vec::with_capacity(cap);
        body.extend_from_slice(b"[{\"x\":");
        body.extend(std::iter::repeat_n(b'[', depth));
        body.extend(std::iter::repeat_n(b']', depth));
        body.extend_from_slice(b"}]");
        out.push(shape(
            "deep-nesting-gzip",
            format!("one event whose ignored field nests {depth} arrays"),
            "/v1/events",
            "application/json",
            true,
            body,
        ));
    }
    if want("gzip-bomb-at-cap") {
        let mut body = vec![b' '; cap];
        body[0] = b'[';
        body[cap - 1] = b']';
        out.push(shape(
            "gzip-bomb-at-cap",
            "64 MiB of JSON whitespace from a 64 kB gzip",
            "/v1/events",
            "application/json",
            true,
            body,
        ));
    }
    if want("gzip-bomb-over-cap") {
        out.push(shape(
            "gzip-bomb-over-cap",
            "1 GiB of zeros from a 1 MiB gzip",
            "/v1/events",
            "application/json",
            true,
            vec![0; 1024 * MIB],
        ));
    }
    if want("otlp-empty-spans-gzip") {
        let spans = std::iter::repeat_n(Vec::new(), cap / 2 - 64);
        out.push(shape(
            "otlp-empty-spans-gzip",
            format!(
                "OTLP protobuf, {} million empty spans",
                (cap / 2 - 64) / 1_000_000
            ),
            "/v1/traces",
            "application/x-protobuf",
            true,
            traces(spans),
        ));
    }
    if want("otlp-spans-max-attributes-gzip") {
        // 10,000 GenAI spans, each with as many one-letter boolean
        // attributes as the decoded cap holds (9 bytes each on the wire).
        let start = nanos_now() - 60_000_000_000;
        let per_span = cap / items / 9 - 16;
        let mut attributes = Vec::new();
        field(
            &mut attributes,
            9,
            &kv(
                "gen_ai.request.model",
                any_value::Value::StringValue("m".into()),
            )
            .encode_to_vec(),
        );
        for i in 0..per_span {
            let name = char::from(b'a' + (i % 26) as u8).to_string();
            field(
                &mut attributes,
                9,
                &kv(&name, any_value::Value::BoolValue(true)).encode_to_vec(),
            );
        }
        let spans = (0..items).map(|i| {
            let mut span = Span {
                trace_id: vec![1; 16],
                span_id: (i as u64).to_be_bytes().to_vec(),
                start_time_unix_nano: start,
                end_time_unix_nano: start + 1_000_000,
                ..Default::default()
            }
            .encode_to_vec();
            span.extend_from_slice(&attributes);
            span
        });
        out.push(shape(
            "otlp-spans-max-attributes-gzip",
            format!("OTLP protobuf, 10,000 GenAI spans with {per_span} attributes each"),
            "/v1/traces",
            "application/x-protobuf",
            true,
            traces(spans),
        ));
    }
    if want("otlp-json-empty-spans-gzip") {
        let mut body = b"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":".to_vec();
        body.extend(json_array("{}", usize::MAX, cap - 64));
        body.extend_from_slice(b"}]}]}");
        out.push(shape(
            "otlp-json-empty-spans-gzip",
            "OTLP/JSON, 22 million empty spans",
            "/v1/traces",
            "application/json",
            true,
            body,
        ));
    }
    if want("otlp-spans-attributes-plain") {
        // As many one-letter boolean attributes on 10,000 GenAI spans as
        // the limit on a body as sent allows: decoded whole, not refused.
        let start = nanos_now() - 60_000_000_000;
        let per_span = defaults.max_body_bytes / items / 9 - 12;
        let mut attributes = Vec::new();
        for i in 0..per_span {
            let name = if i == 0 {
                "gen_ai.system".to_owned()
            } else {
                char::from(b'a' + (i % 26) as u8).to_string()
            };
            field(
                &mut attributes,
                9,
                &kv(&name, any_value::Value::BoolValue(true)).encode_to_vec(),
            );
        }
        let spans = (0..items).map(|i| {
            let mut span = Span {
                trace_id: vec![2; 16],
                span_id: (i as u64).to_be_bytes().to_vec(),
                start_time_unix_nano: start,
                end_time_unix_nano: start + 1_000_000,
                ..Default::default()
            }
            .encode_to_vec();
            span.extend_from_slice(&attributes);
            span
        });
        out.push(shape(
            "otlp-spans-attributes-plain",
            format!(
                "OTLP protobuf, 10,000 GenAI spans with {per_span} attributes each, uncompressed"
            ),
            "/v1/traces",
            "application/x-protobuf",
            false,
            traces(spans),
        ));
    }
    if want("otlp-json-long-string-gzip") {
        let body = format!("{{\"resourceSpans\":\"{}\"}}", "x".repeat(cap - 32));
        out.push(shape(
            "otlp-json-long-string-gzip",
            "OTLP/JSON, a 64 MiB string where the spans go",
            "/v1/traces",
            "application/json",
            true,
            body.into_bytes(),
        ));
    }
    if want("otlp-json-buffered-junk-gzip") {
        // An attribute value with a field serde reads whole before it
        // skips it: 21 million empty objects.
        let mut body =
            br#"{"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":{"junk":"#.to_vec();
        body.extend(json_array("{}", usize::MAX, cap - 128));
        body.extend_from_slice(b"}}]}}]}");
        out.push(shape(
            "otlp-json-buffered-junk-gzip",
            "OTLP/JSON, an attribute value with an unknown field of 21 million empty objects",
            "/v1/traces",
            "application/json",
            true,
            body,
        ));
    }
    if want("otlp-metrics-empty-points-gzip") {
        // Histogram { data_points: [{}, {}, …], temporality: DELTA }.
        let mut histogram = Vec::new();
        for _ in 0..cap / 2 - 64 {
            field(&mut histogram, 1, &[]);
        }
        histogram.extend_from_slice(&[0x10, 0x01]);
        let mut metric = Metric {
            name: "gen_ai.server.request.duration".into(),
            ..Default::default()
        }
        .encode_to_vec();
        field(&mut metric, 9, &histogram);
        let mut scope = Vec::new();
        field(&mut scope, 2, &metric);
        let mut resource = Vec::new();
        field(&mut resource, 2, &scope);
        let mut export = Vec::new();
        field(&mut export, 1, &resource);
        out.push(shape(
            "otlp-metrics-empty-points-gzip",
            "OTLP protobuf metrics, 33 million empty histogram points",
            "/v1/metrics",
            "application/x-protobuf",
            true,
            export,
        ));
    }
    out
}
