//! Benchmark: a month proven over its 30 anchored days (the daily circuit,
//! 32 days) against the same month as a vector committed at the close (the
//! threshold circuit, 64 slots), side by side in one run: constraints,
//! setup, median proving and verifying time.
//!
//! `cargo run -p slaproof-circuits --bin daily-bench -- [RUNS] [YEAR]`
//! (RUNS proofs each, default 7; `year` adds 512 days against 1,024 slots).

use std::time::{Duration, Instant};

use ark_bn254::Fr;
use slaproof_circuits::daily::DayOpening;
use slaproof_circuits::{
    Circuit, CircuitKeys, Claim, ContextHash, build, period_statement, prove, prove_period, verify,
};

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(7);
    let mut shapes = vec![(30usize, 32usize, 64usize)];
    if args.get(2).is_some_and(|a| a == "year") {
        shapes.push((365, 512, 1024));
    }
    let context = ContextHash::of(&Claim {
        tenant: "ten_bench",
        sla: "sla_bench",
        sla_version: 1,
        objective: "availability",
        field: "ratio",
        unit: "verdict",
        operator: "<=",
        threshold: 0,
        period_start: 1_793_491_200,
        period_end: 1_796_083_200,
        revision: 1,
    });
    println!(
        "| days | circuit | size | constraints | setup s | prove s (median) | verify ms (median) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (days, daily_size, slots) in shapes {
        // 1,440 requests a day, a few failing.
        let weights: Vec<(u64, u64)> = (0..days as u64).map(|i| (1_440 - i % 3, i % 3)).collect();
        let good: u64 = weights.iter().map(|w| w.0).sum();
        let total: u64 = weights.iter().map(|w| w.0 + w.1).sum();
        let quota = u32::try_from(u128::from(good) * 1_000_000 / u128::from(total))?;

        // Threshold: two slots a day, committed at the close.
        let started = Instant::now();
        let keys = CircuitKeys::setup_of(Circuit::Threshold, slots)?;
        let setup = started.elapsed();
        let pairs: Vec<(u64, u64)> = weights.iter().flat_map(|w| [(0, w.0), (1, w.1)]).collect();
        let (statement, opening) = build(slots, &pairs, 0, quota, context)?;
        let (mut proving, mut verifying) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            let proof = prove(&keys, &statement, &opening)?;
            proving.push(t.elapsed());
            let t = Instant::now();
            assert!(verify(keys.verifier(), &statement, &proof)?);
            verifying.push(t.elapsed());
        }
        println!(
            "| {days} | threshold | {slots} slots | {} | {:.2} | {:.3} | {:.2} |",
            Circuit::Threshold.constraint_count(slots)?,
            setup.as_secs_f64(),
            median(proving).as_secs_f64(),
            median(verifying).as_secs_f64() * 1e3
        );

        // Daily: the days' anchored commitments.
        let started = Instant::now();
        let keys = CircuitKeys::setup_of(Circuit::Daily, daily_size)?;
        let setup = started.elapsed();
        let openings: Vec<DayOpening> = weights
            .iter()
            .enumerate()
            .map(|(i, w)| DayOpening {
                salt: Fr::from(7 + i as u64),
                good: w.0,
                bad: w.1,
            })
            .collect();
        let statement = period_statement(daily_size, context, 0, quota, &openings)?;
        let (mut proving, mut verifying) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            let proof = prove_period(&keys, &statement, &openings)?;
            proving.push(t.elapsed());
            let t = Instant::now();
            assert!(verify(keys.verifier(), &statement, &proof)?);
            verifying.push(t.elapsed());
        }
        println!(
            "| {days} | daily | {daily_size} days | {} | {:.2} | {:.3} | {:.2} |",
            Circuit::Daily.constraint_count(daily_size)?,
            setup.as_secs_f64(),
            median(proving).as_secs_f64(),
            median(verifying).as_secs_f64() * 1e3
        );
    }
    Ok(())
}
