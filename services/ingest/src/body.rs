//! Request bodies: gzip, the JSON-array and NDJSON batch formats, and the
//! split into one parse per event so that a bad event costs only itself.

use std::borrow::Cow;
use std::io::Read;

use axum::http::{HeaderMap, StatusCode, header};
use serde::de::{DeserializeOwned, DeserializeSeed, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::budget::Transient;
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

/// Decompressed bytes charged to the memory budget at a time.
const DECODE_STEP: usize = 1024 * 1024;

/// The body with its `Content-Encoding` undone. Decompressed bodies are
/// held to `max_decoded` bytes, so a small gzip bomb cannot take memory,
/// and charged to the memory budget (`held`) as they grow.
pub(crate) fn decode<'a>(
    headers: &HeaderMap,
    body: &'a [u8],
    max_decoded: usize,
    held: &mut Transient,
) -> Result<Cow<'a, [u8]>, IngestProblem> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("" | "identity") => Ok(Cow::Borrowed(body)),
        Some("gzip" | "x-gzip") => {
            let mut out = Vec::new();
            let mut charged = 0;
            let mut buf = vec![0u8; 64 * 1024];
            let mut gz = flate2::read::MultiGzDecoder::new(body);
            loop {
                let n = match gz.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(IngestProblem::bad_request(format!(
                            "the gzip body cannot be read: {e}"
                        )));
                    }
                };
                if out.len() + n > max_decoded {
                    return Err(IngestProblem::too_large(max_decoded).with_detail(format!(
                        "the body is over {max_decoded} bytes once decompressed"
                    )));
                }
                if out.len() + n > charged {
                    let step = DECODE_STEP.min(max_decoded - charged);
                    held.take(step)?;
                    charged += step;
                    out.reserve_exact(charged - out.len());
                }
                out.extend_from_slice(&buf[..n]);
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

/// What a decoded body is, for [`tame_json`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// Protobuf: nothing to tame.
    Binary,
    /// One JSON document.
    Json,
    /// One JSON document per line.
    Ndjson,
}

impl BatchFormat {
    pub(crate) fn syntax(self) -> Syntax {
        match self {
            BatchFormat::JsonArray => Syntax::Json,
            BatchFormat::Ndjson => Syntax::Ndjson,
        }
    }
}

/// Longest JSON string read whole, in bytes as sent; longer ones are read
/// as their first 4 KiB. No field slaproof reads is longer than 256
/// characters (at most 12 bytes each, escaped), so what is stored and what
/// is refused stays the same; what changes is that a refusal quoting a value
/// (serde's `invalid type: string "…"`) quotes 4 KiB, not 60 MiB, and that
/// what serde builds for it costs as much.
pub(crate) const MAX_JSON_STRING: usize = 4096;

/// Deepest JSON nesting read: serde_json refuses more in the fields it
/// decodes, but skips ignored fields of any depth with a stack of its own.
pub(crate) const MAX_JSON_DEPTH: usize = 128;

/// Holds a JSON body (an array, an NDJSON stream, an OTLP/JSON export) to
/// [`MAX_JSON_DEPTH`] (400 past it) and cuts its strings to
/// [`MAX_JSON_STRING`] bytes, in place when the body is owned (charged to
/// `held` when it has to be copied). A cut falls on a character boundary,
/// never inside an escape or between the halves of a surrogate pair, at a
/// multiple of 4 bytes where it can (so hex and base64 stay decodable).
/// Anything that is not JSON is left as it is, for the parser to refuse.
pub(crate) fn tame_json(
    body: &mut Cow<'_, [u8]>,
    ndjson: bool,
    held: &mut Transient,
) -> Result<(), IngestProblem> {
    let cuts = long_strings(body, ndjson)?;
    if cuts.is_empty() {
        return Ok(());
    }
    let removed: usize = cuts.iter().map(|(from, to)| to - from).sum();
    match body {
        Cow::Owned(bytes) => {
            let mut write = cuts[0].0;
            for (i, &(_, to)) in cuts.iter().enumerate() {
                let next = cuts.get(i + 1).map_or(bytes.len(), |c| c.0);
                bytes.copy_within(to..next, write);
                write += next - to;
            }
            bytes.truncate(write);
        }
        Cow::Borrowed(bytes) => {
            held.take(bytes.len() - removed)?;
            let mut out = Vec::with_capacity(bytes.len() - removed);
            let mut from = 0;
            for &(cut, to) in &cuts {
                out.extend_from_slice(&bytes[from..cut]);
                from = to;
            }
            out.extend_from_slice(&bytes[from..]);
            *body = Cow::Owned(out);
        }
    }
    Ok(())
}

/// The byte ranges to remove so that no string is longer than
/// [`MAX_JSON_STRING`], in order; 400 past [`MAX_JSON_DEPTH`].
fn long_strings(body: &[u8], ndjson: bool) -> Result<Vec<(usize, usize)>, IngestProblem> {
    let mut cuts = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i + 1;
                let (mut safe, mut aligned) = (0, 0);
                let mut j = start;
                while j < body.len() && body[j] != b'"' {
                    let unit = match body[j] {
                        b'\\' if body.get(j + 1) == Some(&b'u') => {
                            let high = body
                                .get(j + 2..j + 6)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u16::from_str_radix(h, 16).ok())
                                .is_some_and(|h| (0xd800..0xdc00).contains(&h));
                            if high && body.get(j + 6..j + 8) == Some(b"\\u") {
                                12
                            } else {
                                6
                            }
                        }
                        b'\\' => 2,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        0xf0..=0xf7 => 4,
                        _ => 1,
                    };
                    j = (j + unit).min(body.len());
                    let len = j - start;
                    if len <= MAX_JSON_STRING {
                        safe = len;
                        if len % 4 == 0 {
                            aligned = len;
                        }
                    }
                }
                if j - start > MAX_JSON_STRING {
                    let keep = if aligned >= MAX_JSON_STRING / 2 {
                        aligned
                    } else {
                        safe
                    };
                    cuts.push((start + keep, j));
                }
                i = j + 1;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(IngestProblem::bad_request(format!(
                        "the body nests JSON deeper than {MAX_JSON_DEPTH} levels"
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' if ndjson => depth = 0,
            _ => {}
        }
        i += 1;
    }
    Ok(cuts)
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
pub(crate) fn parse_one<T: DeserializeOwned>(index: usize, text: &str) -> Result<T, EventError> {
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

/// 413 for a request of more items than [`MAX_ITEMS`], refused before the
/// rest is read; `what` names them (`spans`).
pub(crate) fn too_many_items(slug: &str, title: &str, what: &str) -> IngestProblem {
    IngestProblem::new(StatusCode::PAYLOAD_TOO_LARGE, slug, title).with_detail(format!(
        "a request carries at most {MAX_ITEMS} {what}; send smaller batches"
    ))
}

fn too_many() -> IngestProblem {
    too_many_items("too-many-events", "Too many events", "events or values")
}

/// The items of a batch, each as its own JSON text, for [`parse_one`]: a
/// JSON array that is not valid JSON as a whole cannot be split and is
/// refused whole; a batch of more than [`MAX_ITEMS`] is refused whole
/// (413) as soon as the next item is seen. Callers parse and check each
/// item before the next, so only one item is ever held parsed.
pub(crate) fn items(format: BatchFormat, body: &[u8]) -> Result<Vec<&str>, IngestProblem> {
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
            Ok(items.into_iter().map(RawValue::get).collect())
        }
        BatchFormat::Ndjson => {
            let text = std::str::from_utf8(body)
                .map_err(|e| IngestProblem::bad_request(format!("the body is not UTF-8: {e}")))?;
            let mut items = Vec::new();
            for line in text.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
                if items.len() == MAX_ITEMS {
                    return Err(too_many());
                }
                items.push(line);
            }
            Ok(items)
        }
    }
}

/// The events of a batch, each parsed or refused on its own.
#[cfg(test)]
pub(crate) fn split<T: DeserializeOwned>(
    format: BatchFormat,
    body: &[u8],
) -> Result<Vec<Result<T, EventError>>, IngestProblem> {
    Ok(items(format, body)?
        .into_iter()
        .enumerate()
        .map(|(i, text)| parse_one(i, text))
        .collect())
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

    fn tamed(json: &str, ndjson: bool) -> Result<String, IngestProblem> {
        let budget = crate::budget::Budget::new(1 << 20, 1);
        let charge = crate::budget::Charge::new(&budget);
        let mut held = Transient::new(&charge);
        let mut borrowed = Cow::Borrowed(json.as_bytes());
        tame_json(&mut borrowed, ndjson, &mut held)?;
        let mut owned = Cow::Owned(json.as_bytes().to_vec());
        tame_json(&mut owned, ndjson, &mut held)?;
        assert_eq!(borrowed, owned, "in place or copied, the same");
        Ok(String::from_utf8(owned.into_owned()).unwrap())
    }

    #[test]
    fn long_strings_are_cut_where_they_stay_valid() {
        let short = r#"[{"service":"a\"b","x":"é"}]"#;
        assert_eq!(tamed(short, false).unwrap(), short, "nothing to cut");
        // Plain ASCII (hex, base64): cut at exactly the limit.
        let long = format!(r#"[{{"service":"{}","n":1}}]"#, "a".repeat(10_000));
        let cut = tamed(&long, false).unwrap();
        assert_eq!(
            cut,
            format!(r#"[{{"service":"{}","n":1}}]"#, "a".repeat(4096))
        );
        // Escapes, multi-byte characters and surrogate pairs are never split.
        for unit in ["\\u00e9", "\\ud83d\\ude00", "é", "😀", "\\n"] {
            let json = format!(r#"["x{}"]"#, unit.repeat(3_000));
            let cut = tamed(&json, false).unwrap();
            let value: Vec<String> = serde_json::from_str(&cut).unwrap();
            assert!(value[0].len() < json.len(), "{unit}");
            assert!(cut.len() <= MAX_JSON_STRING + 6, "{unit}: {}", cut.len());
        }
        // What stays is parsed as before: a refusal quotes 4 KiB at most.
        let item = format!(r#"{{"status":"{}"}}"#, "x".repeat(100_000));
        let items = split::<EventIn>(BatchFormat::Ndjson, tamed(&item, true).unwrap().as_bytes());
        let err = items.unwrap().remove(0).unwrap_err();
        assert_eq!(err.field, "status");
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let deep = format!(
            "[{}{}]",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert_eq!(tamed(&deep, false).unwrap_err().status(), 400);
        let fine = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert!(tamed(&fine, false).is_ok());
        // NDJSON: each line from the top; brackets in strings do not count.
        let lines = format!(
            "{}\n{}\n[\"{}\"]",
            "[".repeat(100),
            "[".repeat(100),
            "[".repeat(500)
        );
        assert!(tamed(&lines, true).is_ok());
    }

    #[test]
    fn gzip_is_undone_and_held_to_the_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&[b' '; 10_000]).unwrap();
        let zipped = gz.finish().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_ENCODING, "gzip".parse().unwrap());
        let budget = crate::budget::Budget::new(15_000, 1);
        let charge = crate::budget::Charge::new(&budget);
        let mut held = Transient::new(&charge);
        assert_eq!(
            decode(&headers, &zipped, 10_000, &mut held).unwrap().len(),
            10_000
        );
        assert_eq!(budget.used(), 10_000, "charged as decompressed");
        let err = decode(&headers, &zipped, 9_999, &mut held).unwrap_err();
        assert_eq!(err.status(), 413);
        let err = decode(&headers, &zipped, 10_000, &mut held).unwrap_err();
        assert_eq!(err.status(), 413, "past the whole budget");
        drop(held);
        assert_eq!(budget.used(), 0);
        let mut held = Transient::new(&charge);
        headers.insert(header::CONTENT_ENCODING, "br".parse().unwrap());
        assert_eq!(
            decode(&headers, &zipped, 10_000, &mut held)
                .unwrap_err()
                .status(),
            415
        );
    }
}
