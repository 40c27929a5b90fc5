//! The daily circuit: a period proven over the commitments anchored day by
//! day. Its cost per day, an honest period proven and verified, and a
//! period over any other data than the anchored days refused.

use ark_bn254::Fr;
use ark_relations::r1cs::{ConstraintSynthesizer, ConstraintSystem};
use slaproof_circuits::circuit::PublicValues;
use slaproof_circuits::daily::{
    DailyCircuit, DayOpening, aggregate, constraint_count, day_commitment, padding_day, statement,
    verify,
};
use slaproof_circuits::keys::{generate_circuit_keys, load_circuit_keys};
use slaproof_circuits::{Circuit, CircuitKeys, Claim, ContextHash};
use slaproof_circuits::{period_statement, prove_days, prove_period};

mod common;

/// A November of 30 days: 1,440 requests a day, 3 slow on the 11th.
fn november() -> Vec<DayOpening> {
    (0..30u64)
        .map(|i| DayOpening {
            salt: Fr::from(1_000 + i),
            good: if i == 10 { 1_437 } else { 1_440 },
            bad: if i == 10 { 3 } else { 0 },
        })
        .collect()
}

fn satisfied(circuit: DailyCircuit) -> bool {
    let cs = ConstraintSystem::<Fr>::new_ref();
    circuit.generate_constraints(cs.clone()).unwrap();
    cs.is_satisfied().unwrap()
}

#[test]
fn a_day_costs_384_constraints() {
    let c32 = constraint_count(32).unwrap();
    let c64 = constraint_count(64).unwrap();
    let c512 = constraint_count(512).unwrap();
    let marginal = (c512 - c64) as f64 / 448.0;
    eprintln!(
        "daily: 32 days {c32} constraints ({:.1}/day), 64: {c64}, 512: {c512} ({:.1}/day), marginal {marginal:.1}",
        c32 as f64 / 32.0,
        c512 as f64 / 512.0
    );
    // Per day: two 40-bit weights (80), the day's Poseidon(3) with a
    // constant tag (258), an eleventh of a chain step (504 / 11 = 45.8).
    assert!((marginal - 383.8).abs() < 1.0, "{marginal}");
    // Pinned, and accounted for: 32 days × 338; T and q (33 + 21); the
    // seed's Poseidon(2) with a constant first input (237); the chain's
    // three steps, the last with a zero word folded (504 + 504 + 501);
    // the aggregate's equality (1); the fraction (84).
    assert_eq!(c32, 12_701);
}

#[test]
fn a_period_over_its_anchored_days_is_proven_and_verified() {
    let keys = CircuitKeys::setup_of(Circuit::Daily, 32).unwrap();
    let vk = keys.verifier().verifying_key().clone();
    let context = common::context_of("p99");
    let days = november();
    // 43,197 of 43,200 good: 999,930 ppm.
    let public = statement(32, context, 50, 999_930, &days).unwrap();
    let anchored: Vec<Fr> = days.iter().map(|d| d.commitment().unwrap()).collect();
    assert_eq!(
        public.commitment,
        aggregate(32, context, &anchored).unwrap(),
        "the aggregate is recomputed from the anchored commitments alone"
    );
    let proof = prove_days(&keys, public, &days).unwrap();
    assert!(verify(&vk, &public, &proof).unwrap());

    // The same proof against an aggregate of other days: refused.
    let mut other = anchored.clone();
    other[10] = day_commitment(Fr::from(1_010u64), 1_440, 0).unwrap();
    let forged = PublicValues {
        commitment: aggregate(32, context, &other).unwrap(),
        ..public
    };
    assert!(!verify(&vk, &forged, &proof).unwrap());
    // Another quota, threshold or context: refused.
    for changed in [
        PublicValues {
            quota_ppm: Fr::from(999_931u64),
            ..public
        },
        PublicValues {
            threshold: Fr::from(51u64),
            ..public
        },
        PublicValues {
            context: common::context_of("p95").as_field(),
            ..public
        },
    ] {
        assert!(!verify(&vk, &changed, &proof).unwrap());
    }
}

#[test]
fn a_period_over_other_data_than_the_anchored_days_is_not_satisfiable() {
    let context = common::context_of("p99");
    let days = november();
    let anchored: Vec<Fr> = days.iter().map(|d| d.commitment().unwrap()).collect();
    let public = statement(32, context, 50, 999_930, &days).unwrap();
    assert!(satisfied(DailyCircuit::from_raw(32, public, days.clone())));

    // The 11th's slow requests dropped after its anchor: the commitment
    // the aggregate holds no longer opens.
    let mut altered = days.clone();
    altered[10].bad = 0;
    assert!(!satisfied(DailyCircuit::from_raw(
        32,
        public,
        altered.clone()
    )));
    // Nor does a fresh aggregate of the altered days match the anchored
    // one: the verifier recomputes A from the chain, not from the prover.
    let refreshed: Vec<Fr> = altered.iter().map(|d| d.commitment().unwrap()).collect();
    assert_ne!(
        aggregate(32, context, &refreshed).unwrap(),
        aggregate(32, context, &anchored).unwrap()
    );
    // A day inserted (the 31st, all good) or removed (the 30th): the days
    // the prover opens are not the aggregate's.
    let mut inserted = days.clone();
    inserted.push(DayOpening {
        salt: Fr::from(5u64),
        good: 100_000,
        bad: 0,
    });
    assert!(!satisfied(DailyCircuit::from_raw(32, public, inserted)));
    let mut removed = days.clone();
    removed.pop();
    assert!(!satisfied(DailyCircuit::from_raw(32, public, removed)));
    // Another salt for a day (an opening that is not the anchored one).
    let mut resalted = days;
    resalted[3].salt = Fr::from(9u64);
    assert!(!satisfied(DailyCircuit::from_raw(32, public, resalted)));
}

#[test]
fn a_false_or_empty_period_is_refused_before_proving() {
    let context = common::context_of("p99");
    let days = november();
    assert!(matches!(
        statement(32, context, 50, 999_931, &days),
        Err(slaproof_circuits::CircuitError::StatementFalse)
    ));
    assert!(matches!(
        statement(32, context, 50, 0, &[DayOpening::padding()]),
        Err(slaproof_circuits::CircuitError::ZeroTotalWeight)
    ));
    let too_many = vec![days[0]; 33];
    assert!(statement(32, context, 50, 0, &too_many).is_err());
    let heavy = DayOpening {
        salt: Fr::from(1u64),
        good: 1 << 40,
        bad: 0,
    };
    let err = statement(32, context, 50, 0, &[heavy]).unwrap_err();
    assert!(err.to_string().contains("below 2^40"), "{err}");
}

#[test]
fn daily_keys_are_stored_loaded_and_prove_through_the_common_api() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = generate_circuit_keys(dir.path(), Circuit::Daily, 32, &mut |_| {}).unwrap();
    assert_eq!(manifest.circuit, "slaproof/daily-fraction/v1");
    assert_eq!(manifest.constraints, constraint_count(32).unwrap());
    assert!(dir.path().join("daily-32.pk").exists());
    // Threshold keys of the same size are another file, refused here.
    assert!(slaproof_circuits::load_keys(dir.path(), 32).is_err());
    let keys = load_circuit_keys(dir.path(), Circuit::Daily, 32).unwrap();
    assert_eq!((keys.circuit(), keys.slots()), (Circuit::Daily, 32));
    let context = common::context_of("p99");
    let days = november();
    let statement = period_statement(32, context, 50, 999_930, &days).unwrap();
    let proof = prove_period(&keys, &statement, &days).unwrap();
    assert!(slaproof_circuits::verify(keys.verifier(), &statement, &proof).unwrap());
    // An opening other than the statement's: refused before proving.
    let mut other = days.clone();
    other[0].salt = Fr::from(2u64);
    assert!(matches!(
        prove_period(&keys, &statement, &other),
        Err(slaproof_circuits::CircuitError::OpeningMismatch)
    ));
    // Daily keys do not prove a vector, nor threshold keys a period.
    let threshold = CircuitKeys::setup(64).unwrap();
    assert!(prove_period(&threshold, &statement, &days).is_err());
}

#[test]
fn padding_and_day_contexts_are_fixed_and_distinct() {
    // Padding is the commitment of zero weights under a zero salt: a
    // public constant anyone recomputes.
    assert_eq!(
        padding_day().unwrap(),
        day_commitment(Fr::from(0u64), 0, 0).unwrap()
    );
    // A day's context never equals a period's over the same fields.
    let claim: Claim<'_> = common::claim("p99", 1_793_491_200);
    assert_ne!(ContextHash::of(&claim), ContextHash::of_day(&claim));
    // The weights are packed, not summed: (1, 0) and (0, 1) differ.
    assert_ne!(
        day_commitment(Fr::from(1u64), 1, 0).unwrap(),
        day_commitment(Fr::from(1u64), 0, 1).unwrap()
    );
}
