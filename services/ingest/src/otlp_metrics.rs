//! OTLP/HTTP `POST /v1/metrics`: GenAI histograms (request duration, time
//! to first token, time per output token, token usage) stored as sent.
//!
//! A histogram data point is an aggregate of many requests, so it cannot
//! become per-request events without inventing them; each point is kept
//! faithfully (`histogram_points`: bounds, bucket counts, sum, count,
//! temporality, interval, service and model) for charts and for threshold
//! objectives whose threshold is a bucket bound, where the count of values
//! at or under it is exact. What does not fit is rejected through partial
//! success, counted by data point with the first reasons in the message:
//! metrics outside `gen_ai.*`, and of GenAI metrics every type other than
//! the explicit-bucket histogram (exponential histograms' bounds are powers
//! of a scale no objective names; gauges, sums and summaries are not what
//! the GenAI conventions define). Answers as for `/v1/traces`: the
//! request's encoding, 400 undecodable, 413, 415, 429 / 503 with
//! `Retry-After`, errors as `google.rpc.Status`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, DataPointFlags, HistogramDataPoint, metric,
};
use prost::Message;
use slaproof_store::histograms::{self, HistogramPoint, Temporality};

use crate::budget;
use crate::event::{EventError, TimeBounds, derived_id};
use crate::metrics;
use crate::otlp::{Encoding, clean, encode, estimate, export, string};
use crate::otlp_size::{Estimate, Msg};
use crate::problem::IngestProblem;
use crate::writer::WriteError;
use crate::{Ingest, Memory};

/// How many rejection reasons the partial-success message quotes.
const QUOTED_REASONS: usize = 5;
/// Point attributes kept per point.
const MAX_ATTRIBUTES: usize = 64;
/// Buckets accepted per point; the SDKs' defaults have 15, advisory GenAI
/// bounds 14.
const MAX_BUCKETS: usize = 256;

#[tracing::instrument(skip_all, fields(tenant, points))]
pub(crate) async fn post_metrics(State(ingest): State<Arc<Ingest>>, request: Request) -> Response {
    export(request, |encoding, request| async move {
        handle(&ingest, encoding, request).await
    })
    .await
}

/// The points of an export to store, and the data points refused.
#[derive(Debug, Default)]
pub(crate) struct MappedMetrics {
    /// Data points in the export (of every metric type).
    pub data_points: usize,
    pub points: Vec<HistogramPoint>,
    /// `index` counts data points of the export in order, from 0; `field`
    /// names the metric.
    pub errors: Vec<EventError>,
}

async fn handle(
    ingest: &Ingest,
    encoding: Encoding,
    request: Request,
) -> Result<Response, IngestProblem> {
    let (admission, who, _memory, body) = ingest.admit(request).await?.split();
    let mapped = ingest
        .off_thread(body, encoding.syntax(), move |body, bounds, memory| {
            let estimate = estimate(Msg::MetricsRequest, encoding, body)?;
            let export = decode(encoding, body, &estimate, memory)?;
            let mapped = map_export(&export, &bounds);
            memory.kept.take(
                mapped.points.capacity() * size_of::<HistogramPoint>()
                    + mapped.points.iter().map(budget::point_bytes).sum::<usize>()
                    + mapped.errors.iter().map(budget::error_bytes).sum::<usize>(),
            )?;
            Ok(mapped)
        })
        .await?;
    tracing::Span::current().record("points", mapped.data_points);
    metrics::points_refused(mapped.errors.len());
    if !mapped.points.is_empty() {
        let _writer = ingest.gate.writer(&admission).await?;
        let new = write(ingest, who.tenant, &mapped.points)
            .await
            .map_err(|err| ingest.not_stored("histogram points", &err))?;
        let points = mapped.points.len() as u64;
        metrics::points_stored(new, points.saturating_sub(new));
    }
    let partial_success = (!mapped.errors.is_empty()).then(|| ExportMetricsPartialSuccess {
        rejected_data_points: i64::try_from(mapped.errors.len()).unwrap_or(i64::MAX),
        error_message: summary(&mapped.errors),
    });
    let body = encode(encoding, &ExportMetricsServiceResponse { partial_success });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response())
}

async fn write(
    ingest: &Ingest,
    tenant: slaproof_domain::ids::TenantId,
    points: &[HistogramPoint],
) -> Result<u64, WriteError> {
    let mut tx = ingest.db.tenant_tx(tenant).await?;
    let stored = histograms::insert(&mut tx, points).await?;
    tx.commit().await?;
    Ok(stored)
}

/// Decodes a metrics export, its [`estimate`] (its data points of every
/// type counted, 413 past [`crate::body::MAX_ITEMS`]) charged to the
/// request's memory first.
pub(crate) fn decode(
    encoding: Encoding,
    body: &[u8],
    estimate: &Estimate,
    memory: &mut Memory,
) -> Result<ExportMetricsServiceRequest, IngestProblem> {
    memory.held.take(estimate.bytes)?;
    match encoding {
        Encoding::Protobuf => ExportMetricsServiceRequest::decode(body).map_err(|e| {
            IngestProblem::bad_request(format!("not an OTLP ExportMetricsServiceRequest: {e}"))
        }),
        Encoding::Json => serde_json::from_slice(body).map_err(|e| {
            IngestProblem::bad_request(format!("not an OTLP/JSON ExportMetricsServiceRequest: {e}"))
        }),
    }
}

/// A human summary of the refused data points, for `partial_success`.
fn summary(errors: &[EventError]) -> String {
    let quoted: Vec<String> = errors
        .iter()
        .take(QUOTED_REASONS)
        .map(|e| format!("data point {} of {}: {}", e.index, e.field, e.reason))
        .collect();
    let more = errors.len().saturating_sub(QUOTED_REASONS);
    let tail = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    format!(
        "{} data point(s) rejected: {}{tail}",
        errors.len(),
        quoted.join("; ")
    )
}

/// Why every data point of a metric of another kind is refused, if it is.
fn refused_kind(name: &str, data: &metric::Data) -> Option<&'static str> {
    if !name.starts_with("gen_ai.") {
        return Some(
            "only GenAI metrics (gen_ai.*) are stored; other metrics belong in your metrics backend",
        );
    }
    match data {
        metric::Data::Histogram(_) => None,
        metric::Data::ExponentialHistogram(_) => Some(
            "exponential histograms are not stored: configure explicit bucket boundaries \
             (the GenAI conventions' advisory ones) so that thresholds can be bucket bounds",
        ),
        metric::Data::Gauge(_) | metric::Data::Sum(_) | metric::Data::Summary(_) => Some(
            "only histograms are stored for GenAI metrics; this data type is not one the \
             GenAI conventions define",
        ),
    }
}

fn point_count(data: &metric::Data) -> usize {
    match data {
        metric::Data::Gauge(g) => g.data_points.len(),
        metric::Data::Sum(s) => s.data_points.len(),
        metric::Data::Histogram(h) => h.data_points.len(),
        metric::Data::ExponentialHistogram(e) => e.data_points.len(),
        metric::Data::Summary(s) => s.data_points.len(),
    }
}

/// Maps every data point of an export: GenAI histogram points to stored
/// points, the rest to refusals.
pub(crate) fn map_export(
    export: &ExportMetricsServiceRequest,
    bounds: &TimeBounds,
) -> MappedMetrics {
    let mut mapped = MappedMetrics::default();
    for resource_metrics in &export.resource_metrics {
        let resource = resource_metrics
            .resource
            .as_ref()
            .map(|r| r.attributes.as_slice())
            .unwrap_or_default();
        let service = string(resource, &["service.name"]).unwrap_or("unknown_service");
        for scope in &resource_metrics.scope_metrics {
            for metric in &scope.metrics {
                let Some(data) = &metric.data else { continue };
                let first = mapped.data_points;
                mapped.data_points += point_count(data);
                if let Some(reason) = refused_kind(&metric.name, data) {
                    for index in first..mapped.data_points {
                        mapped
                            .errors
                            .push(EventError::new(index, clean(&metric.name), reason));
                    }
                    continue;
                }
                let metric::Data::Histogram(histogram) = data else {
                    continue;
                };
                let temporality =
                    match AggregationTemporality::try_from(histogram.aggregation_temporality) {
                        Ok(AggregationTemporality::Delta) => Some(Temporality::Delta),
                        Ok(AggregationTemporality::Cumulative) => Some(Temporality::Cumulative),
                        _ => None,
                    };
                for (i, point) in histogram.data_points.iter().enumerate() {
                    let index = first + i;
                    let Some(temporality) = temporality else {
                        mapped.errors.push(EventError::new(
                            index,
                            clean(&metric.name),
                            "aggregationTemporality must be DELTA or CUMULATIVE",
                        ));
                        continue;
                    };
                    // A point flagged as holding no recorded value marks a
                    // stream that stopped; there is nothing to store.
                    if point.flags & DataPointFlags::NoRecordedValueMask as u32 != 0 {
                        continue;
                    }
                    match map_point(
                        &metric.name,
                        &metric.unit,
                        service,
                        temporality,
                        point,
                        bounds,
                    ) {
                        Ok(p) => mapped.points.push(p),
                        Err(reason) => {
                            mapped
                                .errors
                                .push(EventError::new(index, clean(&metric.name), reason))
                        }
                    }
                }
            }
        }
    }
    mapped
}

fn nanos(n: u64) -> Option<DateTime<Utc>> {
    i64::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .map(DateTime::<Utc>::from_timestamp_nanos)
}

/// A point's attributes other than the model, as JSON scalars, sorted by
/// key (so the point's identity does not depend on their order).
fn attributes(attrs: &[KeyValue]) -> serde_json::Map<String, serde_json::Value> {
    let mut sorted: Vec<&KeyValue> = attrs
        .iter()
        .filter(|kv| {
            !matches!(
                kv.key.as_str(),
                "gen_ai.response.model" | "gen_ai.request.model"
            )
        })
        .collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out = serde_json::Map::new();
    for kv in sorted {
        if out.len() >= MAX_ATTRIBUTES {
            break;
        }
        let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => serde_json::Value::from(clean(s)),
            Some(any_value::Value::BoolValue(b)) => serde_json::Value::from(*b),
            Some(any_value::Value::IntValue(i)) => serde_json::Value::from(*i),
            Some(any_value::Value::DoubleValue(d)) if d.is_finite() => serde_json::Value::from(*d),
            _ => continue,
        };
        out.insert(clean(&kv.key), value);
    }
    out
}

/// One histogram data point as stored, or why it cannot be.
pub(crate) fn map_point(
    name: &str,
    unit: &str,
    service: &str,
    temporality: Temporality,
    point: &HistogramDataPoint,
    bounds: &TimeBounds,
) -> Result<HistogramPoint, String> {
    let time = nanos(point.time_unix_nano).ok_or("timeUnixNano is required")?;
    // Postgres keeps microseconds; truncating keeps a retry's identity equal.
    let time =
        time - chrono::Duration::nanoseconds(i64::from(time.timestamp_subsec_nanos() % 1000));
    bounds
        .check(time)
        .map_err(|r| format!("timeUnixNano {r}"))?;
    let start_time = match point.start_time_unix_nano {
        0 => None,
        n => {
            let start = nanos(n).ok_or("startTimeUnixNano is out of range")?;
            let start = start
                - chrono::Duration::nanoseconds(i64::from(start.timestamp_subsec_nanos() % 1000));
            if start > time {
                return Err("startTimeUnixNano is after timeUnixNano".into());
            }
            Some(start)
        }
    };
    let explicit = &point.explicit_bounds;
    if explicit.len() >= MAX_BUCKETS {
        return Err(format!("has over {MAX_BUCKETS} buckets"));
    }
    if explicit.iter().any(|b| !b.is_finite()) || explicit.windows(2).any(|w| w[0] >= w[1]) {
        return Err("explicitBounds must be finite and strictly increasing".into());
    }
    let count = i64::try_from(point.count).map_err(|_| "count is too large".to_owned())?;
    let bucket_counts = if point.bucket_counts.is_empty() {
        Vec::new()
    } else {
        if point.bucket_counts.len() != explicit.len() + 1 {
            return Err(format!(
                "bucketCounts must have one more entry than explicitBounds ({}), got {}",
                explicit.len() + 1,
                point.bucket_counts.len()
            ));
        }
        let counts: Vec<i64> = point
            .bucket_counts
            .iter()
            .map(|&c| i64::try_from(c))
            .collect::<Result<_, _>>()
            .map_err(|_| "bucketCounts holds a count too large".to_owned())?;
        let total = point
            .bucket_counts
            .iter()
            .try_fold(0u64, |acc, &c| acc.checked_add(c));
        if total != Some(point.count) {
            return Err(format!(
                "bucketCounts add up to {} but count is {}",
                total.map_or_else(|| "more than 2^64".to_owned(), |t| t.to_string()),
                point.count
            ));
        }
        counts
    };
    for (field, value) in [("sum", point.sum), ("min", point.min), ("max", point.max)] {
        if value.is_some_and(|v| !v.is_finite()) {
            return Err(format!("{field} must be a finite number"));
        }
    }
    let model = string(
        &point.attributes,
        &["gen_ai.response.model", "gen_ai.request.model"],
    )
    .map(clean);
    let attributes = attributes(&point.attributes);
    let service = clean(service);
    let name = clean(name);
    // The point's identity: its series and interval.
    let id = derived_id(&[
        "histogram",
        &name,
        &service,
        model.as_deref().unwrap_or(""),
        &serde_json::Value::Object(attributes.clone()).to_string(),
        &start_time.map(|t| t.to_rfc3339()).unwrap_or_default(),
        &time.to_rfc3339(),
    ])
    .uuid();
    Ok(HistogramPoint {
        id,
        metric: name,
        unit: clean(unit),
        service,
        model,
        attributes: serde_json::Value::Object(attributes),
        temporality,
        start_time,
        time,
        bounds: explicit.clone(),
        bucket_counts,
        count,
        sum: point.sum,
        min: point.min,
        max: point.max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::AnyValue;
    use opentelemetry_proto::tonic::metrics::v1::{
        Gauge, Histogram, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;

    fn kv(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.into())),
            }),
            ..Default::default()
        }
    }

    fn now_nanos() -> u64 {
        u64::try_from(Utc::now().timestamp_nanos_opt().unwrap()).unwrap()
    }

    fn bounds() -> TimeBounds {
        TimeBounds::at(Utc::now(), 30, chrono::Duration::minutes(5))
    }

    fn point(counts: Vec<u64>) -> HistogramDataPoint {
        HistogramDataPoint {
            attributes: vec![
                kv("gen_ai.request.model", "llama-3"),
                kv("gen_ai.operation.name", "chat"),
            ],
            start_time_unix_nano: now_nanos() - 60_000_000_000,
            time_unix_nano: now_nanos(),
            count: counts.iter().sum(),
            sum: Some(1.5),
            bucket_counts: counts,
            explicit_bounds: vec![0.1, 0.5, 1.0],
            ..HistogramDataPoint::default()
        }
    }

    fn export(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", "chat")],
                    ..Resource::default()
                }),
                scope_metrics: vec![ScopeMetrics {
                    metrics,
                    ..ScopeMetrics::default()
                }],
                ..ResourceMetrics::default()
            }],
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
            ..Metric::default()
        }
    }

    #[test]
    fn gen_ai_histograms_are_kept_and_the_rest_refused_by_position() {
        let gauge = Metric {
            name: "gen_ai.server.queue_depth".into(),
            data: Some(metric::Data::Gauge(Gauge {
                data_points: vec![NumberDataPoint::default()],
            })),
            ..Metric::default()
        };
        let mapped = map_export(
            &export(vec![
                histogram(
                    "gen_ai.server.time_to_first_token",
                    vec![point(vec![1, 2, 3, 4]), point(vec![1, 2, 3])],
                ),
                histogram(
                    "http.server.request.duration",
                    vec![point(vec![0, 0, 0, 1])],
                ),
                gauge,
            ]),
            &bounds(),
        );
        assert_eq!(mapped.data_points, 4);
        assert_eq!(mapped.points.len(), 1);
        let p = &mapped.points[0];
        assert_eq!(
            (p.service.as_str(), p.model.as_deref(), p.count),
            ("chat", Some("llama-3"), 10)
        );
        assert_eq!(
            p.attributes,
            serde_json::json!({"gen_ai.operation.name": "chat"})
        );
        let refused: Vec<(usize, &str)> = mapped
            .errors
            .iter()
            .map(|e| (e.index, e.field.as_str()))
            .collect();
        assert_eq!(
            refused,
            [
                (1, "gen_ai.server.time_to_first_token"),
                (2, "http.server.request.duration"),
                (3, "gen_ai.server.queue_depth")
            ]
        );
        assert!(mapped.errors[0].reason.contains("one more entry"));
    }

    #[test]
    fn a_point_is_checked_before_it_is_kept() {
        let refuse = |p: HistogramDataPoint| {
            map_point("gen_ai.x", "s", "chat", Temporality::Delta, &p, &bounds()).unwrap_err()
        };
        let mut p = point(vec![1, 1, 1, 1]);
        p.count = 5;
        assert!(refuse(p).contains("add up to 4"));
        let mut p = point(vec![1, 1, 1, 1]);
        p.explicit_bounds = vec![0.5, 0.5, 1.0];
        assert!(refuse(p).contains("strictly increasing"));
        let mut p = point(vec![1, 1, 1, 1]);
        p.time_unix_nano = 0;
        assert!(refuse(p).contains("timeUnixNano"));
        let mut p = point(vec![1, 1, 1, 1]);
        p.sum = Some(f64::NAN);
        assert!(refuse(p).contains("sum"));
        // The same point twice has one identity.
        let p = point(vec![1, 1, 1, 1]);
        let a = map_point("gen_ai.x", "s", "chat", Temporality::Delta, &p, &bounds()).unwrap();
        let b = map_point("gen_ai.x", "s", "chat", Temporality::Delta, &p, &bounds()).unwrap();
        assert_eq!(a.id, b.id);
    }
}
