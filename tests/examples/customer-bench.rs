//! Benchmark: one service, thousands of customers with Zipf shares (the `slaproof loadgen` traffic model), each judged by an SLA of its own on its own requests: rollups against ingest side by side in one run, a month re-evaluated for one customer against the plain SQL, and what the rollups store per customer.
//!
//! ```text
//! cargo build --release -p slaproof-tests --example customer-bench
//! ./target/release/examples/customer-bench [customers] [month-events] [round-events] [rounds]
//! ```
//!
//! Defaults: 10,000 customers (`cust-00001`… with shares `1/rank`, the
//! loadgen's `--customers zipf:N`), 3,000,000 events in November,
//! 2,000,000 events a live round, 3 rounds. Each customer has an SLA of
//! three objectives on `chat-completions` (availability, P99 latency, P95
//! time to first token of streaming requests); one more SLA on the same
//! service is service-wide (`scope: service`).
//!
//! 1. **The month.** November's traffic (the loadgen's model, Poisson
//!    arrivals on its diurnal curve) is loaded with `COPY` as the owner
//!    (setup, timed only to show the database's own write rate), then
//!    rolled up in one advance, as the evaluator catches up on a backlog.
//! 2. **Storage.** Rows and bytes of the events, the minute and hour
//!    rollups and the chart sketches afterwards.
//! 3. **A month re-evaluated** (`evaluate_sla`: the month's sums, budgets,
//!    burn rates and alert lookbacks) for the largest customer, the 100th
//!    and the 5,000th, and for the service-wide SLA, against the plain SQL
//!    a user would write over the raw events (`count(*) FILTER`,
//!    `percentile_disc`), as the service role. The verdicts and
//!    populations must agree or the binary fails.
//! 4. **Live rounds, side by side.** The real ingest service (HTTP,
//!    `POST /v1/events`, each batch acknowledged after its commit) takes
//!    `round-events` events from the load generator as fast as it
//!    acknowledges them (8 connections, batches of 1,000); then one
//!    evaluator advance reads them all into the rollups. A round's rollup
//!    rate at or above the ingest rate means the evaluator keeps up.
//!
//! Needs a Postgres where `SLAPROOF_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) may create a database and
//! a role; the database is dropped at the end.

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use anyhow::{Context, ensure};
use chrono::{DateTime, Duration, Timelike, Utc};
use slaproof::app::Service;
use slaproof_domain::minute::floor_minute;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::evaluate::evaluate_sla;
use slaproof_evaluator::{Settings, rollup};
use slaproof_ingest::event::{EventIn, IdSeed, TimeBounds};
use slaproof_ingest::loadgen::{self, Customers, LoadPlan, Stretch};
use slaproof_store::events::StoredEvent;
use slaproof_store::{Database, customers, ingest_keys, partitions, slas, tenants};
use slaproof_tests::TestDatabase;
use sqlx::postgres::PgConnection;

/// One customer's SLA (`{REF}`), or the service-wide one (`{SCOPE}`).
const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: {NAME}
spec:
  service: chat-completions
{SCOPE}
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  - name: latency-p99
    target: 99%
    threshold: {field: latency, op: lte, value: 12s}
  - name: ttft-p95
    target: 95%
    threshold: {field: ttft, op: lte, value: 800ms, filter: streaming == true}
"#;

/// The plain SQL per objective over the raw events; `{WHO}` narrows to one
/// customer or not at all. Thresholds compare `percentile_disc` with the
/// threshold afterwards.
const PLAIN_SQL: [(&str, &str, u64); 3] = [
    (
        "availability",
        "SELECT count(*) FILTER (WHERE status < 500), count(*) FROM events \
         WHERE tenant_id = $1 AND service = 'chat-completions' AND occurred_at >= $2 AND occurred_at < $3 {WHO}",
        0,
    ),
    (
        "latency-p99",
        "SELECT percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us), count(*) FROM events \
         WHERE tenant_id = $1 AND service = 'chat-completions' AND occurred_at >= $2 AND occurred_at < $3 {WHO} \
           AND latency_us IS NOT NULL",
        12_000_000,
    ),
    (
        "ttft-p95",
        "SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY ttft_us), count(*) FROM events \
         WHERE tenant_id = $1 AND service = 'chat-completions' AND occurred_at >= $2 AND occurred_at < $3 {WHO} \
           AND ttft_us IS NOT NULL AND streaming",
        800_000,
    ),
];

fn median(mut xs: Vec<StdDuration>) -> StdDuration {
    xs.sort();
    xs[xs.len() / 2]
}

fn at(text: &str) -> anyhow::Result<DateTime<Utc>> {
    text.parse()
        .with_context(|| format!("{text} is not an instant"))
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |name: &str, default: u64| -> anyhow::Result<u64> {
        args.next()
            .map_or(Ok(default), |a| a.parse())
            .with_context(|| format!("{name} must be a number"))
    };
    let count = next("customers", 10_000)?;
    let month_events = next("month-events", 3_000_000)?;
    let round_events = next("round-events", 2_000_000)?;
    let rounds = next("rounds", 3)?;
    ensure!(
        count > 0 && rounds > 0,
        "customers and rounds must be positive"
    );
    let customers = Arc::new(Customers::zipf(u32::try_from(count)?, 1.0));
    println!(
        "{count} customers (Zipf), {month_events} events in November, {rounds} live rounds of {round_events}; load average {}",
        load_average()
    );

    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let mut owner = database.owner_connection().await;
    let today = Utc::now().date_naive();
    partitions::ensure(
        &db,
        at("2026-10-31T00:00:00Z")?.date_naive(),
        today + chrono::Days::new(1),
    )
    .await?;
    let tenant = tenants::create(&db, "bench", "Bench").await?.id;

    // Setup: the customers and their SLAs, and the service-wide one.
    let t = Instant::now();
    let mut tx = db.tenant_tx(tenant).await?;
    for reference in customers.refs() {
        customers::create(&mut tx, reference, reference).await?;
        let document = SLA
            .replace("{NAME}", &format!("sla-{reference}"))
            .replace("{SCOPE}", &format!("  customer: {reference}"));
        slas::apply(&mut tx, &SlaDefinition::from_document(&document)?).await?;
    }
    let public = SLA
        .replace("{NAME}", "public")
        .replace("{SCOPE}", "  scope: service");
    slas::apply(&mut tx, &SlaDefinition::from_document(&public)?).await?;
    tx.commit().await?;
    println!(
        "setup: {count} customers and {} SLAs in {:.1} s",
        count + 1,
        t.elapsed().as_secs_f64()
    );

    // 1. The month, loaded, then rolled up in one advance.
    let month = at("2026-11-01T00:00:00Z")?;
    let as_of = at("2026-11-30T23:59:00Z")?;
    let loaded = load_month(&mut owner, tenant.uuid(), &customers, month_events).await?;
    let settings = Settings {
        settle_secs: 0,
        statement_timeout_secs: 3600,
        ..Settings::default()
    };
    let t = Instant::now();
    let mut tx = db.tenant_tx(tenant).await?;
    let (advance, _) = rollup::advance_to(&mut tx, &settings, as_of).await?;
    tx.commit().await?;
    let took = t.elapsed().as_secs_f64();
    ensure!(
        advance.events_read == loaded,
        "read {} of {loaded}",
        advance.events_read
    );
    println!(
        "month rolled up in one advance: {loaded} events in {took:.1} s = {:.0} events/s; {} minute rollup rows",
        loaded as f64 / took,
        advance.rollup_rows
    );

    // 2. Storage.
    storage(&mut owner, count).await?;

    // 3. A month re-evaluated, per customer and service-wide.
    let mut tx = db.tenant_tx(tenant).await?;
    let (tracked, _) = rollup::track(&mut tx, as_of).await?;
    tx.rollback().await?;
    let ranks: Vec<usize> = [1, 100, 5_000]
        .into_iter()
        .filter(|r| *r as u64 <= count)
        .collect();
    let mut subjects: Vec<(String, Option<String>)> = ranks
        .iter()
        .map(|r| {
            let reference = customers.refs()[r - 1].clone();
            (format!("sla-{reference}"), Some(reference))
        })
        .collect();
    subjects.push(("public".to_owned(), None));
    for (name, customer) in subjects {
        let sla = tracked
            .iter()
            .find(|t| t.name == name)
            .with_context(|| format!("{name} is not tracked"))?;
        reevaluate(
            &db,
            tenant,
            sla,
            customer.as_deref(),
            month,
            as_of,
            &settings,
        )
        .await?;
    }

    // 4. Live rounds: ingest over HTTP, then one advance over what it took.
    live_rounds(
        &database,
        &db,
        tenant,
        &customers,
        round_events,
        rounds,
        &settings,
    )
    .await?;
    db.close().await;
    Ok(())
}

/// `COPY`s about `n` requests of November (the loadgen's model, through
/// the ingest API's own validation) as the owner; returns how many.
async fn load_month(
    owner: &mut PgConnection,
    tenant: uuid::Uuid,
    customers: &Arc<Customers>,
    n: u64,
) -> anyhow::Result<u64> {
    let t = Instant::now();
    let from = at("2026-11-01T00:00:00Z")?;
    // Received by 23:50: every event is read by the advance to 23:59.
    let to = at("2026-11-30T23:50:00Z")?;
    let requests = loadgen::requests(&Stretch {
        from,
        to,
        rate: n as f64 / (to - from).num_seconds() as f64,
        diurnal: true,
        incident: None,
        seed: 29,
        customers: Arc::clone(customers),
    });
    let bounds = TimeBounds::at(Utc::now(), 400, Duration::minutes(5));
    let mut copy = owner
        .copy_in_raw(
            "COPY events (tenant_id, occurred_at, id, source, service, model, request_id, \
             status, error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, \
             streaming, attributes, customer, received_at) FROM STDIN",
        )
        .await?;
    let tenant = tenant.hyphenated().to_string();
    let mut buf = Vec::with_capacity(9 << 20);
    for (i, request) in requests.iter().enumerate() {
        let json = request.to_event(&format!("m-{i}"));
        let event: StoredEvent = serde_json::from_value::<EventIn>(json)?
            .validate(0, &bounds, IdSeed::Fresh)
            .map_err(|e| anyhow::anyhow!("a synthetic event is invalid: {e:?}"))?;
        buf.extend_from_slice(tenant.as_bytes());
        buf.push(b'\t');
        slaproof_ingest::writer::encode_row(&mut buf, &event);
        // Received a second after the answer was complete.
        buf.pop();
        let received = request.finished_at() + Duration::seconds(1);
        buf.push(b'\t');
        buf.extend_from_slice(received.to_rfc3339().as_bytes());
        buf.push(b'\n');
        if buf.len() > 8 << 20 {
            copy.send(buf.as_slice()).await?;
            buf.clear();
        }
    }
    copy.send(buf.as_slice()).await?;
    copy.finish().await?;
    sqlx::query("ANALYZE events").execute(&mut *owner).await?;
    let took = t.elapsed().as_secs_f64();
    println!(
        "loaded {} events of November in {took:.1} s ({:.0} events/s, drawn, validated and COPY'd as the owner: setup)",
        requests.len(),
        requests.len() as f64 / took
    );
    Ok(requests.len() as u64)
}

/// Prints rows and bytes of the events and of what the evaluator keeps.
async fn storage(owner: &mut PgConnection, customers: u64) -> anyhow::Result<()> {
    println!("| table | rows | bytes (with indexes) | bytes per customer |");
    println!("|---|---|---|---|");
    for table in [
        "events",
        "evaluator_rollups",
        "evaluator_rollups_hourly",
        "evaluator_sketches",
        "evaluator_sketches_hourly",
    ] {
        // Partitioned tables: the sum over their partitions.
        let (rows, bytes): (i64, i64) = sqlx::query_as(&format!(
            "SELECT (SELECT count(*) FROM {table}), \
                    coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8 \
             FROM pg_class c WHERE c.oid = '{table}'::regclass \
                OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = '{table}'::regclass)"
        ))
        .fetch_one(&mut *owner)
        .await?;
        println!(
            "| {table} | {rows} | {:.1} MB | {:.1} kB |",
            bytes as f64 / 1e6,
            bytes as f64 / 1e3 / customers as f64
        );
    }
    Ok(())
}

/// The month of `sla` from its rollups against the plain SQL over the raw
/// events; fails unless both give the same populations and verdicts.
async fn reevaluate(
    db: &Database,
    tenant: slaproof_domain::ids::TenantId,
    sla: &slaproof_evaluator::TrackedSla,
    customer: Option<&str>,
    from: DateTime<Utc>,
    as_of: DateTime<Utc>,
    settings: &Settings,
) -> anyhow::Result<()> {
    let mut ours = Vec::new();
    let mut evaluations = Vec::new();
    for _ in 0..5 {
        let mut tx = db.tenant_tx(tenant).await?;
        let t = Instant::now();
        evaluations = evaluate_sla(&mut tx, sla, as_of, settings.grace()).await?;
        ours.push(t.elapsed());
        tx.rollback().await?;
    }
    let who = if customer.is_some() {
        "AND customer = $4"
    } else {
        ""
    };
    let mut plain = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..3 {
        let mut tx = db.tenant_tx(tenant).await?;
        let t = Instant::now();
        theirs.clear();
        for (objective, sql, threshold) in PLAIN_SQL {
            let sql = sql.replace("{WHO}", who);
            let mut query = sqlx::query_as::<_, (Option<i64>, i64)>(&sql)
                .bind(tenant.uuid())
                .bind(from)
                .bind(as_of);
            if let Some(customer) = customer {
                query = query.bind(customer);
            }
            let (value, total) = query.fetch_one(&mut *tx).await?;
            theirs.push((objective, value, total, threshold));
        }
        plain.push(t.elapsed());
        tx.rollback().await?;
    }
    let (ours, plain) = (median(ours), median(plain));
    let events = theirs.first().map_or(0, |t| t.2);
    println!(
        "re-evaluate November for {} ({events} events): from rollups {:.1} ms (median of 5); plain SQL {:.1} ms (median of 3); {:.0}×",
        sla.name,
        ours.as_secs_f64() * 1e3,
        plain.as_secs_f64() * 1e3,
        plain.as_secs_f64() / ours.as_secs_f64()
    );
    for (objective, value, total, threshold) in theirs {
        let ours = evaluations
            .iter()
            .find(|e| e.objective == objective)
            .with_context(|| format!("no evaluation of {objective}"))?;
        let sql_met = match objective {
            "availability" => value.unwrap_or(0) * 1000 >= 999 * total,
            // percentile_disc(q) ≤ T exactly when at least q of the events are ≤ T.
            _ => value.is_some_and(|v| v <= threshold as i64),
        };
        ensure!(
            ours.budget.tally.total == total as u64 && ours.budget.met() == sql_met,
            "{} {objective}: evaluator {:?} (met {}) but plain SQL {value:?} of {total} (met {sql_met})",
            sla.name,
            ours.budget.tally,
            ours.budget.met()
        );
    }
    Ok(())
}

/// Waits until the clock is past the next minute boundary, so that an
/// advance to the current minute covers everything received before.
async fn next_minute() -> DateTime<Utc> {
    let now = Utc::now();
    let wait = 61 - u64::from(now.second());
    tokio::time::sleep(StdDuration::from_secs(wait)).await;
    floor_minute(Utc::now())
}

/// Rounds of ingest over HTTP, each followed by the advance that reads
/// its events into the rollups, both timed.
async fn live_rounds(
    database: &TestDatabase,
    db: &Database,
    tenant: slaproof_domain::ids::TenantId,
    customers: &Arc<Customers>,
    events: u64,
    rounds: u64,
    settings: &Settings,
) -> anyhow::Result<()> {
    let ingest = slaproof_tests::spawn_services(database, &[Service::Ingest], |config| {
        config.database.max_connections = 12;
        config.ingest.writers = 8;
        config.ingest.max_in_flight = 16;
        config.ingest.max_in_flight_per_tenant = Some(16);
        config.ingest.rate_limit_per_sec = 0.0;
    })
    .await;
    let mut tx = db.tenant_tx(tenant).await?;
    let key = ingest_keys::create(&mut tx, "bench")
        .await?
        .reveal()
        .to_owned();
    tx.commit().await?;
    let plan = |events: u64| LoadPlan {
        url: format!("http://{}", ingest.address),
        key: key.clone(),
        rate: None,
        duration: None,
        events: Some(events),
        batch: 1_000,
        connections: 8,
        incident: None,
        diurnal: false,
        customers: Arc::clone(customers),
    };
    let advance = |target: DateTime<Utc>| async move {
        let t = Instant::now();
        let mut tx = db.tenant_tx(tenant).await?;
        let (advance, _) = rollup::advance_to(&mut tx, settings, target).await?;
        tx.commit().await?;
        anyhow::Ok((advance, t.elapsed()))
    };
    // Warm-up (connections, caches, the day's partition), read by an
    // advance not timed.
    loadgen::run(plan(5_000)).await?;
    advance(next_minute().await).await?;
    println!(
        "| live round | ingest over HTTP, events/s | rollup advance, events/s | rollup rows | rollup / ingest |"
    );
    println!("|---|---|---|---|---|");
    let (mut ingested, mut rolled) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let report = loadgen::run(plan(events)).await?;
        ensure!(
            report.rejected + report.failed == 0,
            "refused events: {report:?}"
        );
        let (advance, took) = advance(next_minute().await).await?;
        ensure!(
            advance.events_read == report.acknowledged,
            "the advance read {} of {} events",
            advance.events_read,
            report.acknowledged
        );
        let rate = advance.events_read as f64 / took.as_secs_f64();
        println!(
            "| {round} | {:.0} | {rate:.0} ({} in {:.2} s) | {} | {:.1}× |",
            report.events_per_sec,
            advance.events_read,
            took.as_secs_f64(),
            advance.rollup_rows,
            rate / report.events_per_sec
        );
        ingested.push(report.events_per_sec);
        rolled.push(rate);
    }
    ingested.sort_by(f64::total_cmp);
    rolled.sort_by(f64::total_cmp);
    let (i, r) = (ingested[ingested.len() / 2], rolled[rolled.len() / 2]);
    println!(
        "median of {rounds}: ingest {i:.0} events/s, rollups {r:.0} events/s: rollups {:.1}× ingest",
        r / i
    );
    ingest.stop().await?;
    Ok(())
}
