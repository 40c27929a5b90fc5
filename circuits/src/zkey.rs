//! Keys from a snarkjs ceremony: reads a Groth16 `.zkey` into an arkworks proving key, refuses one made for any other constraint system, and proves with the QAP reduction snarkjs's keys are built for.
//!
//! A `.zkey` is iden3's binary container (`zkey`, version, sections of a
//! type and a length). Its points are little-endian in Montgomery form; the
//! coefficients of its constraint section are stored times R² (so that
//! snarkjs's prover can multiply in Montgomery form). Sections, as
//! snarkjs's `zkey_utils.js` writes them: 1 the protocol (1 = Groth16),
//! 2 the Groth16 header, 3 IC, 4 the A and B coefficients, 5 A, 6 B in G1,
//! 7 B in G2, 8 C (the private wires), 9 H, 10 the contributions.
//!
//! snarkjs's H points are over the odd powers of a root of unity of twice
//! the domain (Z(x) is constant there), not over arkworks' coset of the
//! field generator: proofs with these keys use [`CircomReduction`].

use std::collections::HashMap;

use ark_bn254::{Bn254, Fq, Fq2, Fr, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_ff::{BigInt, Field, PrimeField, Zero};
use ark_groth16::r1cs_to_qap::R1CSToQAP;
use ark_groth16::{ProvingKey, VerifyingKey};
use ark_poly::EvaluationDomain;
use ark_relations::r1cs::{ConstraintMatrices, SynthesisError};
use serde::{Deserialize, Serialize};

use crate::catalog::Circuit;
use crate::error::CircuitError;

/// The constraint section's matrix numbers.
const MATRIX_A: u32 = 0;
const MATRIX_B: u32 = 1;
const GROTH16: u32 = 1;

/// One step of the ceremony, as the `.zkey` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contribution {
    /// The name its contributor gave (may be empty).
    pub name: String,
    /// A random beacon's step, with the beacon's hash, hex; `None` for a
    /// contributor's own randomness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<String>,
    /// The contribution's public key and resulting δ, as stored (hex of
    /// the raw section bytes): ties this record to the file.
    pub record: String,
}

/// A `.zkey` read and checked against slaproof's circuit.
#[derive(Debug, Clone)]
pub struct CeremonyKey {
    pub pk: ProvingKey<Bn254>,
    /// Every phase-2 step in order.
    pub contributions: Vec<Contribution>,
}

fn malformed(reason: impl Into<String>) -> CircuitError {
    CircuitError::Malformed {
        field: "zkey",
        reason: reason.into(),
    }
}

/// A reader over one section's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    section: u32,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CircuitError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let Some(end) = end else {
            return Err(malformed(format!(
                "section {} ends before its content ({} bytes)",
                self.section,
                self.bytes.len()
            )));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, CircuitError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u8(&mut self) -> Result<u8, CircuitError> {
        Ok(self.take(1)?[0])
    }

    fn limbs(&mut self) -> Result<BigInt<4>, CircuitError> {
        let b = self.take(32)?;
        let mut limbs = [0u64; 4];
        for (i, limb) in limbs.iter_mut().enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&b[i * 8..i * 8 + 8]);
            *limb = u64::from_le_bytes(word);
        }
        Ok(BigInt::new(limbs))
    }

    /// A base-field element in Montgomery form.
    fn fq(&mut self) -> Result<Fq, CircuitError> {
        let raw = self.limbs()?;
        if raw >= Fq::MODULUS {
            return Err(malformed(format!(
                "section {}: a coordinate is not below the base field's modulus",
                self.section
            )));
        }
        Ok(Fq::new_unchecked(raw))
    }

    fn g1(&mut self) -> Result<G1Affine, CircuitError> {
        let (x, y) = (self.fq()?, self.fq()?);
        if x.is_zero() && y.is_zero() {
            return Ok(G1Affine::zero());
        }
        let p = G1Affine::new_unchecked(x, y);
        // BN254's G1 has cofactor one: on the curve is in the group.
        if !p.is_on_curve() {
            return Err(malformed(format!(
                "section {}: a G1 point is not on the curve",
                self.section
            )));
        }
        Ok(p)
    }

    /// A G2 point of the verifying key: on the curve and in the group.
    fn g2(&mut self) -> Result<G2Affine, CircuitError> {
        let p = self.g2_on_curve()?;
        if !p.is_in_correct_subgroup_assuming_on_curve() {
            return Err(malformed(format!(
                "section {}: a G2 point is not in the group",
                self.section
            )));
        }
        Ok(p)
    }

    /// A G2 point of the proving key, on the curve. Not checked for the
    /// group (a subgroup check each, millions at the largest size): a bad
    /// one only makes our own proofs fail to verify.
    fn g2_on_curve(&mut self) -> Result<G2Affine, CircuitError> {
        let x = Fq2::new(self.fq()?, self.fq()?);
        let y = Fq2::new(self.fq()?, self.fq()?);
        if x.is_zero() && y.is_zero() {
            return Ok(G2Affine::zero());
        }
        let p = G2Affine::new_unchecked(x, y);
        if !p.is_on_curve() {
            return Err(malformed(format!(
                "section {}: a G2 point is not on the curve",
                self.section
            )));
        }
        Ok(p)
    }

    fn g1s(&mut self, n: usize) -> Result<Vec<G1Affine>, CircuitError> {
        (0..n).map(|_| self.g1()).collect()
    }
}

/// The sections of an iden3 binary file of type `magic`, by type.
fn sections<'a>(bytes: &'a [u8], magic: &[u8; 4]) -> Result<HashMap<u32, &'a [u8]>, CircuitError> {
    if bytes.len() < 12 || &bytes[..4] != magic {
        return Err(malformed(format!(
            "not a .{} file",
            String::from_utf8_lossy(magic)
        )));
    }
    let mut c = Cursor {
        bytes,
        at: 4,
        section: 0,
    };
    let _version = c.u32()?;
    let count = c.u32()?;
    let mut out = HashMap::new();
    for _ in 0..count {
        let kind = c.u32()?;
        let len = c.take(8)?;
        let len = u64::from_le_bytes(len.try_into().map_err(|_| malformed("a section length"))?);
        let len = usize::try_from(len).map_err(|_| malformed("a section is too long"))?;
        c.section = kind;
        let body = c.take(len)?;
        if out.insert(kind, body).is_some() {
            return Err(malformed(format!("section {kind} appears twice")));
        }
    }
    Ok(out)
}

fn section<'a>(all: &HashMap<u32, &'a [u8]>, kind: u32) -> Result<Cursor<'a>, CircuitError> {
    let bytes = all
        .get(&kind)
        .ok_or_else(|| malformed(format!("section {kind} is missing")))?;
    Ok(Cursor {
        bytes,
        at: 0,
        section: kind,
    })
}

/// Reads a snarkjs Groth16 `.zkey` for `circuit` at `size`. Refuses, by
/// name, a key over another curve, for another number of wires or public
/// inputs, another domain, or whose constraints are not exactly this
/// circuit's (its A and B coefficients are compared with the circuit's own
/// matrices). It does not check the contributions: `snarkjs zkey verify`
/// does, against the same `.r1cs` and the phase-1 file.
pub fn read(bytes: &[u8], circuit: Circuit, size: usize) -> Result<CeremonyKey, CircuitError> {
    let all = sections(bytes, b"zkey")?;
    if section(&all, 1)?.u32()? != GROTH16 {
        return Err(malformed("it is not a Groth16 key"));
    }
    let mut h = section(&all, 2)?;
    let n8q = h.u32()?;
    let q = if n8q == 32 { Some(h.limbs()?) } else { None };
    let n8r = h.u32()?;
    let r = if n8r == 32 { Some(h.limbs()?) } else { None };
    if q != Some(Fq::MODULUS) || r != Some(Fr::MODULUS) {
        return Err(malformed("it is not over BN254 (bn128)"));
    }
    let n_vars = h.u32()? as usize;
    let n_public = h.u32()? as usize;
    let domain_size = h.u32()? as usize;
    let alpha_g1 = h.g1()?;
    let beta_g1 = h.g1()?;
    let beta_g2 = h.g2()?;
    let gamma_g2 = h.g2()?;
    let delta_g1 = h.g1()?;
    let delta_g2 = h.g2()?;

    let (matrices, wires, public) = crate::r1cs::matrices(circuit, size)?;
    let want_domain = (matrices.num_constraints + public + 1).next_power_of_two();
    let expect = |what: &str, found: usize, want: usize| {
        if found == want {
            Ok(())
        } else {
            Err(malformed(format!(
                "it has {found} {what}, but the {} circuit at size {size} has {want}: a key for another r1cs",
                circuit.name()
            )))
        }
    };
    expect("wires", n_vars, wires)?;
    expect("public inputs", n_public, public)?;
    expect("as its domain size", domain_size, want_domain)?;
    check_coefficients(section(&all, 4)?, &matrices, public, circuit, size)?;

    let gamma_abc_g1 = section(&all, 3)?.g1s(n_public + 1)?;
    let a_query = section(&all, 5)?.g1s(n_vars)?;
    let b_g1_query = section(&all, 6)?.g1s(n_vars)?;
    let mut b2 = section(&all, 7)?;
    let b_g2_query = (0..n_vars)
        .map(|_| b2.g2_on_curve())
        .collect::<Result<_, _>>()?;
    let l_query = section(&all, 8)?.g1s(n_vars - n_public - 1)?;
    let h_query = section(&all, 9)?.g1s(domain_size)?;
    let contributions = contributions(section(&all, 10)?)?;

    let vk = VerifyingKey {
        alpha_g1,
        beta_g2,
        gamma_g2,
        delta_g2,
        gamma_abc_g1,
    };
    Ok(CeremonyKey {
        pk: ProvingKey {
            vk,
            beta_g1,
            delta_g1,
            a_query,
            b_g1_query,
            b_g2_query,
            h_query,
            l_query,
        },
        contributions,
    })
}

/// The zkey's A and B coefficients must be the circuit's, with snarkjs's
/// one extra A row per public wire (and the one) that keeps the inputs
/// independent.
fn check_coefficients(
    mut c: Cursor<'_>,
    m: &ConstraintMatrices<Fr>,
    public: usize,
    circuit: Circuit,
    size: usize,
) -> Result<(), CircuitError> {
    // Stored times R², read as Montgomery: the coefficient times R.
    let r = Fr::from(2u64).pow([256]);
    let key = |matrix, row: usize, wire: usize, v: Fr| {
        (matrix, row as u32, wire as u32, (v * r).into_bigint().0)
    };
    let mut expected = Vec::with_capacity(m.a_num_non_zero + m.b_num_non_zero + public + 1);
    for (row, (a, b)) in m.a.iter().zip(&m.b).enumerate() {
        expected.extend(a.iter().map(|(v, w)| key(MATRIX_A, row, *w, *v)));
        expected.extend(b.iter().map(|(v, w)| key(MATRIX_B, row, *w, *v)));
    }
    for wire in 0..=public {
        expected.push(key(MATRIX_A, m.num_constraints + wire, wire, Fr::ONE));
    }
    let n = c.u32()? as usize;
    let mut found = Vec::with_capacity(n);
    for _ in 0..n {
        let (matrix, row, wire) = (c.u32()?, c.u32()?, c.u32()?);
        let raw = c.limbs()?;
        found.push((matrix, row, wire, Fr::new_unchecked(raw).into_bigint().0));
    }
    expected.sort_unstable();
    found.sort_unstable();
    if found != expected {
        return Err(malformed(format!(
            "its constraints are not those of the {} circuit at size {size}: a key for another r1cs",
            circuit.name()
        )));
    }
    Ok(())
}

fn contributions(mut c: Cursor<'_>) -> Result<Vec<Contribution>, CircuitError> {
    c.take(64)?; // the hash of the initial key
    let n = c.u32()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let start = c.at;
        // δ after this step; the contributor's public key (g1_s, g1_sx,
        // g2_spx); the transcript hash the key was drawn over.
        let _checked = (c.g1s(3)?, c.g2_on_curve()?, c.take(64)?);
        let record = hex::encode(&c.bytes[start..c.at]);
        let kind = c.u32()?;
        let len = c.u32()? as usize;
        let mut params = Cursor {
            bytes: c.take(len)?,
            at: 0,
            section: 10,
        };
        let (mut name, mut beacon) = (String::new(), None);
        while params.at < params.bytes.len() {
            match params.u8()? {
                1 => {
                    let n = params.u8()? as usize;
                    name = String::from_utf8_lossy(params.take(n)?).into_owned();
                }
                2 => {
                    params.u8()?; // the beacon's iterations (2^n)
                }
                3 => {
                    let n = params.u8()? as usize;
                    beacon = Some(hex::encode(params.take(n)?));
                }
                other => {
                    return Err(malformed(format!(
                        "a contribution parameter of type {other}"
                    )));
                }
            }
        }
        if kind == 1 && beacon.is_none() {
            return Err(malformed("a beacon step names no beacon hash"));
        }
        out.push(Contribution {
            name,
            beacon,
            record,
        });
    }
    Ok(out)
}

/// The R1CS-to-QAP reduction of circom and snarkjs: the quotient is
/// evaluated on the odd powers of a root of unity of twice the domain,
/// where the vanishing polynomial is constant, and the key's H points
/// already carry that constant. Keys come from snarkjs only: this
/// reduction does not run a setup.
#[derive(Debug, Clone, Copy)]
pub struct CircomReduction;

/// One row of a constraint matrix times the assignment. Not ark-groth16's
/// `evaluate_constraint`: that one splits every row over rayon's pool, which
/// from a loop over rows costs several times the proof's own reduction
/// (`docs/BENCHMARKS.md`, "Setup ceremony").
fn row_times<F: PrimeField>(row: &[(F, usize)], assignment: &[F]) -> F {
    row.iter()
        .map(|(coeff, i)| {
            if coeff.is_one() {
                assignment[*i]
            } else {
                assignment[*i] * coeff
            }
        })
        .sum()
}

impl R1CSToQAP for CircomReduction {
    fn instance_map_with_evaluation<F: PrimeField, D: EvaluationDomain<F>>(
        _cs: ark_relations::r1cs::ConstraintSystemRef<F>,
        _t: &F,
    ) -> Result<(Vec<F>, Vec<F>, Vec<F>, F, usize, usize), SynthesisError> {
        // Setups for this reduction are snarkjs's (a ceremony), never ours.
        Err(SynthesisError::MissingCS)
    }

    fn witness_map_from_matrices<F: PrimeField, D: EvaluationDomain<F>>(
        matrices: &ConstraintMatrices<F>,
        num_inputs: usize,
        num_constraints: usize,
        full_assignment: &[F],
    ) -> Result<Vec<F>, SynthesisError> {
        let domain =
            D::new(num_constraints + num_inputs).ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
        let n = domain.size();
        let mut a = vec![F::zero(); n];
        let mut b = vec![F::zero(); n];
        let mut c = vec![F::zero(); n];
        for i in 0..num_constraints {
            a[i] = row_times(&matrices.a[i], full_assignment);
            b[i] = row_times(&matrices.b[i], full_assignment);
            c[i] = a[i] * b[i];
        }
        // The extra rows that keep the public inputs independent.
        a[num_constraints..num_constraints + num_inputs]
            .copy_from_slice(&full_assignment[..num_inputs]);
        let odd = D::new(2 * n)
            .ok_or(SynthesisError::PolynomialDegreeTooLarge)?
            .element(1);
        for v in [&mut a, &mut b, &mut c] {
            domain.ifft_in_place(v);
            D::distribute_powers_and_mul_by_const(v, odd, F::one());
            domain.fft_in_place(v);
        }
        Ok(a.iter()
            .zip(&b)
            .zip(&c)
            .map(|((a, b), c)| *a * b - c)
            .collect())
    }

    fn h_query_scalars<F: PrimeField, D: EvaluationDomain<F>>(
        _max_power: usize,
        _t: F,
        _zt: F,
        _delta_inverse: F,
    ) -> Result<Vec<F>, SynthesisError> {
        Err(SynthesisError::MissingCS)
    }
}
