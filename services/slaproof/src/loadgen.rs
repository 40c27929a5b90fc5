//! `slaproof loadgen`: the traffic generator on the command line. The
//! traffic model lives in `slaproof_ingest::loadgen`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use slaproof_ingest::loadgen::{Customers, LoadPlan, LoadReport};

use crate::config::Config;

/// Send realistic LLM telemetry (diurnal load, long-tailed latencies,
/// streaming and not, token counts, errors, an optional incident) through
/// the public ingest API.
#[derive(Debug, clap::Args)]
pub struct LoadgenArgs {
    /// The ingest base URL. Default: http://<server.listen>.
    #[arg(long)]
    pub url: Option<String>,
    /// The tenant's ingest key (spk_…).
    #[arg(long, env = "SLAPROOF_INGEST_KEY", hide_env_values = true)]
    pub key: String,
    /// Events per second at the day's mean. Omitted: as fast as the server
    /// acknowledges.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Seconds to run. Default 60, or until --events when that is given.
    #[arg(long)]
    pub duration: Option<u64>,
    /// Events to send in all.
    #[arg(long)]
    pub events: Option<u64>,
    /// Events per request.
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4)]
    pub connections: usize,
    /// Start an incident this many seconds into the run: a quarter of the
    /// requests on the 70B model fail (503), their first tokens are 5× and
    /// decoding 2× slower; customers on other models are spared.
    #[arg(long, value_name = "SECS")]
    pub incident_at: Option<u64>,
    /// How long the incident lasts. A 99.9% availability objective pages
    /// at 14.4× burn over the last hour (the SRE workbook's 2% of a month's
    /// budget), which after an hour of normal traffic takes about 3½
    /// minutes of the incident: ten minutes page clearly, the old 30
    /// seconds did not.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub incident_secs: u64,
    /// Keep the rate flat instead of following the time of day.
    #[arg(long)]
    pub no_diurnal: bool,
    /// Whose requests to send: `demo` (acme-corp, globex, initech and a
    /// tail of unregistered `trial-N`), `zipf:N` (N customers `cust-00001`…
    /// with Zipf shares, a few large and a long tail) or `none`.
    #[arg(long, default_value = "demo", value_parser = parse_customers)]
    pub customers: CustomersArg,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

impl LoadgenArgs {
    /// The plan these arguments describe.
    pub fn plan(&self, config: &Config) -> anyhow::Result<LoadPlan> {
        if self.batch == 0 || self.connections == 0 {
            anyhow::bail!("--batch and --connections must be at least 1");
        }
        if self.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            anyhow::bail!("--rate must be a positive number of events per second");
        }
        let duration = match (self.duration, self.events) {
            (Some(secs), _) => Some(Duration::from_secs(secs)),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs(60)),
        };
        Ok(LoadPlan {
            url: self
                .url
                .clone()
                .unwrap_or_else(|| format!("http://{}", config.server.listen)),
            key: self.key.clone(),
            rate: self.rate,
            duration,
            events: self.events,
            batch: self.batch,
            connections: self.connections,
            incident: self.incident_at.map(|at| {
                (
                    Duration::from_secs(at),
                    Duration::from_secs(self.incident_secs),
                )
            }),
            diurnal: !self.no_diurnal,
            customers: Arc::new(self.customers.customers()),
        })
    }
}

/// `--customers`, as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CustomersArg {
    Demo,
    Zipf(u32),
    None,
}

impl CustomersArg {
    fn customers(self) -> Customers {
        match self {
            Self::Demo => Customers::demo(),
            Self::Zipf(n) => Customers::zipf(n, 1.0),
            Self::None => Customers::none(),
        }
    }
}

fn parse_customers(text: &str) -> Result<CustomersArg, String> {
    match text {
        "demo" => Ok(CustomersArg::Demo),
        "none" => Ok(CustomersArg::None),
        _ => match text.strip_prefix("zipf:").map(str::parse::<u32>) {
            Some(Ok(n)) if (1..=1_000_000).contains(&n) => Ok(CustomersArg::Zipf(n)),
            _ => Err(format!(
                "must be `demo`, `none` or `zipf:N` with N from 1 to 1000000, got {text:?}"
            )),
        },
    }
}

/// Runs the generator and prints what it did.
pub(crate) async fn run(config: &Config, args: LoadgenArgs) -> anyhow::Result<()> {
    let plan = args.plan(config)?;
    eprintln!(
        "sending to {} ({}, batches of {}, {} connections)",
        plan.url,
        plan.rate
            .map(|r| format!("{r} events/s"))
            .unwrap_or_else(|| "as fast as acknowledged".to_owned()),
        plan.batch,
        plan.connections
    );
    let report = slaproof_ingest::loadgen::run(plan)
        .await
        .context("running the traffic generator")?;
    print_report(&report, args.json)
}

fn print_report(report: &LoadReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        println!(
            "{} events acknowledged in {:.1} s: {:.0} events/s; ack latency p50 {:.1} ms, p99 {:.1} ms; \
             {} throttled (429/503, retried), {} failed, {} rejected",
            report.acknowledged,
            report.elapsed_secs,
            report.events_per_sec,
            report.p50_ms,
            report.p99_ms,
            report.throttled,
            report.failed,
            report.rejected
        );
    }
    Ok(())
}

/// `slaproof up --loadgen RATE`: demo traffic for the demo tenant until
/// shutdown, so a newcomer sees live numbers.
pub(crate) fn spawn_demo(
    address: std::net::SocketAddr,
    key: String,
    rate: f64,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let plan = LoadPlan {
        url: format!("http://{address}"),
        key,
        rate: Some(rate),
        duration: None,
        events: None,
        batch: 50,
        connections: 1,
        incident: Some((crate::demo::INCIDENT_AT, crate::demo::INCIDENT_LENGTH)),
        diurnal: true,
        customers: Arc::new(Customers::demo()),
    };
    tokio::spawn(async move {
        tokio::select! {
            result = slaproof_ingest::loadgen::run(plan) => {
                if let Err(err) = result {
                    tracing::warn!(error = %err, "demo traffic stopped");
                }
            }
            () = shutdown.cancelled() => {}
        }
    });
}
