//! Range checks by bit decomposition: `width` booleanity constraints bound a value below `2^width`.

use ark_bn254::Fr;
use ark_ff::{One, Zero};
use ark_relations::r1cs::{ConstraintSystemRef, LinearCombination, SynthesisError};

use super::{low_bits_le, pow2};
use crate::gadgets::linear::LinearVar;

/// An unsigned integer known to be below `2^width` because it *is* the sum
/// of `width` constrained bits.
#[derive(Clone)]
pub struct UIntVar {
    bits: Vec<LinearVar>,
    value: LinearVar,
}

impl std::fmt::Debug for UIntVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UIntVar")
            .field("width", &self.bits.len())
            .finish_non_exhaustive()
    }
}

/// Range checks over bit decompositions.
pub trait RangeGadget: Sized {
    /// Allocates `width` witness bits and returns their weighted sum:
    /// `width` constraints, and the result is below `2^width` by construction.
    fn new_witness(
        cs: &ConstraintSystemRef<Fr>,
        value: Option<Fr>,
        width: usize,
    ) -> Result<Self, SynthesisError>;

    /// Proves that an existing combination is below `2^width`:
    /// `width + 1` constraints (the bits and one equality).
    fn enforce_fits(
        cs: &ConstraintSystemRef<Fr>,
        x: &LinearVar,
        width: usize,
    ) -> Result<Self, SynthesisError>;
}

impl UIntVar {
    /// The integer as a field element combination.
    pub fn value(&self) -> &LinearVar {
        &self.value
    }

    /// Its bits, least significant first.
    pub fn bits(&self) -> &[LinearVar] {
        &self.bits
    }

    /// Allocates one bit and enforces `b·(1 − b) = 0`.
    pub fn new_bit(
        cs: &ConstraintSystemRef<Fr>,
        value: Option<bool>,
    ) -> Result<LinearVar, SynthesisError> {
        let bit = LinearVar::new_witness(cs, value.map(Fr::from))?;
        enforce_boolean(cs, &bit)?;
        Ok(bit)
    }
}

/// Enforces that a combination is 0 or 1: `x·(1 − x) = 0`, one constraint.
pub fn enforce_boolean(cs: &ConstraintSystemRef<Fr>, x: &LinearVar) -> Result<(), SynthesisError> {
    let one_minus = LinearVar::constant(Fr::one()).sub(x);
    cs.enforce_constraint(x.lc.clone(), one_minus.lc, LinearCombination::zero())
}

impl RangeGadget for UIntVar {
    fn new_witness(
        cs: &ConstraintSystemRef<Fr>,
        value: Option<Fr>,
        width: usize,
    ) -> Result<Self, SynthesisError> {
        let bit_values = value.map(|v| low_bits_le(&v, width));
        let mut bits = Vec::with_capacity(width);
        let mut lc = Vec::with_capacity(width);
        let mut sum = Some(Fr::zero());
        for i in 0..width {
            let b = Self::new_bit(cs, bit_values.as_ref().map(|bs| bs[i]))?;
            let weight = pow2(i as u32);
            // Bits are fresh consecutive variables, so the sum is built in
            // order and needs no sorting.
            lc.extend(b.lc.iter().map(|(c, v)| (*c * weight, *v)));
            sum = sum.zip(b.value).map(|(s, x)| s + weight * x);
            bits.push(b);
        }
        let value = LinearVar {
            lc: LinearCombination(lc),
            value: sum,
        };
        Ok(Self { bits, value })
    }

    fn enforce_fits(
        cs: &ConstraintSystemRef<Fr>,
        x: &LinearVar,
        width: usize,
    ) -> Result<Self, SynthesisError> {
        let decomposed = Self::new_witness(cs, x.value, width)?;
        x.enforce_equal(cs, &decomposed.value)?;
        Ok(decomposed)
    }
}
