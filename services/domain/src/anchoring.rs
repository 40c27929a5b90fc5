//! Where an SLA's period proofs are anchored on chain: the SLA document's
//! `spec.attestation` (the `slaproof.dev/attestation` annotation in OpenSLO).

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a proven period statement reaches the chain.
///
/// - `hash-only`: one EAS attestation per statement with the proof's hash;
///   anyone verifies the proof off chain against the anchored statement.
/// - `verified`: one attestation per statement carrying the proof, which
///   slaproof's resolver verifies on chain (EAS refuses a proof that does
///   not verify); costs the most gas.
/// - `batched`: the statements of an epoch (per tenant) under one Merkle
///   root, one attestation per epoch; each statement's inclusion proof is
///   in its bundle. Cheapest; anchored at the epoch's end, not at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnchorPath {
    #[default]
    HashOnly,
    Verified,
    Batched,
}

impl AnchorPath {
    /// Every path, in the order the docs list them.
    pub const ALL: [AnchorPath; 3] = [Self::HashOnly, Self::Verified, Self::Batched];

    /// The path's name as documents and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HashOnly => "hash-only",
            Self::Verified => "verified",
            Self::Batched => "batched",
        }
    }

    /// Reads a path's name, or says which names there are.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| format!("must be hash-only, verified or batched, not {name:?}"))
    }
}

impl std::fmt::Display for AnchorPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which circuit may prove an SLA's periods.
///
/// - `daily` (the default): only over the period's days, each measured and
///   anchored as the period went, so the data were fixed before the
///   outcome. When that cannot be done (a day not measured, or measured
///   otherwise than the period counts it; days not anchored; no daily keys
///   loaded) the period is not proven: `attestation.failed` says why, and
///   the attestation is retried.
/// - `threshold`: the parties waive that: a period may be proven over the
///   counts committed at its close, when the daily circuit cannot be used.
///   Its bundles say `circuit: threshold`, which auditors see.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofCircuit {
    #[default]
    Daily,
    Threshold,
}

impl ProofCircuit {
    /// Every choice, in the order the docs list them.
    pub const ALL: [ProofCircuit; 2] = [Self::Daily, Self::Threshold];

    /// The name documents spell.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Daily => "daily",
            Self::Threshold => "threshold",
        }
    }

    /// Reads a name, or says which names there are.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .ok_or_else(|| format!("must be daily or threshold, not {name:?}"))
    }
}

/// What an SLA asks of its attestations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttestationPolicy {
    /// Where its period statements are anchored.
    pub anchor: AnchorPath,
    /// Which circuit may prove its periods.
    pub circuit: ProofCircuit,
    /// The verifying key the parties agreed to (`spec.attestation.
    /// verifyingKey`, the sha256 `slaproof ceremony finalize` prints): its
    /// periods are proven with that key or not at all.
    pub verifying_key: Option<KeyHash>,
}

/// A verifying key's sha256 (of its compressed encoding, as the anchor and
/// `slaproof verify --vk-sha256` name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(pub [u8; 32]);

impl KeyHash {
    /// Reads 64 hex digits, or says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let digits = text.strip_prefix("0x").unwrap_or(text);
        if digits.len() != 64 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!(
                "must be a verifying key's sha256, 64 hex digits, not {text:?}"
            ));
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("must be 64 hex digits, not {text:?}"))?;
        }
        Ok(Self(out))
    }
}

impl fmt::Display for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_an_unknown_one_is_named() {
        for path in AnchorPath::ALL {
            assert_eq!(AnchorPath::parse(path.as_str()), Ok(path));
            assert_eq!(
                serde_json::to_value(path).unwrap(),
                serde_json::json!(path.as_str())
            );
        }
        assert!(
            AnchorPath::parse("onchain")
                .unwrap_err()
                .contains("\"onchain\"")
        );
        for circuit in ProofCircuit::ALL {
            assert_eq!(ProofCircuit::parse(circuit.as_str()), Ok(circuit));
        }
        assert!(
            ProofCircuit::parse("vector")
                .unwrap_err()
                .contains("daily or threshold")
        );
    }
}
