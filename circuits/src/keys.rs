//! Proving and verifying keys per circuit size: generated once, stored compressed beside their sha256, checked on load, never regenerated behind the caller's back.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ark_bn254::{Bn254, Fr};
use ark_groth16::{Groth16, PreparedVerifyingKey, Proof, ProvingKey, VerifyingKey};
use ark_relations::r1cs::ConstraintSynthesizer;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_snark::SNARK;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::circuit::ThresholdCircuit;
use crate::daily::DailyCircuit;
use crate::error::CircuitError;
use crate::random::os_rng;
use crate::statement::PUBLIC_INPUTS;
use crate::zkey::CircomReduction;

pub use crate::catalog::{CIRCUIT_ID, Circuit};

/// A single-party setup of `circuit` at `size`.
fn setup(
    circuit: Circuit,
    size: usize,
    rng: &mut ark_std::rand::rngs::StdRng,
) -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), CircuitError> {
    Ok(match circuit {
        Circuit::Threshold => {
            Groth16::<Bn254>::circuit_specific_setup(ThresholdCircuit::blank(size), rng)?
        }
        Circuit::Daily => Groth16::<Bn254>::circuit_specific_setup(DailyCircuit::blank(size), rng)?,
    })
}

/// One stored key file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyFile {
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
}

/// Written last, so its presence means both keys are complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyManifest {
    pub circuit: String,
    pub slots: usize,
    pub constraints: usize,
    pub public_inputs: Vec<String>,
    pub proving_key: KeyFile,
    pub verifying_key: KeyFile,
    /// Who set the key up; absent in manifests written before ceremonies,
    /// which were all single-party.
    #[serde(default)]
    pub provenance: Provenance,
}

/// Who set a key up, and so who could forge proofs with it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Provenance {
    /// One party's setup (`slaproof keys generate`): whoever ran it can
    /// forge a proof of any statement. For development only.
    #[default]
    Development,
    /// The final key of a multi-party snarkjs ceremony: sound if any one
    /// contributor destroyed its randomness (`docs/CIRCUITS.md`).
    Ceremony(Ceremony),
}

impl Provenance {
    /// What the auditor is told about who could forge.
    pub fn describe(&self) -> String {
        match self {
            Self::Development => "development key: whoever ran the setup can forge".to_owned(),
            Self::Ceremony(c) => format!(
                "ceremony key: {} steps ({}); sound if any one contributor was honest",
                c.contributions.len(),
                c.contributions
                    .iter()
                    .map(|c| match &c.beacon {
                        Some(_) => "beacon".to_owned(),
                        None if c.name.is_empty() => "unnamed".to_owned(),
                        None => c.name.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a ceremony's final key records of how it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ceremony {
    /// sha256 of the circuit's `.r1cs` (`slaproof keys r1cs`), rebuilt
    /// from source when the key was imported.
    pub r1cs_sha256: String,
    /// sha256 of the final `.zkey` as imported.
    pub zkey_sha256: String,
    /// sha256 of the phase-1 `.ptau` the ceremony verified against, when
    /// the import was told it (`slaproof ceremony finalize`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptau_sha256: Option<String>,
    /// Every phase-2 step, in order.
    pub contributions: Vec<crate::zkey::Contribution>,
}

/// Where key generation is; the setup itself reports no finer progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeygenStage {
    /// Counting constraints of the blank circuit.
    Synthesizing,
    /// Groth16 setup: sampling toxic waste and computing the keys; the long step.
    Setup { constraints: usize },
    /// Writing the compressed proving key.
    WritingProvingKey,
    /// Writing the verifying key and the manifest.
    WritingVerifyingKey,
    /// Finished.
    Done,
}

/// A progress report for `slaproof keys generate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeygenProgress {
    pub slots: usize,
    pub stage: KeygenStage,
    pub elapsed: Duration,
}

/// A verifying key ready to check proofs for one size.
#[derive(Clone)]
pub struct VerifierKey {
    circuit: Circuit,
    slots: usize,
    vk: VerifyingKey<Bn254>,
    prepared: PreparedVerifyingKey<Bn254>,
}

impl std::fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifierKey")
            .field("circuit", &self.circuit)
            .field("slots", &self.slots)
            .finish_non_exhaustive()
    }
}

impl VerifierKey {
    /// A threshold-circuit verifying key of `slots` slots.
    pub fn new(slots: usize, vk: VerifyingKey<Bn254>) -> Self {
        Self::of(Circuit::Threshold, slots, vk)
    }
    /// A verifying key of `circuit` at `size`.
    pub fn of(circuit: Circuit, size: usize, vk: VerifyingKey<Bn254>) -> Self {
        let prepared = ark_groth16::prepare_verifying_key(&vk);
        Self {
            circuit,
            slots: size,
            vk,
            prepared,
        }
    }
    /// The circuit's size: slots, or days for the daily circuit.
    pub fn slots(&self) -> usize {
        self.slots
    }
    pub fn circuit(&self) -> Circuit {
        self.circuit
    }
    pub fn verifying_key(&self) -> &VerifyingKey<Bn254> {
        &self.vk
    }
    pub(crate) fn prepared(&self) -> &PreparedVerifyingKey<Bn254> {
        &self.prepared
    }
    /// Compressed bytes, as stored and as hashed in the manifest.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CircuitError> {
        let mut out = Vec::new();
        self.vk.serialize_compressed(&mut out)?;
        Ok(out)
    }
    /// sha256 of the compressed verifying key, hex: what the anchor records.
    pub fn sha256(&self) -> Result<String, CircuitError> {
        Ok(sha256_hex(&self.to_bytes()?))
    }
}

/// Both keys for one size.
#[derive(Clone)]
pub struct CircuitKeys {
    pk: ProvingKey<Bn254>,
    verifier: VerifierKey,
    provenance: Provenance,
}

impl std::fmt::Debug for CircuitKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitKeys")
            .field("circuit", &self.verifier.circuit)
            .field("slots", &self.verifier.slots)
            .finish_non_exhaustive()
    }
}

impl CircuitKeys {
    /// A fresh circuit-specific setup in memory. Whoever can read this
    /// process's memory during the call could forge proofs for these keys;
    /// see `docs/CIRCUITS.md`.
    pub fn setup(slots: usize) -> Result<Self, CircuitError> {
        Self::setup_of(Circuit::Threshold, slots)
    }

    /// [`CircuitKeys::setup`] for any circuit.
    pub fn setup_of(circuit: Circuit, size: usize) -> Result<Self, CircuitError> {
        circuit.check_size(size)?;
        let mut rng = os_rng();
        let (pk, vk) = setup(circuit, size, &mut rng)?;
        Ok(Self {
            pk,
            verifier: VerifierKey::of(circuit, size, vk),
            provenance: Provenance::Development,
        })
    }

    /// Keys of `circuit` at `size` read from a ceremony's final `.zkey`
    /// (checked against the circuit: [`crate::zkey::read`]).
    pub fn from_zkey(circuit: Circuit, size: usize, zkey: &[u8]) -> Result<Self, CircuitError> {
        let key = crate::zkey::read(zkey, circuit, size)?;
        let r1cs = crate::r1cs::export(circuit, size)?;
        let vk = key.pk.vk.clone();
        Ok(Self {
            pk: key.pk,
            verifier: VerifierKey::of(circuit, size, vk),
            provenance: Provenance::Ceremony(Ceremony {
                r1cs_sha256: r1cs.sha256(),
                zkey_sha256: sha256_hex(zkey),
                ptau_sha256: None,
                contributions: key.contributions,
            }),
        })
    }

    /// Who set these keys up.
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// A zero-knowledge proof of `circuit` with the reduction these keys
    /// were set up for: arkworks' own for a development setup, circom's for
    /// a snarkjs ceremony.
    pub(crate) fn prove_circuit<C: ConstraintSynthesizer<Fr>>(
        &self,
        circuit: C,
    ) -> Result<Proof<Bn254>, CircuitError> {
        let mut rng = os_rng();
        Ok(match self.provenance {
            Provenance::Development => {
                Groth16::<Bn254>::create_random_proof_with_reduction(circuit, &self.pk, &mut rng)?
            }
            Provenance::Ceremony(_) => {
                Groth16::<Bn254, CircomReduction>::create_random_proof_with_reduction(
                    circuit, &self.pk, &mut rng,
                )?
            }
        })
    }

    pub fn slots(&self) -> usize {
        self.verifier.slots
    }
    pub fn circuit(&self) -> Circuit {
        self.verifier.circuit
    }
    pub fn proving_key(&self) -> &ProvingKey<Bn254> {
        &self.pk
    }
    pub fn verifier(&self) -> &VerifierKey {
        &self.verifier
    }
}

/// Exact number of R1CS constraints for `slots` slots, by synthesis alone.
pub fn constraint_count(slots: usize) -> Result<usize, CircuitError> {
    Circuit::Threshold.constraint_count(slots)
}

/// Paths of the manifest, proving key and verifying key for one size.
pub fn key_paths(dir: &Path, slots: usize) -> (PathBuf, PathBuf, PathBuf) {
    circuit_key_paths(dir, Circuit::Threshold, slots)
}

/// [`key_paths`] for any circuit: `<name>-<size>.{manifest.json,pk,vk}`.
pub fn circuit_key_paths(dir: &Path, circuit: Circuit, size: usize) -> (PathBuf, PathBuf, PathBuf) {
    let stem = format!("{}-{size}", circuit.name());
    (
        dir.join(format!("{stem}.manifest.json")),
        dir.join(format!("{stem}.pk")),
        dir.join(format!("{stem}.vk")),
    )
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Writes through a temporary file and a rename, so a crash never leaves a
/// half-written key under the real name.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CircuitError> {
    let tmp = path.with_extension("partial");
    let mut file = fs::File::create(&tmp).map_err(CircuitError::io(&tmp))?;
    file.write_all(bytes).map_err(CircuitError::io(&tmp))?;
    file.sync_all().map_err(CircuitError::io(&tmp))?;
    fs::rename(&tmp, path).map_err(CircuitError::io(path))
}

/// `slaproof keys generate --slots N`: runs the setup for `slots` slots and
/// stores `threshold-N.pk`, `threshold-N.vk` and `threshold-N.manifest.json`
/// in `dir`. Refuses to overwrite existing keys: proofs already anchored
/// against the old verifying key would stop verifying.
pub fn generate_keys(
    dir: &Path,
    slots: usize,
    progress: &mut dyn FnMut(KeygenProgress),
) -> Result<KeyManifest, CircuitError> {
    generate_circuit_keys(dir, Circuit::Threshold, slots, progress)
}

/// [`generate_keys`] for any circuit (`slaproof keys generate --daily N`).
pub fn generate_circuit_keys(
    dir: &Path,
    circuit: Circuit,
    slots: usize,
    progress: &mut dyn FnMut(KeygenProgress),
) -> Result<KeyManifest, CircuitError> {
    circuit.check_size(slots)?;
    let started = Instant::now();
    let mut report = |stage| {
        progress(KeygenProgress {
            slots,
            stage,
            elapsed: started.elapsed(),
        })
    };
    make_room(dir, circuit, slots)?;
    report(KeygenStage::Synthesizing);
    let constraints = circuit.constraint_count(slots)?;
    report(KeygenStage::Setup { constraints });
    let keys = CircuitKeys::setup_of(circuit, slots)?;
    let manifest = store(dir, &keys, constraints, &mut report)?;
    report(KeygenStage::Done);
    Ok(manifest)
}

/// `slaproof ceremony finalize`: stores the keys of a ceremony's final
/// `.zkey` for `circuit` at `size` in `dir`, beside a manifest naming the
/// ceremony (and its phase 1, when known). Refuses a key for any other
/// circuit, and to overwrite. The contributions are snarkjs's to verify.
pub fn import_ceremony_keys(
    dir: &Path,
    circuit: Circuit,
    size: usize,
    zkey: &[u8],
    ptau_sha256: Option<String>,
) -> Result<KeyManifest, CircuitError> {
    circuit.check_size(size)?;
    make_room(dir, circuit, size)?;
    let mut keys = CircuitKeys::from_zkey(circuit, size, zkey)?;
    if let Provenance::Ceremony(c) = &mut keys.provenance {
        c.ptau_sha256 = ptau_sha256;
    }
    let constraints = circuit.constraint_count(size)?;
    store(dir, &keys, constraints, &mut |_| {})
}

/// Refuses to overwrite keys (proofs anchored under them would stop
/// verifying) and creates `dir`.
fn make_room(dir: &Path, circuit: Circuit, size: usize) -> Result<(), CircuitError> {
    let (manifest_path, _, _) = circuit_key_paths(dir, circuit, size);
    if manifest_path.exists() {
        return Err(CircuitError::KeysExist {
            slots: size,
            path: manifest_path,
        });
    }
    fs::create_dir_all(dir).map_err(CircuitError::io(dir))
}

/// Writes both keys, then the manifest that says they are complete.
fn store(
    dir: &Path,
    keys: &CircuitKeys,
    constraints: usize,
    report: &mut dyn FnMut(KeygenStage),
) -> Result<KeyManifest, CircuitError> {
    let (circuit, slots) = (keys.circuit(), keys.slots());
    let (manifest_path, pk_path, vk_path) = circuit_key_paths(dir, circuit, slots);
    report(KeygenStage::WritingProvingKey);
    let mut pk_bytes = Vec::with_capacity(keys.pk.compressed_size());
    keys.pk.serialize_compressed(&mut pk_bytes)?;
    write_atomically(&pk_path, &pk_bytes)?;

    report(KeygenStage::WritingVerifyingKey);
    let vk_bytes = keys.verifier.to_bytes()?;
    write_atomically(&vk_path, &vk_bytes)?;
    let file_name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let manifest = KeyManifest {
        circuit: circuit.id().to_owned(),
        slots,
        constraints,
        public_inputs: PUBLIC_INPUTS.iter().map(|s| (*s).to_owned()).collect(),
        proving_key: KeyFile {
            file: file_name(&pk_path),
            sha256: sha256_hex(&pk_bytes),
            bytes: pk_bytes.len() as u64,
        },
        verifying_key: KeyFile {
            file: file_name(&vk_path),
            sha256: sha256_hex(&vk_bytes),
            bytes: vk_bytes.len() as u64,
        },
        provenance: keys.provenance.clone(),
    };
    write_atomically(&manifest_path, &serde_json::to_vec_pretty(&manifest)?)?;
    Ok(manifest)
}

/// Reads and checks the manifest for `slots` slots.
pub fn load_manifest(dir: &Path, slots: usize) -> Result<KeyManifest, CircuitError> {
    load_circuit_manifest(dir, Circuit::Threshold, slots)
}

/// [`load_manifest`] for any circuit.
pub fn load_circuit_manifest(
    dir: &Path,
    circuit: Circuit,
    slots: usize,
) -> Result<KeyManifest, CircuitError> {
    let (manifest_path, _, _) = circuit_key_paths(dir, circuit, slots);
    if !manifest_path.exists() {
        return Err(CircuitError::KeysMissing {
            slots,
            path: manifest_path,
        });
    }
    let bytes = fs::read(&manifest_path).map_err(CircuitError::io(&manifest_path))?;
    let manifest: KeyManifest = serde_json::from_slice(&bytes)?;
    if manifest.slots != slots {
        return Err(CircuitError::ManifestMismatch {
            path: manifest_path,
            expected: slots,
            found: manifest.slots,
        });
    }
    if manifest.circuit != circuit.id() {
        return Err(CircuitError::Malformed {
            field: "manifest.circuit",
            reason: format!("{} is not {}", manifest.circuit, circuit.id()),
        });
    }
    Ok(manifest)
}

fn read_checked(dir: &Path, file: &KeyFile) -> Result<Vec<u8>, CircuitError> {
    // The manifest names a file in the same directory, never a path.
    if file.file.contains(['/', '\\']) || file.file.starts_with('.') {
        return Err(CircuitError::Malformed {
            field: "manifest.file",
            reason: format!("{} must be a plain file name", file.file),
        });
    }
    let path = dir.join(&file.file);
    let bytes = fs::read(&path).map_err(CircuitError::io(&path))?;
    check_hash(&path, file, &bytes)?;
    Ok(bytes)
}

fn check_hash(path: &Path, file: &KeyFile, bytes: &[u8]) -> Result<(), CircuitError> {
    let actual = sha256_hex(bytes);
    if actual != file.sha256 {
        return Err(CircuitError::KeyHashMismatch {
            path: path.to_owned(),
            expected: file.sha256.clone(),
            actual,
        });
    }
    Ok(())
}

fn verifier_from_bytes(
    circuit: Circuit,
    slots: usize,
    vk_bytes: &[u8],
) -> Result<VerifierKey, CircuitError> {
    let vk = VerifyingKey::<Bn254>::deserialize_compressed(vk_bytes)?;
    Ok(VerifierKey::of(circuit, slots, vk))
}

fn keys_from_bytes(
    manifest: &KeyManifest,
    circuit: Circuit,
    pk_bytes: &[u8],
    vk_bytes: &[u8],
) -> Result<CircuitKeys, CircuitError> {
    let slots = manifest.slots;
    let verifier = verifier_from_bytes(circuit, slots, vk_bytes)?;
    // The hash matched the one recorded at generation, so the points were
    // ours and valid; re-checking hundreds of MB of curve points would cost
    // longer than the proof.
    let pk = ProvingKey::<Bn254>::deserialize_compressed_unchecked(pk_bytes)?;
    if pk.vk != verifier.vk {
        return Err(CircuitError::Malformed {
            field: "proving_key",
            reason: "its embedded verifying key differs from the stored one".to_owned(),
        });
    }
    Ok(CircuitKeys {
        pk,
        verifier,
        provenance: manifest.provenance.clone(),
    })
}

/// Loads the verifying key for `slots` slots, checking its hash.
pub fn load_verifier(dir: &Path, slots: usize) -> Result<VerifierKey, CircuitError> {
    load_circuit_verifier(dir, Circuit::Threshold, slots)
}

/// [`load_verifier`] for any circuit.
pub fn load_circuit_verifier(
    dir: &Path,
    circuit: Circuit,
    slots: usize,
) -> Result<VerifierKey, CircuitError> {
    let manifest = load_circuit_manifest(dir, circuit, slots)?;
    let bytes = read_checked(dir, &manifest.verifying_key)?;
    verifier_from_bytes(circuit, slots, &bytes)
}

/// Loads both keys for `slots` slots, checking their hashes. Never generates:
/// missing keys are an error naming the command that makes them.
pub fn load_keys(dir: &Path, slots: usize) -> Result<CircuitKeys, CircuitError> {
    load_circuit_keys(dir, Circuit::Threshold, slots)
}

/// [`load_keys`] for any circuit.
pub fn load_circuit_keys(
    dir: &Path,
    circuit: Circuit,
    slots: usize,
) -> Result<CircuitKeys, CircuitError> {
    let manifest = load_circuit_manifest(dir, circuit, slots)?;
    let vk_bytes = read_checked(dir, &manifest.verifying_key)?;
    let pk_bytes = read_checked(dir, &manifest.proving_key)?;
    keys_from_bytes(&manifest, circuit, &pk_bytes, &vk_bytes)
}

/// Keys kept elsewhere (a database row): the manifest and the two
/// compressed files' bytes, checked against the manifest's hashes.
pub fn keys_from_stored(
    manifest: &KeyManifest,
    pk_bytes: &[u8],
    vk_bytes: &[u8],
) -> Result<CircuitKeys, CircuitError> {
    let circuit = check_stored(manifest)?;
    check_hash(
        Path::new(&manifest.verifying_key.file),
        &manifest.verifying_key,
        vk_bytes,
    )?;
    check_hash(
        Path::new(&manifest.proving_key.file),
        &manifest.proving_key,
        pk_bytes,
    )?;
    keys_from_bytes(manifest, circuit, pk_bytes, vk_bytes)
}

/// A verifying key kept elsewhere, checked against the manifest's hash.
pub fn verifier_from_stored(
    manifest: &KeyManifest,
    vk_bytes: &[u8],
) -> Result<VerifierKey, CircuitError> {
    let circuit = check_stored(manifest)?;
    check_hash(
        Path::new(&manifest.verifying_key.file),
        &manifest.verifying_key,
        vk_bytes,
    )?;
    verifier_from_bytes(circuit, manifest.slots, vk_bytes)
}

fn check_stored(manifest: &KeyManifest) -> Result<Circuit, CircuitError> {
    let circuit = Circuit::of_id(&manifest.circuit).ok_or_else(|| CircuitError::Malformed {
        field: "manifest.circuit",
        reason: format!("{} is not a slaproof circuit", manifest.circuit),
    })?;
    circuit.check_size(manifest.slots)?;
    Ok(circuit)
}
