//! Numbers as the document form writes them: JSON numbers from decimal text, and floats without a needless `.0`.

use serde_json::Value;

/// A decimal text as a JSON number (integers stay integers).
pub(crate) fn number(text: &str) -> Value {
    if let Ok(n) = text.parse::<u64>() {
        return Value::from(n);
    }
    text.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A float as a JSON number, integers written without `.0`.
pub(crate) fn float(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        return Value::from(v as i64);
    }
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}
