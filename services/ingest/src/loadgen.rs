//! `slaproof loadgen`: realistic LLM telemetry sent through the public
//! ingest API, at a chosen rate or as fast as the server takes it.
//!
//! The traffic looks like an inference provider's: a diurnal load curve
//! (by the hour of day, UTC), several models with their own speeds, a
//! long-tailed (log-normal) time to first token and time per output token,
//! streaming and non-streaming requests, log-normal token counts, a trickle
//! of rate-limit and server errors, and optionally an incident window with
//! many errors and slow first tokens. Batches refused with 429 or 503 are
//! sent again after `Retry-After`; every event carries a unique request id,
//! so a retry is stored once.

use std::f64::consts::PI;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Timelike, Utc};
use rand::Rng;
use serde::Serialize;
use tokio::task::JoinSet;

/// What to send, and how fast.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The ingest base URL, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The tenant's ingest key.
    pub key: String,
    /// Events per second at the diurnal mean; `None`: as fast as acknowledged.
    pub rate: Option<f64>,
    /// Stop after this long …
    pub duration: Option<Duration>,
    /// … or after this many events, whichever comes first.
    pub events: Option<u64>,
    /// Events per request.
    pub batch: usize,
    /// Requests in flight at once.
    pub connections: usize,
    /// An incident: starts this long after the start and lasts `.1`.
    pub incident: Option<(Duration, Duration)>,
    /// Apply the diurnal curve to `rate`.
    pub diurnal: bool,
}

/// What a run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadReport {
    pub elapsed_secs: f64,
    /// Events acknowledged (2xx) by the server.
    pub acknowledged: u64,
    /// Events the server refused as invalid (should be 0).
    pub rejected: u64,
    /// Requests answered 429 or 503 (each retried).
    pub throttled: u64,
    /// Requests that failed otherwise (transport errors, 4xx/5xx).
    pub failed: u64,
    pub events_per_sec: f64,
    /// Acknowledgement latency of accepted requests.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the ingest key was refused (401); check --key")]
    Unauthorized,
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// One model's character: how popular, how fast.
struct Model {
    name: &'static str,
    weight: f64,
    ttft_median_ms: f64,
    tpot_median_ms: f64,
}

const MODELS: &[Model] = &[
    Model {
        name: "llama-3.1-8b-instruct",
        weight: 0.55,
        ttft_median_ms: 120.0,
        tpot_median_ms: 9.0,
    },
    Model {
        name: "llama-3.1-70b-instruct",
        weight: 0.35,
        ttft_median_ms: 320.0,
        tpot_median_ms: 28.0,
    },
    Model {
        name: "mixtral-8x22b-instruct",
        weight: 0.10,
        ttft_median_ms: 260.0,
        tpot_median_ms: 20.0,
    },
];

/// A standard normal sample (Box–Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
}

/// A log-normal sample with the given median and shape: the long tail of
/// real latencies and token counts.
fn log_normal(rng: &mut impl Rng, median: f64, sigma: f64) -> f64 {
    median * (sigma * normal(rng)).exp()
}

/// The load at an hour of the day, relative to the mean: low at night, a
/// peak in the (UTC) afternoon.
pub fn diurnal_factor(hour: f64) -> f64 {
    1.0 + 0.6 * (2.0 * PI * (hour - 9.0) / 24.0).sin()
}

/// One synthetic request as a native-API event.
pub fn synthetic_event(
    rng: &mut impl Rng,
    request_id: &str,
    in_incident: bool,
) -> serde_json::Value {
    let pick: f64 = rng.random();
    let mut acc = 0.0;
    let model = MODELS
        .iter()
        .find(|m| {
            acc += m.weight;
            pick < acc
        })
        .unwrap_or(&MODELS[0]);
    let streaming = rng.random_bool(0.7);
    let input_tokens = log_normal(rng, 600.0, 0.9).clamp(1.0, 32_000.0).round() as u64;
    let mut output_tokens = log_normal(rng, 180.0, 0.8).clamp(1.0, 4_096.0).round() as u64;
    let slow = if in_incident { 5.0 } else { 1.0 };
    let ttft_ms = log_normal(rng, model.ttft_median_ms * slow, 0.45) + input_tokens as f64 * 0.02;
    let tpot_ms = log_normal(rng, model.tpot_median_ms, 0.25);
    let error_rate = if in_incident { 0.2 } else { 0.004 };
    let (status, error_class) = if rng.random_bool(error_rate) {
        output_tokens = 0;
        if in_incident || rng.random_bool(0.5) {
            (503, Some("overloaded"))
        } else {
            (500, Some("internal"))
        }
    } else if rng.random_bool(0.003) {
        output_tokens = 0;
        (429, Some("rate_limited"))
    } else {
        (200, None)
    };
    let latency_ms = if status == 200 {
        ttft_ms + tpot_ms * output_tokens as f64
    } else {
        log_normal(rng, 40.0, 0.6) * slow
    };
    let mut event = serde_json::json!({
        "time": (Utc::now() - chrono::Duration::milliseconds(latency_ms as i64))
            .to_rfc3339_opts(SecondsFormat::Micros, true),
        "service": "chat-completions",
        "model": model.name,
        "request_id": request_id,
        "status": status,
        "latency_ms": (latency_ms * 1000.0).round() / 1000.0,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "streaming": streaming,
        "attributes": {"cache_hit": rng.random_bool(0.3)},
    });
    if let Some(class) = error_class {
        event["error_class"] = class.into();
    }
    if status == 200 {
        event["tpot_ms"] = ((tpot_ms * 1000.0).round() / 1000.0).into();
        if streaming {
            event["ttft_ms"] = ((ttft_ms * 1000.0).round() / 1000.0).into();
        }
    }
    event
}

/// Shared counters of a run.
#[derive(Debug, Default)]
struct Counters {
    claimed: AtomicU64,
    acknowledged: AtomicU64,
    rejected: AtomicU64,
    throttled: AtomicU64,
    failed: AtomicU64,
}

/// Runs a plan to its end and reports.
#[tracing::instrument(skip_all, fields(url = %plan.url))]
pub async fn run(plan: LoadPlan) -> Result<LoadReport, LoadError> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(plan.connections)
        .build()
        .map_err(LoadError::Client)?;
    let plan = Arc::new(plan);
    let counters = Arc::new(Counters::default());
    let run_id: String = {
        let mut rng = rand::rng();
        (0..8)
            .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
            .collect()
    };
    let started = Instant::now();
    let mut workers = JoinSet::new();
    for worker in 0..plan.connections.max(1) {
        workers.spawn(send_loop(
            client.clone(),
            Arc::clone(&plan),
            Arc::clone(&counters),
            format!("lg-{run_id}-{worker}"),
            started,
        ));
    }
    let mut latencies = Vec::new();
    let mut unauthorized = false;
    while let Some(result) = workers.join_next().await {
        match result {
            Ok(Ok(mut l)) => latencies.append(&mut l),
            Ok(Err(LoadError::Unauthorized)) => unauthorized = true,
            Ok(Err(err)) => return Err(err),
            Err(err) => tracing::error!(error = %err, "a loadgen worker panicked"),
        }
    }
    if unauthorized {
        return Err(LoadError::Unauthorized);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable_by(f64::total_cmp);
    let quantile = |q: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[i]
    };
    let acknowledged = counters.acknowledged.load(Ordering::Relaxed);
    Ok(LoadReport {
        elapsed_secs: elapsed,
        acknowledged,
        rejected: counters.rejected.load(Ordering::Relaxed),
        throttled: counters.throttled.load(Ordering::Relaxed),
        failed: counters.failed.load(Ordering::Relaxed),
        events_per_sec: acknowledged as f64 / elapsed.max(1e-9),
        p50_ms: quantile(0.50),
        p99_ms: quantile(0.99),
        max_ms: latencies.last().copied().unwrap_or(0.0),
    })
}

/// The rate a worker aims at now, in events per second.
fn target_rate(plan: &LoadPlan) -> Option<f64> {
    let rate = plan.rate?;
    let factor = if plan.diurnal {
        let now = Utc::now();
        diurnal_factor(f64::from(now.hour()) + f64::from(now.minute()) / 60.0)
    } else {
        1.0
    };
    Some(rate * factor / plan.connections.max(1) as f64)
}

async fn send_loop(
    client: reqwest::Client,
    plan: Arc<LoadPlan>,
    counters: Arc<Counters>,
    prefix: String,
    started: Instant,
) -> Result<Vec<f64>, LoadError> {
    let url = format!("{}/v1/events", plan.url.trim_end_matches('/'));
    let mut latencies = Vec::new();
    let mut seq: u64 = 0;
    let mut next_send = Instant::now();
    loop {
        if plan.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        // Claim a batch's worth of the event budget.
        let want = plan.batch as u64;
        let claimed = counters.claimed.fetch_add(want, Ordering::Relaxed);
        let size = match plan.events {
            Some(total) if claimed >= total => break,
            Some(total) => want.min(total - claimed),
            None => want,
        };
        if let Some(rate) = target_rate(&plan) {
            tokio::time::sleep_until(next_send.into()).await;
            next_send += Duration::from_secs_f64(size as f64 / rate.max(1e-3));
        }
        let in_incident = plan.incident.is_some_and(|(at, len)| {
            let t = started.elapsed();
            t >= at && t < at + len
        });
        let body = {
            let mut rng = rand::rng();
            let mut body = Vec::with_capacity(size as usize * 400);
            for _ in 0..size {
                seq += 1;
                let event = synthetic_event(&mut rng, &format!("{prefix}-{seq}"), in_incident);
                // Serializing a Value cannot fail.
                serde_json::to_writer(&mut body, &event).unwrap_or_default();
                body.push(b'\n');
            }
            body
        };
        // The same batch until it is acknowledged or refused for good.
        loop {
            let sent = Instant::now();
            let response = client
                .post(&url)
                .bearer_auth(&plan.key)
                .header("content-type", "application/x-ndjson")
                .body(body.clone())
                .send()
                .await;
            let response = match response {
                Ok(r) => r,
                Err(err) => {
                    tracing::warn!(error = %err, "sending a batch failed; retrying");
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            let status = response.status().as_u16();
            match status {
                200 | 207 => {
                    let out: serde_json::Value = response.json().await.unwrap_or_default();
                    latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                    let accepted = out["accepted"].as_u64().unwrap_or(size);
                    counters.acknowledged.fetch_add(accepted, Ordering::Relaxed);
                    counters
                        .rejected
                        .fetch_add(out["rejected"].as_u64().unwrap_or(0), Ordering::Relaxed);
                    break;
                }
                429 | 503 => {
                    counters.throttled.fetch_add(1, Ordering::Relaxed);
                    let wait = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(1.0);
                    tokio::time::sleep(Duration::from_secs_f64(wait.clamp(0.05, 60.0))).await;
                }
                401 => return Err(LoadError::Unauthorized),
                _ => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    let text = response.text().await.unwrap_or_default();
                    tracing::warn!(status, body = %text, "batch refused; not retried");
                    counters.rejected.fetch_add(size, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventIn, IdSeed, TimeBounds};

    #[test]
    fn synthetic_events_are_valid_and_look_like_llm_traffic() {
        let mut rng = rand::rng();
        let bounds = TimeBounds::at(Utc::now(), 30, chrono::Duration::minutes(5));
        let mut streaming = 0;
        let mut errors = 0;
        let mut ttfts = Vec::new();
        for i in 0..5_000 {
            let json = synthetic_event(&mut rng, &format!("r{i}"), false);
            let event: EventIn = serde_json::from_value(json).unwrap();
            let stored = event.validate(i, &bounds, IdSeed::Fresh).unwrap();
            streaming += usize::from(stored.streaming == Some(true));
            errors += usize::from(stored.status != Some(200));
            ttfts.extend(stored.ttft_us);
        }
        assert!((3_000..4_000).contains(&streaming), "{streaming}");
        assert!(errors < 100, "{errors}");
        ttfts.sort_unstable();
        let p50 = ttfts[ttfts.len() / 2];
        let p99 = ttfts[ttfts.len() * 99 / 100];
        assert!(p99 > 2 * p50, "a long tail: p50 {p50} µs, p99 {p99} µs");
    }

    #[test]
    fn an_incident_brings_errors_and_slow_first_tokens() {
        let mut rng = rand::rng();
        let errors = (0..2_000)
            .filter(|i| synthetic_event(&mut rng, &format!("r{i}"), true)["status"] != 200)
            .count();
        assert!(errors > 250, "{errors}");
    }

    #[test]
    fn the_day_peaks_in_the_afternoon_and_dips_at_night() {
        assert!(diurnal_factor(15.0) > 1.5);
        assert!(diurnal_factor(3.0) < 0.5);
    }
}
