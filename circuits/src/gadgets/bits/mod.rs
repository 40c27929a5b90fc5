//! Fixed-width unsigned integers: native bounds and little-endian bit decompositions.

pub mod constraints;

use ark_bn254::Fr;
use ark_ff::{BigInteger, Field, PrimeField};

/// The `width` lowest bits of a field element's canonical integer, least
/// significant first. Bits above `width` are dropped: a caller that gets a
/// wider value back from the constraints has a witness the circuit refuses.
pub fn low_bits_le(value: &Fr, width: usize) -> Vec<bool> {
    let repr = value.into_bigint();
    (0..width).map(|i| repr.get_bit(i)).collect()
}

/// `2^k` in the field.
pub fn pow2(k: u32) -> Fr {
    Fr::from(2u64).pow([u64::from(k)])
}
