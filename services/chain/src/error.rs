//! What can go wrong talking to a chain, by what the caller should do about it.

use alloy::primitives::{Address, B256, Bytes};

/// A chain operation's failure.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// The settings cannot work (no RPC URL, no key, a key that does not parse).
    #[error("chain settings: {0}")]
    Settings(String),
    /// The node did not answer within `chain.patience_secs`: retry later.
    #[error("the chain's RPC at {url} is unavailable ({doing}): {source}")]
    Unavailable {
        url: String,
        doing: &'static str,
        #[source]
        source: alloy::transports::TransportError,
    },
    /// The node answered with an error that retrying will not change.
    /// `data` is the revert data when the node ran the call and it reverted
    /// (decode it with the contract's errors).
    #[error("the chain refused {doing}: {message}{}", data.as_ref().map(|d| format!(" (revert data {d})")).unwrap_or_default())]
    Refused {
        doing: String,
        message: String,
        data: Option<Bytes>,
    },
    /// The transaction was not final within `chain.final_within_secs`
    /// (stuck behind a fee rise, or the chain stalled). It may still be
    /// mined: before sending the same thing again, look for it.
    #[error(
        "{doing}: transaction {tx} not final within chain.final_within_secs = {secs}; it may still be mined"
    )]
    NotFinal { doing: String, tx: B256, secs: u64 },
    /// The transaction was mined and reverted.
    #[error("{doing} reverted in transaction {tx}")]
    Reverted { doing: String, tx: B256 },
    /// The network's fee is above `chain.max_fee_per_gas_gwei`: wait.
    #[error(
        "the network asks {asked_gwei} gwei per gas for {doing}, above chain.max_fee_per_gas_gwei = {cap_gwei}"
    )]
    FeeAboveCap {
        doing: String,
        asked_gwei: u128,
        cap_gwei: u64,
    },
    /// Sending would pass `chain.daily_spend_limit_gwei`: wait.
    #[error(
        "{doing} may cost up to {cost_gwei} gwei; with {spent_gwei} gwei reserved in the last 24 h that passes chain.daily_spend_limit_gwei = {limit_gwei}"
    )]
    SpendLimit {
        doing: String,
        cost_gwei: u128,
        spent_gwei: u128,
        limit_gwei: u64,
    },
    /// A contract the deployment names has no code on this chain.
    #[error("no contract at {address} ({what}) on chain {chain_id}")]
    NoCode {
        what: &'static str,
        address: Address,
        chain_id: u64,
    },
    /// The deployment record cannot be read or written.
    #[error("deployment record {path}: {message}")]
    Deployment { path: String, message: String },
    /// An attestation or receipt said something it should not have.
    #[error("unexpected answer from the chain: {0}")]
    Unexpected(String),
}

impl ChainError {
    /// The same error, saying it happened while `doing` (a refusal names
    /// the operation, not the RPC step).
    pub fn doing(self, doing: &str) -> Self {
        match self {
            ChainError::Refused { message, data, .. } => ChainError::Refused {
                doing: doing.to_owned(),
                message,
                data,
            },
            other => other,
        }
    }

    /// Whether waiting and trying again may succeed (the job should be retried).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ChainError::Unavailable { .. }
                | ChainError::NotFinal { .. }
                | ChainError::FeeAboveCap { .. }
                | ChainError::SpendLimit { .. }
        )
    }
}

pub type Result<T, E = ChainError> = std::result::Result<T, E>;
