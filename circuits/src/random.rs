//! The randomness of setups and proofs: the operating system's.

/// A CSPRNG for the setup and the prover, seeded from the operating system.
pub(crate) fn os_rng() -> ark_std::rand::rngs::StdRng {
    let mut seed = [0u8; 32];
    rand::Rng::fill(&mut rand::rng(), &mut seed);
    <ark_std::rand::rngs::StdRng as ark_std::rand::SeedableRng>::from_seed(seed)
}
