//! The chain client: one attester key on one RPC endpoint, sending
//! transactions that are not lost to an outage, a dropped transaction, a
//! reorg or another worker using the same key.
//!
//! Every send signs locally and keeps the signed bytes until the transaction
//! has `confirmations` blocks on top: if the node forgets it (dropped from
//! the pool, or its block reorged away) the same bytes are sent again; if
//! its nonce was taken meanwhile by another sender of the same key, it is
//! signed again with the next free nonce. Nonces come from the node's
//! pending count, never below what this process last used; another process
//! with the same key makes the node refuse one of two equal nonces, and the
//! refused one is signed again with the next (so workers never collide for
//! long, and never double-spend a nonce).

use std::collections::VecDeque;
use std::str::FromStr;
use std::time::{Duration, Instant};

use alloy::eips::eip2718::Encodable2718;
use alloy::network::{EthereumWallet, NetworkTransactionBuilder, TransactionBuilder};
use alloy::primitives::{Address, B256, Bytes, TxKind};
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::client::RpcClient;
use alloy::rpc::types::{TransactionReceipt, TransactionRequest};
use alloy::signers::local::PrivateKeySigner;
use alloy::transports::{RpcError, TransportError};
use secrecy::ExposeSecret;
use tokio::sync::Mutex;

use crate::error::{ChainError, Result};
use crate::settings::Settings;
use crate::transport::Http;

const GWEI: u128 = 1_000_000_000;
const DAY: Duration = Duration::from_secs(24 * 3600);
/// Times one send signs again after its nonce was taken before giving up.
const NONCE_RETRIES: usize = 16;

/// A connection to one chain with one signing key.
pub struct Chain {
    provider: RootProvider,
    /// `None` for a reader: sends are refused.
    wallet: Option<EthereumWallet>,
    address: Address,
    chain_id: u64,
    /// The endpoint's scheme, host and port: its path and query may carry an
    /// API key and are never printed.
    endpoint: String,
    settings: Settings,
    /// The nonce this process uses next, if it has sent before.
    next_nonce: Mutex<Option<u64>>,
    /// Gas reserved by sends in the last 24 hours: (when, wei).
    spent: std::sync::Mutex<VecDeque<(Instant, u128)>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("endpoint", &self.endpoint)
            .field("chain_id", &self.chain_id)
            .field("attester", &self.address)
            .finish_non_exhaustive()
    }
}

/// What waiting for a sent transaction ended with.
enum Outcome {
    Final(Box<TransactionReceipt>),
    /// The nonce went to another transaction: sign again.
    NonceTaken,
}

impl Chain {
    /// Connects with `settings` (RPC URL and key) and asks the chain's id,
    /// retrying through an outage for `patience_secs`.
    pub async fn connect(settings: &Settings) -> Result<Chain> {
        let signer = load_key(settings)?;
        Self::open(settings, Some(signer)).await
    }

    async fn open(settings: &Settings, signer: Option<PrivateKeySigner>) -> Result<Chain> {
        let url = settings
            .rpc_url
            .clone()
            .ok_or_else(|| ChainError::Settings("chain.rpc_url is not set".into()))?;
        let address = signer.as_ref().map(|s| s.address()).unwrap_or_default();
        let endpoint = format!(
            "{}://{}{}",
            url.scheme(),
            url.host_str().unwrap_or("?"),
            url.port().map(|p| format!(":{p}")).unwrap_or_default()
        );
        let is_local = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "::1"));
        let http = Http::new(url, Duration::from_secs(30))
            .map_err(|e| ChainError::Settings(format!("the RPC client: {e}")))?;
        let provider = RootProvider::new(RpcClient::new(http, is_local));
        let mut chain = Chain {
            provider,
            wallet: signer.map(EthereumWallet::from),
            address,
            chain_id: 0,
            endpoint,
            settings: settings.clone(),
            next_nonce: Mutex::new(None),
            spent: std::sync::Mutex::new(VecDeque::new()),
        };
        let provider = &chain.provider;
        let chain_id = chain
            .patiently("asking the chain id", || async move {
                provider.get_chain_id().await
            })
            .await?;
        chain.chain_id = chain_id;
        Ok(chain)
    }

    /// A connection for reads only (an auditor's): no key, so every send is
    /// refused.
    pub async fn reader(url: url::Url) -> Result<Chain> {
        let settings = Settings {
            rpc_url: Some(url),
            ..Settings::default()
        };
        Self::open(&settings, None).await
    }

    /// The attester's address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The chain's id.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }

    /// The endpoint without its path (which may hold an API key).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The provider, for reads.
    pub fn provider(&self) -> &RootProvider {
        &self.provider
    }

    /// Runs `call` until it answers, retrying transport failures with a
    /// growing pause for `patience_secs`; the node's own error is final.
    ///
    /// `call` is a closure returning a future (`|| async move { … }`), not
    /// an async closure: the future of an async closure borrows the
    /// closure under a higher-ranked lifetime, and a task awaiting it can
    /// then not be proven `Send` (so not be spawned).
    pub async fn patiently<T, F>(
        &self,
        doing: &'static str,
        mut call: impl FnMut() -> F,
    ) -> Result<T>
    where
        F: std::future::Future<Output = std::result::Result<T, TransportError>>,
    {
        let started = Instant::now();
        let mut pause = Duration::from_millis(self.settings.poll_millis.max(10));
        loop {
            match call().await {
                Ok(value) => return Ok(value),
                Err(RpcError::ErrorResp(payload))
                    if !node_busy(payload.code, &payload.message)
                        || started.elapsed()
                            >= Duration::from_secs(self.settings.patience_secs) =>
                {
                    return Err(ChainError::Refused {
                        doing: doing.to_owned(),
                        message: payload.message.to_string(),
                        data: payload.as_revert_data(),
                    });
                }
                Err(error) => {
                    if started.elapsed() >= Duration::from_secs(self.settings.patience_secs) {
                        return Err(ChainError::Unavailable {
                            url: self.endpoint.clone(),
                            doing,
                            source: error,
                        });
                    }
                    tracing::warn!(endpoint = %self.endpoint, doing, %error, "the chain's RPC failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(10));
                }
            }
        }
    }

    /// Deploys `code` (creation bytecode and constructor arguments) and
    /// returns the new contract's address.
    pub async fn deploy(&self, code: Bytes, doing: &str) -> Result<(Address, TransactionReceipt)> {
        let receipt = self.send(TxKind::Create, code, doing).await?;
        let address = receipt
            .contract_address
            .ok_or_else(|| ChainError::Unexpected(format!("{doing}: no contract address")))?;
        Ok((address, receipt))
    }

    /// Calls `to` with `input` in a transaction, and returns its receipt once
    /// it has `confirmations` blocks on top. A revert is an error.
    pub async fn send(&self, to: TxKind, input: Bytes, doing: &str) -> Result<TransactionReceipt> {
        if self.wallet.is_none() {
            return Err(ChainError::Settings(format!(
                "{doing}: this connection reads only (no key)"
            )));
        }
        for _ in 0..NONCE_RETRIES {
            let (raw, hash, nonce) = self.sign_and_broadcast(to, input.clone(), doing).await?;
            let waited = self.wait(&raw, hash, nonce, doing).await;
            if waited.is_err() {
                // Whatever became of it, the next send asks the node for the
                // nonce rather than leave a gap behind a lost transaction.
                *self.next_nonce.lock().await = None;
            }
            match waited? {
                Outcome::Final(receipt) => {
                    if !receipt.status() {
                        return Err(ChainError::Reverted {
                            doing: doing.to_owned(),
                            tx: hash,
                        });
                    }
                    return Ok(*receipt);
                }
                Outcome::NonceTaken => {
                    tracing::info!(%hash, nonce, doing, "the nonce went to another transaction; signing again");
                }
            }
        }
        Err(ChainError::Unexpected(format!(
            "{doing}: the nonce was taken {NONCE_RETRIES} times in a row"
        )))
    }

    async fn sign_and_broadcast(
        &self,
        to: TxKind,
        input: Bytes,
        doing: &str,
    ) -> Result<(Bytes, B256, u64)> {
        let request = TransactionRequest::default()
            .with_from(self.address)
            .with_kind(to)
            .with_input(input);
        // Estimation runs the call: a revert is refused here, before any gas is spent.
        let gas = self
            .patiently("estimating gas", || async {
                self.provider.estimate_gas(request.clone()).await
            })
            .await
            .map_err(|e| e.doing(doing))?;
        let gas_limit = gas + gas / 5;
        let fees = self
            .patiently("estimating fees", || async move {
                self.provider.estimate_eip1559_fees().await
            })
            .await?;
        let cap = u128::from(self.settings.max_fee_per_gas_gwei) * GWEI;
        if fees.max_fee_per_gas > cap {
            return Err(ChainError::FeeAboveCap {
                doing: doing.to_owned(),
                asked_gwei: fees.max_fee_per_gas.div_ceil(GWEI),
                cap_gwei: self.settings.max_fee_per_gas_gwei,
            });
        }
        self.reserve(u128::from(gas_limit) * fees.max_fee_per_gas, doing)?;

        // One sender at a time in this process: nonces go out in order.
        let mut next = self.next_nonce.lock().await;
        let mut conflicts = 0;
        loop {
            let pending = self
                .patiently("reading the nonce", || async move {
                    self.provider
                        .get_transaction_count(self.address)
                        .pending()
                        .await
                })
                .await?;
            let nonce = next.map_or(pending, |n| n.max(pending));
            let envelope = request
                .clone()
                .with_nonce(nonce)
                .with_chain_id(self.chain_id)
                .with_gas_limit(gas_limit)
                .with_max_fee_per_gas(fees.max_fee_per_gas)
                .with_max_priority_fee_per_gas(fees.max_priority_fee_per_gas)
                .build(self.wallet.as_ref().ok_or_else(|| {
                    ChainError::Settings(format!("{doing}: this connection has no key"))
                })?)
                .await
                .map_err(|e| ChainError::Unexpected(format!("{doing}: signing: {e}")))?;
            let hash = *envelope.tx_hash();
            let raw = Bytes::from(envelope.encoded_2718());
            match self.broadcast(&raw).await {
                Ok(()) => {
                    *next = Some(nonce + 1);
                    tracing::debug!(%hash, nonce, gas_limit, doing, "sent");
                    return Ok((raw, hash, nonce));
                }
                Err(ChainError::Refused { message, .. })
                    if nonce_conflict(&message) && self.known(hash).await? =>
                {
                    // Our own bytes took the nonce (an earlier try reached
                    // the node though its answer was lost): sent, not lost.
                    *next = Some(nonce + 1);
                    tracing::debug!(%hash, nonce, %message, doing, "sent by an earlier try");
                    return Ok((raw, hash, nonce));
                }
                Err(ChainError::Refused { message, .. })
                    if nonce_conflict(&message) && conflicts < NONCE_RETRIES =>
                {
                    // Another sender of this key took the nonce: ask again.
                    conflicts += 1;
                    *next = None;
                    tracing::info!(nonce, %message, "nonce taken by another sender; reading it again");
                }
                Err(error) => return Err(error.doing(doing)),
            }
        }
    }

    /// Sends signed bytes; "already known" is success (a re-send of bytes the
    /// node still holds).
    async fn broadcast(&self, raw: &Bytes) -> Result<()> {
        match self
            .patiently("sending a transaction", || async move {
                self.provider.send_raw_transaction(raw).await.map(|_| ())
            })
            .await
        {
            Err(ChainError::Refused { message, .. }) if already_known(&message) => Ok(()),
            other => other,
        }
    }

    /// Waits for `hash` to be final, sending `raw` again whenever the node
    /// no longer knows it.
    async fn wait(&self, raw: &Bytes, hash: B256, nonce: u64, doing: &str) -> Result<Outcome> {
        let poll = Duration::from_millis(self.settings.poll_millis.max(10));
        let resend_after = Duration::from_secs(self.settings.resend_after_secs);
        let mut last_sent = Instant::now();
        let started = Instant::now();
        loop {
            if started.elapsed() >= Duration::from_secs(self.settings.final_within_secs) {
                return Err(ChainError::NotFinal {
                    doing: doing.to_owned(),
                    tx: hash,
                    secs: self.settings.final_within_secs,
                });
            }
            let receipt = self
                .patiently("waiting for a receipt", || async move {
                    self.provider.get_transaction_receipt(hash).await
                })
                .await?;
            if let Some(receipt) = receipt {
                let Some(block) = receipt.block_number else {
                    tokio::time::sleep(poll).await;
                    continue;
                };
                let head = self
                    .patiently("reading the head", || async move {
                        self.provider.get_block_number().await
                    })
                    .await?;
                if head + 1 >= block + self.settings.confirmations.max(1) {
                    // Final only if the receipt is still the one in the
                    // canonical chain (a reorg moves or removes it).
                    let again = self
                        .patiently("checking the receipt", || async move {
                            self.provider.get_transaction_receipt(hash).await
                        })
                        .await?;
                    if let Some(again) = again
                        && again.block_hash == receipt.block_hash
                    {
                        return Ok(Outcome::Final(Box::new(again)));
                    }
                    tracing::warn!(%hash, doing, "the transaction's block was reorged away");
                    last_sent = Instant::now()
                        .checked_sub(resend_after)
                        .unwrap_or(last_sent);
                }
            } else if last_sent.elapsed() >= resend_after {
                let known = self
                    .patiently("looking up a transaction", || async move {
                        self.provider.get_transaction_by_hash(hash).await
                    })
                    .await?;
                if known.is_none() {
                    let used = self
                        .patiently("reading the nonce", || async move {
                            self.provider.get_transaction_count(self.address).await
                        })
                        .await?;
                    if used > nonce && !self.known(hash).await? {
                        // Mined nonces passed ours and ours is not among
                        // them (asked again after the count: it may have
                        // been mined in between): another transaction took it.
                        *self.next_nonce.lock().await = None;
                        return Ok(Outcome::NonceTaken);
                    }
                    if used > nonce {
                        continue;
                    }
                    tracing::warn!(%hash, nonce, doing, "the node forgot the transaction; sending it again");
                    match self.broadcast(raw).await {
                        Ok(()) => {}
                        Err(ChainError::Refused { message, .. }) if nonce_conflict(&message) => {
                            if self.known(hash).await? {
                                continue;
                            }
                            *self.next_nonce.lock().await = None;
                            return Ok(Outcome::NonceTaken);
                        }
                        Err(error) => return Err(error.doing(doing)),
                    }
                }
                last_sent = Instant::now();
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Whether the node knows `hash`, pending or mined.
    async fn known(&self, hash: B256) -> Result<bool> {
        let receipt = self
            .patiently("looking up a receipt", || async move {
                self.provider.get_transaction_receipt(hash).await
            })
            .await?;
        if receipt.is_some() {
            return Ok(true);
        }
        let pending = self
            .patiently("looking up a transaction", || async move {
                self.provider.get_transaction_by_hash(hash).await
            })
            .await?;
        Ok(pending.is_some())
    }

    /// Reserves `wei` of the daily spending limit, or refuses.
    fn reserve(&self, wei: u128, doing: &str) -> Result<()> {
        let limit = u128::from(self.settings.daily_spend_limit_gwei) * GWEI;
        let mut spent = self
            .spent
            .lock()
            .expect("the spend ledger is never poisoned");
        while spent.front().is_some_and(|(at, _)| at.elapsed() >= DAY) {
            spent.pop_front();
        }
        let total: u128 = spent.iter().map(|(_, w)| w).sum();
        if total + wei > limit {
            return Err(ChainError::SpendLimit {
                doing: doing.to_owned(),
                cost_gwei: wei.div_ceil(GWEI),
                spent_gwei: total.div_ceil(GWEI),
                limit_gwei: self.settings.daily_spend_limit_gwei,
            });
        }
        spent.push_back((Instant::now(), wei));
        Ok(())
    }

    /// Runs `read` (a contract view) patiently; a closure returning a
    /// future, as for [`Chain::patiently`].
    pub async fn read<T, F>(&self, doing: &'static str, read: impl Fn() -> F) -> Result<T>
    where
        F: std::future::Future<Output = std::result::Result<T, alloy::contract::Error>>,
    {
        let started = Instant::now();
        loop {
            match read().await {
                Ok(value) => return Ok(value),
                Err(alloy::contract::Error::TransportError(error))
                    if !error.is_error_resp()
                        && started.elapsed() < Duration::from_secs(self.settings.patience_secs) =>
                {
                    tracing::warn!(doing, %error, "the chain's RPC failed; retrying");
                    tokio::time::sleep(Duration::from_millis(self.settings.poll_millis.max(10)))
                        .await;
                }
                Err(alloy::contract::Error::TransportError(error)) if !error.is_error_resp() => {
                    return Err(ChainError::Unavailable {
                        url: self.endpoint.clone(),
                        doing,
                        source: error,
                    });
                }
                Err(error) => {
                    return Err(ChainError::Refused {
                        doing: doing.to_owned(),
                        message: error.to_string(),
                        data: None,
                    });
                }
            }
        }
    }
}

/// Whether a node's error answer says "not now" rather than "no": rate
/// limits, an internal error, a block it has not seen yet, a full pool.
/// These are retried like an outage.
fn node_busy(code: i64, message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    matches!(code, -32005 | -32603)
        || [
            "rate limit",
            "header not found",
            "txpool is full",
            "too many requests",
            "try again",
        ]
        .iter()
        .any(|m| message.contains(m))
}

/// Whether the node already holds this very transaction.
fn already_known(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("already known")
        || message.contains("already imported")
        || message.contains("known transaction")
}

/// Whether the node refused a transaction because its nonce is taken.
fn nonce_conflict(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("nonce too low")
        || message.contains("replacement transaction underpriced")
        || message.contains("nonce has already been used")
}

/// The attester's key from `key` or `key_file`; neither is ever printed.
fn load_key(settings: &Settings) -> Result<PrivateKeySigner> {
    let text = match (&settings.key, &settings.key_file) {
        (Some(key), None) => key.expose_secret().to_owned(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map_err(|e| ChainError::Settings(format!("chain.key_file {}: {e}", path.display())))?,
        (Some(_), Some(_)) => {
            return Err(ChainError::Settings(
                "set chain.key or chain.key_file, not both".into(),
            ));
        }
        (None, None) => {
            return Err(ChainError::Settings(
                "no attester key: set chain.key_file (or chain.key)".into(),
            ));
        }
    };
    // The parse error would not print the key, but say nothing of it anyway.
    PrivateKeySigner::from_str(text.trim()).map_err(|_| {
        ChainError::Settings("the attester key is not a 32-byte hex private key".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;

    #[test]
    fn a_bad_key_is_refused_without_being_repeated() {
        let settings = Settings {
            key: Some(SecretString::from("0xnot-a-key-but-secret")),
            ..Settings::default()
        };
        let error = load_key(&settings).unwrap_err().to_string();
        assert!(error.contains("not a 32-byte hex private key"), "{error}");
        assert!(!error.contains("secret"), "{error}");
        assert!(!format!("{settings:?}").contains("not-a-key"));
    }

    #[test]
    fn nonce_conflicts_are_recognised_by_the_nodes_words() {
        assert!(nonce_conflict("nonce too low: next nonce 5, tx nonce 4"));
        assert!(nonce_conflict("replacement transaction underpriced"));
        assert!(!nonce_conflict("execution reverted"));
        assert!(!nonce_conflict("already imported"));
        assert!(already_known("Transaction already imported"));
        assert!(node_busy(-32005, "limit exceeded"));
        assert!(node_busy(-32000, "header not found"));
        assert!(!node_busy(-32000, "execution reverted"));
    }
}
