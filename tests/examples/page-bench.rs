//! Benchmark: the embedded dashboard's first render over a month of
//! one-minute data — November 2026 with a request every minute (43,200,
//! 1% failing in one incident hour), evaluated, served, and loaded in
//! Debian's chromium: the month in hourly points (`?step=1h`, the rollups
//! summed in SQL), and one day of it in minutes.
//!
//! ```text
//! cargo run -p slaproof-tests --example page-bench [RUNS]
//! ```
//!
//! Needs the built pages and chromium (`scripts/test` installs both) and a
//! Postgres where `SLAPROOF_TEST_DATABASE_URL` may create a database; it is
//! dropped at the end. Prints the median first render of each view.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use chrono::Duration;
use slaproof_tests::fixtures::{call, token, trust_test_key};
use slaproof_tests::scenario::{Request, Scenario, at};

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  - name: latency
    target: 99%
    threshold: {field: latency, op: lt, value: 3.2s}
  - name: good-hours
    target: 99%
    timeSlices:
      sliceLength: 1h
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {good: status < 500}
"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(7);
    let frontend = Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend");
    anyhow::ensure!(
        frontend.join("dist/index.html").is_file(),
        "build the pages first: npm ci --prefix frontend && npm run build --prefix frontend"
    );
    let s = Scenario::new(SLA, "2026-10-31", "2026-12-02").await;
    s.run("2026-11-01T00:00:00Z").await;
    let month = at("2026-11-01T00:00:00Z");
    let requests: Vec<Request> = (0..30 * 1440)
        .map(|i| {
            let occurred_at = month + Duration::minutes(i);
            // An incident on the 15th from 10:00 to 11:00: every request fails.
            let bad = (14 * 1440 + 600..14 * 1440 + 660).contains(&i);
            Request {
                occurred_at,
                received_at: occurred_at,
                status: if bad { 500 } else { 200 },
            }
        })
        .collect();
    let started = Instant::now();
    s.insert(&requests).await;
    s.run("2026-11-30T23:59:00Z").await;
    eprintln!(
        "stored and evaluated {} requests in {:.1} s",
        requests.len(),
        started.elapsed().as_secs_f64()
    );
    let customer = {
        let mut tx = s.db.tenant_tx(s.tenant).await?;
        let id = slaproof_store::customers::find_by_ref(&mut tx, "acme-corp")
            .await?
            .expect("the scenario's customer")
            .id;
        tx.commit().await?;
        id
    };
    let (app, tenant) = s.serve(trust_test_key).await;
    let (status, minted) = call(
        &reqwest::Client::new(),
        app.address,
        &token(tenant, &["provider_admin"], None),
        "POST",
        "/v1/embed-tokens",
        Some(serde_json::json!({
            "customer": customer.to_string(),
            "dashboard": "chat-sla",
            "scopes": ["sla:read", "sla:read:uptime", "sla:read:latency", "sla:read:history"],
            "ttl_secs": 3600,
        })),
    )
    .await;
    anyhow::ensure!(status.is_success(), "minting the token: {minted}");
    let token = minted["token"].as_str().unwrap_or_default();
    let base = format!("http://{}/embed/?token={token}", app.address);
    let urls = [
        (
            "November (43,200 minutes) in hourly points",
            format!("{base}&from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&step=1h"),
        ),
        (
            "15 November in minutes (1,440 points)",
            format!("{base}&from=2026-11-15T00:00:00Z&to=2026-11-16T00:00:00Z"),
        ),
    ];
    // The reads alone, as the page makes them, timed from here.
    let http = reqwest::Client::new();
    for (label, path) in [
        (
            "month read, step 1h",
            "/v1/slas/chat-sla/dashboard?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&step=1h",
        ),
        (
            "month read, step 1d",
            "/v1/slas/chat-sla/dashboard?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&step=1d",
        ),
        (
            "day read, step 1m",
            "/v1/slas/chat-sla/dashboard?from=2026-11-15T00:00:00Z&to=2026-11-16T00:00:00Z",
        ),
    ] {
        let mut times = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let answer = http
                .get(format!("http://{}{path}", app.address))
                .bearer_auth(token)
                .send()
                .await?;
            anyhow::ensure!(answer.status().is_success(), "{path}: {}", answer.status());
            answer.bytes().await?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!("{label}: median {:.0} ms", times[times.len() / 2]);
    }
    let listed: Vec<String> = urls.iter().map(|(l, u)| format!("{l}|{u}")).collect();
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .ok_or_else(|| anyhow::anyhow!("chromium is missing (apt-get install chromium)"))?;
    let out = Command::new("node")
        .arg(frontend.join("tests/render.bench.mjs"))
        .current_dir(&frontend)
        .env("URLS", listed.join("\n"))
        .env("RUNS", runs.to_string())
        .env("CHROMIUM", chromium)
        .output()?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    anyhow::ensure!(out.status.success(), "the browser run failed");
    Ok(())
}
