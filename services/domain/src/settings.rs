//! A configuration setting that breaks its rule: the one error every crate's settings section answers with.

/// A setting that breaks its rule; `key` is its full configuration path
/// (`evaluator.batch`), so the operator knows what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {rule}")]
pub struct SettingsError {
    pub key: &'static str,
    pub rule: String,
}

impl SettingsError {
    pub fn new(key: &'static str, rule: impl Into<String>) -> Self {
        Self {
            key,
            rule: rule.into(),
        }
    }
}
