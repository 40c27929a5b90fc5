//! The threshold-fraction circuit: a committed vector of (value, weight) slots meets `10⁶·good ≥ q·total`.
//!
//! Per slot: 32 value bits, 40 weight bits, a 32-bit remainder and one
//! booleanity check for the comparison with `T`, and one product — 106
//! constraints — plus its share of the commitment's Poseidon chain; once per
//! circuit, the chain's seed binds the slot count and the context.

use ark_bn254::Fr;
use ark_ff::{One, Zero};
use ark_relations::{
    ns,
    r1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError},
};

use crate::gadgets::bits::constraints::{RangeGadget, UIntVar};
use crate::gadgets::bits::pow2;
use crate::gadgets::compare::constraints::{AtMostGadget, AtMostVar};
use crate::gadgets::linear::LinearVar;
use crate::gadgets::poseidon::constraints::{PoseidonGadget, PoseidonVar};
use crate::statement::{
    Opening, PPM, SLOT_BITS, SLOTS_PER_ELEMENT, Statement, VALUE_BITS, WEIGHT_BITS, size_tag,
};

/// Bits of `q`: any `q < 2²⁰` keeps `q·Σw` bounded; the native side further
/// refuses `q > 10⁶`.
pub const QUOTA_BITS: usize = 20;
/// Bits of the slack `D = 10⁶·good − q·total`. With `N ≤ 2²⁰` slots,
/// `total < 2⁶⁰`, so a true slack is below `2⁸⁰`, and a negative one wraps
/// to at least `p − 2⁸⁰`, which 80 bits cannot reach.
pub const SLACK_BITS: usize = 80;

/// The public inputs as field elements, in the verifier's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicValues {
    pub commitment: Fr,
    pub threshold: Fr,
    pub quota_ppm: Fr,
    pub context: Fr,
}

impl From<&Statement> for PublicValues {
    fn from(s: &Statement) -> Self {
        let [commitment, threshold, quota_ppm, context] = s.public_inputs();
        Self {
            commitment,
            threshold,
            quota_ppm,
            context,
        }
    }
}

/// Checks a Groth16 proof against public inputs in the verifier's order,
/// for the variants that keep a bare verifying key (`bucketed`, `daily`).
pub fn verify_public(
    vk: &ark_groth16::VerifyingKey<ark_bn254::Bn254>,
    public: &PublicValues,
    proof: &ark_groth16::Proof<ark_bn254::Bn254>,
) -> Result<bool, crate::error::CircuitError> {
    let pvk = ark_groth16::prepare_verifying_key(vk);
    Ok(ark_groth16::Groth16::<ark_bn254::Bn254>::verify_proof(
        &pvk,
        proof,
        &[
            public.commitment,
            public.threshold,
            public.quota_ppm,
            public.context,
        ],
    )?)
}

/// The private assignment. Values and weights are raw integers so tests can
/// hand the circuit out-of-range data and watch it refuse.
#[derive(Clone)]
pub struct WitnessValues {
    pub salt: Fr,
    pub slots: Vec<(u64, u64)>,
}

impl std::fmt::Debug for WitnessValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessValues")
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

/// The circuit for `slots` slots. Without values it only fixes the shape,
/// which is all key generation needs.
#[derive(Clone)]
pub struct ThresholdCircuit {
    slots: usize,
    public: Option<PublicValues>,
    witness: Option<WitnessValues>,
}

impl std::fmt::Debug for ThresholdCircuit {
    // Public values only: the slots and salt must never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThresholdCircuit")
            .field("slots", &self.slots)
            .field("public", &self.public)
            .field("has_witness", &self.witness.is_some())
            .finish()
    }
}

impl ThresholdCircuit {
    /// The shape only, for key generation.
    pub fn blank(slots: usize) -> Self {
        Self {
            slots,
            public: None,
            witness: None,
        }
    }

    /// The circuit for a statement and its opening.
    pub fn new(statement: &Statement, opening: &Opening) -> Self {
        Self {
            slots: statement.slots(),
            public: Some(statement.into()),
            witness: Some(WitnessValues {
                salt: opening.salt(),
                slots: opening
                    .slots()
                    .iter()
                    .map(|s| (u64::from(s.value()), s.weight()))
                    .collect(),
            }),
        }
    }

    /// Any assignment at all, valid or not: for soundness tests.
    pub fn from_raw(slots: usize, public: PublicValues, witness: WitnessValues) -> Self {
        Self {
            slots,
            public: Some(public),
            witness: Some(witness),
        }
    }

    pub fn slots(&self) -> usize {
        self.slots
    }
}

impl ConstraintSynthesizer<Fr> for ThresholdCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let public = self.public;
        let witness = self.witness.as_ref();

        // Namespaces are held for the whole of their section, so each
        // allocation is traced under its name. There are deliberately few:
        // ark-relations' `ns!` never closes its tracing span, so one per
        // slot would leave thousands of spans open in a service whose
        // subscriber enables the `r1cs` target.

        // Public inputs, in the order of `statement::PUBLIC_INPUTS`. The
        // context is bound twice: as an input (ark-groth16's QAP reduction
        // adds one copy constraint per input) and inside the commitment's
        // seed, so a commitment made under one context opens under no other.
        let (commitment, threshold, quota, context) = {
            let ns = ns!(cs, "public_inputs");
            let inputs = ns.cs();
            let commitment = LinearVar::new_input(&inputs, public.map(|p| p.commitment))?;
            let threshold = LinearVar::new_input(&inputs, public.map(|p| p.threshold))?;
            let quota = LinearVar::new_input(&inputs, public.map(|p| p.quota_ppm))?;
            let context = LinearVar::new_input(&inputs, public.map(|p| p.context))?;
            (commitment, threshold, quota, context)
        };

        // T < 2³² keeps `2³² + T − v` inside 33 bits; q < 2²⁰ bounds q·Σw.
        {
            let ns = ns!(cs, "threshold_range");
            UIntVar::enforce_fits(&ns.cs(), &threshold, VALUE_BITS as usize)?;
        }
        {
            let ns = ns!(cs, "quota_range");
            UIntVar::enforce_fits(&ns.cs(), &quota, QUOTA_BITS)?;
        }

        let mut values = Vec::with_capacity(self.slots);
        let mut weights = Vec::with_capacity(self.slots);
        let mut good_weights = Vec::with_capacity(self.slots);
        {
            let ns = ns!(cs, "slots");
            let slots = ns.cs();
            for i in 0..self.slots {
                let raw = witness.map(|w| w.slots.get(i).copied().unwrap_or_default());
                // v and w *are* sums of their bits, so they are in range by
                // construction and cost no equality constraint.
                let value = UIntVar::new_witness(
                    &slots,
                    raw.map(|(v, _)| Fr::from(v)),
                    VALUE_BITS as usize,
                )?;
                let weight = UIntVar::new_witness(
                    &slots,
                    raw.map(|(_, w)| Fr::from(w)),
                    WEIGHT_BITS as usize,
                )?;
                // [v ≤ T]: sound because v and T are both below 2³².
                let good = AtMostVar::at_most(&slots, value.value(), &threshold)?;
                good_weights.push(good.mul(&slots, weight.value())?);
                values.push(value);
                weights.push(weight);
            }
        }

        // Packing is linear in the bits: free.
        let two_32 = pow2(VALUE_BITS);
        let elements: Vec<LinearVar> = values
            .chunks(SLOTS_PER_ELEMENT)
            .zip(weights.chunks(SLOTS_PER_ELEMENT))
            .map(|(vs, ws)| {
                let mut terms = Vec::with_capacity(2 * SLOTS_PER_ELEMENT);
                for (j, (v, w)) in vs.iter().zip(ws).enumerate() {
                    let offset = pow2(j as u32 * SLOT_BITS);
                    terms.push((offset, v.value()));
                    terms.push((offset * two_32, w.value()));
                }
                LinearVar::sum_of(&terms, Fr::zero())
            })
            .collect();
        {
            let ns = ns!(cs, "commitment");
            let commit_cs = ns.cs();
            let salt = LinearVar::new_witness(&commit_cs, witness.map(|w| w.salt))?;
            // h₀ = Poseidon(Poseidon(tag, N), context, r): the size tag is
            // this circuit's own constant, so no shorter vector's opening
            // passes for this one.
            // Hashing two constants fails only on a width light-poseidon
            // lacks, which the gadget reports the same way.
            let tag = size_tag(self.slots).map_err(|_| SynthesisError::Unsatisfiable)?;
            let seed = PoseidonVar::hash(&commit_cs, &[LinearVar::constant(tag), context, salt])?;
            let recomputed = PoseidonVar::chain(&commit_cs, &seed, &elements)?;
            recomputed.enforce_equal(&commit_cs, &commitment)?;
        }

        // Sums cannot wrap: each w < 2⁴⁰ and N ≤ 2²⁰, so Σw < 2⁶⁰.
        let ns = ns!(cs, "fraction");
        let weights: Vec<&LinearVar> = weights.iter().map(UIntVar::value).collect();
        enforce_fraction(&ns.cs(), &quota, &weights, &good_weights)
    }
}

/// `Σw ≠ 0` and `10⁶·Σg − q·Σw ≥ 0`, for weights below `2⁴⁰` (so that with
/// at most `2²⁰` of them no sum wraps) and `q < 2²⁰`: the threshold
/// fraction, shared by every circuit that proves one.
pub(crate) fn enforce_fraction(
    fraction: &ConstraintSystemRef<Fr>,
    quota: &LinearVar,
    weights: &[&LinearVar],
    good_weights: &[LinearVar],
) -> Result<(), SynthesisError> {
    let weight_terms: Vec<(Fr, &LinearVar)> = weights.iter().map(|w| (Fr::one(), *w)).collect();
    let total_lc = LinearVar::sum_of(&weight_terms, Fr::zero());
    // The total is used three times; one variable keeps its 40·N-term
    // combination out of the other constraints.
    let total = LinearVar::new_witness(fraction, total_lc.value())?;
    total.enforce_equal(fraction, &total_lc)?;
    total.enforce_nonzero(fraction)?;
    let good_terms: Vec<(Fr, &LinearVar)> = good_weights.iter().map(|g| (Fr::one(), g)).collect();
    let good = LinearVar::sum_of(&good_terms, Fr::zero());
    let quota_total = quota.mul(fraction, &total)?;
    let slack = LinearVar::sum_of(
        &[(Fr::from(PPM), &good), (-Fr::one(), &quota_total)],
        Fr::zero(),
    );
    UIntVar::enforce_fits(fraction, &slack, SLACK_BITS)?;
    Ok(())
}
