//! A rate limit per ingest key: a token bucket of `burst` requests,
//! refilled at `per_sec`. A request finding it empty is answered 429 with
//! the seconds until a token is back in `Retry-After`, before it takes a
//! place in the gate or any memory.
//!
//! A few lines over a map rather than a crate: `governor` would bring
//! `dashmap`, `quanta` and its own clock for one subtraction per request;
//! here one mutex is held for a hash lookup and a multiply.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use slaproof_domain::ids::IngestKeyId;

/// Buckets kept before the full ones (keys idle long enough to have
/// refilled, which a fresh bucket would equal) are dropped.
const MAX_BUCKETS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The per-key rate limit of the ingest endpoints.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<IngestKeyId, Bucket>>,
}

impl RateLimiter {
    /// `per_sec` requests a second after a burst of `burst`; a `per_sec`
    /// of 0 lets everything through.
    pub(crate) fn new(per_sec: f64, burst: u32) -> Self {
        Self {
            per_sec,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token for `key`, or says how long until one is back.
    pub(crate) fn check(&self, key: IngestKeyId, now: Instant) -> Result<(), Duration> {
        if self.per_sec <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(&key) {
            let (per_sec, burst) = (self.per_sec, self.burst);
            buckets.retain(|_, b| refilled(b, now, per_sec, burst) < burst);
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        bucket.tokens = refilled(bucket, now, self.per_sec, self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_sec,
            ))
        }
    }
}

fn refilled(bucket: &Bucket, now: Instant, per_sec: f64, burst: f64) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
    (bucket.tokens + elapsed * per_sec).min(burst)
}

/// `Retry-After` for a wait: whole seconds, rounded up, at least one.
pub(crate) fn retry_after_secs(wait: Duration) -> u64 {
    let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    whole.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_burst_then_its_rate() {
        let limiter = RateLimiter::new(2.0, 3);
        let (key, other) = (IngestKeyId::new(), IngestKeyId::new());
        let t0 = Instant::now();
        for _ in 0..3 {
            limiter.check(key, t0).unwrap();
        }
        let wait = limiter.check(key, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert_eq!(retry_after_secs(wait), 1);
        limiter.check(other, t0).unwrap();
        limiter.check(key, t0 + Duration::from_millis(500)).unwrap();
        assert!(limiter.check(key, t0 + Duration::from_millis(600)).is_err());
        // Idle for long: a full burst again, never more.
        for _ in 0..3 {
            limiter.check(key, t0 + Duration::from_secs(60)).unwrap();
        }
        assert!(limiter.check(key, t0 + Duration::from_secs(60)).is_err());
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(2_001)), 3);
    }

    #[test]
    fn zero_means_no_limit() {
        let limiter = RateLimiter::new(0.0, 1);
        let key = IngestKeyId::new();
        for _ in 0..100 {
            limiter.check(key, Instant::now()).unwrap();
        }
    }
}
