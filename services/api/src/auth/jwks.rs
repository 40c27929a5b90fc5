//! Keys from the token issuer's JWKS: fetched, kept while fresh
//! (`Cache-Control: max-age` or `api.jwks_refresh_secs`), fetched again
//! when a token names a `kid` not in the set (at most once per
//! `api.jwks_min_refetch_secs`, so unknown kids cannot make slaproof
//! hammer the issuer), and each pinned to one algorithm.
//!
//! A key's algorithm is its `alg` when it has one, else what its type
//! means (RSA: RS256, EC P-256: ES256, OKP Ed25519: EdDSA); it must be one
//! of `api.jwks_algorithms`. Symmetric keys (`kty: oct`) are never taken:
//! a published key is no secret. Keys for encryption (`use: enc`) and
//! keys without `kid` are left out.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm as JwkAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::auth::{AuthError, VerifyingKey};
use crate::settings::{Settings, SettingsError};

/// How many refresh periods a stale key set's keys still verify while
/// fetches fail (an hour at the default `api.jwks_refresh_secs`).
const STALE_GRACE_REFRESHES: u32 = 12;

/// The largest key set document read: a JWKS is a few kilobytes.
const MAX_BODY_BYTES: usize = 1 << 20;

/// Why a fetch failed; logged, never shown to a caller.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("fetching the JWKS: {0}")]
    Fetch(#[from] reqwest::Error),
    #[error("the JWKS answered {0}")]
    Status(reqwest::StatusCode),
    #[error("the JWKS is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    #[error("the JWKS is not a key set: {0}")]
    Parse(#[from] serde_json::Error),
}

#[derive(Debug, Default)]
struct State {
    keys: HashMap<String, Arc<VerifyingKey>>,
    /// Until when the set is fresh; `None` before the first fetch.
    fresh_until: Option<Instant>,
    /// The last fetch tried, successful or not: the rate limit's clock.
    last_attempt: Option<Instant>,
}

/// The issuer's key set, fetched from `api.jwks_url`.
#[derive(Debug)]
pub struct Jwks {
    url: reqwest::Url,
    client: reqwest::Client,
    allowed: Vec<Algorithm>,
    refresh: Duration,
    min_refetch: Duration,
    settings: Settings,
    /// The tenants its keys may sign tokens for (`api.jwks_tenants`);
    /// `None`: any.
    tenants: Option<Arc<std::collections::HashSet<slaproof_domain::ids::TenantId>>>,
    state: RwLock<State>,
    /// One fetch at a time; callers waiting on it then read its result.
    fetching: tokio::sync::Mutex<()>,
}

impl Jwks {
    /// The key set of `settings.jwks_url`, if one is configured. Nothing
    /// is fetched until the first token needs it.
    pub fn from_settings(settings: &Settings) -> Result<Option<Self>, SettingsError> {
        let Some(url) = &settings.jwks_url else {
            return Ok(None);
        };
        let invalid = |rule: String| SettingsError {
            key: "api.jwks_url",
            rule,
        };
        let url = reqwest::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Some(Self {
            url,
            client,
            allowed: settings.jwks_algorithms.iter().map(|a| a.jwt()).collect(),
            refresh: Duration::from_secs(settings.jwks_refresh_secs),
            min_refetch: Duration::from_secs(settings.jwks_min_refetch_secs),
            settings: settings.clone(),
            tenants: crate::settings::tenant_ids("api.jwks_tenants", &settings.jwks_tenants)?
                .map(Arc::new),
            state: RwLock::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }))
    }

    /// The key a token's `kid` names: from the kept set while it is
    /// fresh, else after fetching the set again (rate-limited).
    pub async fn key(&self, kid: &str) -> Result<Arc<VerifyingKey>, AuthError> {
        let (found, fresh) = self.lookup(kid);
        match found {
            Some(key) if fresh => return Ok(key),
            // A kept key still verifies while a stale set is refetched.
            _ if !self.may_fetch() => return found.ok_or(AuthError::UnknownKey),
            _ => {}
        }
        let _one_at_a_time = self.fetching.lock().await;
        // Another caller may have fetched while this one waited.
        let (again, fresh_now) = self.lookup(kid);
        if let Some(key) = again.as_ref().filter(|_| fresh_now) {
            return Ok(key.clone());
        }
        if self.may_fetch()
            && let Err(e) = self.fetch().await
        {
            tracing::warn!(url = %self.url, error = %e, "JWKS fetch failed; keeping the keys held");
        }
        self.lookup(kid).0.ok_or(AuthError::UnknownKey)
    }

    /// The kept key `kid` and whether the set is fresh. A stale set's keys
    /// verify for [`STALE_GRACE_REFRESHES`] refresh periods more while
    /// fetches fail, then none does: an issuer outage does not log
    /// everyone out at once, and a key the issuer withdrew (a leaked one)
    /// does not verify for ever.
    fn lookup(&self, kid: &str) -> (Option<Arc<VerifyingKey>>, bool) {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let fresh = state.fresh_until.is_some_and(|t| now < t);
        let usable = state
            .fresh_until
            .is_some_and(|t| now < t + self.refresh * STALE_GRACE_REFRESHES);
        (state.keys.get(kid).filter(|_| usable).cloned(), fresh)
    }

    fn may_fetch(&self) -> bool {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state
            .last_attempt
            .is_none_or(|t| t.elapsed() >= self.min_refetch)
    }

    /// Fetches the set and replaces the kept keys with it. A failed fetch
    /// keeps the old keys (an issuer outage does not log everyone out) and
    /// still counts for the rate limit.
    async fn fetch(&self) -> Result<(), JwksError> {
        self.state
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .last_attempt = Some(Instant::now());
        let response = self.client.get(self.url.clone()).send().await?;
        if !response.status().is_success() {
            return Err(JwksError::Status(response.status()));
        }
        let max_age = response
            .headers()
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .and_then(max_age);
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BODY_BYTES as u64)
        {
            return Err(JwksError::TooLarge);
        }
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response.chunk().await? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BODY_BYTES {
                return Err(JwksError::TooLarge);
            }
        }
        let set: JwkSet = serde_json::from_slice(&body)?;
        let keys = self.usable(&set);
        // The issuer's max-age within [min_refetch, refresh]: never longer
        // than configured, never so short that every request fetches.
        let keep = max_age
            .map(Duration::from_secs)
            .unwrap_or(self.refresh)
            .clamp(self.min_refetch, self.refresh);
        tracing::info!(url = %self.url, keys = keys.len(), keep_secs = keep.as_secs(), "JWKS fetched");
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        state.keys = keys;
        state.fresh_until = Some(Instant::now() + keep);
        Ok(())
    }

    /// The keys of a set that may verify tokens, by kid.
    fn usable(&self, set: &JwkSet) -> HashMap<String, Arc<VerifyingKey>> {
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            let Some(kid) = jwk.common.key_id.clone() else {
                continue;
            };
            match self.pin(jwk) {
                Ok(key) => {
                    keys.insert(kid, Arc::new(key));
                }
                Err(reason) => {
                    tracing::debug!(kid, reason, "JWKS key left out");
                }
            }
        }
        keys
    }

    fn pin(&self, jwk: &Jwk) -> Result<VerifyingKey, &'static str> {
        if jwk.common.public_key_use == Some(PublicKeyUse::Encryption) {
            return Err("an encryption key");
        }
        let by_type = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Algorithm::RS256,
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                Algorithm::ES256
            }
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
                Algorithm::EdDSA
            }
            AlgorithmParameters::OctetKey(_) => return Err("a symmetric key"),
            _ => return Err("an unsupported key type or curve"),
        };
        let algorithm = match jwk.common.key_algorithm {
            None => by_type,
            Some(JwkAlgorithm::RS256) if by_type == Algorithm::RS256 => Algorithm::RS256,
            Some(JwkAlgorithm::ES256) if by_type == Algorithm::ES256 => Algorithm::ES256,
            Some(JwkAlgorithm::EdDSA) if by_type == Algorithm::EdDSA => Algorithm::EdDSA,
            Some(_) => return Err("an alg that is not its key type's or not supported"),
        };
        if !self.allowed.contains(&algorithm) {
            return Err("an algorithm not in api.jwks_algorithms");
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|_| "unreadable key material")?;
        Ok(VerifyingKey::new(algorithm, key, &self.settings).bound_to(self.tenants.clone()))
    }
}

/// `max-age` of a `Cache-Control` value (`no-store`/`no-cache`: 0).
fn max_age(value: &str) -> Option<u64> {
    value.split(',').map(str::trim).find_map(|d| {
        let d = d.to_ascii_lowercase();
        if d == "no-store" || d == "no-cache" {
            return Some(0);
        }
        d.strip_prefix("max-age=")
            .and_then(|v| v.trim_matches('"').parse().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_is_read_from_cache_control() {
        assert_eq!(max_age("public, max-age=600"), Some(600));
        assert_eq!(max_age("Max-Age=\"60\", must-revalidate"), Some(60));
        assert_eq!(max_age("no-store"), Some(0));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=soon"), None);
    }
}
