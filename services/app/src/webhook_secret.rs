//! Webhook signing secrets: made (`whsec_` + base64 of 32 random bytes),
//! sealed at rest with AES-256-GCM under the platform's webhook key, and
//! opened by the worker that signs with them. An endpoint's custom headers
//! (whose values are often the receiver's credentials) are sealed the same
//! way, under their own associated data, and so are a probe's request
//! headers, value by value (`sealed:v1:` + base64), so that a probe's
//! definition keeps its shape.

use std::collections::BTreeMap;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use slaproof_domain::ids::{TenantId, WebhookEndpointId};

/// The prefix Standard Webhooks gives secrets.
pub const SECRET_PREFIX: &str = "whsec_";

const NONCE_LEN: usize = 12;

/// A signing secret in the clear: the bytes HMAC keys with. `Debug` never
/// shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(Vec<u8>);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(<redacted>)")
    }
}

impl SigningSecret {
    /// A fresh secret of 32 random bytes.
    pub fn generate() -> Self {
        Self(rand::random::<[u8; 32]>().to_vec())
    }

    /// The bytes HMAC-SHA256 keys with.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The form shown to the provider once: `whsec_` + base64.
    pub fn reveal(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// Parses `whsec_…` (or bare base64), as receivers do.
    pub fn parse(text: &str) -> Option<Self> {
        let encoded = text.strip_prefix(SECRET_PREFIX).unwrap_or(text);
        STANDARD.decode(encoded).ok().map(Self)
    }
}

/// The key endpoint secrets are sealed under (32 bytes), and the keys it
/// replaced, which still open what they sealed until a re-seal
/// ([`crate::App::reseal_webhook_secrets`]) moves it under the current
/// one. `Debug` never shows them.
#[derive(Clone)]
pub struct WebhookKey {
    current: [u8; 32],
    previous: Vec<[u8; 32]>,
}

impl std::fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookKey(<redacted>)")
    }
}

/// Why a sealed secret could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("the webhook key must be 32 bytes, base64-encoded (got {0} bytes)")]
    KeyLength(usize),
    #[error("the webhook key is not base64: {0}")]
    KeyEncoding(String),
    #[error("the sealed secret does not open under the webhook key (a different key, or altered)")]
    Open,
    #[error(
        "the sealed custom headers do not open under the webhook key (a different key, or altered)"
    )]
    OpenHeaders,
}

impl WebhookKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SealError> {
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| SealError::KeyLength(bytes.len()))?;
        Ok(Self {
            current: key,
            previous: Vec::new(),
        })
    }

    /// This key, still opening what `older` keys sealed (their own
    /// previous keys included); sealing uses this one only.
    pub fn with_previous(mut self, older: impl IntoIterator<Item = WebhookKey>) -> Self {
        for key in older {
            for bytes in std::iter::once(key.current).chain(key.previous) {
                if bytes != self.current && !self.previous.contains(&bytes) {
                    self.previous.push(bytes);
                }
            }
        }
        self
    }

    /// How many replaced keys this one still opens with.
    pub fn previous_count(&self) -> usize {
        self.previous.len()
    }

    /// A key as configured: base64 of 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|e| SealError::KeyEncoding(e.to_string()))?;
        Self::from_bytes(&bytes)
    }

    fn cipher(key: &[u8; 32]) -> Aes256Gcm {
        Aes256Gcm::new(key.into())
    }

    /// Seals `secret` for one endpoint: the tenant and endpoint are bound in
    /// as associated data, so a sealed secret copied onto another
    /// endpoint's row does not open.
    pub fn seal(
        &self,
        tenant: TenantId,
        endpoint: WebhookEndpointId,
        secret: &SigningSecret,
    ) -> Vec<u8> {
        seal_under(
            &self.current,
            &associated(Sealed::Secret, tenant, endpoint),
            secret.bytes(),
        )
    }

    /// Opens what [`seal`](Self::seal) made for this endpoint, under the
    /// current key or a replaced one.
    pub fn open(
        &self,
        tenant: TenantId,
        endpoint: WebhookEndpointId,
        sealed: &[u8],
    ) -> Result<SigningSecret, SealError> {
        self.open_bytes(&associated(Sealed::Secret, tenant, endpoint), sealed)
            .map(SigningSecret)
            .ok_or(SealError::Open)
    }

    /// Whether `sealed` opens under the current key (a re-seal leaves it).
    pub fn is_current(&self, tenant: TenantId, endpoint: WebhookEndpointId, sealed: &[u8]) -> bool {
        open_under(
            &self.current,
            &associated(Sealed::Secret, tenant, endpoint),
            sealed,
        )
        .is_some()
    }

    /// Seals an endpoint's custom headers (names and values, as JSON),
    /// bound to the tenant and endpoint like its secret but under other
    /// associated data, so neither opens as the other.
    pub fn seal_headers(
        &self,
        tenant: TenantId,
        endpoint: WebhookEndpointId,
        headers: &BTreeMap<String, String>,
    ) -> Vec<u8> {
        // A map of strings always serializes.
        let json = serde_json::to_vec(headers).unwrap_or_default();
        seal_under(
            &self.current,
            &associated(Sealed::Headers, tenant, endpoint),
            &json,
        )
    }

    /// Opens what [`seal_headers`](Self::seal_headers) made for this
    /// endpoint, under the current key or a replaced one.
    pub fn open_headers(
        &self,
        tenant: TenantId,
        endpoint: WebhookEndpointId,
        sealed: &[u8],
    ) -> Result<BTreeMap<String, String>, SealError> {
        self.open_bytes(&associated(Sealed::Headers, tenant, endpoint), sealed)
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or(SealError::OpenHeaders)
    }

    /// Whether sealed headers open under the current key.
    pub fn headers_current(
        &self,
        tenant: TenantId,
        endpoint: WebhookEndpointId,
        sealed: &[u8],
    ) -> bool {
        open_under(
            &self.current,
            &associated(Sealed::Headers, tenant, endpoint),
            sealed,
        )
        .is_some()
    }

    /// Seals the value of a probe's request header `name` for `tenant`:
    /// [`PROBE_HEADER_PREFIX`] and base64 of the nonce, ciphertext and tag.
    pub fn seal_probe_header(&self, tenant: TenantId, name: &str, value: &str) -> String {
        let sealed = seal_under(
            &self.current,
            &probe_header_aad(tenant, name),
            value.as_bytes(),
        );
        format!("{PROBE_HEADER_PREFIX}{}", STANDARD.encode(sealed))
    }

    /// A probe header's value as sent: opened when sealed (under the
    /// current key or a replaced one), as stored when written before
    /// headers were sealed (no [`PROBE_HEADER_PREFIX`]).
    pub fn open_probe_header(
        &self,
        tenant: TenantId,
        name: &str,
        stored: &str,
    ) -> Result<String, SealError> {
        let Some(encoded) = stored.strip_prefix(PROBE_HEADER_PREFIX) else {
            return Ok(stored.to_owned());
        };
        let sealed = STANDARD
            .decode(encoded)
            .map_err(|_| SealError::OpenHeaders)?;
        self.open_bytes(&probe_header_aad(tenant, name), &sealed)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or(SealError::OpenHeaders)
    }

    /// Whether a stored probe header value is sealed under the current key.
    pub fn probe_header_current(&self, tenant: TenantId, name: &str, stored: &str) -> bool {
        stored
            .strip_prefix(PROBE_HEADER_PREFIX)
            .and_then(|encoded| STANDARD.decode(encoded).ok())
            .is_some_and(|sealed| {
                open_under(&self.current, &probe_header_aad(tenant, name), &sealed).is_some()
            })
    }

    fn open_bytes(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .find_map(|key| open_under(key, aad, sealed))
    }
}

/// How a sealed probe header value begins.
pub const PROBE_HEADER_PREFIX: &str = "sealed:v1:";

/// A probe header's associated data: its tenant and name (a probe's id is
/// drawn when it is stored, after its headers are sealed).
fn probe_header_aad(tenant: TenantId, name: &str) -> Vec<u8> {
    let mut aad = b"slaproof.probe.header".to_vec();
    aad.extend_from_slice(tenant.uuid().as_bytes());
    aad.extend_from_slice(name.to_ascii_lowercase().as_bytes());
    aad
}

/// What a sealed value is, bound into its associated data.
#[derive(Clone, Copy)]
enum Sealed {
    Secret,
    Headers,
}

/// A fresh nonce, then `msg` encrypted under `key` with `aad`.
fn seal_under(key: &[u8; 32], aad: &[u8], msg: &[u8]) -> Vec<u8> {
    let nonce = rand::random::<[u8; NONCE_LEN]>();
    let sealed = WebhookKey::cipher(key)
        .encrypt(Nonce::from_slice(&nonce), Payload { msg, aad })
        // AES-GCM fails only on inputs of gigabytes.
        .unwrap_or_default();
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    out
}

fn open_under(key: &[u8; 32], aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
    WebhookKey::cipher(key)
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .ok()
}

/// The tenant and endpoint a sealed value belongs to; headers carry a
/// prefix (secrets, sealed first, kept the bare form).
fn associated(what: Sealed, tenant: TenantId, endpoint: WebhookEndpointId) -> Vec<u8> {
    let mut aad = match what {
        Sealed::Secret => Vec::new(),
        Sealed::Headers => b"slaproof.webhook.headers".to_vec(),
    };
    aad.extend_from_slice(tenant.uuid().as_bytes());
    aad.extend_from_slice(endpoint.uuid().as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_for_its_endpoint_under_its_key() {
        let key = WebhookKey::from_bytes(&[7; 32]).unwrap();
        let (tenant, endpoint) = (TenantId::new(), WebhookEndpointId::new());
        let secret = SigningSecret::generate();
        let sealed = key.seal(tenant, endpoint, &secret);
        assert_eq!(key.open(tenant, endpoint, &sealed).unwrap(), secret);
        assert!(key.open(tenant, WebhookEndpointId::new(), &sealed).is_err());
        let other = WebhookKey::from_bytes(&[8; 32]).unwrap();
        assert!(other.open(tenant, endpoint, &sealed).is_err());
        let mut altered = sealed.clone();
        altered[20] ^= 1;
        assert!(key.open(tenant, endpoint, &altered).is_err());
    }

    #[test]
    fn a_rotated_key_opens_what_the_old_one_sealed_and_seals_under_the_new() {
        let (tenant, endpoint) = (TenantId::new(), WebhookEndpointId::new());
        let secret = SigningSecret::generate();
        let old = WebhookKey::from_bytes(&[1; 32]).unwrap();
        let sealed_old = old.seal(tenant, endpoint, &secret);
        let new = WebhookKey::from_bytes(&[2; 32])
            .unwrap()
            .with_previous([old.clone()]);
        assert_eq!(new.open(tenant, endpoint, &sealed_old).unwrap(), secret);
        assert!(!new.is_current(tenant, endpoint, &sealed_old));
        let sealed_new = new.seal(tenant, endpoint, &secret);
        assert!(new.is_current(tenant, endpoint, &sealed_new));
        assert!(old.open(tenant, endpoint, &sealed_new).is_err());
        let alone = WebhookKey::from_bytes(&[2; 32]).unwrap();
        assert!(alone.open(tenant, endpoint, &sealed_old).is_err());
        assert_eq!(new.with_previous([old]).previous_count(), 1);
    }

    #[test]
    fn headers_open_for_their_endpoint_only_and_never_as_a_secret() {
        let key = WebhookKey::from_bytes(&[7; 32]).unwrap();
        let (tenant, endpoint) = (TenantId::new(), WebhookEndpointId::new());
        let headers = BTreeMap::from([("authorization".to_owned(), "Bearer s3cr3t".to_owned())]);
        let sealed = key.seal_headers(tenant, endpoint, &headers);
        assert!(!sealed.windows(6).any(|w| w == b"s3cr3t"));
        assert_eq!(
            key.open_headers(tenant, endpoint, &sealed).unwrap(),
            headers
        );
        assert!(key.headers_current(tenant, endpoint, &sealed));
        assert!(
            key.open_headers(tenant, WebhookEndpointId::new(), &sealed)
                .is_err()
        );
        assert!(key.open(tenant, endpoint, &sealed).is_err(), "not a secret");
        let secret = key.seal(tenant, endpoint, &SigningSecret::generate());
        assert!(key.open_headers(tenant, endpoint, &secret).is_err());
        let rotated = WebhookKey::from_bytes(&[8; 32])
            .unwrap()
            .with_previous([key]);
        assert_eq!(
            rotated.open_headers(tenant, endpoint, &sealed).unwrap(),
            headers
        );
        assert!(!rotated.headers_current(tenant, endpoint, &sealed));
    }

    #[test]
    fn probe_headers_open_for_their_tenant_and_name_and_old_values_pass() {
        let key = WebhookKey::from_bytes(&[7; 32]).unwrap();
        let tenant = TenantId::new();
        let sealed = key.seal_probe_header(tenant, "authorization", "Bearer sk-1");
        assert!(sealed.starts_with(PROBE_HEADER_PREFIX) && !sealed.contains("sk-1"));
        assert_eq!(
            key.open_probe_header(tenant, "Authorization", &sealed)
                .unwrap(),
            "Bearer sk-1"
        );
        assert!(key.probe_header_current(tenant, "authorization", &sealed));
        assert!(
            key.open_probe_header(TenantId::new(), "authorization", &sealed)
                .is_err()
        );
        assert!(key.open_probe_header(tenant, "x-api-key", &sealed).is_err());
        assert_eq!(
            key.open_probe_header(tenant, "authorization", "Bearer old")
                .unwrap(),
            "Bearer old"
        );
        assert!(!key.probe_header_current(tenant, "authorization", "Bearer old"));
    }

    #[test]
    fn secrets_read_back_from_their_shown_form_and_never_debug() {
        let secret = SigningSecret::generate();
        let shown = secret.reveal();
        assert!(shown.starts_with("whsec_"));
        assert_eq!(SigningSecret::parse(&shown).unwrap(), secret);
        assert!(!format!("{secret:?}").contains(&shown[6..]));
        assert!(WebhookKey::from_base64("c2hvcnQ=").is_err());
    }
}
