//! Writing an SLA as OpenSLO documents: per objective, an `SLI` and an `SLO` referring to it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{
    ANNOTATION_ATTESTATION, ANNOTATION_CREDITS, ANNOTATION_CUSTOMER, ANNOTATION_DESCRIPTION,
    ANNOTATION_DISPLAY_NAME, ANNOTATION_POLICY, ANNOTATION_SCOPE, ANNOTATION_SLA, API_VERSION,
    METRIC_SOURCE_TYPE,
};
use crate::document::numbers::{float, number};
use crate::filter::EventFilter;
use crate::objective::{RatioCount, RatioSli, Sli, SliceBudgeting, SliceIndicator, ThresholdSli};
use crate::sla::SlaDefinition;
use crate::window::TimeWindow;

/// A fixed start for exported calendar windows: a Monday that is also the
/// first day of a month, quarter and year.
const CALENDAR_START: &str = "2024-01-01 00:00:00";

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
        annotations.insert(ANNOTATION_SCOPE, sla.scope.as_str().to_owned());
    }
    if let Some(policy) = crate::document::policy::write(&sla.policy) {
        annotations.insert(
            ANNOTATION_POLICY,
            serde_json::to_string(&policy).unwrap_or_default(),
        );
    }
    if let Some(credits) = &sla.credits {
        annotations.insert(
            ANNOTATION_CREDITS,
            serde_json::to_string(&crate::document::credit::write(credits)).unwrap_or_default(),
        );
    }
    if let Some(attestation) = crate::document::attestation::write(&sla.attestation) {
        annotations.insert(
            ANNOTATION_ATTESTATION,
            serde_json::to_string(&attestation).unwrap_or_default(),
        );
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
