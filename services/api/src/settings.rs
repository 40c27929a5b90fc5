//! The `[api]` configuration section: who issues tokens, for whom, and the
//! keys their signatures are checked with.

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// How tokens are checked. With no keys every request is refused: the API
/// never trusts a token it cannot verify.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The `aud` every token must carry (one of, when it is a list).
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// Keys tokens are signed with, each pinned to one algorithm.
    pub keys: Vec<KeySettings>,
    /// Whether GraphQL answers introspection queries (each caller sees only
    /// the fields its scopes allow).
    pub graphql_introspection: bool,
    /// Deepest GraphQL query accepted.
    pub graphql_max_depth: usize,
    /// Most costly GraphQL query accepted, in points (a field 1, a read
    /// 10, a list's selection once per item it may hold).
    pub graphql_max_complexity: usize,
    /// Most root fields of one GraphQL operation, aliases included.
    pub graphql_max_root_fields: usize,
    /// Most fields of one GraphQL query, fragments counted where spread.
    pub graphql_max_fields: usize,
    /// Most reads through the application (database transactions) one
    /// GraphQL query makes.
    pub graphql_max_app_reads: usize,
    /// Seconds one GraphQL query may run before it is cancelled.
    pub graphql_timeout_secs: u64,
    /// Seconds a request's body may take to arrive, whole, once its
    /// headers are in: a client sending slower is answered 408 and its
    /// connection freed (`server.header_read_timeout_secs` bounds the
    /// headers, `server.max_connections` the connections).
    pub body_read_timeout_secs: u64,
    /// The HS256 secret (32+ bytes) slaproof signs embed tokens with. Every
    /// replica must share it; unset, slaproof makes one on first start and
    /// keeps it in the database (`platform_secrets`), which every replica
    /// reads.
    pub embed_secret: Option<SecretString>,
    /// The token issuer's JWKS URL (https; plain http only to a loopback
    /// address): its keys are fetched,
    /// kept, refreshed and picked by `kid`, beside the configured `keys`.
    pub jwks_url: Option<String>,
    /// The algorithms a JWKS key may verify: RS256, ES256, EdDSA. HS256 is
    /// never taken from a JWKS (a published key cannot be a secret).
    pub jwks_algorithms: Vec<KeyAlgorithm>,
    /// The tenants (`ten_…`) the JWKS's keys may sign tokens for; empty:
    /// any (an issuer shared by every tenant).
    pub jwks_tenants: Vec<String>,
    /// How long a fetched key set is kept when its answer carries no
    /// `Cache-Control: max-age`, and the longest it is kept at all.
    pub jwks_refresh_secs: u64,
    /// Least time between two fetches, so that tokens naming unknown kids
    /// cannot make slaproof hammer the issuer.
    pub jwks_min_refetch_secs: u64,
    /// Where the built pages are (`npm run build --prefix frontend` writes
    /// `frontend/dist`). Unset: `frontend/dist` in the working directory,
    /// else in the source tree the binary was built from.
    pub pages_dir: Option<std::path::PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            issuer: "slaproof".to_owned(),
            audience: "slaproof-api".to_owned(),
            leeway_secs: 30,
            keys: Vec::new(),
            graphql_introspection: true,
            graphql_max_depth: 10,
            graphql_max_complexity: 500,
            graphql_max_root_fields: crate::graphql::limits::MAX_ROOT_FIELDS,
            graphql_max_fields: crate::graphql::limits::MAX_FIELDS,
            graphql_max_app_reads: crate::graphql::limits::MAX_APP_READS,
            graphql_timeout_secs: crate::graphql::limits::TIME_BUDGET.as_secs(),
            body_read_timeout_secs: 30,
            embed_secret: None,
            jwks_url: None,
            jwks_algorithms: vec![
                KeyAlgorithm::RS256,
                KeyAlgorithm::ES256,
                KeyAlgorithm::EdDSA,
            ],
            jwks_tenants: Vec::new(),
            jwks_refresh_secs: 300,
            jwks_min_refetch_secs: 30,
            pages_dir: None,
        }
    }
}

/// One verification key. The algorithm is part of the key, not of the
/// token: a token whose header names another algorithm is refused, which
/// closes `alg: none` and HS256-with-the-RSA-public-key confusion.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySettings {
    /// The `kid` tokens name this key by. A token without `kid` is checked
    /// against the only key when exactly one is configured.
    pub id: String,
    pub algorithm: KeyAlgorithm,
    /// The public key (SPKI PEM) for RS256, ES256 and EdDSA.
    #[serde(default)]
    pub public_key_pem: Option<String>,
    /// The shared secret for HS256, at least 32 bytes. Only for deployments
    /// whose token issuer cannot sign asymmetrically.
    #[serde(default)]
    pub secret: Option<SecretString>,
    /// Whether this key signs the platform operator's tokens. The
    /// `operator` role (every tenant's administration) is taken only from
    /// tokens such a key verifies, and such a key verifies nothing else:
    /// a tenant's issuer can never mint an operator, and an operator's
    /// key never acts as a tenant's user.
    #[serde(default)]
    pub operator: bool,
    /// The tenants (`ten_…`) this key may sign tokens for; empty: any.
    /// Bind a provider's own identity provider to its tenant, so that its
    /// tokens can never speak for another tenant.
    #[serde(default)]
    pub tenants: Vec<String>,
}

/// The algorithms a key may be pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum KeyAlgorithm {
    RS256,
    ES256,
    EdDSA,
    HS256,
}

impl KeyAlgorithm {
    pub fn jwt(self) -> jsonwebtoken::Algorithm {
        match self {
            KeyAlgorithm::RS256 => jsonwebtoken::Algorithm::RS256,
            KeyAlgorithm::ES256 => jsonwebtoken::Algorithm::ES256,
            KeyAlgorithm::EdDSA => jsonwebtoken::Algorithm::EdDSA,
            KeyAlgorithm::HS256 => jsonwebtoken::Algorithm::HS256,
        }
    }
}

pub use slaproof_domain::settings::SettingsError;

fn invalid(key: &'static str, rule: impl Into<String>) -> SettingsError {
    SettingsError::new(key, rule)
}

/// The `kid` of embed tokens, which slaproof signs itself.
pub const EMBED_KEY_ID: &str = "slaproof-embed";

/// The shortest HS256 secret accepted: RFC 7518 §3.2 asks for a key at
/// least as long as the hash.
pub const MIN_SECRET_BYTES: usize = 32;

impl Settings {
    /// Checks every rule, including that each PEM parses as the key its
    /// algorithm needs.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.issuer.trim().is_empty() {
            return Err(invalid("api.issuer", "must not be empty"));
        }
        if self.audience.trim().is_empty() {
            return Err(invalid("api.audience", "must not be empty"));
        }
        if self.leeway_secs > 300 {
            return Err(invalid(
                "api.leeway_secs",
                format!("must be at most 300, got {}", self.leeway_secs),
            ));
        }
        if !(2..=64).contains(&self.graphql_max_depth) {
            return Err(invalid(
                "api.graphql_max_depth",
                format!("must be between 2 and 64, got {}", self.graphql_max_depth),
            ));
        }
        if !(10..=100_000).contains(&self.graphql_max_complexity) {
            return Err(invalid(
                "api.graphql_max_complexity",
                format!(
                    "must be between 10 and 100000, got {}",
                    self.graphql_max_complexity
                ),
            ));
        }
        for (key, value, range) in [
            (
                "api.graphql_max_root_fields",
                self.graphql_max_root_fields,
                1..=100,
            ),
            (
                "api.graphql_max_fields",
                self.graphql_max_fields,
                10..=100_000,
            ),
            (
                "api.graphql_max_app_reads",
                self.graphql_max_app_reads,
                1..=10_000,
            ),
        ] {
            if !range.contains(&value) {
                return Err(invalid(
                    key,
                    format!(
                        "must be between {} and {}, got {value}",
                        range.start(),
                        range.end()
                    ),
                ));
            }
        }
        if !(1..=300).contains(&self.body_read_timeout_secs) {
            return Err(invalid(
                "api.body_read_timeout_secs",
                format!(
                    "must be between 1 and 300, got {}",
                    self.body_read_timeout_secs
                ),
            ));
        }
        if !(1..=300).contains(&self.graphql_timeout_secs) {
            return Err(invalid(
                "api.graphql_timeout_secs",
                format!(
                    "must be between 1 and 300, got {}",
                    self.graphql_timeout_secs
                ),
            ));
        }
        if let Some(secret) = &self.embed_secret
            && secret.expose_secret().len() < MIN_SECRET_BYTES
        {
            return Err(invalid(
                "api.embed_secret",
                format!("must be at least {MIN_SECRET_BYTES} bytes"),
            ));
        }
        if let Some(url) = &self.jwks_url {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| invalid("api.jwks_url", format!("is not a URL: {e}")))?;
            // Keys fetched over plain HTTP could be swapped by anyone on the
            // path; only a key server on this host may be spoken to so.
            let loopback = parsed
                .host_str()
                .is_some_and(slaproof_domain::settings::is_loopback_host);
            let secure = parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback);
            if !secure || parsed.host().is_none() {
                return Err(invalid(
                    "api.jwks_url",
                    "must be an https URL with a host (plain http only to this host, for tests)",
                ));
            }
        }
        if self.jwks_algorithms.is_empty() {
            return Err(invalid(
                "api.jwks_algorithms",
                "must name at least one algorithm",
            ));
        }
        if self.jwks_algorithms.contains(&KeyAlgorithm::HS256) {
            return Err(invalid(
                "api.jwks_algorithms",
                "HS256 is never taken from a JWKS; configure the secret as a key",
            ));
        }
        if !(10..=86_400).contains(&self.jwks_refresh_secs) {
            return Err(invalid(
                "api.jwks_refresh_secs",
                format!(
                    "must be between 10 and 86400, got {}",
                    self.jwks_refresh_secs
                ),
            ));
        }
        if !(1..=3_600).contains(&self.jwks_min_refetch_secs)
            || self.jwks_min_refetch_secs > self.jwks_refresh_secs
        {
            return Err(invalid(
                "api.jwks_min_refetch_secs",
                format!(
                    "must be between 1 and 3600 and at most jwks_refresh_secs, got {}",
                    self.jwks_min_refetch_secs
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for key in &self.keys {
            if key.id.is_empty() || key.id.len() > 128 {
                return Err(invalid("api.keys.id", "must be 1-128 characters"));
            }
            if key.id == EMBED_KEY_ID {
                return Err(invalid(
                    "api.keys.id",
                    format!("{EMBED_KEY_ID:?} is reserved for embed tokens"),
                ));
            }
            if !seen.insert(key.id.as_str()) {
                return Err(invalid(
                    "api.keys.id",
                    format!("{:?} is used by two keys", key.id),
                ));
            }
            key.decoding_key()?;
            if key.operator && !key.tenants.is_empty() {
                return Err(invalid(
                    "api.keys.tenants",
                    format!(
                        "key {:?}: an operator key spans every tenant; bind only tenants' keys",
                        key.id
                    ),
                ));
            }
            tenant_ids("api.keys.tenants", &key.tenants)?;
        }
        tenant_ids("api.jwks_tenants", &self.jwks_tenants)?;
        Ok(())
    }
}

/// The tenants a key is bound to, parsed; `None` for an unbound key.
pub(crate) fn tenant_ids(
    key: &'static str,
    tenants: &[String],
) -> Result<Option<std::collections::HashSet<slaproof_domain::ids::TenantId>>, SettingsError> {
    if tenants.is_empty() {
        return Ok(None);
    }
    tenants
        .iter()
        .map(|t| {
            t.parse()
                .map_err(|_| invalid(key, format!("{t:?} is not a tenant id (ten_…)")))
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

impl KeySettings {
    /// The key signatures are checked with, built from the configured
    /// material of the pinned algorithm and nothing else.
    pub fn decoding_key(&self) -> Result<jsonwebtoken::DecodingKey, SettingsError> {
        use jsonwebtoken::DecodingKey;
        let id = &self.id;
        match (self.algorithm, &self.public_key_pem, &self.secret) {
            (KeyAlgorithm::HS256, None, Some(secret)) => {
                let secret = secret.expose_secret().as_bytes();
                if secret.len() < MIN_SECRET_BYTES {
                    return Err(invalid(
                        "api.keys.secret",
                        format!("key {id:?}: must be at least {MIN_SECRET_BYTES} bytes"),
                    ));
                }
                DecodingKey::from_secret(secret)
                    .map_err(|e| invalid("api.keys.secret", format!("key {id:?}: {e}")))
            }
            (KeyAlgorithm::HS256, _, _) => Err(invalid(
                "api.keys.secret",
                format!("key {id:?}: HS256 needs `secret` and no `public_key_pem`"),
            )),
            (algorithm, Some(pem), None) => {
                let pem = pem.as_bytes();
                let key = match algorithm {
                    KeyAlgorithm::RS256 => DecodingKey::from_rsa_pem(pem),
                    KeyAlgorithm::ES256 => DecodingKey::from_ec_pem(pem),
                    _ => DecodingKey::from_ed_pem(pem),
                };
                key.map_err(|e| {
                    invalid(
                        "api.keys.public_key_pem",
                        format!("key {id:?}: not a {algorithm:?} public key in PEM: {e}"),
                    )
                })
            }
            (algorithm, _, _) => Err(invalid(
                "api.keys.public_key_pem",
                format!("key {id:?}: {algorithm:?} needs `public_key_pem` and no `secret`"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_jwks(url: &str) -> Result<(), SettingsError> {
        Settings {
            jwks_url: Some(url.to_owned()),
            ..Settings::default()
        }
        .validate()
    }

    #[test]
    fn a_jwks_url_must_be_https_unless_it_is_this_host() {
        // Found by reading the code: `http://` key sets were accepted, so
        // anyone on the path could hand slaproof keys of their own.
        let err = with_jwks("http://issuer.example.com/.well-known/jwks.json").unwrap_err();
        assert_eq!(err.key, "api.jwks_url");
        assert!(with_jwks("ftp://issuer.example.com/jwks").is_err());
        assert!(with_jwks("https://issuer.example.com/.well-known/jwks.json").is_ok());
        for local in [
            "http://127.0.0.1:8080/jwks",
            "http://[::1]:8080/jwks",
            "http://localhost/jwks",
        ] {
            assert!(with_jwks(local).is_ok(), "{local}");
        }
    }

    #[test]
    fn graphql_limits_are_settings_within_bounds() {
        assert!(Settings::default().validate().is_ok());
        for (settings, key) in [
            (
                Settings {
                    graphql_max_root_fields: 0,
                    ..Settings::default()
                },
                "api.graphql_max_root_fields",
            ),
            (
                Settings {
                    graphql_max_fields: 1_000_000,
                    ..Settings::default()
                },
                "api.graphql_max_fields",
            ),
            (
                Settings {
                    graphql_max_app_reads: 0,
                    ..Settings::default()
                },
                "api.graphql_max_app_reads",
            ),
            (
                Settings {
                    graphql_timeout_secs: 0,
                    ..Settings::default()
                },
                "api.graphql_timeout_secs",
            ),
            (
                Settings {
                    body_read_timeout_secs: 0,
                    ..Settings::default()
                },
                "api.body_read_timeout_secs",
            ),
        ] {
            assert_eq!(settings.validate().unwrap_err().key, key);
        }
    }
}
