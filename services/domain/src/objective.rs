//! Objectives and their SLIs: what counts as a good event, and the share of good events promised.

use std::fmt;

use crate::event::EventFields;
use crate::filter::EventFilter;
use crate::quantity::{CompositeWeight, Micros, QuantityError, SliceTarget, Span, TargetPpm};

/// Checks a slug: `[a-z0-9][a-z0-9-]{0,62}`.
pub(crate) fn check_slug(text: &str) -> Result<(), QuantityError> {
    let bytes = text.as_bytes();
    let ok_first = bytes
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok_rest = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if bytes.is_empty() {
        return Err(QuantityError("must not be empty".into()));
    }
    if bytes.len() > 63 {
        return Err(QuantityError(format!(
            "must be at most 63 characters, got {}",
            text.chars().count()
        )));
    }
    if !ok_first || !ok_rest {
        return Err(QuantityError(format!(
            "must be lowercase letters, digits and `-`, starting with a letter or digit (like \"p99-latency\"), got {text:?}"
        )));
    }
    Ok(())
}

macro_rules! slug_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Reads a slug: `[a-z0-9][a-z0-9-]{0,62}`.
            pub fn parse(text: &str) -> Result<Self, $crate::quantity::QuantityError> {
                $crate::objective::check_slug(text).map(|()| Self(text.to_owned()))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

slug_type! {
    /// The name of an objective, unique within its SLA (`p99-latency`).
    ObjectiveName
}

pub(crate) use slug_type;

/// One promise of an SLA: `target` of the SLI's events (or slices, or gauge
/// values) are good.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    pub name: ObjectiveName,
    pub display_name: Option<String>,
    pub description: Option<String>,
    /// The promised share of good events, slices or values.
    pub target: TargetPpm,
    /// The objective's weight in the SLA's composite; see
    /// [`crate::composite`]. `None` everywhere means the SLA has no composite.
    pub weight: Option<CompositeWeight>,
    pub sli: Sli,
}

impl Objective {
    /// `"ratio"`, `"threshold"`, `"time_slices"` or `"gauge"`.
    pub fn kind_name(&self) -> &'static str {
        self.sli.kind_name()
    }

    /// How the error budget is counted.
    pub fn budgeting_method(&self) -> BudgetingMethod {
        match &self.sli {
            Sli::Ratio(_) | Sli::Threshold(_) | Sli::Gauge(_) => BudgetingMethod::Occurrences,
            Sli::TimeSlices(t) => match t.budgeting {
                SliceBudgeting::Timeslices { .. } => BudgetingMethod::Timeslices,
                SliceBudgeting::RatioTimeslices => BudgetingMethod::RatioTimeslices,
            },
        }
    }

    /// The share of good events under which a minute is an incident minute,
    /// unless the contract says otherwise: the slice target of a time-slice
    /// objective judged by good slices (a slice at 97% is good against a
    /// 95% slice target, whatever share of good slices the period needs),
    /// else the objective's target.
    pub fn incident_floor_ppm(&self) -> u32 {
        match &self.sli {
            Sli::TimeSlices(TimeSlicesSli {
                budgeting: SliceBudgeting::Timeslices { slice_target },
                ..
            }) => slice_target.ppm(),
            _ => self.target.ppm(),
        }
    }

    /// The display name, or the name when there is none.
    pub fn title(&self) -> &str {
        self.display_name.as_deref().unwrap_or(self.name.as_str())
    }

    /// How one event counts for this objective. For time slices this is the
    /// event's verdict inside its slice; gauges are judged on their values,
    /// so every event is [`EventVerdict::NotCounted`] for them.
    pub fn classify(&self, event: &impl EventFields) -> EventVerdict {
        match &self.sli {
            Sli::Ratio(r) => r.classify(event),
            Sli::Threshold(t) => t.classify(event),
            Sli::TimeSlices(t) => match &t.indicator {
                SliceIndicator::Ratio(r) => r.classify(event),
                SliceIndicator::Threshold(th) => th.classify(event),
            },
            Sli::Gauge(_) => EventVerdict::NotCounted,
        }
    }
}

/// How the error budget of an objective is counted (OpenSLO's `budgetingMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetingMethod {
    /// Good events over all events.
    Occurrences,
    /// Good slices over all slices; a slice is good when its ratio meets the slice target.
    Timeslices,
    /// The mean of the slices' ratios.
    RatioTimeslices,
}

impl BudgetingMethod {
    /// OpenSLO's name (`Occurrences`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Occurrences => "Occurrences",
            Self::Timeslices => "Timeslices",
            Self::RatioTimeslices => "RatioTimeslices",
        }
    }
}

impl fmt::Display for BudgetingMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one event counts for an objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventVerdict {
    /// Outside the SLI's population (filtered out, or lacking the measured field).
    NotCounted,
    Good,
    Bad,
}

/// What an objective measures.
#[derive(Debug, Clone, PartialEq)]
pub enum Sli {
    Ratio(RatioSli),
    Threshold(ThresholdSli),
    TimeSlices(TimeSlicesSli),
    Gauge(GaugeSli),
}

impl Sli {
    /// `"ratio"`, `"threshold"`, `"time_slices"` or `"gauge"`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Ratio(_) => "ratio",
            Self::Threshold(_) => "threshold",
            Self::TimeSlices(_) => "time_slices",
            Self::Gauge(_) => "gauge",
        }
    }
}

/// Which events a ratio counts in its numerator.
#[derive(Debug, Clone, PartialEq)]
pub enum RatioCount {
    /// Events matching the filter are good; the others bad.
    Good(EventFilter),
    /// Events matching the filter are bad; the others good, except an
    /// event that got no answer (see [`no_answer`]), which is bad whatever
    /// the filter says.
    Bad(EventFilter),
}

/// Whether an event failed without an answer: an `error_class` and no
/// `status` (a timeout, a refused connection, a probe that never got a
/// reply, an error span without an HTTP status).
///
/// A `bad:` filter lists failures by what they answered (`status >= 500`);
/// an event with no answer matches none of its comparisons on `status`,
/// so by the filter alone it would count as good, and a provider whose
/// endpoint stopped answering would look perfect. Having no answer is a
/// failure, so a `bad:` ratio counts it bad. A `good:` filter needs no
/// such rule (`status < 500` does not hold without a status) and may
/// still forgive what it names (`status < 500 or error_class ==
/// "timeout"`); a `total:` filter may leave such events out altogether.
pub fn no_answer(event: &impl EventFields) -> bool {
    event.status().is_none() && event.error_class().is_some()
}

/// Good events over total events (`status < 500` over all requests).
#[derive(Debug, Clone, PartialEq)]
pub struct RatioSli {
    pub count: RatioCount,
    /// Which events are counted at all; `None` counts every event of the
    /// SLA's service.
    pub total: Option<EventFilter>,
}

impl RatioSli {
    /// How one event of the SLA's service counts.
    pub fn classify(&self, event: &impl EventFields) -> EventVerdict {
        if self.total.as_ref().is_some_and(|t| !t.matches(event)) {
            return EventVerdict::NotCounted;
        }
        let good = match &self.count {
            RatioCount::Good(f) => f.matches(event),
            RatioCount::Bad(f) => !f.matches(event) && !no_answer(event),
        };
        if good {
            EventVerdict::Good
        } else {
            EventVerdict::Bad
        }
    }
}

/// A field with a threshold, measured per event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MeasuredField {
    /// End-to-end latency.
    Latency,
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// A free numeric attribute.
    Attr(String),
}

impl MeasuredField {
    /// Reads `latency`, `ttft`, `tpot` (or with `_ms`), or `attr.<name>`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        match text {
            "latency" | "latency_ms" => Ok(Self::Latency),
            "ttft" | "ttft_ms" => Ok(Self::Ttft),
            "tpot" | "tpot_ms" => Ok(Self::Tpot),
            _ => match text.strip_prefix("attr.") {
                Some(name) if crate::filter::is_valid_attr_name(name) => {
                    Ok(Self::Attr(name.to_owned()))
                }
                _ => Err(QuantityError(format!(
                    "must be one of latency, ttft, tpot or attr.<name>, got {text:?}"
                ))),
            },
        }
    }

    /// Whether values are durations (thresholds in microseconds).
    pub const fn is_duration(&self) -> bool {
        !matches!(self, Self::Attr(_))
    }

    /// The name in the native format (`latency`, `attr.quality`).
    pub fn native_name(&self) -> String {
        match self {
            Self::Latency => "latency".into(),
            Self::Ttft => "ttft".into(),
            Self::Tpot => "tpot".into(),
            Self::Attr(name) => format!("attr.{name}"),
        }
    }

    /// The name of the event field in filters (`latency_ms`, `attr.quality`).
    pub fn filter_name(&self) -> String {
        match self {
            Self::Latency => "latency_ms".into(),
            Self::Ttft => "ttft_ms".into(),
            Self::Tpot => "tpot_ms".into(),
            Self::Attr(name) => format!("attr.{name}"),
        }
    }
}

/// How a measured value compares with its threshold to be good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThresholdOp {
    /// Good at or under the threshold (latencies: an event exactly at it is good).
    Lte,
    Lt,
    /// Good at or over the threshold (quality scores).
    Gte,
    Gt,
}

impl ThresholdOp {
    /// Reads `lte`, `lt`, `gte` or `gt`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        match text {
            "lte" => Ok(Self::Lte),
            "lt" => Ok(Self::Lt),
            "gte" => Ok(Self::Gte),
            "gt" => Ok(Self::Gt),
            _ => Err(QuantityError(format!(
                "must be one of lte, lt, gte, gt; got {text:?}"
            ))),
        }
    }

    /// The name in documents.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Lte => "lte",
            Self::Lt => "lt",
            Self::Gte => "gte",
            Self::Gt => "gt",
        }
    }

    /// Whether `value` is good against `threshold`.
    pub fn is_good<T: PartialOrd>(self, value: T, threshold: T) -> bool {
        match self {
            Self::Lte => value <= threshold,
            Self::Lt => value < threshold,
            Self::Gte => value >= threshold,
            Self::Gt => value > threshold,
        }
    }
}

impl fmt::Display for ThresholdOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A threshold, exact for durations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdValue {
    /// For latency, TTFT and TPOT: whole microseconds.
    Duration(Micros),
    /// For numeric attributes: compared as the events carry them.
    Number(f64),
}

impl fmt::Display for ThresholdValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Duration(d) => write!(f, "{d}"),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

/// "P99 latency ≤ 3.2 s": events of the SLA's service that match `filter`
/// and carry the field are good when `field op value` holds; the objective's
/// target (99%) is the share of them that must be good.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdSli {
    pub field: MeasuredField,
    pub op: ThresholdOp,
    pub value: ThresholdValue,
    pub filter: Option<EventFilter>,
}

impl ThresholdSli {
    /// How one event of the SLA's service counts. An event without a
    /// duration field that **timed out** ([`EventFields::timed_out`]) is bad
    /// for a "lower is good" threshold: it took longer than any threshold,
    /// and dropping it would let the slowest requests vanish from a latency
    /// promise. Other events without the field (no TTFT on a non-streaming
    /// call, a failure that reported no duration) are not counted.
    pub fn classify(&self, event: &impl EventFields) -> EventVerdict {
        if self.filter.as_ref().is_some_and(|f| !f.matches(event)) {
            return EventVerdict::NotCounted;
        }
        let good = match (&self.field, self.value) {
            (MeasuredField::Latency, ThresholdValue::Duration(t)) => {
                event.latency_us().map(|v| (v, t))
            }
            (MeasuredField::Ttft, ThresholdValue::Duration(t)) => event.ttft_us().map(|v| (v, t)),
            (MeasuredField::Tpot, ThresholdValue::Duration(t)) => event.tpot_us().map(|v| (v, t)),
            (MeasuredField::Attr(name), ThresholdValue::Number(t)) => {
                return match event.attr(name) {
                    Some(v) if self.op.is_good(v, t) => EventVerdict::Good,
                    Some(_) => EventVerdict::Bad,
                    None => EventVerdict::NotCounted,
                };
            }
            // Not built by the parsers: a duration field always has a duration threshold.
            _ => None,
        }
        .map(|(v, t)| self.op.is_good(v, t.as_micros()));
        match good {
            Some(true) => EventVerdict::Good,
            Some(false) => EventVerdict::Bad,
            None if matches!(self.op, ThresholdOp::Lte | ThresholdOp::Lt)
                && matches!(self.value, ThresholdValue::Duration(_))
                && event.timed_out() =>
            {
                EventVerdict::Bad
            }
            None => EventVerdict::NotCounted,
        }
    }
}

/// The SLI measured within each slice.
#[derive(Debug, Clone, PartialEq)]
pub enum SliceIndicator {
    Ratio(RatioSli),
    Threshold(ThresholdSli),
}

/// How slices make up the objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceBudgeting {
    /// A slice is good when its good share reaches `slice_target`; the
    /// objective's target is the share of good slices.
    Timeslices { slice_target: SliceTarget },
    /// The objective's target is the mean of the slices' good shares.
    RatioTimeslices,
}

/// "99.5% of minutes have at least 95% successful requests".
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSlicesSli {
    pub indicator: SliceIndicator,
    /// A whole number of minutes that divides a day; slices follow the
    /// window's time zone (local days and hours, see
    /// [`crate::slice_grid`]) and are whole groups of the evaluator's
    /// minute rollups.
    pub slice_length: Span,
    pub budgeting: SliceBudgeting,
}

impl TimeSlicesSli {
    /// Checks a slice length: whole minutes, at most a day, dividing a day.
    pub fn check_slice_length(length: Span) -> Result<Span, QuantityError> {
        let s = length.seconds();
        if s == 0 || !s.is_multiple_of(60) || s > 86_400 || !86_400u64.is_multiple_of(s) {
            return Err(QuantityError(format!(
                "must be a whole number of minutes that divides a day (1m, 5m, 10m, 15m, 30m, 1h, …, 1d), got {length}"
            )));
        }
        Ok(length)
    }

    /// Whether a slice with `good` of `total` events is good; `None` for an
    /// empty slice, which is left out rather than judged.
    pub fn slice_is_good(&self, good: u64, total: u64) -> Option<bool> {
        if total == 0 {
            return None;
        }
        let target = match self.budgeting {
            SliceBudgeting::Timeslices { slice_target } => slice_target.ppm(),
            // Without a slice target every slice carries its ratio; call it
            // good only when flawless.
            SliceBudgeting::RatioTimeslices => crate::quantity::PPM_PER_WHOLE,
        };
        Some(u128::from(good) * 1_000_000 >= u128::from(target) * u128::from(total))
    }
}

/// The name of a gauge metric delivered by callback (`quality_score`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GaugeName(String);

impl GaugeName {
    /// Reads `[a-z][a-z0-9_]{0,62}`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let b = text.as_bytes();
        let ok = b.first().is_some_and(u8::is_ascii_lowercase)
            && b.len() <= 63
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_');
        if !ok {
            return Err(QuantityError(format!(
                "must be lowercase letters, digits and `_`, starting with a letter, at most 63 characters, got {text:?}"
            )));
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GaugeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Values delivered later by callback (a quality score for a request, a
/// cache-hit ratio); each value is good when `value op threshold` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeSli {
    pub metric: GaugeName,
    pub op: ThresholdOp,
    pub threshold: f64,
}

impl GaugeSli {
    /// Whether a delivered value is good.
    pub fn is_good(&self, value: f64) -> bool {
        self.op.is_good(value, self.threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventView;
    use proptest::prelude::*;

    #[test]
    fn threshold_counts_an_event_at_the_threshold_as_good() {
        let sli = ThresholdSli {
            field: MeasuredField::Latency,
            op: ThresholdOp::Lte,
            value: ThresholdValue::Duration(Micros::new(3_200_000)),
            filter: None,
        };
        let at = |us| EventView {
            latency_us: Some(us),
            ..EventView::default()
        };
        assert_eq!(sli.classify(&at(3_200_000)), EventVerdict::Good);
        assert_eq!(sli.classify(&at(3_200_001)), EventVerdict::Bad);
        assert_eq!(
            sli.classify(&EventView::default()),
            EventVerdict::NotCounted
        );
    }

    #[test]
    fn ratio_with_bad_filter_and_total() {
        let sli = RatioSli {
            count: RatioCount::Bad(EventFilter::parse("status >= 500").unwrap()),
            total: Some(EventFilter::parse("source == \"provider\"").unwrap()),
        };
        let e = |status, source| EventView {
            status: Some(status),
            source: Some(source),
            ..EventView::default()
        };
        use crate::event::EventSource::*;
        assert_eq!(sli.classify(&e(200, Provider)), EventVerdict::Good);
        assert_eq!(sli.classify(&e(503, Provider)), EventVerdict::Bad);
        assert_eq!(sli.classify(&e(503, Probe)), EventVerdict::NotCounted);
    }

    #[test]
    fn an_event_without_an_answer_is_bad_under_a_bad_filter() {
        let failed = |error_class: &str| EventView {
            error_class: Some(error_class.to_owned()),
            ..EventView::default()
        };
        let bad = |filter: &str| RatioSli {
            count: RatioCount::Bad(EventFilter::parse(filter).unwrap()),
            total: None,
        };
        let good = |filter: &str| RatioSli {
            count: RatioCount::Good(EventFilter::parse(filter).unwrap()),
            total: None,
        };
        for class in ["timeout", "connect", "error"] {
            assert_eq!(
                bad("status >= 500").classify(&failed(class)),
                EventVerdict::Bad
            );
            assert_eq!(
                good("status < 500").classify(&failed(class)),
                EventVerdict::Bad
            );
        }
        // A good filter may forgive what it names.
        let forgiving = good("status < 500 or error_class == \"timeout\"");
        assert_eq!(forgiving.classify(&failed("timeout")), EventVerdict::Good);
        // An answer with an error class is judged by its status, and an
        // event with neither (no error) by the filter alone.
        let answered = EventView {
            status: Some(429),
            error_class: Some("rate_limited".to_owned()),
            ..EventView::default()
        };
        assert_eq!(bad("status >= 500").classify(&answered), EventVerdict::Good);
        assert_eq!(
            bad("status >= 500").classify(&EventView::default()),
            EventVerdict::Good
        );
    }

    #[test]
    fn slice_lengths() {
        for ok in ["1m", "5m", "1h", "1d", "30m"] {
            assert!(
                TimeSlicesSli::check_slice_length(Span::parse(ok).unwrap()).is_ok(),
                "{ok}"
            );
        }
        for bad in ["30s", "7m", "2d", "1w"] {
            assert!(
                TimeSlicesSli::check_slice_length(Span::parse(bad).unwrap()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn slice_verdicts_are_exact() {
        let sli = TimeSlicesSli {
            indicator: SliceIndicator::Ratio(RatioSli {
                count: RatioCount::Good(EventFilter::parse("status < 500").unwrap()),
                total: None,
            }),
            slice_length: Span::parse("1m").unwrap(),
            budgeting: SliceBudgeting::Timeslices {
                slice_target: SliceTarget::parse("95%").unwrap(),
            },
        };
        assert_eq!(sli.slice_is_good(95, 100), Some(true));
        assert_eq!(sli.slice_is_good(94, 100), Some(false));
        assert_eq!(sli.slice_is_good(0, 0), None);
    }

    proptest! {
        #[test]
        fn slug_parse_agrees_with_the_pattern(s in "[a-z0-9-]{0,70}") {
            let ok = !s.is_empty() && s.len() <= 63 && !s.starts_with('-');
            prop_assert_eq!(ObjectiveName::parse(&s).is_ok(), ok);
        }

        #[test]
        fn slug_parse_never_panics(s in "\\PC{0,70}") {
            let _ = ObjectiveName::parse(&s);
        }
    }
}
