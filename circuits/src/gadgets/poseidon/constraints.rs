//! circomlib's Poseidon as R1CS: three constraints per non-constant S-box and nothing for the linear layers.

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_ff::{Field, One, Zero};
use ark_relations::r1cs::{ConstraintSystemRef, SynthesisError};

use super::{CHAIN_RATE, MAX_WIDTH, parameters};
use crate::gadgets::linear::LinearVar;

/// The shape of one permutation, worked out once per width.
///
/// Round constants and the MDS matrix are the same for every call, so which
/// combination feeds each S-box, in terms of the permutation's inputs and the
/// outputs of earlier S-boxes, is fixed too. Working that out once keeps the
/// partial rounds (whose untouched state words pile up ever longer
/// combinations) out of every call: a call only copies terms.
struct Schedule {
    /// Combination fed to each non-constant S-box, over the local basis
    /// `[1, input₁, …, input_{t−1}, sbox₀, sbox₁, …]`.
    sboxes: Vec<Vec<(Fr, usize)>>,
    /// The output word, over the same basis.
    output: Vec<(Fr, usize)>,
}

impl Schedule {
    fn build(width: usize) -> Result<Self, SynthesisError> {
        let params = parameters(width).map_err(|_| SynthesisError::Unsatisfiable)?;
        let alpha = params.alpha;
        let half = params.full_rounds / 2;
        let rounds = params.full_rounds + params.partial_rounds;
        // Dense coefficient vectors over the growing basis.
        let mut basis_len = width;
        let mut state: Vec<Vec<Fr>> = (0..width)
            .map(|i| {
                let mut v = vec![Fr::zero(); basis_len];
                // Word 0 is circomlib's capacity element, the constant 0.
                if i > 0 {
                    v[i] = Fr::one();
                }
                v
            })
            .collect();
        let mut sboxes = Vec::new();
        for round in 0..rounds {
            for (i, word) in state.iter_mut().enumerate() {
                word[0] += params.ark[round * width + i];
            }
            let full = round < half || round >= half + params.partial_rounds;
            let touched = if full { width } else { 1 };
            for word in state.iter_mut().take(touched) {
                if word[1..].iter().all(Zero::is_zero) {
                    // A constant S-box input (the capacity word in round 0)
                    // is folded natively instead of costing constraints.
                    word[0] = word[0].pow([alpha]);
                } else {
                    sboxes.push(sparse(word));
                    basis_len += 1;
                    word.iter_mut().for_each(|c| *c = Fr::zero());
                    word.resize(basis_len, Fr::zero());
                    word[basis_len - 1] = Fr::one();
                }
            }
            for word in state.iter_mut() {
                word.resize(basis_len, Fr::zero());
            }
            let mixed = (0..width)
                .map(|i| {
                    let mut acc = vec![Fr::zero(); basis_len];
                    for (j, word) in state.iter().enumerate() {
                        let m = params.mds[i][j];
                        for (a, w) in acc.iter_mut().zip(word) {
                            *a += m * w;
                        }
                    }
                    acc
                })
                .collect();
            state = mixed;
        }
        Ok(Self {
            sboxes,
            output: sparse(&state[0]),
        })
    }

    fn for_width(width: usize) -> Result<&'static Schedule, SynthesisError> {
        static SCHEDULES: [OnceLock<Result<Schedule, SynthesisError>>; MAX_WIDTH + 1] =
            [const { OnceLock::new() }; MAX_WIDTH + 1];
        let cell = SCHEDULES
            .get(width)
            .filter(|_| width >= 2)
            .ok_or(SynthesisError::Unsatisfiable)?;
        cell.get_or_init(|| Self::build(width))
            .as_ref()
            .map_err(|e| *e)
    }
}

fn sparse(word: &[Fr]) -> Vec<(Fr, usize)> {
    word.iter()
        .enumerate()
        .filter(|(_, c)| !c.is_zero())
        .map(|(i, c)| (*c, i))
        .collect()
}

/// circomlib's Poseidon in the circuit.
#[derive(Debug, Clone, Copy, Default)]
pub struct PoseidonVar;

/// Hashing and chaining with circomlib's Poseidon.
pub trait PoseidonGadget {
    /// `Poseidon(inputs.len())`: 3 constraints per non-constant S-box, so
    /// `3·(8·t + partial rounds) − 3` for `t = inputs.len() + 1`.
    fn hash(
        cs: &ConstraintSystemRef<Fr>,
        inputs: &[LinearVar],
    ) -> Result<LinearVar, SynthesisError>;

    /// The commitment chain of [`super::chain`].
    fn chain(
        cs: &ConstraintSystemRef<Fr>,
        salt: &LinearVar,
        elements: &[LinearVar],
    ) -> Result<LinearVar, SynthesisError>;
}

impl PoseidonGadget for PoseidonVar {
    fn hash(
        cs: &ConstraintSystemRef<Fr>,
        inputs: &[LinearVar],
    ) -> Result<LinearVar, SynthesisError> {
        let schedule = Schedule::for_width(inputs.len() + 1)?;
        let mut basis = Vec::with_capacity(1 + inputs.len() + schedule.sboxes.len());
        basis.push(LinearVar::constant(Fr::one()));
        basis.extend(inputs.iter().cloned());
        let gather = |terms: &[(Fr, usize)], basis: &[LinearVar]| {
            let terms: Vec<(Fr, &LinearVar)> =
                terms.iter().map(|(c, i)| (*c, &basis[*i])).collect();
            LinearVar::sum_of(&terms, Fr::zero())
        };
        for input in &schedule.sboxes {
            let x = gather(input, &basis);
            if x.is_constant() {
                // Zero padding in the chain's last step: fold it natively.
                let c = x.value().unwrap_or_default();
                basis.push(LinearVar::constant(c.pow([5u64])));
                continue;
            }
            let x2 = x.mul(cs, &x)?;
            let x4 = x2.mul(cs, &x2)?;
            let x5 = x4.mul(cs, &x)?;
            basis.push(x5);
        }
        Ok(gather(&schedule.output, &basis))
    }

    fn chain(
        cs: &ConstraintSystemRef<Fr>,
        salt: &LinearVar,
        elements: &[LinearVar],
    ) -> Result<LinearVar, SynthesisError> {
        let mut state = salt.clone();
        let runs = elements.len().div_ceil(CHAIN_RATE).max(1);
        for run in 0..runs {
            let mut inputs = Vec::with_capacity(MAX_WIDTH - 1);
            inputs.push(state);
            inputs.extend(
                elements
                    .iter()
                    .skip(run * CHAIN_RATE)
                    .take(CHAIN_RATE)
                    .cloned(),
            );
            inputs.resize(MAX_WIDTH - 1, LinearVar::constant(Fr::zero()));
            state = Self::hash(cs, &inputs)?;
        }
        Ok(state)
    }
}
