//! `slaproof loadgen`: realistic LLM telemetry sent through the public
//! ingest API, at a chosen rate or as fast as the server takes it.
//!
//! The traffic looks like an inference provider's: a diurnal load curve
//! (by the hour of day, UTC), several models with their own speeds, a
//! long-tailed (log-normal) time to first token and time per output token,
//! streaming and non-streaming requests, log-normal token counts, a trickle
//! of rate-limit and server errors (availability near 99.97%), spread
//! over customers ([`Customers`]: the demo's three and a long tail, or
//! thousands with Zipf-like shares), each with the models it uses, and
//! optionally an incident window on one model ([`INCIDENT_MODEL`]): a
//! quarter of its requests fail, first tokens are 5× and decoding 2×
//! slower, so only the customers that use it are hit. [`requests`] draws the same
//! traffic for a simulated stretch of time, deterministically from a seed,
//! without sending it. Batches refused with 429 or 503 are
//! sent again after `Retry-After`; every event carries a unique request id,
//! so a retry is stored once.

use std::f64::consts::PI;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Timelike, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use tokio::task::JoinSet;

mod customers;
pub use customers::Customers;

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
    /// Whose requests they are.
    pub customers: Arc<Customers>,
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

/// One model's character: how popular, how fast. The speeds are those of
/// a provider's shared endpoints under load (a 70B model at about 70
/// tokens/s per stream, an 8B one at about 165).
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
        tpot_median_ms: 6.0,
    },
    Model {
        name: "llama-3.1-70b-instruct",
        weight: 0.35,
        ttft_median_ms: 320.0,
        tpot_median_ms: 14.0,
    },
    Model {
        name: "mixtral-8x22b-instruct",
        weight: 0.10,
        ttft_median_ms: 260.0,
        tpot_median_ms: 12.0,
    },
];

/// The model an incident hits: a shared pool of the 70B model goes down,
/// so the customers that use it (acme-corp, in the demo) see it and the
/// others do not.
pub const INCIDENT_MODEL: &str = "llama-3.1-70b-instruct";

/// The demo's customers, for callers that name none.
static DEMO: LazyLock<Customers> = LazyLock::new(Customers::demo);

/// Server errors (5xx) in normal operation: 3 in 10,000, so availability
/// runs near 99.97%, well inside a 99.9% promise.
const SERVER_ERRORS: f64 = 0.0003;
/// Requests refused for the customer's own rate limit (429, not the
/// provider's failure).
const RATE_LIMITED: f64 = 0.003;
/// An incident: part of the fleet is gone, so a quarter of the requests
/// are shed (503) and the rest queue — first tokens 5× and decoding 2×
/// slower. Enough to page within minutes on a 99.9% availability target.
const INCIDENT_ERRORS: f64 = 0.25;
const INCIDENT_TTFT_SLOWDOWN: f64 = 5.0;
const INCIDENT_TPOT_SLOWDOWN: f64 = 2.0;

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

/// One synthetic request, as drawn: when it started and what it was.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticRequest {
    pub started_at: DateTime<Utc>,
    /// The customer's reference, when the traffic names customers.
    pub customer: Option<String>,
    pub model: &'static str,
    pub status: u16,
    pub error_class: Option<&'static str>,
    /// End to end: time to first token plus the output's decoding.
    pub latency_ms: f64,
    /// Successful streaming requests only.
    pub ttft_ms: Option<f64>,
    /// Successful requests only.
    pub tpot_ms: Option<f64>,
    pub input_tokens: u64,
    /// 0 for a failed request.
    pub output_tokens: u64,
    pub streaming: bool,
    pub in_incident: bool,
    pub cache_hit: bool,
}

impl SyntheticRequest {
    /// Draws one request of the demo's customers started at `started_at`.
    pub fn draw(rng: &mut impl Rng, started_at: DateTime<Utc>, in_incident: bool) -> Self {
        Self::draw_for(rng, &DEMO, started_at, in_incident)
    }

    /// Draws one request of one of `customers` started at `started_at`;
    /// `in_incident`: during the incident window, which hits the requests
    /// on [`INCIDENT_MODEL`].
    pub fn draw_for(
        rng: &mut impl Rng,
        customers: &Customers,
        started_at: DateTime<Utc>,
        in_incident: bool,
    ) -> Self {
        let customer = customers.pick(rng);
        let weights = customer.and_then(|i| customers.models[i]).unwrap_or([
            MODELS[0].weight,
            MODELS[1].weight,
            MODELS[2].weight,
        ]);
        let pick: f64 = rng.random();
        let mut acc = 0.0;
        let model = MODELS
            .iter()
            .zip(weights)
            .find(|(_, w)| {
                acc += w;
                pick < acc
            })
            .map_or(&MODELS[0], |(m, _)| m);
        let in_incident = in_incident && model.name == INCIDENT_MODEL;
        let streaming = rng.random_bool(0.7);
        let input_tokens = log_normal(rng, 600.0, 0.9).clamp(1.0, 32_000.0).round() as u64;
        let mut output_tokens = log_normal(rng, 180.0, 0.8).clamp(1.0, 4_096.0).round() as u64;
        let (ttft_slow, tpot_slow, server_errors) = if in_incident {
            (
                INCIDENT_TTFT_SLOWDOWN,
                INCIDENT_TPOT_SLOWDOWN,
                INCIDENT_ERRORS,
            )
        } else {
            (1.0, 1.0, SERVER_ERRORS)
        };
        let ttft_ms =
            log_normal(rng, model.ttft_median_ms * ttft_slow, 0.45) + input_tokens as f64 * 0.02;
        let tpot_ms = log_normal(rng, model.tpot_median_ms * tpot_slow, 0.25);
        let (status, error_class) = if rng.random_bool(server_errors) {
            output_tokens = 0;
            if in_incident || rng.random_bool(0.5) {
                (503, Some("overloaded"))
            } else {
                (500, Some("internal"))
            }
        } else if rng.random_bool(RATE_LIMITED) {
            output_tokens = 0;
            (429, Some("rate_limited"))
        } else {
            (200, None)
        };
        let ok = status == 200;
        let latency_ms = if ok {
            ttft_ms + tpot_ms * output_tokens as f64
        } else {
            log_normal(rng, 40.0, 0.6) * ttft_slow
        };
        Self {
            started_at,
            customer: customer.map(|i| customers.refs[i].clone()),
            model: model.name,
            status,
            error_class,
            latency_ms,
            ttft_ms: (ok && streaming).then_some(ttft_ms),
            tpot_ms: ok.then_some(tpot_ms),
            input_tokens,
            output_tokens,
            streaming,
            in_incident,
            cache_hit: rng.random_bool(0.3),
        }
    }

    /// When the answer was complete (and the event could be sent).
    pub fn finished_at(&self) -> DateTime<Utc> {
        self.started_at + chrono::Duration::microseconds((self.latency_ms * 1000.0).round() as i64)
    }

    /// The request as a native-API event.
    pub fn to_event(&self, request_id: &str) -> serde_json::Value {
        let ms = |v: f64| (v * 1000.0).round() / 1000.0;
        let mut event = serde_json::json!({
            "time": self.started_at.to_rfc3339_opts(SecondsFormat::Micros, true),
            "service": "chat-completions",
            "model": self.model,
            "request_id": request_id,
            "status": self.status,
            "latency_ms": ms(self.latency_ms),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "streaming": self.streaming,
            "attributes": {"cache_hit": self.cache_hit},
        });
        if let Some(class) = self.error_class {
            event["error_class"] = class.into();
        }
        if let Some(customer) = &self.customer {
            event["customer"] = customer.as_str().into();
        }
        if let Some(tpot) = self.tpot_ms {
            event["tpot_ms"] = ms(tpot).into();
        }
        if let Some(ttft) = self.ttft_ms {
            event["ttft_ms"] = ms(ttft).into();
        }
        event
    }
}

/// One synthetic request of the demo's customers that finished just now,
/// as a native-API event.
pub fn synthetic_event(
    rng: &mut impl Rng,
    request_id: &str,
    in_incident: bool,
) -> serde_json::Value {
    synthetic_event_for(rng, &DEMO, request_id, in_incident)
}

/// One synthetic request of one of `customers` that finished just now, as
/// a native-API event.
pub fn synthetic_event_for(
    rng: &mut impl Rng,
    customers: &Customers,
    request_id: &str,
    in_incident: bool,
) -> serde_json::Value {
    let mut request = SyntheticRequest::draw_for(rng, customers, Utc::now(), in_incident);
    request.started_at -= chrono::Duration::microseconds((request.latency_ms * 1000.0) as i64);
    request.to_event(request_id)
}

/// A stretch of simulated time to draw traffic for with [`requests`].
#[derive(Debug, Clone)]
pub struct Stretch {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Requests per second at the day's mean.
    pub rate: f64,
    /// Follow [`diurnal_factor`] by the hour of day (UTC).
    pub diurnal: bool,
    /// An incident from `.0` (inclusive) to `.1` (exclusive).
    pub incident: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// The same seed draws the same requests.
    pub seed: u64,
    /// Whose requests they are.
    pub customers: Arc<Customers>,
}

/// The requests of a simulated stretch, in the order they started: Poisson
/// arrivals at the stretch's rate, each drawn like the live traffic. Pure
/// and deterministic given the seed, so that a test can replay a day of
/// traffic (or an incident) in moments instead of waiting for it. Empty
/// for a rate that is not a positive number.
pub fn requests(stretch: &Stretch) -> Vec<SyntheticRequest> {
    let mut out = Vec::new();
    if !(stretch.rate.is_finite() && stretch.rate > 0.0) {
        return out;
    }
    let mut rng = StdRng::seed_from_u64(stretch.seed);
    let mut t = stretch.from;
    loop {
        let factor = if stretch.diurnal {
            diurnal_factor(f64::from(t.hour()) + f64::from(t.minute()) / 60.0)
        } else {
            1.0
        };
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        let gap_us = (-u.ln() / (stretch.rate * factor) * 1e6).round() as i64;
        t += chrono::Duration::microseconds(gap_us.max(1));
        if t >= stretch.to {
            return out;
        }
        let in_incident = stretch.incident.is_some_and(|(a, b)| t >= a && t < b);
        out.push(SyntheticRequest::draw_for(
            &mut rng,
            &stretch.customers,
            t,
            in_incident,
        ));
    }
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
                let event = synthetic_event_for(
                    &mut rng,
                    &plan.customers,
                    &format!("{prefix}-{seq}"),
                    in_incident,
                );
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
    fn an_incident_brings_errors_and_slow_first_tokens_on_its_model_only() {
        let mut rng = rand::rng();
        let at = Utc::now();
        let drawn: Vec<SyntheticRequest> = (0..4_000)
            .map(|_| SyntheticRequest::draw(&mut rng, at, true))
            .collect();
        let (hit, spared): (Vec<_>, Vec<_>) = drawn.iter().partition(|r| r.model == INCIDENT_MODEL);
        assert!(hit.iter().all(|r| r.in_incident));
        assert!(spared.iter().all(|r| !r.in_incident));
        let failed = |rs: &[&SyntheticRequest]| rs.iter().filter(|r| r.status != 200).count();
        assert!(
            failed(&hit) * 5 > hit.len(),
            "{} of {}",
            failed(&hit),
            hit.len()
        );
        assert!(
            failed(&spared) * 50 < spared.len(),
            "{} of {}",
            failed(&spared),
            spared.len()
        );
        let slow = hit
            .iter()
            .filter_map(|r| r.ttft_ms)
            .filter(|ttft| *ttft > 800.0)
            .count();
        assert!(slow * 5 > hit.len(), "{slow} of {}", hit.len());
    }

    #[test]
    fn the_demo_spreads_its_traffic_over_its_customers_and_their_models() {
        let mut rng = rand::rng();
        let at = Utc::now();
        let drawn: Vec<SyntheticRequest> = (0..10_000)
            .map(|_| SyntheticRequest::draw(&mut rng, at, false))
            .collect();
        let share = |name: &str| {
            drawn
                .iter()
                .filter(|r| r.customer.as_deref() == Some(name))
                .count() as f64
                / 1e4
        };
        assert!(
            (0.46..0.54).contains(&share("acme-corp")),
            "{}",
            share("acme-corp")
        );
        assert!(
            (0.26..0.34).contains(&share("globex")),
            "{}",
            share("globex")
        );
        assert!(
            (0.12..0.18).contains(&share("initech")),
            "{}",
            share("initech")
        );
        assert!(drawn.iter().all(|r| r.customer.is_some()));
        // globex never uses the model the incident hits.
        assert!(
            drawn
                .iter()
                .filter(|r| r.customer.as_deref() == Some("globex"))
                .all(|r| r.model != INCIDENT_MODEL)
        );
        let json = drawn[0].to_event("r");
        assert_eq!(json["customer"], drawn[0].customer.as_deref().unwrap());
    }

    #[test]
    fn a_stretch_is_the_same_for_the_same_seed_and_follows_the_rate() {
        let from: DateTime<Utc> = "2026-11-16T10:00:00Z".parse().unwrap();
        let stretch = Stretch {
            from,
            to: from + chrono::Duration::hours(1),
            rate: 10.0,
            diurnal: false,
            incident: Some((
                from + chrono::Duration::minutes(20),
                from + chrono::Duration::minutes(30),
            )),
            seed: 7,
            customers: Arc::new(Customers::demo()),
        };
        let drawn = requests(&stretch);
        assert_eq!(drawn, requests(&stretch));
        assert_ne!(
            drawn,
            requests(&Stretch {
                seed: 8,
                ..stretch.clone()
            })
        );
        // 36,000 expected; Poisson's spread is about 190.
        assert!((35_000..37_000).contains(&drawn.len()), "{}", drawn.len());
        assert!(drawn.windows(2).all(|w| w[0].started_at < w[1].started_at));
        let (a, b) = stretch.incident.unwrap();
        assert!(drawn.iter().all(|r| r.in_incident
            == (r.model == INCIDENT_MODEL && r.started_at >= a && r.started_at < b)));
        assert!(
            requests(&Stretch {
                rate: 0.0,
                ..stretch
            })
            .is_empty()
        );
    }

    #[test]
    fn the_day_peaks_in_the_afternoon_and_dips_at_night() {
        assert!(diurnal_factor(15.0) > 1.5);
        assert!(diurnal_factor(3.0) < 0.5);
    }
}
