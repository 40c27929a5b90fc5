//! The transparency log: each tenant's events fixed day by day in an
//! append-only Merkle log (RFC 6962 hashes, in the C2SP tlog layout), under
//! signed checkpoints, so that a customer can check its own requests and an
//! auditor can recompute a day from exported files.
//!
//! A *leaf* is one stored event as canonical JSON ([`Leaf`]), salted with a
//! per-leaf secret so that the sibling hashes in a proof reveal nothing about
//! other customers' requests. The log grows once a day per tenant (a
//! *batch*): every event of the day that is stored by the time the day is
//! built, plus any event of an earlier day stored since, marked late.

pub mod check;
mod leaf;
pub mod note;
pub mod recount;
pub mod tree;

pub use leaf::{Leaf, LeafSalt, SALT_CONTEXT};
pub use tlog_tiles::Hash;

/// Errors of the log's math and formats.
#[derive(Debug, thiserror::Error)]
pub enum TransparencyError {
    /// A proof does not lead from its leaf or tree to the head it claims.
    #[error("the proof does not match the tree head: {0}")]
    Proof(String),
    /// A checkpoint or signed note that cannot be read or is not signed by
    /// the log's key.
    #[error("the checkpoint is not valid: {0}")]
    Checkpoint(String),
    /// Hashes the caller had to provide were not provided.
    #[error("hash {0} of the log is missing")]
    MissingHash(u64),
    /// A hex or base64 field that does not decode.
    #[error("{field} is not valid: {reason}")]
    Encoding { field: &'static str, reason: String },
}

/// RFC 6962's leaf hash of a leaf's exact bytes: `SHA-256(0x00 ‖ bytes)`.
pub fn leaf_hash(bytes: &[u8]) -> Hash {
    tlog_tiles::record_hash(bytes)
}

/// A hash as lowercase hex, the way the API and exported files show it.
pub fn hash_hex(hash: &Hash) -> String {
    hex::encode(hash.0)
}

/// A hash from its hex form; `field` names it in the error.
pub fn hash_from_hex(field: &'static str, text: &str) -> Result<Hash, TransparencyError> {
    let bytes = hex::decode(text).map_err(|err| TransparencyError::Encoding {
        field,
        reason: err.to_string(),
    })?;
    let bytes: [u8; 32] = bytes.try_into().map_err(|_| TransparencyError::Encoding {
        field,
        reason: "expected 32 bytes (64 hex digits)".into(),
    })?;
    Ok(Hash(bytes))
}
