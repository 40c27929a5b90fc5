//! Attribution: which values of a dimension (model, status, customer, an event attribute such as region) carried an objective's bad events, tallied from events already classified; the one rule the API's breakdown and any later reader share.

use std::collections::HashMap;

use crate::objective::EventVerdict;

/// What to break an objective's events down by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dimension {
    Model,
    Status,
    ErrorClass,
    Source,
    Streaming,
    /// The customer the request served (its reference): on a service-wide
    /// SLA, whose requests went bad. The provider's to see.
    Customer,
    /// A free attribute of the event (`attr.region`), numeric or text.
    Attr(String),
}

impl Dimension {
    /// The longest attribute name `attr.<name>` takes.
    pub const MAX_ATTR_NAME: usize = 64;

    /// Reads `model`, `status`, `error_class`, `source`, `streaming`,
    /// `customer` or `attr.<name>` (`<name>`: letters, digits, `_`, `-`,
    /// `.`, at most [`Self::MAX_ATTR_NAME`]).
    pub fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "model" => Self::Model,
            "status" => Self::Status,
            "error_class" => Self::ErrorClass,
            "source" => Self::Source,
            "streaming" => Self::Streaming,
            "customer" => Self::Customer,
            _ => match text.strip_prefix("attr.") {
                Some(name)
                    if !name.is_empty()
                        && name.len() <= Self::MAX_ATTR_NAME
                        && name.bytes().all(|b| {
                            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
                        }) =>
                {
                    Self::Attr(name.to_owned())
                }
                _ => {
                    return Err(format!(
                        "must be one of model, status, error_class, source, streaming, customer or attr.<name> \
                         (<name>: letters, digits, _, - and ., at most {} characters), got {text:?}",
                        Self::MAX_ATTR_NAME
                    ));
                }
            },
        })
    }

    /// The name [`Self::parse`] reads back.
    pub fn name(&self) -> String {
        match self {
            Self::Model => "model".into(),
            Self::Status => "status".into(),
            Self::ErrorClass => "error_class".into(),
            Self::Source => "source".into(),
            Self::Streaming => "streaming".into(),
            Self::Customer => "customer".into(),
            Self::Attr(name) => format!("attr.{name}"),
        }
    }
}

/// One value of a dimension and the counted events that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contribution {
    /// `None`: events without the dimension.
    pub value: Option<String>,
    pub bad: u64,
    pub total: u64,
}

/// Counted events tallied by the value of one dimension.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    by_value: HashMap<Option<String>, (u64, u64)>,
}

impl Attribution {
    /// Counts one event's verdict under `value`; an event the objective
    /// does not count is left out, as the verdict leaves it out.
    pub fn add(&mut self, value: Option<String>, verdict: EventVerdict) {
        if verdict == EventVerdict::NotCounted {
            return;
        }
        let entry = self.by_value.entry(value).or_default();
        entry.0 += u64::from(verdict == EventVerdict::Bad);
        entry.1 += 1;
    }

    /// How many distinct values were seen.
    pub fn values(&self) -> usize {
        self.by_value.len()
    }

    /// Bad and counted events over every value.
    pub fn totals(&self) -> (u64, u64) {
        self.by_value
            .values()
            .fold((0, 0), |(b, t), (bad, total)| (b + bad, t + total))
    }

    /// The `limit` values with the most bad events; ties go to the value
    /// with more counted events, then to the value's order (no value first),
    /// so the answer is the same every time.
    pub fn top(&self, limit: usize) -> Vec<Contribution> {
        let mut out: Vec<Contribution> = self
            .by_value
            .iter()
            .map(|(value, (bad, total))| Contribution {
                value: value.clone(),
                bad: *bad,
                total: *total,
            })
            .collect();
        out.sort_by(|a, b| {
            b.bad
                .cmp(&a.bad)
                .then(b.total.cmp(&a.total))
                .then(a.value.cmp(&b.value))
        });
        out.truncate(limit);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_read_back_their_names() {
        for name in [
            "model",
            "status",
            "error_class",
            "source",
            "streaming",
            "customer",
            "attr.region",
            "attr.a-b_c.d",
        ] {
            assert_eq!(Dimension::parse(name).unwrap().name(), name);
        }
        for bad in [
            "",
            "attr.",
            "attr.re gion",
            "region",
            "attr.é",
            &format!("attr.{}", "x".repeat(65)),
        ] {
            let err = Dimension::parse(bad).unwrap_err();
            assert!(err.contains("must be one of"), "{err}");
        }
    }

    #[test]
    fn the_most_bad_events_come_first_and_uncounted_events_are_left_out() {
        let mut a = Attribution::default();
        let v = |s: &str| Some(s.to_owned());
        for _ in 0..3 {
            a.add(v("small"), EventVerdict::Bad);
        }
        for _ in 0..5 {
            a.add(v("big"), EventVerdict::Bad);
            a.add(v("big"), EventVerdict::Good);
        }
        a.add(None, EventVerdict::Bad);
        a.add(v("other"), EventVerdict::NotCounted);
        // "tie" has as many bad as "small" but more counted events.
        for _ in 0..3 {
            a.add(v("tie"), EventVerdict::Bad);
        }
        a.add(v("tie"), EventVerdict::Good);
        assert_eq!(a.values(), 4);
        assert_eq!(a.totals(), (12, 18));
        let top = a.top(3);
        let got: Vec<_> = top
            .iter()
            .map(|c| (c.value.as_deref(), c.bad, c.total))
            .collect();
        assert_eq!(
            got,
            [
                (Some("big"), 5, 10),
                (Some("tie"), 3, 4),
                (Some("small"), 3, 3)
            ]
        );
        assert_eq!(a.top(10).last().unwrap().value, None);
    }
}
