//! Groth16 circuits proving that a committed vector meets a threshold fraction.
//!
//! The statement (see `docs/CIRCUITS.md`): private slots `(vᵢ, wᵢ)` with
//! `vᵢ < 2³²`, `wᵢ < 2⁴⁰` and a salt `r`; public the commitment
//! `C = chain(r, pack(slots))` (circomlib Poseidon), a threshold `T`, a quota
//! `q` in parts per million and a context hash; proven
//! `10⁶·Σ wᵢ·[vᵢ ≤ T] ≥ q·Σ wᵢ` and `Σ wᵢ > 0`.
//!
//! ```no_run
//! # fn main() -> Result<(), slaproof_circuits::CircuitError> {
//! use slaproof_circuits::{ContextHash, build, load_keys, prove, verify};
//! let keys = load_keys(std::path::Path::new("keys"), 1024)?;
//! let context = ContextHash::new("tenant", "sla", "p99-latency", "2026-11");
//! let (statement, opening) = build(1024, &[(42, 10), (70, 1)], 50, 900_000, context)?;
//! let proof = prove(&keys, &statement, &opening)?;
//! assert!(verify(keys.verifier(), &statement, &proof)?);
//! # Ok(()) }
//! ```

pub mod circuit;
pub mod error;
pub mod export;
pub mod gadgets;
pub mod keys;
pub mod proof;
pub mod statement;

pub use circuit::ThresholdCircuit;
pub use error::CircuitError;
pub use keys::{
    CircuitKeys, KeyManifest, KeygenProgress, KeygenStage, VerifierKey, constraint_count,
    generate_keys, keys_from_stored, load_keys, load_verifier, verifier_from_stored,
};
pub use proof::{SlaProof, prove, verify};
pub use statement::{ContextHash, Opening, Slot, Statement, StatementJson, build, build_with_salt};

/// BN254's scalar field, in which statements are expressed.
pub use ark_bn254::Fr;
