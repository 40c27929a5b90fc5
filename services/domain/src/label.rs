//! Names people read (a tenant's display name, a customer's name, an ingest key's name): one rule for all of them.

use std::fmt;

/// A name shown to people: 1–200 characters once trimmed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Label(String);

/// Why a name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be 1-{max} characters", max = Label::MAX_CHARS)]
pub struct LabelError;

impl Label {
    /// The longest name accepted, in characters.
    pub const MAX_CHARS: usize = 200;

    /// The trimmed name, or why it is refused.
    pub fn parse(text: &str) -> Result<Self, LabelError> {
        let text = text.trim();
        if text.is_empty() || text.chars().count() > Self::MAX_CHARS {
            return Err(LabelError);
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_parsed_label_is_trimmed_and_within_bounds(text in "\\PC{0,260}") {
            match Label::parse(&text) {
                Ok(label) => {
                    prop_assert_eq!(label.as_str(), text.trim());
                    prop_assert!((1..=Label::MAX_CHARS).contains(&label.as_str().chars().count()));
                }
                Err(LabelError) => {
                    let n = text.trim().chars().count();
                    prop_assert!(n == 0 || n > Label::MAX_CHARS);
                }
            }
        }
    }

    #[test]
    fn the_refusal_names_the_rule() {
        assert_eq!(
            Label::parse("  ").unwrap_err().to_string(),
            "must be 1-200 characters"
        );
        assert_eq!(Label::parse(&"é".repeat(200)).unwrap().as_str().len(), 400);
    }
}
