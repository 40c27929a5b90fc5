//! `v ≤ T` for 32-bit unsigned integers, natively: the reference the comparison gadget is held to.

pub mod constraints;

/// `x = 2³² + T − v`, in `[1, 2³³)` for 32-bit `v` and `T`; bit 32 of `x` is
/// `[v ≤ T]`. The gadget proves exactly this decomposition.
pub fn offset_difference(value: u32, threshold: u32) -> u64 {
    (1u64 << 32) + u64::from(threshold) - u64::from(value)
}

/// `[v ≤ T]` read from [`offset_difference`], as the circuit reads it.
pub fn at_most(value: u32, threshold: u32) -> bool {
    offset_difference(value, threshold) >> 32 == 1
}
