//! The auditor's bundle of an anchored attestation: snarkjs's three files
//! and `statement.json`, made by the worker when it anchors (it holds the
//! key, the proof and the anchor then) and stored with the attestation, so
//! that any replica hands it out and `slaproof verify` or
//! `snarkjs groth16 verify` check it with no access to the platform.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use slaproof_circuits::export::{snarkjs_proof, snarkjs_public, snarkjs_verification_key};
use slaproof_circuits::{SlaProof, Statement, VerifierKey};

use crate::bundle::StatementFile;
use crate::error::AttestationError;

/// The files of a bundle, by name.
pub const FILES: [&str; 4] = [
    "verification_key.json",
    "proof.json",
    "public.json",
    "statement.json",
];

/// The bundle's files as one JSON object, file name → content.
pub fn bundle(
    verifier: &VerifierKey,
    statement: &Statement,
    proof: &SlaProof,
    file: &StatementFile,
) -> Value {
    let mut files = BTreeMap::new();
    files.insert(FILES[0], snarkjs_verification_key(verifier.verifying_key()));
    files.insert(FILES[1], snarkjs_proof(proof));
    files.insert(FILES[2], snarkjs_public(statement));
    files.insert(
        FILES[3],
        serde_json::to_value(file).expect("a statement file serialises"),
    );
    serde_json::to_value(files).expect("JSON values serialise")
}

/// Writes a stored bundle's files into `dir`.
pub fn write(bundle: &Value, dir: &Path) -> Result<(), AttestationError> {
    std::fs::create_dir_all(dir).map_err(|e| AttestationError::io(dir, e))?;
    for name in FILES {
        let content = bundle
            .get(name)
            .ok_or_else(|| AttestationError::Invalid(format!("the bundle has no {name}")))?;
        let path = dir.join(name);
        let mut text = serde_json::to_string_pretty(content).expect("JSON values serialise");
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| AttestationError::io(&path, e))?;
    }
    Ok(())
}
