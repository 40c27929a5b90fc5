//! `[v ≤ T]` in 33 constraints for operands already known to be below `2³²`.

use ark_bn254::Fr;
use ark_ff::{Field, One};
use ark_relations::r1cs::{ConstraintSystemRef, SynthesisError};

use crate::gadgets::bits::constraints::{RangeGadget, UIntVar, enforce_boolean};
use crate::gadgets::bits::pow2;
use crate::gadgets::linear::LinearVar;

/// Bits of the operands.
pub const OPERAND_BITS: u32 = 32;

/// The comparison gadget.
#[derive(Debug, Clone, Copy, Default)]
pub struct AtMostVar;

/// `[v ≤ T]` as a 0/1 combination.
pub trait AtMostGadget {
    /// Both operands must already be constrained below `2³²` (the caller's
    /// range checks); then the result is exactly `[value ≤ threshold]`.
    ///
    /// `x = 2³² + T − v` lies in `[1, 2³³)`. The prover supplies `x`'s 32 low
    /// bits `ℓ` (32 constraints); `good = (x − ℓ)/2³²` is a free combination
    /// and `good·(1 − good) = 0` (1 constraint) forces `x = good·2³² + ℓ`
    /// with `ℓ < 2³²`, which over the integers is the true bit 32 of `x`:
    /// any other `ℓ` leaves `good` a field element that is neither 0 nor 1.
    fn at_most(
        cs: &ConstraintSystemRef<Fr>,
        value: &LinearVar,
        threshold: &LinearVar,
    ) -> Result<LinearVar, SynthesisError>;
}

impl AtMostGadget for AtMostVar {
    fn at_most(
        cs: &ConstraintSystemRef<Fr>,
        value: &LinearVar,
        threshold: &LinearVar,
    ) -> Result<LinearVar, SynthesisError> {
        let two_32 = pow2(OPERAND_BITS);
        let inv_two_32 = two_32.inverse().ok_or(SynthesisError::Unsatisfiable)?;
        let x = LinearVar::sum_of(&[(Fr::one(), threshold), (-Fr::one(), value)], two_32);
        let low = UIntVar::new_witness(cs, x.value(), OPERAND_BITS as usize)?;
        let good = x.sub(low.value()).scale(inv_two_32);
        enforce_boolean(cs, &good)?;
        Ok(good)
    }
}
