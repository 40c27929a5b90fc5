//! Unit tests of filter parsing, evaluation and printing, with round-trip properties.

use super::parse::join;
use super::*;
use crate::event::{EventSource, EventView};
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
    let f =
        EventFilter::parse("(status<500) and (( streaming==true and input_tokens<=4096))").unwrap();
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
