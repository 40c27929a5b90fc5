//! Prefixed, typed identifiers (`ten_…`, `sla_…`) that cannot be mixed up.
//!
//! Each id is a UUID v7 (time-ordered, so b-tree inserts stay local) shown to
//! people and APIs with a short prefix naming what it identifies. A tenant id
//! can never be passed where an SLA id is expected, and a string with the
//! wrong prefix is refused when parsed.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// What a kind of id is called and how it is prefixed.
pub trait IdKind: 'static {
    /// The prefix, without the underscore, e.g. `sla`.
    const PREFIX: &'static str;
    /// What the id identifies, for error messages, e.g. `SLA`.
    const NAME: &'static str;
}

macro_rules! id_kinds {
    ($($(#[$doc:meta])* $kind:ident => $alias:ident, $prefix:literal, $name:literal;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum $kind {}
            impl IdKind for $kind {
                const PREFIX: &'static str = $prefix;
                const NAME: &'static str = $name;
            }
            $(#[$doc])*
            pub type $alias = Id<$kind>;
        )*
    };
}

id_kinds! {
    /// A provider using slaproof.
    TenantKind => TenantId, "ten", "tenant";
    /// A key a tenant sends telemetry with.
    IngestKeyKind => IngestKeyId, "key", "ingest key";
    /// A customer of a tenant.
    CustomerKind => CustomerId, "cus", "customer";
    /// An SLA between a tenant and a customer (all of its versions).
    SlaKind => SlaId, "sla", "SLA";
    /// A planned maintenance window.
    MaintenanceWindowKind => MaintenanceWindowId, "mw", "maintenance window";
    /// One request or probe measured.
    EventKind => EventId, "evt", "event";
    /// A unit of background work.
    JobKind => JobId, "job", "job";
    /// A fact waiting to be delivered to the outside.
    OutboxMessageKind => OutboxMessageId, "msg", "outbox message";
    /// A synthetic probe: an endpoint slaproof measures itself.
    ProbeKind => ProbeId, "prb", "probe";
    /// A record of an action that changed an SLA's verdict.
    AuditRecordKind => AuditRecordId, "aud", "audit record";
    /// A URL a tenant receives webhooks at.
    WebhookEndpointKind => WebhookEndpointId, "ep", "webhook endpoint";
    /// A service credit ledger entry.
    CreditEntryKind => CreditId, "cred", "credit";
}

/// A typed id: a UUID shown as `prefix_<32 hex digits>`.
pub struct Id<K: IdKind> {
    uuid: Uuid,
    kind: PhantomData<K>,
}

impl<K: IdKind> Id<K> {
    /// A new, time-ordered id.
    pub fn new() -> Self {
        Self::from_uuid(Uuid::now_v7())
    }

    /// Wraps a UUID read from storage.
    pub const fn from_uuid(uuid: Uuid) -> Self {
        Self {
            uuid,
            kind: PhantomData,
        }
    }

    /// The UUID as stored in the database.
    pub const fn uuid(&self) -> Uuid {
        self.uuid
    }
}

impl<K: IdKind> Default for Id<K> {
    fn default() -> Self {
        Self::new()
    }
}

// Manual impls: a derive would demand the bounds of the phantom kind.
impl<K: IdKind> Clone for Id<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K: IdKind> Copy for Id<K> {}
impl<K: IdKind> PartialEq for Id<K> {
    fn eq(&self, other: &Self) -> bool {
        self.uuid == other.uuid
    }
}
impl<K: IdKind> Eq for Id<K> {}
impl<K: IdKind> std::hash::Hash for Id<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.uuid.hash(state);
    }
}
impl<K: IdKind> PartialOrd for Id<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: IdKind> Ord for Id<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.uuid.cmp(&other.uuid)
    }
}

impl<K: IdKind> fmt::Display for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", K::PREFIX, self.uuid.simple())
    }
}

impl<K: IdKind> fmt::Debug for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a string is not an id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a {name} id: expected `{prefix}_` followed by 32 hex digits")]
pub struct IdParseError {
    input: String,
    name: &'static str,
    prefix: &'static str,
}

impl<K: IdKind> FromStr for Id<K> {
    type Err = IdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || IdParseError {
            input: s.chars().take(80).collect(),
            name: K::NAME,
            prefix: K::PREFIX,
        };
        let rest = s
            .strip_prefix(K::PREFIX)
            .and_then(|r| r.strip_prefix('_'))
            .ok_or_else(err)?;
        if rest.len() != 32 || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(err());
        }
        Uuid::parse_str(rest)
            .map(Self::from_uuid)
            .map_err(|_| err())
    }
}

impl<K: IdKind> Serialize for Id<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, K: IdKind> Deserialize<'de> for Id<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        let id = SlaId::new();
        let shown = id.to_string();
        assert!(shown.starts_with("sla_"));
        assert_eq!(shown.len(), 4 + 32);
        assert_eq!(shown.parse::<SlaId>().unwrap(), id);
    }

    #[test]
    fn wrong_prefix_is_refused_with_the_expected_one() {
        let tenant = TenantId::new().to_string();
        let err = tenant.parse::<SlaId>().unwrap_err();
        assert!(err.to_string().contains("not a SLA id"), "{err}");
        assert!(err.to_string().contains("`sla_`"), "{err}");
    }

    #[test]
    fn garbage_is_refused() {
        for bad in [
            "",
            "sla_",
            "sla_xyz",
            "sla-0190f5b4c5a37c3e8d5c2a9f4b1e6d70",
            "sla_0190f5b4c5a37c3e8d5c2a9f4b1e6d7",
        ] {
            assert!(bad.parse::<SlaId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_uses_the_prefixed_form() {
        let id = TenantId::new();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        let back: TenantId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, id);
    }
}
