//! The fields of one measured request or probe, as filters and SLIs read them.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Who produced an event: the provider's own telemetry or our synthetic probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventSource {
    /// Sent by the provider (gateway, OTel collector).
    Provider,
    /// Sent by a synthetic probe.
    Probe,
}

impl EventSource {
    /// The name used in filters and storage.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Provider => "provider",
            Self::Probe => "probe",
        }
    }
}

impl fmt::Display for EventSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventSource {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "provider" => Ok(Self::Provider),
            "probe" => Ok(Self::Probe),
            _ => Err(()),
        }
    }
}

/// Read access to an event's fields, implemented by whatever the evaluator
/// holds (a row, a decoded message) so that filters need no copy.
///
/// `None` means the event does not carry the field (no error class on a
/// success, no TTFT on a non-streaming call).
pub trait EventFields {
    /// The provider's service name.
    fn service(&self) -> Option<&str>;
    /// The model that served the request.
    fn model(&self) -> Option<&str>;
    /// The response status (HTTP-like).
    fn status(&self) -> Option<u16>;
    /// The provider's class of error (`timeout`, `rate_limited`, …).
    fn error_class(&self) -> Option<&str>;
    /// Provider telemetry or a probe.
    fn source(&self) -> Option<EventSource>;
    /// Whether the response was streamed.
    fn streaming(&self) -> Option<bool>;
    /// End-to-end latency in microseconds.
    fn latency_us(&self) -> Option<u64>;
    /// Time to first token in microseconds.
    fn ttft_us(&self) -> Option<u64>;
    /// Time per output token in microseconds.
    fn tpot_us(&self) -> Option<u64>;
    /// Prompt tokens.
    fn input_tokens(&self) -> Option<u64>;
    /// Completion tokens.
    fn output_tokens(&self) -> Option<u64>;
    /// A free numeric attribute (`attr.cache_hit`).
    fn attr(&self, name: &str) -> Option<f64>;

    /// Whether the request timed out: the provider's `timeout` error class,
    /// or a 504 from a gateway. A timeout took longer than any duration
    /// threshold, whether or not a duration was reported.
    fn timed_out(&self) -> bool {
        self.error_class() == Some("timeout") || self.status() == Some(504)
    }
}

/// The OTLP attribute that names a span's customer when the tenant says
/// nothing: `enduser.id`, `user.id` or any other the provider's
/// instrumentation already sets may be chosen instead.
pub const DEFAULT_OTLP_CUSTOMER_ATTRIBUTE: &str = "slaproof.customer";

/// Checks the name of the OTLP attribute a tenant names customers with:
/// 1 to 128 letters, digits, `_`, `.` or `-`, not starting with `.` or `-`
/// (as the store's rule).
pub fn check_otlp_attribute_name(name: &str) -> Result<(), String> {
    let ok = (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && !name.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be an attribute name of 1 to 128 letters, digits, '_', '.' or '-' (not starting with '.' or '-'), such as enduser.id; got {name:?}"
        ))
    }
}

/// An owned event with every field optional: for tests, previews and callers
/// that have no row type of their own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventView {
    pub service: Option<String>,
    pub model: Option<String>,
    pub status: Option<u16>,
    pub error_class: Option<String>,
    pub source: Option<EventSource>,
    pub streaming: Option<bool>,
    pub latency_us: Option<u64>,
    pub ttft_us: Option<u64>,
    pub tpot_us: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub attrs: BTreeMap<String, f64>,
}

impl EventFields for EventView {
    fn service(&self) -> Option<&str> {
        self.service.as_deref()
    }
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
    fn status(&self) -> Option<u16> {
        self.status
    }
    fn error_class(&self) -> Option<&str> {
        self.error_class.as_deref()
    }
    fn source(&self) -> Option<EventSource> {
        self.source
    }
    fn streaming(&self) -> Option<bool> {
        self.streaming
    }
    fn latency_us(&self) -> Option<u64> {
        self.latency_us
    }
    fn ttft_us(&self) -> Option<u64> {
        self.ttft_us
    }
    fn tpot_us(&self) -> Option<u64> {
        self.tpot_us
    }
    fn input_tokens(&self) -> Option<u64> {
        self.input_tokens
    }
    fn output_tokens(&self) -> Option<u64> {
        self.output_tokens
    }
    fn attr(&self, name: &str) -> Option<f64> {
        self.attrs.get(name).copied()
    }
}

impl<T: EventFields + ?Sized> EventFields for &T {
    fn service(&self) -> Option<&str> {
        (**self).service()
    }
    fn model(&self) -> Option<&str> {
        (**self).model()
    }
    fn status(&self) -> Option<u16> {
        (**self).status()
    }
    fn error_class(&self) -> Option<&str> {
        (**self).error_class()
    }
    fn source(&self) -> Option<EventSource> {
        (**self).source()
    }
    fn streaming(&self) -> Option<bool> {
        (**self).streaming()
    }
    fn latency_us(&self) -> Option<u64> {
        (**self).latency_us()
    }
    fn ttft_us(&self) -> Option<u64> {
        (**self).ttft_us()
    }
    fn tpot_us(&self) -> Option<u64> {
        (**self).tpot_us()
    }
    fn input_tokens(&self) -> Option<u64> {
        (**self).input_tokens()
    }
    fn output_tokens(&self) -> Option<u64> {
        (**self).output_tokens()
    }
    fn attr(&self, name: &str) -> Option<f64> {
        (**self).attr(name)
    }
}
