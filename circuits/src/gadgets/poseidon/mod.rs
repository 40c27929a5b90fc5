//! Poseidon over BN254 with circomlib's parameters, and the salted chain that commits a slot vector.
//!
//! `hash` is circomlib's `Poseidon(n)` (x⁵ S-box, 8 full rounds, the
//! partial-round counts and constants of circomlib, capacity element 0), as
//! implemented by the `light-poseidon` crate, which is tested against
//! circomlibjs.

pub mod constraints;

use ark_bn254::Fr;
use ark_ff::Zero;
use light_poseidon::{Poseidon, PoseidonHasher, PoseidonParameters};

use crate::error::CircuitError;

/// Largest state width `light-poseidon` has circomlib parameters for:
/// `Poseidon(12)`, twelve inputs per permutation.
pub const MAX_WIDTH: usize = 13;

/// Packed elements absorbed per chain step: the width minus the capacity
/// element minus the input that carries the running chain value.
pub const CHAIN_RATE: usize = MAX_WIDTH - 2;

/// circomlib's parameters for a state of `width` elements (`width − 1` inputs).
pub fn parameters(width: usize) -> Result<PoseidonParameters<Fr>, CircuitError> {
    let t = u8::try_from(width).map_err(|_| CircuitError::Poseidon(format!("width {width}")))?;
    light_poseidon::parameters::bn254_x5::get_poseidon_parameters::<Fr>(t)
        .map_err(|e| CircuitError::Poseidon(e.to_string()))
}

/// circomlib `Poseidon(inputs.len())`.
pub fn hash(inputs: &[Fr]) -> Result<Fr, CircuitError> {
    let mut hasher = Poseidon::<Fr>::new_circom(inputs.len())
        .map_err(|e| CircuitError::Poseidon(e.to_string()))?;
    hasher
        .hash(inputs)
        .map_err(|e| CircuitError::Poseidon(e.to_string()))
}

/// The commitment chain: `h₀ = salt`, then for each run of
/// [`CHAIN_RATE`] packed elements (the last run padded with zeros)
/// `hₖ₊₁ = Poseidon(hₖ, e₁₁ₖ, …, e₁₁ₖ₊₁₀)`; the commitment is the last `h`.
///
/// Zero padding is harmless: a zero element packs slots of weight zero,
/// which count in neither sum.
pub fn chain(salt: Fr, elements: &[Fr]) -> Result<Fr, CircuitError> {
    let mut hasher = Poseidon::<Fr>::new_circom(MAX_WIDTH - 1)
        .map_err(|e| CircuitError::Poseidon(e.to_string()))?;
    let mut state = salt;
    let runs = elements.len().div_ceil(CHAIN_RATE).max(1);
    for run in 0..runs {
        let mut inputs = vec![Fr::zero(); MAX_WIDTH - 1];
        inputs[0] = state;
        for (slot, e) in inputs[1..]
            .iter_mut()
            .zip(elements.iter().skip(run * CHAIN_RATE))
        {
            *slot = *e;
        }
        state = hasher
            .hash(&inputs)
            .map_err(|e| CircuitError::Poseidon(e.to_string()))?;
    }
    Ok(state)
}
