//! The walk over an OTLP/JSON export: serde visitors that follow the
//! messages' objects by field name and count what serde buffers, without
//! keeping anything.

use serde::de::Error as _;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::Field::{self, Fixed, Many, ManyText, One, Text, Varints};
use super::{Estimate, Msg, Vectors, fields, malformed, size, too_many};
use crate::budget::heap;
use crate::problem::IngestProblem;

/// The error a too-long JSON export ends with, told apart from the others.
const TOO_MANY: &str = "slaproof: too many items";

/// Sizes an OTLP/JSON export whose root message is `root`.
pub(crate) fn estimate(root: Msg, body: &[u8]) -> Result<Estimate, IngestProblem> {
    let mut sized = Estimate {
        items: 0,
        bytes: size(root),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let walked = MsgSeed {
        msg: root,
        buffered: 0,
        sized: &mut sized,
    }
    .deserialize(&mut de);
    match walked {
        Ok(()) => Ok(sized),
        Err(e) if e.to_string().starts_with(TOO_MANY) => Err(too_many(root)),
        Err(e) => Err(malformed(root, true, &e.to_string())),
    }
}

/// The size of serde's buffered value (`Content`): a tag and a string or
/// vector.
const CONTENT: usize = 32;

/// Whether a key of `msg`'s JSON object is buffered by serde before it is
/// decoded: messages with a `flatten`ed member buffer every key but their
/// named fields.
fn buffered_key(msg: Msg, key: &str) -> bool {
    let named: &[&str] = match msg {
        Msg::AnyValue => &[],
        Msg::Metric => &["name", "description", "unit", "metadata"],
        Msg::NumberPoint => &[
            "attributes",
            "startTimeUnixNano",
            "timeUnixNano",
            "exemplars",
            "flags",
        ],
        Msg::Exemplar => &["filteredAttributes", "timeUnixNano", "spanId", "traceId"],
        _ => return false,
    };
    !named.contains(&key)
}

/// One OTLP/JSON message, `buffered` times buffered by serde first.
struct MsgSeed<'s> {
    msg: Msg,
    buffered: usize,
    sized: &'s mut Estimate,
}

impl<'de> DeserializeSeed<'de> for MsgSeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A key of a message's object: its field, if the message has one by that
/// name, and whether serde buffers its value.
struct KeySeed(Msg);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (Option<(u32, Field)>, bool, usize);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = (Option<(u32, Field)>, bool, usize);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
        let field = fields(self.0)
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(t, _, f)| (*t, *f));
        Ok((field, buffered_key(self.0, name), name.len()))
    }
}

impl<'de> Visitor<'de> for MsgSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an OTLP/JSON {:?} object", self.msg)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut vectors = Vectors::default();
        while let Some((field, buffered_key, key_len)) = map.next_key_seed(KeySeed(self.msg))? {
            let buffered = self.buffered + usize::from(buffered_key);
            // Each buffered entry: a key and a value in a growing vector.
            self.sized.add(buffered * (4 * CONTENT + heap(key_len)));
            match field {
                Some((_, One(child))) => map.next_value_seed(MsgSeed {
                    msg: child,
                    buffered,
                    sized: self.sized,
                })?,
                Some((tag, Many(child))) => {
                    let n = map.next_value_seed(ManySeed {
                        msg: child,
                        buffered,
                        sized: self.sized,
                    })?;
                    vectors.add(tag, size(child), n);
                }
                Some((tag, field @ (Text | ManyText | Fixed | Varints))) => {
                    let n = map.next_value_seed(ValueSeed {
                        buffered,
                        sized: self.sized,
                    })?;
                    match field {
                        ManyText => vectors.add(tag, size_of::<String>(), n),
                        Fixed | Varints => vectors.add(tag, 8, n),
                        _ => {}
                    }
                }
                None if buffered > 0 => {
                    map.next_value_seed(ValueSeed {
                        buffered,
                        sized: self.sized,
                    })?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.sized.add(vectors.bytes());
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(A::Error::custom(format_args!(
            "a {:?} is written as an array; OTLP/JSON messages are objects",
            self.msg
        )))
    }

    // Anything else (null, a wrong type) is for the decoder to judge; it
    // allocates nothing here.
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// A repeated message field: each element counted, then walked; its
/// number of elements.
struct ManySeed<'s> {
    msg: Msg,
    buffered: usize,
    sized: &'s mut Estimate,
}

impl<'de> DeserializeSeed<'de> for ManySeed<'_> {
    type Value = usize;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ManySeed<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an array of OTLP/JSON {:?}", self.msg)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        loop {
            let element = ElementSeed {
                msg: self.msg,
                buffered: self.buffered,
                sized: self.sized,
            };
            if seq.next_element_seed(element)?.is_none() {
                return Ok(n);
            }
            n += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<usize, A::Error> {
        // Not an array: the decoder refuses it; what serde buffers of it
        // before saying so is counted.
        ValueSeed {
            buffered: self.buffered,
            sized: self.sized,
        }
        .visit_map(map)
    }

    fn visit_unit<E>(self) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_none<E>(self) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_bool<E>(self, _: bool) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_i64<E>(self, _: i64) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_u64<E>(self, _: u64) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_f64<E>(self, _: f64) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_str<E>(self, _: &str) -> Result<usize, E> {
        Ok(0)
    }
}

/// One element of a repeated message field: counted (413 past
/// [`MAX_ITEMS`](crate::body::MAX_ITEMS)), then walked.
struct ElementSeed<'s> {
    msg: Msg,
    buffered: usize,
    sized: &'s mut Estimate,
}

impl<'de> DeserializeSeed<'de> for ElementSeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.sized.item(self.msg).is_err() {
            return Err(D::Error::custom(TOO_MANY));
        }
        self.sized.add(self.buffered * 2 * CONTENT);
        MsgSeed {
            msg: self.msg,
            buffered: self.buffered,
            sized: self.sized,
        }
        .deserialize(d)
    }
}

/// Any other value: a string (its decoded copy, plus serde's buffered
/// copies), an array of strings or numbers (its number of elements), or a
/// value serde buffers whole.
struct ValueSeed<'s> {
    buffered: usize,
    sized: &'s mut Estimate,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = usize;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a value")
    }

    fn visit_str<E>(self, s: &str) -> Result<usize, E> {
        self.sized.add((1 + self.buffered) * heap(s.len()));
        Ok(1)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        loop {
            self.sized.add(self.buffered * 2 * CONTENT);
            let element = ValueSeed {
                buffered: self.buffered,
                sized: self.sized,
            };
            if seq.next_element_seed(element)?.is_none() {
                return Ok(n);
            }
            n += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        loop {
            let key = ValueSeed {
                buffered: self.buffered,
                sized: self.sized,
            };
            if map.next_key_seed(key)?.is_none() {
                return Ok(0);
            }
            self.sized.add(self.buffered * 4 * CONTENT);
            map.next_value_seed(ValueSeed {
                buffered: self.buffered,
                sized: self.sized,
            })?;
        }
    }

    fn visit_unit<E>(self) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_none<E>(self) -> Result<usize, E> {
        Ok(0)
    }
    fn visit_bool<E>(self, _: bool) -> Result<usize, E> {
        Ok(1)
    }
    fn visit_i64<E>(self, _: i64) -> Result<usize, E> {
        Ok(1)
    }
    fn visit_u64<E>(self, _: u64) -> Result<usize, E> {
        Ok(1)
    }
    fn visit_f64<E>(self, _: f64) -> Result<usize, E> {
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_counts_what_serde_buffers() {
        // Unknown fields of an attribute value are read whole by serde.
        let junk = format!("[{}]", vec!["{}"; 10_000].join(","));
        let body = format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"k","value":{{"junk":{junk}}}}}]}}}}]}}"#
        );
        let sized = estimate(Msg::TraceRequest, body.as_bytes()).unwrap();
        assert!(sized.bytes > 10_000 * 2 * CONTENT, "{}", sized.bytes);
        // The same junk where serde skips it costs nothing.
        let skipped = format!(r#"{{"resourceSpans":[{{"junk":{junk}}}]}}"#);
        let sized = estimate(Msg::TraceRequest, skipped.as_bytes()).unwrap();
        assert!(sized.bytes < 4096, "{}", sized.bytes);
    }
}
