//! A period proven over daily commitments anchored as the period went: the
//! period's data is fixed day by day, before its outcome is known.
//!
//! Each day of a period, once past its grace, the platform commits to the
//! day's two weights of an objective (good at `T`, bad above it, the very
//! slots of the period vector, `docs/CIRCUITS.md`) with a salted hash,
//! [`day_commitment`]: `Dᵢ = Poseidon(tag_d, rᵢ, goodᵢ + 2⁴⁰·badᵢ)`, and
//! anchors it with that day's transparency-log head. At the close, the
//! period's public commitment is not a fresh hash of a vector but the
//! *aggregate* of the anchored days, [`aggregate`]:
//!
//! ```text
//! A = chain(Poseidon(Poseidon(tag_a, N), context), D₀, …, D_{N−1})
//! ```
//!
//! with days past the period's padded by [`padding_day`] (`D` of zero
//! weights and a zero salt). Anyone holding the anchored day commitments
//! recomputes `A` without a secret; the circuit opens every `Dᵢ` to its
//! weights and proves the threshold fraction over their sums. A proof over
//! any other data needs another `A`, which the anchored days do not give:
//! it fails to verify.
//!
//! Per day: two 40-bit weights (80 constraints), one `Poseidon(3)` with a
//! constant first input (258), and an eleventh of a `Poseidon(12)` step of
//! the aggregate chain (45.8): 384 per day, against 2 × 121 for the same
//! two slots in the threshold circuit, which commits the vector in one hash
//! at the close. The price of fixing the data as it goes: a month is 12,701
//! constraints in the 32-day circuit, 8,189 in the 64-slot one
//! (`docs/BENCHMARKS.md` has the proving times).

use ark_bn254::{Bn254, Fr};
use ark_ff::Zero;
use ark_groth16::{Groth16, ProvingKey, VerifyingKey};
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

/// The circuit's identity in key manifests.
pub const CIRCUIT_ID: &str = "slaproof/daily-fraction/v1";

/// Day counts keys are made for: a month (at most 31 local days) and a
/// year (at most 366).
pub const STANDARD_DAYS: [usize; 2] = [32, 512];

/// Most days one circuit holds: `2·N` weights of 40 bits must keep every
/// sum far from wrapping (`enforce_fraction` allows `2²⁰` weights).
pub const MAX_DAYS: usize = 1 << 19;

/// The domain tag of a day commitment: `sha256("slaproof/day-commitment/v1")`,
/// first 31 bytes.
pub fn day_tag() -> Fr {
    first_31_bytes(&Sha256::digest(b"slaproof/day-commitment/v1"))
}

/// The domain tag of an aggregate: `sha256("slaproof/daily-aggregate/v1")`,
/// first 31 bytes.
pub fn aggregate_tag() -> Fr {
    first_31_bytes(&Sha256::digest(b"slaproof/daily-aggregate/v1"))
}

/// One day's opening: its salt and its good and bad weights.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DayOpening {
    pub salt: Fr,
    pub good: u64,
    pub bad: u64,
}

impl std::fmt::Debug for DayOpening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DayOpening").finish_non_exhaustive()
    }
}

impl DayOpening {
    /// The opening of a day past the period's end: zero weights, zero salt.
    pub fn padding() -> Self {
        Self {
            salt: Fr::zero(),
            good: 0,
            bad: 0,
        }
    }

    fn check(&self, index: usize) -> Result<(), CircuitError> {
        for (name, w) in [("good", self.good), ("bad", self.bad)] {
            if w >> WEIGHT_BITS != 0 {
                return Err(CircuitError::Malformed {
                    field: "days",
                    reason: format!("day {index}: the {name} weight {w} must be below 2^40"),
                });
            }
        }
        Ok(())
    }

    /// `Dᵢ` of this opening.
    pub fn commitment(&self) -> Result<Fr, CircuitError> {
        day_commitment(self.salt, self.good, self.bad)
    }
}

/// The salted commitment to a day's weights:
/// `Poseidon(tag_d, salt, good + 2⁴⁰·bad)`, both weights below `2⁴⁰`.
pub fn day_commitment(salt: Fr, good: u64, bad: u64) -> Result<Fr, CircuitError> {
    DayOpening { salt, good, bad }.check(0)?;
    poseidon::hash(&[
        day_tag(),
        salt,
        Fr::from(good) + Fr::from(bad) * pow2(WEIGHT_BITS),
    ])
}

/// The commitment of a padding day, a public constant.
pub fn padding_day() -> Result<Fr, CircuitError> {
    DayOpening::padding().commitment()
}

fn check_days(days: usize) -> Result<(), CircuitError> {
    if days == 0 || days > MAX_DAYS {
        return Err(CircuitError::Malformed {
            field: "days",
            reason: format!("a daily circuit holds 1 to {MAX_DAYS} days, not {days}"),
        });
    }
    Ok(())
}

/// The period's public commitment over its days' anchored commitments,
/// padded to the circuit's `size` days:
/// `chain(Poseidon(Poseidon(tag_a, size), context), D₀, …)`.
pub fn aggregate(size: usize, context: ContextHash, days: &[Fr]) -> Result<Fr, CircuitError> {
    check_days(size)?;
    if days.len() > size {
        return Err(CircuitError::Malformed {
            field: "days",
            reason: format!("{} days do not fit a {size}-day circuit", days.len()),
        });
    }
    let mut all = days.to_vec();
    all.resize(size, padding_day()?);
    let size_tag = poseidon::hash(&[aggregate_tag(), Fr::from(size as u64)])?;
    let seed = poseidon::hash(&[size_tag, context.as_field()])?;
    poseidon::chain(seed, &all)
}

/// The daily circuit of `days` days.
#[derive(Debug, Clone)]
pub struct DailyCircuit {
    days: usize,
    public: Option<PublicValues>,
    openings: Option<Vec<DayOpening>>,
}

impl DailyCircuit {
    /// The shape only, for key generation.
    pub fn blank(days: usize) -> Self {
        Self {
            days,
            public: None,
            openings: None,
        }
    }

    /// Any assignment, valid or not (openings shorter than `days` are
    /// padded): for proving and for soundness tests.
    pub fn from_raw(days: usize, public: PublicValues, openings: Vec<DayOpening>) -> Self {
        Self {
            days,
            public: Some(public),
            openings: Some(openings),
        }
    }
}

impl ConstraintSynthesizer<Fr> for DailyCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let public = self.public;
        let opening = |i: usize| {
            self.openings
                .as_ref()
                .map(|o| o.get(i).copied().unwrap_or_else(DayOpening::padding))
        };

        let commitment = LinearVar::new_input(&cs, public.map(|p| p.commitment))?;
        let threshold = LinearVar::new_input(&cs, public.map(|p| p.threshold))?;
        let quota = LinearVar::new_input(&cs, public.map(|p| p.quota_ppm))?;
        let context = LinearVar::new_input(&cs, public.map(|p| p.context))?;
        // T is bound by the context and by each day's anchored label; it is
        // range-checked as in every circuit so that the public inputs mean
        // the same everywhere.
        UIntVar::enforce_fits(&cs, &threshold, VALUE_BITS as usize)?;
        UIntVar::enforce_fits(&cs, &quota, QUOTA_BITS)?;

        let tag = LinearVar::constant(day_tag());
        let mut weights = Vec::with_capacity(2 * self.days);
        let mut good = Vec::with_capacity(self.days);
        let mut commitments = Vec::with_capacity(self.days);
        for i in 0..self.days {
            let day = opening(i);
            let g = UIntVar::new_witness(&cs, day.map(|d| Fr::from(d.good)), WEIGHT_BITS as usize)?;
            let b = UIntVar::new_witness(&cs, day.map(|d| Fr::from(d.bad)), WEIGHT_BITS as usize)?;
            let salt = LinearVar::new_witness(&cs, day.map(|d| d.salt))?;
            let packed = LinearVar::sum_of(
                &[(Fr::from(1u64), g.value()), (pow2(WEIGHT_BITS), b.value())],
                Fr::zero(),
            );
            commitments.push(PoseidonVar::hash(&cs, &[tag.clone(), salt, packed])?);
            good.push(g.value().clone());
            weights.push(g);
            weights.push(b);
        }

        let size_tag = poseidon::hash(&[aggregate_tag(), Fr::from(self.days as u64)])
            .map_err(|_| SynthesisError::Unsatisfiable)?;
        let seed = PoseidonVar::hash(&cs, &[LinearVar::constant(size_tag), context])?;
        PoseidonVar::chain(&cs, &seed, &commitments)?.enforce_equal(&cs, &commitment)?;

        let weights: Vec<&LinearVar> = weights.iter().map(UIntVar::value).collect();
        enforce_fraction(&cs, &quota, &weights, &good)
    }
}

/// Exact constraints of the `days`-day circuit, by synthesis alone.
pub fn constraint_count(days: usize) -> Result<usize, CircuitError> {
    check_days(days)?;
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(SynthesisMode::Setup);
    DailyCircuit::blank(days).generate_constraints(cs.clone())?;
    Ok(cs.num_constraints())
}

/// Keys for `days` days (a single-party setup, as `crate::keys`).
pub fn setup(days: usize) -> Result<(ProvingKey<Bn254>, VerifyingKey<Bn254>), CircuitError> {
    check_days(days)?;
    let mut rng = crate::random::os_rng();
    Ok(Groth16::<Bn254>::circuit_specific_setup(
        DailyCircuit::blank(days),
        &mut rng,
    )?)
}

/// The public inputs of a period proven over `openings` (one per day, in
/// order) in a `size`-day circuit: the aggregate of their commitments, `T`,
/// `q` and the context. Refuses a period that is empty, does not fit, or
/// does not meet `quota_ppm`.
pub fn statement(
    size: usize,
    context: ContextHash,
    threshold: u32,
    quota_ppm: u32,
    openings: &[DayOpening],
) -> Result<PublicValues, CircuitError> {
    for (i, d) in openings.iter().enumerate() {
        d.check(i)?;
    }
    let good: u128 = openings.iter().map(|d| u128::from(d.good)).sum();
    let total: u128 = openings
        .iter()
        .map(|d| u128::from(d.good) + u128::from(d.bad))
        .sum();
    if total == 0 {
        return Err(CircuitError::ZeroTotalWeight);
    }
    if u64::from(quota_ppm) > PPM || u128::from(PPM) * good < u128::from(quota_ppm) * total {
        return Err(CircuitError::StatementFalse);
    }
    let days = openings
        .iter()
        .map(DayOpening::commitment)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PublicValues {
        commitment: aggregate(size, context, &days)?,
        threshold: Fr::from(threshold),
        quota_ppm: Fr::from(quota_ppm),
        context: context.as_field(),
    })
}

/// Checks a daily proof against its public inputs.
pub fn verify(
    vk: &VerifyingKey<Bn254>,
    public: &PublicValues,
    proof: &ark_groth16::Proof<Bn254>,
) -> Result<bool, CircuitError> {
    crate::circuit::verify_public(vk, public, proof)
}
