//! Attestation: the bundle an auditor receives for a proven, anchored period
//! ([`bundle`]), and the auditor's checks of it against the chain
//! ([`audit`], `slaproof verify`).
//!
//! The [`worker`] proves each frozen period result over the vector the
//! evaluator recorded with it, and anchors the proof on chain. In a
//! dispute, [`opening`] opens a period's daily commitments and recounts
//! each day from the transparency log's exported leaves.

mod anchor;
pub mod audit;
mod batch;
pub mod bundle;
pub mod daily;
mod error;
pub mod export;
pub(crate) mod facts;
mod log_anchor;
pub mod opening;
pub mod setup;
pub mod verdict;
pub mod verifiers;
pub mod worker;

pub use error::AttestationError;
