//! Benchmark: the transparency log. (a) In memory: `LEAVES` leaves
//! (default 10,000,000) encoded, hashed and appended to a log, as a day's
//! batch is; then inclusion and consistency proofs (size and time). (b)
//! Through Postgres: `EVENTS` events of one day (default 1,000,000) built
//! into the tenant's log by the application layer (one transaction, page
//! by page), the storage it took per event, and an inclusion proof read
//! through the application layer (median of 200).
//!
//! ```text
//! cargo build --release -p slaproof-tests --example log-bench
//! SLAPROOF_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   ./target/release/examples/log-bench [LEAVES] [EVENTS]
//! ```

use std::time::Instant;

use chrono::Duration;
use slaproof_app::transparency::TransparencySettings;
use slaproof_app::transparency::build::leaf_of;
use slaproof_domain::ids::TenantId;
use slaproof_domain::transparency::tree::{self, Hashes};
use slaproof_store::transparency::LoggedEvent;
use slaproof_tests::scenario::{Request, Scenario, at};
use sqlx::Connection;

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
"#;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn in_memory(leaves: u64) {
    let tenant = TenantId::new();
    let secret = [7u8; 32];
    let base = at("2026-11-10T00:00:00Z");
    let started = Instant::now();
    let mut hashes = Vec::with_capacity(leaves as usize);
    // The first million leaves are kept for an auditor's recount.
    let kept = leaves.min(RECOUNTED);
    let mut recounted = Vec::with_capacity(kept as usize);
    for i in 0..leaves {
        let event = LoggedEvent {
            id: uuid::Uuid::from_u128(u128::from(i) + 1),
            occurred_at: base + Duration::microseconds(i as i64 * 8_640),
            received_at: base + Duration::microseconds(i as i64 * 8_640 + 500_000),
            source: "provider".into(),
            service: "chat-completions".into(),
            customer: None,
            model: Some("llama-3.1-70b".into()),
            request_id: Some(format!("req-{i:012}")),
            status: Some(200),
            error_class: None,
            latency_us: Some(812_345),
            ttft_us: Some(150_000),
            tpot_us: Some(21_000),
            input_tokens: Some(512),
            output_tokens: Some(256),
            streaming: Some(true),
        };
        let leaf = leaf_of(&secret, tenant, &event, false);
        hashes.push(leaf.hash());
        if i < kept {
            recounted.push(leaf);
        }
    }
    let leaf_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let stored = tree::append(0, hashes.iter().copied(), &Hashes::new()).unwrap();
    let append_secs = started.elapsed().as_secs_f64();
    let all = Hashes::from_all(&stored);
    let started = Instant::now();
    let root = tree::root(leaves, &all).unwrap();
    let root_secs = started.elapsed().as_secs_f64();
    let mut times = Vec::new();
    let mut sizes = Vec::new();
    for k in 0..1000u64 {
        let index = (k * 9_973_117) % leaves;
        let started = Instant::now();
        let proof = tree::prove_inclusion(leaves, index, &all).unwrap();
        tree::verify_inclusion(&proof, leaves, root, index, hashes[index as usize]).unwrap();
        times.push(started.elapsed().as_secs_f64() * 1e6);
        sizes.push(proof.len());
    }
    let old = leaves / 2 + 1;
    let consistency = tree::prove_consistency(old, leaves, &all).unwrap();
    println!("in memory, {leaves} leaves:");
    println!(
        "  leaves encoded and hashed: {leaf_secs:.2} s ({:.0} leaves/s)",
        leaves as f64 / leaf_secs
    );
    println!(
        "  appended to the log (stored hashes {}): {append_secs:.2} s",
        stored.len()
    );
    println!("  root: {:.3} ms", root_secs * 1e3);
    println!(
        "  inclusion proof: {} hashes ({} bytes) at most, median {:.1} us to prove and verify",
        sizes.iter().max().unwrap(),
        sizes.iter().max().unwrap() * 32,
        median(times)
    );
    println!(
        "  consistency proof {old} -> {leaves}: {} hashes",
        consistency.len()
    );
    recount(&recounted);
}

/// Leaves kept for the recount: a million is enough to time it per event.
const RECOUNTED: u64 = 1_000_000;

/// An auditor's recount of a day's availability from its leaves
/// (`slaproof verify --openings --log-day`), per event.
fn recount(leaves: &[slaproof_domain::transparency::Leaf]) {
    use slaproof_domain::sla::SlaDefinition;
    use slaproof_domain::transparency::recount::{DayRules, recount_day};
    use slaproof_domain::window::Period;
    let definition =
        SlaDefinition::from_document(&SLA.replace("service: chat", "service: chat-completions"))
            .unwrap();
    let rules = DayRules {
        definition: &definition,
        maintenance: &[],
        default_grace: Duration::hours(1),
        counted_to: at("2026-11-12T00:00:00Z"),
    };
    let day = Period {
        start: at("2026-11-10T00:00:00Z"),
        end: at("2026-11-11T00:00:00Z"),
    };
    let objective = definition.objective("availability").unwrap();
    let mut times = Vec::new();
    let mut tally = None;
    for _ in 0..5 {
        let started = Instant::now();
        tally = Some(recount_day(&rules, objective, day, leaves).unwrap());
        times.push(started.elapsed().as_secs_f64());
    }
    let secs = median(times);
    println!(
        "  recount of a day's availability from {} leaves: {:.3} s median of 5 ({:.0} leaves/s; {:?})",
        leaves.len(),
        secs,
        leaves.len() as f64 / secs,
        tally.unwrap()
    );
}

async fn through_postgres(events: u64) {
    let scenario = Scenario::new(SLA, "2026-11-09", "2026-11-12").await;
    let base = at("2026-11-10T00:00:00Z");
    let step = 86_400_000_000 / events as i64;
    let mut started = Instant::now();
    for chunk in (0..events).collect::<Vec<_>>().chunks(200_000) {
        let requests: Vec<Request> = chunk
            .iter()
            .map(|&i| Request::at(base + Duration::microseconds(i as i64 * step), i % 100 != 0))
            .collect();
        scenario.insert(&requests).await;
    }
    println!("\nthrough Postgres, {events} events of 2026-11-10:");
    println!("  stored in {:.1} s", started.elapsed().as_secs_f64());
    // Request ids for the proofs: the scenario's events have none, so a
    // few are given ids before the day is built, as the provider would
    // have sent them (the log keeps each leaf's id in its index).
    let mut owner = sqlx::PgConnection::connect_with(&slaproof_tests::admin_options().database(&{
        let mut tx = scenario.db.tenant_tx(scenario.tenant).await.unwrap();
        let name: String = sqlx::query_scalar("SELECT current_database()::text")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        name
    }))
    .await
    .unwrap();
    sqlx::query(
        "UPDATE events SET request_id = 'bench-' || r.n FROM ( \
             SELECT eid, eat, row_number() OVER () AS n FROM ( \
                 SELECT id AS eid, occurred_at AS eat FROM events ORDER BY random() LIMIT 200) x) r \
         WHERE events.id = r.eid AND events.occurred_at = r.eat",
    )
    .execute(&mut owner)
    .await
    .unwrap();
    let (app, admin) = scenario.app().await;
    let settings = TransparencySettings::default();
    started = Instant::now();
    let built = app
        .build_transparency_logs(&settings, at("2026-11-11T02:00:00Z"))
        .await
        .unwrap();
    let build_secs = started.elapsed().as_secs_f64();
    assert_eq!(built.len(), 1);
    assert_eq!(built[0].leaves, events);
    println!(
        "  day built: {build_secs:.1} s ({:.0} events/s)",
        events as f64 / build_secs
    );
    let mut tx = scenario.db.tenant_tx(scenario.tenant).await.unwrap();
    let (entries, hashes, heads): (i64, i64, i64) = sqlx::query_as(
        "SELECT pg_total_relation_size('transparency_entries'), \
                pg_total_relation_size('transparency_hashes'), \
                pg_total_relation_size('transparency_heads')",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    println!(
        "  storage: entries {:.1} B/event, hashes {:.1} B/event, heads {} B in all",
        entries as f64 / events as f64,
        hashes as f64 / events as f64,
        heads
    );
    let mut times = Vec::new();
    for i in 1..=200 {
        let started = Instant::now();
        let proof = app
            .request_proof(&admin, &format!("bench-{i}"), None)
            .await
            .unwrap();
        times.push(started.elapsed().as_secs_f64() * 1e3);
        assert!(!proof.proof.is_empty());
    }
    println!(
        "  inclusion proof through the application layer: median {:.2} ms",
        median(times)
    );
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let leaves: u64 = args.next().map_or(10_000_000, |a| a.parse().unwrap());
    let events: u64 = args.next().map_or(1_000_000, |a| a.parse().unwrap());
    in_memory(leaves);
    through_postgres(events).await;
}
