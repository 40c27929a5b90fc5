//! What an OTLP export will take once decoded, found before it is decoded.
//!
//! prost and serde decode an export whole, and decoded messages can be many
//! times their encoded bytes: an empty span is 2 bytes of protobuf and
//! about 250 bytes of `Span`, an attribute 9 bytes and about 100. So before
//! decoding, the export is walked once, without allocating, over the OTLP
//! messages' fields (protobuf field numbers, or OTLP/JSON's camelCase
//! names): the spans (or metric data points) are counted, and refused with
//! 413 as soon as there is one more than [`MAX_ITEMS`], and what decoding
//! would allocate is added up from the Rust types' sizes, for the request to
//! charge to the memory budget before it decodes.
//!
//! The figure is an estimate on the high side: a repeated field of `n`
//! elements counts a vector of `max(4, 2n)` (a vector grows by doubling
//! from 4), a string or byte field its length plus an allocation's
//! overhead, and, in JSON, what serde buffers before decoding: the fields
//! of a message with a `flatten`ed member (an attribute value, a metric's
//! data, a data point's or exemplar's value) that are not its named fields
//! are first read whole into serde's own tree, a second time per such
//! message they are nested in. Fields the types do not have are skipped
//! by the decoders and cost nothing, here too (but for that buffering).
//!
//! The walk must see every item the decoders would: protobuf groups are
//! skipped as prost skips them, and what it cannot follow is refused (400)
//! rather than left for the decoder, which is never stricter: broken wire
//! data, nesting deeper than prost's limit, and OTLP/JSON messages written
//! as arrays (serde's derived decoders accept a struct as the array of its
//! fields; OTLP/JSON has objects only).
//!
//! The tables of messages and fields, the estimate and the refusals are
//! here; the walks are in [`protobuf`] and [`json`], which share them and
//! nothing else.

use opentelemetry_proto::tonic::collector::metrics::v1 as collector_metrics;
use opentelemetry_proto::tonic::collector::trace::v1 as collector_trace;
use opentelemetry_proto::tonic::common::v1 as common;
use opentelemetry_proto::tonic::metrics::v1 as metrics;
use opentelemetry_proto::tonic::resource::v1 as resource;
use opentelemetry_proto::tonic::trace::v1 as trace;

use crate::body::{self, MAX_ITEMS};
use crate::budget::heap;
use crate::problem::IngestProblem;

pub(crate) mod json;
pub(crate) mod protobuf;

/// The OTLP messages of trace and metric exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Msg {
    TraceRequest,
    ResourceSpans,
    Resource,
    EntityRef,
    ScopeSpans,
    Scope,
    Span,
    SpanEvent,
    SpanLink,
    Status,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    MetricsRequest,
    ResourceMetrics,
    ScopeMetrics,
    Metric,
    Gauge,
    Sum,
    Histogram,
    ExpHistogram,
    Summary,
    NumberPoint,
    HistogramPoint,
    ExpPoint,
    Buckets,
    SummaryPoint,
    Quantile,
    Exemplar,
}

/// What a field holds, as far as memory goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// A message held inside its parent (an optional field, a oneof).
    One(Msg),
    /// A repeated message: each element in a vector.
    Many(Msg),
    /// A string or bytes.
    Text,
    /// A repeated string.
    ManyText,
    /// Repeated 64-bit numbers, packed as fixed-width on the wire.
    Fixed,
    /// Repeated 64-bit numbers, packed as varints on the wire.
    Varints,
}

use Field::{Fixed, Many, ManyText, One, Text, Varints};

/// The fields that allocate, by field number and OTLP/JSON name; the others
/// (scalars, and fields the types do not have) are held in place or skipped.
fn fields(msg: Msg) -> &'static [(u32, &'static str, Field)] {
    match msg {
        Msg::TraceRequest => &[(1, "resourceSpans", Many(Msg::ResourceSpans))],
        Msg::ResourceSpans => &[
            (1, "resource", One(Msg::Resource)),
            (2, "scopeSpans", Many(Msg::ScopeSpans)),
            (3, "schemaUrl", Text),
        ],
        Msg::Resource => &[
            (1, "attributes", Many(Msg::KeyValue)),
            (3, "entityRefs", Many(Msg::EntityRef)),
        ],
        Msg::EntityRef => &[
            (1, "schemaUrl", Text),
            (2, "type", Text),
            (3, "idKeys", ManyText),
            (4, "descriptionKeys", ManyText),
        ],
        Msg::ScopeSpans => &[
            (1, "scope", One(Msg::Scope)),
            (2, "spans", Many(Msg::Span)),
            (3, "schemaUrl", Text),
        ],
        Msg::Scope => &[
            (1, "name", Text),
            (2, "version", Text),
            (3, "attributes", Many(Msg::KeyValue)),
        ],
        Msg::Span => &[
            (1, "traceId", Text),
            (2, "spanId", Text),
            (3, "traceState", Text),
            (4, "parentSpanId", Text),
            (5, "name", Text),
            (9, "attributes", Many(Msg::KeyValue)),
            (11, "events", Many(Msg::SpanEvent)),
            (13, "links", Many(Msg::SpanLink)),
            (15, "status", One(Msg::Status)),
        ],
        Msg::SpanEvent => &[(2, "name", Text), (3, "attributes", Many(Msg::KeyValue))],
        Msg::SpanLink => &[
            (1, "traceId", Text),
            (2, "spanId", Text),
            (3, "traceState", Text),
            (4, "attributes", Many(Msg::KeyValue)),
        ],
        Msg::Status => &[(2, "message", Text)],
        Msg::KeyValue => &[(1, "key", Text), (2, "value", One(Msg::AnyValue))],
        Msg::AnyValue => &[
            (1, "stringValue", Text),
            (5, "arrayValue", One(Msg::ArrayValue)),
            (6, "kvlistValue", One(Msg::KeyValueList)),
            (7, "bytesValue", Text),
        ],
        Msg::ArrayValue => &[(1, "values", Many(Msg::AnyValue))],
        Msg::KeyValueList => &[(1, "values", Many(Msg::KeyValue))],
        Msg::MetricsRequest => &[(1, "resourceMetrics", Many(Msg::ResourceMetrics))],
        Msg::ResourceMetrics => &[
            (1, "resource", One(Msg::Resource)),
            (2, "scopeMetrics", Many(Msg::ScopeMetrics)),
            (3, "schemaUrl", Text),
        ],
        Msg::ScopeMetrics => &[
            (1, "scope", One(Msg::Scope)),
            (2, "metrics", Many(Msg::Metric)),
            (3, "schemaUrl", Text),
        ],
        Msg::Metric => &[
            (1, "name", Text),
            (2, "description", Text),
            (3, "unit", Text),
            (5, "gauge", One(Msg::Gauge)),
            (7, "sum", One(Msg::Sum)),
            (9, "histogram", One(Msg::Histogram)),
            (10, "exponentialHistogram", One(Msg::ExpHistogram)),
            (11, "summary", One(Msg::Summary)),
            (12, "metadata", Many(Msg::KeyValue)),
        ],
        Msg::Gauge | Msg::Sum => &[(1, "dataPoints", Many(Msg::NumberPoint))],
        Msg::Histogram => &[(1, "dataPoints", Many(Msg::HistogramPoint))],
        Msg::ExpHistogram => &[(1, "dataPoints", Many(Msg::ExpPoint))],
        Msg::Summary => &[(1, "dataPoints", Many(Msg::SummaryPoint))],
        Msg::NumberPoint => &[
            (7, "attributes", Many(Msg::KeyValue)),
            (5, "exemplars", Many(Msg::Exemplar)),
        ],
        Msg::HistogramPoint => &[
            (9, "attributes", Many(Msg::KeyValue)),
            (6, "bucketCounts", Fixed),
            (7, "explicitBounds", Fixed),
            (8, "exemplars", Many(Msg::Exemplar)),
        ],
        Msg::ExpPoint => &[
            (1, "attributes", Many(Msg::KeyValue)),
            (8, "positive", One(Msg::Buckets)),
            (9, "negative", One(Msg::Buckets)),
            (11, "exemplars", Many(Msg::Exemplar)),
        ],
        Msg::Buckets => &[(2, "bucketCounts", Varints)],
        Msg::SummaryPoint => &[
            (7, "attributes", Many(Msg::KeyValue)),
            (6, "quantileValues", Many(Msg::Quantile)),
        ],
        Msg::Quantile => &[],
        Msg::Exemplar => &[
            (7, "filteredAttributes", Many(Msg::KeyValue)),
            (4, "spanId", Text),
            (5, "traceId", Text),
        ],
    }
}

/// A message's size in place: in its parent, or as an element of a vector.
fn size(msg: Msg) -> usize {
    use std::mem::size_of;
    match msg {
        Msg::TraceRequest => size_of::<collector_trace::ExportTraceServiceRequest>(),
        Msg::ResourceSpans => size_of::<trace::ResourceSpans>(),
        Msg::Resource => size_of::<resource::Resource>(),
        Msg::EntityRef => size_of::<common::EntityRef>(),
        Msg::ScopeSpans => size_of::<trace::ScopeSpans>(),
        Msg::Scope => size_of::<common::InstrumentationScope>(),
        Msg::Span => size_of::<trace::Span>(),
        Msg::SpanEvent => size_of::<trace::span::Event>(),
        Msg::SpanLink => size_of::<trace::span::Link>(),
        Msg::Status => size_of::<trace::Status>(),
        Msg::KeyValue => size_of::<common::KeyValue>(),
        Msg::AnyValue => size_of::<common::AnyValue>(),
        Msg::ArrayValue => size_of::<common::ArrayValue>(),
        Msg::KeyValueList => size_of::<common::KeyValueList>(),
        Msg::MetricsRequest => size_of::<collector_metrics::ExportMetricsServiceRequest>(),
        Msg::ResourceMetrics => size_of::<metrics::ResourceMetrics>(),
        Msg::ScopeMetrics => size_of::<metrics::ScopeMetrics>(),
        Msg::Metric => size_of::<metrics::Metric>(),
        Msg::Gauge => size_of::<metrics::Gauge>(),
        Msg::Sum => size_of::<metrics::Sum>(),
        Msg::Histogram => size_of::<metrics::Histogram>(),
        Msg::ExpHistogram => size_of::<metrics::ExponentialHistogram>(),
        Msg::Summary => size_of::<metrics::Summary>(),
        Msg::NumberPoint => size_of::<metrics::NumberDataPoint>(),
        Msg::HistogramPoint => size_of::<metrics::HistogramDataPoint>(),
        Msg::ExpPoint => size_of::<metrics::ExponentialHistogramDataPoint>(),
        Msg::Buckets => size_of::<metrics::exponential_histogram_data_point::Buckets>(),
        Msg::SummaryPoint => size_of::<metrics::SummaryDataPoint>(),
        Msg::Quantile => size_of::<metrics::summary_data_point::ValueAtQuantile>(),
        Msg::Exemplar => size_of::<metrics::Exemplar>(),
    }
}

/// Whether elements of `msg` are the items a request may carry at most
/// [`MAX_ITEMS`] of: spans, metric data points.
fn is_item(msg: Msg) -> bool {
    matches!(
        msg,
        Msg::Span | Msg::NumberPoint | Msg::HistogramPoint | Msg::ExpPoint | Msg::SummaryPoint
    )
}

/// An export's items and estimated decoded size.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Estimate {
    pub items: usize,
    pub bytes: usize,
}

impl Estimate {
    fn item(&mut self, msg: Msg) -> Result<(), Stop> {
        if is_item(msg) {
            self.items += 1;
            if self.items > MAX_ITEMS {
                return Err(Stop::TooMany);
            }
        }
        Ok(())
    }

    fn add(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

/// A vector of `n` elements of `size` bytes, with room to spare: vectors
/// start at 4 and double, so `max(4, 2n)` is never less than what decoding
/// one holds, even when a message's repeated field comes in parts.
fn vector(n: usize, size: usize) -> usize {
    if n == 0 {
        0
    } else {
        heap(n.saturating_mul(2).max(4).saturating_mul(size))
    }
}

#[derive(Debug)]
enum Stop {
    /// One item more than [`MAX_ITEMS`].
    TooMany,
    /// Something the walk cannot follow: the decoder would refuse it too.
    Malformed(&'static str),
}

/// The refusal for an export past [`MAX_ITEMS`].
fn too_many(root: Msg) -> IngestProblem {
    if root == Msg::TraceRequest {
        body::too_many_items("too-many-spans", "Too many spans", "spans")
    } else {
        body::too_many_items(
            "too-many-points",
            "Too many data points",
            "metric data points",
        )
    }
}

fn malformed(root: Msg, json: bool, why: &str) -> IngestProblem {
    let what = match (root, json) {
        (Msg::TraceRequest, false) => "an OTLP ExportTraceServiceRequest",
        (Msg::TraceRequest, true) => "an OTLP/JSON ExportTraceServiceRequest",
        (_, false) => "an OTLP ExportMetricsServiceRequest",
        (_, true) => "an OTLP/JSON ExportMetricsServiceRequest",
    };
    IngestProblem::bad_request(format!("not {what}: {why}"))
}

/// Vectors counted in one message: a repeated field's tag, element size
/// and elements so far. OTLP messages have at most 5 repeated fields.
#[derive(Default)]
struct Vectors {
    seen: [(u32, usize, usize); 8],
    len: usize,
}

impl Vectors {
    fn add(&mut self, tag: u32, size: usize, n: usize) {
        if let Some(v) = self.seen[..self.len].iter_mut().find(|v| v.0 == tag) {
            v.2 += n;
        } else if self.len < self.seen.len() {
            self.seen[self.len] = (tag, size, n);
            self.len += 1;
        }
    }

    fn bytes(&self) -> usize {
        self.seen[..self.len]
            .iter()
            .map(|&(_, size, n)| vector(n, size))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::json::estimate as json;
    use super::protobuf::estimate as protobuf;
    use super::*;
    use collector_trace::ExportTraceServiceRequest;
    use prost::Message;

    fn kv(key: &str) -> common::KeyValue {
        common::KeyValue {
            key: key.into(),
            value: Some(common::AnyValue {
                value: Some(common::any_value::Value::BoolValue(true)),
            }),
            ..Default::default()
        }
    }

    fn export(spans: usize, attributes: usize) -> collector_trace::ExportTraceServiceRequest {
        let span = trace::Span {
            name: "chat".into(),
            attributes: (0..attributes).map(|i| kv(&format!("k{i}"))).collect(),
            ..Default::default()
        };
        collector_trace::ExportTraceServiceRequest {
            resource_spans: vec![trace::ResourceSpans {
                scope_spans: vec![trace::ScopeSpans {
                    spans: vec![span; spans],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn spans_are_counted_in_either_encoding_and_refused_past_the_limit() {
        let small = export(3, 2);
        let proto = protobuf(Msg::TraceRequest, &small.encode_to_vec()).unwrap();
        let json = json(Msg::TraceRequest, &serde_json::to_vec(&small).unwrap()).unwrap();
        assert_eq!((proto.items, json.items), (3, 3));
        let over = export(MAX_ITEMS + 1, 0);
        let refused = protobuf(Msg::TraceRequest, &over.encode_to_vec()).unwrap_err();
        assert_eq!(refused.status(), 413);
        assert!(
            refused.message().contains("10000 spans"),
            "{}",
            refused.message()
        );
        let refused = self::json(Msg::TraceRequest, &serde_json::to_vec(&over).unwrap());
        assert_eq!(refused.unwrap_err().status(), 413);
        let at = export(MAX_ITEMS, 0);
        assert_eq!(
            protobuf(Msg::TraceRequest, &at.encode_to_vec())
                .unwrap()
                .items,
            MAX_ITEMS
        );
    }

    #[test]
    fn the_estimate_covers_what_decoding_allocates() {
        let big = export(100, 50);
        let encoded = big.encode_to_vec();
        let sized = protobuf(Msg::TraceRequest, &encoded).unwrap();
        let floor = 100 * (size(Msg::Span) + 50 * (size(Msg::KeyValue) + 16));
        assert!(sized.bytes >= floor, "{} < {floor}", sized.bytes);
        assert!(
            sized.bytes > 10 * encoded.len(),
            "{} for {}",
            sized.bytes,
            encoded.len()
        );
        assert!(sized.bytes < 4 * floor, "{} vs {floor}", sized.bytes);
        let json = json(Msg::TraceRequest, &serde_json::to_vec(&big).unwrap()).unwrap();
        assert!(
            json.bytes >= sized.bytes,
            "{} < {}",
            json.bytes,
            sized.bytes
        );
    }

    #[test]
    fn metric_points_of_every_kind_are_counted() {
        let points = |n| metrics::Metric {
            name: "gen_ai.x".into(),
            data: Some(metrics::metric::Data::Gauge(metrics::Gauge {
                data_points: vec![metrics::NumberDataPoint::default(); n],
            })),
            ..Default::default()
        };
        let export =
            |metrics: Vec<metrics::Metric>| collector_metrics::ExportMetricsServiceRequest {
                resource_metrics: vec![metrics::ResourceMetrics {
                    scope_metrics: vec![metrics::ScopeMetrics {
                        metrics,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            };
        let ok = export(vec![points(4), points(MAX_ITEMS - 4)]);
        let sized = protobuf(Msg::MetricsRequest, &ok.encode_to_vec()).unwrap();
        assert_eq!(sized.items, MAX_ITEMS);
        let over = export(vec![points(4), points(MAX_ITEMS - 3)]);
        let refused = protobuf(Msg::MetricsRequest, &over.encode_to_vec()).unwrap_err();
        assert_eq!(refused.status(), 413);
        let refused = json(Msg::MetricsRequest, &serde_json::to_vec(&over).unwrap()).unwrap_err();
        assert_eq!(refused.status(), 413);
    }

    #[test]
    fn what_the_walk_cannot_follow_is_refused() {
        for body in [&[0xff, 0xff, 0xff][..], &[0x0a, 0x05, 0x00], &[0x0f]] {
            let refused = protobuf(Msg::TraceRequest, body).unwrap_err();
            assert_eq!(refused.status(), 400, "{body:?}");
            assert!(
                ExportTraceServiceRequest::decode(body).is_err(),
                "prost refuses it too: {body:?}"
            );
        }
        for body in [
            &b"{not json"[..],
            b"[1, 2]",
            b"{\"resourceSpans\": [[null, [[null, [{}]]]]]}",
        ] {
            let refused = json(Msg::TraceRequest, body).unwrap_err();
            assert_eq!(refused.status(), 400, "{}", String::from_utf8_lossy(body));
        }
        // Nulls and wrong types are left to the decoder.
        assert!(json(Msg::TraceRequest, b"{\"resourceSpans\": null}").is_ok());
        assert!(json(Msg::TraceRequest, b"{\"resourceSpans\": 3}").is_ok());
    }

    #[test]
    fn groups_are_skipped_as_prost_skips_them() {
        // Field 2 of the export as a group holding a field, then the spans.
        let mut body = vec![0x13, 0x08, 0x01, 0x14];
        body.extend(export(3, 1).encode_to_vec());
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        assert_eq!(decoded.resource_spans[0].scope_spans[0].spans.len(), 3);
        assert_eq!(protobuf(Msg::TraceRequest, &body).unwrap().items, 3);
        // A group that never ends, or ends with another tag, is refused.
        assert!(protobuf(Msg::TraceRequest, &[0x13, 0x08, 0x01]).is_err());
        assert!(protobuf(Msg::TraceRequest, &[0x13, 0x1c]).is_err());
    }

    #[test]
    fn small_vectors_count_their_first_allocation() {
        // One span of one attribute: vectors of 4 are allocated for each.
        let one = export(1, 1);
        let sized = protobuf(Msg::TraceRequest, &one.encode_to_vec()).unwrap();
        let floor = 4 * (size(Msg::ResourceSpans) + size(Msg::ScopeSpans) + size(Msg::Span))
            + 4 * size(Msg::KeyValue);
        assert!(sized.bytes >= floor, "{} < {floor}", sized.bytes);
    }
}
