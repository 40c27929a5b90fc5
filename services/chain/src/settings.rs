//! The chain client's settings: the `[chain]` section of the configuration.

use std::path::PathBuf;

use secrecy::SecretString;
use serde::Deserialize;
use url::Url;

use slaproof_domain::settings::{SettingsError, within};

use alloy::primitives::Address;
use serde::Serialize;

/// Where slaproof anchors and how it spends. Every field has a default; with
/// no `rpc_url`, `slaproof up` starts anvil and fills this in itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The chain's JSON-RPC endpoint (HTTP or HTTPS).
    pub rpc_url: Option<Url>,
    /// The attester's private key (hex, `0x` optional). Prefer `key_file`:
    /// environment variables leak into process listings and crash dumps.
    pub key: Option<SecretString>,
    /// A file holding the attester's private key (hex), read at start.
    pub key_file: Option<PathBuf>,
    /// The deployment record `slaproof chain deploy` writes: addresses of
    /// EAS, the registry, the resolvers and the schema UIDs.
    pub deployment_file: Option<PathBuf>,
    /// Contracts already on the chain (EAS is predeployed on Optimism,
    /// Base, Arbitrum, …): `slaproof chain deploy` reuses what is named here
    /// and deploys the rest.
    pub contracts: Addresses,
    /// Confirmations before a transaction counts as final (its own block
    /// is the first: 1 means mined); one reorged out before then is sent
    /// again.
    pub confirmations: u64,
    /// Seconds a sent transaction may take to become final before the send
    /// reports it not final (transient: it may still be mined).
    pub final_within_secs: u64,
    /// Seconds without a receipt before slaproof asks the node whether it
    /// still knows the transaction, and sends it again if not.
    pub resend_after_secs: u64,
    /// Seconds a send keeps retrying through an RPC outage before it gives
    /// up and reports the chain unavailable (the caller's job retries later:
    /// an outage delays an anchor, it never loses one).
    pub patience_secs: u64,
    /// The highest fee per gas slaproof pays, in gwei. Above it a
    /// transaction waits (the send reports the fee, the job retries later).
    pub max_fee_per_gas_gwei: u64,
    /// The most slaproof may spend on gas in any 24 hours, in gwei (gas
    /// limit × fee cap is reserved before a send). Counted per process.
    pub daily_spend_limit_gwei: u64,
    /// Milliseconds between two polls of the node while waiting.
    pub poll_millis: u64,
    /// Allows `rpc_url` over plain http to a node that is not this machine:
    /// only on a private network the deployment trusts (a compose network's
    /// anvil), as anyone on the path could forge what the node answers.
    pub allow_http: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            rpc_url: None,
            key: None,
            key_file: None,
            deployment_file: None,
            contracts: Addresses::default(),
            confirmations: 1,
            final_within_secs: 1800,
            resend_after_secs: 30,
            patience_secs: 300,
            // 200 gwei: far above what L2s and anvil charge, low enough
            // that a fee spike on Ethereum mainnet waits instead of paying.
            max_fee_per_gas_gwei: 200,
            // 0.1 ETH a day at most.
            daily_spend_limit_gwei: 100_000_000,
            poll_millis: 250,
            allow_http: false,
        }
    }
}

impl Settings {
    /// Checks every bound, naming the key that breaks one.
    pub fn validate(&self) -> Result<(), SettingsError> {
        within("chain.confirmations", self.confirmations, 1, 64)?;
        within("chain.resend_after_secs", self.resend_after_secs, 1, 3600)?;
        within(
            "chain.final_within_secs",
            self.final_within_secs,
            10,
            86_400,
        )?;
        within(
            "chain.daily_spend_limit_gwei",
            self.daily_spend_limit_gwei,
            1,
            u64::MAX,
        )?;
        within("chain.patience_secs", self.patience_secs, 1, 86_400)?;
        within(
            "chain.max_fee_per_gas_gwei",
            self.max_fee_per_gas_gwei,
            0,
            100_000,
        )?;
        within("chain.poll_millis", self.poll_millis, 10, 60_000)?;
        if self.key.is_some() && self.key_file.is_some() {
            return Err(SettingsError::new(
                "chain.key",
                "set chain.key or chain.key_file, not both",
            ));
        }
        if let Some(url) = &self.rpc_url {
            if !matches!(url.scheme(), "http" | "https") {
                return Err(SettingsError::new(
                    "chain.rpc_url",
                    format!("must be http or https, got {}", url.scheme()),
                ));
            }
            // Receipts and anchors read over plain http could be forged by
            // anyone on the path, and a provider-run RPC sees the key's
            // transactions in clear: plain http only to this machine
            // (anvil, a local node).
            if url.scheme() == "http"
                && !self.allow_http
                && !url
                    .host_str()
                    .is_some_and(slaproof_domain::settings::is_loopback_host)
            {
                return Err(SettingsError::new(
                    "chain.rpc_url",
                    format!(
                        "must be https for a remote node (plain http only to this machine, such as anvil, or with chain.allow_http on a private network), got {url}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The settings against a local anvil at `rpc_url` with `key`, as
    /// `slaproof up` and the tests use them: no waiting between polls worth
    /// the name, one confirmation.
    pub fn local(rpc_url: Url, key: SecretString) -> Self {
        Self {
            rpc_url: Some(rpc_url),
            key: Some(key),
            resend_after_secs: 2,
            patience_secs: 30,
            poll_millis: 50,
            ..Self::default()
        }
    }
}

/// Contract addresses; any may be absent before a deployment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Addresses {
    /// EAS's SchemaRegistry.
    pub schema_registry: Option<Address>,
    /// EAS.
    pub eas: Option<Address>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_bounds_are_named() {
        Settings::default().validate().unwrap();
        let zero = Settings {
            confirmations: 0,
            ..Settings::default()
        };
        assert_eq!(zero.validate().unwrap_err().key, "chain.confirmations");
        let ws = Settings {
            rpc_url: Some("ws://127.0.0.1:8545".parse().unwrap()),
            ..Settings::default()
        };
        let error = ws.validate().unwrap_err();
        assert_eq!(error.key, "chain.rpc_url");
        assert!(error.rule.contains("ws"), "{error}");
        // Found in review: plain http to a remote node was accepted.
        let remote = Settings {
            rpc_url: Some("http://rpc.example.com:8545".parse().unwrap()),
            ..Settings::default()
        };
        let error = remote.validate().unwrap_err();
        assert_eq!(error.key, "chain.rpc_url");
        assert!(error.rule.contains("must be https"), "{error}");
        let trusted = Settings {
            allow_http: true,
            ..remote
        };
        trusted.validate().unwrap();
        for ok in [
            "http://127.0.0.1:8545",
            "http://localhost:8545",
            "https://rpc.example.com",
        ] {
            let local = Settings {
                rpc_url: Some(ok.parse().unwrap()),
                ..Settings::default()
            };
            local.validate().unwrap();
        }
    }
}
