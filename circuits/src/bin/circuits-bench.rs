//! Benchmark: constraints per slot, setup/prove/verify times and proof size per circuit size, against a plain circuit of equal size; and the bucketed variant (public edges, private counts) of the same size, side by side.
//!
//! Run in release: `cargo run --release -p slaproof-circuits --bin circuits-bench -- [SIZES] [RUNS]`
//! where SIZES is a comma list (default `64,1024,16384`) and RUNS the number
//! of proofs per size (default 5; sizes above 4096 use at most 3).

use std::time::{Duration, Instant};

use ark_bn254::{Bn254, Fr};
use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_relations::r1cs::{
    ConstraintSynthesizer, ConstraintSystemRef, LinearCombination, SynthesisError,
};
use ark_serialize::CanonicalSerialize;
use ark_snark::SNARK;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use slaproof_circuits::{
    CircuitKeys, Claim, ContextHash, bucketed, build, constraint_count, prove, verify,
};

/// A circuit with nothing but multiplications: `xᵢ₊₁ = xᵢ·y`, with as many
/// constraints and public inputs as ours, so its proving time is what
/// ark-groth16 alone costs for that size.
#[derive(Debug, Clone)]
struct ReferenceCircuit {
    constraints: usize,
    public_inputs: usize,
    seed: Option<(Fr, Fr)>,
}

impl ConstraintSynthesizer<Fr> for ReferenceCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        for _ in 0..self.public_inputs {
            cs.new_input_variable(|| {
                self.seed
                    .map(|s| s.0)
                    .ok_or(SynthesisError::AssignmentMissing)
            })?;
        }
        let y = self.seed.map(|s| s.1);
        let y_var = cs.new_witness_variable(|| y.ok_or(SynthesisError::AssignmentMissing))?;
        let mut x = self.seed.map(|s| s.0);
        let mut x_var = cs.new_witness_variable(|| x.ok_or(SynthesisError::AssignmentMissing))?;
        for _ in 0..self.constraints {
            let next = x.zip(y).map(|(a, b)| a * b);
            let next_var =
                cs.new_witness_variable(|| next.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce_constraint(
                LinearCombination::from(x_var),
                LinearCombination::from(y_var),
                LinearCombination::from(next_var),
            )?;
            x = next;
            x_var = next_var;
        }
        Ok(())
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = args
        .get(1)
        .map(|s| s.split(',').map(str::parse).collect::<Result<_, _>>())
        .transpose()?
        .unwrap_or_else(|| vec![64, 1024, 16384]);
    let runs: usize = args
        .get(2)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(5)
        .max(1);
    let mut rng = StdRng::seed_from_u64(2026);
    println!(
        "threads: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!(
        "| slots | constraints | per slot | setup s | prove s (median) | verify ms (median) | proof bytes | reference prove s | overhead | proofs |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut bucket_rows = Vec::new();
    for slots in sizes {
        let runs = if slots > 4096 { runs.min(3) } else { runs };
        let constraints = constraint_count(slots)?;

        let started = Instant::now();
        let keys = CircuitKeys::setup(slots)?;
        let setup = started.elapsed();

        // P99-like data: values spread to 200, 99% at or under 198.
        let pairs: Vec<(u64, u64)> = (0..slots as u64).map(|i| (i % 200, 1 + i % 5)).collect();
        let context = ContextHash::of(&Claim {
            tenant: "ten_bench",
            sla: "sla_bench",
            sla_version: 1,
            objective: "p99",
            field: "latency",
            unit: "us",
            operator: "<=",
            threshold: 198,
            period_start: 1_793_491_200,
            period_end: 1_796_083_200,
            revision: 1,
        });
        let (statement, opening) = build(slots, &pairs, 198, 980_000, context)?;

        let reference = ReferenceCircuit {
            constraints,
            public_inputs: 4,
            seed: None,
        };
        let started = Instant::now();
        let (ref_pk, _ref_vk) =
            Groth16::<Bn254>::circuit_specific_setup(reference.clone(), &mut rng)?;
        let ref_setup = started.elapsed();

        // The bucketed variant over as many buckets: latency edges from
        // 25 ms growing 10% a step (capped below 2³²), 99% of the counts
        // at or under the threshold edge.
        let mut edge = 25_000f64;
        let edges: Vec<u32> = (0..slots)
            .map(|_| {
                let e = edge.min(f64::from(u32::MAX - 1)) as u32;
                edge *= 1.1;
                e
            })
            .collect();
        let scheme = bucketed::BucketScheme::new(edges)?;
        let bucket_constraints = bucketed::constraint_count(&scheme)?;
        let (bucket_pk, bucket_vk) = bucketed::setup(&scheme)?;
        let mut counts = vec![1u64; slots];
        counts[0] = 100 * slots as u64;
        let bucket_t = scheme.edges()[slots - 1].saturating_sub(1);
        let mut bucket_times = Vec::with_capacity(runs);

        // Ours and the reference alternate, so a neighbour's build slows
        // both alike and the ratio stays meaningful on a shared machine.
        let mut prove_times = Vec::with_capacity(runs);
        let mut ref_times = Vec::with_capacity(runs);
        let mut proof = None;
        for _ in 0..runs {
            let started = Instant::now();
            proof = Some(prove(&keys, &statement, &opening)?);
            prove_times.push(started.elapsed());

            let circuit = ReferenceCircuit {
                seed: Some((Fr::rand(&mut rng), Fr::rand(&mut rng))),
                ..reference.clone()
            };
            let started = Instant::now();
            let _ = Groth16::<Bn254>::prove(&ref_pk, circuit, &mut rng)?;
            ref_times.push(started.elapsed());

            let started = Instant::now();
            let (public, bucket_proof) = bucketed::prove(
                &bucket_pk,
                &scheme,
                context,
                Fr::from(7u64),
                &counts,
                bucket_t,
                990_000,
            )?;
            bucket_times.push(started.elapsed());
            if !bucketed::verify(&bucket_vk, &public, &bucket_proof)? {
                return Err("bucketed benchmark proof did not verify".into());
            }
        }
        drop(ref_pk);
        let proof = proof.ok_or("no proof")?;
        let mut verify_times = Vec::with_capacity(101);
        for _ in 0..101 {
            let started = Instant::now();
            if !verify(keys.verifier(), &statement, &proof)? {
                return Err("benchmark proof did not verify".into());
            }
            verify_times.push(started.elapsed());
        }
        let proof_bytes = proof.to_bytes()?.len();
        let pk_bytes = keys.proving_key().compressed_size();
        drop(keys);

        let prove_median = median(prove_times);
        let ref_median = median(ref_times);
        let bucket_median = median(bucket_times);
        bucket_rows.push(format!(
            "| {slots} | {constraints} | {bucket_constraints} | {:.1} | {:.3} | {:.3} | {:.2} |",
            bucket_constraints as f64 / slots as f64,
            prove_median.as_secs_f64(),
            bucket_median.as_secs_f64(),
            prove_median.as_secs_f64() / bucket_median.as_secs_f64(),
        ));
        println!(
            "| {slots} | {constraints} | {:.2} | {:.2} | {:.3} | {} | {proof_bytes} | {:.3} | {:.2} | {runs} |",
            constraints as f64 / slots as f64,
            setup.as_secs_f64(),
            prove_median.as_secs_f64(),
            ms(median(verify_times)),
            ref_median.as_secs_f64(),
            prove_median.as_secs_f64() / ref_median.as_secs_f64(),
        );
        eprintln!(
            "slots {slots}: compressed proving key {pk_bytes} bytes; reference setup {:.2} s; load average {}",
            ref_setup.as_secs_f64(),
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
    }
    println!(
        "\n| buckets | threshold circuit constraints | bucketed constraints | per bucket | threshold prove s | bucketed prove s | ratio |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in bucket_rows {
        println!("{row}");
    }
    Ok(())
}
