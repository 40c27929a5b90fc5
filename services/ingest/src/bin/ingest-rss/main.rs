//! Peak memory of the ingest process under the worst request bodies we can
//! construct, at the default settings: for each shape, a fresh `slaproof
//! serve ingest` receives as many copies of the body at once as its gate
//! admits (`ingest.max_in_flight`, 16, sent by 4 tenants so that each
//! tenant's share, a quarter, lets them all in), and the process's peak
//! resident memory (`VmHWM`) is read from `/proc/<pid>/status`.
//!
//! ```text
//! cargo build --release -p slaproof -p slaproof-ingest
//! ./target/release/ingest-rss                 # every shape
//! ./target/release/ingest-rss otlp-spans-max-attributes   # some of them
//! ```
//!
//! It creates a scratch database on `SLAPROOF_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), starts the server from
//! the release folder (or `--slaproof PATH`) with nothing but the database
//! and the address set, and drops the database at the end. A server whose
//! resident memory passes `--kill-mib` (default 3072) is killed, so a shape
//! that would take the whole machine is reported as over that instead.

mod args;
mod bodies;
mod server;

use slaproof_store::{Database, ingest_keys, tenants};

use crate::args::{Args, parse_args};
use crate::bodies::{MIB, Shape, shapes};
use crate::server::measure;
use slaproof_store::scratch::Scratch;

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

fn size(bytes: usize) -> String {
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{:.1} kB", bytes as f64 / 1000.0)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args().map_err(|e| anyhow::anyhow!(e))?;
    eprintln!("building the bodies");
    let shapes = shapes(&args.shapes);
    anyhow::ensure!(!shapes.is_empty(), "no shape by those names");
    let scratch = Scratch::create("slaproof_rss").await?;
    let result = run(&args, &scratch, &shapes).await;
    scratch.drop_database().await?;
    result
}

async fn run(args: &Args, scratch: &Scratch, shapes: &[Shape]) -> anyhow::Result<()> {
    // As many tenants as it takes for all the gate's places to be taken
    // at once: each holds a quarter of them at most.
    let db = Database::connect(&scratch.service, 2).await?;
    let mut keys = Vec::new();
    for t in 0..4 {
        let name = format!("rss-{t}");
        let tenant = tenants::create(&db, &name, &name).await?.id;
        let mut tx = db.tenant_tx(tenant).await?;
        keys.push(
            ingest_keys::create(&mut tx, "rss")
                .await?
                .reveal()
                .to_owned(),
        );
        tx.commit().await?;
    }
    db.close().await;

    let defaults = slaproof_ingest::Settings::default();
    println!("machine: {}", machine());
    println!(
        "server: `slaproof serve ingest` at the default settings (max_in_flight {}, max_body_bytes {}, max_decoded_bytes {}, max_memory_bytes {}); {} copies of each body sent at once, by 4 tenants",
        defaults.max_in_flight,
        size(defaults.max_body_bytes),
        size(defaults.max_decoded_bytes),
        size(defaults.max_memory_bytes),
        defaults.max_in_flight
    );
    println!();
    println!("| shape | body as sent / decoded | answers | time | idle | peak RSS (VmHWM) |");
    println!("|---|---|---|---|---|---|");
    let mut worst = 0;
    for shape in shapes {
        eprintln!("{}: {}", shape.name, shape.what);
        let m = measure(args, scratch, &keys, shape).await?;
        worst = worst.max(m.peak_kib);
        let answers: Vec<String> = m
            .statuses
            .iter()
            .map(|(status, n)| match status {
                0 => format!("{n}× no answer"),
                s => format!("{n}× {s}"),
            })
            .collect();
        let peak = if m.killed {
            format!("> {} MiB (killed)", args.kill_mib)
        } else {
            format!("{:.0} MiB", m.peak_kib as f64 / 1024.0)
        };
        println!(
            "| `{}`: {} | {} / {} | {} (largest {}) | {:.1} s | {:.0} MiB | {} |",
            shape.name,
            shape.what,
            size(shape.body.len()),
            size(shape.decoded_len),
            answers.join(", "),
            size(m.largest_answer),
            m.secs,
            m.idle_kib as f64 / 1024.0,
            peak
        );
    }
    println!();
    println!("worst peak: {:.0} MiB", worst as f64 / 1024.0);
    Ok(())
}
