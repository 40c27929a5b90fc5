//! Signed tree heads: C2SP checkpoints (origin, size, base64 root) in C2SP
//! signed notes under the log's Ed25519 key, the format of Go's checksum
//! database and its witnesses, so any note verifier checks them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use signed_note::{Note, StandardSigner, StandardVerifier, VerifierList};
use tlog_tiles::Checkpoint;

use super::{Hash, TransparencyError};

/// The log's signing key for one origin (a tenant's log). The key name is
/// the origin, as C2SP recommends for checkpoints.
#[derive(Clone)]
pub struct LogKey {
    signer: StandardSigner,
    verifier_key: String,
}

impl std::fmt::Debug for LogKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogKey")
            .field("verifier_key", &self.verifier_key)
            .finish_non_exhaustive()
    }
}

/// A head read from a checkpoint whose signature checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedHead {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

const ALG_ED25519: u8 = 1;

/// Whether `origin` can name a log (and its key): non-empty, without
/// spaces or '+' (C2SP signed-note key names).
pub fn is_origin_valid(origin: &str) -> bool {
    signed_note::is_key_name_valid(origin)
}

impl LogKey {
    /// The key for `origin` from a 32-byte Ed25519 seed.
    pub fn from_seed(origin: &str, seed: &[u8; 32]) -> Result<Self, TransparencyError> {
        if !is_origin_valid(origin) {
            return Err(TransparencyError::Checkpoint(format!(
                "{origin:?} cannot name a log: no spaces or '+'"
            )));
        }
        let signing = ed25519_dalek_note::SigningKey::from_bytes(seed);
        let verifier_key = signed_note::new_ed25519_verifier_key(origin, &signing.verifying_key());
        let public = [&[ALG_ED25519][..], signing.verifying_key().as_bytes()].concat();
        let private = [&[ALG_ED25519][..], seed].concat();
        let skey = format!(
            "PRIVATE+KEY+{origin}+{:08x}+{}",
            signed_note::key_id(origin, &public),
            STANDARD.encode(private)
        );
        let signer = StandardSigner::new(&skey)
            .map_err(|err| TransparencyError::Checkpoint(err.to_string()))?;
        Ok(Self {
            signer,
            verifier_key,
        })
    }

    /// The verifier key (`<origin>+<key id>+<base64 key>`), as Go's
    /// `note.NewVerifier` reads it.
    pub fn verifier_key(&self) -> &str {
        &self.verifier_key
    }

    /// The signed checkpoint of the log at `size` leaves with `root`.
    pub fn sign(&self, size: u64, root: Hash) -> Result<String, TransparencyError> {
        use signed_note::Signer;
        let checkpoint = Checkpoint::new(self.signer.name(), size, root, "")
            .map_err(|err| TransparencyError::Checkpoint(err.to_string()))?;
        let mut note = Note::new(&checkpoint.to_bytes(), &[])
            .map_err(|err| TransparencyError::Checkpoint(err.to_string()))?;
        note.add_sigs(&[&self.signer])
            .map_err(|err| TransparencyError::Checkpoint(err.to_string()))?;
        String::from_utf8(note.to_bytes())
            .map_err(|err| TransparencyError::Checkpoint(err.to_string()))
    }
}

/// Reads a signed checkpoint, checking its signature under `verifier_key`
/// and that it is the checkpoint of that key's log.
pub fn open(checkpoint: &str, verifier_key: &str) -> Result<SignedHead, TransparencyError> {
    let bad = |err: &dyn std::fmt::Display| TransparencyError::Checkpoint(err.to_string());
    let verifier = StandardVerifier::new(verifier_key).map_err(|e| bad(&e))?;
    let name = {
        use signed_note::Verifier;
        verifier.name().to_owned()
    };
    let note = Note::from_bytes(checkpoint.as_bytes()).map_err(|e| bad(&e))?;
    note.verify(&VerifierList::new(vec![Box::new(verifier)]))
        .map_err(|e| bad(&e))?;
    let head = Checkpoint::from_bytes(note.text()).map_err(|e| bad(&e))?;
    if head.origin() != name {
        return Err(TransparencyError::Checkpoint(format!(
            "the checkpoint is of {:?}, not of {name:?}",
            head.origin()
        )));
    }
    Ok(SignedHead {
        origin: head.origin().to_owned(),
        size: head.size(),
        root: *head.hash(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_opens_under_its_key_only_and_names_its_head() {
        let key = LogKey::from_seed("slaproof.test/log/t1", &[7; 32]).unwrap();
        let root = tlog_tiles::record_hash(b"x");
        let note = key.sign(12, root).unwrap();
        assert!(note.starts_with("slaproof.test/log/t1\n12\n"), "{note}");
        assert!(note.contains("\n\u{2014} slaproof.test/log/t1 "), "{note}");
        let head = open(&note, key.verifier_key()).unwrap();
        assert_eq!((head.size, head.root), (12, root));

        let other = LogKey::from_seed("slaproof.test/log/t1", &[8; 32]).unwrap();
        assert!(open(&note, other.verifier_key()).is_err());
        let tampered = note.replacen("\n12\n", "\n13\n", 1);
        assert!(open(&tampered, key.verifier_key()).is_err());
        assert!(LogKey::from_seed("with space", &[7; 32]).is_err());
    }
}
