//! Proving and verifying a statement, and a proof's compact byte form.

use ark_bn254::Bn254;
use ark_groth16::{Groth16, Proof};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

use crate::circuit::{PublicValues, ThresholdCircuit};
use crate::daily;
use crate::error::CircuitError;
use crate::keys::{CircuitKeys, VerifierKey, sha256_hex};
use crate::statement::ContextHash;
use crate::statement::{Opening, Statement};

/// Compressed size of a BN254 Groth16 proof: A (32), B (64), C (32).
pub(crate) const PROOF_BYTES: usize = 128;

/// A Groth16 proof of one statement.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaProof(pub(crate) Proof<Bn254>);

impl SlaProof {
    /// Compressed bytes: what is stored and what the anchor hashes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CircuitError> {
        let mut out = Vec::with_capacity(PROOF_BYTES);
        self.0.serialize_compressed(&mut out)?;
        Ok(out)
    }

    /// Parses compressed bytes, checking that each point is on its curve and
    /// in the right subgroup.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CircuitError> {
        if bytes.len() != PROOF_BYTES {
            return Err(CircuitError::Malformed {
                field: "proof",
                reason: format!("{} bytes, expected {PROOF_BYTES}", bytes.len()),
            });
        }
        Ok(Self(Proof::deserialize_compressed(bytes)?))
    }

    /// sha256 of the compressed proof, hex.
    pub fn sha256(&self) -> Result<String, CircuitError> {
        Ok(sha256_hex(&self.to_bytes()?))
    }

    pub fn groth16(&self) -> &Proof<Bn254> {
        &self.0
    }
}

/// Proves `statement` from its opening. Refuses, before any proving work,
/// an opening that does not match the commitment or does not meet the
/// threshold fraction: Groth16 would otherwise return a proof that simply
/// fails to verify.
pub fn prove(
    keys: &CircuitKeys,
    statement: &Statement,
    opening: &Opening,
) -> Result<SlaProof, CircuitError> {
    if keys.circuit() != crate::keys::Circuit::Threshold {
        return Err(CircuitError::Malformed {
            field: "keys",
            reason: "a vector is proven with threshold-circuit keys (daily periods: daily::prove_period)".into(),
        });
    }
    if statement.slots() != keys.slots() {
        return Err(CircuitError::SizeMismatch {
            key: keys.slots(),
            statement: statement.slots(),
        });
    }
    if opening.slots().len() != statement.slots() || opening.commitment()? != statement.commitment()
    {
        return Err(CircuitError::OpeningMismatch);
    }
    let (_, total) = opening.weights(statement.threshold());
    if total == 0 {
        return Err(CircuitError::ZeroTotalWeight);
    }
    if !opening.meets(statement.threshold(), statement.quota_ppm()) {
        return Err(CircuitError::StatementFalse);
    }
    Ok(SlaProof(keys.prove_circuit(ThresholdCircuit::new(
        statement, opening,
    ))?))
}

/// Checks a proof against a statement. `Ok(false)` is a proof that does not
/// verify; an error is a statement this key cannot judge.
pub fn verify(
    verifier: &VerifierKey,
    statement: &Statement,
    proof: &SlaProof,
) -> Result<bool, CircuitError> {
    if statement.slots() != verifier.slots() {
        return Err(CircuitError::SizeMismatch {
            key: verifier.slots(),
            statement: statement.slots(),
        });
    }
    Ok(Groth16::<Bn254>::verify_proof(
        verifier.prepared(),
        &proof.0,
        &statement.public_inputs(),
    )?)
}

/// The statement of a period proven over `openings` in a `size`-day
/// circuit ([`daily::statement`] as a [`Statement`], whose slot count is the
/// circuit's day count).
pub fn period_statement(
    size: usize,
    context: ContextHash,
    threshold: u32,
    quota_ppm: u32,
    openings: &[daily::DayOpening],
) -> Result<Statement, CircuitError> {
    let public = daily::statement(size, context, threshold, quota_ppm, openings)?;
    Statement::new(size, public.commitment, threshold, quota_ppm, context)
}

/// Proves `statement` (from [`period_statement`]) with daily keys of its
/// size. Refuses, before any proving work, other keys and openings whose
/// aggregate is not the statement's commitment.
pub fn prove_period(
    keys: &CircuitKeys,
    statement: &Statement,
    openings: &[daily::DayOpening],
) -> Result<SlaProof, CircuitError> {
    if keys.circuit() != crate::keys::Circuit::Daily {
        return Err(CircuitError::Malformed {
            field: "keys",
            reason: "a period over daily commitments is proven with daily-circuit keys".into(),
        });
    }
    if statement.slots() != keys.slots() {
        return Err(CircuitError::SizeMismatch {
            key: keys.slots(),
            statement: statement.slots(),
        });
    }
    let public = daily::statement(
        statement.slots(),
        statement.context(),
        statement.threshold(),
        statement.quota_ppm(),
        openings,
    )?;
    if public.commitment != statement.commitment() {
        return Err(CircuitError::OpeningMismatch);
    }
    Ok(SlaProof(prove_days(keys, public, openings)?))
}

/// Proves the daily circuit over `public` and `openings` as given, with the
/// reduction `keys` were set up for; [`prove_period`] checks them first.
pub fn prove_days(
    keys: &CircuitKeys,
    public: PublicValues,
    openings: &[daily::DayOpening],
) -> Result<Proof<Bn254>, CircuitError> {
    let circuit = daily::DailyCircuit::from_raw(keys.slots(), public, openings.to_vec());
    keys.prove_circuit(circuit)
}
