//! Proving and verifying end to end, key storage, and refusal of every wrong public input or tampered proof.

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_ff::One;
use slaproof_circuits::keys::{KeygenStage, key_paths, load_manifest};
use slaproof_circuits::statement::Statement;
use slaproof_circuits::{
    CircuitError, CircuitKeys, ContextHash, SlaProof, build, generate_keys, keys_from_stored,
    load_keys, load_verifier, prove, verifier_from_stored, verify,
};

mod common;

fn keys64() -> &'static CircuitKeys {
    static KEYS: OnceLock<CircuitKeys> = OnceLock::new();
    KEYS.get_or_init(|| CircuitKeys::setup(64).unwrap())
}

fn context() -> ContextHash {
    common::context_of("availability")
}

/// Availability: 0 is good, 1 is bad; 9995 good of 10000 at q = 99.95%.
fn availability() -> (Statement, slaproof_circuits::Opening) {
    build(64, &[(0, 9_995), (1, 5)], 0, 999_500, context()).unwrap()
}

#[test]
fn valid_vector_proves_and_verifies() {
    let keys = keys64();
    let (statement, opening) = availability();
    let proof = prove(keys, &statement, &opening).unwrap();
    assert!(verify(keys.verifier(), &statement, &proof).unwrap());
    let bytes = proof.to_bytes().unwrap();
    assert_eq!(bytes.len(), 128);
    let back = SlaProof::from_bytes(&bytes).unwrap();
    assert!(verify(keys.verifier(), &statement, &back).unwrap());
    // The statement survives its JSON form.
    let json = serde_json::to_string(&statement.to_json()).unwrap();
    let parsed = Statement::from_json(&serde_json::from_str(&json).unwrap()).unwrap();
    assert!(verify(keys.verifier(), &parsed, &proof).unwrap());
}

#[test]
fn latency_vector_with_boundary_value_proves() {
    let keys = keys64();
    let pairs: Vec<(u64, u64)> = (0..64)
        .map(|i| (if i == 0 { 51 } else { 50 }, 100))
        .collect();
    // 63 of 64 at exactly T = 50 count as good: 984,375 ppm.
    let (statement, opening) = build(64, &pairs, 50, 984_375, context()).unwrap();
    let proof = prove(keys, &statement, &opening).unwrap();
    assert!(verify(keys.verifier(), &statement, &proof).unwrap());
    let (statement, opening) = build(64, &pairs, 50, 984_376, context()).unwrap();
    assert!(matches!(
        prove(keys, &statement, &opening),
        Err(CircuitError::StatementFalse)
    ));
}

#[test]
fn wrong_public_inputs_are_refused() {
    let keys = keys64();
    let (statement, opening) = availability();
    let proof = prove(keys, &statement, &opening).unwrap();
    let variants = [
        Statement::new(
            64,
            statement.commitment() + Fr::one(),
            0,
            999_500,
            context(),
        )
        .unwrap(),
        Statement::new(64, statement.commitment(), 1, 999_500, context()).unwrap(),
        Statement::new(64, statement.commitment(), 0, 999_000, context()).unwrap(),
        Statement::new(
            64,
            statement.commitment(),
            0,
            999_500,
            ContextHash::of(&common::claim("availability", 1_796_083_200)),
        )
        .unwrap(),
    ];
    for wrong in variants {
        assert!(
            !verify(keys.verifier(), &wrong, &proof).unwrap(),
            "{wrong:?}"
        );
    }
}

#[test]
fn tampered_proof_is_refused() {
    let keys = keys64();
    let (statement, opening) = availability();
    let proof = prove(keys, &statement, &opening).unwrap();
    let bytes = proof.to_bytes().unwrap();
    for position in [0, 40, 100, 127] {
        let mut tampered = bytes.clone();
        tampered[position] ^= 1;
        // A flipped bit either leaves the curve or gives another point.
        if let Ok(p) = SlaProof::from_bytes(&tampered) {
            assert!(
                !verify(keys.verifier(), &statement, &p).unwrap(),
                "byte {position}"
            );
        }
    }
    // Another statement's valid proof does not carry over.
    let (other, other_opening) = availability();
    let other_proof = prove(keys, &other, &other_opening).unwrap();
    assert!(!verify(keys.verifier(), &statement, &other_proof).unwrap());
    assert!(SlaProof::from_bytes(&bytes[..127]).is_err());
}

#[test]
fn false_or_mismatched_statements_are_not_proven() {
    let keys = keys64();
    // 9994 of 10000: just under 99.95%.
    let (statement, opening) = build(64, &[(0, 9_994), (1, 6)], 0, 999_500, context()).unwrap();
    assert!(matches!(
        prove(keys, &statement, &opening),
        Err(CircuitError::StatementFalse)
    ));
    let (statement, opening) = build(64, &[(0, 0)], 0, 0, context()).unwrap();
    assert!(matches!(
        prove(keys, &statement, &opening),
        Err(CircuitError::ZeroTotalWeight)
    ));
    let (statement, _) = availability();
    let (_, other_opening) = availability();
    assert!(matches!(
        prove(keys, &statement, &other_opening),
        Err(CircuitError::OpeningMismatch)
    ));
    assert!(matches!(
        build(64, &[(1 << 32, 1)], 0, 1, context()),
        Err(CircuitError::ValueOutOfRange { index: 0, .. })
    ));
    assert!(matches!(
        build(64, &[(0, 1), (0, 1 << 40)], 0, 1, context()),
        Err(CircuitError::WeightOutOfRange { index: 1, .. })
    ));
    assert!(matches!(
        build(64, &[(0, 1)], 0, 1_000_001, context()),
        Err(CircuitError::QuotaOutOfRange { .. })
    ));
    assert!(matches!(
        build(1, &[(0, 1), (0, 1)], 0, 1, context()),
        Err(CircuitError::TooManyPairs { .. })
    ));
}

#[test]
fn debug_never_prints_private_values() {
    let (_, opening) = build(64, &[(123_456_789, 987_654_321)], 0, 1, context()).unwrap();
    let printed = format!("{opening:?}");
    assert!(!printed.contains("123456789") && !printed.contains("987654321"));
    assert!(!printed.contains(&opening.salt().to_string()));
    let (statement, opening) = build(64, &[(123_456_789, 987_654_321)], 0, 1, context()).unwrap();
    let circuit = slaproof_circuits::ThresholdCircuit::new(&statement, &opening);
    let printed = format!("{circuit:?}");
    assert!(!printed.contains("123456789") && !printed.contains(&opening.salt().to_string()));
}

#[test]
fn keys_are_stored_checked_and_never_regenerated() {
    let dir = tempfile::tempdir().unwrap();
    let mut stages = Vec::new();
    let manifest = generate_keys(dir.path(), 64, &mut |p| stages.push(p.stage)).unwrap();
    assert_eq!(stages.first(), Some(&KeygenStage::Synthesizing));
    assert!(stages.contains(&KeygenStage::Setup { constraints: 8_189 }));
    assert_eq!(stages.last(), Some(&KeygenStage::Done));
    assert_eq!(manifest.constraints, 8_189);
    assert_eq!(load_manifest(dir.path(), 64).unwrap(), manifest);

    let keys = load_keys(dir.path(), 64).unwrap();
    let verifier = load_verifier(dir.path(), 64).unwrap();
    assert_eq!(verifier.sha256().unwrap(), manifest.verifying_key.sha256);
    let (statement, opening) = availability();
    let proof = prove(&keys, &statement, &opening).unwrap();
    assert!(verify(&verifier, &statement, &proof).unwrap());

    // The same keys as stored in a database: manifest plus bytes.
    let (_, pk_path, vk_path) = key_paths(dir.path(), 64);
    let pk_bytes = std::fs::read(&pk_path).unwrap();
    let vk_bytes = std::fs::read(&vk_path).unwrap();
    let stored = keys_from_stored(&manifest, &pk_bytes, &vk_bytes).unwrap();
    assert_eq!(stored.verifier().verifying_key(), verifier.verifying_key());
    assert!(
        verify(
            &verifier_from_stored(&manifest, &vk_bytes).unwrap(),
            &statement,
            &proof
        )
        .unwrap()
    );
    assert!(matches!(
        keys_from_stored(&manifest, &vk_bytes, &vk_bytes),
        Err(CircuitError::KeyHashMismatch { .. })
    ));

    // A second generation refuses rather than replacing anchored keys.
    assert!(matches!(
        generate_keys(dir.path(), 64, &mut |_| {}),
        Err(CircuitError::KeysExist { .. })
    ));
    // Missing keys are an error naming the command, never a silent setup.
    match load_keys(dir.path(), 1024) {
        Err(e @ CircuitError::KeysMissing { .. }) => {
            assert!(
                e.to_string()
                    .contains("slaproof keys generate --slots 1024")
            )
        }
        other => panic!("{other:?}"),
    }
    // A changed key file is refused by its hash.
    let (_, pk_path, vk_path) = key_paths(dir.path(), 64);
    let mut vk = std::fs::read(&vk_path).unwrap();
    vk[10] ^= 1;
    std::fs::write(&vk_path, &vk).unwrap();
    assert!(matches!(
        load_verifier(dir.path(), 64),
        Err(CircuitError::KeyHashMismatch { .. })
    ));
    let mut pk = std::fs::read(&pk_path).unwrap();
    pk[10] ^= 1;
    std::fs::write(&pk_path, &pk).unwrap();
    assert!(matches!(
        load_keys(dir.path(), 64),
        Err(CircuitError::KeyHashMismatch { .. })
    ));
}

#[test]
fn size_1024_proves_and_verifies() {
    let keys = CircuitKeys::setup(1024).unwrap();
    let pairs: Vec<(u64, u64)> = (0..1024u64).map(|i| (i % 100, 1 + i % 7)).collect();
    let (statement, opening) = build(1024, &pairs, 89, 900_000, context()).unwrap();
    assert!(opening.meets(89, 900_000));
    let proof = prove(&keys, &statement, &opening).unwrap();
    assert!(verify(keys.verifier(), &statement, &proof).unwrap());
    let wrong = Statement::new(1024, statement.commitment(), 88, 900_000, context()).unwrap();
    assert!(!verify(keys.verifier(), &wrong, &proof).unwrap());
    // A 64-slot key cannot judge a 1024-slot statement.
    assert!(matches!(
        verify(keys64().verifier(), &statement, &proof),
        Err(CircuitError::SizeMismatch { .. })
    ));
}
