//! The filter language's lexer and recursive-descent parser, with the error messages they give.

use super::{CmpOp, Comparison, Expr, FIELD_NAMES, Field, FieldType, FilterError, Literal};
use crate::event::EventSource;

/// Parses filter text (its length already checked) into an expression,
/// refusing anything after it but the end of the filter.
pub(super) fn expression(text: &str) -> Result<Expr, FilterError> {
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
    Ok(expr)
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
pub(super) fn join(items: Vec<Expr>, or: bool) -> Expr {
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
