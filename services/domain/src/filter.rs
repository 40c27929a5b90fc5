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
//! `error_class != "timeout"` holds for it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::event::{EventFields, EventSource};

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
        let tokens = lex(text)?;
        let mut parser = Parser {
            tokens,
            at: 0,
            depth: 0,
        };
        let expr = parser.or()?;
        let next = parser.peek();
        if next.kind != TokenKind::End {
            return Err(parser.error_at(
                next.clone(),
                format!(
                    "expected `and`, `or` or the end of the filter, found {}",
                    next.describe()
                ),
            ));
        }
        Ok(Self { expr })
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

#[derive(Debug, Clone, PartialEq)]
enum TokenKind {
    Ident(String),
    Text(String),
    Number(f64),
    Op(CmpOp),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    End,
}

#[derive(Debug, Clone)]
struct Token {
    kind: TokenKind,
    column: usize,
}

impl Token {
    fn describe(&self) -> String {
        match &self.kind {
            TokenKind::Ident(s) => format!("`{s}`"),
            TokenKind::Text(s) => format!("the string {}", Literal::Text(s.clone())),
            TokenKind::Number(n) => format!("the number {n}"),
            TokenKind::Op(op) => format!("`{op}`"),
            TokenKind::LParen => "`(`".into(),
            TokenKind::RParen => "`)`".into(),
            TokenKind::LBracket => "`[`".into(),
            TokenKind::RBracket => "`]`".into(),
            TokenKind::Comma => "`,`".into(),
            TokenKind::End => "the end of the filter".into(),
        }
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(&self.kind, TokenKind::Ident(s) if s == word)
    }
}

fn lex(text: &str) -> Result<Vec<Token>, FilterError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let fail = |column: usize, message: String| Err(FilterError { column, message });
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let single = match c {
            '(' => Some(TokenKind::LParen),
            ')' => Some(TokenKind::RParen),
            '[' => Some(TokenKind::LBracket),
            ']' => Some(TokenKind::RBracket),
            ',' => Some(TokenKind::Comma),
            _ => None,
        };
        if let Some(kind) = single {
            tokens.push(Token { kind, column });
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        if matches!(c, '=' | '!' | '<' | '>') {
            let (op, len) = match (c, next) {
                ('=', Some('=')) => (CmpOp::Eq, 2),
                ('!', Some('=')) => (CmpOp::Ne, 2),
                ('<', Some('=')) => (CmpOp::Le, 2),
                ('>', Some('=')) => (CmpOp::Ge, 2),
                ('<', _) => (CmpOp::Lt, 1),
                ('>', _) => (CmpOp::Gt, 1),
                ('=', _) => return fail(column, "expected `==`, found a single `=`".into()),
                _ => return fail(column, "expected `!=`; to negate, write `not`".into()),
            };
            tokens.push(Token {
                kind: TokenKind::Op(op),
                column,
            });
            i += len;
            continue;
        }
        if c == '"' {
            let mut value = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        return fail(
                            column,
                            "unterminated string: expected a closing `\"`".into(),
                        );
                    }
                    Some('"') => break,
                    Some('\\') => {
                        let escaped = match chars.get(i + 1) {
                            Some('"') => '"',
                            Some('\\') => '\\',
                            Some('n') => '\n',
                            Some('t') => '\t',
                            _ => {
                                return fail(
                                    i + 1,
                                    "unknown escape: expected \\\", \\\\, \\n or \\t".into(),
                                );
                            }
                        };
                        value.push(escaped);
                        i += 2;
                    }
                    Some(&ch) => {
                        value.push(ch);
                        i += 1;
                    }
                }
            }
            i += 1;
            tokens.push(Token {
                kind: TokenKind::Text(value),
                column,
            });
            continue;
        }
        if c.is_ascii_digit() || (c == '-' && next.is_some_and(|n| n.is_ascii_digit())) {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let raw: String = chars[start..i].iter().collect();
            if i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                return fail(
                    column,
                    format!(
                        "expected a plain number (milliseconds for latencies, no units), found `{raw}{}`",
                        chars[i]
                    ),
                );
            }
            let number = match raw.parse::<f64>() {
                Ok(n) if n.is_finite() => n,
                _ => return fail(column, format!("`{raw}` is not a number")),
            };
            // `-0` and `0` are the same value; keep one spelling.
            let number = if number == 0.0 { 0.0 } else { number };
            tokens.push(Token {
                kind: TokenKind::Number(number),
                column,
            });
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            tokens.push(Token {
                kind: TokenKind::Ident(chars[start..i].iter().collect()),
                column,
            });
            continue;
        }
        return fail(column, format!("unexpected character `{c}`"));
    }
    tokens.push(Token {
        kind: TokenKind::End,
        column: chars.len() + 1,
    });
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

impl Parser {
    fn peek(&self) -> Token {
        // The lexer always ends with `End`, and `bump` never passes it.
        self.tokens[self.at.min(self.tokens.len() - 1)].clone()
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        if self.at < self.tokens.len() - 1 {
            self.at += 1;
        }
        t
    }

    fn error_at(&self, token: Token, message: String) -> FilterError {
        FilterError {
            column: token.column,
            message,
        }
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut items = vec![self.and()?];
        while self.peek().is_word("or") {
            self.bump();
            items.push(self.and()?);
        }
        Ok(join(items, true))
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut items = vec![self.unary()?];
        while self.peek().is_word("and") {
            self.bump();
            items.push(self.unary()?);
        }
        Ok(join(items, false))
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        let token = self.peek();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_at(
                token,
                format!("filter nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        let result = if token.is_word("not") {
            self.bump();
            self.unary().map(|e| Expr::Not(Box::new(e)))
        } else if token.kind == TokenKind::LParen {
            self.bump();
            let inner = self.or()?;
            let close = self.bump();
            if close.kind != TokenKind::RParen {
                return Err(self.error_at(
                    close.clone(),
                    format!(
                        "expected `)` to close the `(` at column {}, found {}",
                        token.column,
                        close.describe()
                    ),
                ));
            }
            Ok(inner)
        } else {
            self.comparison().map(Expr::Test)
        };
        self.depth -= 1;
        result
    }

    fn comparison(&mut self) -> Result<Comparison, FilterError> {
        let token = self.bump();
        let TokenKind::Ident(name) = &token.kind else {
            return Err(self.error_at(
                token.clone(),
                format!("expected a field, `not` or `(`, found {}", token.describe()),
            ));
        };
        if ["and", "or", "in", "true", "false"].contains(&name.as_str()) {
            return Err(self.error_at(
                token.clone(),
                format!("expected a field, `not` or `(`, found `{name}`"),
            ));
        }
        let Some(field) = Field::from_name(name) else {
            let hint = if name.starts_with("attr.") {
                "attribute names start with a letter or `_` and hold letters, digits, `_` and `.`"
                    .to_owned()
            } else {
                format!("expected one of {FIELD_NAMES}")
            };
            return Err(self.error_at(token.clone(), format!("unknown field `{name}`: {hint}")));
        };
        let ty = field.field_type();
        let op_token = self.bump();
        match op_token.kind {
            TokenKind::Op(op) => {
                if matches!(ty, FieldType::Text | FieldType::Source | FieldType::Bool)
                    && !matches!(op, CmpOp::Eq | CmpOp::Ne)
                {
                    let allowed = if ty == FieldType::Bool {
                        "== or !="
                    } else {
                        "==, != or in"
                    };
                    return Err(self.error_at(
                        op_token,
                        format!(
                            "`{op}` cannot compare `{field}`, which is {}: use {allowed}",
                            describe_type(ty)
                        ),
                    ));
                }
                let value = self.literal(&field, &op_token)?;
                Ok(Comparison::Compare { field, op, value })
            }
            TokenKind::Ident(ref w) if w == "in" => {
                if ty == FieldType::Bool {
                    return Err(self.error_at(
                        op_token,
                        format!("`in` cannot test `{field}`, which is true or false: use == or !="),
                    ));
                }
                let open = self.bump();
                if open.kind != TokenKind::LBracket {
                    return Err(self.error_at(
                        open.clone(),
                        format!("expected `[` after `in`, found {}", open.describe()),
                    ));
                }
                let mut values = Vec::new();
                loop {
                    if self.peek().kind == TokenKind::RBracket && values.is_empty() {
                        let t = self.peek();
                        return Err(
                            self.error_at(t, "expected at least one value in `[...]`".into())
                        );
                    }
                    values.push(self.literal(&field, &op_token)?);
                    let sep = self.bump();
                    match sep.kind {
                        TokenKind::Comma => continue,
                        TokenKind::RBracket => break,
                        _ => {
                            return Err(self.error_at(
                                sep.clone(),
                                format!("expected `,` or `]`, found {}", sep.describe()),
                            ));
                        }
                    }
                }
                Ok(Comparison::In { field, values })
            }
            _ => Err(self.error_at(
                op_token.clone(),
                format!(
                    "expected an operator (==, !=, <, <=, >, >=, in) after `{field}`, found {}",
                    op_token.describe()
                ),
            )),
        }
    }

    fn literal(&mut self, field: &Field, after: &Token) -> Result<Literal, FilterError> {
        let token = self.bump();
        let ty = field.field_type();
        let value = match (&token.kind, ty) {
            (TokenKind::Text(s), FieldType::Text) => Literal::Text(s.clone()),
            (TokenKind::Text(s), FieldType::Source) if s.parse::<EventSource>().is_ok() => {
                Literal::Text(s.clone())
            }
            (TokenKind::Number(n), FieldType::Number) => Literal::Number(*n),
            (TokenKind::Ident(w), FieldType::Bool) if w == "true" || w == "false" => {
                Literal::Bool(w == "true")
            }
            _ => {
                let expected = match ty {
                    FieldType::Text => "a string in double quotes",
                    FieldType::Source => "\"provider\" or \"probe\"",
                    FieldType::Bool => "true or false",
                    FieldType::Number => "a number",
                };
                let after = match &after.kind {
                    TokenKind::Op(op) => format!("`{op}`"),
                    _ => "`in`".to_owned(),
                };
                return Err(self.error_at(
                    token.clone(),
                    format!(
                        "expected {expected} for `{field}` after {after}, found {}",
                        token.describe()
                    ),
                ));
            }
        };
        Ok(value)
    }
}

fn describe_type(ty: FieldType) -> &'static str {
    match ty {
        FieldType::Text => "text",
        FieldType::Source => "\"provider\" or \"probe\"",
        FieldType::Bool => "true or false",
        FieldType::Number => "a number",
    }
}

/// Joins operands, flattening nested operands of the same kind so that
/// `(a and b) and c` and `a and b and c` are one filter.
fn join(items: Vec<Expr>, or: bool) -> Expr {
    let mut flat = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Expr::Or(inner) if or => flat.extend(inner),
            Expr::And(inner) if !or => flat.extend(inner),
            other => flat.push(other),
        }
    }
    if flat.len() == 1 {
        // Checked: exactly one element.
        return flat.pop().unwrap_or(Expr::And(Vec::new()));
    }
    if or { Expr::Or(flat) } else { Expr::And(flat) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventView;
    use proptest::prelude::*;

    fn event() -> EventView {
        let mut e = EventView {
            service: Some("chat".into()),
            model: Some("gpt-4o".into()),
            status: Some(200),
            source: Some(EventSource::Provider),
            streaming: Some(true),
            latency_us: Some(812_500),
            ttft_us: Some(120_000),
            input_tokens: Some(4096),
            output_tokens: Some(300),
            ..EventView::default()
        };
        e.attrs.insert("cache_hit".into(), 1.0);
        e
    }

    fn check(filter: &str) -> bool {
        EventFilter::parse(filter).unwrap().matches(&event())
    }

    #[test]
    fn evaluates_each_field() {
        assert!(check("input_tokens <= 4096 and status < 500"));
        assert!(!check("input_tokens < 4096"));
        assert!(check(r#"model in ["gpt-4o", "llama-3"]"#));
        assert!(check("streaming == true"));
        assert!(
            check(r#"error_class != "timeout""#),
            "a missing field is unequal to everything"
        );
        assert!(!check(r#"error_class == "timeout""#));
        assert!(!check(r#"error_class in ["timeout"]"#));
        assert!(check("attr.cache_hit == 1"));
        assert!(!check("attr.missing == 1"));
        assert!(check("attr.missing != 1"));
        assert!(check(r#"source == "provider" and service == "chat""#));
        assert!(check("latency_ms > 812.4 and latency_ms <= 812.5"));
        assert!(check("ttft_ms == 120 and output_tokens >= 300"));
        assert!(check("tpot_ms != 3"));
        assert!(check("not (status >= 500 or streaming == false)"));
        assert!(check(
            "status == 500 or status == 200 and model == \"gpt-4o\""
        ));
    }

    #[test]
    fn refuses_type_errors_with_column() {
        let e = EventFilter::parse("model < 3").unwrap_err();
        assert_eq!(e.column, 7);
        assert!(e.message.contains("cannot compare `model`"), "{e}");
        let e = EventFilter::parse("status == \"500\"").unwrap_err();
        assert_eq!(e.column, 11);
        assert!(e.message.contains("expected a number for `status`"), "{e}");
        let e = EventFilter::parse("source == \"gateway\"").unwrap_err();
        assert!(e.message.contains("\"provider\" or \"probe\""), "{e}");
        let e = EventFilter::parse("streaming in [true]").unwrap_err();
        assert_eq!(e.column, 11);
    }

    #[test]
    fn refuses_syntax_errors_saying_what_was_expected() {
        let cases = [
            ("input_tokens <=", 16, "expected a number"),
            ("status < 500 and", 17, "expected a field"),
            ("(status < 500", 14, "expected `)`"),
            ("status = 500", 8, "expected `==`"),
            ("foo == 1", 1, "unknown field `foo`"),
            ("status 500", 8, "expected an operator"),
            ("status < 500 status", 14, "expected `and`, `or`"),
            ("model in []", 11, "at least one value"),
            ("model in [\"a\" \"b\"]", 15, "expected `,` or `]`"),
            ("latency_ms < 3s", 14, "plain number"),
            ("model == \"abc", 10, "unterminated"),
            ("", 1, "expected a field"),
            ("status < 500 & x", 14, "unexpected character"),
        ];
        for (text, column, needle) in cases {
            let e = EventFilter::parse(text).unwrap_err();
            assert_eq!(e.column, column, "{text}: {e}");
            assert!(e.message.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn display_is_canonical() {
        let f = EventFilter::parse("(a_b_c == 1)").unwrap_err();
        assert!(f.message.contains("unknown field"));
        let f = EventFilter::parse("(status<500) and (( streaming==true and input_tokens<=4096))")
            .unwrap();
        assert_eq!(
            f.to_string(),
            "status < 500 and streaming == true and input_tokens <= 4096"
        );
        let f = EventFilter::parse(
            "not (status == 1 or status == 2) and (model == \"a\" or model == \"b\")",
        )
        .unwrap();
        assert_eq!(
            f.to_string(),
            "not (status == 1 or status == 2) and (model == \"a\" or model == \"b\")"
        );
        let f = EventFilter::parse(r#"error_class == "say \"hi\"\\""#).unwrap();
        assert_eq!(EventFilter::parse(&f.to_string()).unwrap(), f);
    }

    #[test]
    fn serde_uses_the_text() {
        let f = EventFilter::parse("status < 500").unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), "\"status < 500\"");
        let back: EventFilter = serde_json::from_str("\"status < 500\"").unwrap();
        assert_eq!(back, f);
        assert!(serde_json::from_str::<EventFilter>("\"status <\"").is_err());
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let text = format!("{}status == 1{}", "(".repeat(500), ")".repeat(500));
        assert!(
            EventFilter::parse(&text)
                .unwrap_err()
                .message
                .contains("nests deeper")
        );
        let text = format!("{}status == 1", "not ".repeat(500));
        assert!(EventFilter::parse(&text).is_err());
    }

    fn arb_literal(ty: FieldType) -> BoxedStrategy<Literal> {
        match ty {
            FieldType::Text => "[a-z\"\\\\ \n-]{0,8}".prop_map(Literal::Text).boxed(),
            FieldType::Source => prop_oneof![Just("provider"), Just("probe")]
                .prop_map(|s| Literal::Text(s.into()))
                .boxed(),
            FieldType::Bool => any::<bool>().prop_map(Literal::Bool).boxed(),
            FieldType::Number => prop_oneof![
                (-1_000_000i64..1_000_000).prop_map(|n| n as f64),
                (-1e9f64..1e9).prop_filter("not zero", |n| *n != 0.0),
            ]
            .prop_map(Literal::Number)
            .boxed(),
        }
    }

    fn arb_comparison() -> impl Strategy<Value = Comparison> {
        let fields = vec![
            Field::Service,
            Field::Model,
            Field::Status,
            Field::ErrorClass,
            Field::Source,
            Field::Streaming,
            Field::LatencyMs,
            Field::TtftMs,
            Field::TpotMs,
            Field::InputTokens,
            Field::OutputTokens,
            Field::Attr("cache_hit".into()),
            Field::Attr("quality.score_v2".into()),
        ];
        (proptest::sample::select(fields), 0usize..6, any::<bool>()).prop_flat_map(
            |(field, op, use_in)| {
                let ty = field.field_type();
                let ops = match ty {
                    FieldType::Number => vec![
                        CmpOp::Eq,
                        CmpOp::Ne,
                        CmpOp::Lt,
                        CmpOp::Le,
                        CmpOp::Gt,
                        CmpOp::Ge,
                    ],
                    _ => vec![CmpOp::Eq, CmpOp::Ne],
                };
                let op = ops[op % ops.len()];
                if use_in && ty != FieldType::Bool {
                    proptest::collection::vec(arb_literal(ty), 1..4)
                        .prop_map(move |values| Comparison::In {
                            field: field.clone(),
                            values,
                        })
                        .boxed()
                } else {
                    arb_literal(ty)
                        .prop_map(move |value| Comparison::Compare {
                            field: field.clone(),
                            op,
                            value,
                        })
                        .boxed()
                }
            },
        )
    }

    fn arb_expr() -> impl Strategy<Value = Expr> {
        arb_comparison()
            .prop_map(Expr::Test)
            .prop_recursive(4, 24, 4, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 2..4).prop_map(|v| join(v, true)),
                    proptest::collection::vec(inner.clone(), 2..4).prop_map(|v| join(v, false)),
                    inner.prop_map(|e| Expr::Not(Box::new(e))),
                ]
            })
    }

    proptest! {
        #[test]
        fn display_parses_back_to_the_same_filter(expr in arb_expr()) {
            let filter = EventFilter { expr };
            let text = filter.to_string();
            let back = EventFilter::parse(&text);
            prop_assert!(back.is_ok(), "{text}: {back:?}");
            prop_assert_eq!(back.unwrap(), filter);
        }

        #[test]
        fn parse_never_panics(text in "[a-z_.\"\\[\\]()<>=!, 0-9-]{0,40}") {
            let _ = EventFilter::parse(&text);
        }

        #[test]
        fn parse_never_panics_on_any_text(text in "\\PC{0,40}") {
            let _ = EventFilter::parse(&text);
        }
    }
}
