//! Attestation: the bundle an auditor receives for a proven, anchored period
//! ([`bundle`]), and the auditor's checks of it against the chain
//! ([`audit`], `slaproof verify`).
//!
//! The worker that proves closed periods and anchors them lands here next
//! (issue 16); the bundle is what it will export.

pub mod audit;
pub mod bundle;
mod error;

pub use error::AttestationError;
