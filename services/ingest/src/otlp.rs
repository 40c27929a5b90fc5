//! OTLP/HTTP `POST /v1/traces`: spans in the OpenTelemetry GenAI semantic
//! conventions become events.
//!
//! A span is an LLM request when it carries a `gen_ai.*` attribute; other
//! spans (database calls, internal work) are accepted and not stored. Per
//! the OTLP specification: protobuf or JSON in, the answer in the request's
//! content type, partial success with the count of rejected spans and a
//! message, 400 for undecodable data, 413, 429 / 503 with `Retry-After`,
//! and errors as a `google.rpc.Status`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, status};
use prost::Message;
use slaproof_store::events::{EventSource, StoredEvent};

use crate::budget;
use crate::event::{self, EventError, TimeBounds, derived_id};
use crate::metrics::{self, Refusal};
use crate::otlp_size::{self, Estimate, Msg};
use crate::problem::IngestProblem;
use crate::{Ingest, Memory, body};

/// How many rejection reasons the partial-success message quotes.
const QUOTED_REASONS: usize = 5;

/// The two OTLP/HTTP encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    pub(crate) fn of(media_type: Option<&str>) -> Option<Self> {
        match media_type {
            Some("application/x-protobuf" | "application/protobuf") => Some(Self::Protobuf),
            Some("application/json") => Some(Self::Json),
            _ => None,
        }
    }

    pub(crate) fn syntax(self) -> body::Syntax {
        match self {
            Self::Protobuf => body::Syntax::Binary,
            Self::Json => body::Syntax::Json,
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => "application/x-protobuf",
            Self::Json => "application/json",
        }
    }
}

/// `google.rpc.Status`, what OTLP/HTTP servers answer errors with. Not an
/// OTLP type, so opentelemetry-proto does not carry it; two fields suffice
/// (`details` is optional and never sent).
#[derive(Clone, PartialEq, Message, serde::Serialize)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

pub(crate) fn encode<T: Message + serde::Serialize>(encoding: Encoding, message: &T) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => message.encode_to_vec(),
        Encoding::Json => serde_json::to_vec(message).unwrap_or_default(),
    }
}

/// A refusal as OTLP clients expect it: the HTTP status, `Retry-After`
/// where a retry may help, and a `google.rpc.Status` in their encoding.
pub(crate) fn refusal(encoding: Encoding, problem: IngestProblem) -> Response {
    // gRPC codes matching the HTTP statuses, as in the OTLP/HTTP spec.
    let code = match problem.status() {
        StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => 3, // INVALID_ARGUMENT
        StatusCode::UNAUTHORIZED => 16,                                  // UNAUTHENTICATED
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::TOO_MANY_REQUESTS => 8, // RESOURCE_EXHAUSTED
        StatusCode::SERVICE_UNAVAILABLE => 14,                           // UNAVAILABLE
        StatusCode::UNSUPPORTED_MEDIA_TYPE => 3,
        _ => 13, // INTERNAL
    };
    let message = problem.message();
    let body = encode(encoding, &RpcStatus { code, message });
    let mut response = (problem.status(), body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    problem.add_headers(headers);
    response
}

#[tracing::instrument(skip_all, fields(tenant, spans))]
pub(crate) async fn post_traces(State(ingest): State<Arc<Ingest>>, request: Request) -> Response {
    export(request, |encoding, request| async move {
        handle(&ingest, encoding, request).await
    })
    .await
}

/// Answers one OTLP export request: picks the encoding from its content
/// type (refusing others with 415, in JSON, the one people can read), runs
/// `handle`, and answers a refusal in the request's own encoding, as the
/// specification asks of every OTLP/HTTP signal.
pub(crate) async fn export<F, Fut>(request: Request, handle: F) -> Response
where
    F: FnOnce(Encoding, Request) -> Fut,
    Fut: std::future::Future<Output = Result<Response, IngestProblem>>,
{
    let media_type = body::media_type(request.headers());
    let Some(encoding) = Encoding::of(media_type.as_deref()) else {
        return refusal(
            Encoding::Json,
            IngestProblem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Unsupported media type",
            )
            .with_detail("send application/x-protobuf or application/json"),
        );
    };
    match handle(encoding, request).await {
        Ok(response) => response,
        Err(problem) => refusal(encoding, problem),
    }
}

/// The events of an export, and the spans refused.
#[derive(Debug, Default)]
pub(crate) struct Mapped {
    pub spans: usize,
    pub events: Vec<StoredEvent>,
    pub errors: Vec<EventError>,
}

async fn handle(
    ingest: &Ingest,
    encoding: Encoding,
    request: Request,
) -> Result<Response, IngestProblem> {
    let (admission, who, _memory, body) = ingest.admit(request).await?.split();
    let customer_attribute = who.otlp_customer_attribute.clone();
    let mapped = ingest
        .off_thread(body, encoding.syntax(), move |body, bounds, memory| {
            let estimate = estimate(Msg::TraceRequest, encoding, body)?;
            let export = decode(encoding, body, &estimate, memory)?;
            let mapped = map_export(&export, &bounds, &customer_attribute);
            memory.kept.take(
                mapped.events.capacity() * size_of::<StoredEvent>()
                    + mapped.events.iter().map(budget::event_bytes).sum::<usize>()
                    + mapped.errors.iter().map(budget::error_bytes).sum::<usize>(),
            )?;
            Ok(mapped)
        })
        .await?;
    tracing::Span::current().record("spans", mapped.spans);
    metrics::refused(Refusal::Invalid, mapped.errors.len());
    ingest.store(&admission, who.tenant, &mapped.events).await?;
    let partial_success = (!mapped.errors.is_empty()).then(|| ExportTracePartialSuccess {
        rejected_spans: i64::try_from(mapped.errors.len()).unwrap_or(i64::MAX),
        error_message: summary(&mapped.errors),
    });
    let body = encode(encoding, &ExportTraceServiceResponse { partial_success });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response())
}

/// What an export whose root message is `root` (traces or metrics) will
/// take once decoded, found before it is decoded: its spans or data points
/// counted (413 past [`body::MAX_ITEMS`]) and its decoded size estimated.
pub(crate) fn estimate(
    root: Msg,
    encoding: Encoding,
    body: &[u8],
) -> Result<Estimate, IngestProblem> {
    match encoding {
        Encoding::Protobuf => otlp_size::protobuf::estimate(root, body),
        Encoding::Json => otlp_size::json::estimate(root, body),
    }
}

/// Decodes a trace export, its [`estimate`] charged to the request's
/// memory first.
pub(crate) fn decode(
    encoding: Encoding,
    body: &[u8],
    estimate: &Estimate,
    memory: &mut Memory,
) -> Result<ExportTraceServiceRequest, IngestProblem> {
    memory.held.take(estimate.bytes)?;
    match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body).map_err(|e| {
            IngestProblem::bad_request(format!("not an OTLP ExportTraceServiceRequest: {e}"))
        }),
        Encoding::Json => serde_json::from_slice(body).map_err(|e| {
            IngestProblem::bad_request(format!("not an OTLP/JSON ExportTraceServiceRequest: {e}"))
        }),
    }
}

/// A human summary of the refused spans, for `partial_success`.
fn summary(errors: &[EventError]) -> String {
    let quoted: Vec<String> = errors
        .iter()
        .take(QUOTED_REASONS)
        .map(|e| format!("span {}: {} {}", e.index, e.field, e.reason))
        .collect();
    let more = errors.len().saturating_sub(QUOTED_REASONS);
    let tail = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    format!(
        "{} span(s) rejected: {}{tail}",
        errors.len(),
        quoted.join("; ")
    )
}

pub(crate) fn find<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

/// The customer `attributes` name (`slaproof.customer`): a string, or an
/// integer id as its decimal text. Any other value (or an empty string,
/// refused by the reference's rule later) refuses the span by name rather
/// than counting it for another customer, or for none.
/// The customer named by the attribute `key` (the tenant's setting).
fn customer_of(attributes: &[KeyValue], key: &str) -> Result<Option<String>, (String, String)> {
    match find(attributes, key) {
        None => Ok(None),
        Some(any_value::Value::StringValue(s)) => Ok(Some(s.clone())),
        Some(any_value::Value::IntValue(i)) => Ok(Some(i.to_string())),
        Some(_) => Err((
            key.to_owned(),
            "must be a string (or an integer id): the customer's reference".to_owned(),
        )),
    }
}

pub(crate) fn string<'a>(attributes: &'a [KeyValue], keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|key| match find(attributes, key) {
        Some(any_value::Value::StringValue(s)) if !s.is_empty() => Some(s.as_str()),
        _ => None,
    })
}

fn number(attributes: &[KeyValue], keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|key| match find(attributes, key) {
        // Precision beyond 2^53 is not needed for counts and durations.
        #[allow(clippy::cast_precision_loss)]
        Some(any_value::Value::IntValue(i)) => Some(*i as f64),
        Some(any_value::Value::DoubleValue(d)) => Some(*d),
        Some(any_value::Value::StringValue(s)) => s.parse().ok(),
        _ => None,
    })
}

fn integer(attributes: &[KeyValue], keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|key| match find(attributes, key) {
        Some(any_value::Value::IntValue(i)) => Some(*i),
        Some(any_value::Value::StringValue(s)) => s.parse().ok(),
        _ => None,
    })
}

fn boolean(attributes: &[KeyValue], keys: &[&str]) -> Option<bool> {
    keys.iter().find_map(|key| match find(attributes, key) {
        Some(any_value::Value::BoolValue(b)) => Some(*b),
        _ => None,
    })
}

/// Whether a span describes a GenAI call.
fn is_gen_ai(span: &Span) -> bool {
    span.attributes
        .iter()
        .any(|kv| kv.key.starts_with("gen_ai."))
}

/// Time to first token, in seconds, under the names in use: the GenAI
/// metric's name set on the span, and the names of common instrumentations.
const TTFT_KEYS: &[&str] = &[
    "gen_ai.server.time_to_first_token",
    "gen_ai.response.time_to_first_token",
    "gen_ai.response.time_to_first_chunk",
];
const TPOT_KEYS: &[&str] = &[
    "gen_ai.server.time_per_output_token",
    "gen_ai.response.time_per_output_token",
];
const STREAMING_KEYS: &[&str] = &["gen_ai.request.stream", "gen_ai.request.streaming"];
const INPUT_KEYS: &[&str] = &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"];
const OUTPUT_KEYS: &[&str] = &[
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
];
/// The attribute naming the customer a span's request served, by the
/// provider's reference (on the span, else on its resource), unless the
/// tenant names another (`enduser.id`, `user.id`…: its ingest settings).
pub(crate) const DEFAULT_CUSTOMER_ATTRIBUTE: &str =
    slaproof_domain::event::DEFAULT_OTLP_CUSTOMER_ATTRIBUTE;
/// Attributes mapped to columns; the other numeric ones become free
/// attributes.
const MAPPED_KEYS: &[&str] = &[
    "gen_ai.server.time_to_first_token",
    "gen_ai.response.time_to_first_token",
    "gen_ai.response.time_to_first_chunk",
    "gen_ai.server.time_per_output_token",
    "gen_ai.response.time_per_output_token",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "http.response.status_code",
    "http.status_code",
];
/// Free attributes kept per event, as in the native API.
const MAX_FREE_ATTRIBUTES: usize = 64;

/// Text as the store keeps it: no NUL (Postgres text cannot hold it), at
/// most 256 characters, as the native API allows.
pub(crate) fn clean(text: &str) -> String {
    text.chars().filter(|c| *c != '\0').take(256).collect()
}

fn seconds_to_ms(seconds: Option<f64>) -> Option<f64> {
    seconds.map(|s| s * 1000.0)
}

/// Maps every GenAI span of an export to an event; `index` in errors counts
/// the spans of the export in order, from 0.
pub(crate) fn map_export(
    export: &ExportTraceServiceRequest,
    bounds: &TimeBounds,
    customer_attribute: &str,
) -> Mapped {
    let mut mapped = Mapped::default();
    let mut index = 0;
    for resource_spans in &export.resource_spans {
        let resource = resource_spans
            .resource
            .as_ref()
            .map(|r| r.attributes.as_slice())
            .unwrap_or_default();
        let service = string(resource, &["service.name"]).unwrap_or("unknown_service");
        let resource_customer = customer_of(resource, customer_attribute);
        for scope_spans in &resource_spans.scope_spans {
            for span in &scope_spans.spans {
                let this = index;
                index += 1;
                if !is_gen_ai(span) {
                    continue;
                }
                mapped.spans += 1;
                match map_span(
                    span,
                    service,
                    &resource_customer,
                    customer_attribute,
                    bounds,
                ) {
                    Ok(event) => mapped.events.push(event),
                    Err((field, reason)) => {
                        mapped.errors.push(EventError::new(this, field, reason))
                    }
                }
            }
        }
    }
    mapped
}

/// One GenAI span as an event, or the field that makes it unusable.
pub(crate) fn map_span(
    span: &Span,
    service: &str,
    resource_customer: &Result<Option<String>, (String, String)>,
    customer_attribute: &str,
    bounds: &TimeBounds,
) -> Result<StoredEvent, (String, String)> {
    let attrs = span.attributes.as_slice();
    // The span's own attribute wins over its resource's: a gateway that
    // serves many customers sets it per request.
    let customer = match customer_of(attrs, customer_attribute)? {
        Some(own) => Some(own),
        None => resource_customer.clone()?,
    };
    let customer = event::customer_ref(customer_attribute, customer)?;
    let start = i64::try_from(span.start_time_unix_nano)
        .ok()
        .filter(|n| *n > 0)
        .map(DateTime::<Utc>::from_timestamp_nanos)
        .ok_or_else(|| ("startTimeUnixNano".to_owned(), "is required".to_owned()))?;
    // Postgres keeps microseconds; truncating here keeps a retry's key equal.
    let occurred_at =
        start - chrono::Duration::nanoseconds(i64::from(start.timestamp_subsec_nanos() % 1000));
    bounds
        .check(occurred_at)
        .map_err(|r| ("startTimeUnixNano".to_owned(), r))?;
    if span.end_time_unix_nano < span.start_time_unix_nano {
        return Err((
            "endTimeUnixNano".into(),
            "is before startTimeUnixNano".into(),
        ));
    }
    #[allow(clippy::cast_precision_loss)]
    let latency_ms = (span.end_time_unix_nano - span.start_time_unix_nano) as f64 / 1e6;
    let status = match integer(attrs, &["http.response.status_code", "http.status_code"]) {
        Some(s) if (100..=599).contains(&s) => Some(i32::try_from(s).unwrap_or_default()),
        Some(s) => {
            return Err((
                "http.response.status_code".into(),
                format!("must be an HTTP status between 100 and 599, got {s}"),
            ));
        }
        None => None,
    };
    let failed = span
        .status
        .as_ref()
        .is_some_and(|s| s.code == status::StatusCode::Error as i32);
    let error_class = string(attrs, &["error.type"])
        .map(clean)
        .or_else(|| failed.then(|| "error".to_owned()));
    let model = string(attrs, &["gen_ai.response.model", "gen_ai.request.model"]).map(clean);
    let request_id = string(attrs, &["gen_ai.response.id"]).map(clean);
    // The span's own identity makes a re-sent export land once.
    let id = derived_id(&[
        "span",
        &hex::encode(&span.trace_id),
        &hex::encode(&span.span_id),
    ]);
    let non_negative_tokens =
        |key: &'static str, keys: &[&str]| -> Result<Option<i32>, (String, String)> {
            match integer(attrs, keys) {
                None => Ok(None),
                Some(n) => {
                    let n = u64::try_from(n)
                        .map_err(|_| (key.to_owned(), format!("must be 0 or more, got {n}")))?;
                    event::tokens(key, Some(n))
                }
            }
        };
    let mut free = serde_json::Map::new();
    for kv in attrs {
        if free.len() >= MAX_FREE_ATTRIBUTES
            || MAPPED_KEYS.contains(&kv.key.as_str())
            || kv.key == customer_attribute
            || !slaproof_domain::filter::is_valid_attr_name(&kv.key)
        {
            continue;
        }
        let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::IntValue(i)) => serde_json::Value::from(*i),
            Some(any_value::Value::DoubleValue(d)) if d.is_finite() => serde_json::Value::from(*d),
            _ => continue,
        };
        free.insert(kv.key.clone(), value);
    }
    Ok(StoredEvent {
        id,
        occurred_at,
        source: EventSource::Provider,
        service: clean(service),
        customer,
        model,
        request_id,
        status,
        error_class,
        latency_us: event::duration_us("latency", Some(latency_ms))?,
        ttft_us: event::duration_us(TTFT_KEYS[0], seconds_to_ms(number(attrs, TTFT_KEYS)))?,
        tpot_us: event::duration_us(TPOT_KEYS[0], seconds_to_ms(number(attrs, TPOT_KEYS)))?,
        input_tokens: non_negative_tokens(INPUT_KEYS[0], INPUT_KEYS)?,
        output_tokens: non_negative_tokens(OUTPUT_KEYS[0], OUTPUT_KEYS)?,
        streaming: boolean(attrs, STREAMING_KEYS),
        attributes: serde_json::Value::Object(free),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Status};

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    fn bounds() -> TimeBounds {
        TimeBounds::at(
            "2026-11-30T12:00:00Z".parse().unwrap(),
            30,
            chrono::Duration::minutes(5),
        )
    }

    /// 11:59 UTC, a minute before the bounds' now.
    const START: u64 = 1_796_039_940_000_000_000;

    #[test]
    fn a_span_names_its_customer_as_text_or_an_integer_id_and_anything_else_is_refused() {
        use any_value::Value::*;
        let with = |value: Option<any_value::Value>, id: u8| {
            let mut span = llm_span(id);
            if let Some(value) = value {
                span.attributes.push(kv("slaproof.customer", value));
            }
            span
        };
        let mut spans = export(vec![
            with(Some(StringValue("acme-corp".into())), 1),
            with(Some(IntValue(4711)), 2),
            with(None, 3),
            with(Some(BoolValue(true)), 4),
            with(Some(StringValue(String::new())), 5),
        ]);
        // The resource's customer, for spans that name none.
        spans.resource_spans[0]
            .resource
            .as_mut()
            .unwrap()
            .attributes
            .push(kv("slaproof.customer", StringValue("globex".into())));
        let mapped = map_export(&spans, &bounds(), DEFAULT_CUSTOMER_ATTRIBUTE);
        let customers: Vec<Option<&str>> = mapped
            .events
            .iter()
            .map(|e| e.customer.as_deref())
            .collect();
        assert_eq!(customers, [Some("acme-corp"), Some("4711"), Some("globex")]);
        let refused: Vec<(usize, &str)> = mapped
            .errors
            .iter()
            .map(|e| (e.index, e.field.as_str()))
            .collect();
        assert_eq!(
            refused,
            [(3, "slaproof.customer"), (4, "slaproof.customer")]
        );
    }

    #[test]
    fn start_is_a_minute_before_now() {
        let start: DateTime<Utc> = "2026-11-30T11:59:00Z".parse().unwrap();
        assert_eq!(start.timestamp_nanos_opt().unwrap() as u64, START);
    }

    fn llm_span(span_id: u8) -> Span {
        use any_value::Value::*;
        Span {
            trace_id: vec![7; 16],
            span_id: vec![span_id; 8],
            name: "chat llama-3".into(),
            start_time_unix_nano: START + 1_234,
            end_time_unix_nano: START + 1_234 + 812_500_000,
            attributes: vec![
                kv("gen_ai.operation.name", StringValue("chat".into())),
                kv("gen_ai.request.model", StringValue("llama-3".into())),
                kv("gen_ai.response.id", StringValue("chatcmpl-1".into())),
                kv("gen_ai.usage.input_tokens", IntValue(812)),
                kv("gen_ai.usage.output_tokens", IntValue(64)),
                kv("gen_ai.server.time_to_first_token", DoubleValue(0.095)),
                kv("gen_ai.server.time_per_output_token", DoubleValue(0.01225)),
                kv("gen_ai.request.stream", BoolValue(true)),
                kv("http.response.status_code", IntValue(200)),
                kv("gen_ai.request.temperature", DoubleValue(0.5)),
                kv("server.address", StringValue("eu-1".into())),
            ],
            ..Default::default()
        }
    }

    fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv(
                        "service.name",
                        any_value::Value::StringValue("chat-completions".into()),
                    )],
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

    #[test]
    fn a_gen_ai_span_maps_to_an_event_with_every_field() {
        let mapped = map_export(
            &export(vec![llm_span(1)]),
            &bounds(),
            DEFAULT_CUSTOMER_ATTRIBUTE,
        );
        assert_eq!(mapped.spans, 1);
        assert!(mapped.errors.is_empty(), "{:?}", mapped.errors);
        let e = &mapped.events[0];
        assert_eq!(e.service, "chat-completions");
        assert_eq!(e.model.as_deref(), Some("llama-3"));
        assert_eq!(e.request_id.as_deref(), Some("chatcmpl-1"));
        assert_eq!(e.status, Some(200));
        assert_eq!(e.latency_us, Some(812_500));
        assert_eq!(e.ttft_us, Some(95_000));
        assert_eq!(e.tpot_us, Some(12_250));
        assert_eq!((e.input_tokens, e.output_tokens), (Some(812), Some(64)));
        assert_eq!(e.streaming, Some(true));
        assert_eq!(
            e.occurred_at.timestamp_subsec_nanos(),
            1_000,
            "whole microseconds"
        );
        assert_eq!(
            e.attributes,
            serde_json::json!({"gen_ai.request.temperature": 0.5})
        );
        let again = map_export(
            &export(vec![llm_span(1)]),
            &bounds(),
            DEFAULT_CUSTOMER_ATTRIBUTE,
        );
        assert_eq!(again.events[0].id, e.id, "a re-sent span keeps its id");
    }

    #[test]
    fn other_spans_are_skipped_and_bad_ones_rejected_by_position() {
        let plain = Span {
            start_time_unix_nano: START,
            end_time_unix_nano: START + 1,
            ..Default::default()
        };
        let mut failed = llm_span(2);
        failed
            .attributes
            .retain(|kv| kv.key != "http.response.status_code");
        failed.status = Some(Status {
            code: status::StatusCode::Error as i32,
            ..Default::default()
        });
        let mut future = llm_span(3);
        future.start_time_unix_nano = START + 3_600_000_000_000;
        future.end_time_unix_nano = future.start_time_unix_nano + 1;
        let mapped = map_export(
            &export(vec![plain, failed, future]),
            &bounds(),
            DEFAULT_CUSTOMER_ATTRIBUTE,
        );
        assert_eq!(mapped.spans, 2);
        assert_eq!(mapped.events.len(), 1);
        assert_eq!(mapped.events[0].error_class.as_deref(), Some("error"));
        assert_eq!(mapped.errors.len(), 1);
        assert_eq!(mapped.errors[0].index, 2);
        assert_eq!(mapped.errors[0].field, "startTimeUnixNano");
        assert!(summary(&mapped.errors).starts_with("1 span(s) rejected: span 2"));
    }
}
