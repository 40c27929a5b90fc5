//! What can go wrong handling an attestation bundle.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum AttestationError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Circuit(#[from] slaproof_circuits::CircuitError),
    #[error(transparent)]
    Chain(#[from] slaproof_chain::ChainError),
    #[error(transparent)]
    Store(#[from] slaproof_store::StoreError),
    /// The verified path, and the chain's resolver knows no verifier for the key.
    #[error(
        "the SLA asks for the verified path and no verifier is registered on chain for the \
         {slots}-slot verifying key (sha256 {vk_sha256}): the resolver's owner registers it with \
         `slaproof chain register-verifiers`"
    )]
    NoVerifier { slots: usize, vk_sha256: String },
    /// Proven, and no chain to anchor on in this process.
    #[error("proven; waiting for a chain to anchor on (none is configured or reachable)")]
    NoChain,
    /// The SLA asks for the daily circuit and it cannot be used (why).
    #[error(
        "not proven: the SLA's periods are proven only over their days, each fixed as the period \
         went (spec.attestation.circuit: daily), and {0}; retrying (spec.attestation.circuit: \
         threshold would let the parties prove such a period over the counts committed at its close)"
    )]
    DailyRequired(String),
    /// The SLA names the key its periods are proven with, and the worker
    /// holds another for this size.
    #[error(
        "not proven: the SLA's parties agreed to the verifying key {agreed} \
         (spec.attestation.verifyingKey), and the {circuit} key loaded for this period's size is \
         {loaded}; install the agreed key (slaproof ceremony finalize) in the key folder; retrying"
    )]
    KeyNotAgreed {
        agreed: String,
        loaded: String,
        circuit: &'static str,
    },
}

impl AttestationError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            message: error.to_string(),
        }
    }
}
