//! Benchmark: a month proven and anchored — the close that records each
//! result's day-by-day vector, then the attestation worker proving each
//! (64-slot Groth16) and anchoring it hash-only on a local anvil.
//!
//! `SLAS` SLAs (default 1) of one tenant, each with four provable
//! objectives (availability, P99 latency < 3.2 s, P95 latency < 1 s, and
//! hour slices at 95%); 3,000 requests in November. The binary closes the
//! month (timed: the evaluator's close, vectors included), makes the
//! 64-slot keys (timed), starts anvil and deploys EAS and slaproof's
//! contracts, then runs `CONCURRENCY` workers (default 1, each proof on the
//! blocking pool) over the `4 × SLAS` attest jobs twice: (a) with no chain,
//! so each job proves; (b) the same attestations asked for again with the
//! chain, so each anchors. It reports both times per attestation, and the
//! attestations per hour proven and anchored.
//!
//! ```text
//! cargo build --release -p slaproof-tests --example attest-bench
//! SLAPROOF_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   ./target/release/examples/attest-bench [SLAS] [CONCURRENCY]
//! ```
//!
//! Needs anvil (`npm ci --prefix contracts`) and a Postgres where
//! `SLAPROOF_TEST_DATABASE_URL` may create a database; it is dropped at the
//! end.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use chrono::Duration;
use slaproof_attestation::worker::{Anchoring, Prover, Settings, Worker};
use slaproof_chain::Chain;
use slaproof_chain::anvil::{self, Anvil};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::attestations;
use slaproof_tests::scenario::{Request, Scenario, at};

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-{I}
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  - name: p99-latency
    target: 99%
    threshold: {field: latency, op: lt, value: 3.2s}
  - name: p95-latency
    target: 95%
    threshold: {field: latency, op: lt, value: 1s}
  - name: good-hours
    target: 99%
    timeSlices:
      sliceLength: 1h
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {good: status < 500}
"#;

/// Runs `concurrency` copies of the worker until no job is due; answers
/// the jobs run.
async fn drain(worker: &Worker, concurrency: usize) -> anyhow::Result<usize> {
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..concurrency {
        let mut w = worker.clone();
        w.name = format!("attest-bench-{n}");
        tasks.spawn(async move { w.work_due().await });
    }
    let mut ran = 0;
    while let Some(done) = tasks.join_next().await {
        ran += done??;
    }
    Ok(ran)
}

/// Every attestation of the bench's SLAs.
async fn all_rows(s: &Scenario, slas: usize) -> anyhow::Result<Vec<attestations::Attestation>> {
    let mut tx = s.db.tenant_tx(s.tenant).await?;
    let mut rows = Vec::new();
    for i in 0..slas {
        let sla = slaproof_store::slas::find(&mut tx, &format!("chat-{i}"), None)
            .await?
            .id;
        rows.extend(attestations::list(&mut tx, sla, None).await?);
    }
    tx.commit().await?;
    Ok(rows)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let slas: usize = args.next().map_or(Ok(1), |a| a.parse())?;
    let concurrency: usize = args.next().map_or(Ok(1), |a| a.parse())?;
    let root = slaproof_tests::chain::contracts_dir()
        .parent()
        .context("the workspace")?
        .to_path_buf();
    let binary = anvil::binary(&root).context("no anvil: npm ci --prefix contracts")?;

    let s = Scenario::new(&SLA.replace("{I}", "0"), "2026-11-01", "2026-12-02").await;
    {
        let mut tx = s.db.tenant_tx(s.tenant).await?;
        for i in 1..slas {
            let doc = SlaDefinition::from_document(&SLA.replace("{I}", &i.to_string()))?;
            slaproof_store::slas::apply(&mut tx, &doc).await?;
        }
        tx.commit().await?;
    }
    s.run("2026-11-01T00:00:00Z").await;
    let requests: Vec<Request> = (0..3000)
        .map(|i| {
            let occurred_at = at("2026-11-10T00:00:00Z") + Duration::minutes(i);
            Request {
                occurred_at,
                received_at: occurred_at,
                status: if (1500..1512).contains(&i) { 500 } else { 200 },
            }
        })
        .collect();
    s.insert(&requests).await;
    s.run("2026-11-30T00:00:00Z").await;
    let started = Instant::now();
    s.run("2026-12-01T01:00:00Z").await;
    let close = started.elapsed();

    let started = Instant::now();
    let keys = slaproof_circuits::CircuitKeys::setup(64)?;
    let setup = started.elapsed();
    let node = Anvil::start(&binary, 0, None)?;
    let chain = Chain::connect(&slaproof_chain::Settings::local(
        node.url().clone(),
        anvil::dev_key(),
    ))
    .await?;
    let deployment = slaproof_chain::deploy(&chain, &Default::default()).await?;
    let anchoring = Anchoring {
        chain: Arc::new(chain),
        deployment,
    };
    let mut worker = Worker {
        db: s.db.clone(),
        settings: Settings {
            concurrency,
            ..Settings::default()
        },
        prover: Prover::new(vec![keys], concurrency),
        anchoring: None,
        name: "attest-bench".into(),
    };
    // (a) prove only: every pending attestation proven, nothing sent.
    let started = Instant::now();
    let ran = drain(&worker, concurrency).await?;
    let proving = started.elapsed();
    anyhow::ensure!(ran == 4 * slas, "{ran} jobs proved, not {}", 4 * slas);
    // (b) anchor: the same attestations asked for again, now with a chain.
    let rows = all_rows(&s, slas).await?;
    let mut tx = s.db.tenant_tx(s.tenant).await?;
    for row in &rows {
        attestations::enqueue(&mut tx, row.id).await?;
    }
    tx.commit().await?;
    worker.anchoring = Some(anchoring);
    let started = Instant::now();
    drain(&worker, concurrency).await?;
    let anchoring_took = started.elapsed();
    let rows = all_rows(&s, slas).await?;
    let anchored = rows.iter().filter(|r| r.status == "anchored").count();
    anyhow::ensure!(
        anchored == 4 * slas,
        "{anchored} of {} anchored: {:?}",
        4 * slas,
        rows.iter()
            .map(|r| (&r.objective, &r.status, &r.reason))
            .collect::<Vec<_>>()
    );
    node.stop();

    let n = anchored as f64;
    let work = proving + anchoring_took;
    let per_hour = n / work.as_secs_f64() * 3600.0;
    println!("SLAs {slas}, objectives 4, attestations {anchored}, concurrency {concurrency}");
    println!(
        "close (evaluator, vectors included): {:.3} s",
        close.as_secs_f64()
    );
    println!("64-slot setup: {:.3} s", setup.as_secs_f64());
    println!(
        "prove and anchor all: {:.3} s = {:.0} attestations/hour",
        work.as_secs_f64(),
        per_hour
    );
    println!(
        "1,000 SLAs x 4 objectives at this rate: {:.1} min",
        4000.0 / per_hour * 60.0
    );
    println!(
        "per attestation: prove {:.0} ms, anchor {:.0} ms (mean of {anchored}; {} proofs at once)",
        proving.as_secs_f64() * 1000.0 / n,
        anchoring_took.as_secs_f64() * 1000.0 / n,
        concurrency
    );
    Ok(())
}
