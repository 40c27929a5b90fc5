//! Benchmark: closing a month and issuing its credits for N customer SLAs of one tenant — the evaluator's close (N periods frozen, N credit jobs asked for) and the compensation worker draining the jobs into the ledger.
//!
//! ```text
//! cargo build --release -p slaproof-compensation --example credits-bench
//! ./target/release/examples/credits-bench [SLAS] [RUNS] [busy]
//! ```
//!
//! `SLAS` customers (default 10,000), each with a fee of 1,000.00 EUR a
//! month and one SLA of its own on the same service under a tiered credit
//! policy, judged on its own requests: 200 requests of each customer in
//! November (2,000,000 for 10,000 customers, interleaved), 5 of them
//! failed, so every SLA's month is breached (97.5% < 99: 25% of the fee,
//! 250.00 EUR).
//! Each round is the worker's: the SLAs spread over `evaluator.connections`
//! transactions (`evaluate_tenant_spread`). After the close, a round with
//! nothing to close is timed over 1, 2 and 4 connections, twice each.
//! Last, (c) a busy round: every customer sends another 200 requests
//! within one 30 s round interval, and the round after it is timed; with
//! `busy`, only that round, at the start of a fresh month (after the setup
//! and the first round).
//! The compensation part runs `RUNS` times (default 3) each way,
//! alternating: the worker as it is (`work_due`, a tenant's claimed jobs in
//! one transaction) and one transaction per job (`run_job`); between runs
//! the ledger is emptied by the database owner (`TRUNCATE`, which the
//! append-only trigger does not see) and the credit jobs made due again.
//!
//! Needs a Postgres where `SLAPROOF_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) may create a database and
//! a role; the database is dropped at the end.

use std::time::{Duration as StdDuration, Instant};

use anyhow::{Context, ensure};
use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::EventId;
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{Settings as EvaluatorSettings, TenantRun, evaluate_tenant_spread};
use slaproof_store::credits::{self, Fee};
use slaproof_store::events::{self, EventSource, StoredEvent};
use slaproof_store::scratch::Scratch;
use slaproof_store::{Database, customers, jobs, partitions, slas, tenants};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

/// One customer's SLA; `{I}` is the customer's number.
const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-{I}
spec:
  service: chat
  customer: customer-{I}
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  credits:
    currency: EUR
    capPercentOfFee: 50
    tiered:
    - objective: availability
      tiers:
      - {below: "99.9", percent: "10"}
      - {below: "99", percent: "25"}
      - {below: "95", percent: "100"}
"#;

/// The fee of every customer, in cents.
const FEE_MINOR: i64 = 100_000;
/// 195 of 200 requests good: 97.5%, under 99 → 25% of the fee.
const CREDIT_MINOR: i64 = 25_000;
const REQUESTS: i64 = 200;
/// The `evaluator.connections` the steady rounds are timed with, side by
/// side (the other rounds use the default).
const SPREADS: [u32; 3] = [1, 2, 4];
const FAILED: i64 = 5;

fn median(mut xs: Vec<StdDuration>) -> StdDuration {
    xs.sort();
    xs[xs.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn at(text: &str) -> anyhow::Result<DateTime<Utc>> {
    text.parse()
        .with_context(|| format!("{text} is not an instant"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(Ok(10_000), |a| a.parse())
        .context("SLAS")?;
    let runs: usize = args.next().map_or(Ok(3), |a| a.parse()).context("RUNS")?;
    let busy_only = match args.next().as_deref() {
        None => false,
        Some("busy") => true,
        Some(other) => anyhow::bail!("the third argument may only be `busy`, got {other}"),
    };
    ensure!(n > 0 && runs > 0, "SLAS and RUNS must be positive");
    let scratch = Scratch::create("slaproof_bench").await?;
    let result = run(&scratch, n, runs, busy_only).await;
    scratch.drop_database().await?;
    result
}

/// One evaluator round with the watermark moved to `as_of`, timed: the
/// worker's way, its SLAs spread over `settings.connections` transactions.
async fn round(
    db: &Database,
    tenant: TenantId,
    settings: &EvaluatorSettings,
    as_of: DateTime<Utc>,
) -> anyhow::Result<(TenantRun, StdDuration)> {
    let t = Instant::now();
    let mut tx = db.tenant_tx(tenant).await?;
    let run = evaluate_tenant_spread(db, &mut tx, settings, Some(as_of)).await?;
    tx.commit().await?;
    let took = t.elapsed();
    ensure!(
        run.failed_slas.is_empty(),
        "SLAs failed: {:?}",
        run.failed_slas
    );
    Ok((run, took))
}

async fn run(scratch: &Scratch, n: usize, runs: usize, busy_only: bool) -> anyhow::Result<()> {
    println!(
        "{n} customer SLAs, {runs} compensation runs; load average {}",
        load_average()
    );
    let mut own = PgConnection::connect_with(&scratch.owner).await?;
    let db = scratch
        .service_database(1 + SPREADS.iter().max().copied().unwrap_or(1))
        .await?;

    let month = at("2026-11-01T00:00:00Z")?;
    partitions::ensure(
        &db,
        at("2026-10-31T00:00:00Z")?.date_naive(),
        at("2026-12-02T00:00:00Z")?.date_naive(),
    )
    .await?;
    let tenant = tenants::create(&db, "bench", "Bench").await?.id;

    // Setup: customers, fees and SLAs through the store, in one transaction.
    let t = Instant::now();
    let mut tx = db.tenant_tx(tenant).await?;
    for i in 0..n {
        let reference = format!("customer-{i:05}");
        let customer = customers::create(&mut tx, &reference, &reference).await?;
        credits::add_fee(
            &mut tx,
            &Fee {
                customer: customer.id,
                effective_from: at("2026-01-01T00:00:00Z")?,
                effective_on: None,
                currency: "EUR".to_owned(),
                minor_units: 2,
                amount_minor: FEE_MINOR,
                created_at: Utc::now(),
                created_by: "credits-bench".to_owned(),
            },
        )
        .await?;
        let document = SLA.replace("{I}", &format!("{i:05}"));
        slas::apply(&mut tx, &SlaDefinition::from_document(&document)?).await?;
    }
    tx.commit().await?;
    println!(
        "setup: {n} customers, fees and SLAs in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let settings = EvaluatorSettings {
        grace_secs: 300,
        settle_secs: 0,
        statement_timeout_secs: 3600,
        ..EvaluatorSettings::default()
    };
    // The SLAs are seen from the month's start: the month is theirs to judge.
    let (_, took) = round(&db, tenant, &settings, month).await?;
    println!(
        "first round at the month's start (every SLA seen): {:.1} s",
        took.as_secs_f64()
    );
    if busy_only {
        // The busy round alone, in the month's first minutes.
        busy_round(&db, tenant, &settings, n, at("2026-11-01T00:20:00Z")?).await?;
        db.close().await;
        return Ok(());
    }

    // Each customer's own requests, counted by its SLA only: REQUESTS each,
    // the customers' interleaved half a second apart from the 10th, each
    // customer's first FAILED answered 500.
    let t = Instant::now();
    let total = store_requests(
        &db,
        tenant,
        n,
        at("2026-11-10T00:00:00Z")?,
        Duration::milliseconds(500),
    )
    .await?;
    println!(
        "stored {total} requests ({REQUESTS} per customer) in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // A round inside the month: the requests rolled up for every SLA and
    // every SLA evaluated, nothing to close.
    let (run, inside) = round(&db, tenant, &settings, at("2026-11-30T23:00:00Z")?).await?;
    ensure!(run.closed.is_empty(), "nothing closes inside the month");
    println!(
        "round inside the month (rollup of {} events, each to its customer's SLA, {} rollup rows, {n} evaluated): {:.1} s, of which the rollups {:.1} s (writing their rows {:.1} s)",
        run.advance.events_read,
        run.advance.rollup_rows,
        inside.as_secs_f64(),
        run.advance.took.as_secs_f64(),
        run.advance.writing.as_secs_f64()
    );

    // (a) The close: the watermark past the month's end and its grace.
    let (run, close) = round(&db, tenant, &settings, at("2026-12-01T00:05:00Z")?).await?;
    ensure!(
        run.closed.len() == n,
        "{} periods closed, expected {n}",
        run.closed.len()
    );
    let mut tx = db.tenant_tx(tenant).await?;
    let due: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM jobs WHERE kind = 'credit' AND run_at IS NOT NULL",
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    ensure!(due == n as i64, "{due} credit jobs, expected {n}");
    println!(
        "(a) close the month: {n} periods frozen, {due} credit jobs asked for, {n} SLAs evaluated: {:.1} s ({:.2} ms per SLA)",
        close.as_secs_f64(),
        close.as_secs_f64() * 1e3 / n as f64
    );
    // The same round a minute later, and each minute after: everything
    // but the close, the SLAs spread over 1, 2 and 4 connections in turn,
    // twice (the first round after the close does more than the others).
    let mut minute = at("2026-12-01T00:06:00Z")?;
    for spread in SPREADS.into_iter().chain(SPREADS) {
        let settings = EvaluatorSettings {
            connections: spread,
            ..settings.clone()
        };
        let (run, after) = round(&db, tenant, &settings, minute).await?;
        ensure!(run.closed.is_empty(), "the month closes once");
        ensure!(
            run.evaluations.len() == n,
            "{} evaluations, expected {n}",
            run.evaluations.len()
        );
        println!(
            "    a round with nothing to close, {n} SLAs evaluated over {spread} connection(s): {:.1} s ({:.2} ms per SLA; load average {})",
            after.as_secs_f64(),
            after.as_secs_f64() * 1e3 / n as f64,
            load_average()
        );
        minute += Duration::minutes(1);
    }

    // (b) The compensation worker draining the credit jobs: the worker as
    // it is (`work_due`: a tenant's claimed jobs share one transaction)
    // and, alternating with it on the same jobs, one transaction and one
    // commit per job (`run_job`, as the worker ran them before).
    let mut times: [Vec<StdDuration>; 2] = [Vec::new(), Vec::new()];
    for r in 0..runs {
        for (w, way) in WAYS.iter().enumerate() {
            if r > 0 || w > 0 {
                reset(&mut own).await?;
            }
            let load = load_average();
            let t = Instant::now();
            let ran = drain(&db, *way).await?;
            let took = t.elapsed();
            ensure!(ran == n, "{ran} credit jobs ran, expected {n}");
            check_ledger(&db, tenant, n).await?;
            println!(
                "(b) compensation run {}, {}: {n} credits of 250.00 EUR in {:.2} s = {:.0} credits/s (load average {load})",
                r + 1,
                way.name(),
                took.as_secs_f64(),
                n as f64 / took.as_secs_f64()
            );
            times[w].push(took);
        }
    }
    let medians = times.map(median);
    for (way, m) in WAYS.iter().zip(medians) {
        println!(
            "compensation, {}, median of {runs}: {:.2} s = {:.0} credits/s ({:.2} ms per credit)",
            way.name(),
            m.as_secs_f64(),
            n as f64 / m.as_secs_f64(),
            m.as_secs_f64() * 1e3 / n as f64
        );
    }
    println!(
        "batched / per-job time: {:.2}; load average {}",
        medians[0].as_secs_f64() / medians[1].as_secs_f64(),
        load_average()
    );

    busy_round(&db, tenant, &settings, n, at("2026-12-01T00:20:00Z")?).await?;
    db.close().await;
    Ok(())
}

/// (c) A busy round: every customer sends REQUESTS requests within the
/// round interval before `end` (a whole minute: the evaluator rolls up to
/// the minute), 15 µs apart (66,667 requests/s), so each SLA's new events
/// fall in one minute; the round after it rolls them up and evaluates every
/// SLA. This is the steady state at its busiest, where the catch-up round
/// is 12 days of backlog at once.
async fn busy_round(
    db: &Database,
    tenant: TenantId,
    settings: &EvaluatorSettings,
    n: usize,
    end: DateTime<Utc>,
) -> anyhow::Result<()> {
    let stored = Instant::now();
    let total = store_requests(
        db,
        tenant,
        n,
        end - Duration::seconds(30),
        Duration::microseconds(15),
    )
    .await?;
    let stored = stored.elapsed();
    let (run, busy) = round(db, tenant, settings, end).await?;
    ensure!(
        run.advance.events_read == total as u64,
        "the busy round read {} events, expected {total}",
        run.advance.events_read
    );
    println!(
        "(c) a busy round: {total} requests in 30 s ({REQUESTS} per customer, stored in {:.1} s), rolled up ({} rollup rows) and {n} SLAs evaluated over {} connections: {:.1} s, of which the rollups {:.1} s (writing their rows {:.1} s; load average {})",
        stored.as_secs_f64(),
        run.advance.rollup_rows,
        settings.connections,
        busy.as_secs_f64(),
        run.advance.took.as_secs_f64(),
        run.advance.writing.as_secs_f64(),
        load_average()
    );
    Ok(())
}

/// Stores REQUESTS requests of each of `n` customers, `step` apart from
/// `first` (received as they occurred), the customers interleaved and each
/// one's first FAILED answered 500. Returns how many were stored.
async fn store_requests(
    db: &Database,
    tenant: TenantId,
    n: usize,
    first: DateTime<Utc>,
    step: Duration,
) -> anyhow::Result<i64> {
    let total = REQUESTS * n as i64;
    const CHUNK: i64 = 100_000;
    let mut k = 0;
    while k < total {
        let end = (k + CHUNK).min(total);
        let events: Vec<(StoredEvent, DateTime<Utc>)> = (k..end)
            .map(|k| {
                let occurred_at = first + step * i32::try_from(k).expect("at most 2^31 requests");
                let event = StoredEvent {
                    id: EventId::new(),
                    occurred_at,
                    source: EventSource::Provider,
                    service: "chat".to_owned(),
                    customer: Some(format!("customer-{:05}", k % n as i64)),
                    model: Some("big".to_owned()),
                    request_id: None,
                    status: Some(if k / (n as i64) < FAILED { 500 } else { 200 }),
                    error_class: None,
                    latency_us: Some(1000),
                    ttft_us: None,
                    tpot_us: None,
                    input_tokens: None,
                    output_tokens: None,
                    streaming: None,
                    attributes: serde_json::json!({}),
                };
                (event, occurred_at)
            })
            .collect();
        let mut tx = db.tenant_tx(tenant).await?;
        events::insert_received(&mut tx, &events).await?;
        tx.commit().await?;
        k = end;
    }
    Ok(total)
}

/// How the credit jobs are drained.
#[derive(Debug, Clone, Copy)]
enum Way {
    /// `work_due`: the jobs of a tenant claimed together in one
    /// transaction, each in a savepoint.
    Batched,
    /// Each job in its own transaction, committed alone (`run_job`).
    PerJob,
}

const WAYS: [Way; 2] = [Way::Batched, Way::PerJob];

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Batched => "work_due (a batch per transaction)",
            Way::PerJob => "run_job (a transaction per job)",
        }
    }
}

async fn drain(db: &Database, way: Way) -> anyhow::Result<usize> {
    let settings = slaproof_compensation::Settings::default();
    match way {
        Way::Batched => Ok(slaproof_compensation::work_due(db, &settings, "credits-bench").await?),
        Way::PerJob => {
            let lease = StdDuration::from_secs(settings.lease_secs);
            let mut ran = 0;
            loop {
                let claimed =
                    jobs::claim(db, jobs::CREDIT, "credits-bench", settings.batch, lease).await?;
                if claimed.is_empty() {
                    return Ok(ran);
                }
                for job in &claimed {
                    slaproof_compensation::run_job(db, job).await?;
                    ran += 1;
                }
            }
        }
    }
}

/// Back to just after the close: an empty ledger, the credit jobs due. As
/// the owner: the service role may not, and `TRUNCATE` is not seen by the
/// append-only trigger.
async fn reset(own: &mut PgConnection) -> anyhow::Result<()> {
    for statement in [
        "TRUNCATE credit_entries",
        "DELETE FROM outbox WHERE event_type LIKE 'credit.%'",
        "UPDATE jobs SET run_at = now() WHERE kind = 'credit'",
        "VACUUM ANALYZE credit_entries, jobs, outbox",
    ] {
        sqlx::query(statement).execute(&mut *own).await?;
    }
    Ok(())
}

/// N entries, each issuing 250.00 EUR, and N `credit.issued` facts.
async fn check_ledger(db: &Database, tenant: TenantId, n: usize) -> anyhow::Result<()> {
    let mut tx = db.tenant_tx(tenant).await?;
    let (entries, right, told): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE kind = 'issued' AND amount_minor = $1 AND total_minor = $1), \
                (SELECT count(*) FROM outbox WHERE event_type = 'credit.issued') \
         FROM credit_entries",
    )
    .bind(CREDIT_MINOR)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    ensure!(
        entries == n as i64 && right == n as i64 && told == n as i64,
        "{entries} ledger entries ({right} of {CREDIT_MINOR} cents), {told} told; expected {n}"
    );
    Ok(())
}
