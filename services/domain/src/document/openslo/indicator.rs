//! Reading OpenSLO SLIs (inline or referenced by name) and their `slaproof` metric sources.

use std::collections::HashMap;

use super::{METRIC_SOURCE_TYPE, read_metadata};
use crate::document::error::Problems;
use crate::document::native::read_filter;
use crate::document::tree::{Node, Obj, join};
use crate::filter::EventFilter;
use crate::objective::{GaugeName, MeasuredField, RatioCount, RatioSli};

/// What an SLI measures, before an objective gives it a threshold.
#[derive(Debug, Clone)]
pub(super) enum Indicator {
    Ratio(RatioSli),
    Threshold {
        field: MeasuredField,
        filter: Option<EventFilter>,
    },
    Gauge(GaugeName),
}

/// The SLO-level indicator, if the SLO has one: `Some(None)` when it has one that is invalid.
pub(super) fn resolve_indicator(
    spec: &Obj<'_>,
    slis: &HashMap<&str, Node<'_>>,
    p: &mut Problems,
) -> Option<Option<Indicator>> {
    match (spec.get("indicator"), spec.get("indicatorRef")) {
        (Some(_), Some(_)) => {
            p.push(
                &spec.path,
                "must give either `indicator` or `indicatorRef`, not both",
            );
            Some(None)
        }
        (Some(inline), None) => Some(read_inline_indicator(&inline, p)),
        (None, Some(r)) => Some(read_indicator_ref(&r, slis, p)),
        (None, None) => None,
    }
}

pub(super) fn read_inline_indicator(node: &Node<'_>, p: &mut Problems) -> Option<Indicator> {
    let obj = node.object(&["apiVersion", "kind", "metadata", "spec"], false, p)?;
    if let Some(m) = obj
        .get("metadata")
        .and_then(|m| m.object(&["name", "displayName", "labels", "annotations"], false, p))
    {
        read_metadata(&m, p);
    }
    read_sli_spec(&obj.required("spec", p)?, p)
}

pub(super) fn read_indicator_ref(
    node: &Node<'_>,
    slis: &HashMap<&str, Node<'_>>,
    p: &mut Problems,
) -> Option<Indicator> {
    let name = node.str(p)?;
    match slis.get(name) {
        Some(spec) => read_sli_spec(spec, p),
        None => {
            p.push(
                &node.path,
                format!("refers to no SLI: no document of kind SLI is named {name:?}"),
            );
            None
        }
    }
}

fn read_sli_spec(node: &Node<'_>, p: &mut Problems) -> Option<Indicator> {
    let spec = node.object(&["description", "thresholdMetric", "ratioMetric"], false, p)?;
    if let Some(d) = spec.get("description") {
        d.str(p);
    }
    match (spec.get("ratioMetric"), spec.get("thresholdMetric")) {
        (Some(r), None) => read_ratio_metric(&r, p).map(Indicator::Ratio),
        (None, Some(t)) => read_threshold_metric(&t, p),
        (Some(_), Some(_)) => {
            p.push(
                &spec.path,
                "must give either `ratioMetric` or `thresholdMetric`, not both",
            );
            None
        }
        (None, None) => {
            p.push(&spec.path, "must give `ratioMetric` or `thresholdMetric`");
            None
        }
    }
}

/// The `spec` of a `{metricSource: {type: slaproof, spec: …}}`, keys checked against `allowed`.
fn metric_source_spec<'a>(
    node: &Node<'a>,
    allowed: &[&str],
    p: &mut Problems,
) -> Option<Option<Obj<'a>>> {
    let wrapper = node.object(&["metricSource"], false, p)?;
    let source = wrapper.required("metricSource", p)?.object(
        &["metricSourceRef", "type", "spec"],
        false,
        p,
    )?;
    let use_this = format!(
        "slaproof measures the provider's own events: use `type: {METRIC_SOURCE_TYPE}` with `spec: {{{}}}`",
        allowed
            .iter()
            .map(|k| format!("{k}: ..."))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(r) = source.get("metricSourceRef") {
        p.push(
            &r.path,
            format!("refers to a DataSource, which slaproof does not read; {use_this}"),
        );
        return None;
    }
    match source.req_str("type", p) {
        Some(t) if t.eq_ignore_ascii_case(METRIC_SOURCE_TYPE) => {}
        Some(t) => {
            p.push(
                &source.path_of("type"),
                format!("metric source {t:?} is not supported; {use_this}"),
            );
            return None;
        }
        None => return None,
    }
    match source.get("spec") {
        Some(spec) => spec.object(allowed, false, p).map(Some),
        None => Some(None),
    }
}

fn read_ratio_metric(node: &Node<'_>, p: &mut Problems) -> Option<RatioSli> {
    let r = node.object(
        &["counter", "good", "bad", "total", "rawType", "raw"],
        false,
        p,
    )?;
    if let Some(c) = r.get("counter") {
        // Our events are counted one by one; the flag changes nothing.
        c.bool(p);
    }
    for key in ["raw", "rawType"] {
        if let Some(n) = r.get(key) {
            p.push(&n.path, "precomputed ratios are not supported: slaproof counts events itself; use `good` or `bad` with `total`");
        }
    }
    let filter_of =
        |node: &Node<'_>, required: bool, p: &mut Problems| -> Option<Option<EventFilter>> {
            let spec = metric_source_spec(node, &["filter"], p)?;
            match spec.as_ref().and_then(|s| s.get("filter")) {
                Some(f) => read_filter(&f, p).map(Some),
                None if required => {
                    let path = spec.map_or_else(
                        || join(&node.path, "metricSource.spec.filter"),
                        |s| s.path_of("filter"),
                    );
                    p.push(
                        &path,
                        "is required: the filter that selects these events, e.g. \"status < 500\"",
                    );
                    None
                }
                None => Some(None),
            }
        };
    let count = match (r.get("good"), r.get("bad")) {
        (Some(g), None) => filter_of(&g, true, p).flatten().map(RatioCount::Good),
        (None, Some(b)) => filter_of(&b, true, p).flatten().map(RatioCount::Bad),
        (Some(_), Some(_)) => {
            p.push(&r.path, "must give either `good` or `bad`, not both");
            None
        }
        (None, None) => {
            if !r.has("raw") {
                p.push(&r.path, "must give `good` or `bad` (with `total`)");
            }
            None
        }
    };
    let total = match r.get("total") {
        Some(t) => filter_of(&t, false, p),
        None => Some(None),
    };
    Some(RatioSli {
        count: count?,
        total: total?,
    })
}

fn read_threshold_metric(node: &Node<'_>, p: &mut Problems) -> Option<Indicator> {
    let spec = metric_source_spec(node, &["field", "filter", "gauge"], p)?;
    let Some(spec) = spec else {
        p.push(
            &join(&node.path, "metricSource.spec"),
            "is required: `{field: latency_ms, filter: ...}` or `{gauge: quality_score}`",
        );
        return None;
    };
    match (spec.get("field"), spec.get("gauge")) {
        (Some(field), None) => {
            let f = field
                .str(p)
                .and_then(|s| p.check(&field.path, MeasuredField::parse(s)));
            let filter = match spec.get("filter") {
                Some(n) => Some(read_filter(&n, p)?),
                None => None,
            };
            Some(Indicator::Threshold { field: f?, filter })
        }
        (None, Some(gauge)) => {
            if let Some(f) = spec.get("filter") {
                p.push(
                    &f.path,
                    "applies only to event fields; gauge values are judged as delivered",
                );
            }
            let g = gauge
                .str(p)
                .and_then(|s| p.check(&gauge.path, GaugeName::parse(s)))?;
            Some(Indicator::Gauge(g))
        }
        (Some(_), Some(_)) => {
            p.push(&spec.path, "must give either `field` or `gauge`, not both");
            None
        }
        (None, None) => {
            p.push(&spec.path, "must give `field` (latency_ms, ttft_ms, tpot_ms or attr.<name>) or `gauge` (a metric delivered by callback)");
            None
        }
    }
}
