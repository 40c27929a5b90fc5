//! Loading a YAML or JSON document into a tree with a budget of values, so that anchors and aliases cannot expand a small document into gigabytes.
//!
//! The YAML parser replays an alias's events each time the alias is used,
//! as the tree is built; counting values as they are built and refusing
//! past the budget stops the expansion there, with the memory of at most
//! the budget's values. `serde_yaml_ng`'s own guard counts alias jumps,
//! not the values they expand to.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A count of values left to build, shared by the documents of one text.
pub(crate) struct Budget {
    left: Cell<usize>,
    limit: usize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            left: Cell::new(limit),
            limit,
        }
    }

    /// Builds the next document's tree, or says the budget ran out.
    pub(crate) fn load<'de, D: Deserializer<'de>>(&self, de: D) -> Result<Value, D::Error> {
        Node(self).deserialize(de)
    }

    fn spend<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(format!(
                "the document expands to more than {} values (each use of a YAML alias counts its values again): an SLA is a page, not a data set",
                self.limit
            ))),
        }
    }
}

/// One value of the tree, built against the budget.
#[derive(Clone, Copy)]
struct Node<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML or JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.spend()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        self.deserialize(de)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.spend()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.spend()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// A map's key: text (a number or boolean key is written as text, as
/// `serde_json::Value` has only text keys).
#[derive(Clone, Copy)]
struct Key<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<String, D::Error> {
        match Node(self.0).deserialize(de)? {
            Value::String(s) => Ok(s),
            Value::Null => Ok("null".to_owned()),
            other => Ok(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str, limit: usize) -> Result<Value, String> {
        let budget = Budget::new(limit);
        let de = serde_yaml_ng::Deserializer::from_str(text);
        budget.load(de).map_err(|e| e.to_string())
    }

    #[test]
    fn a_document_within_the_budget_is_the_tree_serde_json_would_build() {
        let text = "a: [1, -2, 2.5, true, null, x]\nb: {c: d}\n3: three\n";
        let expected: Value = serde_yaml_ng::from_str(text).unwrap();
        assert_eq!(load(text, 100).unwrap(), expected);
    }

    #[test]
    fn aliases_count_each_time_they_are_used() {
        // Found in review: K scalars under an anchor and M aliases to it
        // expand to K × M values (3×10⁸ at the 1 MiB cap).
        let k = 1_000;
        let m = 1_000;
        let scalars: Vec<String> = (0..k).map(|i| i.to_string()).collect();
        let aliases = vec!["*a"; m].join(", ");
        let text = format!("base: &a [{}]\nbomb: [{aliases}]\n", scalars.join(", "));
        let err = load(&text, 300_000).unwrap_err();
        assert!(err.contains("expands to more than 300000 values"), "{err}");
        // The same anchor used a few times is fine.
        let few = format!("base: &a [{}]\nuses: [*a, *a]\n", scalars.join(", "));
        assert!(load(&few, 300_000).is_ok());
    }
}
