//! A circuit variant for histograms over a fixed public bucket scheme:
//! the bucket edges are constants of the circuit (its keys pin them), only
//! the counts are private, and `[eᵢ ≤ T]` needs no comparison per bucket.
//!
//! A percentile objective proven over a histogram of (bucket upper edge,
//! count) pairs costs the threshold circuit 106 constraints per slot, 72 of
//! them to range-check a value that is in fact a public constant. Here each
//! bucket costs 43 and its share of the commitment about 7.6:
//!
//! - its count, 40 bits (40 constraints);
//! - a selector bit `sᵢ` (1) that must not rise again once it has fallen,
//!   `sᵢ·(1 − sᵢ₋₁) = 0` (1), so the selectors are `1ᵏ0ᴺ⁻ᵏ`;
//! - `gᵢ = sᵢ·countᵢ` (1).
//!
//! Once per circuit, the step is put in its place: with sorted edges,
//! `last = Σ sᵢ·(eᵢ − eᵢ₋₁)` is `eₖ₋₁` (0 when `k = 0`) and
//! `next = e₀ + Σ sᵢ·(eᵢ₊₁ − eᵢ)` is `eₖ` (`2³²` when `k = N`), both linear
//! in the selectors because the edges are constants; `T − last` in 32 bits
//! and `next − T − 1` in 33 bits force `eₖ₋₁ ≤ T < eₖ`, so `sᵢ = [eᵢ ≤ T]`
//! for every bucket. Counts pack six to a field element (240 bits), 66 per
//! `Poseidon(12)` step. The commitment's seed binds the scheme (a hash of
//! the edges) and the bucket count, under its own domain tag.
//!
//! This is measured, not yet used by the worker: the period vector of today
//! (two slots per day) is proven with the threshold circuit.

use ark_bn254::{Bn254, Fr};
use ark_ff::{One, Zero};
use ark_groth16::{Groth16, ProvingKey, VerifyingKey};
use ark_relations::lc;
use ark_relations::r1cs::{
    ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, SynthesisError, SynthesisMode,
};
use ark_snark::SNARK;
use sha2::{Digest, Sha256};

use crate::circuit::{PublicValues, QUOTA_BITS, enforce_fraction};
use crate::error::CircuitError;
use crate::gadgets::bits::constraints::{RangeGadget, UIntVar};
use crate::gadgets::bits::pow2;
use crate::gadgets::linear::LinearVar;
use crate::gadgets::poseidon::{self, constraints::PoseidonGadget, constraints::PoseidonVar};
use crate::statement::{ContextHash, PPM, VALUE_BITS, WEIGHT_BITS, first_31_bytes};

/// Counts per packed field element: 6 × 40 bits = 240 < 253.
pub const COUNTS_PER_ELEMENT: usize = 6;

/// A public bucket scheme: the buckets' upper edges, in the value's unit,
/// sorted, each below `2³²`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketScheme {
    edges: Vec<u32>,
}

impl BucketScheme {
    /// The scheme of `edges`; refused unless sorted and non-empty.
    pub fn new(edges: Vec<u32>) -> Result<Self, CircuitError> {
        if edges.is_empty() || edges.windows(2).any(|w| w[0] > w[1]) {
            return Err(CircuitError::Malformed {
                field: "edges",
                reason: "bucket edges must be a non-empty ascending list".into(),
            });
        }
        Ok(Self { edges })
    }

    pub fn edges(&self) -> &[u32] {
        &self.edges
    }

    /// `Poseidon(sha256("slaproof/buckets/v1")[..31], N, sha256(edges)[..31])`:
    /// a constant of the circuit binding the tag, the bucket count and the
    /// edges (each as 4 big-endian bytes).
    pub fn tag(&self) -> Result<Fr, CircuitError> {
        let mut h = Sha256::new();
        for e in &self.edges {
            h.update(e.to_be_bytes());
        }
        poseidon::hash(&[
            first_31_bytes(&Sha256::digest(b"slaproof/buckets/v1")),
            Fr::from(self.edges.len() as u64),
            first_31_bytes(&h.finalize()),
        ])
    }

    /// The counts of the buckets whose edge is at most `threshold`, and of all.
    pub fn weights(&self, threshold: u32, counts: &[u64]) -> (u128, u128) {
        self.edges
            .iter()
            .zip(counts)
            .fold((0, 0), |(good, total), (e, c)| {
                let c = u128::from(*c);
                (good + if *e <= threshold { c } else { 0 }, total + c)
            })
    }

    /// The salted commitment to `counts`:
    /// `chain(Poseidon(tag, context, r), pack₆(counts))`.
    pub fn commit(
        &self,
        context: ContextHash,
        salt: Fr,
        counts: &[u64],
    ) -> Result<Fr, CircuitError> {
        if counts.len() != self.edges.len() || counts.iter().any(|c| *c >> WEIGHT_BITS != 0) {
            return Err(CircuitError::Malformed {
                field: "counts",
                reason: format!(
                    "{} counts below 2^40 are needed, one per bucket",
                    self.edges.len()
                ),
            });
        }
        let seed = poseidon::hash(&[self.tag()?, context.as_field(), salt])?;
        poseidon::chain(seed, &pack_counts(counts))
    }
}

/// Packs counts six to an element, each in 40 bits, the first lowest.
pub fn pack_counts(counts: &[u64]) -> Vec<Fr> {
    counts
        .chunks(COUNTS_PER_ELEMENT)
        .map(|chunk| {
            chunk.iter().enumerate().fold(Fr::zero(), |acc, (j, c)| {
                acc + Fr::from(*c) * pow2(j as u32 * WEIGHT_BITS)
            })
        })
        .collect()
}

/// The private assignment: the salt, the counts and the selectors (raw, so
/// tests can hand the circuit selectors that lie).
#[derive(Clone)]
pub struct BucketWitness {
    pub salt: Fr,
    pub counts: Vec<u64>,
    pub selectors: Vec<bool>,
}

impl std::fmt::Debug for BucketWitness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketWitness")
            .field("buckets", &self.counts.len())
            .finish_non_exhaustive()
    }
}

/// The bucketed circuit of one scheme.
#[derive(Debug, Clone)]
pub struct BucketCircuit {
    scheme: BucketScheme,
    public: Option<PublicValues>,
    witness: Option<BucketWitness>,
}

impl BucketCircuit {
    /// The shape only, for key generation.
    pub fn blank(scheme: BucketScheme) -> Self {
        Self {
            scheme,
            public: None,
            witness: None,
        }
    }

    /// The circuit for counts meeting `threshold` and `quota_ppm` under
    /// `context`, with the honest selectors.
    pub fn new(
        scheme: BucketScheme,
        public: PublicValues,
        salt: Fr,
        counts: Vec<u64>,
        threshold: u32,
    ) -> Self {
        let selectors = scheme.edges.iter().map(|e| *e <= threshold).collect();
        Self::from_raw(
            scheme,
            public,
            BucketWitness {
                salt,
                counts,
                selectors,
            },
        )
    }

    /// Any assignment, valid or not: for soundness tests.
    pub fn from_raw(scheme: BucketScheme, public: PublicValues, witness: BucketWitness) -> Self {
        Self {
            scheme,
            public: Some(public),
            witness: Some(witness),
        }
    }
}

impl ConstraintSynthesizer<Fr> for BucketCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let public = self.public;
        let witness = self.witness.as_ref();
        let edges = &self.scheme.edges;
        let n = edges.len();

        let commitment = LinearVar::new_input(&cs, public.map(|p| p.commitment))?;
        let threshold = LinearVar::new_input(&cs, public.map(|p| p.threshold))?;
        let quota = LinearVar::new_input(&cs, public.map(|p| p.quota_ppm))?;
        let context = LinearVar::new_input(&cs, public.map(|p| p.context))?;
        UIntVar::enforce_fits(&cs, &threshold, VALUE_BITS as usize)?;
        UIntVar::enforce_fits(&cs, &quota, QUOTA_BITS)?;

        let mut counts = Vec::with_capacity(n);
        let mut selectors: Vec<LinearVar> = Vec::with_capacity(n);
        let mut good = Vec::with_capacity(n);
        for i in 0..n {
            let count = UIntVar::new_witness(
                &cs,
                witness.map(|w| Fr::from(w.counts.get(i).copied().unwrap_or_default())),
                WEIGHT_BITS as usize,
            )?;
            let s = UIntVar::new_bit(
                &cs,
                witness.map(|w| w.selectors.get(i).copied().unwrap_or_default()),
            )?;
            if let Some(before) = selectors.last() {
                // Once a selector is 0 the rest are: sᵢ·(1 − sᵢ₋₁) = 0.
                let fallen = LinearVar::constant(Fr::one()).sub(before);
                cs.enforce_constraint(s.lc.clone(), fallen.lc, lc!())?;
            }
            good.push(s.mul(&cs, count.value())?);
            selectors.push(s);
            counts.push(count);
        }

        // The step between the good and the bad buckets is where T puts it.
        let edge = |i: usize| Fr::from(u64::from(edges[i]));
        let last_terms: Vec<(Fr, &LinearVar)> = selectors
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    if i == 0 {
                        edge(0)
                    } else {
                        edge(i) - edge(i - 1)
                    },
                    s,
                )
            })
            .collect();
        let last_good = LinearVar::sum_of(&last_terms, Fr::zero());
        let next_terms: Vec<(Fr, &LinearVar)> = selectors
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let next = if i + 1 < n {
                    edge(i + 1)
                } else {
                    pow2(VALUE_BITS)
                };
                (next - edge(i), s)
            })
            .collect();
        let first_bad = LinearVar::sum_of(&next_terms, edge(0));
        UIntVar::enforce_fits(&cs, &threshold.sub(&last_good), VALUE_BITS as usize)?;
        let above = first_bad
            .sub(&threshold)
            .sub(&LinearVar::constant(Fr::one()));
        UIntVar::enforce_fits(&cs, &above, VALUE_BITS as usize + 1)?;

        // The commitment: packing is linear in the count bits.
        let elements: Vec<LinearVar> = counts
            .chunks(COUNTS_PER_ELEMENT)
            .map(|chunk| {
                let terms: Vec<(Fr, &LinearVar)> = chunk
                    .iter()
                    .enumerate()
                    .map(|(j, c)| (pow2(j as u32 * WEIGHT_BITS), c.value()))
                    .collect();
                LinearVar::sum_of(&terms, Fr::zero())
            })
            .collect();
        let salt = LinearVar::new_witness(&cs, witness.map(|w| w.salt))?;
        let tag = self
            .scheme
            .tag()
            .map_err(|_| SynthesisError::Unsatisfiable)?;
        let seed = PoseidonVar::hash(&cs, &[LinearVar::constant(tag), context, salt])?;
        PoseidonVar::chain(&cs, &seed, &elements)?.enforce_equal(&cs, &commitment)?;

        let weights: Vec<&LinearVar> = counts.iter().map(UIntVar::value).collect();
        enforce_fraction(&cs, &quota, &weights, &good)
    }
}

/// Exact constraints of the bucketed circuit for `scheme`, by synthesis alone.
pub fn constraint_count(scheme: &BucketScheme) -> Result<usize, CircuitError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(SynthesisMode::Setup);
    BucketCircuit::blank(scheme.clone()).generate_constraints(cs.clone())?;
    Ok(cs.num_constraints())
}

/// Keys for one scheme (a single-party setup: for measurement and tests).
pub fn setup(
    scheme: &BucketScheme,
) -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), CircuitError> {
    let mut rng = crate::random::os_rng();
    Ok(Groth16::<Bn254>::circuit_specific_setup(
        BucketCircuit::blank(scheme.clone()),
        &mut rng,
    )?)
}

/// Proves that `counts` (committed under `context` with `salt`) have at
/// least `quota_ppm` of their total in buckets whose edge is at most
/// `threshold`; answers the public inputs and the proof.
pub fn prove(
    pk: &ProvingKey<Bn254>,
    scheme: &BucketScheme,
    context: ContextHash,
    salt: Fr,
    counts: &[u64],
    threshold: u32,
    quota_ppm: u32,
) -> Result<(PublicValues, ark_groth16::Proof<Bn254>), CircuitError> {
    let (good, total) = scheme.weights(threshold, counts);
    if total == 0 {
        return Err(CircuitError::ZeroTotalWeight);
    }
    if u64::from(quota_ppm) > PPM || u128::from(PPM) * good < u128::from(quota_ppm) * total {
        return Err(CircuitError::StatementFalse);
    }
    let public = PublicValues {
        commitment: scheme.commit(context, salt, counts)?,
        threshold: Fr::from(threshold),
        quota_ppm: Fr::from(quota_ppm),
        context: context.as_field(),
    };
    let circuit = BucketCircuit::new(scheme.clone(), public, salt, counts.to_vec(), threshold);
    let mut rng = crate::random::os_rng();
    let proof = Groth16::<Bn254>::create_random_proof_with_reduction(circuit, pk, &mut rng)?;
    Ok((public, proof))
}

/// Checks a bucketed proof against its public inputs.
pub fn verify(
    vk: &VerifyingKey<Bn254>,
    public: &PublicValues,
    proof: &ark_groth16::Proof<Bn254>,
) -> Result<bool, CircuitError> {
    crate::circuit::verify_public(vk, public, proof)
}
