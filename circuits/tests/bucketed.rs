//! The bucketed variant: its cost per bucket (the goal: at most 64
//! constraints), honest histograms proven and verified, and selectors that
//! lie about which buckets are good refused.

use ark_bn254::Fr;
use ark_relations::r1cs::{ConstraintSynthesizer, ConstraintSystem};
use proptest::prelude::*;
use slaproof_circuits::bucketed::{
    BucketCircuit, BucketScheme, BucketWitness, constraint_count, prove, setup, verify,
};
use slaproof_circuits::circuit::PublicValues;

mod common;

/// A latency scheme in µs: 64 upper edges from 25 ms, growing ~10% a step.
fn scheme(n: usize) -> BucketScheme {
    let mut edge = 25_000f64;
    let edges = (0..n)
        .map(|_| {
            let e = edge as u32;
            edge *= 1.1;
            e
        })
        .collect();
    BucketScheme::new(edges).unwrap()
}

fn public_for(s: &BucketScheme, counts: &[u64], t: u32, q: u32) -> PublicValues {
    let context = common::context_of("p99");
    PublicValues {
        commitment: s.commit(context, Fr::from(7u64), counts).unwrap(),
        threshold: Fr::from(t),
        quota_ppm: Fr::from(q),
        context: context.as_field(),
    }
}

fn satisfied(circuit: BucketCircuit) -> bool {
    let cs = ConstraintSystem::<Fr>::new_ref();
    circuit.generate_constraints(cs.clone()).unwrap();
    cs.is_satisfied().unwrap()
}

#[test]
fn a_bucket_costs_at_most_64_constraints() {
    let c64 = constraint_count(&scheme(64)).unwrap();
    let c128 = constraint_count(&scheme(128)).unwrap();
    let c1024 = constraint_count(&scheme(1024)).unwrap();
    // The marginal cost of a bucket, the once-per-circuit part set apart.
    let marginal = (c1024 - c128) as f64 / 896.0;
    eprintln!(
        "bucketed: 64 buckets {c64} constraints ({:.1}/bucket), 128: {c128}, 1024: {c1024} ({:.1}/bucket), marginal {marginal:.1}",
        c64 as f64 / 64.0,
        c1024 as f64 / 1024.0
    );
    assert!(marginal <= 64.0, "{marginal}");
    assert!((c1024 as f64 / 1024.0) <= 64.0);
    // Pinned, and accounted for: 64 buckets × 43, less the first bucket's
    // monotonicity (2,751); T, q and the step's two ranges (33 + 21 + 33 +
    // 34); the seed's Poseidon(3) (258); one chain step absorbing the 11
    // packed elements (504); the commitment equality (1); the fraction (84).
    assert_eq!(c64, 3_719);
}

#[test]
fn an_honest_histogram_is_proven_and_a_changed_input_is_refused() {
    let s = scheme(64);
    let (pk, vk) = setup(&s).unwrap();
    let context = common::context_of("p99");
    // 10,000 requests: 9,950 at or under the 30th edge, 50 above.
    let mut counts = vec![0u64; 64];
    counts[3] = 6_000;
    counts[30] = 3_950;
    counts[31] = 50;
    let t = s.edges()[30];
    let (public, proof) = prove(&pk, &s, context, Fr::from(7u64), &counts, t, 995_000).unwrap();
    assert!(verify(&vk, &public, &proof).unwrap());
    // Another threshold (one below the edge), fraction or commitment: refused.
    for changed in [
        PublicValues {
            threshold: Fr::from(t - 1),
            ..public
        },
        PublicValues {
            quota_ppm: Fr::from(996_000u64),
            ..public
        },
        PublicValues {
            commitment: public.commitment + Fr::from(1u64),
            ..public
        },
    ] {
        assert!(!verify(&vk, &changed, &proof).unwrap());
    }
    // 99.6% is not met; the prover says so rather than make a bad proof.
    assert!(prove(&pk, &s, context, Fr::from(7u64), &counts, t, 996_000).is_err());
}

#[test]
fn selectors_must_be_exactly_the_buckets_at_or_under_the_threshold() {
    let s = scheme(8);
    let counts = [10, 10, 10, 10, 10, 10, 10, 10];
    let t = s.edges()[3];
    let public = public_for(&s, &counts, t, 500_000);
    let with = |selectors: [bool; 8]| {
        satisfied(BucketCircuit::from_raw(
            s.clone(),
            public,
            BucketWitness {
                salt: Fr::from(7u64),
                counts: counts.to_vec(),
                selectors: selectors.to_vec(),
            },
        ))
    };
    let honest = [true, true, true, true, false, false, false, false];
    assert!(with(honest));
    // One bad bucket claimed good, one good bucket claimed bad, a selector
    // rising again, and all good: each refused.
    assert!(!with([true, true, true, true, true, false, false, false]));
    assert!(!with([true, true, true, false, false, false, false, false]));
    assert!(!with([true, true, true, true, false, true, false, false]));
    assert!(!with([true; 8]));
    // A threshold above every edge: all good is the only honest answer.
    let top = public_for(&s, &counts, u32::MAX, 1_000_000);
    assert!(satisfied(BucketCircuit::new(
        s.clone(),
        top,
        Fr::from(7u64),
        counts.to_vec(),
        u32::MAX
    )));
    // Below every edge: none good, so no fraction but 0 is met.
    let none = public_for(&s, &counts, 0, 0);
    assert!(satisfied(BucketCircuit::new(
        s.clone(),
        none,
        Fr::from(7u64),
        counts.to_vec(),
        0
    )));
    let none_half = public_for(&s, &counts, 0, 1);
    assert!(!satisfied(BucketCircuit::new(
        s,
        none_half,
        Fr::from(7u64),
        counts.to_vec(),
        0
    )));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the edges (duplicates included), counts and threshold, the
    /// honest selectors satisfy the circuit exactly when the fraction holds.
    #[test]
    fn the_circuit_agrees_with_the_native_fraction(
        mut edges in proptest::collection::vec(0u32..1_000, 1..12),
        counts in proptest::collection::vec(0u64..1_000, 12),
        t in 0u32..1_100,
        q in 0u32..=1_000_000,
    ) {
        edges.sort_unstable();
        let s = BucketScheme::new(edges.clone()).unwrap();
        let counts = &counts[..edges.len()];
        let (good, total) = s.weights(t, counts);
        let holds = total > 0 && 1_000_000 * good >= u128::from(q) * total;
        let public = public_for(&s, counts, t, q);
        let circuit = BucketCircuit::new(s, public, Fr::from(7u64), counts.to_vec(), t);
        prop_assert_eq!(satisfied(circuit), holds);
    }
}
