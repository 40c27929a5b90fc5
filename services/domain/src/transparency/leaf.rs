//! A log leaf: one stored event as canonical JSON, salted per leaf.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::Hash;

/// The HMAC context of a leaf's salt: bumped if the leaf format changes.
pub const SALT_CONTEXT: &[u8] = b"slaproof.transparency.leaf-salt.v1";

/// A leaf's salt: HMAC-SHA256 under the deployment's log secret of the
/// tenant and event ids. Only the leaf's own proof reveals it, so a sibling
/// hash (the hash of another customer's salted leaf) cannot be tested
/// against guessed contents.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LeafSalt([u8; 32]);

impl LeafSalt {
    /// The salt of `event` in `tenant`'s log.
    pub fn derive(secret: &[u8], tenant: uuid::Uuid, event: uuid::Uuid) -> Self {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
            .expect("HMAC-SHA256 takes a key of any length");
        mac.update(SALT_CONTEXT);
        mac.update(tenant.as_bytes());
        mac.update(event.as_bytes());
        Self(mac.finalize().into_bytes().into())
    }

    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl std::fmt::Debug for LeafSalt {
    // A salt is a secret until its leaf's proof is given out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeafSalt(..)")
    }
}

/// One event as the log holds it. The leaf's bytes are this struct as
/// compact JSON with the fields in this order (`serde_json`'s output:
/// no spaces, integers as integers, absent values as `null` except
/// `customer`, which is left out when the event names none, strings with
/// JSON's minimal escaping); its hash is RFC 6962's `SHA-256(0x00 ‖ bytes)`.
/// Times are integer microseconds since the Unix epoch, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leaf {
    /// The format's version: 1.
    pub v: u8,
    /// The leaf's salt, 64 hex digits.
    pub salt: String,
    /// The event's id (`evt_…`).
    pub event: String,
    pub request_id: Option<String>,
    /// `provider` or `probe`.
    pub source: String,
    pub service: String,
    /// The customer the request served (the provider's reference), when
    /// the event named one. Absent from the bytes when there is none, so
    /// leaves of events without a customer keep the bytes they always had.
    /// Only the leaf's own proof opens it: the public log holds salted
    /// hashes, which reveal neither names nor volumes per customer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer: Option<String>,
    pub model: Option<String>,
    pub occurred_at_us: i64,
    pub received_at_us: i64,
    /// Logged in a later day's batch than its own day.
    pub late: bool,
    pub status: Option<i32>,
    pub error_class: Option<String>,
    pub latency_us: Option<i64>,
    pub ttft_us: Option<i64>,
    pub tpot_us: Option<i64>,
    pub input_tokens: Option<i32>,
    pub output_tokens: Option<i32>,
    pub streaming: Option<bool>,
}

impl Leaf {
    /// The version of the leaf format this code writes.
    pub const VERSION: u8 = 1;

    /// The leaf's bytes: what is hashed and what a proof hands out.
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a leaf always serializes")
    }

    /// RFC 6962's leaf hash of [`Leaf::bytes`].
    pub fn hash(&self) -> Hash {
        tlog_tiles::record_hash(&self.bytes())
    }

    /// Reads a leaf from the bytes a proof carries; the same bytes, not a
    /// re-encoding, are what must hash to the proof's leaf.
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf() -> Leaf {
        Leaf {
            v: 1,
            salt: LeafSalt::derive(b"secret", uuid::Uuid::nil(), uuid::Uuid::max()).hex(),
            event: "evt_00000000000000000000000000000001".into(),
            request_id: Some("req \"1\"".into()),
            source: "provider".into(),
            service: "chat".into(),
            customer: None,
            model: None,
            occurred_at_us: 1_764_547_200_000_000,
            received_at_us: 1_764_547_200_500_000,
            late: false,
            status: Some(200),
            error_class: None,
            latency_us: Some(250_000),
            ttft_us: None,
            tpot_us: None,
            input_tokens: Some(12),
            output_tokens: None,
            streaming: Some(false),
        }
    }

    #[test]
    fn the_bytes_are_the_documented_canonical_json() {
        let l = leaf();
        let text = String::from_utf8(l.bytes()).unwrap();
        assert!(text.starts_with(r#"{"v":1,"salt":""#), "{text}");
        assert!(
            text.ends_with(
                r#""event":"evt_00000000000000000000000000000001","request_id":"req \"1\"","source":"provider","service":"chat","model":null,"occurred_at_us":1764547200000000,"received_at_us":1764547200500000,"late":false,"status":200,"error_class":null,"latency_us":250000,"ttft_us":null,"tpot_us":null,"input_tokens":12,"output_tokens":null,"streaming":false}"#
            ),
            "{text}"
        );
        assert_eq!(Leaf::parse(&l.bytes()).unwrap(), l);
    }

    #[test]
    fn the_hash_is_rfc_6962s_leaf_hash_and_any_change_moves_it() {
        use sha2::Digest;
        let l = leaf();
        let mut prefixed = vec![0u8];
        prefixed.extend(l.bytes());
        assert_eq!(l.hash().0, <[u8; 32]>::from(Sha256::digest(&prefixed)));
        let mut altered = l.clone();
        altered.latency_us = Some(250_001);
        assert_ne!(altered.hash(), l.hash());
    }

    #[test]
    fn salts_differ_by_tenant_event_and_secret() {
        let (t, e) = (uuid::Uuid::from_u128(1), uuid::Uuid::from_u128(2));
        let s = LeafSalt::derive(b"k", t, e);
        assert_ne!(s, LeafSalt::derive(b"k", e, t));
        assert_ne!(s, LeafSalt::derive(b"k2", t, e));
        assert_eq!(s, LeafSalt::derive(b"k", t, e));
        assert_eq!(format!("{s:?}"), "LeafSalt(..)");
    }
}
