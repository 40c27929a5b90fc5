//! OpenSLO v1 `SLO` and `SLI` documents: import into an SLA and export from one.
//!
//! How OpenSLO maps onto an SLA:
//!
//! - Every `SLO` document in the input becomes objectives of **one** SLA;
//!   they must all name the same `spec.service` and the same `timeWindow`
//!   (one SLA is measured over one window). Each objective of an SLO
//!   becomes one objective, named by its `name` if it has one (an
//!   extension), else by the SLO's `metadata.name` when the SLO has a single
//!   objective, else `<slo name>-<n>` counting from 1.
//! - The SLA's own name, display name, description and customer come from
//!   the annotations `slaproof.dev/sla`, `slaproof.dev/sla-display-name`,
//!   `slaproof.dev/sla-description` and `slaproof.dev/customer` on the SLOs;
//!   without `slaproof.dev/sla` the SLA is named after the service. Other
//!   labels and annotations are ignored.
//! - SLIs are inline (`indicator`, on the SLO or on an objective) or
//!   referenced by name (`indicatorRef`) to `SLI` documents in the input.
//! - We measure our own events, so a metric source must be
//!   `type: slaproof` with `spec: {filter: "..."}` for ratio metrics,
//!   `spec: {field: latency_ms, filter: "..."}` for threshold metrics on an
//!   event field (threshold `value` in the field's unit: milliseconds for
//!   latencies), or `spec: {gauge: quality_score}` for gauges. Anything else
//!   is refused with a message naming the path.
//! - `Service` documents are accepted and ignored; `alertPolicies` are
//!   ignored (slaproof raises burn-rate alerts itself); other kinds are refused.
//!
//! Export writes, per objective, an `SLI` named `<objective>-sli` and an
//! `SLO` named after the objective referring to it, carrying the SLA in
//! annotations, so that importing the export gives an equal SLA.

use std::collections::{BTreeMap, HashMap};

use chrono::{NaiveDateTime, Timelike};
use serde::Serialize;
use serde_json::Value;

use super::error::{DefinitionError, Problems};
use super::native::{
    float, number, parse_time_zone, read_filter, read_finite, read_threshold_value,
};
use super::tree::{Node, Obj, check_text, join};
use crate::filter::EventFilter;
use crate::objective::{
    GaugeName, GaugeSli, MeasuredField, Objective, ObjectiveName, RatioCount, RatioSli, Sli,
    SliceBudgeting, SliceIndicator, ThresholdOp, ThresholdSli, TimeSlicesSli,
};
use crate::quantity::{CompositeWeight, ShareNotation, SliceTarget, Span, SpanUnit, TargetPpm};
use crate::sla::{self, SlaDefinition, SlaName};
use crate::window::{CalendarUnit, TimeWindow};

pub(crate) const API_VERSION: &str = "openslo/v1";
const METRIC_SOURCE_TYPE: &str = "slaproof";
const ANNOTATION_SLA: &str = "slaproof.dev/sla";
const ANNOTATION_DISPLAY_NAME: &str = "slaproof.dev/sla-display-name";
const ANNOTATION_DESCRIPTION: &str = "slaproof.dev/sla-description";
const ANNOTATION_CUSTOMER: &str = "slaproof.dev/customer";
/// A fixed start for exported calendar windows: a Monday that is also the
/// first day of a month, quarter and year.
const CALENDAR_START: &str = "2024-01-01 00:00:00";

/// What an SLI measures, before an objective gives it a threshold.
#[derive(Debug, Clone)]
enum Indicator {
    Ratio(RatioSli),
    Threshold {
        field: MeasuredField,
        filter: Option<EventFilter>,
    },
    Gauge(GaugeName),
}

struct Metadata<'a> {
    name: Option<&'a str>,
    display_name: Option<String>,
    annotations: Vec<(String, &'a str, String)>,
}

pub(crate) fn read(docs: &[Value]) -> Result<SlaDefinition, DefinitionError> {
    let mut p = Problems::default();
    let sla = read_all(docs, &mut p);
    p.finish(sla)
}

fn read_metadata<'a>(meta: &Obj<'a>, p: &mut Problems) -> Metadata<'a> {
    let name = meta.req_str("name", p);
    if let Some(n) = name
        && let Err(e) = crate::objective::check_slug(n)
    {
        p.push(&meta.path_of("name"), e.0);
    }
    let display_name = meta.opt_text("displayName", sla::MAX_DISPLAY_NAME, p);
    let mut annotations = Vec::new();
    if let Some(node) = meta.get("annotations")
        && let Some(map) = node.object(&[], true, p)
    {
        for (key, value) in map.map() {
            if key.starts_with("slaproof.dev/") {
                let path = join(&node.path, key);
                match value {
                    Value::String(s) => annotations.push((key.clone(), s.as_str(), path)),
                    _ => p.push(&path, "must be text"),
                }
            }
        }
    }
    Metadata {
        name,
        display_name,
        annotations,
    }
}

fn read_all(docs: &[Value], p: &mut Problems) -> Option<SlaDefinition> {
    let prefix = |i: usize| {
        if docs.len() == 1 {
            String::new()
        } else {
            format!("documents[{i}]")
        }
    };
    // First pass: index SLIs by name and keep SLOs in order.
    let mut slis: HashMap<&str, Node<'_>> = HashMap::new();
    let mut slos = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let root = Node::root(doc, prefix(i));
        let Some(d) = root.object(&["apiVersion", "kind", "metadata", "spec"], false, p) else {
            continue;
        };
        let kind = d.req_str("kind", p);
        let meta = d
            .required("metadata", p)
            .and_then(|m| m.object(&["name", "displayName", "labels", "annotations"], false, p));
        match kind {
            Some("SLO") => {
                if let (Some(meta), Some(spec)) = (meta, d.required("spec", p)) {
                    slos.push((meta, spec));
                }
            }
            Some("SLI") => {
                let Some(meta) = meta else { continue };
                let Some(name) = read_metadata(&meta, p).name else { continue };
                let Some(spec) = d.required("spec", p) else { continue };
                if slis.insert(name, spec).is_some() {
                    p.push(&meta.path_of("name"), format!("must be unique: another SLI is named {name:?}"));
                }
            }
            Some("Service") => {}
            Some(other) => p.push(
                &d.path_of("kind"),
                format!("must be SLO or SLI (or Service, which is ignored); {other} documents are not imported"),
            ),
            None => {}
        }
    }
    if slos.is_empty() {
        p.push("", "must contain at least one OpenSLO document of kind SLO");
        return None;
    }

    let mut objectives: Vec<Option<Objective>> = Vec::new();
    let mut objective_paths: Vec<String> = Vec::new();
    let mut first: Option<(String, String, TimeWindow)> = None;
    let mut annotations: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
    let mut service_path = String::new();
    for (meta_obj, spec_node) in &slos {
        let meta = read_metadata(meta_obj, p);
        for (key, value, path) in &meta.annotations {
            let known = [
                ANNOTATION_SLA,
                ANNOTATION_DISPLAY_NAME,
                ANNOTATION_DESCRIPTION,
                ANNOTATION_CUSTOMER,
            ];
            let Some(known) = known.iter().find(|k| *k == key) else {
                continue;
            };
            match annotations.get(known) {
                Some((seen, _)) if seen != value => {
                    p.push(
                        path,
                        format!(
                            "must be the same on every SLO of the SLA: another SLO says {seen:?}"
                        ),
                    );
                }
                Some(_) => {}
                None => {
                    annotations.insert(known, ((*value).to_owned(), path.clone()));
                }
            }
        }
        let Some(spec) = spec_node.object(
            &[
                "description",
                "service",
                "indicator",
                "indicatorRef",
                "timeWindow",
                "budgetingMethod",
                "objectives",
                "alertPolicies",
            ],
            false,
            p,
        ) else {
            continue;
        };
        let description = spec.opt_text("description", sla::MAX_DESCRIPTION, p);
        let service = spec
            .req_str("service", p)
            .and_then(|s| check_text(&spec.path_of("service"), s, sla::MAX_SERVICE, p));
        let window = spec
            .required("timeWindow", p)
            .and_then(|w| read_time_window(&w, p));
        let budgeting = match spec.req_str("budgetingMethod", p) {
            Some(m @ ("Occurrences" | "Timeslices" | "RatioTimeslices")) => Some(m),
            Some(other) => {
                p.push(
                    &spec.path_of("budgetingMethod"),
                    format!("must be Occurrences, Timeslices or RatioTimeslices, got {other:?}"),
                );
                None
            }
            None => None,
        };
        if let (Some(service), Some(window)) = (&service, window) {
            match &first {
                None => {
                    first = Some((service.clone(), spec.path_of("service"), window));
                    service_path = spec.path_of("service");
                }
                Some((s, s_path, w)) => {
                    if s != service {
                        p.push(&spec.path_of("service"), format!("must be the same on every SLO ({s:?} at {s_path}): one SLA measures one service"));
                    }
                    if *w != window {
                        p.push(&spec.path_of("timeWindow"), format!("must be the same on every SLO ({w}): one SLA is measured over one window"));
                    }
                }
            }
        }
        let slo_indicator = resolve_indicator(&spec, &slis, p);
        let Some(items) = spec.required("objectives", p).and_then(|o| o.list(p)) else {
            continue;
        };
        if items.is_empty() {
            p.push(
                &spec.path_of("objectives"),
                "must hold at least one objective",
            );
        }
        let single = items.len() == 1;
        for (i, item) in items.iter().enumerate() {
            let objective = read_objective(
                item,
                i,
                single,
                &meta,
                description.clone(),
                &slo_indicator,
                budgeting,
                &slis,
                p,
            );
            objectives.push(objective);
            objective_paths.push(item.path.clone());
        }
    }

    let objectives: Option<Vec<Objective>> = objectives.into_iter().collect();
    if let Some(objectives) = &objectives {
        for (index, field, rule) in sla::cross_check(objectives) {
            let path = match index {
                Some(i) => objective_paths
                    .get(i)
                    .map_or_else(String::new, |base| join(base, field)),
                None => String::new(),
            };
            p.push(&path, rule);
        }
    }

    let (service, _, window) = first?;
    let annotation = |key: &str| annotations.get(key).cloned();
    let name = match annotation(ANNOTATION_SLA) {
        Some((n, path)) => p.check(&path, SlaName::parse(&n)),
        None => match SlaName::parse(&service) {
            Ok(n) => Some(n),
            Err(e) => {
                p.push(&service_path, format!("{e} (the SLA is named after the service unless the SLO carries the annotation {ANNOTATION_SLA})"));
                None
            }
        },
    };
    let text = |key: &str, max: usize, p: &mut Problems| {
        annotation(key).and_then(|(v, path)| check_text(&path, &v, max, p))
    };
    let display_name = text(ANNOTATION_DISPLAY_NAME, sla::MAX_DISPLAY_NAME, p);
    let description = text(ANNOTATION_DESCRIPTION, sla::MAX_DESCRIPTION, p);
    let customer = annotation(ANNOTATION_CUSTOMER)
        .and_then(|(v, path)| p.check(&path, sla::check_customer_ref(&v)).map(|()| v));
    Some(SlaDefinition {
        name: name?,
        display_name,
        description,
        service,
        customer,
        window,
        objectives: objectives?,
    })
}

/// The SLO-level indicator, if the SLO has one: `Some(None)` when it has one that is invalid.
fn resolve_indicator(
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

fn read_inline_indicator(node: &Node<'_>, p: &mut Problems) -> Option<Indicator> {
    let obj = node.object(&["apiVersion", "kind", "metadata", "spec"], false, p)?;
    if let Some(m) = obj
        .get("metadata")
        .and_then(|m| m.object(&["name", "displayName", "labels", "annotations"], false, p))
    {
        read_metadata(&m, p);
    }
    read_sli_spec(&obj.required("spec", p)?, p)
}

fn read_indicator_ref(
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

fn read_time_window(node: &Node<'_>, p: &mut Problems) -> Option<TimeWindow> {
    let items = node.list(p)?;
    let [item] = items.as_slice() else {
        p.push(
            &node.path,
            format!("must hold exactly one time window, got {}", items.len()),
        );
        return None;
    };
    let w = item.object(&["duration", "isRolling", "calendar"], false, p)?;
    let rolling = w.get("isRolling").and_then(|n| n.bool(p));
    let duration = w.req_str("duration", p);
    let duration_path = w.path_of("duration");
    match (rolling, w.get("calendar")) {
        (Some(true), Some(cal)) => {
            p.push(
                &cal.path,
                "applies only to calendar windows: remove it or set `isRolling: false`",
            );
            None
        }
        (Some(true), None) => {
            let span = p.check(&duration_path, Span::parse(duration?))?;
            p.check(&duration_path, TimeWindow::rolling(span))
        }
        (_, Some(cal)) => {
            let unit = match duration? {
                "1w" | "7d" => Some(CalendarUnit::Week),
                "1M" => Some(CalendarUnit::Month),
                "1Q" => Some(CalendarUnit::Quarter),
                "1Y" => Some(CalendarUnit::Year),
                other => {
                    p.push(&duration_path, format!("calendar windows must be one week, month, quarter or year (1w, 1M, 1Q, 1Y), got {other:?}"));
                    None
                }
            };
            let cal = cal.object(&["startTime", "timeZone"], false, p)?;
            let tz = cal
                .req_str("timeZone", p)
                .and_then(|z| parse_time_zone(&cal.path_of("timeZone"), z, p));
            if let (Some(unit), Some(start)) = (unit, cal.get("startTime")) {
                check_start_time(unit, &start, p);
            }
            Some(TimeWindow::Calendar {
                unit: unit?,
                time_zone: tz?,
            })
        }
        (_, None) => {
            p.push(
                &w.path,
                "must be rolling (`isRolling: true`) or give `calendar: {timeZone: ...}`",
            );
            None
        }
    }
}

/// Calendar windows are aligned to their unit; a start time elsewhere would
/// shift every period, which we do not support.
fn check_start_time(unit: CalendarUnit, node: &Node<'_>, p: &mut Problems) {
    let Some(text) = node.str(p) else { return };
    let parsed = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S"));
    match parsed {
        Err(_) => p.push(&node.path, format!("must be a local date and time like \"2024-01-01 00:00:00\", got {text:?}")),
        Ok(t) if t.time().num_seconds_from_midnight() != 0 || !unit.is_first_day(t.date()) => p.push(
            &node.path,
            format!("must be the start of a {unit} at 00:00:00 (slaproof aligns calendar windows to whole {unit}s), got {text:?}"),
        ),
        Ok(_) => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn read_objective(
    node: &Node<'_>,
    index: usize,
    single: bool,
    slo: &Metadata<'_>,
    description: Option<String>,
    slo_indicator: &Option<Option<Indicator>>,
    budgeting: Option<&str>,
    slis: &HashMap<&str, Node<'_>>,
    p: &mut Problems,
) -> Option<Objective> {
    let o = node.object(
        &[
            "name",
            "displayName",
            "op",
            "value",
            "target",
            "targetPercent",
            "timeSliceTarget",
            "timeSliceWindow",
            "indicator",
            "indicatorRef",
            "compositeWeight",
        ],
        false,
        p,
    )?;
    let name = match o.get("name") {
        Some(n) => n
            .str(p)
            .and_then(|s| p.check(&n.path, ObjectiveName::parse(s))),
        None => {
            let slo_name = slo.name?;
            let derived = if single {
                slo_name.to_owned()
            } else {
                format!("{slo_name}-{}", index + 1)
            };
            p.check(
                &o.path,
                ObjectiveName::parse(&derived).map_err(|e| {
                    format!("objective name {derived:?} derived from the SLO's name: {e}")
                }),
            )
        }
    };
    let display_name = o
        .opt_text("displayName", sla::MAX_DISPLAY_NAME, p)
        .or_else(|| {
            if single {
                slo.display_name.clone()
            } else {
                None
            }
        });
    let target = match (o.get("target"), o.get("targetPercent")) {
        (Some(t), None) => t
            .number_text(p)
            .and_then(|s| p.check(&t.path, TargetPpm::parse_in(&s, ShareNotation::Fraction))),
        (None, Some(t)) => t
            .number_text(p)
            .and_then(|s| p.check(&t.path, TargetPpm::parse_in(&s, ShareNotation::Percent))),
        (Some(_), Some(_)) => {
            p.push(
                &o.path,
                "must give either `target` or `targetPercent`, not both",
            );
            None
        }
        (None, None) => {
            p.push(&o.path_of("target"), "is required (or `targetPercent`)");
            None
        }
    };
    let weight = match o.get("compositeWeight") {
        Some(w) => Some(
            w.number_text(p)
                .and_then(|s| p.check(&w.path, CompositeWeight::parse(&s)))?,
        ),
        None => None,
    };
    let indicator = match (o.get("indicator"), o.get("indicatorRef"), slo_indicator) {
        (Some(_), Some(_), _) => {
            p.push(
                &o.path,
                "must give either `indicator` or `indicatorRef`, not both",
            );
            None
        }
        (Some(inline), None, _) => read_inline_indicator(&inline, p),
        (None, Some(r), _) => read_indicator_ref(&r, slis, p),
        (None, None, Some(from_slo)) => from_slo.clone(),
        (None, None, None) => {
            p.push(
                &o.path,
                "has no SLI: give `indicator` or `indicatorRef` on the SLO or on the objective",
            );
            None
        }
    };
    let sli = build_sli(&o, indicator?, budgeting?, p);
    Some(Objective {
        name: name?,
        display_name,
        description,
        target: target?,
        weight,
        sli: sli?,
    })
}

fn read_op(o: &Obj<'_>, p: &mut Problems) -> Option<ThresholdOp> {
    let n = o.required("op", p)?;
    let s = n.str(p)?;
    p.check(&n.path, ThresholdOp::parse(s))
}

fn build_sli(o: &Obj<'_>, indicator: Indicator, budgeting: &str, p: &mut Problems) -> Option<Sli> {
    let threshold = |field: MeasuredField,
                     filter: Option<EventFilter>,
                     p: &mut Problems|
     -> Option<ThresholdSli> {
        let op = read_op(o, p);
        let value = o
            .required("value", p)
            .and_then(|v| read_threshold_value(&field, &v, true, p));
        Some(ThresholdSli {
            field,
            op: op?,
            value: value?,
            filter,
        })
    };
    if let Indicator::Ratio(_) = indicator
        && let Some(v) = o.get("value")
    {
        p.push(
            &v.path,
            "applies only to thresholdMetric SLIs; a ratio's target is `target` or `targetPercent`",
        );
    }
    if budgeting == "Occurrences" {
        for key in ["timeSliceTarget", "timeSliceWindow"] {
            if let Some(n) = o.get(key) {
                p.push(
                    &n.path,
                    "applies only with budgetingMethod Timeslices or RatioTimeslices",
                );
            }
        }
        return match indicator {
            Indicator::Ratio(r) => Some(Sli::Ratio(r)),
            Indicator::Threshold { field, filter } => {
                threshold(field, filter, p).map(Sli::Threshold)
            }
            Indicator::Gauge(metric) => {
                let op = read_op(o, p);
                let value = o.required("value", p).and_then(|v| read_finite(&v, p));
                Some(Sli::Gauge(GaugeSli {
                    metric,
                    op: op?,
                    threshold: value?,
                }))
            }
        };
    }
    let slice_length = o.required("timeSliceWindow", p).and_then(|n| {
        let span = match n.value {
            // A bare number is minutes, as OpenSLO says.
            Value::Number(_) => {
                let text = n.number(p)?;
                let minutes = text.parse::<u32>().ok();
                p.check(
                    &n.path,
                    minutes
                        .ok_or_else(|| format!("must be a whole number of minutes, got {text}"))
                        .and_then(|m| Span::new(m, SpanUnit::Minute).map_err(|e| e.0)),
                )?
            }
            _ => {
                let text = n.str(p)?;
                p.check(&n.path, Span::parse(text))?
            }
        };
        p.check(&n.path, TimeSlicesSli::check_slice_length(span))
    });
    let slice_budgeting = if budgeting == "Timeslices" {
        o.required("timeSliceTarget", p)
            .and_then(|n| {
                n.number_text(p).and_then(|s| {
                    p.check(&n.path, SliceTarget::parse_in(&s, ShareNotation::Fraction))
                })
            })
            .map(|slice_target| SliceBudgeting::Timeslices { slice_target })
    } else {
        if let Some(n) = o.get("timeSliceTarget") {
            p.push(&n.path, "applies only with budgetingMethod Timeslices; RatioTimeslices averages the slices' ratios");
        }
        Some(SliceBudgeting::RatioTimeslices)
    };
    let slice_indicator = match indicator {
        Indicator::Ratio(r) => Some(SliceIndicator::Ratio(r)),
        Indicator::Threshold { field, filter } => {
            threshold(field, filter, p).map(SliceIndicator::Threshold)
        }
        Indicator::Gauge(_) => {
            p.push(&o.path, "gauges are judged per delivered value, not in time slices: use budgetingMethod Occurrences");
            None
        }
    };
    Some(Sli::TimeSlices(TimeSlicesSli {
        indicator: slice_indicator?,
        slice_length: slice_length?,
        budgeting: slice_budgeting?,
    }))
}

// ---- writing ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Doc<S> {
    api_version: &'static str,
    kind: &'static str,
    metadata: MetadataDoc,
    spec: S,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetadataDoc {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SliSpecDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    threshold_metric: Option<MetricDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio_metric: Option<RatioMetricDoc>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetricDoc {
    metric_source: MetricSourceDoc,
}

#[derive(Serialize)]
struct MetricSourceDoc {
    #[serde(rename = "type")]
    kind: &'static str,
    spec: BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
struct RatioMetricDoc {
    counter: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    good: Option<MetricDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bad: Option<MetricDoc>,
    total: MetricDoc,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SloSpecDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    service: String,
    indicator_ref: String,
    time_window: Vec<TimeWindowDoc>,
    budgeting_method: &'static str,
    objectives: Vec<ObjectiveDoc>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TimeWindowDoc {
    duration: String,
    is_rolling: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    calendar: Option<CalendarDoc>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CalendarDoc {
    start_time: &'static str,
    time_zone: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectiveDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    op: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    target: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_slice_target: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_slice_window: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    composite_weight: Option<Value>,
}

/// One exported document.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum OpensloDoc {
    Sli(Doc<SliSpecDoc>),
    Slo(Doc<SloSpecDoc>),
}

fn source(spec: BTreeMap<&'static str, String>) -> MetricDoc {
    MetricDoc {
        metric_source: MetricSourceDoc {
            kind: METRIC_SOURCE_TYPE,
            spec,
        },
    }
}

fn filter_spec(filter: Option<&EventFilter>) -> BTreeMap<&'static str, String> {
    filter
        .map(|f| ("filter", f.to_string()))
        .into_iter()
        .collect()
}

fn ratio_metric(r: &RatioSli) -> SliSpecDoc {
    let (good, bad) = match &r.count {
        RatioCount::Good(f) => (Some(source(filter_spec(Some(f)))), None),
        RatioCount::Bad(f) => (None, Some(source(filter_spec(Some(f))))),
    };
    SliSpecDoc {
        threshold_metric: None,
        ratio_metric: Some(RatioMetricDoc {
            counter: true,
            good,
            bad,
            total: source(filter_spec(r.total.as_ref())),
        }),
    }
}

fn threshold_metric(t: &ThresholdSli) -> SliSpecDoc {
    let mut spec = filter_spec(t.filter.as_ref());
    spec.insert("field", t.field.filter_name());
    SliSpecDoc {
        threshold_metric: Some(source(spec)),
        ratio_metric: None,
    }
}

fn threshold_value(t: &ThresholdSli) -> Value {
    match t.value {
        crate::objective::ThresholdValue::Duration(d) => number(&d.millis_text()),
        crate::objective::ThresholdValue::Number(n) => float(n),
    }
}

pub(crate) fn write(sla: &SlaDefinition) -> Vec<OpensloDoc> {
    let mut annotations = BTreeMap::new();
    annotations.insert(ANNOTATION_SLA, sla.name.to_string());
    if let Some(d) = &sla.display_name {
        annotations.insert(ANNOTATION_DISPLAY_NAME, d.clone());
    }
    if let Some(d) = &sla.description {
        annotations.insert(ANNOTATION_DESCRIPTION, d.clone());
    }
    if let Some(c) = &sla.customer {
        annotations.insert(ANNOTATION_CUSTOMER, c.clone());
    }
    let time_window = match sla.window {
        TimeWindow::Rolling { duration } => TimeWindowDoc {
            duration: duration.to_string(),
            is_rolling: true,
            calendar: None,
        },
        TimeWindow::Calendar { unit, time_zone } => TimeWindowDoc {
            duration: unit.openslo_duration().to_owned(),
            is_rolling: false,
            calendar: Some(CalendarDoc {
                start_time: CALENDAR_START,
                time_zone: time_zone.name(),
            }),
        },
    };
    let mut docs = Vec::new();
    for o in &sla.objectives {
        let sli_name = format!("{}-sli", o.name);
        let mut objective = ObjectiveDoc {
            display_name: o.display_name.clone(),
            op: None,
            value: None,
            target: number(&o.target.fraction_text()),
            time_slice_target: None,
            time_slice_window: None,
            composite_weight: o.weight.map(|w| number(&w.to_string())),
        };
        let sli_spec = match &o.sli {
            Sli::Ratio(r) => ratio_metric(r),
            Sli::Threshold(t) => {
                objective.op = Some(t.op.as_str());
                objective.value = Some(threshold_value(t));
                threshold_metric(t)
            }
            Sli::Gauge(g) => {
                objective.op = Some(g.op.as_str());
                objective.value = Some(float(g.threshold));
                let spec = [("gauge", g.metric.to_string())].into_iter().collect();
                SliSpecDoc {
                    threshold_metric: Some(source(spec)),
                    ratio_metric: None,
                }
            }
            Sli::TimeSlices(t) => {
                objective.time_slice_window = Some(t.slice_length.to_string());
                if let SliceBudgeting::Timeslices { slice_target } = t.budgeting {
                    objective.time_slice_target = Some(number(&slice_target.fraction_text()));
                }
                match &t.indicator {
                    SliceIndicator::Ratio(r) => ratio_metric(r),
                    SliceIndicator::Threshold(th) => {
                        objective.op = Some(th.op.as_str());
                        objective.value = Some(threshold_value(th));
                        threshold_metric(th)
                    }
                }
            }
        };
        docs.push(OpensloDoc::Sli(Doc {
            api_version: API_VERSION,
            kind: "SLI",
            metadata: MetadataDoc {
                name: sli_name.clone(),
                display_name: None,
                annotations: BTreeMap::new(),
            },
            spec: sli_spec,
        }));
        docs.push(OpensloDoc::Slo(Doc {
            api_version: API_VERSION,
            kind: "SLO",
            metadata: MetadataDoc {
                name: o.name.to_string(),
                display_name: o.display_name.clone(),
                annotations: annotations.clone(),
            },
            spec: SloSpecDoc {
                description: o.description.clone(),
                service: sla.service.clone(),
                indicator_ref: sli_name,
                time_window: vec![TimeWindowDoc {
                    duration: time_window.duration.clone(),
                    is_rolling: time_window.is_rolling,
                    calendar: time_window.calendar.as_ref().map(|c| CalendarDoc {
                        start_time: c.start_time,
                        time_zone: c.time_zone,
                    }),
                }],
                budgeting_method: o.budgeting_method().as_str(),
                objectives: vec![objective],
            },
        }));
    }
    docs
}
