//! The native `slaproof/v1` SLA document: reading with every problem reported, and writing.

use chrono_tz::Tz;
use serde::Serialize;
use serde_json::Value;

use super::error::{DefinitionError, Problems};
use super::numbers::{float, number};
use super::tree::{Node, Obj, check_text};
use crate::filter::EventFilter;
use crate::objective::{
    GaugeName, GaugeSli, MeasuredField, Objective, ObjectiveName, RatioCount, RatioSli, Sli,
    SliceBudgeting, SliceIndicator, ThresholdOp, ThresholdSli, ThresholdValue, TimeSlicesSli,
};
use crate::policy::SlaPolicy;
use crate::quantity::{CompositeWeight, Micros, SliceTarget, Span, TargetPpm};
use crate::sla::{self, SlaDefinition, SlaName};
use crate::window::{CalendarUnit, TimeWindow};

pub(crate) const API_VERSION: &str = "slaproof/v1";
pub(crate) const KIND: &str = "SLA";

/// Who wrote the document being read, which decides what a missing
/// `spec.scope` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A provider's document: no scope means the customer's own requests
    /// when the SLA has a customer.
    Provider,
    /// A version the store kept. Versions stored before scopes existed were
    /// judged on the whole service, and keep that meaning; every version
    /// stored since says its scope.
    Stored,
}

/// Reads a native document already parsed into a tree.
pub(crate) fn read(doc: &Value, origin: Origin) -> Result<SlaDefinition, DefinitionError> {
    let mut p = Problems::default();
    let sla = read_sla(&Node::root(doc, ""), origin, &mut p);
    p.finish(sla)
}

fn read_sla(root: &Node<'_>, origin: Origin, p: &mut Problems) -> Option<SlaDefinition> {
    let doc = root.object(&["apiVersion", "kind", "metadata", "spec"], false, p)?;
    if let Some(v) = doc.req_str("apiVersion", p)
        && v != API_VERSION
    {
        p.push("apiVersion", format!("must be {API_VERSION:?}, got {v:?}"));
    }
    if let Some(k) = doc.req_str("kind", p)
        && k != KIND
    {
        p.push("kind", format!("must be {KIND:?}, got {k:?}"));
    }
    let (name, display_name) = match doc
        .required("metadata", p)
        .and_then(|m| m.object(&["name", "displayName"], false, p))
    {
        Some(meta) => {
            let name = meta
                .req_str("name", p)
                .and_then(|n| p.check("metadata.name", SlaName::parse(n)));
            let display = meta.opt_text("displayName", sla::MAX_DISPLAY_NAME, p);
            (name, display)
        }
        None => (None, None),
    };
    let spec = doc.required("spec", p)?.object(
        &[
            "description",
            "service",
            "customer",
            "scope",
            "window",
            "objectives",
            "policy",
            "credits",
            "attestation",
        ],
        false,
        p,
    )?;
    let description = spec.opt_text("description", sla::MAX_DESCRIPTION, p);
    let service = spec
        .req_str("service", p)
        .and_then(|s| check_text(&spec.path_of("service"), s, sla::MAX_SERVICE, p));
    let customer = spec.get("customer").and_then(|c| {
        let text = c.str(p)?;
        p.check(&c.path, sla::check_customer_ref(text))
            .map(|()| text.to_owned())
    });
    let scope = match spec.get("scope") {
        Some(node) => node
            .str(p)
            .and_then(|text| p.check(&node.path, sla::SlaScope::parse(text))),
        None => Some(match origin {
            Origin::Provider => sla::SlaScope::default_for(customer.as_deref()),
            Origin::Stored => sla::SlaScope::Service,
        }),
    };
    if scope == Some(sla::SlaScope::Customer)
        && customer.is_none()
        && spec.get("customer").is_none()
    {
        p.push(
            &spec.path_of("scope"),
            "\"customer\" needs spec.customer: the customer whose requests the SLA is judged on"
                .to_owned(),
        );
    }
    let window = spec.required("window", p).and_then(|w| read_window(&w, p));
    let policy = match spec.get("policy") {
        Some(node) => super::policy::read(&node, p),
        None => Some(SlaPolicy::default()),
    };
    let objectives: Vec<Option<Objective>> =
        match spec.required("objectives", p).and_then(|o| o.list(p)) {
            Some(items) => items.iter().map(|item| read_objective(item, p)).collect(),
            None => Vec::new(),
        };
    let objectives: Option<Vec<Objective>> = objectives.into_iter().collect();
    if let Some(objectives) = &objectives {
        for (index, field, rule) in sla::cross_check(objectives) {
            let path = match index {
                Some(i) => format!("spec.objectives[{i}].{field}"),
                None => format!("spec.{field}"),
            };
            p.push(&path, rule);
        }
    }
    // A provider's policy must mean something as a contract; a stored
    // version keeps the meaning it was agreed with.
    let contract = (origin == Origin::Provider).then_some(super::credit::Contract {
        window: window.as_ref(),
    });
    let credits = spec
        .get("credits")
        .map(|node| super::credit::read(&node, objectives.as_deref(), contract, p));
    let attestation = match spec.get("attestation") {
        Some(node) => super::attestation::read(&node, p),
        None => Some(Default::default()),
    };
    Some(SlaDefinition {
        name: name?,
        display_name,
        description,
        service: service?,
        customer,
        scope: scope?,
        window: window?,
        objectives: objectives?,
        policy: policy?,
        credits: match credits {
            Some(c) => Some(c?),
            None => None,
        },
        attestation: attestation?,
    })
}

impl TimeWindow {
    /// Reads a native document's `spec.window` (as stored), for callers
    /// that need only the window of a version.
    pub fn from_native_json(value: &Value) -> Result<Self, String> {
        let mut p = Problems::default();
        let window = read_window(&Node::root(value, "spec.window"), &mut p);
        p.finish(window).map_err(|e| e.to_string())
    }
}

/// `{calendar: month, timeZone: Europe/Berlin}` or `{rolling: 28d}`.
fn read_window(node: &Node<'_>, p: &mut Problems) -> Option<TimeWindow> {
    let w = node.object(&["calendar", "timeZone", "rolling"], false, p)?;
    match (w.get("calendar"), w.get("rolling")) {
        (Some(cal), None) => {
            let unit = cal
                .str(p)
                .and_then(|u| p.check(&cal.path, CalendarUnit::parse(u)));
            let tz = w
                .req_str("timeZone", p)
                .and_then(|z| parse_time_zone(&w.path_of("timeZone"), z, p));
            Some(TimeWindow::Calendar {
                unit: unit?,
                time_zone: tz?,
            })
        }
        (None, Some(rolling)) => {
            if w.has("timeZone") {
                p.push(
                    &w.path_of("timeZone"),
                    "applies only to calendar windows: a rolling window has no time zone",
                );
            }
            let span = rolling
                .str(p)
                .and_then(|s| p.check(&rolling.path, Span::parse(s)))?;
            p.check(&rolling.path, TimeWindow::rolling(span))
        }
        (Some(_), Some(_)) => {
            p.push(
                &node.path,
                "must be either `calendar` or `rolling`, not both",
            );
            None
        }
        (None, None) => {
            p.push(&node.path, "must give `calendar` (week, month, quarter or year, with `timeZone`) or `rolling` (e.g. 28d)");
            None
        }
    }
}

pub(crate) fn parse_time_zone(path: &str, text: &str, p: &mut Problems) -> Option<Tz> {
    match text.parse::<Tz>() {
        Ok(tz) => Some(tz),
        Err(_) => {
            p.push(
                path,
                format!(
                    "must be an IANA time zone such as \"Europe/Berlin\" or \"UTC\", got {text:?}"
                ),
            );
            None
        }
    }
}

fn read_objective(node: &Node<'_>, p: &mut Problems) -> Option<Objective> {
    let o = node.object(
        &[
            "name",
            "displayName",
            "description",
            "target",
            "weight",
            "ratio",
            "threshold",
            "timeSlices",
            "gauge",
        ],
        false,
        p,
    )?;
    let name = o
        .req_str("name", p)
        .and_then(|n| p.check(&o.path_of("name"), ObjectiveName::parse(n)));
    let display_name = o.opt_text("displayName", sla::MAX_DISPLAY_NAME, p);
    let description = o.opt_text("description", sla::MAX_DESCRIPTION, p);
    let target = o.required("target", p).and_then(|t| {
        t.number_text(p)
            .and_then(|text| p.check(&t.path, TargetPpm::parse(&text)))
    });
    let weight = o.get("weight").map(|w| {
        w.number(p)
            .and_then(|text| p.check(&w.path, CompositeWeight::parse(&text)))
    });
    let kinds = ["ratio", "threshold", "timeSlices", "gauge"];
    let given: Vec<&str> = kinds.iter().copied().filter(|k| o.has(k)).collect();
    let sli = match given.as_slice() {
        ["ratio"] => o
            .get("ratio")
            .and_then(|n| read_ratio(&n, p))
            .map(Sli::Ratio),
        ["threshold"] => o
            .get("threshold")
            .and_then(|n| read_threshold(&n, p))
            .map(Sli::Threshold),
        ["timeSlices"] => o
            .get("timeSlices")
            .and_then(|n| read_time_slices(&n, p))
            .map(Sli::TimeSlices),
        ["gauge"] => o
            .get("gauge")
            .and_then(|n| read_gauge(&n, p))
            .map(Sli::Gauge),
        [] => {
            p.push(
                &o.path,
                "must give one SLI: `ratio`, `threshold`, `timeSlices` or `gauge`",
            );
            None
        }
        many => {
            p.push(
                &o.path,
                format!("must give exactly one SLI, got {}", many.join(" and ")),
            );
            None
        }
    };
    Some(Objective {
        name: name?,
        display_name,
        description,
        target: target?,
        weight: match weight {
            Some(w) => Some(w?),
            None => None,
        },
        sli: sli?,
    })
}

pub(crate) fn read_filter(node: &Node<'_>, p: &mut Problems) -> Option<EventFilter> {
    let text = node.str(p)?;
    p.check(&node.path, EventFilter::parse(text))
}

fn read_ratio(node: &Node<'_>, p: &mut Problems) -> Option<RatioSli> {
    let r = node.object(&["good", "bad", "total"], false, p)?;
    let count = match (r.get("good"), r.get("bad")) {
        (Some(g), None) => read_filter(&g, p).map(RatioCount::Good),
        (None, Some(b)) => read_filter(&b, p).map(RatioCount::Bad),
        (Some(_), Some(_)) => {
            p.push(&r.path, "must give either `good` or `bad`, not both");
            None
        }
        (None, None) => {
            p.push(
                &r.path,
                "must give `good` (a filter for good events) or `bad` (a filter for bad events)",
            );
            None
        }
    };
    let total = r.get("total").map(|t| read_filter(&t, p));
    Some(RatioSli {
        count: count?,
        total: match total {
            Some(t) => Some(t?),
            None => None,
        },
    })
}

fn read_op(o: &Obj<'_>, p: &mut Problems) -> Option<ThresholdOp> {
    let node = o.required("op", p)?;
    let text = node.str(p)?;
    p.check(&node.path, ThresholdOp::parse(text))
}

fn read_threshold(node: &Node<'_>, p: &mut Problems) -> Option<ThresholdSli> {
    let t = node.object(&["field", "op", "value", "filter"], false, p)?;
    let field = t.required("field", p).and_then(|f| {
        f.str(p)
            .and_then(|s| p.check(&f.path, MeasuredField::parse(s)))
    });
    let op = read_op(&t, p);
    let value = match (&field, t.required("value", p)) {
        (Some(field), Some(v)) => read_threshold_value(field, &v, false, p),
        _ => None,
    };
    let filter = t.get("filter").map(|f| read_filter(&f, p));
    Some(ThresholdSli {
        field: field?,
        op: op?,
        value: value?,
        filter: match filter {
            Some(f) => Some(f?),
            None => None,
        },
    })
}

/// Durations accept `3.2s`, `800ms` or a number of milliseconds; with
/// `millis_only`, only a number of milliseconds (OpenSLO's `value`).
pub(crate) fn read_threshold_value(
    field: &MeasuredField,
    node: &Node<'_>,
    millis_only: bool,
    p: &mut Problems,
) -> Option<ThresholdValue> {
    if field.is_duration() {
        let text = if millis_only {
            node.number(p)?
        } else {
            node.number_text(p)?
        };
        let parsed = if millis_only {
            Micros::parse_millis(&text)
        } else {
            Micros::parse(&text)
        };
        p.check(&node.path, parsed).map(ThresholdValue::Duration)
    } else {
        read_finite(node, p).map(ThresholdValue::Number)
    }
}

pub(crate) fn read_finite(node: &Node<'_>, p: &mut Problems) -> Option<f64> {
    let text = node.number(p)?;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Some(v),
        _ => {
            p.push(&node.path, format!("must be a finite number, got {text}"));
            None
        }
    }
}

fn read_time_slices(node: &Node<'_>, p: &mut Problems) -> Option<TimeSlicesSli> {
    let t = node.object(
        &[
            "sliceLength",
            "budgeting",
            "sliceTarget",
            "ratio",
            "threshold",
        ],
        false,
        p,
    )?;
    let length = t.required("sliceLength", p).and_then(|n| {
        let s = n.str(p)?;
        let span = p.check(&n.path, Span::parse(s))?;
        p.check(&n.path, TimeSlicesSli::check_slice_length(span))
    });
    let budgeting = match t.req_str("budgeting", p) {
        Some("Timeslices") => {
            let target = t.required("sliceTarget", p).and_then(|n| {
                n.number_text(p)
                    .and_then(|s| p.check(&n.path, SliceTarget::parse(&s)))
            });
            target.map(|slice_target| SliceBudgeting::Timeslices { slice_target })
        }
        Some("RatioTimeslices") => {
            if t.has("sliceTarget") {
                p.push(&t.path_of("sliceTarget"), "applies only to `budgeting: Timeslices`; RatioTimeslices averages the slices' ratios");
            }
            Some(SliceBudgeting::RatioTimeslices)
        }
        Some(other) => {
            p.push(
                &t.path_of("budgeting"),
                format!("must be Timeslices or RatioTimeslices, got {other:?}"),
            );
            None
        }
        None => None,
    };
    let indicator = match (t.get("ratio"), t.get("threshold")) {
        (Some(r), None) => read_ratio(&r, p).map(SliceIndicator::Ratio),
        (None, Some(th)) => read_threshold(&th, p).map(SliceIndicator::Threshold),
        (Some(_), Some(_)) => {
            p.push(
                &t.path,
                "must give either `ratio` or `threshold` for the slices, not both",
            );
            None
        }
        (None, None) => {
            p.push(
                &t.path,
                "must give the SLI measured in each slice: `ratio` or `threshold`",
            );
            None
        }
    };
    Some(TimeSlicesSli {
        indicator: indicator?,
        slice_length: length?,
        budgeting: budgeting?,
    })
}

fn read_gauge(node: &Node<'_>, p: &mut Problems) -> Option<GaugeSli> {
    let g = node.object(&["metric", "op", "value"], false, p)?;
    let metric = g
        .required("metric", p)
        .and_then(|m| m.str(p).and_then(|s| p.check(&m.path, GaugeName::parse(s))));
    let op = read_op(&g, p);
    let threshold = g.required("value", p).and_then(|v| read_finite(&v, p));
    Some(GaugeSli {
        metric: metric?,
        op: op?,
        threshold: threshold?,
    })
}

// ---- writing ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NativeDoc {
    api_version: &'static str,
    kind: &'static str,
    metadata: MetadataDoc,
    spec: SpecDoc,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetadataDoc {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    service: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    customer: Option<String>,
    /// Written whenever the SLA has a customer, so that a stored version
    /// reads back with the scope it was judged under.
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'static str>,
    window: WindowDoc,
    objectives: Vec<ObjectiveDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<super::policy::PolicyDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    credits: Option<super::credit::CreditsDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attestation: Option<super::attestation::AttestationDoc>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WindowDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    calendar: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_zone: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rolling: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectiveDoc {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio: Option<RatioDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    threshold: Option<ThresholdDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_slices: Option<TimeSlicesDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gauge: Option<GaugeDoc>,
}

#[derive(Serialize)]
struct RatioDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    good: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bad: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<String>,
}

#[derive(Serialize)]
struct ThresholdDoc {
    field: String,
    op: &'static str,
    value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TimeSlicesDoc {
    slice_length: String,
    budgeting: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    slice_target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio: Option<RatioDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    threshold: Option<ThresholdDoc>,
}

#[derive(Serialize)]
struct GaugeDoc {
    metric: String,
    op: &'static str,
    value: Value,
}

fn ratio_doc(r: &RatioSli) -> RatioDoc {
    let (good, bad) = match &r.count {
        RatioCount::Good(f) => (Some(f.to_string()), None),
        RatioCount::Bad(f) => (None, Some(f.to_string())),
    };
    RatioDoc {
        good,
        bad,
        total: r.total.as_ref().map(ToString::to_string),
    }
}

fn threshold_doc(t: &ThresholdSli) -> ThresholdDoc {
    ThresholdDoc {
        field: t.field.native_name(),
        op: t.op.as_str(),
        value: match t.value {
            ThresholdValue::Duration(d) => Value::String(d.to_string()),
            ThresholdValue::Number(n) => float(n),
        },
        filter: t.filter.as_ref().map(ToString::to_string),
    }
}

pub(crate) fn write(sla: &SlaDefinition) -> NativeDoc {
    let window = match sla.window {
        TimeWindow::Calendar { unit, time_zone } => WindowDoc {
            calendar: Some(unit.as_str()),
            time_zone: Some(time_zone.name()),
            rolling: None,
        },
        TimeWindow::Rolling { duration } => WindowDoc {
            calendar: None,
            time_zone: None,
            rolling: Some(duration.to_string()),
        },
    };
    let objectives = sla
        .objectives
        .iter()
        .map(|o| {
            let mut doc = ObjectiveDoc {
                name: o.name.to_string(),
                display_name: o.display_name.clone(),
                description: o.description.clone(),
                target: o.target.to_string(),
                weight: o.weight.map(|w| number(&w.to_string())),
                ratio: None,
                threshold: None,
                time_slices: None,
                gauge: None,
            };
            match &o.sli {
                Sli::Ratio(r) => doc.ratio = Some(ratio_doc(r)),
                Sli::Threshold(t) => doc.threshold = Some(threshold_doc(t)),
                Sli::TimeSlices(t) => {
                    let (budgeting, slice_target) = match t.budgeting {
                        SliceBudgeting::Timeslices { slice_target } => {
                            ("Timeslices", Some(slice_target.to_string()))
                        }
                        SliceBudgeting::RatioTimeslices => ("RatioTimeslices", None),
                    };
                    let (ratio, threshold) = match &t.indicator {
                        SliceIndicator::Ratio(r) => (Some(ratio_doc(r)), None),
                        SliceIndicator::Threshold(th) => (None, Some(threshold_doc(th))),
                    };
                    doc.time_slices = Some(TimeSlicesDoc {
                        slice_length: t.slice_length.to_string(),
                        budgeting,
                        slice_target,
                        ratio,
                        threshold,
                    });
                }
                Sli::Gauge(g) => {
                    doc.gauge = Some(GaugeDoc {
                        metric: g.metric.to_string(),
                        op: g.op.as_str(),
                        value: float(g.threshold),
                    });
                }
            }
            doc
        })
        .collect();
    NativeDoc {
        api_version: API_VERSION,
        kind: KIND,
        metadata: MetadataDoc {
            name: sla.name.to_string(),
            display_name: sla.display_name.clone(),
        },
        spec: SpecDoc {
            description: sla.description.clone(),
            service: sla.service.clone(),
            customer: sla.customer.clone(),
            scope: (sla.customer.is_some() || sla.scope != sla::SlaScope::Service)
                .then_some(sla.scope.as_str()),
            window,
            objectives,
            policy: super::policy::write(&sla.policy),
            credits: sla.credits.as_ref().map(super::credit::write),
            attestation: super::attestation::write(&sla.attestation),
        },
    }
}
