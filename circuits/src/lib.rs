//! Groth16 circuits proving that a committed vector meets a threshold fraction.
#![doc = include_str!("../README.md")]

pub mod bucketed;
mod catalog;
pub mod circuit;
pub mod daily;
mod error;
pub mod export;
pub mod gadgets;
pub mod keys;
mod proof;
pub mod ptau;
pub mod r1cs;
mod random;
pub mod statement;
pub mod zkey;

pub use circuit::ThresholdCircuit;
pub use error::CircuitError;
pub use keys::{
    Circuit, CircuitKeys, KeyManifest, KeygenProgress, KeygenStage, Provenance, VerifierKey,
    constraint_count, generate_keys, keys_from_stored, load_keys, load_verifier,
    verifier_from_stored,
};
pub use proof::{SlaProof, period_statement, prove, prove_days, prove_period, verify};
pub use statement::{
    Claim, ContextHash, Opening, Slot, Statement, StatementJson, build, build_with_salt,
    derive_salt,
};

/// BN254's scalar field, in which statements are expressed.
pub use ark_bn254::Fr;
