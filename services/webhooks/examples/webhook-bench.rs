//! Benchmark: webhook deliveries per second to a local receiver at steady state, and the time from outbox commit to the receiver at a fixed offered rate.
//!
//! ```text
//! cargo build --release -p slaproof-webhooks --example webhook-bench
//! SLAPROOF_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   ./target/release/examples/webhook-bench [DELIVERIES] [RUNS] [LATENCY_SECS]
//! ```
//!
//! Defaults: 5,000 deliveries per throughput run, 5 runs of each
//! configuration, 10 s of offered load per latency run (0: no latency
//! runs). Before each run the queue tables are vacuumed and analysed, as
//! autovacuum would between runs (`WEBHOOK_BENCH_VACUUM=0`: not). Needs a Postgres
//! where the URL's role may create a database and a role; the scratch
//! database is dropped at the end.
//!
//! The receiver is axum on 127.0.0.1 in the same process, answering 200 at
//! once. Workers are the production loop ([`slaproof_webhooks::run`]:
//! `Deliverer::serve`, claiming as slots free up and polling every
//! `poll_interval_ms` while nothing is due), each with a pool of its own as
//! separate processes would have.
//! Messages are written with `outbox::enqueue` in tenant transactions, as
//! the evaluator writes its facts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::json;
use slaproof_app::webhooks::{SigningSecret, WebhookKey};
use slaproof_domain::ids::{TenantId, WebhookEndpointId};
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::scratch::Scratch;
use slaproof_store::{Database, outbox, tenants, webhooks};
use slaproof_webhooks::Settings;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection, Executor};
use tokio_util::sync::CancellationToken;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Connections per worker's pool (a `slaproof serve webhooks` replica).
const WORKER_POOL: u32 = 8;
/// Messages written per transaction when they are written up front.
const WRITE_BATCH: usize = 100;
/// Tasks writing messages at the offered rate, each a transaction per message.
const PRODUCERS: u64 = 4;

/// The receiver: every request's `webhook-id` and when it arrived.
#[derive(Clone, Default)]
struct Receiver {
    count: Arc<AtomicUsize>,
    arrivals: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl Receiver {
    async fn start(self) -> Result<String> {
        let state = self.clone();
        let app = axum::Router::new().route(
            "/hook/{endpoint}",
            post(move |headers: HeaderMap| {
                let state = state.clone();
                async move {
                    let at = Instant::now();
                    let id = headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    if let Ok(mut arrivals) = state.arrivals.lock() {
                        arrivals.push((id, at));
                    }
                    state.count.fetch_add(1, Ordering::Release);
                    "ok"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}/hook", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(base)
    }

    fn reset(&self) {
        self.count.store(0, Ordering::Release);
        if let Ok(mut arrivals) = self.arrivals.lock() {
            arrivals.clear();
        }
    }

    fn take(&self) -> Vec<(String, Instant)> {
        self.arrivals
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }
}

/// The scratch database and what the runs share.
struct Bench {
    owner: PgConnectOptions,
    service: PgConnectOptions,
    key: WebhookKey,
    receiver: Receiver,
    base_url: String,
    tenants: AtomicU64,
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let deliveries: usize = args.next().map_or(Ok(5_000), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let latency_secs: u64 = args.next().map_or(Ok(10), |a| a.parse())?;
    let scratch = Scratch::create("slaproof_whbench").await?;
    let result = run(&scratch, deliveries, runs, latency_secs).await;
    scratch.drop_database().await?;
    result
}

async fn run(scratch: &Scratch, deliveries: usize, runs: usize, latency_secs: u64) -> Result<()> {
    let (owner, service) = (scratch.owner.clone(), scratch.service.clone());
    let receiver = Receiver::default();
    let base_url = receiver.clone().start().await?;
    let bench = Bench {
        owner,
        service,
        key: WebhookKey::from_bytes(&[7; 32])?,
        receiver,
        base_url,
        tenants: AtomicU64::new(0),
    };
    println!(
        "webhook-bench: {deliveries} deliveries per throughput run, {runs} runs, {latency_secs} s per latency run; {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    let default = Settings::default();
    let wide = Settings {
        batch: 500,
        concurrency: 64,
        tenant_concurrency: 64,
        endpoint_concurrency: 64,
        ..Settings::default()
    };
    println!();
    println!("## Throughput (messages written up front, workers until all delivered and recorded)");
    println!();
    println!("| endpoints | settings | 1 worker, deliveries/s | 2 workers, deliveries/s | 2 / 1 |");
    println!("|---|---|---|---|---|");
    let mut best = 0.0_f64;
    for endpoints in [1_usize, 10] {
        for (label, settings) in [("default", &default), ("wide", &wide)] {
            let mut medians = Vec::new();
            for workers in [1_usize, 2] {
                let mut rates = Vec::new();
                for _ in 0..runs {
                    rates.push(
                        bench
                            .throughput(endpoints, workers, settings, deliveries)
                            .await?,
                    );
                }
                eprintln!("  {endpoints} endpoints, {label}, {workers} workers: {rates:.0?}");
                medians.push(median(rates));
            }
            best = best.max(medians[0]).max(medians[1]);
            println!(
                "| {endpoints} | {label} | {:.0} | {:.0} | {:.2} |",
                medians[0],
                medians[1],
                medians[1] / medians[0]
            );
        }
    }

    if latency_secs == 0 {
        return Ok(());
    }
    println!();
    println!("## Latency, outbox commit to the receiver (1 endpoint, 1 worker)");
    println!();
    println!(
        "| offered /s | settings | poll_interval_ms | achieved /s | P50 ms | P99 ms | max ms | not delivered within 60 s |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let half = (best / 2.0).round().max(1.0) as u64;
    for rate in [half, 500] {
        for (label, poll) in [("default", 500_u64), ("default", 50), ("wide", 50)] {
            let settings = Settings {
                poll_interval_ms: poll,
                ..(if label == "wide" {
                    wide.clone()
                } else {
                    default.clone()
                })
            };
            let mut results = Vec::new();
            for _ in 0..runs {
                results.push(bench.latency(rate, &settings, latency_secs).await?);
            }
            eprintln!("  {rate}/s, poll {poll} ms: {results:.1?}");
            let achieved = median(results.iter().map(|r| r.achieved).collect());
            let p50 = median(results.iter().map(|r| r.p50).collect());
            let p99 = median(results.iter().map(|r| r.p99).collect());
            let max = median(results.iter().map(|r| r.max).collect());
            let missing = median(results.iter().map(|r| r.missing as f64).collect());
            println!(
                "| {rate} | {label} | {poll} | {achieved:.0} | {p50:.1} | {p99:.1} | {max:.1} | {missing:.0} |"
            );
        }
    }
    Ok(())
}

/// One latency run's figures, in milliseconds (the rate per second).
#[derive(Debug)]
struct Latency {
    achieved: f64,
    p50: f64,
    p99: f64,
    max: f64,
    /// Messages the receiver had not got 60 s after the last was written
    /// (the worker fell behind); the percentiles are of the others.
    missing: usize,
}

impl Bench {
    /// A new tenant with `endpoints` endpoints taking every type.
    async fn tenant(&self, db: &Database, endpoints: usize) -> Result<TenantId> {
        let n = self.tenants.fetch_add(1, Ordering::Relaxed);
        let tenant = tenants::create(db, &format!("bench-{n}"), "Bench")
            .await?
            .id;
        let mut tx = db.tenant_tx(tenant).await?;
        for e in 0..endpoints {
            let id = WebhookEndpointId::new();
            webhooks::create(
                &mut tx,
                &webhooks::NewEndpoint {
                    id,
                    url: format!("{}/{e}", self.base_url),
                    description: String::new(),
                    event_types: vec!["*".to_owned()],
                    enabled: true,
                    secret_sealed: self.key.seal(tenant, id, &SigningSecret::generate()),
                    headers: Default::default(),
                    flow: webhooks::Flow::default(),
                },
            )
            .await?;
        }
        tx.commit().await?;
        Ok(tenant)
    }

    /// Starts `workers` webhook workers, each with its own pool.
    async fn workers(
        &self,
        workers: usize,
        settings: &Settings,
        stop: &CancellationToken,
    ) -> Result<Vec<tokio::task::JoinHandle<()>>> {
        let mut handles = Vec::new();
        for w in 0..workers {
            let db = Database::connect(&self.service, WORKER_POOL).await?;
            handles.push(tokio::spawn(slaproof_webhooks::run(
                db,
                settings.clone(),
                self.key.clone(),
                OutboundPolicy::allowing(["127.0.0.0/8".parse()?]),
                format!("bench-worker-{w}"),
                stop.clone(),
            )));
        }
        Ok(handles)
    }

    /// Deliveries per second: `deliveries` (rounded to whole messages)
    /// written up front, then the workers until every one is delivered
    /// and recorded.
    async fn throughput(
        &self,
        endpoints: usize,
        workers: usize,
        settings: &Settings,
        deliveries: usize,
    ) -> Result<f64> {
        self.vacuum().await?;
        let db = Database::connect(&self.service, 4).await?;
        let tenant = self.tenant(&db, endpoints).await?;
        let messages = deliveries.div_ceil(endpoints);
        let expected = messages * endpoints;
        let mut written = 0;
        while written < messages {
            let mut tx = db.tenant_tx(tenant).await?;
            for i in written..(written + WRITE_BATCH).min(messages) {
                outbox::enqueue(&mut tx, "sla.breached", &fact(i)).await?;
            }
            tx.commit().await?;
            written = (written + WRITE_BATCH).min(messages);
        }
        self.receiver.reset();
        let stop = CancellationToken::new();
        let start = Instant::now();
        let handles = self.workers(workers, settings, &stop).await?;
        let deadline = start + Duration::from_secs(600);
        while self.receiver.count.load(Ordering::Acquire) < expected {
            if Instant::now() > deadline {
                return Err("throughput run did not finish within 10 minutes".into());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        stop.cancel();
        for handle in handles {
            handle.await?;
        }
        let elapsed = start.elapsed();
        let (delivered, attempts) = self.recorded(tenant).await?;
        if delivered != expected as i64 || attempts != expected as i64 {
            return Err(format!(
                "{expected} deliveries expected; {delivered} recorded delivered, {attempts} attempts"
            )
            .into());
        }
        db.close().await;
        Ok(expected as f64 / elapsed.as_secs_f64())
    }

    /// Time from each message's commit to its arrival, at `rate` messages
    /// a second for `secs` seconds, one transaction per message.
    async fn latency(&self, rate: u64, settings: &Settings, secs: u64) -> Result<Latency> {
        self.vacuum().await?;
        let db = Database::connect(&self.service, PRODUCERS as u32).await?;
        let tenant = self.tenant(&db, 1).await?;
        self.receiver.reset();
        let stop = CancellationToken::new();
        let handles = self.workers(1, settings, &stop).await?;
        let total = rate * secs;
        let next = Arc::new(AtomicU64::new(0));
        let committed = Arc::new(Mutex::new(Vec::with_capacity(total as usize)));
        let start = tokio::time::Instant::now();
        let mut producers = Vec::new();
        for _ in 0..PRODUCERS {
            let (db, next, committed) = (db.clone(), next.clone(), committed.clone());
            producers.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return Ok::<_, slaproof_store::StoreError>(());
                    }
                    tokio::time::sleep_until(
                        start + Duration::from_secs_f64(i as f64 / rate as f64),
                    )
                    .await;
                    let mut tx = db.tenant_tx(tenant).await?;
                    let id = outbox::enqueue(&mut tx, "sla.breached", &fact(i as usize)).await?;
                    tx.commit().await?;
                    let at = Instant::now();
                    if let Ok(mut c) = committed.lock() {
                        c.push((id.to_string(), at));
                    }
                }
            }));
        }
        for producer in producers {
            producer.await??;
        }
        let offered_for = start.elapsed();
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.receiver.count.load(Ordering::Acquire) < total as usize
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stop.cancel();
        for handle in handles {
            handle.await?;
        }
        let committed: std::collections::HashMap<String, Instant> = committed
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut millis: Vec<f64> = self
            .receiver
            .take()
            .into_iter()
            .filter_map(|(id, at)| {
                committed
                    .get(&id)
                    .map(|c| at.saturating_duration_since(*c).as_secs_f64() * 1000.0)
            })
            .collect();
        let missing = (total as usize).saturating_sub(millis.len());
        if millis.is_empty() {
            return Err("latency run: nothing delivered".into());
        }
        millis.sort_by(f64::total_cmp);
        let at =
            |q: f64| millis[((millis.len() as f64 * q).ceil() as usize).clamp(1, millis.len()) - 1];
        db.close().await;
        Ok(Latency {
            achieved: total as f64 / offered_for.as_secs_f64(),
            p50: at(0.50),
            p99: at(0.99),
            max: at(1.0),
            missing,
        })
    }

    /// What autovacuum would have done between runs (it is off on the
    /// test server): the queue tables' dead rows removed, their statistics
    /// brought up to date.
    async fn vacuum(&self) -> Result<()> {
        if std::env::var("WEBHOOK_BENCH_VACUUM").is_ok_and(|v| v == "0") {
            return Ok(());
        }
        let mut conn = PgConnection::connect_with(&self.owner).await?;
        conn.execute(
            "VACUUM (ANALYZE) outbox, webhook_deliveries, webhook_attempts, webhook_endpoints",
        )
        .await?;
        conn.close().await?;
        Ok(())
    }

    /// Deliveries recorded delivered, and attempts, of a tenant (as the
    /// schema's owner, past row-level security).
    async fn recorded(&self, tenant: TenantId) -> Result<(i64, i64)> {
        let mut conn = PgConnection::connect_with(&self.owner).await?;
        let counts = sqlx::query_as(
            "SELECT (SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1 AND delivered_at IS NOT NULL), \
                    (SELECT count(*) FROM webhook_attempts WHERE tenant_id = $1)",
        )
        .bind(tenant.uuid())
        .fetch_one(&mut conn)
        .await?;
        conn.close().await?;
        Ok(counts)
    }
}

/// A fact of the size the evaluator writes.
fn fact(i: usize) -> serde_json::Value {
    json!({
        "sla": "sla_0193a1b2c3d4e5f60718293a4b5c6d7e",
        "name": "acme-enterprise",
        "objective": "availability",
        "compliance": 0.9987,
        "target": 0.999,
        "period": {"start": "2026-11-01T00:00:00Z", "end": "2026-12-01T00:00:00Z"},
        "n": i,
    })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}
