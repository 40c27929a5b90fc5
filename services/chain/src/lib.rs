//! slaproof's EVM client (alloy): puts EAS, slaproof's schemas, resolvers and
//! batch checker on a chain, anchors period statements on each path
//! (hash-only, verified, batched), and reads the attestations back.
//!
//! It depends on no other slaproof crate: the attestation worker hands it
//! statements already reduced to the anchored fields ([`anchor`]).

pub mod anchor;
pub mod anvil;
pub mod attest;
mod client;
pub mod contracts;
pub mod deploy;
mod error;
pub mod merkle;
mod settings;
mod transport;

pub use client::Chain;
pub use deploy::{Deployment, deploy, register_verifier, set_attester, status};
pub use error::{ChainError, Result};
pub use settings::Addresses;
pub use settings::Settings;
