//! Event filters: a small expression language over event fields (`input_tokens <= 4096 and status < 500`).
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! filter     = or
//! or         = and { "or" and }
//! and        = unary { "and" unary }
//! unary      = "not" unary | "(" or ")" | comparison
//! comparison = field op literal | field "in" "[" literal { "," literal } "]"
//! op         = "==" | "!=" | "<" | "<=" | ">" | ">="
//! literal    = "string" | number | true | false
//! ```
//!
//! Fields and what they compare with:
//!
//! | field | type | operators |
//! |---|---|---|
//! | `service`, `model`, `error_class` | text | `==` `!=` `in` |
//! | `source` | `"provider"` or `"probe"` | `==` `!=` `in` |
//! | `streaming` | `true` / `false` | `==` `!=` |
//! | `status`, `input_tokens`, `output_tokens` | number | all |
//! | `latency_ms`, `ttft_ms`, `tpot_ms` | number of milliseconds | all |
//! | `attr.<name>` | number | all |
//!
//! An event that lacks a field (no `error_class` on a success) fails every
//! comparison on it except `!=`: a success *is* not a timeout, so
//! `error_class != "timeout"` holds for it. (A ratio's `bad:` filter adds
//! one rule on top: an event that got no answer is bad whatever the filter
//! says; see [`crate::objective::no_answer`].)

mod parse;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::event::EventFields;

/// Why a filter does not parse: where, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct FilterError {
    /// 1-based character column in the filter text.
    pub column: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

/// A field of an event that filters can test.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Field {
    Service,
    Model,
    Status,
    ErrorClass,
    Source,
    Streaming,
    LatencyMs,
    TtftMs,
    TpotMs,
    InputTokens,
    OutputTokens,
    /// A free numeric attribute, by name (without the `attr.` prefix).
    Attr(String),
}

/// What a field holds, which decides the operators and literals it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Source,
    Bool,
    Number,
}

const FIELD_NAMES: &str = "service, model, status, error_class, source, streaming, latency_ms, ttft_ms, \
                           tpot_ms, input_tokens, output_tokens, attr.<name>";

/// Whether `name` can follow `attr.`: a letter or `_`, then letters, digits,
/// `_` or `.`, at most 64 characters.
pub fn is_valid_attr_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && name.len() <= 64
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        && !name.ends_with('.')
}

impl Field {
    /// Resolves a field name as written in a filter.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "service" => Self::Service,
            "model" => Self::Model,
            "status" => Self::Status,
            "error_class" => Self::ErrorClass,
            "source" => Self::Source,
            "streaming" => Self::Streaming,
            "latency_ms" => Self::LatencyMs,
            "ttft_ms" => Self::TtftMs,
            "tpot_ms" => Self::TpotMs,
            "input_tokens" => Self::InputTokens,
            "output_tokens" => Self::OutputTokens,
            _ => {
                let attr = name.strip_prefix("attr.")?;
                if !is_valid_attr_name(attr) {
                    return None;
                }
                Self::Attr(attr.to_owned())
            }
        })
    }

    /// The type of the field's values.
    pub const fn field_type(&self) -> FieldType {
        match self {
            Self::Service | Self::Model | Self::ErrorClass => FieldType::Text,
            Self::Source => FieldType::Source,
            Self::Streaming => FieldType::Bool,
            Self::Status
            | Self::LatencyMs
            | Self::TtftMs
            | Self::TpotMs
            | Self::InputTokens
            | Self::OutputTokens
            | Self::Attr(_) => FieldType::Number,
        }
    }

    fn number_of(&self, event: &impl EventFields) -> Option<f64> {
        // Latencies are stored in whole microseconds; IEEE division rounds
        // monotonically, so `latency_ms <= x` keeps its order.
        let ms = |us: Option<u64>| us.map(|us| us as f64 / 1000.0);
        match self {
            Self::Status => event.status().map(f64::from),
            Self::LatencyMs => ms(event.latency_us()),
            Self::TtftMs => ms(event.ttft_us()),
            Self::TpotMs => ms(event.tpot_us()),
            Self::InputTokens => event.input_tokens().map(|v| v as f64),
            Self::OutputTokens => event.output_tokens().map(|v| v as f64),
            Self::Attr(name) => event.attr(name),
            _ => None,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Service => "service",
            Self::Model => "model",
            Self::Status => "status",
            Self::ErrorClass => "error_class",
            Self::Source => "source",
            Self::Streaming => "streaming",
            Self::LatencyMs => "latency_ms",
            Self::TtftMs => "ttft_ms",
            Self::TpotMs => "tpot_ms",
            Self::InputTokens => "input_tokens",
            Self::OutputTokens => "output_tokens",
            Self::Attr(name) => return write!(f, "attr.{name}"),
        })
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    const fn symbol(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
        }
    }

    fn holds<T: PartialOrd>(self, left: &T, right: &T) -> bool {
        match self {
            Self::Eq => left == right,
            Self::Ne => left != right,
            Self::Lt => left < right,
            Self::Le => left <= right,
            Self::Gt => left > right,
            Self::Ge => left >= right,
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// A value written in a filter, already checked against its field's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Text(String),
    Number(f64),
    Bool(bool),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(s) => {
                f.write_str("\"")?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("\"")
            }
            // `f64`'s Display is the shortest text that parses back to it.
            Self::Number(n) => write!(f, "{n}"),
            Self::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// One test of one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparison {
    /// `field op literal`
    Compare {
        field: Field,
        op: CmpOp,
        value: Literal,
    },
    /// `field in [a, b, …]`
    In { field: Field, values: Vec<Literal> },
}

/// A filter expression. `And` and `Or` hold at least two operands and never
/// an operand of their own kind, so that printing and parsing agree.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    Test(Comparison),
}

impl Expr {
    fn matches(&self, event: &impl EventFields) -> bool {
        match self {
            Self::Or(items) => items.iter().any(|e| e.matches(event)),
            Self::And(items) => items.iter().all(|e| e.matches(event)),
            Self::Not(inner) => !inner.matches(event),
            Self::Test(c) => c.matches(event),
        }
    }

    fn fmt_in(&self, f: &mut fmt::Formatter<'_>, parent_binds_tighter: bool) -> fmt::Result {
        match self {
            Self::Or(items) | Self::And(items) => {
                let (joiner, is_or) = match self {
                    Self::Or(_) => (" or ", true),
                    _ => (" and ", false),
                };
                let paren = parent_binds_tighter && (is_or || matches!(self, Self::And(_)));
                if paren {
                    f.write_str("(")?;
                }
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(joiner)?;
                    }
                    // Under `and`, an `or` needs parentheses; under `or`, nothing does.
                    item.fmt_in(f, !is_or && matches!(item, Self::Or(_)))?;
                }
                if paren {
                    f.write_str(")")?;
                }
                Ok(())
            }
            // Always parenthesized: `not status >= 500` reads as if `not`
            // applied to `status`.
            Self::Not(inner) => {
                f.write_str("not (")?;
                inner.fmt_in(f, false)?;
                f.write_str(")")
            }
            Self::Test(c) => write!(f, "{c}"),
        }
    }
}

impl Comparison {
    fn field(&self) -> &Field {
        match self {
            Self::Compare { field, .. } | Self::In { field, .. } => field,
        }
    }

    fn matches(&self, event: &impl EventFields) -> bool {
        let field = self.field();
        let one = |value: &Literal, op: CmpOp| -> Option<bool> {
            Some(match (field.field_type(), value) {
                (FieldType::Text, Literal::Text(want)) => {
                    let have = match field {
                        Field::Service => event.service(),
                        Field::Model => event.model(),
                        _ => event.error_class(),
                    }?;
                    op.holds(&have, &want.as_str())
                }
                (FieldType::Source, Literal::Text(want)) => {
                    op.holds(&event.source()?.as_str(), &want.as_str())
                }
                (FieldType::Bool, Literal::Bool(want)) => op.holds(&event.streaming()?, want),
                (FieldType::Number, Literal::Number(want)) => {
                    op.holds(&field.number_of(event)?, want)
                }
                // Unreachable by construction: the parser checks types.
                _ => return Some(false),
            })
        };
        match self {
            // A missing field is unequal to every value.
            Self::Compare { op, value, .. } => one(value, *op).unwrap_or(*op == CmpOp::Ne),
            Self::In { values, .. } => values.iter().any(|v| one(v, CmpOp::Eq).unwrap_or(false)),
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Compare { field, op, value } => write!(f, "{field} {op} {value}"),
            Self::In { field, values } => {
                write!(f, "{field} in [")?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// A parsed event filter. Its `Display` is canonical and parses back to an
/// equal filter; serde uses that text.
#[derive(Debug, Clone, PartialEq)]
pub struct EventFilter {
    expr: Expr,
}

impl EventFilter {
    /// The longest filter accepted, so that a document cannot smuggle in a
    /// megabyte of expression that every event would pay for.
    pub const MAX_LEN: usize = 4096;

    /// Parses a filter, naming the column and what was expected on error.
    pub fn parse(text: &str) -> Result<Self, FilterError> {
        if text.chars().count() > Self::MAX_LEN {
            return Err(FilterError {
                column: Self::MAX_LEN + 1,
                message: format!("filter is longer than {} characters", Self::MAX_LEN),
            });
        }
        parse::expression(text).map(|expr| Self { expr })
    }

    /// Whether an event passes the filter.
    pub fn matches(&self, event: &impl EventFields) -> bool {
        self.expr.matches(event)
    }

    /// The expression, for callers that translate filters (e.g. to SQL).
    pub fn expr(&self) -> &Expr {
        &self.expr
    }
}

impl fmt::Display for EventFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt_in(f, false)
    }
}

impl FromStr for EventFilter {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Self, FilterError> {
        Self::parse(s)
    }
}

impl Serialize for EventFilter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EventFilter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}
