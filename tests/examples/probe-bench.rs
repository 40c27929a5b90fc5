//! How many probe runs one runner does per second against an instant
//! target: claim, read the definition, measure, write the event, record the
//! result. The figure bounds how many probes one replica carries (a probe
//! every 10 s is 0.1 runs/s).
//!
//!     cargo run --release -p slaproof-tests --example probe-bench [probes] [concurrency] [rounds]

use std::sync::Arc;
use std::time::{Duration, Instant};

use slaproof_http::outbound::OutboundPolicy;
use slaproof_ingest::probe::{ProbeRunner, Settings};
use slaproof_store::probes::{self, ProbeDefinition, ProbeKind};
use slaproof_store::tenants;
use slaproof_tests::TestDatabase;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let concurrency: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(32);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);

    let target = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = target.local_addr()?;
    let app = axum::Router::new().route("/ok", axum::routing::get(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(target, app).await });

    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "bench", "Bench").await?.id;
    let mut tx = db.tenant_tx(tenant).await?;
    for n in 0..count {
        probes::create(
            &mut tx,
            &ProbeDefinition {
                name: format!("p{n:05}"),
                service: "chat-completions".into(),
                customer: None,
                model: None,
                kind: ProbeKind::Http,
                method: "GET".into(),
                url: format!("http://{address}/ok"),
                headers: Default::default(),
                body: None,
                expected_status: 200,
                interval_secs: 86_400,
                timeout_ms: 5000,
                enabled: true,
            },
        )
        .await?;
    }
    tx.commit().await?;

    let runner = Arc::new(ProbeRunner::new(
        db.clone(),
        Settings {
            concurrency,
            ..Settings::default()
        },
        OutboundPolicy::allowing(["127.0.0.0/8".parse()?]),
    )?);
    let mut rates = Vec::new();
    for round in 0..rounds {
        if round > 0 {
            // Every probe due again.
            let mut tx = db.tenant_tx(tenant).await?;
            sqlx::query("UPDATE probes SET next_run_at = now() - interval '1 second'")
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        }
        let started = Instant::now();
        let ran = runner.run_due().await?;
        let took = started.elapsed();
        let rate = ran as f64 / took.as_secs_f64();
        println!(
            "round {round}: {ran} runs in {:.2} s = {rate:.0} runs/s",
            took.as_secs_f64()
        );
        rates.push(rate);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "median {:.0} runs/s over {rounds} rounds ({count} probes, concurrency {concurrency})",
        rates[rates.len() / 2]
    );
    Ok(())
}
