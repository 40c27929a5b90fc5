//! Errors of the circuits crate, one variant per rule a caller can break.

use std::path::PathBuf;

/// Everything that can go wrong building, proving, verifying or storing.
#[derive(Debug, thiserror::Error)]
pub enum CircuitError {
    #[error("slots: {slots} is not a supported circuit size (1..={max})")]
    UnsupportedSlots { slots: usize, max: usize },
    #[error("slots: {given} pairs do not fit a circuit of {slots} slots")]
    TooManyPairs { given: usize, slots: usize },
    #[error("slots[{index}].value: {value} must be below 2^32")]
    ValueOutOfRange { index: usize, value: u64 },
    #[error("slots[{index}].weight: {weight} must be below 2^40")]
    WeightOutOfRange { index: usize, weight: u64 },
    #[error("quota_ppm: {quota_ppm} must be at most 1000000")]
    QuotaOutOfRange { quota_ppm: u32 },
    #[error("slots: the total weight must be positive")]
    ZeroTotalWeight,
    #[error("statement: the committed vector does not meet the threshold fraction")]
    StatementFalse,
    #[error("opening: the vector and salt do not open the statement's commitment")]
    OpeningMismatch,
    #[error(
        "keys for {slots} slots are missing at {path}; run `slaproof keys generate --slots {slots}`"
    )]
    KeysMissing { slots: usize, path: PathBuf },
    #[error("keys for {slots} slots already exist at {path}; refusing to overwrite them")]
    KeysExist { slots: usize, path: PathBuf },
    #[error("{path}: sha256 {actual} does not match the manifest's {expected}")]
    KeyHashMismatch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("keys manifest at {path} is for {found} slots, not {expected}")]
    ManifestMismatch {
        path: PathBuf,
        expected: usize,
        found: usize,
    },
    #[error("statement: it is for {statement} slots but the key is for {key}")]
    SizeMismatch { key: usize, statement: usize },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("serialization: {0}")]
    Serialization(#[from] ark_serialize::SerializationError),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("constraint synthesis: {0}")]
    Synthesis(#[from] ark_relations::r1cs::SynthesisError),
    #[error("poseidon: {0}")]
    Poseidon(String),
    #[error("{field}: {reason}")]
    Malformed { field: &'static str, reason: String },
    #[error("solidity verifier: {0}")]
    Solidity(String),
}

impl CircuitError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
