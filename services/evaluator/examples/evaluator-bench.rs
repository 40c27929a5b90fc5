//! Benchmark: rollup throughput on N events of one tenant over 30 days with four objectives, and re-evaluating the month from rollups beside the plain SQL a user would write over the raw events.
//!
//! ```text
//! cargo run --release -p slaproof-evaluator --example evaluator-bench -- [EVENTS] [RUNS]
//! ```
//!
//! Needs a Postgres where `SLAPROOF_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) may create a database and
//! a role; the database is dropped at the end.

use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::Tally;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::evaluate::{evaluate_sla, period_counts};
use slaproof_evaluator::{Settings, evaluate_tenant_up_to, rollup};
use slaproof_store::scratch::Scratch;
use slaproof_store::{partitions, slas, tenants};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: bench
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  - name: latency-p99
    target: 99%
    threshold: {field: latency, op: lte, value: 3.2s}
  - name: ttft-p95
    target: 95%
    threshold: {field: ttft, op: lte, value: 800ms, filter: streaming == true and input_tokens <= 4096}
  - name: big-model-success
    target: 99.5%
    ratio: {good: status < 500 and error_class != "timeout", total: model == "big"}
"#;

/// The plain SQL per objective: filtered counts, and percentile_disc for
/// the percentile objectives (compared with the threshold afterwards).
const PLAIN_SQL: [(&str, &str); 4] = [
    (
        "availability",
        "SELECT count(*) FILTER (WHERE status < 500), count(*) FROM events \
         WHERE tenant_id = $1 AND service = 'chat' AND occurred_at >= $2 AND occurred_at < $3",
    ),
    (
        "latency-p99",
        "SELECT percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us), count(*) FROM events \
         WHERE tenant_id = $1 AND service = 'chat' AND occurred_at >= $2 AND occurred_at < $3 \
           AND latency_us IS NOT NULL",
    ),
    (
        "ttft-p95",
        "SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY ttft_us), count(*) FROM events \
         WHERE tenant_id = $1 AND service = 'chat' AND occurred_at >= $2 AND occurred_at < $3 \
           AND ttft_us IS NOT NULL AND streaming AND input_tokens <= 4096",
    ),
    (
        "big-model-success",
        "SELECT count(*) FILTER (WHERE status < 500 AND error_class IS DISTINCT FROM 'timeout'), count(*) \
         FROM events WHERE tenant_id = $1 AND service = 'chat' AND occurred_at >= $2 AND occurred_at < $3 \
           AND model = 'big'",
    ),
];

/// A small deterministic generator (64-bit LCG), so runs are comparable.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn median(mut xs: Vec<StdDuration>) -> StdDuration {
    xs.sort();
    xs[xs.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow_free::Result<()> {
    let mut args = std::env::args().skip(1);
    let events: u64 = args.next().map_or(Ok(10_000_000), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let scratch = Scratch::create("slaproof_bench").await?;
    let result = run(&scratch, events, runs).await;
    scratch.drop_database().await?;
    result
}

async fn run(scratch: &Scratch, n: u64, runs: usize) -> anyhow_free::Result<()> {
    let mut own = PgConnection::connect_with(&scratch.owner).await?;
    let db = scratch.service_database(4).await?;

    let start: DateTime<Utc> = "2026-11-01T00:00:00Z".parse()?;
    let end: DateTime<Utc> = "2026-12-01T00:00:00Z".parse()?;
    partitions::ensure(&db, start.date_naive(), end.date_naive()).await?;
    let tenant = tenants::create(&db, "bench", "Bench").await?.id;
    let mut tx = db.tenant_tx(tenant).await?;
    let sla_id = slas::apply(&mut tx, &SlaDefinition::from_document(SLA)?)
        .await?
        .sla;
    tx.commit().await?;

    // Load as the owner with COPY (the service role is behind row-level
    // security, which COPY FROM does not support); this is setup, not measured
    // against anything.
    let load = Instant::now();
    let span_us = (end - start - Duration::minutes(2))
        .num_microseconds()
        .unwrap_or(1);
    let mut rng = Lcg(42);
    let mut copy = own
        .copy_in_raw(
            "COPY events (tenant_id, occurred_at, id, received_at, source, service, model, status, error_class, \
             latency_us, ttft_us, input_tokens, output_tokens, streaming) FROM STDIN",
        )
        .await?;
    let mut buf = String::with_capacity(16 << 20);
    for i in 0..n {
        let offset = (i as i128 * span_us as i128 / n as i128) as i64;
        let occurred = start + Duration::microseconds(offset);
        let received = occurred + Duration::milliseconds(rng.below(5_000) as i64);
        let status = if rng.below(10_000) < 8 { 503 } else { 200 };
        let error_class = if status == 503 && rng.below(2) == 0 {
            "timeout"
        } else {
            "\\N"
        };
        let latency =
            150_000 + rng.below(2_800_000) + if rng.below(1000) < 6 { 3_000_000 } else { 0 };
        let streaming = rng.below(10) < 7;
        let ttft = if streaming {
            (80_000 + rng.below(700_000) + if rng.below(100) < 4 { 900_000 } else { 0 }).to_string()
        } else {
            "\\N".to_owned()
        };
        let model = if rng.below(3) == 0 { "big" } else { "small" };
        let input = rng.below(8_000);
        use std::fmt::Write as _;
        let _ = writeln!(
            buf,
            "{}\t{}\t{}\t{}\tprovider\tchat\t{model}\t{status}\t{error_class}\t{latency}\t{ttft}\t{input}\t{}\t{}",
            tenant.uuid(),
            occurred.to_rfc3339(),
            uuid::Uuid::new_v4(),
            received.to_rfc3339(),
            rng.below(500),
            if streaming { "t" } else { "f" },
        );
        if buf.len() > 8 << 20 {
            copy.send(buf.as_bytes()).await?;
            buf.clear();
        }
    }
    copy.send(buf.as_bytes()).await?;
    copy.finish().await?;
    sqlx::query("ANALYZE events").execute(&mut own).await?;
    let load = load.elapsed();
    println!(
        "loaded {n} events in {:.1} s ({:.0} events/s, COPY as owner, setup)",
        load.as_secs_f64(),
        n as f64 / load.as_secs_f64()
    );

    // Rollups: the whole backlog in one advance, as the service role.
    let settings = Settings {
        settle_secs: 0,
        ..Settings::default()
    };
    let as_of: DateTime<Utc> = "2026-11-30T23:59:00Z".parse()?;
    let t = Instant::now();
    let mut tx = db.tenant_tx(tenant).await?;
    let run = evaluate_tenant_up_to(&mut tx, &settings, Some(as_of)).await?;
    tx.commit().await?;
    let rollup_time = t.elapsed();
    println!(
        "rollup + first evaluation: {} events read in {:.1} s = {:.0} events/s; {} rollup rows",
        run.advance.events_read,
        rollup_time.as_secs_f64(),
        run.advance.events_read as f64 / rollup_time.as_secs_f64(),
        run.advance.rollup_rows
    );

    if std::env::var_os("BENCH_EXPLAIN").is_some() {
        let mut tx = db.tenant_tx(tenant).await?;
        for _ in 0..2 {
            let plan: Vec<String> = sqlx::query_scalar(
                "EXPLAIN (ANALYZE, BUFFERS) SELECT objective, sum(good)::int8, sum(total)::int8, sum(late_folded)::int8, sum(late_good)::int8, \
             sum(late_total)::int8 FROM ( \
           SELECT objective, good, total, late_folded, late_good, late_total FROM evaluator_rollups_hourly \
           WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND hour >= $6 AND hour < $7 \
           UNION ALL \
           SELECT objective, good, total, late_folded, late_good, late_total FROM evaluator_rollups \
           WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND minute >= $4 AND minute < $6 \
           UNION ALL \
           SELECT objective, good, total, late_folded, late_good, late_total FROM evaluator_rollups \
           WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND minute >= $7 AND minute < $5 \
         ) AS parts GROUP BY objective",
            )
            .bind(tenant.uuid())
            .bind(sla_id.uuid())
            .bind(1)
            .bind(start)
            .bind(as_of)
            .bind(start)
            .bind(as_of - Duration::minutes(59))
            .fetch_all(&mut *tx)
            .await?;
            println!("{}", plan.join("\n"));
        }
        tx.rollback().await?;
    }
    // Re-evaluating the month from rollups (4 objectives).
    let mut from_rollups = Vec::new();
    let mut sums_only = Vec::new();
    let mut ours: Vec<(String, Tally, bool)> = Vec::new();
    for _ in 0..runs {
        let mut tx = db.tenant_tx(tenant).await?;
        let (tracked, _) = rollup::track(&mut tx, as_of).await?;
        let t = Instant::now();
        let evaluations = evaluate_sla(&mut tx, &tracked[0], as_of, settings.grace()).await?;
        from_rollups.push(t.elapsed());
        let t = Instant::now();
        period_counts(
            &mut tx,
            &tracked[0],
            &[],
            start,
            as_of,
            as_of,
            settings.grace(),
        )
        .await?;
        sums_only.push(t.elapsed());
        tx.rollback().await?;
        ours = evaluations
            .iter()
            .map(|e| (e.objective.clone(), e.budget.tally, e.budget.met()))
            .collect();
    }

    // The plain SQL over the raw events, as the service role (RLS on).
    let mut plain = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..runs.min(3) {
        let mut tx = db.tenant_tx(tenant).await?;
        let t = Instant::now();
        theirs.clear();
        for (objective, sql) in PLAIN_SQL {
            let (value, total): (Option<i64>, i64) = sqlx::query_as(sql)
                .bind(tenant.uuid())
                .bind(start)
                .bind(as_of)
                .fetch_one(&mut *tx)
                .await?;
            theirs.push((objective, value, total));
        }
        plain.push(t.elapsed());
        tx.rollback().await?;
    }
    let (ours_time, plain_time) = (median(from_rollups), median(plain));
    println!(
        "  of which the month's sums from rollups: {:.1} ms (the rest: the burn-rate and alert lookbacks, and maintenance)",
        median(sums_only).as_secs_f64() * 1e3
    );
    println!(
        "re-evaluate the month, 4 objectives: from rollups {:.1} ms (median of {runs}); plain SQL {:.0} ms (median of {}); {:.0}× faster",
        ours_time.as_secs_f64() * 1e3,
        plain_time.as_secs_f64() * 1e3,
        runs.min(3),
        plain_time.as_secs_f64() / ours_time.as_secs_f64()
    );
    // The verdicts must agree: percentile_disc(q) ≤ T exactly when at
    // least q of the events are ≤ T.
    for ((objective, tally, met), (name, value, total)) in ours.iter().zip(&theirs) {
        let sql_met = match *name {
            "latency-p99" => value.is_some_and(|v| v <= 3_200_000),
            "ttft-p95" => value.is_some_and(|v| v <= 800_000),
            "availability" => value.unwrap_or(0) * 1000 >= 999 * total,
            _ => value.unwrap_or(0) * 1000 >= 995 * total,
        };
        println!(
            "  {objective}: good {} of {} (met {met}); plain SQL: {name} {value:?} of {total} (met {sql_met})",
            tally.good, tally.total
        );
        if *met != sql_met || tally.total != *total as u64 {
            return Err(format!("{objective}: evaluator and plain SQL disagree").into());
        }
    }
    db.close().await;
    Ok(())
}

/// Errors of a benchmark binary: anything, printed.
mod anyhow_free {
    pub(crate) type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
}
