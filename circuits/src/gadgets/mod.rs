//! Circuit building blocks: each gadget keeps its native twin in `mod.rs` and its constraints in `constraints.rs`.

pub mod bits;
pub mod compare;
pub mod linear;
pub mod poseidon;
