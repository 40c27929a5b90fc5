//! Ingest benchmark: sustained durable events/s over HTTP against the
//! `COPY` ceiling of the same Postgres in the same run, and the ingest
//! process's peak memory under far more offered load than it can absorb.
//!
//! ```text
//! cargo build --release -p slaproof -p slaproof-ingest
//! ./target/release/ingest-bench --events 300000 --connections 8 --batch 1000
//! ```
//!
//! It creates a scratch database on `SLAPROOF_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, a superuser: the ceiling
//! copies straight into `events`, which row-level security forbids to any
//! other role), runs `slaproof serve ingest` from the release folder as a
//! child process, and drops the database at the end.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use slaproof_ingest::event::{EventIn, IdSeed, TimeBounds};
use slaproof_ingest::loadgen::{self, LoadPlan, LoadReport};
use slaproof_store::events::StoredEvent;
use slaproof_store::{Database, ingest_keys, tenants};

use slaproof_store::scratch::Scratch;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

#[derive(Debug)]
struct Args {
    events: u64,
    connections: usize,
    batch: usize,
    overload_secs: u64,
    slaproof: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        events: 300_000,
        connections: 8,
        batch: 1_000,
        overload_secs: 15,
        slaproof: std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("slaproof")))
            .unwrap_or_else(|| PathBuf::from("target/release/slaproof")),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag}: {e}");
        match flag.as_str() {
            "--events" => args.events = value.parse().map_err(|e| bad(&e))?,
            "--connections" => args.connections = value.parse().map_err(|e| bad(&e))?,
            "--batch" => args.batch = value.parse().map_err(|e| bad(&e))?,
            "--overload-secs" => args.overload_secs = value.parse().map_err(|e| bad(&e))?,
            "--slaproof" => args.slaproof = PathBuf::from(value),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

/// The ingest process under test.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    async fn start(args: &Args, scratch: &Scratch) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let address = format!("127.0.0.1:{port}");
        let child = Command::new(&args.slaproof)
            .args(["serve", "ingest"])
            // No slaproof.toml from the working folder.
            .current_dir(std::env::temp_dir())
            .env("SLAPROOF_DATABASE__URL", scratch.service_url())
            .env("SLAPROOF_DATABASE__MIGRATE_ON_START", "false")
            .env("SLAPROOF_DATABASE__MAX_CONNECTIONS", "12")
            .env("SLAPROOF_SERVER__LISTEN", &address)
            .env("SLAPROOF_INGEST__WRITERS", "8")
            .env("SLAPROOF_INGEST__MAX_IN_FLIGHT", "16")
            // One tenant, one key sends everything here: the gate and the
            // writers are what is measured, not the per-tenant share or
            // the per-key rate limit.
            .env("SLAPROOF_INGEST__MAX_IN_FLIGHT_PER_TENANT", "16")
            .env("SLAPROOF_INGEST__RATE_LIMIT_PER_SEC", "0")
            .env("SLAPROOF_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {}: {e}", args.slaproof.display()))?;
        let server = Self { child, address };
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(r) = client
                .get(format!("http://{}/readyz", server.address))
                .send()
                .await
                && r.status().is_success()
            {
                return Ok(server);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("the ingest server did not become ready")
    }

    /// (current, peak) resident memory in KiB.
    fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The rows of `n` synthetic events, encoded for COPY with the tenant
/// column first, in batches of `batch`.
fn copy_batches(tenant: uuid::Uuid, n: u64, batch: usize) -> Vec<Vec<u8>> {
    let mut rng = rand::rng();
    let bounds = TimeBounds::at(chrono::Utc::now(), 400, chrono::Duration::minutes(5));
    let mut batches = Vec::new();
    let mut buf = Vec::new();
    let mut in_batch = 0;
    for i in 0..n {
        let json = loadgen::synthetic_event(&mut rng, &format!("ceiling-{i}"), false);
        let event: StoredEvent = serde_json::from_value::<EventIn>(json)
            .ok()
            .and_then(|e| e.validate(0, &bounds, IdSeed::Fresh).ok())
            .expect("synthetic events are valid");
        buf.extend_from_slice(tenant.hyphenated().to_string().as_bytes());
        buf.push(b'\t');
        slaproof_ingest::writer::encode_row(&mut buf, &event);
        in_batch += 1;
        if in_batch == batch {
            batches.push(std::mem::take(&mut buf));
            in_batch = 0;
        }
    }
    if !buf.is_empty() {
        batches.push(buf);
    }
    batches
}

/// COPY straight into `events` on `connections` connections, one
/// transaction per batch: the most this Postgres takes.
async fn copy_ceiling(
    owner: &PgConnectOptions,
    batches: Vec<Vec<u8>>,
    connections: usize,
) -> anyhow::Result<f64> {
    let batches = Arc::new(std::sync::Mutex::new(batches));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let owner = owner.clone();
        let batches = Arc::clone(&batches);
        tasks.spawn(async move {
            let mut conn = PgConnection::connect_with(&owner).await?;
            loop {
                let Some(batch) = batches.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.pop()
                else {
                    return anyhow::Ok(());
                };
                let mut tx = conn.begin().await?;
                let mut copy = tx
                    .copy_in_raw(
                        "COPY events (tenant_id, occurred_at, id, source, service, model, request_id, \
                         status, error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, \
                         streaming, attributes) FROM STDIN",
                    )
                    .await?;
                copy.send(batch.as_slice()).await?;
                copy.finish().await?;
                tx.commit().await?;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Offered load far above capacity: `connections` clients send batches back
/// to back, ignoring Retry-After (waiting 10 ms after a 429), for `secs`.
/// Returns (offered events/s, acknowledged events/s, 429 answers).
async fn overload(
    address: &str,
    key: &str,
    connections: usize,
    batch: usize,
    secs: u64,
) -> (f64, f64, u64) {
    let mut rng = rand::rng();
    let mut body = Vec::new();
    for i in 0..batch {
        let mut event = loadgen::synthetic_event(&mut rng, &format!("overload-{i}"), false);
        // Ids come from each request's Idempotency-Key instead, so every
        // request is new rows, not cheap duplicates, with no client work.
        if let Some(fields) = event.as_object_mut() {
            fields.remove("request_id");
        }
        body.extend_from_slice(event.to_string().as_bytes());
        body.push(b'\n');
    }
    let body = axum::body::Bytes::from(body);
    let offered = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let throttled = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let client = reqwest::Client::new();
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..connections {
        let (client, body, key) = (client.clone(), body.clone(), key.to_owned());
        let url = format!("http://{address}/v1/events");
        let (offered, acked, throttled, stop) = (
            Arc::clone(&offered),
            Arc::clone(&acked),
            Arc::clone(&throttled),
            Arc::clone(&stop),
        );
        tasks.spawn(async move {
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                offered.fetch_add(batch as u64, Ordering::Relaxed);
                sent += 1;
                let response = client
                    .post(&url)
                    .bearer_auth(&key)
                    .header("idempotency-key", format!("overload-{task}-{sent}"))
                    .header("content-type", "application/x-ndjson")
                    .body(body.clone())
                    .send()
                    .await;
                match response.map(|r| r.status().as_u16()) {
                    Ok(200 | 207) => {
                        acked.fetch_add(batch as u64, Ordering::Relaxed);
                    }
                    Ok(429 | 503) => {
                        throttled.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    while tasks.join_next().await.is_some() {}
    let secs = secs as f64;
    (
        offered.load(Ordering::Relaxed) as f64 / secs,
        acked.load(Ordering::Relaxed) as f64 / secs,
        throttled.load(Ordering::Relaxed),
    )
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_owned())
        })
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| kib / 1024 / 1024)
        .unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} vCPUs ({cpu}), {mem} GiB RAM")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args().map_err(|e| anyhow::anyhow!(e))?;
    let scratch = Scratch::create("slaproof_bench").await?;
    let result = run(&args, &scratch).await;
    scratch.drop_database().await?;
    result
}

async fn run(args: &Args, scratch: &Scratch) -> anyhow::Result<()> {
    let db = Database::connect(&scratch.service, 2).await?;
    let tenant = tenants::create(&db, "bench", "bench").await?.id;
    let mut tx = db.tenant_tx(tenant).await?;
    let key = ingest_keys::create(&mut tx, "bench")
        .await?
        .reveal()
        .to_owned();
    tx.commit().await?;
    db.close().await;

    let server = Server::start(args, scratch).await?;
    let plan = |events: u64| LoadPlan {
        url: format!("http://{}", server.address),
        key: key.clone(),
        rate: None,
        duration: None,
        events: Some(events),
        batch: args.batch,
        connections: args.connections,
        incident: None,
        diurnal: false,
        customers: std::sync::Arc::new(slaproof_ingest::loadgen::Customers::demo()),
    };
    eprintln!("warming up");
    loadgen::run(plan(20_000)).await?;
    let (rss_idle, _) = server.memory_kib();

    eprintln!("sustained: {} events over HTTP", args.events);
    let http: LoadReport = loadgen::run(plan(args.events)).await?;

    eprintln!("ceiling: the same number of rows COPY'd straight into events");
    let batches = copy_batches(tenant.uuid(), args.events, args.batch);
    let copy_secs = copy_ceiling(&scratch.owner, batches, args.connections).await?;
    let ceiling = args.events as f64 / copy_secs;

    eprintln!(
        "overload: {} s of back-to-back batches on 64 connections",
        args.overload_secs
    );
    let sampling = Arc::new(AtomicBool::new(true));
    let pid = server.child.id();
    let sampler = {
        let sampling = Arc::clone(&sampling);
        tokio::spawn(async move {
            let mut peak = 0u64;
            while sampling.load(Ordering::Relaxed) {
                let status =
                    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                if let Some(kib) = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                {
                    peak = peak.max(kib);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        })
    };
    let (offered, absorbed, throttled) =
        overload(&server.address, &key, 64, args.batch, args.overload_secs).await;
    sampling.store(false, Ordering::Relaxed);
    let peak_sampled = sampler.await.unwrap_or(0);
    let (_, hwm) = server.memory_kib();

    println!("machine: {}", machine());
    println!(
        "settings: {} events, {} connections, batches of {}, server writers 8, max_in_flight 16",
        args.events, args.connections, args.batch
    );
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| HTTP sustained (durable, acknowledged) | {:.0} events/s ({} events in {:.1} s) |",
        http.events_per_sec, http.acknowledged, http.elapsed_secs
    );
    println!(
        "| ack latency per batch of {} | P50 {:.1} ms, P99 {:.1} ms, max {:.1} ms |",
        args.batch, http.p50_ms, http.p99_ms, http.max_ms
    );
    println!(
        "| COPY ceiling, same rows, {} connections | {:.0} events/s ({:.1} s) |",
        args.connections, ceiling, copy_secs
    );
    println!("| HTTP / ceiling | {:.2} |", http.events_per_sec / ceiling);
    println!(
        "| overload: offered / absorbed | {:.0} / {:.0} events/s ({:.1}× absorbed), {} answers 429 |",
        offered,
        absorbed,
        offered / absorbed.max(1.0),
        throttled
    );
    println!(
        "| ingest process RSS | {:.0} MiB idle after warm-up, {:.0} MiB peak under overload (VmHWM {:.0} MiB over the whole run) |",
        rss_idle as f64 / 1024.0,
        peak_sampled as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    if http.rejected + http.failed > 0 {
        println!(
            "warning: {} rejected, {} failed",
            http.rejected, http.failed
        );
    }
    Ok(())
}
