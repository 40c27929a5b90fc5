//! The Poseidon gadget against circomlib's published vectors and against the native hash.

use ark_bn254::Fr;
use ark_ff::UniformRand;
use ark_relations::r1cs::{ConstraintSystem, ConstraintSystemRef};
use ark_std::rand::{SeedableRng, rngs::StdRng};
use slaproof_circuits::gadgets::linear::LinearVar;
use slaproof_circuits::gadgets::poseidon::constraints::{PoseidonGadget, PoseidonVar};
use slaproof_circuits::gadgets::poseidon::{self, CHAIN_RATE};

fn fr(decimal: &str) -> Fr {
    decimal.parse().unwrap()
}

fn fr_hex(hex_str: &str) -> Fr {
    let bytes = hex::decode(hex_str).unwrap();
    ark_ff::PrimeField::from_be_bytes_mod_order(&bytes)
}

fn in_circuit(inputs: &[Fr]) -> (Fr, ConstraintSystemRef<Fr>) {
    let cs = ConstraintSystem::<Fr>::new_ref();
    let vars: Vec<_> = inputs
        .iter()
        .map(|x| LinearVar::new_witness(&cs, Some(*x)).unwrap())
        .collect();
    let out = PoseidonVar::hash(&cs, &vars).unwrap();
    (out.value().unwrap(), cs)
}

/// circomlibjs `test/poseidon.js` (and circomlib's circuit tests).
fn circomlib_vectors() -> Vec<(Vec<Fr>, Fr)> {
    vec![
        (
            vec![Fr::from(1u64)],
            fr("18586133768512220936620570745912940619677854269274689475585506675881198879027"),
        ),
        (
            vec![Fr::from(1u64), Fr::from(2u64)],
            fr_hex("115cc0f5e7d690413df64c6b9662e9cf2a3617f2743245519e19607a4417189a"),
        ),
        (
            (1..=4u64).map(Fr::from).collect(),
            fr_hex("299c867db6c1fdd79dcefa40e4510b9837e60ebb1ce0663dbaa525df65250465"),
        ),
    ]
}

#[test]
fn native_hash_matches_circomlib_vectors() {
    for (inputs, expected) in circomlib_vectors() {
        assert_eq!(
            poseidon::hash(&inputs).unwrap(),
            expected,
            "inputs {inputs:?}"
        );
    }
}

#[test]
fn gadget_matches_circomlib_vectors() {
    for (inputs, expected) in circomlib_vectors() {
        let (out, cs) = in_circuit(&inputs);
        assert_eq!(out, expected);
        assert!(cs.is_satisfied().unwrap());
    }
}

#[test]
fn gadget_matches_native_for_every_width() {
    let mut rng = StdRng::seed_from_u64(7);
    for n in 1..=12 {
        let inputs: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        let (out, cs) = in_circuit(&inputs);
        assert_eq!(out, poseidon::hash(&inputs).unwrap(), "width {}", n + 1);
        assert!(cs.is_satisfied().unwrap());
    }
}

#[test]
fn twelve_input_hash_costs_504_constraints() {
    // 3·(8·13 + 65) S-box constraints, less the capacity word's first
    // S-box, which is a constant and folded.
    let inputs: Vec<Fr> = (0..12u64).map(Fr::from).collect();
    let (_, cs) = in_circuit(&inputs);
    assert_eq!(cs.num_constraints(), 504);
}

#[test]
fn chain_gadget_matches_native() {
    let mut rng = StdRng::seed_from_u64(11);
    for len in [
        1,
        CHAIN_RATE - 1,
        CHAIN_RATE,
        CHAIN_RATE + 1,
        3 * CHAIN_RATE + 4,
    ] {
        let salt = Fr::rand(&mut rng);
        let elements: Vec<Fr> = (0..len).map(|_| Fr::rand(&mut rng)).collect();
        let cs = ConstraintSystem::<Fr>::new_ref();
        let salt_var = LinearVar::new_witness(&cs, Some(salt)).unwrap();
        let vars: Vec<_> = elements
            .iter()
            .map(|x| LinearVar::new_witness(&cs, Some(*x)).unwrap())
            .collect();
        let out = PoseidonVar::chain(&cs, &salt_var, &vars).unwrap();
        assert_eq!(
            out.value().unwrap(),
            poseidon::chain(salt, &elements).unwrap(),
            "len {len}"
        );
        assert!(cs.is_satisfied().unwrap());
    }
}

#[test]
fn chain_is_salted() {
    let elements = [Fr::from(5u64)];
    assert_ne!(
        poseidon::chain(Fr::from(1u64), &elements).unwrap(),
        poseidon::chain(Fr::from(2u64), &elements).unwrap()
    );
}
