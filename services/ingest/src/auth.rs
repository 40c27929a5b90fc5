//! Ingest-key authentication: `Authorization: Bearer spk_…` names the
//! tenant every event of the request is written for. The body never names
//! a tenant, so no key can write another tenant's data.
//!
//! Authentication comes first, before the gate, the rate limit or the
//! body: a flood of bad keys takes no place from the tenants. To keep it
//! cheap, what the store answered for a key (by its SHA-256) is kept for
//! `ingest.key_cache_secs` (30 s by default): a revoked key is refused by
//! every process within that time, and a key used again within it costs
//! no database round trip. An unknown or revoked key is remembered too
//! (keys are random, so an unknown one never becomes valid), so a sender
//! retrying with a revoked key does not cost a lookup per request. A
//! database error is not remembered.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use slaproof_store::{Database, ingest_keys};

use crate::problem::IngestProblem;

pub(crate) use slaproof_store::ingest_keys::Authenticated;

/// Keys remembered at most; past it, expired entries are dropped, and if
/// none are, everything is (a flood of distinct bad keys empties the cache
/// rather than growing it).
const MAX_CACHED: usize = 10_000;

/// Length of a well-formed key: `spk_`, 12 characters, `_`, 64 hex digits.
const KEY_LEN: usize = 4 + 12 + 1 + 64;

/// The bearer token of a request, if it carries one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// What the store said of a key, and when.
#[derive(Debug, Clone)]
struct Answer {
    who: Option<Authenticated>,
    at: Instant,
}

/// Ingest keys, checked against the store and remembered for a while.
#[derive(Debug)]
pub(crate) struct Keys {
    ttl: Duration,
    cache: Mutex<HashMap<[u8; 32], Answer>>,
}

impl Keys {
    /// Answers are remembered for `ttl`; zero checks the store every time.
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The tenant and key a request speaks for, or the 401 (or 503 when
    /// the database cannot say) to answer.
    #[tracing::instrument(skip_all)]
    pub(crate) async fn authenticate(
        &self,
        db: &Database,
        headers: &HeaderMap,
        retry_after_secs: u64,
    ) -> Result<Authenticated, IngestProblem> {
        let Some(token) = bearer(headers) else {
            return Err(IngestProblem::unauthorized());
        };
        // Not worth a lookup, nor a place in the cache.
        if !token.starts_with("spk_") || token.len() != KEY_LEN {
            return Err(IngestProblem::unauthorized());
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        if let Some(answer) = self.remembered(&digest, now) {
            return answer.who.ok_or_else(IngestProblem::unauthorized);
        }
        let who = match ingest_keys::authenticate(db, token).await {
            Ok(who) => who,
            Err(err) => {
                tracing::warn!(error = %err, "cannot check an ingest key");
                return Err(IngestProblem::unavailable(retry_after_secs));
            }
        };
        self.remember(
            digest,
            Answer {
                who: who.clone(),
                at: now,
            },
        );
        who.ok_or_else(IngestProblem::unauthorized)
    }

    fn remembered(&self, digest: &[u8; 32], now: Instant) -> Option<Answer> {
        if self.ttl.is_zero() {
            return None;
        }
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(digest)
            .filter(|a| now.saturating_duration_since(a.at) < self.ttl)
            .cloned()
    }

    fn remember(&self, digest: [u8; 32], answer: Answer) {
        if self.ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CACHED && !cache.contains_key(&digest) {
            let ttl = self.ttl;
            cache.retain(|_, a| answer.at.saturating_duration_since(a.at) < ttl);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(digest, answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bearer_tokens_are_read() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer spk_x".parse().unwrap());
        assert_eq!(bearer(&headers), Some("spk_x"));
        headers.insert(header::AUTHORIZATION, "bearer  spk_y ".parse().unwrap());
        assert_eq!(bearer(&headers), Some("spk_y"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }

    #[test]
    fn answers_are_remembered_for_the_ttl_only() {
        let keys = Keys::new(Duration::from_secs(30));
        let t0 = Instant::now();
        keys.remember([1; 32], Answer { who: None, at: t0 });
        assert!(
            keys.remembered(&[1; 32], t0 + Duration::from_secs(29))
                .is_some()
        );
        assert!(
            keys.remembered(&[1; 32], t0 + Duration::from_secs(30))
                .is_none()
        );
        assert!(keys.remembered(&[2; 32], t0).is_none());
        let off = Keys::new(Duration::ZERO);
        off.remember([1; 32], Answer { who: None, at: t0 });
        assert!(off.remembered(&[1; 32], t0).is_none());
    }

    #[test]
    fn the_cache_does_not_grow_past_its_bound() {
        let keys = Keys::new(Duration::from_secs(30));
        let t0 = Instant::now();
        for i in 0..MAX_CACHED + 10 {
            let mut digest = [0; 32];
            digest[..8].copy_from_slice(&(i as u64).to_be_bytes());
            keys.remember(digest, Answer { who: None, at: t0 });
        }
        assert!(keys.cache.lock().unwrap().len() <= MAX_CACHED);
    }
}
