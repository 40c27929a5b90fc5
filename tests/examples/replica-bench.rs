//! Ingest and evaluation with one and with two replicas, each replica a
//! `slaproof serve` process of its own against one Postgres, measured side
//! by side in one run (the order alternating round by round). A ratio on
//! this machine, not a promise of linear scale: its two cores hold
//! Postgres, the replicas and the load generator at once.
//!
//! ```text
//! cargo build --release -p slaproof --bin slaproof
//! cargo build --release -p slaproof-tests --example replica-bench
//! ./target/release/examples/replica-bench [rounds] [ingest-events] [tenants] [events-per-tenant]
//! ```
//!
//! Ingest: `ingest-events` synthetic events (the `slaproof loadgen` model)
//! in batches of 1,000 over 8 client connections in all, split evenly over
//! the replicas, each acknowledged after its commit. Evaluation:
//! `tenants` tenants with one SLA of three objectives and
//! `events-per-tenant` events each, loaded with `COPY` (not measured); the
//! time from starting the evaluator replicas until every tenant has a
//! verdict as of an instant after its last event was received (its whole
//! backlog read, rolled up and evaluated). That time includes the rounds
//! the evaluator makes before its watermark passes the loaded events (with
//! `RUST_LOG=slaproof_evaluator=info` each round says how many events it
//! read): see docs/BENCHMARKS.md, "Replicas".

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use slaproof_domain::sla::SlaDefinition;
use slaproof_ingest::event::{EventIn, IdSeed, TimeBounds};
use slaproof_ingest::loadgen::{self, LoadPlan};
use slaproof_store::events::StoredEvent;
use slaproof_store::{ingest_keys, slas, tenants};
use slaproof_tests::TestDatabase;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: bench-sla
spec:
  service: chat-completions
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio:
      good: status < 500
  - name: latency-p99
    target: 99%
    threshold: {field: latency, op: lte, value: 3.2s}
  - name: ttft-p95
    target: 95%
    threshold: {field: ttft, op: lte, value: 800ms, filter: streaming == true}
"#;

/// One `slaproof serve <service>` process; killed when dropped.
struct Process {
    child: Child,
    address: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn slaproof_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join("slaproof")))
        .filter(|p| p.exists())
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/slaproof")
        })
}

async fn serve(service: &str, database: &TestDatabase) -> anyhow::Result<Process> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let address = format!("127.0.0.1:{port}");
    let child = Command::new(slaproof_binary())
        .args(["serve", service])
        .current_dir(std::env::temp_dir())
        .env("SLAPROOF_DATABASE__URL", database.service_url())
        .env("SLAPROOF_DATABASE__MIGRATE_ON_START", "false")
        .env("SLAPROOF_DATABASE__MAX_CONNECTIONS", "8")
        .env("SLAPROOF_SERVER__LISTEN", &address)
        .env("SLAPROOF_INGEST__WRITERS", "4")
        .env("SLAPROOF_INGEST__MAX_IN_FLIGHT", "8")
        .env("SLAPROOF_INGEST__MAX_IN_FLIGHT_PER_TENANT", "8")
        .env("SLAPROOF_INGEST__RATE_LIMIT_PER_SEC", "0")
        // The default interval (30 s): the first round, at start, takes
        // every tenant; a shorter one would ask again for tenants still
        // being evaluated, and measure repeated rounds instead.
        .env("SLAPROOF_EVALUATOR__SETTLE_SECS", "0")
        .env("SLAPROOF_LOG__LEVEL", "warn")
        .stdout(Stdio::null())
        .spawn()?;
    let process = Process { child, address };
    let client = reqwest::Client::new();
    for _ in 0..400 {
        if let Ok(r) = client
            .get(format!("http://{}/readyz", process.address))
            .send()
            .await
            && r.status().is_success()
        {
            return Ok(process);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    anyhow::bail!("slaproof serve {service} did not become ready")
}

/// Events per second acknowledged by `replicas` ingest processes.
async fn ingest(replicas: usize, events: u64) -> anyhow::Result<f64> {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "bench", "bench").await?.id;
    let mut tx = db.tenant_tx(tenant).await?;
    let key = ingest_keys::create(&mut tx, "bench")
        .await?
        .reveal()
        .to_owned();
    tx.commit().await?;
    let mut servers = Vec::new();
    for _ in 0..replicas {
        servers.push(serve("ingest", &database).await?);
    }
    let plan = |server: &Process, events: u64| LoadPlan {
        url: format!("http://{}", server.address),
        key: key.clone(),
        rate: None,
        duration: None,
        events: Some(events),
        batch: 1_000,
        connections: 8 / replicas,
        incident: None,
        diurnal: false,
        customers: std::sync::Arc::new(slaproof_ingest::loadgen::Customers::demo()),
    };
    // Warm-up: connections, caches, the first partition pages.
    let warm: Vec<_> = servers
        .iter()
        .map(|s| loadgen::run(plan(s, 5_000)))
        .collect();
    for report in futures_util::future::join_all(warm).await {
        report?;
    }
    let started = Instant::now();
    let runs: Vec<_> = servers
        .iter()
        .map(|s| loadgen::run(plan(s, events / replicas as u64)))
        .collect();
    let mut acknowledged = 0;
    for report in futures_util::future::join_all(runs).await {
        let report = report?;
        anyhow::ensure!(
            report.rejected + report.failed == 0,
            "refused events: {report:?}"
        );
        acknowledged += report.acknowledged;
    }
    Ok(acknowledged as f64 / started.elapsed().as_secs_f64())
}

/// COPY rows for `tenant`: `n` synthetic events received now, which
/// occurred three minutes ago.
fn copy_rows(tenant: uuid::Uuid, n: u64) -> Vec<u8> {
    let mut rng = rand::rng();
    let bounds = TimeBounds::at(chrono::Utc::now(), 400, chrono::Duration::minutes(5));
    let mut buf = Vec::new();
    for i in 0..n {
        let json = loadgen::synthetic_event(&mut rng, &format!("e-{i}"), false);
        let mut event: StoredEvent = serde_json::from_value::<EventIn>(json)
            .ok()
            .and_then(|e| e.validate(0, &bounds, IdSeed::Fresh).ok())
            .expect("synthetic events are valid");
        // In minutes that have closed: the evaluator counts a minute once
        // it is over, and the wait for the current one is not its work.
        event.occurred_at -= chrono::Duration::minutes(3);
        buf.extend_from_slice(tenant.hyphenated().to_string().as_bytes());
        buf.push(b'\t');
        slaproof_ingest::writer::encode_row(&mut buf, &event);
    }
    buf
}

/// Seconds until `replicas` evaluator processes have a verdict for each of
/// `tenants` tenants that rests on all of its events.
async fn evaluate(replicas: usize, tenant_count: usize, per_tenant: u64) -> anyhow::Result<f64> {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let definition = SlaDefinition::from_document(SLA)?;
    let mut owner = PgConnection::connect_with(&database.owner).await?;
    let today = chrono::Utc::now().date_naive();
    slaproof_store::partitions::ensure(
        &db,
        today - chrono::Days::new(1),
        today + chrono::Days::new(1),
    )
    .await?;
    for n in 0..tenant_count {
        let tenant = tenants::create(&db, &format!("t{n}"), "bench").await?.id;
        let mut tx = db.tenant_tx(tenant).await?;
        slas::apply(&mut tx, &definition).await?;
        tx.commit().await?;
        let mut copy = owner
            .copy_in_raw(
                "COPY events (tenant_id, occurred_at, id, source, service, model, request_id, \
                 status, error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, \
                 streaming, attributes) FROM STDIN",
            )
            .await?;
        copy.send(copy_rows(tenant.uuid(), per_tenant).as_slice())
            .await?;
        copy.finish().await?;
    }
    sqlx::query("ANALYZE events").execute(&mut owner).await?;
    // Every event was received before this instant: a verdict as of a
    // later one has read them all.
    let loaded: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&mut owner)
        .await?;
    let started = Instant::now();
    let mut evaluators = Vec::new();
    for _ in 0..replicas {
        evaluators.push(serve("evaluator", &database).await?);
    }
    let deadline = started + Duration::from_secs(600);
    loop {
        let done: i64 = sqlx::query_scalar(
            "SELECT count(DISTINCT tenant_id) FROM evaluations \
             WHERE objective = 'availability' AND as_of > $1",
        )
        .bind(loaded)
        .fetch_one(&mut owner)
        .await?;
        if done == tenant_count as i64 {
            return Ok(started.elapsed().as_secs_f64());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not evaluated within 600 s ({done} tenants)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |default: u64| -> anyhow::Result<u64> {
        Ok(args
            .next()
            .map(|a| a.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let rounds = next(3)? as usize;
    let events = next(200_000)?;
    let tenant_count = next(40)? as usize;
    let per_tenant = next(25_000)?;
    eprintln!("using {}", slaproof_binary().display());

    let mut ingest_rates = [Vec::new(), Vec::new()];
    let mut evaluation_secs = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        let order = if round % 2 == 0 { [1, 2] } else { [2, 1] };
        for replicas in order {
            let rate = ingest(replicas, events).await?;
            eprintln!("round {round}: ingest, {replicas} replica(s): {rate:.0} events/s");
            ingest_rates[replicas - 1].push(rate);
        }
        for replicas in order {
            let secs = evaluate(replicas, tenant_count, per_tenant).await?;
            eprintln!("round {round}: evaluation, {replicas} replica(s): {secs:.2} s");
            evaluation_secs[replicas - 1].push(secs);
        }
    }
    let [mut i1, mut i2] = ingest_rates;
    let [mut e1, mut e2] = evaluation_secs;
    let (i1, i2, e1, e2) = (
        median(&mut i1),
        median(&mut i2),
        median(&mut e1),
        median(&mut e2),
    );
    let total = tenant_count as f64 * per_tenant as f64;
    println!("| measure (median of {rounds}) | 1 replica | 2 replicas | 2 / 1 |");
    println!("|---|---|---|---|");
    println!(
        "| ingest, durable events/s ({events} events, batches of 1,000, 8 connections in all) | {i1:.0} | {i2:.0} | {:.2}× |",
        i2 / i1
    );
    println!(
        "| evaluation: {tenant_count} tenants × {per_tenant} events, start to every verdict | {e1:.2} s ({:.0} events/s) | {e2:.2} s ({:.0} events/s) | {:.2}× |",
        total / e1,
        total / e2,
        e1 / e2
    );
    Ok(())
}
