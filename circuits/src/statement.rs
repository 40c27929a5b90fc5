//! The statement proven and its opening, natively: slot packing, the salted commitment, the context hash and the verdict.

use ark_bn254::Fr;
use ark_ff::{BigInteger, PrimeField, UniformRand};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::CircuitError;
use crate::gadgets::poseidon;

/// Values are below `2^32`.
pub const VALUE_BITS: u32 = 32;
/// Weights are below `2^40`.
pub const WEIGHT_BITS: u32 = 40;
/// Bits of one packed slot: the value, then the weight.
pub const SLOT_BITS: u32 = VALUE_BITS + WEIGHT_BITS;
/// Slots packed into one field element (216 bits, well below BN254's 253).
pub const SLOTS_PER_ELEMENT: usize = 3;
/// `q` is in parts per million.
pub const PPM: u64 = 1_000_000;
/// Largest circuit size; it keeps every sum far below the field modulus
/// (see the soundness notes in `docs/CIRCUITS.md`).
pub const MAX_SLOTS: usize = 1 << 20;
/// Sizes the service generates keys for.
pub const STANDARD_SIZES: [usize; 3] = [64, 1024, 16384];
/// Names of the public inputs, in the order the verifier takes them.
pub const PUBLIC_INPUTS: [&str; 4] = ["commitment", "threshold", "quota_ppm", "context"];

/// One measured entry: a value (a latency, a bad flag, a bad ratio) and how
/// much it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Slot {
    value: u32,
    weight: u64,
}

impl Slot {
    /// Parses a pair, refusing a value or weight out of range; `index` names
    /// the slot in the error.
    pub fn parse(index: usize, value: u64, weight: u64) -> Result<Self, CircuitError> {
        let value =
            u32::try_from(value).map_err(|_| CircuitError::ValueOutOfRange { index, value })?;
        if weight >> WEIGHT_BITS != 0 {
            return Err(CircuitError::WeightOutOfRange { index, weight });
        }
        Ok(Self { value, weight })
    }

    pub fn value(&self) -> u32 {
        self.value
    }

    pub fn weight(&self) -> u64 {
        self.weight
    }
}

/// Packs slots three to an element:
/// `eₖ = Σⱼ (v₃ₖ₊ⱼ + 2³²·w₃ₖ₊ⱼ)·2^(72·j)`.
pub fn pack(slots: &[Slot]) -> Vec<Fr> {
    slots
        .chunks(SLOTS_PER_ELEMENT)
        .map(|chunk| {
            let mut limbs = [0u64; 4];
            for (j, slot) in chunk.iter().enumerate() {
                let packed = u128::from(slot.value) | (u128::from(slot.weight) << VALUE_BITS);
                let offset = j as u32 * SLOT_BITS;
                // Spread the 72-bit slot over 64-bit limbs.
                let (limb, shift) = ((offset / 64) as usize, offset % 64);
                let wide = packed << shift;
                limbs[limb] |= wide as u64;
                // A slot is below 2^72 and shifted by at most 16, so two limbs hold it.
                limbs[limb + 1] |= (wide >> 64) as u64;
            }
            Fr::from_bigint(ark_ff::BigInt::new(limbs)).unwrap_or_default()
        })
        .collect()
}

/// The commitment's domain tag: `sha256("slaproof/commitment/v2")`, first
/// 31 bytes big-endian, so that no other use of Poseidon starts the same way.
pub fn commitment_tag() -> Fr {
    first_31_bytes(&Sha256::digest(b"slaproof/commitment/v2"))
}

/// The size tag of an `N`-slot commitment: `Poseidon(tag, N)`, a constant of
/// each circuit.
pub fn size_tag(slots: usize) -> Result<Fr, CircuitError> {
    poseidon::hash(&[commitment_tag(), Fr::from(slots as u64)])
}

/// The chain's first value: `h₀ = Poseidon(Poseidon(tag, N), context, r)`.
///
/// Binding the slot count and the context here closes two attacks on a bare
/// `h₀ = r`: any intermediate chain value of a longer vector was a valid
/// salt for a shorter vector of its remaining slots (and the verifier takes
/// the slot count from the statement), and a commitment opened under one
/// context could be proven again under another. Now either needs a Poseidon
/// preimage. The size tag is hashed apart so that in the circuit it is a
/// constant and the seed is one `Poseidon(3)`.
pub fn seed(slots: usize, context: ContextHash, salt: Fr) -> Result<Fr, CircuitError> {
    poseidon::hash(&[size_tag(slots)?, context.0, salt])
}

/// The salted commitment `C = chain(seed(N, context, r), pack(slots))`, with
/// `N = slots.len()`.
pub fn commit(context: ContextHash, salt: Fr, slots: &[Slot]) -> Result<Fr, CircuitError> {
    poseidon::chain(seed(slots.len(), context, salt)?, &pack(slots))
}

/// A salt reproducible for a retried job and unknowable without the
/// tenant's secret: `sha256("slaproof/salt/v1" ‖ secret ‖ context)`, first 31
/// bytes big-endian. The same period proven twice commits to the same value,
/// and the opening can be rebuilt from the stored data for a dispute.
pub fn derive_salt(secret: &[u8; 32], context: ContextHash) -> Fr {
    let mut h = Sha256::new();
    h.update(b"slaproof/salt/v1");
    h.update(secret);
    h.update(context.0.into_bigint().to_bytes_be());
    first_31_bytes(&h.finalize())
}

/// The first 31 bytes of a digest, big-endian: 248 bits, always a canonical
/// field element, and easy to recompute in any language.
pub(crate) fn first_31_bytes(digest: &[u8]) -> Fr {
    Fr::from_be_bytes_mod_order(&digest[..31])
}

/// Everything one proven claim is about. Two different claims differ in at
/// least one field, so their contexts differ and no proof of one verifies as
/// the other: "P99 latency ≤ 3.2 s (3,200,000 µs) over the events of
/// acme-enterprise v3, objective p99-latency, in November 2026, result
/// revision 1, for tenant provider".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim<'a> {
    pub tenant: &'a str,
    pub sla: &'a str,
    pub sla_version: u32,
    pub objective: &'a str,
    /// The measured field, e.g. `latency` or `ttft`.
    pub field: &'a str,
    /// The unit of every value and of the threshold, e.g. `us`.
    pub unit: &'a str,
    /// The comparison as proven, always `<=` (`<` is proven as `≤ T−1`).
    pub operator: &'a str,
    pub threshold: u64,
    /// The period's exact bounds, Unix seconds, start inclusive.
    pub period_start: i64,
    pub period_end: i64,
    /// The revision of the period result the vector was built from.
    pub revision: u32,
}

/// A hash binding the whole [`Claim`], so a proof for one claim cannot be
/// shown as a proof for another.
///
/// `sha256("slaproof/context/v2" ‖ each string: u32be(len) ‖ utf8 ‖ each
/// number: its big-endian bytes)`, in the order of [`Claim`]'s fields
/// (`sla_version` and `revision` as u32, `threshold` as u64, the period's
/// bounds as i64), first 31 bytes read big-endian: 248 bits, so it is always
/// a canonical field element and easy to recompute in any language.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ContextHash(Fr);

impl std::fmt::Debug for ContextHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ContextHash({})", self.0)
    }
}

impl ContextHash {
    /// The context of `claim`.
    pub fn of(claim: &Claim<'_>) -> Self {
        Self::tagged(b"slaproof/context/v2", claim)
    }

    /// The context of one day's measurement (`crate::daily`): the same
    /// fields, the period bounds being the day's and the revision the
    /// measurement's, under the tag `slaproof/day/v1` so that no day's
    /// context is ever a period's.
    pub fn of_day(claim: &Claim<'_>) -> Self {
        Self::tagged(b"slaproof/day/v1", claim)
    }

    fn tagged(tag: &[u8], claim: &Claim<'_>) -> Self {
        fn text(h: &mut Sha256, part: &str) {
            h.update((part.len() as u32).to_be_bytes());
            h.update(part.as_bytes());
        }
        let mut h = Sha256::new();
        h.update(tag);
        text(&mut h, claim.tenant);
        text(&mut h, claim.sla);
        h.update(claim.sla_version.to_be_bytes());
        text(&mut h, claim.objective);
        text(&mut h, claim.field);
        text(&mut h, claim.unit);
        text(&mut h, claim.operator);
        h.update(claim.threshold.to_be_bytes());
        h.update(claim.period_start.to_be_bytes());
        h.update(claim.period_end.to_be_bytes());
        h.update(claim.revision.to_be_bytes());
        Self(first_31_bytes(&h.finalize()))
    }

    pub fn as_field(&self) -> Fr {
        self.0
    }
}

/// What the verifier sees: the circuit size, the commitment, `T`, `q` and the
/// context.
#[derive(Clone, PartialEq, Eq)]
pub struct Statement {
    slots: usize,
    commitment: Fr,
    threshold: u32,
    quota_ppm: u32,
    context: ContextHash,
}

impl std::fmt::Debug for Statement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Statement")
            .field("slots", &self.slots)
            .field("commitment", &self.commitment.to_string())
            .field("threshold", &self.threshold)
            .field("quota_ppm", &self.quota_ppm)
            .field("context", &self.context.0.to_string())
            .finish()
    }
}

/// The statement as JSON: field elements as decimal strings, as snarkjs
/// writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementJson {
    pub slots: usize,
    pub commitment: String,
    pub threshold: u32,
    pub quota_ppm: u32,
    pub context: String,
}

impl Statement {
    /// A statement from its parts, checking the ranges the circuit assumes.
    pub fn new(
        slots: usize,
        commitment: Fr,
        threshold: u32,
        quota_ppm: u32,
        context: ContextHash,
    ) -> Result<Self, CircuitError> {
        check_slots(slots)?;
        if u64::from(quota_ppm) > PPM {
            return Err(CircuitError::QuotaOutOfRange { quota_ppm });
        }
        Ok(Self {
            slots,
            commitment,
            threshold,
            quota_ppm,
            context,
        })
    }

    pub fn slots(&self) -> usize {
        self.slots
    }
    pub fn commitment(&self) -> Fr {
        self.commitment
    }
    pub fn threshold(&self) -> u32 {
        self.threshold
    }
    pub fn quota_ppm(&self) -> u32 {
        self.quota_ppm
    }
    pub fn context(&self) -> ContextHash {
        self.context
    }

    /// Public inputs in the verifier's order: [`PUBLIC_INPUTS`].
    pub fn public_inputs(&self) -> [Fr; 4] {
        [
            self.commitment,
            Fr::from(self.threshold),
            Fr::from(self.quota_ppm),
            self.context.0,
        ]
    }

    pub fn to_json(&self) -> StatementJson {
        StatementJson {
            slots: self.slots,
            commitment: self.commitment.to_string(),
            threshold: self.threshold,
            quota_ppm: self.quota_ppm,
            context: self.context.0.to_string(),
        }
    }

    pub fn from_json(json: &StatementJson) -> Result<Self, CircuitError> {
        Self::new(
            json.slots,
            parse_field("commitment", &json.commitment)?,
            json.threshold,
            json.quota_ppm,
            ContextHash(parse_field("context", &json.context)?),
        )
    }
}

/// Parses a canonical decimal field element.
pub fn parse_field(field: &'static str, decimal: &str) -> Result<Fr, CircuitError> {
    let malformed = |reason: &str| CircuitError::Malformed {
        field,
        reason: reason.to_owned(),
    };
    if decimal.is_empty() || !decimal.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed("must be a decimal integer"));
    }
    let value: Fr = decimal
        .parse()
        .map_err(|_| malformed("not a field element"))?;
    // One element, one spelling: below the modulus and without leading zeros.
    if value.to_string() != decimal {
        return Err(malformed(
            "must be canonical: below the BN254 scalar modulus, no leading zeros",
        ));
    }
    Ok(value)
}

/// What the prover keeps private: the slots (padded to the circuit size with
/// zero-weight slots) and the salt. Its `Debug` prints neither.
#[derive(Clone, PartialEq, Eq)]
pub struct Opening {
    context: ContextHash,
    salt: Fr,
    slots: Vec<Slot>,
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opening")
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl Opening {
    pub fn salt(&self) -> Fr {
        self.salt
    }

    /// The context the commitment binds.
    pub fn context(&self) -> ContextHash {
        self.context
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// `C = chain(seed(N, context, r), pack(slots))`.
    pub fn commitment(&self) -> Result<Fr, CircuitError> {
        commit(self.context, self.salt, &self.slots)
    }

    /// `(Σ wᵢ·[vᵢ ≤ T], Σ wᵢ)`; exact in `u128` for every supported size.
    pub fn weights(&self, threshold: u32) -> (u128, u128) {
        self.slots.iter().fold((0, 0), |(good, total), s| {
            let w = u128::from(s.weight);
            (good + if s.value <= threshold { w } else { 0 }, total + w)
        })
    }

    /// The native verdict: `10⁶·Σ wᵢ·[vᵢ ≤ T] ≥ q·Σ wᵢ` and `Σ wᵢ > 0`.
    pub fn meets(&self, threshold: u32, quota_ppm: u32) -> bool {
        let (good, total) = self.weights(threshold);
        total > 0 && u128::from(PPM) * good >= u128::from(quota_ppm) * total
    }
}

fn check_slots(slots: usize) -> Result<(), CircuitError> {
    if slots == 0 || slots > MAX_SLOTS {
        return Err(CircuitError::UnsupportedSlots {
            slots,
            max: MAX_SLOTS,
        });
    }
    Ok(())
}

/// Builds the statement and its opening from `(value, weight)` pairs, with a
/// fresh random salt. Pairs beyond the data are padded with zero-weight
/// slots, which count in neither sum.
pub fn build(
    slots: usize,
    pairs: &[(u64, u64)],
    threshold: u32,
    quota_ppm: u32,
    context: ContextHash,
) -> Result<(Statement, Opening), CircuitError> {
    let mut seed = [0u8; 32];
    rand::Rng::fill(&mut rand::rng(), &mut seed);
    let mut rng = <ark_std::rand::rngs::StdRng as ark_std::rand::SeedableRng>::from_seed(seed);
    build_with_salt(
        slots,
        pairs,
        threshold,
        quota_ppm,
        context,
        Fr::rand(&mut rng),
    )
}

/// [`build`] with a given salt, for tests and for re-opening a commitment.
pub fn build_with_salt(
    slots: usize,
    pairs: &[(u64, u64)],
    threshold: u32,
    quota_ppm: u32,
    context: ContextHash,
    salt: Fr,
) -> Result<(Statement, Opening), CircuitError> {
    check_slots(slots)?;
    if pairs.len() > slots {
        return Err(CircuitError::TooManyPairs {
            given: pairs.len(),
            slots,
        });
    }
    let mut parsed = pairs
        .iter()
        .enumerate()
        .map(|(i, (v, w))| Slot::parse(i, *v, *w))
        .collect::<Result<Vec<_>, _>>()?;
    parsed.resize(slots, Slot::default());
    let opening = Opening {
        context,
        salt,
        slots: parsed,
    };
    let statement = Statement::new(slots, opening.commitment()?, threshold, quota_ppm, context)?;
    Ok((statement, opening))
}
