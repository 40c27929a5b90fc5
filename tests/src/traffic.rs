//! A tiny deterministic random source for generated test traffic: the same traffic on every run, with no crate for it.

/// Xorshift64: the same sequence for the same seed.
#[derive(Debug, Clone)]
pub struct Xorshift(pub u64);

impl Xorshift {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `[0, n)`.
    pub fn below(&mut self, n: i64) -> i64 {
        (self.next_u64() % n.unsigned_abs()) as i64
    }

    /// True `per_mille` times in a thousand.
    pub fn chance(&mut self, per_mille: i64) -> bool {
        self.below(1000) < per_mille
    }
}
