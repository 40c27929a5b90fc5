//! Request bodies: gzip, the JSON-array and NDJSON batch formats, and the
//! split into one parse per event so that a bad event costs only itself.

use std::borrow::Cow;
use std::io::Read;

use axum::http::{HeaderMap, StatusCode, header};
use serde::de::{DeserializeOwned, DeserializeSeed, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::event::EventError;
use crate::problem::IngestProblem;

/// How the events of a body are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchFormat {
    /// `application/json`: one JSON array of events.
    JsonArray,
    /// `application/x-ndjson` (or `application/jsonl`): one event per line.
    Ndjson,
}

/// The media type of a request, lower case, without parameters.
pub(crate) fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

/// The batch format named by `Content-Type`.
pub(crate) fn batch_format(headers: &HeaderMap) -> Result<BatchFormat, IngestProblem> {
    match media_type(headers).as_deref() {
        Some("application/json") => Ok(BatchFormat::JsonArray),
        Some("application/x-ndjson" | "application/ndjson" | "application/jsonl") => {
            Ok(BatchFormat::Ndjson)
        }
        other => Err(IngestProblem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported media type",
        )
        .with_detail(format!(
            "send application/json (an array of events) or application/x-ndjson (one event per line), got {}",
            other.unwrap_or("no Content-Type")
        ))),
    }
}

/// The body with its `Content-Encoding` undone. Decompressed bodies are
/// held to `max_decoded` bytes, so a small gzip bomb cannot take memory.
pub(crate) fn decode<'a>(
    headers: &HeaderMap,
    body: &'a [u8],
    max_decoded: usize,
) -> Result<Cow<'a, [u8]>, IngestProblem> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("" | "identity") => Ok(Cow::Borrowed(body)),
        Some("gzip" | "x-gzip") => {
            let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(max_decoded));
            // One byte over the limit is enough to know it is over.
            let limit = u64::try_from(max_decoded)
                .unwrap_or(u64::MAX)
                .saturating_add(1);
            flate2::read::MultiGzDecoder::new(body)
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| {
                    IngestProblem::bad_request(format!("the gzip body cannot be read: {e}"))
                })?;
            if out.len() > max_decoded {
                return Err(IngestProblem::too_large(max_decoded).with_detail(format!(
                    "the body is over {max_decoded} bytes once decompressed"
                )));
            }
            Ok(Cow::Owned(out))
        }
        Some(other) => Err(IngestProblem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-encoding",
            "Unsupported content encoding",
        )
        .with_detail(format!("send gzip or no Content-Encoding, got {other}"))),
    }
}

/// A serde error without serde_json's "at line 1 column 9" tail, which
/// points into one event's text rather than the body.
fn reason(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(at) if err.line() > 0 => text[..at].to_owned(),
        _ => text,
    }
}

/// Parses one event, naming the field a type error is in.
fn parse_one<T: DeserializeOwned>(index: usize, text: &str) -> Result<T, EventError> {
    let mut de = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(event) => Ok(event),
        Err(err) => {
            let path = err.path().to_string();
            Err(EventError::new(index, path, reason(err.inner())))
        }
    }
}

/// Most events (or gauge values) one request may carry. A body with more is
/// refused with 413 as soon as the next item is seen, before the rest is
/// parsed: a few kilobytes of gzip can hold millions of `{}`, and each item
/// costs memory to parse, validate and answer.
pub(crate) const MAX_ITEMS: usize = 10_000;

/// The error a too-long array ends with, told apart from a syntax error.
const TOO_MANY: &str = "slaproof: too many items";

/// A JSON array read item by item (each kept as raw JSON), refusing the
/// item past [`MAX_ITEMS`] before reading on.
struct BoundedArray;

impl<'de> DeserializeSeed<'de> for BoundedArray {
    type Value = Vec<&'de RawValue>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for BoundedArray {
    type Value = Vec<&'de RawValue>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<&RawValue>()? {
            if items.len() == MAX_ITEMS {
                return Err(serde::de::Error::custom(TOO_MANY));
            }
            items.push(item);
        }
        Ok(items)
    }
}

fn too_many() -> IngestProblem {
    IngestProblem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-many-events",
        "Too many events",
    )
    .with_detail(format!(
        "a request carries at most {MAX_ITEMS} events or values; send smaller batches"
    ))
}

/// The events of a batch, each parsed or refused on its own. A JSON array
/// that is not valid JSON as a whole cannot be split and is refused whole;
/// a batch of more than [`MAX_ITEMS`] is refused whole (413).
pub(crate) fn split<T: DeserializeOwned>(
    format: BatchFormat,
    body: &[u8],
) -> Result<Vec<Result<T, EventError>>, IngestProblem> {
    match format {
        BatchFormat::JsonArray => {
            let mut de = serde_json::Deserializer::from_slice(body);
            let items = BoundedArray
                .deserialize(&mut de)
                .and_then(|items| de.end().map(|()| items))
                .map_err(|e| {
                    if e.to_string().starts_with(TOO_MANY) {
                        too_many()
                    } else {
                        IngestProblem::bad_request(format!(
                            "the body is not a JSON array of events: {e}"
                        ))
                    }
                })?;
            Ok(items
                .iter()
                .enumerate()
                .map(|(i, raw)| parse_one(i, raw.get()))
                .collect())
        }
        BatchFormat::Ndjson => {
            let text = std::str::from_utf8(body)
                .map_err(|e| IngestProblem::bad_request(format!("the body is not UTF-8: {e}")))?;
            let mut items = Vec::new();
            for line in text.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
                if items.len() == MAX_ITEMS {
                    return Err(too_many());
                }
                items.push(parse_one(items.len(), line));
            }
            Ok(items)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventIn;

    #[test]
    fn a_bad_event_costs_only_itself() {
        let body = br#"[{"service":"a"}, {"status":"x"}, 3, {"attributes":{"n":[1]}}]"#;
        let events = split::<EventIn>(BatchFormat::JsonArray, body).unwrap();
        assert_eq!(events.len(), 4);
        assert!(events[0].is_ok());
        let err = events[1].as_ref().unwrap_err();
        assert_eq!((err.index, err.field.as_str()), (1, "status"));
        assert!(!err.reason.contains("line"), "{}", err.reason);
        assert_eq!(events[2].as_ref().unwrap_err().field, ".");
        assert!(events[3].is_ok(), "attribute values are checked later");
    }

    #[test]
    fn ndjson_skips_blank_lines_and_refuses_bad_lines_alone() {
        let body = b"{\"service\":\"a\"}\r\n\n{oops\n{\"service\":\"b\"}\n";
        let events = split::<EventIn>(BatchFormat::Ndjson, body).unwrap();
        assert_eq!(events.len(), 3);
        assert!(events[0].is_ok() && events[2].is_ok());
        assert_eq!(events[1].as_ref().unwrap_err().index, 1);
    }

    #[test]
    fn a_batch_past_the_limit_is_refused_whole_in_either_format() {
        let array = format!("[{}{{}}]", "{},".repeat(MAX_ITEMS));
        let problem = split::<EventIn>(BatchFormat::JsonArray, array.as_bytes()).unwrap_err();
        assert_eq!(problem.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let ndjson = "{}\n".repeat(MAX_ITEMS + 1);
        let problem = split::<EventIn>(BatchFormat::Ndjson, ndjson.as_bytes()).unwrap_err();
        assert_eq!(problem.status(), StatusCode::PAYLOAD_TOO_LARGE);
        // At the limit, every item is parsed (and refused on its own).
        let full = format!("[{}{{}}]", "{},".repeat(MAX_ITEMS - 1));
        let items = split::<EventIn>(BatchFormat::JsonArray, full.as_bytes()).unwrap();
        assert_eq!(items.len(), MAX_ITEMS);
    }

    #[test]
    fn a_broken_array_is_refused_whole() {
        assert!(split::<EventIn>(BatchFormat::JsonArray, b"[{").is_err());
        assert!(split::<EventIn>(BatchFormat::JsonArray, b"{}").is_err());
    }

    #[test]
    fn gzip_is_undone_and_held_to_the_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&[b' '; 10_000]).unwrap();
        let zipped = gz.finish().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_ENCODING, "gzip".parse().unwrap());
        assert_eq!(decode(&headers, &zipped, 10_000).unwrap().len(), 10_000);
        let err = decode(&headers, &zipped, 9_999).unwrap_err();
        assert_eq!(err.status(), 413);
        headers.insert(header::CONTENT_ENCODING, "br".parse().unwrap());
        assert_eq!(decode(&headers, &zipped, 10_000).unwrap_err().status(), 415);
    }
}
