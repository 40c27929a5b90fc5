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

/// Checks that setting `key` is within `min..=max`, naming both bounds when
/// it is not.
pub fn within(key: &'static str, value: u64, min: u64, max: u64) -> Result<(), SettingsError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(SettingsError::new(
            key,
            format!("must be between {min} and {max}, got {value}"),
        ))
    }
}
