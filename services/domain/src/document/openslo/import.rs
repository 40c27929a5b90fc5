//! Reading OpenSLO `SLO` documents into one SLA: its window, its objectives and their SLIs.

use std::collections::{BTreeMap, HashMap};

use chrono::{NaiveDateTime, Timelike};
use serde_json::Value;

use super::indicator::{Indicator, read_indicator_ref, read_inline_indicator, resolve_indicator};
use super::{
    ANNOTATION_ATTESTATION, ANNOTATION_CREDITS, ANNOTATION_CUSTOMER, ANNOTATION_DESCRIPTION,
    ANNOTATION_DISPLAY_NAME, ANNOTATION_POLICY, ANNOTATION_SCOPE, ANNOTATION_SLA, Metadata,
    read_metadata,
};
use crate::document::error::{DefinitionError, Problems};
use crate::document::native::{parse_time_zone, read_finite, read_threshold_value};
use crate::document::tree::{Node, Obj, check_text, join};
use crate::filter::EventFilter;
use crate::objective::{
    GaugeSli, MeasuredField, Objective, ObjectiveName, Sli, SliceBudgeting, SliceIndicator,
    ThresholdOp, ThresholdSli, TimeSlicesSli,
};
use crate::quantity::{CompositeWeight, ShareNotation, SliceTarget, Span, SpanUnit, TargetPpm};
use crate::sla::{self, SlaDefinition, SlaName};
use crate::window::{CalendarUnit, TimeWindow};

pub(crate) fn read(docs: &[Value]) -> Result<SlaDefinition, DefinitionError> {
    let mut p = Problems::default();
    let sla = read_all(docs, &mut p);
    p.finish(sla)
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
                ANNOTATION_SCOPE,
                ANNOTATION_POLICY,
                ANNOTATION_CREDITS,
                ANNOTATION_ATTESTATION,
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
    let scope = match annotation(ANNOTATION_SCOPE) {
        Some((v, path)) => {
            let scope = p.check(&path, sla::SlaScope::parse(&v));
            if scope == Some(sla::SlaScope::Customer) && customer.is_none() {
                p.push(
                    &path,
                    format!("\"customer\" needs the annotation {ANNOTATION_CUSTOMER}: the customer whose requests the SLA is judged on"),
                );
            }
            scope
        }
        None => Some(sla::SlaScope::default_for(customer.as_deref())),
    };
    let policy = match annotation(ANNOTATION_POLICY) {
        None => Some(crate::policy::SlaPolicy::default()),
        Some((text, path)) => match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value) => crate::document::policy::read(&Node::root(&value, path), p),
            Err(e) => {
                p.push(
                    &path,
                    format!("must be a JSON object such as {{\"lateGrace\": \"1h\"}}: {e}"),
                );
                None
            }
        },
    };
    let credits = annotation(ANNOTATION_CREDITS).map(|(text, path)| {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value) => crate::document::credit::read(
                &Node::root(&value, path),
                objectives.as_deref(),
                Some(crate::document::credit::Contract {
                    window: Some(&window),
                }),
                p,
            ),
            Err(e) => {
                p.push(
                    &path,
                    format!("must be a JSON object such as {{\"currency\": \"EUR\", \"tiered\": [...]}}: {e}"),
                );
                None
            }
        }
    });
    let attestation = match annotation(ANNOTATION_ATTESTATION) {
        None => Some(Default::default()),
        Some((text, path)) => match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value) => crate::document::attestation::read(&Node::root(&value, path), p),
            Err(e) => {
                p.push(
                    &path,
                    format!("must be a JSON object such as {{\"anchor\": \"batched\"}}: {e}"),
                );
                None
            }
        },
    };
    Some(SlaDefinition {
        name: name?,
        display_name,
        description,
        service,
        customer,
        scope: scope?,
        window,
        objectives: objectives?,
        policy: policy?,
        credits: match credits {
            Some(c) => Some(c?),
            None => None,
        },
        attestation: attestation?,
    })
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
