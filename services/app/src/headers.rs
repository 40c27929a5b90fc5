//! The one rule for headers a provider sets on requests slaproof sends for it (probes, webhook deliveries): names, values, what is reserved, how many.

use std::collections::BTreeMap;

/// What a kind of outgoing request allows.
pub(crate) struct HeaderRules {
    /// Headers at most.
    pub max: usize,
    /// The longest name and the longest value, in bytes.
    pub max_name_bytes: usize,
    pub max_value_bytes: usize,
    /// Names (lower-case) the platform or the connection owns.
    pub reserved: &'static [&'static str],
    /// A name prefix the platform owns (`webhook-`).
    pub reserved_prefix: Option<&'static str>,
    /// Whether a value may not begin or end with blanks (a receiver could
    /// not tell them from the framing).
    pub trimmed: bool,
}

/// Why headers were refused, with the name as given; never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderProblem {
    TooMany,
    /// Not an HTTP header name.
    BadName(String),
    /// Owned by the platform or the connection.
    Reserved(String),
    /// Not visible ASCII within the length.
    BadValue(String),
    /// Given twice, names being case-insensitive.
    Twice(String),
}

/// Checks `headers` against `rules`; answers them by lower-case name.
pub(crate) fn check(
    headers: &BTreeMap<String, String>,
    rules: &HeaderRules,
) -> Result<BTreeMap<String, String>, HeaderProblem> {
    if headers.len() > rules.max {
        return Err(HeaderProblem::TooMany);
    }
    let mut checked = BTreeMap::new();
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if http::HeaderName::from_bytes(lower.as_bytes()).is_err()
            || lower.len() > rules.max_name_bytes
        {
            return Err(HeaderProblem::BadName(name.clone()));
        }
        if rules.reserved.contains(&lower.as_str())
            || rules.reserved_prefix.is_some_and(|p| lower.starts_with(p))
        {
            return Err(HeaderProblem::Reserved(name.clone()));
        }
        if value.len() > rules.max_value_bytes
            || http::HeaderValue::from_str(value).is_err()
            || (rules.trimmed && value.trim() != value)
        {
            return Err(HeaderProblem::BadValue(name.clone()));
        }
        if checked.insert(lower, value.clone()).is_some() {
            return Err(HeaderProblem::Twice(name.clone()));
        }
    }
    Ok(checked)
}
