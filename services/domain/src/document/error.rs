//! Errors in SLA documents: every problem found, each with the path of the field and the rule it broke.

use std::fmt;

/// One problem in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentProblem {
    /// Where: `spec.objectives[1].targetPercent`; empty for the document as a whole.
    pub path: String,
    /// What rule failed: `must be below 100, got 100.5`.
    pub rule: String,
}

impl fmt::Display for DocumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.rule)
        } else {
            write!(f, "{}: {}", self.path, self.rule)
        }
    }
}

/// Why a document is not a valid SLA: all the problems found, not just the
/// first, so that one round of edits can fix them all. Displayed one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DefinitionError {
    pub problems: Vec<DocumentProblem>,
}

impl DefinitionError {
    /// An error with one problem.
    pub fn single(path: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            problems: vec![DocumentProblem {
                path: path.into(),
                rule: rule.into(),
            }],
        }
    }

    /// Whether some problem is at `path` and its rule contains `needle`.
    pub fn has(&self, path: &str, needle: &str) -> bool {
        self.problems
            .iter()
            .any(|p| p.path == path && p.rule.contains(needle))
    }
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Collects problems while a document is read.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub Vec<DocumentProblem>);

impl Problems {
    pub(crate) fn push(&mut self, path: &str, rule: impl Into<String>) {
        self.0.push(DocumentProblem {
            path: path.to_owned(),
            rule: rule.into(),
        });
    }

    /// `Ok(value)` when nothing went wrong.
    pub(crate) fn finish<T>(self, value: Option<T>) -> Result<T, DefinitionError> {
        match value {
            Some(v) if self.0.is_empty() => Ok(v),
            _ if self.0.is_empty() => {
                Err(DefinitionError::single("", "document is not a valid SLA"))
            }
            _ => Err(DefinitionError { problems: self.0 }),
        }
    }

    /// Records a `Result`'s error at `path`; returns its value.
    pub(crate) fn check<T, E: fmt::Display>(
        &mut self,
        path: &str,
        result: Result<T, E>,
    ) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(path, e.to_string());
                None
            }
        }
    }
}
