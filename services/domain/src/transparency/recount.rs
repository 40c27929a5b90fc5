//! An auditor's recount of a day's measurement from the log's leaves: the
//! events of the day an SLA counts, judged by the same domain rules the
//! evaluator's rollups judge by ([`Objective::classify`],
//! [`SlaDefinition::arrival`], maintenance by [`in_any`]), so that the
//! weights a day's commitment opens to can be checked against the logged
//! events with nothing but exported files (`docs/TRANSPARENCY.md`).
//!
//! Event objectives (ratio and threshold) are recounted event by event;
//! time-slice objectives slice by slice, each slice's events judged by the
//! same indicator and the slices then by [`slice_objective_tally`], the
//! rule the evaluator's close uses. Gauges are not: their values are not
//! logged.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use super::Leaf;
use crate::budget::Tally;
use crate::event::{EventFields, EventSource};
use crate::filter::{Comparison, Expr, Field};
use crate::objective::{
    EventVerdict, MeasuredField, Objective, RatioCount, RatioSli, Sli, SliceIndicator, ThresholdSli,
};
use crate::sla::SlaDefinition;
use crate::slice_grid::SliceGrid;
use crate::slices::slice_objective_tally;
use crate::window::{Period, in_any};

/// What a day was counted under, as the provider opens it.
#[derive(Debug, Clone, Copy)]
pub struct DayRules<'a> {
    /// The SLA version's definition (its service, window, policy and
    /// objectives).
    pub definition: &'a SlaDefinition,
    /// The maintenance excluded, merged and sorted.
    pub maintenance: &'a [Period],
    /// The platform's late grace, which an SLA without its own uses.
    pub default_grace: Duration,
    /// The evaluator's watermark the day was counted at: every event
    /// received before it, none after.
    pub counted_to: DateTime<Utc>,
}

/// Whether the recount can rebuild `objective`'s days from leaves; why
/// not otherwise.
pub fn recountable(objective: &Objective) -> Result<(), String> {
    match &objective.sli {
        Sli::Ratio(r) => ratio_reads_only_logged_fields(r),
        Sli::Threshold(t) => threshold_reads_only_logged_fields(t),
        Sli::TimeSlices(t) => match &t.indicator {
            SliceIndicator::Ratio(r) => ratio_reads_only_logged_fields(r),
            SliceIndicator::Threshold(th) => threshold_reads_only_logged_fields(th),
        },
        Sli::Gauge(_) => Err("a gauge's values are not in the log".into()),
    }
}

fn ratio_reads_only_logged_fields(r: &RatioSli) -> Result<(), String> {
    let count = match &r.count {
        RatioCount::Good(f) | RatioCount::Bad(f) => f,
    };
    [Some(count), r.total.as_ref()]
        .into_iter()
        .flatten()
        .try_for_each(|f| filter_reads_only_logged_fields(f.expr()))
}

fn threshold_reads_only_logged_fields(t: &ThresholdSli) -> Result<(), String> {
    if let MeasuredField::Attr(name) = &t.field {
        return Err(format!(
            "it measures attr.{name}, which the log does not carry"
        ));
    }
    t.filter
        .as_ref()
        .map_or(Ok(()), |f| filter_reads_only_logged_fields(f.expr()))
}

fn filter_reads_only_logged_fields(expr: &Expr) -> Result<(), String> {
    match attribute(expr) {
        Some(name) => Err(format!(
            "its filter reads attr.{name}, which the log does not carry"
        )),
        None => Ok(()),
    }
}

/// The first free attribute an expression reads.
fn attribute(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Or(items) | Expr::And(items) => items.iter().find_map(attribute),
        Expr::Not(inner) => attribute(inner),
        Expr::Test(Comparison::Compare { field, .. } | Comparison::In { field, .. }) => match field
        {
            Field::Attr(name) => Some(name),
            _ => None,
        },
    }
}

/// The tally of `objective` over `day` from `leaves` (any order; an event
/// logged twice is a problem the caller reports, not counted twice here:
/// pass each event once).
pub fn recount_day<'l>(
    rules: &DayRules<'_>,
    objective: &Objective,
    day: Period,
    leaves: impl IntoIterator<Item = &'l Leaf>,
) -> Result<Tally, String> {
    recountable(objective)?;
    let slicing = match &objective.sli {
        Sli::TimeSlices(sli) => Some((
            sli,
            SliceGrid::new(sli.slice_length, &rules.definition.window),
        )),
        _ => None,
    };
    let mut tally = Tally::default();
    let mut slices: BTreeMap<DateTime<Utc>, Tally> = BTreeMap::new();
    for leaf in leaves {
        let (Some(occurred), Some(received)) = (
            DateTime::from_timestamp_micros(leaf.occurred_at_us),
            DateTime::from_timestamp_micros(leaf.received_at_us),
        ) else {
            continue;
        };
        // The evaluator's scope (`TrackedSla::scopes`): the version's
        // service and, for a customer's SLA, the customer the leaf commits
        // to (days are measured only in periods the version judges
        // whole, all after it began counting); received before the
        // watermark.
        if !day.contains(occurred)
            || !rules
                .definition
                .measures(Some(&leaf.service), leaf.customer.as_deref())
            || received >= rules.counted_to
            || in_any(rules.maintenance, occurred)
            || !rules
                .definition
                .arrival(occurred, received, rules.default_grace)
                .counts()
        {
            continue;
        }
        let verdict = objective.classify(leaf);
        if verdict == EventVerdict::NotCounted {
            continue;
        }
        let t = match &slicing {
            Some((_, grid)) => slices
                .entry(grid.slice_containing(occurred).start)
                .or_default(),
            None => &mut tally,
        };
        t.total += 1;
        t.good += u64::from(verdict == EventVerdict::Good);
    }
    Ok(match slicing {
        Some((sli, grid)) => slice_objective_tally(
            sli,
            rules.definition.policy.no_data.slices,
            &grid,
            rules.maintenance,
            day,
            &slices,
        ),
        None => tally,
    })
}

/// A leaf's fields as filters read them; the log carries no free
/// attributes (see [`recountable`]).
impl EventFields for Leaf {
    fn service(&self) -> Option<&str> {
        Some(&self.service)
    }
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
    fn status(&self) -> Option<u16> {
        self.status.and_then(|s| u16::try_from(s).ok())
    }
    fn error_class(&self) -> Option<&str> {
        self.error_class.as_deref()
    }
    fn source(&self) -> Option<EventSource> {
        self.source.parse().ok()
    }
    fn streaming(&self) -> Option<bool> {
        self.streaming
    }
    fn latency_us(&self) -> Option<u64> {
        self.latency_us.and_then(|v| u64::try_from(v).ok())
    }
    fn ttft_us(&self) -> Option<u64> {
        self.ttft_us.and_then(|v| u64::try_from(v).ok())
    }
    fn tpot_us(&self) -> Option<u64> {
        self.tpot_us.and_then(|v| u64::try_from(v).ok())
    }
    fn input_tokens(&self) -> Option<u64> {
        self.input_tokens.and_then(|v| u64::try_from(v).ok())
    }
    fn output_tokens(&self) -> Option<u64> {
        self.output_tokens.and_then(|v| u64::try_from(v).ok())
    }
    fn attr(&self, _name: &str) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition() -> SlaDefinition {
        let doc = "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme}\nspec:\n  service: chat\n  \
                   window: {calendar: month, timeZone: UTC}\n  objectives:\n    \
                   - {name: ok, target: 99%, ratio: {good: \"status < 500\"}}\n    \
                   - {name: fast, target: 95%, threshold: {field: latency_ms, op: lte, value: 800ms}}\n    \
                   - {name: cached, target: 95%, ratio: {good: \"attr.cache_hit == 1\"}}\n";
        SlaDefinition::from_document(doc).unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// An hour's grace on the platform's side.
    fn rules<'a>(
        definition: &'a SlaDefinition,
        maintenance: &'a [Period],
        counted_to: &str,
    ) -> DayRules<'a> {
        DayRules {
            definition,
            maintenance,
            default_grace: Duration::hours(1),
            counted_to: at(counted_to),
        }
    }

    fn period(start: &str, end: &str) -> Period {
        Period {
            start: at(start),
            end: at(end),
        }
    }

    fn leaf(occurred: &str, received: &str, status: i32, latency_ms: i64) -> Leaf {
        Leaf {
            v: 1,
            salt: "00".repeat(32),
            event: "evt_1".into(),
            request_id: None,
            source: "provider".into(),
            service: "chat".into(),
            customer: None,
            model: None,
            occurred_at_us: at(occurred).timestamp_micros(),
            received_at_us: at(received).timestamp_micros(),
            late: false,
            status: Some(status),
            error_class: None,
            latency_us: Some(latency_ms * 1000),
            ttft_us: None,
            tpot_us: None,
            input_tokens: None,
            output_tokens: None,
            streaming: None,
        }
    }

    #[test]
    fn a_day_is_recounted_as_the_evaluator_counts_it() {
        let d = definition();
        let maintenance = [period("2026-11-10T12:00:00Z", "2026-11-10T13:00:00Z")];
        let rules = rules(&d, &maintenance, "2026-11-12T00:00:00Z");
        let day = period("2026-11-10T00:00:00Z", "2026-11-11T00:00:00Z");
        let mut other = leaf("2026-11-10T01:00:00Z", "2026-11-10T01:00:00Z", 200, 100);
        other.service = "embed".into();
        let leaves = [
            leaf("2026-11-10T01:00:00Z", "2026-11-10T01:00:00Z", 200, 100),
            leaf("2026-11-10T02:00:00Z", "2026-11-10T02:00:00Z", 503, 900),
            // Under maintenance.
            leaf("2026-11-10T12:30:00Z", "2026-11-10T12:30:00Z", 503, 900),
            // Another day.
            leaf("2026-11-11T00:00:00Z", "2026-11-11T00:00:00Z", 503, 900),
            // Received after the watermark.
            leaf("2026-11-10T03:00:00Z", "2026-11-12T00:00:00Z", 503, 900),
            other,
        ];
        let ok = d.objective("ok").unwrap();
        let fast = d.objective("fast").unwrap();
        assert_eq!(
            recount_day(&rules, ok, day, &leaves).unwrap(),
            Tally { good: 1, total: 2 }
        );
        assert_eq!(
            recount_day(&rules, fast, day, &leaves).unwrap(),
            Tally { good: 1, total: 2 }
        );
        let cached = d.objective("cached").unwrap();
        let why = recount_day(&rules, cached, day, &leaves).unwrap_err();
        assert!(why.contains("attr.cache_hit"), "{why}");
    }

    #[test]
    fn an_event_past_its_periods_close_is_not_counted() {
        let d = definition();
        let rules = rules(&d, &[], "2026-12-20T00:00:00Z");
        let day = period("2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z");
        let leaves = [
            leaf("2026-11-30T10:00:00Z", "2026-12-01T00:30:00Z", 503, 1),
            leaf("2026-11-30T11:00:00Z", "2026-12-01T01:30:00Z", 503, 1),
        ];
        let ok = d.objective("ok").unwrap();
        assert_eq!(
            recount_day(&rules, ok, day, &leaves).unwrap(),
            Tally { good: 0, total: 1 }
        );
    }

    #[test]
    fn slices_are_recounted_with_empty_ones_judged_by_the_no_data_policy() {
        let doc = "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme}\nspec:\n  service: chat\n  \
                   window: {calendar: month, timeZone: UTC}\n  policy: {noData: {slices: bad}}\n  objectives:\n    \
                   - name: hours\n      target: 99%\n      timeSlices: {sliceLength: 1h, budgeting: Timeslices, \
                   sliceTarget: 50%, ratio: {good: \"status < 500\"}}\n";
        let d = SlaDefinition::from_document(doc).unwrap();
        let maintenance = [period("2026-11-10T05:00:00Z", "2026-11-10T07:00:00Z")];
        let rules = rules(&d, &maintenance, "2026-11-12T00:00:00Z");
        let day = period("2026-11-10T00:00:00Z", "2026-11-11T00:00:00Z");
        let leaves = [
            // 01h: one good of two (50%, good); 02h: one bad (bad).
            leaf("2026-11-10T01:00:00Z", "2026-11-10T01:00:00Z", 200, 1),
            leaf("2026-11-10T01:30:00Z", "2026-11-10T01:30:00Z", 503, 1),
            leaf("2026-11-10T02:10:00Z", "2026-11-10T02:10:00Z", 503, 1),
            // Under maintenance: its hour is neither judged nor missing.
            leaf("2026-11-10T05:10:00Z", "2026-11-10T05:10:00Z", 503, 1),
        ];
        let hours = d.objective("hours").unwrap();
        // 24 hours: 1 good, 1 bad, 2 maintained, 20 without data (bad).
        assert_eq!(
            recount_day(&rules, hours, day, &leaves).unwrap(),
            Tally { good: 1, total: 22 }
        );
    }
}
