//! A path-tracking reader over a parsed YAML/JSON tree, so that every problem names its field.

use serde_json::{Map, Value};

use super::error::Problems;

/// A value and where it sits in the document.
#[derive(Debug, Clone)]
pub(crate) struct Node<'a> {
    pub value: &'a Value,
    pub path: String,
}

/// A mapping whose keys were checked against the allowed ones.
#[derive(Debug, Clone)]
pub(crate) struct Obj<'a> {
    map: &'a Map<String, Value>,
    pub path: String,
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "nothing".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("{n}"),
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// How many single-character edits turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

impl<'a> Node<'a> {
    pub(super) fn root(value: &'a Value, path: impl Into<String>) -> Self {
        Self {
            value,
            path: path.into(),
        }
    }

    /// The node as a mapping with only `allowed` keys; an unknown key is
    /// reported (a typo must not silently weaken an SLA). With `lenient`,
    /// unknown keys are skipped instead.
    pub(super) fn object(
        &self,
        allowed: &[&str],
        lenient: bool,
        p: &mut Problems,
    ) -> Option<Obj<'a>> {
        let Value::Object(map) = self.value else {
            p.push(
                &self.path,
                format!("must be a mapping, got {}", describe(self.value)),
            );
            return None;
        };
        if !lenient {
            for key in map.keys() {
                if allowed.contains(&key.as_str()) {
                    continue;
                }
                let near = allowed
                    .iter()
                    .filter(|a| edit_distance(a, key) <= 2)
                    .min_by_key(|a| edit_distance(a, key));
                let rule = match near {
                    Some(near) => format!("unknown key: did you mean `{near}`?"),
                    None => format!("unknown key: expected one of {}", allowed.join(", ")),
                };
                p.push(&join(&self.path, key), rule);
            }
        }
        Some(Obj {
            map,
            path: self.path.clone(),
        })
    }

    pub(super) fn str(&self, p: &mut Problems) -> Option<&'a str> {
        match self.value {
            Value::String(s) => Some(s),
            other => {
                p.push(&self.path, format!("must be text, got {}", describe(other)));
                None
            }
        }
    }

    /// A number or numeric text, as written, for exact reading.
    pub(super) fn number_text(&self, p: &mut Problems) -> Option<String> {
        match self.value {
            Value::Number(n) => Some(n.to_string()),
            Value::String(s) => Some(s.clone()),
            other => {
                p.push(
                    &self.path,
                    format!("must be a number, got {}", describe(other)),
                );
                None
            }
        }
    }

    /// A number (not text).
    pub(super) fn number(&self, p: &mut Problems) -> Option<String> {
        match self.value {
            Value::Number(n) => Some(n.to_string()),
            other => {
                p.push(
                    &self.path,
                    format!("must be a number, got {}", describe(other)),
                );
                None
            }
        }
    }

    pub(super) fn bool(&self, p: &mut Problems) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(*b),
            other => {
                p.push(
                    &self.path,
                    format!("must be true or false, got {}", describe(other)),
                );
                None
            }
        }
    }

    pub(super) fn list(&self, p: &mut Problems) -> Option<Vec<Node<'a>>> {
        match self.value {
            Value::Array(items) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Node {
                        value: v,
                        path: format!("{}[{i}]", self.path),
                    })
                    .collect(),
            ),
            other => {
                p.push(
                    &self.path,
                    format!("must be a list, got {}", describe(other)),
                );
                None
            }
        }
    }
}

impl<'a> Obj<'a> {
    /// The value at `key`, unless missing or null.
    pub(super) fn get(&self, key: &str) -> Option<Node<'a>> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some(Node {
                value,
                path: join(&self.path, key),
            }),
        }
    }

    /// The value at `key`, reporting it as required when missing.
    pub(super) fn required(&self, key: &str, p: &mut Problems) -> Option<Node<'a>> {
        let node = self.get(key);
        if node.is_none() {
            p.push(&join(&self.path, key), "is required");
        }
        node
    }

    pub(super) fn path_of(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Required text at `key`.
    pub(super) fn req_str(&self, key: &str, p: &mut Problems) -> Option<&'a str> {
        self.required(key, p).and_then(|n| n.str(p))
    }

    /// Optional free text at `key`, at most `max` characters, not blank.
    pub(super) fn opt_text(&self, key: &str, max: usize, p: &mut Problems) -> Option<String> {
        let node = self.get(key)?;
        let s = node.str(p)?;
        check_text(&node.path, s, max, p)
    }

    /// The raw map, for lenient reads (labels, annotations).
    pub(super) fn map(&self) -> &'a Map<String, Value> {
        self.map
    }
}

/// Checks free text: not blank, at most `max` characters, no control characters but newlines and tabs.
pub(crate) fn check_text(path: &str, s: &str, max: usize, p: &mut Problems) -> Option<String> {
    let count = s.chars().count();
    if s.trim().is_empty() {
        p.push(path, "must not be blank");
        return None;
    }
    if count > max {
        p.push(
            path,
            format!("must be at most {max} characters, got {count}"),
        );
        return None;
    }
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        p.push(path, "must not contain control characters");
        return None;
    }
    Some(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_keys() {
        assert_eq!(edit_distance("displayNme", "displayName"), 1);
        let v: Value = serde_json::json!({"displayNme": "x"});
        let mut p = Problems::default();
        Node::root(&v, "metadata").object(&["name", "displayName"], false, &mut p);
        assert_eq!(p.0[0].path, "metadata.displayNme");
        assert_eq!(p.0[0].rule, "unknown key: did you mean `displayName`?");
    }
}
