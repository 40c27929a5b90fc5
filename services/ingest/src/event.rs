//! One event as providers send it (`EventIn`), the rules it must follow,
//! and the stable id that makes a retried event land once.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SubsecRound, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use slaproof_domain::filter::is_valid_attr_name;
use slaproof_domain::ids::EventId;
use slaproof_store::events::{EventSource, StoredEvent};
use uuid::Uuid;

/// Longest service, model, request id and error class accepted.
const MAX_TEXT: usize = 256;
/// Most free attributes per event.
const MAX_ATTRIBUTES: usize = 64;
/// Longest `field` and `reason` an [`EventError`] keeps: a refusal may
/// quote what it refuses (serde's `invalid type: string "…"`), and a body
/// of huge values must not become an answer of huge reasons.
const MAX_ERROR_FIELD: usize = 128;
const MAX_ERROR_REASON: usize = 300;
/// Longest duration accepted: a day, far above any request, far below what
/// the circuits' 32-bit values could not hold in a useful unit.
const MAX_DURATION_MS: f64 = 86_400_000.0;

/// An event as the native API receives it. Every field is optional here so
/// that a missing one is reported by name by [`EventIn::validate`]; fields
/// not listed are ignored, so providers can send richer records unchanged.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct EventIn {
    /// `evt_<32 hex>` or a plain UUID chosen by the sender: a retried event
    /// with the same id and time is stored once.
    pub id: Option<String>,
    /// When the request started, RFC 3339.
    pub time: Option<String>,
    pub service: Option<String>,
    /// The customer the request served, by the provider's own reference
    /// (the `REF` of `slaproof customer create`). A reference not
    /// registered yet is stored all the same and counts once it is.
    pub customer: Option<String>,
    pub model: Option<String>,
    /// The provider's request id; without an `id`, it identifies the event
    /// for retries.
    pub request_id: Option<String>,
    /// `provider` only: probe events are measured by slaproof itself.
    pub source: Option<String>,
    pub status: Option<u16>,
    pub error_class: Option<String>,
    pub latency_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub streaming: Option<bool>,
    /// Free numeric attributes (numbers or booleans).
    pub attributes: Option<Attributes>,
}

/// The free attributes of an event as sent, read without letting an event
/// grow past its limits while it is parsed: at most [`MAX_ATTRIBUTES`]
/// entries are kept (more are only counted), and a value other than a
/// number or a boolean is kept as its kind, never read into memory.
/// [`attributes`] then refuses what breaks the rules, by name.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    kept: BTreeMap<String, AttributeValue>,
    /// Entries in the body, kept or not (repeated names included).
    sent: usize,
}

/// An attribute value as sent.
#[derive(Debug, Clone)]
enum AttributeValue {
    Number(serde_json::Number),
    Bool(bool),
    /// Anything else, by kind (`a string`, `an object`, …).
    Other(&'static str),
}

impl<'de> Deserialize<'de> for AttributeValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = AttributeValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an attribute value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
                Ok(AttributeValue::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
                Ok(AttributeValue::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(AttributeValue::Number(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
                // JSON numbers are finite, so this is always Some.
                Ok(serde_json::Number::from_f64(n)
                    .map_or(AttributeValue::Other("a number"), AttributeValue::Number))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(AttributeValue::Other("a string"))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(AttributeValue::Other("null"))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(AttributeValue::Other("null"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(AttributeValue::Other("an array"))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(AttributeValue::Other("an object"))
            }
        }
        d.deserialize_any(Visit)
    }
}

impl<'de> Deserialize<'de> for Attributes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Attributes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of attributes")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Attributes::default();
                loop {
                    if out.kept.len() < MAX_ATTRIBUTES {
                        let Some((name, value)) = map.next_entry::<String, AttributeValue>()?
                        else {
                            break;
                        };
                        out.kept.insert(name, value);
                    } else if map
                        .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                        .is_none()
                    {
                        break;
                    }
                    out.sent += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Why one event of a batch was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventError {
    /// The event's position in the batch, from 0.
    pub index: usize,
    /// The field at fault, dotted (`attributes.cache_hit`); `.` for the
    /// event as a whole.
    pub field: String,
    pub reason: String,
}

impl EventError {
    /// A refusal; a field or reason past its length (128, 300 characters)
    /// is cut and ends with `…`.
    pub fn new(index: usize, field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            index,
            field: cut(field.into(), MAX_ERROR_FIELD),
            reason: cut(reason.into(), MAX_ERROR_REASON),
        }
    }
}

/// `text` at most `max` characters long, cut with `…` when it was longer,
/// in an allocation of its own size (a refusal is kept until the answer).
fn cut(mut text: String, max: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(max) {
        let keep = text[..at]
            .char_indices()
            .nth(max - 1)
            .map_or(at, |(i, _)| i);
        let mut short = String::with_capacity(keep + '…'.len_utf8());
        short.push_str(&text[..keep]);
        short.push('…');
        return short;
    }
    text.shrink_to_fit();
    text
}

/// The window of times accepted at one moment.
#[derive(Debug, Clone, Copy)]
pub struct TimeBounds {
    /// The oldest time still within retention.
    pub oldest: DateTime<Utc>,
    /// The newest time accepted: now plus the allowed clock skew.
    pub newest: DateTime<Utc>,
}

impl TimeBounds {
    pub fn at(now: DateTime<Utc>, retention_days: u32, max_future: Duration) -> Self {
        Self {
            oldest: now - Duration::days(i64::from(retention_days)),
            newest: now + max_future,
        }
    }

    /// Checks a time, with a reason that says what the limit is.
    pub fn check(&self, time: DateTime<Utc>) -> Result<(), String> {
        if time > self.newest {
            return Err(format!(
                "is in the future: {} is after the latest accepted time {} (clock skew allowance)",
                time.to_rfc3339(),
                self.newest.to_rfc3339()
            ));
        }
        if time < self.oldest {
            return Err(format!(
                "is older than the retention period: {} is before {}",
                time.to_rfc3339(),
                self.oldest.to_rfc3339()
            ));
        }
        Ok(())
    }
}

/// Where an event's id comes from when the sender gave none.
#[derive(Debug, Clone, Copy)]
pub enum IdSeed<'a> {
    /// A batch retried with the same `Idempotency-Key` gives each position
    /// the same id again.
    Batch { key: &'a str, index: usize },
    /// Nothing to derive from: a fresh time-ordered id.
    Fresh,
}

/// A stable id from the parts that identify an event, so a retry maps to
/// the same primary key `(tenant_id, occurred_at, id)` and is skipped. A
/// version-8 UUID from SHA-256: collisions are as unlikely as for random ids.
pub fn derived_id(parts: &[&str]) -> EventId {
    let mut hash = Sha256::new();
    hash.update(b"slaproof/event-id/v1");
    for part in parts {
        // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    EventId::from_uuid(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// The id of an event: the sender's, else derived from its request id, else
/// from the batch's idempotency key and position, else fresh.
pub fn event_id(
    given: Option<&str>,
    service: &str,
    request_id: Option<&str>,
    seed: IdSeed<'_>,
) -> Result<EventId, String> {
    if let Some(given) = given {
        return given
            .parse::<EventId>()
            .or_else(|_| Uuid::parse_str(given).map(EventId::from_uuid))
            .map_err(|_| "must be an event id (`evt_` and 32 hex digits) or a UUID".to_owned());
    }
    Ok(match (request_id, seed) {
        (Some(request_id), _) => derived_id(&["request", service, request_id]),
        (None, IdSeed::Batch { key, index }) => derived_id(&["batch", key, &index.to_string()]),
        (None, IdSeed::Fresh) => EventId::new(),
    })
}

pub(crate) fn text(
    field: &'static str,
    value: Option<String>,
) -> Result<Option<String>, (String, String)> {
    match value {
        None => Ok(None),
        Some(v) if v.is_empty() => Err((field.into(), "must not be empty".into())),
        Some(v) if v.chars().count() > MAX_TEXT => Err((
            field.into(),
            format!("must be at most {MAX_TEXT} characters"),
        )),
        // Postgres text cannot hold NUL.
        Some(v) if v.contains('\0') => Err((field.into(), "must not contain NUL".into())),
        Some(v) => Ok(Some(v)),
    }
}

/// A customer reference as the store keeps it (the rule of
/// `customers.external_ref`), so that registering the customer later finds
/// every event that named it.
pub fn customer_ref(
    field: &str,
    value: Option<String>,
) -> Result<Option<String>, (String, String)> {
    match value {
        None => Ok(None),
        Some(v) => match slaproof_domain::sla::check_customer_ref(&v) {
            Ok(()) => Ok(Some(v)),
            Err(e) => Err((field.into(), e.0)),
        },
    }
}

/// Milliseconds (fractions allowed) to whole microseconds.
pub fn duration_us(field: &str, ms: Option<f64>) -> Result<Option<i64>, (String, String)> {
    match ms {
        None => Ok(None),
        Some(ms) if !ms.is_finite() || ms < 0.0 => Err((
            field.into(),
            format!("must be a duration of 0 ms or more, got {ms}"),
        )),
        Some(ms) if ms > MAX_DURATION_MS => Err((
            field.into(),
            format!("must be at most {MAX_DURATION_MS} ms (a day), got {ms}"),
        )),
        // In range, so the cast cannot overflow.
        Some(ms) => Ok(Some((ms * 1000.0).round() as i64)),
    }
}

/// Token counts as the store keeps them.
pub fn tokens(field: &str, n: Option<u64>) -> Result<Option<i32>, (String, String)> {
    match n {
        None => Ok(None),
        Some(n) => i32::try_from(n).map(Some).map_err(|_| {
            (
                field.into(),
                format!("must be at most {}, got {n}", i32::MAX),
            )
        }),
    }
}

/// Checks the free attributes: names filters can use, numeric values.
pub fn attributes(
    attrs: Option<Attributes>,
) -> Result<serde_json::Map<String, serde_json::Value>, (String, String)> {
    let Some(attrs) = attrs else {
        return Ok(serde_json::Map::new());
    };
    if attrs.sent > MAX_ATTRIBUTES {
        return Err((
            "attributes".into(),
            format!(
                "must have at most {MAX_ATTRIBUTES} entries, got {}",
                attrs.sent
            ),
        ));
    }
    let mut out = serde_json::Map::new();
    for (name, value) in attrs.kept {
        let field = format!("attributes.{name}");
        if !is_valid_attr_name(&name) {
            return Err((
                field,
                "names start with a letter or `_` and hold letters, digits, `_` and `.` (at most 64)"
                    .into(),
            ));
        }
        let value = match value {
            AttributeValue::Number(n) => serde_json::Value::Number(n),
            // Filters compare numbers; a flag is 1 or 0.
            AttributeValue::Bool(b) => serde_json::Value::from(u8::from(b)),
            AttributeValue::Other(kind) => {
                return Err((field, format!("must be a number or a boolean, got {kind}")));
            }
        };
        out.insert(name, value);
    }
    Ok(out)
}

impl EventIn {
    /// The event as it will be stored, or the first rule it breaks.
    pub fn validate(
        self,
        index: usize,
        bounds: &TimeBounds,
        seed: IdSeed<'_>,
    ) -> Result<StoredEvent, EventError> {
        self.validate_inner(bounds, seed)
            .map_err(|(field, reason)| EventError::new(index, field, reason))
    }

    fn validate_inner(
        self,
        bounds: &TimeBounds,
        seed: IdSeed<'_>,
    ) -> Result<StoredEvent, (String, String)> {
        let time = self
            .time
            .ok_or_else(|| ("time".to_owned(), "is required (RFC 3339)".to_owned()))?;
        let occurred_at = DateTime::parse_from_rfc3339(&time)
            .map_err(|e| {
                (
                    "time".to_owned(),
                    format!("must be an RFC 3339 time such as 2026-11-30T12:00:00.250Z: {e}"),
                )
            })?
            .with_timezone(&Utc)
            // Postgres keeps microseconds; rounding here keeps what is
            // stored equal to what a retry computes.
            .trunc_subsecs(6);
        bounds
            .check(occurred_at)
            .map_err(|r| ("time".to_owned(), r))?;
        let service = text("service", self.service)?
            .ok_or_else(|| ("service".to_owned(), "is required".to_owned()))?;
        let customer = customer_ref("customer", self.customer)?;
        let model = text("model", self.model)?;
        let request_id = text("request_id", self.request_id)?;
        let error_class = text("error_class", self.error_class)?;
        match self.source.as_deref() {
            None | Some("provider") => {}
            Some("probe") => {
                return Err((
                    "source".into(),
                    "probe events are measured by slaproof's own probes; send `provider` or nothing"
                        .into(),
                ));
            }
            Some(other) => {
                return Err((
                    "source".into(),
                    format!("must be `provider`, got {other:?}"),
                ));
            }
        }
        let status = match self.status {
            Some(s) if !(100..=599).contains(&s) => {
                return Err((
                    "status".into(),
                    format!("must be an HTTP status between 100 and 599, got {s}"),
                ));
            }
            s => s.map(i32::from),
        };
        let id = event_id(self.id.as_deref(), &service, request_id.as_deref(), seed)
            .map_err(|r| ("id".to_owned(), r))?;
        Ok(StoredEvent {
            id,
            occurred_at,
            source: EventSource::Provider,
            latency_us: duration_us("latency_ms", self.latency_ms)?,
            ttft_us: duration_us("ttft_ms", self.ttft_ms)?,
            tpot_us: duration_us("tpot_ms", self.tpot_ms)?,
            input_tokens: tokens("input_tokens", self.input_tokens)?,
            output_tokens: tokens("output_tokens", self.output_tokens)?,
            streaming: self.streaming,
            attributes: serde_json::Value::Object(attributes(self.attributes)?),
            service,
            customer,
            model,
            request_id,
            status,
            error_class,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> TimeBounds {
        TimeBounds::at(
            "2026-11-30T12:00:00Z".parse().unwrap(),
            30,
            Duration::minutes(5),
        )
    }

    fn event(json: serde_json::Value) -> EventIn {
        serde_json::from_value(json).unwrap()
    }

    fn refusal(json: serde_json::Value) -> (String, String) {
        let err = event(json)
            .validate(3, &bounds(), IdSeed::Fresh)
            .unwrap_err();
        assert_eq!(err.index, 3);
        (err.field, err.reason)
    }

    #[test]
    fn a_full_event_converts_to_microseconds_and_keeps_every_field() {
        let stored = event(serde_json::json!({
            "time": "2026-11-30T11:59:00.1234567Z", "service": "chat", "model": "llama-3",
            "request_id": "r1", "status": 200, "latency_ms": 812.5, "ttft_ms": 95,
            "tpot_ms": 12.25, "input_tokens": 812, "output_tokens": 64, "streaming": true,
            "attributes": {"cache_hit": true, "region.eu": 2}, "unknown": "ignored"
        }))
        .validate(0, &bounds(), IdSeed::Fresh)
        .unwrap();
        assert_eq!(stored.latency_us, Some(812_500));
        assert_eq!(stored.ttft_us, Some(95_000));
        assert_eq!(stored.tpot_us, Some(12_250));
        assert_eq!(stored.occurred_at.timestamp_subsec_micros(), 123_456);
        assert_eq!(
            stored.attributes,
            serde_json::json!({"cache_hit": 1, "region.eu": 2})
        );
        assert_eq!(stored.id, derived_id(&["request", "chat", "r1"]));
    }

    #[test]
    fn refusals_name_the_field_and_the_rule() {
        let base = serde_json::json!({"time": "2026-11-30T11:00:00Z", "service": "chat"});
        let with = |k: &str, v: serde_json::Value| {
            let mut e = base.clone();
            e[k] = v;
            e
        };
        assert_eq!(refusal(serde_json::json!({"service": "s"})).0, "time");
        assert_eq!(
            refusal(serde_json::json!({"time": "2026-11-30T11:00:00Z"})).0,
            "service"
        );
        let (field, reason) = refusal(with("time", "2026-11-30T12:06:00Z".into()));
        assert_eq!(field, "time");
        assert!(reason.contains("future"), "{reason}");
        let (_, reason) = refusal(with("time", "2026-10-01T00:00:00Z".into()));
        assert!(reason.contains("retention"), "{reason}");
        assert_eq!(refusal(with("time", "yesterday".into())).0, "time");
        assert_eq!(refusal(with("status", 700.into())).0, "status");
        assert_eq!(refusal(with("latency_ms", (-1).into())).0, "latency_ms");
        assert_eq!(refusal(with("source", "probe".into())).0, "source");
        assert_eq!(refusal(with("id", "nope".into())).0, "id");
        assert_eq!(refusal(with("service", "".into())).0, "service");
        assert_eq!(
            refusal(with("attributes", serde_json::json!({"region": "eu"}))).0,
            "attributes.region"
        );
        assert_eq!(
            refusal(with("input_tokens", 3_000_000_000u64.into())).0,
            "input_tokens"
        );
    }

    #[test]
    fn attributes_are_read_within_their_limits() {
        let base = serde_json::json!({"time": "2026-11-30T11:00:00Z", "service": "chat"});
        let with = |attributes: serde_json::Value| {
            let mut e = base.clone();
            e["attributes"] = attributes;
            e
        };
        // A value that is not a number is never read: only its kind is kept.
        let nested = with(serde_json::json!({"deep": {"a": [1, [2, {"b": "c"}]]}}));
        let (field, reason) = refusal(nested);
        assert_eq!(field, "attributes.deep");
        assert_eq!(reason, "must be a number or a boolean, got an object");
        let many: serde_json::Map<String, serde_json::Value> = (0..1_000)
            .map(|i| (format!("a{i}"), serde_json::Value::from(i)))
            .collect();
        let parsed = event(with(serde_json::Value::Object(many)));
        let attributes = parsed.attributes.as_ref().unwrap();
        assert_eq!(
            attributes.kept.len(),
            MAX_ATTRIBUTES,
            "the rest only counted"
        );
        assert_eq!(attributes.sent, 1_000);
        let sixty_five: serde_json::Map<String, serde_json::Value> = (0..65)
            .map(|i| (format!("a{i}"), serde_json::Value::from(i)))
            .collect();
        let (field, reason) = refusal(with(serde_json::Value::Object(sixty_five)));
        assert_eq!(field, "attributes");
        assert_eq!(reason, "must have at most 64 entries, got 65");
    }

    #[test]
    fn long_fields_and_reasons_are_cut() {
        let e = EventError::new(0, "f".repeat(500), "é".repeat(1_000));
        assert_eq!(e.field.chars().count(), MAX_ERROR_FIELD);
        assert!(e.field.ends_with('…'));
        assert_eq!(e.reason.chars().count(), MAX_ERROR_REASON);
        let short = EventError::new(0, "status", "x".repeat(MAX_ERROR_REASON));
        assert_eq!(
            short.reason.len(),
            MAX_ERROR_REASON,
            "at the limit, kept whole"
        );
    }

    #[test]
    fn ids_are_stable_for_retries_and_distinct_otherwise() {
        let key = IdSeed::Batch {
            key: "batch-1",
            index: 4,
        };
        let a = event_id(None, "chat", None, key).unwrap();
        assert_eq!(a, event_id(None, "chat", None, key).unwrap());
        let other = IdSeed::Batch {
            key: "batch-1",
            index: 5,
        };
        assert_ne!(a, event_id(None, "chat", None, other).unwrap());
        assert_ne!(
            derived_id(&["request", "ab", "c"]),
            derived_id(&["request", "a", "bc"])
        );
        assert_ne!(
            event_id(None, "chat", None, IdSeed::Fresh).unwrap(),
            event_id(None, "chat", None, IdSeed::Fresh).unwrap()
        );
        let given = "0190c7c2-7e1a-7000-8000-000000000001";
        assert_eq!(
            event_id(Some(given), "chat", Some("r"), key)
                .unwrap()
                .uuid(),
            Uuid::parse_str(given).unwrap()
        );
    }
}
