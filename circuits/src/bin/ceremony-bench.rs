//! Benchmark: a multi-party setup with snarkjs and proving with its key, against a development key, side by side in one run: phase 1 at 2^POWER, then per shipped size the r1cs export, phase 2 (setup, one contribution, the beacon, `zkey verify`), the import, and median proving time with either key of the same statement.
//!
//! `cargo run --release -p slaproof-circuits --bin ceremony-bench -- [POWER] [RUNS]`
//! (default 14: the power the daily circuit at 32 days and the threshold
//! circuit at 64 slots need; RUNS proofs with each key, default 5). Needs
//! node and `npm ci --prefix circuits` (or `SLAPROOF_SNARKJS`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ark_bn254::Fr;
use slaproof_circuits::daily::DayOpening;
use slaproof_circuits::{
    Circuit, CircuitKeys, Claim, ContextHash, build, period_statement, prove, prove_period, r1cs,
    verify,
};

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn snarkjs() -> PathBuf {
    std::env::var_os("SLAPROOF_SNARKJS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/snarkjs/build/cli.cjs"),
        PathBuf::from,
    )
}

/// Runs one snarkjs step in `dir`; how long it took.
fn step(dir: &Path, args: &[&str]) -> Result<Duration, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let out = Command::new("node")
        .arg(snarkjs())
        .args(args)
        .current_dir(dir)
        .output()?;
    if !out.status.success() {
        return Err(format!("snarkjs {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(started.elapsed())
}

fn mb(path: &Path) -> Result<f64, std::io::Error> {
    Ok(std::fs::metadata(path)?.len() as f64 / 1e6)
}

fn secs(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let power: u32 = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(14);
    let runs: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let dir = std::env::temp_dir().join(format!("ceremony-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run(&dir, power, runs);
    std::fs::remove_dir_all(&dir)?;
    result
}

fn run(d: &Path, power: u32, runs: usize) -> Result<(), Box<dyn std::error::Error>> {
    let p = power.to_string();
    let new = step(d, &["powersoftau", "new", "bn128", &p, "p0.ptau"])?;
    let contribute = step(
        d,
        &[
            "powersoftau",
            "contribute",
            "p0.ptau",
            "p1.ptau",
            "--name=bench",
            "-e=bench",
        ],
    )?;
    let prepare = step(
        d,
        &["powersoftau", "prepare", "phase2", "p1.ptau", "final.ptau"],
    )?;
    println!(
        "phase 1 at 2^{power}: new {} s, one contribution {} s, prepare phase 2 {} s; final .ptau {:.1} MB",
        secs(new),
        secs(contribute),
        secs(prepare),
        mb(&d.join("final.ptau"))?
    );

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
    // A month: 1,440 requests a day, a few failing.
    let days: Vec<DayOpening> = (0..30u64)
        .map(|i| DayOpening {
            salt: Fr::from(100 + i),
            good: 1_440 - i % 3,
            bad: i % 3,
        })
        .collect();
    let good: u64 = days.iter().map(|d| d.good).sum();
    let total: u64 = days.iter().map(|d| d.good + d.bad).sum();
    let quota = u32::try_from(u128::from(good) * 1_000_000 / u128::from(total))?;

    println!();
    println!(
        "| circuit | size | constraints | .r1cs MB | setup s | contribution s | beacon s | zkey verify s | .zkey MB | import s | dev setup s | prove, dev key s | prove, ceremony key s | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (circuit, size) in [(Circuit::Daily, 32), (Circuit::Threshold, 64)] {
        let exported = r1cs::export(circuit, size)?;
        let need = (exported.constraints + exported.public + 1).next_power_of_two();
        if need > 1 << power {
            println!(
                "| {} | {size} | {} | | needs 2^{} powers: skipped | | | | | | | | | |",
                circuit.name(),
                exported.constraints,
                need.trailing_zeros()
            );
            continue;
        }
        let name = exported.file_name();
        std::fs::write(d.join(&name), &exported.bytes)?;
        let zkey = |i: usize| format!("{}-{size}_{i}.zkey", circuit.name());
        let setup = step(d, &["groth16", "setup", &name, "final.ptau", &zkey(0)])?;
        let contribution = step(
            d,
            &[
                "zkey",
                "contribute",
                &zkey(0),
                &zkey(1),
                "--name=bench",
                "-e=bench",
            ],
        )?;
        let beacon = step(
            d,
            &[
                "zkey",
                "beacon",
                &zkey(1),
                &zkey(2),
                "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
                "10",
            ],
        )?;
        let zkey_verify = step(d, &["zkey", "verify", &name, "final.ptau", &zkey(2)])?;
        let bytes = std::fs::read(d.join(zkey(2)))?;
        let started = Instant::now();
        let ceremony = CircuitKeys::from_zkey(circuit, size, &bytes)?;
        let import = started.elapsed();
        let started = Instant::now();
        let dev = CircuitKeys::setup_of(circuit, size)?;
        let dev_setup = started.elapsed();

        // The same statement proven with either key, alternately.
        let (mut with_dev, mut with_ceremony) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            for (keys, times) in [(&dev, &mut with_dev), (&ceremony, &mut with_ceremony)] {
                let started = Instant::now();
                let (statement, proof) = match circuit {
                    Circuit::Daily => {
                        let statement = period_statement(size, context, 0, quota, &days)?;
                        let proof = prove_period(keys, &statement, &days)?;
                        (statement, proof)
                    }
                    Circuit::Threshold => {
                        let pairs: Vec<(u64, u64)> = days
                            .iter()
                            .flat_map(|w| [(0, w.good), (1, w.bad)])
                            .collect();
                        let (statement, opening) = build(size, &pairs, 0, quota, context)?;
                        let proof = prove(keys, &statement, &opening)?;
                        (statement, proof)
                    }
                };
                times.push(started.elapsed());
                if !verify(keys.verifier(), &statement, &proof)? {
                    return Err("a proof did not verify".into());
                }
            }
        }
        let (a, b) = (median(with_dev), median(with_ceremony));
        println!(
            "| {} | {size} | {} | {:.1} | {} | {} | {} | {} | {:.1} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2}× |",
            circuit.name(),
            exported.constraints,
            exported.bytes.len() as f64 / 1e6,
            secs(setup),
            secs(contribution),
            secs(beacon),
            secs(zkey_verify),
            mb(&d.join(zkey(2)))?,
            import.as_secs_f64(),
            dev_setup.as_secs_f64(),
            a.as_secs_f64(),
            b.as_secs_f64(),
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
    Ok(())
}
