//! Reading and writing an SLA's policy (`spec.policy` natively, the `slaproof.dev/policy` annotation in OpenSLO).

use serde::Serialize;
use serde_json::Value;

use super::error::Problems;
use super::tree::Node;
use crate::decimal::Decimal;
use crate::policy::{
    DegradePolicy, MaintenancePolicy, NoDataPolicy, NoDataSlices, ScheduleSlot, SlaPolicy, limits,
};
use crate::quantity::{SliceTarget, Span};

/// Reads a policy object; keys left out keep their defaults.
pub(crate) fn read(node: &Node<'_>, p: &mut Problems) -> Option<SlaPolicy> {
    let o = node.object(
        &[
            "lateGrace",
            "lateCorrections",
            "maintenance",
            "degrade",
            "noData",
            "gaugeDelay",
            "settlement",
        ],
        false,
        p,
    )?;
    let mut policy = SlaPolicy::default();
    let before = p.0.len();
    if let Some(n) = o.get("lateCorrections")
        && let Some(on) = n.bool(p)
    {
        policy.late_corrections = on;
    }
    if let Some(n) = o.get("gaugeDelay")
        && let Some(delay) = span_in(n, 60, limits::MAX_GAUGE_DELAY_SECS, p)
    {
        policy.gauge_delay = delay;
    }
    if let Some(n) = o.get("settlement")
        && let Some(horizon) = span_in(
            n,
            limits::MIN_SETTLEMENT_SECS,
            limits::MAX_SETTLEMENT_SECS,
            p,
        )
    {
        policy.settlement = horizon;
    }
    if let Some(n) = o.get("lateGrace") {
        policy.late_grace = span_in(n, 0, limits::MAX_LATE_GRACE_SECS, p);
    }
    if let Some(m) = o
        .get("maintenance")
        .and_then(|m| m.object(&["notice", "maxPerPeriod", "schedule"], false, p))
    {
        if let Some(n) = m.get("notice") {
            policy.maintenance.notice = span_in(n, 0, limits::MAX_NOTICE_SECS, p)
                .unwrap_or(MaintenancePolicy::default().notice);
        }
        if let Some(n) = m.get("maxPerPeriod") {
            policy.maintenance.max_per_period = span_in(n, 60, u64::MAX, p);
        }
        if let Some(n) = m.get("schedule") {
            policy.maintenance.schedule = schedule(n, p);
            if !policy.maintenance.schedule.is_empty() && !m.has("maxPerPeriod") {
                p.push(
                    &m.path_of("maxPerPeriod"),
                    "is required with a schedule: the most scheduled maintenance a period may exclude (such as 4h)",
                );
            }
        }
    }
    if let Some(d) = o.get("degrade").and_then(|d| {
        d.object(
            &[
                "lightBurnRate",
                "lightEvaluations",
                "fullBurnRate",
                "fullBudgetRemaining",
            ],
            false,
            p,
        )
    }) {
        let burn = |key: &str, p: &mut Problems| -> Option<u64> {
            let n = d.get(key)?;
            n.number_text(p).and_then(|t| burn_milli(&n.path, &t, p))
        };
        if let Some(v) = burn("lightBurnRate", p) {
            policy.degrade.light_burn_milli = v;
        }
        if let Some(v) = burn("fullBurnRate", p) {
            policy.degrade.full_burn_milli = v;
        }
        if let Some(n) = d.get("lightEvaluations") {
            match n
                .number(p)
                .and_then(|t| t.parse::<u32>().ok().filter(|v| (1..=1000).contains(v)))
            {
                Some(v) => policy.degrade.light_evaluations = v,
                None => p.push(&n.path, "must be a whole number from 1 to 1000"),
            }
        }
        if let Some(n) = d.get("fullBudgetRemaining")
            && let Some(share) = n
                .number_text(p)
                .and_then(|t| p.check(&n.path, SliceTarget::parse(&t)))
        {
            policy.degrade.full_remaining_ppm = share.ppm();
        }
        if policy.degrade.full_burn_milli < policy.degrade.light_burn_milli {
            p.push(
                &d.path_of("fullBurnRate"),
                "must be at least lightBurnRate: full degrade is the stronger level",
            );
        }
    }
    if let Some(nd) = o
        .get("noData")
        .and_then(|n| n.object(&["after", "slices"], false, p))
    {
        if let Some(n) = nd.get("after") {
            policy.no_data.after =
                span_in(n, limits::MIN_NO_DATA_SECS, limits::MAX_NO_DATA_SECS, p)
                    .unwrap_or(NoDataPolicy::default().after);
        }
        if let Some(n) = nd.get("slices") {
            match n.str(p).map(|t| (t, NoDataSlices::parse(t))) {
                Some((_, Some(v))) => policy.no_data.slices = v,
                Some((t, None)) => {
                    p.push(&n.path, format!("must be ignored, bad or good, got {t:?}"));
                }
                None => {}
            }
        }
    }
    (p.0.len() == before).then_some(policy)
}

/// A maintenance schedule: a list of `{days: [sun], from: "02:00", to: "04:00"}`.
fn schedule(n: Node<'_>, p: &mut Problems) -> Vec<ScheduleSlot> {
    let Some(items) = n.list(p) else {
        return Vec::new();
    };
    if items.len() > limits::MAX_SCHEDULE_SLOTS {
        p.push(
            &n.path,
            format!("must have at most {} slots", limits::MAX_SCHEDULE_SLOTS),
        );
        return Vec::new();
    }
    let mut slots = Vec::new();
    for item in items {
        let Some(o) = item.object(&["days", "from", "to"], false, p) else {
            continue;
        };
        let mut days = [false; 7];
        if let Some(list) = o.required("days", p).and_then(|d| d.list(p)) {
            if list.is_empty() {
                p.push(
                    &o.path_of("days"),
                    "must name at least one day, such as [sun]",
                );
            }
            for day in list {
                match day
                    .str(p)
                    .map(|t| (t, ScheduleSlot::DAYS.iter().position(|d| *d == t)))
                {
                    Some((_, Some(i))) => days[i] = true,
                    Some((t, None)) => p.push(
                        &day.path,
                        format!(
                            "must be one of {}, got {t:?}",
                            ScheduleSlot::DAYS.join(", ")
                        ),
                    ),
                    None => {}
                }
            }
        }
        let clock = |key: &str, p: &mut Problems| -> Option<u16> {
            let node = o.required(key, p)?;
            let text = node.str(p)?;
            let minute = ScheduleSlot::parse_clock(text);
            if minute.is_none() {
                p.push(
                    &node.path,
                    format!("must be a time of day HH:MM from 00:00 to 24:00, got {text:?}"),
                );
            }
            minute
        };
        let (from, to) = (clock("from", p), clock("to", p));
        if let (Some(from), Some(to)) = (from, to) {
            if to <= from {
                p.push(
                    &o.path_of("to"),
                    format!(
                        "must be after from ({}): a slot lies within one day; write one slot a day for a night across midnight",
                        ScheduleSlot::clock(from)
                    ),
                );
            } else if days.contains(&true) {
                slots.push(ScheduleSlot {
                    days,
                    from_minute: from,
                    to_minute: to,
                });
            }
        }
    }
    slots
}

/// A span at `n` between `min` and `max` seconds.
fn span_in(n: Node<'_>, min: u64, max: u64, p: &mut Problems) -> Option<Span> {
    let span = n.str(p).and_then(|s| p.check(&n.path, Span::parse(s)))?;
    if (min..=max).contains(&span.seconds()) {
        Some(span)
    } else {
        p.push(
            &n.path,
            format!(
                "must be between {} and {}, got {span}",
                words(min),
                words(max)
            ),
        );
        None
    }
}

/// `2`, `2.5`, `14.4` as thousandths; above 0, at most three decimals.
fn burn_milli(path: &str, text: &str, p: &mut Problems) -> Option<u64> {
    let value = Decimal::parse(text)
        .filter(|d| !d.negative && !d.is_zero())
        .and_then(|d| d.scaled(3).ok())
        .and_then(|v| u64::try_from(v).ok());
    if value.is_none() {
        p.push(
            path,
            format!("must be a burn rate above 0 with at most three decimals, such as 2 or 14.4, got {text}"),
        );
    }
    value
}

fn words(secs: u64) -> String {
    match secs {
        0 => "0s".to_owned(),
        u64::MAX => "any length".to_owned(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn milli_text(milli: u64) -> Value {
    super::numbers::number(&format!(
        "{}{}",
        milli / 1000,
        match milli % 1000 {
            0 => String::new(),
            f => format!(".{f:03}").trim_end_matches('0').to_owned(),
        }
    ))
}

/// The policy as written: only what differs from the defaults; `None`
/// when nothing does.
#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicyDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    late_grace: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    late_corrections: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    gauge_delay: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    settlement: Option<String>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    maintenance: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    degrade: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    no_data: serde_json::Map<String, Value>,
}

pub(crate) fn write(policy: &SlaPolicy) -> Option<PolicyDoc> {
    let mut doc = PolicyDoc {
        late_grace: policy.late_grace.map(|s| s.to_string()),
        late_corrections: policy.late_corrections,
        gauge_delay: (policy.gauge_delay != SlaPolicy::default().gauge_delay)
            .then(|| policy.gauge_delay.to_string()),
        settlement: (policy.settlement != SlaPolicy::default().settlement)
            .then(|| policy.settlement.to_string()),
        ..PolicyDoc::default()
    };
    let (m, dm) = (&policy.maintenance, MaintenancePolicy::default());
    if m.notice != dm.notice {
        doc.maintenance
            .insert("notice".into(), m.notice.to_string().into());
    }
    if let Some(cap) = m.max_per_period {
        doc.maintenance
            .insert("maxPerPeriod".into(), cap.to_string().into());
    }
    if !m.schedule.is_empty() {
        let slots = m
            .schedule
            .iter()
            .map(|slot| {
                serde_json::json!({
                    "days": slot.day_names(),
                    "from": ScheduleSlot::clock(slot.from_minute),
                    "to": ScheduleSlot::clock(slot.to_minute),
                })
            })
            .collect();
        doc.maintenance
            .insert("schedule".into(), Value::Array(slots));
    }
    let (d, dd) = (policy.degrade, DegradePolicy::default());
    if d.light_burn_milli != dd.light_burn_milli {
        doc.degrade
            .insert("lightBurnRate".into(), milli_text(d.light_burn_milli));
    }
    if d.light_evaluations != dd.light_evaluations {
        doc.degrade
            .insert("lightEvaluations".into(), d.light_evaluations.into());
    }
    if d.full_burn_milli != dd.full_burn_milli {
        doc.degrade
            .insert("fullBurnRate".into(), milli_text(d.full_burn_milli));
    }
    if d.full_remaining_ppm != dd.full_remaining_ppm {
        let share = SliceTarget::from_ppm(d.full_remaining_ppm)
            .map(|s| s.to_string())
            .unwrap_or_default();
        doc.degrade
            .insert("fullBudgetRemaining".into(), share.into());
    }
    let (n, dn) = (policy.no_data, NoDataPolicy::default());
    if n.after != dn.after {
        doc.no_data
            .insert("after".into(), n.after.to_string().into());
    }
    if n.slices != dn.slices {
        doc.no_data
            .insert("slices".into(), n.slices.as_str().into());
    }
    (doc != PolicyDoc::default()).then_some(doc)
}

#[cfg(test)]
mod tests {
    use crate::policy::{NoDataSlices, ScheduleSlot, SlaPolicy};
    use crate::quantity::Span;
    use crate::sla::SlaDefinition;

    fn doc(policy: &str) -> String {
        format!(
            "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {{name: acme}}\nspec:\n  service: chat\n  window: {{calendar: month, timeZone: UTC}}\n  objectives:\n    - {{name: availability, target: 99.9%, ratio: {{good: \"status < 500\"}}}}\n{policy}"
        )
    }

    #[test]
    fn a_document_without_policy_gets_the_defaults() {
        let sla = SlaDefinition::from_document(&doc("")).unwrap();
        assert_eq!(sla.policy, SlaPolicy::default());
        assert_eq!(sla.policy.maintenance.notice, Span::parse("72h").unwrap());
        assert_eq!(sla.policy.degrade.light_burn_milli, 2_000);
        assert!(!sla.to_native_yaml().contains("policy"));
    }

    #[test]
    fn a_stated_policy_is_read_and_written_back() {
        let text = doc(
            "  policy:\n    lateGrace: 2h\n    lateCorrections: true\n    gaugeDelay: 3h\n    settlement: 90d\n    maintenance: {notice: 48h, maxPerPeriod: 8h, schedule: [{days: [sat, sun], from: \"02:00\", to: \"04:00\"}, {days: [wed], from: \"22:00\", to: \"24:00\"}]}\n    degrade: {lightBurnRate: 2.5, lightEvaluations: 4, fullBurnRate: 14.4, fullBudgetRemaining: 10%}\n    noData: {after: 30m, slices: bad}\n",
        );
        let sla = SlaDefinition::from_document(&text).unwrap();
        let p = sla.policy.clone();
        assert_eq!(p.late_grace, Some(Span::parse("2h").unwrap()));
        assert!(p.late_corrections);
        assert_eq!(p.gauge_delay, Span::parse("3h").unwrap());
        assert_eq!(p.settlement, Span::parse("90d").unwrap());
        assert_eq!(p.maintenance.notice, Span::parse("48h").unwrap());
        assert_eq!(
            p.maintenance.max_per_period,
            Some(Span::parse("8h").unwrap())
        );
        assert_eq!(
            p.maintenance.schedule,
            [
                ScheduleSlot {
                    days: [false, false, false, false, false, true, true],
                    from_minute: 120,
                    to_minute: 240,
                },
                ScheduleSlot {
                    days: [false, false, true, false, false, false, false],
                    from_minute: 1320,
                    to_minute: 1440,
                },
            ]
        );
        assert_eq!(
            (
                p.degrade.light_burn_milli,
                p.degrade.light_evaluations,
                p.degrade.full_burn_milli,
                p.degrade.full_remaining_ppm
            ),
            (2_500, 4, 14_400, 100_000)
        );
        assert_eq!(p.no_data.after, Span::parse("30m").unwrap());
        assert_eq!(p.no_data.slices, NoDataSlices::Bad);
        let back = SlaDefinition::from_document(&sla.to_native_yaml()).unwrap();
        assert_eq!(back, sla);
        let openslo = SlaDefinition::from_document(&sla.to_openslo_yaml()).unwrap();
        assert_eq!(openslo, sla);
    }

    #[test]
    fn every_bad_policy_field_is_named() {
        let err = SlaDefinition::from_document(&doc(
            "  policy:\n    lateGrace: 40d\n    settlement: 2h\n    maintenance: {notice: soon}\n    degrade: {lightBurnRate: -1, fullBurnRate: 1, lightEvaluations: 0}\n    noData: {after: 10s, slices: maybe}\n    typo: 1\n",
        ))
        .unwrap_err();
        for (path, needle) in [
            ("spec.policy.lateGrace", "between 0s and 31d"),
            ("spec.policy.settlement", "between 1d and 400d"),
            ("spec.policy.maintenance.notice", "duration"),
            ("spec.policy.degrade.lightBurnRate", "above 0"),
            ("spec.policy.degrade.lightEvaluations", "1 to 1000"),
            ("spec.policy.noData.after", "between 1m and 7d"),
            ("spec.policy.noData.slices", "ignored, bad or good"),
            ("spec.policy.typo", "unknown key"),
        ] {
            assert!(err.has(path, needle), "{path}: {err}");
        }
    }

    #[test]
    fn every_bad_schedule_field_is_named_and_a_schedule_needs_a_cap() {
        let err = SlaDefinition::from_document(&doc(
            "  policy:\n    maintenance:\n      schedule:\n        - {days: [sunday], from: \"2:00\", to: \"04:00\"}\n        - {days: [], from: \"23:00\", to: \"01:00\"}\n        - {days: [sun], from: \"02:00\", to: \"24:01\", at: 1}\n",
        ))
        .unwrap_err();
        for (path, needle) in [
            ("spec.policy.maintenance.schedule[0].days[0]", "mon, tue"),
            ("spec.policy.maintenance.schedule[0].from", "HH:MM"),
            (
                "spec.policy.maintenance.schedule[1].days",
                "at least one day",
            ),
            (
                "spec.policy.maintenance.schedule[1].to",
                "after from (23:00)",
            ),
            ("spec.policy.maintenance.schedule[2].to", "00:00 to 24:00"),
            ("spec.policy.maintenance.schedule[2].at", "unknown key"),
        ] {
            assert!(err.has(path, needle), "{path}: {err}");
        }
        let err = SlaDefinition::from_document(&doc(
            "  policy:\n    maintenance:\n      schedule: [{days: [sun], from: \"02:00\", to: \"04:00\"}]\n",
        ))
        .unwrap_err();
        assert!(
            err.has(
                "spec.policy.maintenance.maxPerPeriod",
                "required with a schedule"
            ),
            "{err}"
        );
    }
}
