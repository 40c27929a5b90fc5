//! Exact quantities of an SLA: targets in parts per million, composite weights, latency thresholds and spans.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::decimal::{Decimal, ScaleError, format_scaled};

/// Parts per million in a whole.
pub const PPM_PER_WHOLE: u32 = 1_000_000;

/// Why a quantity written in a document is refused; the message is the rule
/// that failed, ready to be prefixed with the field's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QuantityError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, QuantityError> {
    Err(QuantityError(msg.into()))
}

/// How a share is written: `99.9%` / `targetPercent: 99.9`, or as a fraction `0.999`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareNotation {
    /// A number of percent.
    Percent,
    /// A fraction of one.
    Fraction,
}

impl ShareNotation {
    const fn places(self) -> u32 {
        match self {
            Self::Percent => 4,
            Self::Fraction => 6,
        }
    }
    const fn whole(self) -> &'static str {
        match self {
            Self::Percent => "100",
            Self::Fraction => "1",
        }
    }
}

/// Reads a share into ppm, exactly; `allow_whole` admits 100%.
fn parse_share(
    text: &str,
    notation: ShareNotation,
    allow_whole: bool,
) -> Result<u32, QuantityError> {
    let Some(d) = Decimal::parse(text) else {
        return err(format!("must be a number, got {text:?}"));
    };
    let whole = notation.whole();
    let unit = match notation {
        ShareNotation::Percent => "0.0001 (1 ppm)",
        ShareNotation::Fraction => "0.000001 (1 ppm)",
    };
    if d.negative || d.is_zero() {
        return err(format!("must be above 0, got {}", text.trim()));
    }
    let ppm = match d.scaled(notation.places()) {
        Ok(v) => v,
        Err(ScaleError::TooPrecise) => {
            return err(format!(
                "must not be more precise than {unit}, got {}",
                text.trim()
            ));
        }
        Err(ScaleError::TooLarge) => u128::MAX,
    };
    let limit = u128::from(PPM_PER_WHOLE);
    if allow_whole && ppm > limit {
        return err(format!("must be at most {whole}, got {}", text.trim()));
    }
    if !allow_whole && ppm >= limit {
        return err(format!("must be below {whole}, got {}", text.trim()));
    }
    // Checked above: ppm <= 10^6.
    Ok(ppm as u32)
}

/// Reads `99.9%` as percent and `0.999` as a fraction.
fn parse_share_text(text: &str, allow_whole: bool) -> Result<u32, QuantityError> {
    let text = text.trim();
    match text.strip_suffix('%') {
        Some(p) => parse_share(p, ShareNotation::Percent, allow_whole),
        None => {
            let result = parse_share(text, ShareNotation::Fraction, allow_whole);
            // A bare `99.9` is almost surely a percentage missing its sign.
            match (&result, Decimal::parse(text)) {
                (Err(_), Some(d)) if !d.negative && d.scaled(6).is_ok_and(|v| v > 1_000_000) => {
                    err(format!(
                        "must be a fraction below 1 or a percentage such as \"{text}%\", got {text}"
                    ))
                }
                _ => result,
            }
        }
    }
}

fn format_percent(ppm: u32) -> String {
    format!("{}%", format_scaled(u128::from(ppm), 4))
}

/// The share of good events (or slices) an objective promises, in parts per
/// million: above 0 and below 100%, in steps of 1 ppm (`99.95%` = 999500).
///
/// 100% is refused: it leaves no error budget, and one bad request would
/// breach the SLA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetPpm(u32);

impl TargetPpm {
    /// Reads `99.9%` or the fraction `0.999`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        parse_share_text(text, false).map(Self)
    }

    /// Reads a number in the given notation (`targetPercent: 99.9`, `target: 0.999`).
    pub fn parse_in(text: &str, notation: ShareNotation) -> Result<Self, QuantityError> {
        parse_share(text, notation, false).map(Self)
    }

    /// From ppm, refusing 0 and 1000000 or more.
    pub fn from_ppm(ppm: u32) -> Result<Self, QuantityError> {
        if ppm == 0 || ppm >= PPM_PER_WHOLE {
            return err(format!("must be between 1 and 999999 ppm, got {ppm}"));
        }
        Ok(Self(ppm))
    }

    /// The target in parts per million.
    pub const fn ppm(self) -> u32 {
        self.0
    }

    /// The error budget: the share of events that may be bad, in ppm.
    pub const fn budget_ppm(self) -> u32 {
        PPM_PER_WHOLE - self.0
    }

    /// The target as a fraction, exact to 1 ppm (`0.9995`).
    pub fn fraction_text(self) -> String {
        format_scaled(u128::from(self.0), 6)
    }
}

impl fmt::Display for TargetPpm {
    /// `99.95%`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_percent(self.0))
    }
}

/// The share of good events that makes a time slice good, in ppm: above 0,
/// up to and including 100% (a slice may have to be flawless).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceTarget(u32);

impl SliceTarget {
    /// Reads `95%` or the fraction `0.95`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        parse_share_text(text, true).map(Self)
    }

    /// Reads a number in the given notation.
    pub fn parse_in(text: &str, notation: ShareNotation) -> Result<Self, QuantityError> {
        parse_share(text, notation, true).map(Self)
    }

    /// From ppm, refusing 0 and more than 1000000.
    pub fn from_ppm(ppm: u32) -> Result<Self, QuantityError> {
        if ppm == 0 || ppm > PPM_PER_WHOLE {
            return err(format!("must be between 1 and 1000000 ppm, got {ppm}"));
        }
        Ok(Self(ppm))
    }

    /// The slice target in parts per million.
    pub const fn ppm(self) -> u32 {
        self.0
    }

    /// The slice target as a fraction (`0.95`).
    pub fn fraction_text(self) -> String {
        format_scaled(u128::from(self.0), 6)
    }
}

impl fmt::Display for SliceTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_percent(self.0))
    }
}

macro_rules! share_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = NumberOrText::deserialize(d)?.0;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}
share_serde!(TargetPpm);
share_serde!(SliceTarget);

/// A number or a string, kept as its text so that it can be read exactly.
struct NumberOrText(String);

impl<'de> Deserialize<'de> for NumberOrText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Self(s)),
            serde_json::Value::Number(n) => Ok(Self(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected a number or a string, got {other}"
            ))),
        }
    }
}

/// How much an objective counts in the SLA's composite, exact to one
/// millionth: above 0 and at most 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompositeWeight(u64);

impl CompositeWeight {
    /// The largest weight, so that sums of weights × ppm stay far from overflow.
    pub const MAX_MICROS: u64 = 1_000 * 1_000_000;

    /// Reads a positive decimal such as `2` or `0.25`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let text = text.trim();
        let Some(d) = Decimal::parse(text) else {
            return err(format!("must be a number, got {text:?}"));
        };
        if d.negative || d.is_zero() {
            return err(format!("must be above 0, got {text}"));
        }
        match d.scaled(6) {
            Ok(v) if v <= u128::from(Self::MAX_MICROS) => Ok(Self(v as u64)),
            Ok(_) | Err(ScaleError::TooLarge) => err(format!("must be at most 1000, got {text}")),
            Err(ScaleError::TooPrecise) => err(format!(
                "must not be more precise than 0.000001, got {text}"
            )),
        }
    }

    /// The weight in millionths (`0.25` → 250000).
    pub const fn micros(self) -> u64 {
        self.0
    }

    /// The weight as the nearest `f64`, for charts only.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl Default for CompositeWeight {
    /// OpenSLO's default: every objective weighs 1.
    fn default() -> Self {
        Self(1_000_000)
    }
}

impl fmt::Display for CompositeWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_scaled(u128::from(self.0), 6))
    }
}

/// A latency-like duration in whole microseconds, as latency thresholds are
/// compared (`3.2s` = 3200000 µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Micros(u64);

impl Micros {
    /// The longest latency threshold accepted: one hour.
    pub const MAX: u64 = 3_600_000_000;

    /// Wraps a number of microseconds.
    pub const fn new(us: u64) -> Self {
        Self(us)
    }

    /// Reads `3.2s`, `800ms`, `250us` / `250µs`, or a bare number of milliseconds.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let t = text.trim();
        let (number, places, unit) = if let Some(n) = t.strip_suffix("ms") {
            (n, 3, "ms")
        } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
            (n, 0, "us")
        } else if let Some(n) = t.strip_suffix('s') {
            (n, 6, "s")
        } else {
            (t, 3, "ms")
        };
        Self::parse_number(number.trim(), places, unit, t)
    }

    /// Reads a number of milliseconds (`3200`, `0.5`).
    pub fn parse_millis(text: &str) -> Result<Self, QuantityError> {
        Self::parse_number(text.trim(), 3, "ms", text.trim())
    }

    fn parse_number(
        number: &str,
        places: u32,
        unit: &str,
        shown: &str,
    ) -> Result<Self, QuantityError> {
        let Some(d) = Decimal::parse(number) else {
            return err(format!(
                "must be a duration such as \"800ms\", \"3.2s\" or a number of milliseconds, got {shown:?}"
            ));
        };
        if d.negative {
            return err(format!("must not be negative, got {shown}"));
        }
        match d.scaled(places) {
            Ok(v) if v <= u128::from(Self::MAX) => Ok(Self(v as u64)),
            Ok(_) | Err(ScaleError::TooLarge) => {
                err(format!("must be at most 1 hour, got {shown}"))
            }
            Err(ScaleError::TooPrecise) => err(format!(
                "must be a whole number of microseconds, got {shown} ({unit})"
            )),
        }
    }

    /// The duration in microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// The duration in milliseconds, exactly (`0.5`, `3200`).
    pub fn millis_text(self) -> String {
        format_scaled(u128::from(self.0), 3)
    }
}

impl fmt::Display for Micros {
    /// Whole seconds and milliseconds read best: `3.2s` from one second up
    /// when exact to the millisecond, else `800ms`, `0.25ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000 && self.0.is_multiple_of(1000) {
            write!(f, "{}s", format_scaled(u128::from(self.0), 6))
        } else {
            write!(f, "{}ms", format_scaled(u128::from(self.0), 3))
        }
    }
}

/// The unit of a [`Span`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanUnit {
    /// `s`
    Second,
    /// `m`
    Minute,
    /// `h`
    Hour,
    /// `d`
    Day,
    /// `w`
    Week,
}

impl SpanUnit {
    const fn seconds(self) -> u64 {
        match self {
            Self::Second => 1,
            Self::Minute => 60,
            Self::Hour => 3600,
            Self::Day => 86_400,
            Self::Week => 604_800,
        }
    }
    const fn suffix(self) -> char {
        match self {
            Self::Second => 's',
            Self::Minute => 'm',
            Self::Hour => 'h',
            Self::Day => 'd',
            Self::Week => 'w',
        }
    }
}

/// A fixed length of time written as OpenSLO's duration shorthand (`28d`,
/// `1h`, `30m`, `2w`); kept as written so that documents round-trip.
///
/// Months, quarters and years (`1M`, `1Q`, `1Y`) are not fixed lengths and
/// are refused here: they are calendar windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    count: u32,
    unit: SpanUnit,
}

impl Span {
    /// Builds a span; `count` must be above 0.
    pub fn new(count: u32, unit: SpanUnit) -> Result<Self, QuantityError> {
        if count == 0 {
            return err("must be longer than 0");
        }
        Ok(Self { count, unit })
    }

    /// [`Span::new`] for constants: `None` for a count of 0.
    pub const fn new_const(count: u32, unit: SpanUnit) -> Option<Self> {
        if count == 0 {
            None
        } else {
            Some(Self { count, unit })
        }
    }

    /// Reads `28d`, `1h`, `30m`, `2w`, `90s`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let t = text.trim();
        let Some(suffix) = t.chars().last() else {
            return err("must be a duration such as \"28d\", \"1h\" or \"30m\", got \"\"");
        };
        let unit = match suffix {
            's' => SpanUnit::Second,
            'm' => SpanUnit::Minute,
            'h' => SpanUnit::Hour,
            'd' => SpanUnit::Day,
            'w' => SpanUnit::Week,
            'M' | 'Q' | 'Y' => {
                return err(format!(
                    "must be a fixed length in s, m, h, d or w; {t:?} is a calendar length: use a calendar window, or days such as \"30d\""
                ));
            }
            _ => {
                return err(format!(
                    "must be a duration such as \"28d\", \"1h\" or \"30m\", got {t:?}"
                ));
            }
        };
        let number = &t[..t.len() - suffix.len_utf8()];
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return err(format!(
                "must be a whole number followed by s, m, h, d or w, got {t:?}"
            ));
        }
        let Ok(count) = number.parse::<u32>() else {
            return err(format!("is too long, got {t:?}"));
        };
        Self::new(count, unit)
    }

    /// The span as a duration.
    pub fn duration(self) -> Duration {
        Duration::from_secs(self.seconds())
    }

    /// The span as a `chrono` duration (what the evaluator's instants
    /// add up with).
    pub fn chrono(self) -> chrono::Duration {
        chrono::Duration::seconds(i64::try_from(self.seconds()).unwrap_or(i64::MAX / 1000))
    }

    /// The span in seconds.
    pub const fn seconds(self) -> u64 {
        self.count as u64 * self.unit.seconds()
    }

    /// How many units.
    pub const fn count(self) -> u32 {
        self.count
    }

    /// Which unit.
    pub const fn unit(self) -> SpanUnit {
        self.unit
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.count, self.unit.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn targets_parse_exactly() {
        assert_eq!(TargetPpm::parse("99.9%").unwrap().ppm(), 999_000);
        assert_eq!(TargetPpm::parse("0.9995").unwrap().ppm(), 999_500);
        assert_eq!(TargetPpm::parse("99.9999%").unwrap().ppm(), 999_999);
        assert_eq!(
            TargetPpm::parse_in("99.95", ShareNotation::Percent)
                .unwrap()
                .ppm(),
            999_500
        );
    }

    #[test]
    fn targets_refuse_with_the_rule() {
        let e = |s: &str| TargetPpm::parse(s).unwrap_err().to_string();
        assert_eq!(e("100%"), "must be below 100, got 100");
        assert_eq!(e("100.5%"), "must be below 100, got 100.5");
        assert_eq!(e("0%"), "must be above 0, got 0");
        assert_eq!(e("-1%"), "must be above 0, got -1");
        assert!(
            e("99.99999%").contains("more precise than 0.0001"),
            "{}",
            e("99.99999%")
        );
        assert!(e("99.9").contains("\"99.9%\""), "{}", e("99.9"));
        assert_eq!(e("1"), "must be below 1, got 1");
        assert!(e("lots").contains("must be a number"));
    }

    #[test]
    fn slice_target_allows_whole() {
        assert_eq!(SliceTarget::parse("100%").unwrap().ppm(), 1_000_000);
        assert_eq!(SliceTarget::parse("1").unwrap().ppm(), 1_000_000);
        assert!(SliceTarget::parse("100.1%").is_err());
    }

    #[test]
    fn latencies_parse_to_micros() {
        assert_eq!(Micros::parse("3.2s").unwrap().as_micros(), 3_200_000);
        assert_eq!(Micros::parse("800ms").unwrap().as_micros(), 800_000);
        assert_eq!(Micros::parse("800").unwrap().as_micros(), 800_000);
        assert_eq!(Micros::parse("0.5").unwrap().as_micros(), 500);
        assert_eq!(Micros::parse("250us").unwrap().as_micros(), 250);
        assert!(Micros::parse("0.0001ms").is_err());
        assert!(Micros::parse("2h").is_err());
        assert_eq!(Micros::new(3_200_000).to_string(), "3.2s");
        assert_eq!(Micros::new(800_000).to_string(), "800ms");
        assert_eq!(Micros::new(250).to_string(), "0.25ms");
    }

    #[test]
    fn spans_parse() {
        assert_eq!(Span::parse("28d").unwrap().seconds(), 28 * 86_400);
        assert_eq!(Span::parse("30m").unwrap().to_string(), "30m");
        assert!(Span::parse("1M").unwrap_err().0.contains("calendar"));
        assert!(Span::parse("0d").is_err());
        assert!(Span::parse("d").is_err());
        assert!(Span::parse("1.5h").is_err());
    }

    #[test]
    fn weights_parse() {
        assert_eq!(CompositeWeight::parse("0.25").unwrap().micros(), 250_000);
        assert_eq!(CompositeWeight::parse("2").unwrap().to_string(), "2");
        assert!(CompositeWeight::parse("0").is_err());
        assert!(CompositeWeight::parse("1001").is_err());
    }

    proptest! {
        #[test]
        fn target_display_round_trips(ppm in 1u32..1_000_000) {
            let t = TargetPpm::from_ppm(ppm).unwrap();
            prop_assert_eq!(TargetPpm::parse(&t.to_string()).unwrap(), t);
            prop_assert_eq!(TargetPpm::parse(&t.fraction_text()).unwrap(), t);
        }

        #[test]
        fn target_parse_never_panics(s in "\\PC{0,20}") {
            let _ = TargetPpm::parse(&s);
        }

        #[test]
        fn percent_text_parses_to_scaled_value(int in 0u32..100, frac in 0u32..10_000) {
            let ppm = int * 10_000 + frac;
            let text = format!("{int}.{frac:04}%");
            let parsed = TargetPpm::parse(&text);
            if ppm == 0 { prop_assert!(parsed.is_err()); } else { prop_assert_eq!(parsed.unwrap().ppm(), ppm); }
        }

        #[test]
        fn micros_display_round_trips(us in 0u64..=Micros::MAX) {
            let m = Micros::new(us);
            prop_assert_eq!(Micros::parse(&m.to_string()).unwrap(), m);
            prop_assert_eq!(Micros::parse_millis(&m.millis_text()).unwrap(), m);
        }

        #[test]
        fn span_display_round_trips(count in 1u32..100_000, unit in 0usize..5) {
            let unit = [SpanUnit::Second, SpanUnit::Minute, SpanUnit::Hour, SpanUnit::Day, SpanUnit::Week][unit];
            let s = Span::new(count, unit).unwrap();
            prop_assert_eq!(Span::parse(&s.to_string()).unwrap(), s);
        }

        #[test]
        fn weight_display_round_trips(micros in 1u64..=CompositeWeight::MAX_MICROS) {
            let w = CompositeWeight::parse(&format_scaled(u128::from(micros), 6)).unwrap();
            prop_assert_eq!(w.micros(), micros);
            prop_assert_eq!(CompositeWeight::parse(&w.to_string()).unwrap(), w);
        }
    }
}
