//! A field element carried as a linear combination, so additions and scalings cost no constraint.

use ark_bn254::Fr;
use ark_ff::{Field, One, Zero};
use ark_relations::r1cs::{ConstraintSystemRef, LinearCombination, SynthesisError, Variable};

/// A field element in the circuit, held as a linear combination of allocated
/// variables together with its assignment (`None` while generating keys).
///
/// ark-r1cs-std's `FpVar` registers a symbolic linear combination in the
/// constraint system for every addition; in a circuit made mostly of bit sums
/// and Poseidon's MDS layers we keep the combinations ourselves, so that each
/// constraint is written out explicitly and counted where it is made.
#[derive(Clone)]
pub struct LinearVar {
    pub(crate) lc: LinearCombination<Fr>,
    pub(crate) value: Option<Fr>,
}

impl std::fmt::Debug for LinearVar {
    // The assignment may be private, so only the shape is printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinearVar")
            .field("terms", &self.lc.len())
            .finish_non_exhaustive()
    }
}

impl LinearVar {
    /// A constant: no variable, no constraint.
    pub fn constant(c: Fr) -> Self {
        let lc = if c.is_zero() {
            LinearCombination::zero()
        } else {
            LinearCombination(vec![(c, Variable::One)])
        };
        Self { lc, value: Some(c) }
    }

    /// A single variable with its assignment.
    pub fn from_variable(var: Variable, value: Option<Fr>) -> Self {
        Self {
            lc: LinearCombination(vec![(Fr::one(), var)]),
            value,
        }
    }

    /// Allocates a private witness.
    pub fn new_witness(
        cs: &ConstraintSystemRef<Fr>,
        value: Option<Fr>,
    ) -> Result<Self, SynthesisError> {
        let var = cs.new_witness_variable(|| value.ok_or(SynthesisError::AssignmentMissing))?;
        Ok(Self::from_variable(var, value))
    }

    /// Allocates a public input.
    pub fn new_input(
        cs: &ConstraintSystemRef<Fr>,
        value: Option<Fr>,
    ) -> Result<Self, SynthesisError> {
        let var = cs.new_input_variable(|| value.ok_or(SynthesisError::AssignmentMissing))?;
        Ok(Self::from_variable(var, value))
    }

    /// The assignment, if known.
    pub fn value(&self) -> Option<Fr> {
        self.value
    }

    /// Whether the combination is a constant (only the `One` variable appears).
    pub fn is_constant(&self) -> bool {
        self.lc.iter().all(|(_, v)| *v == Variable::One)
    }

    /// `Σ cᵢ·xᵢ + k` as one combination; free.
    pub fn sum_of(terms: &[(Fr, &LinearVar)], constant: Fr) -> Self {
        let mut lc = Vec::with_capacity(terms.iter().map(|(_, t)| t.lc.len()).sum::<usize>() + 1);
        let mut value = Some(constant);
        if !constant.is_zero() {
            lc.push((constant, Variable::One));
        }
        for (c, term) in terms {
            lc.extend(term.lc.iter().map(|(k, v)| (*k * c, *v)));
            value = value.zip(term.value).map(|(acc, x)| acc + *c * x);
        }
        let mut lc = LinearCombination(lc);
        lc.compactify();
        Self { lc, value }
    }

    /// `self + other`; free.
    pub fn add(&self, other: &LinearVar) -> Self {
        Self::sum_of(&[(Fr::one(), self), (Fr::one(), other)], Fr::zero())
    }

    /// `self - other`; free.
    pub fn sub(&self, other: &LinearVar) -> Self {
        Self::sum_of(&[(Fr::one(), self), (-Fr::one(), other)], Fr::zero())
    }

    /// `c·self`; free.
    pub fn scale(&self, c: Fr) -> Self {
        Self::sum_of(&[(c, self)], Fr::zero())
    }

    /// `self · other` as a new witness; one constraint.
    pub fn mul(
        &self,
        cs: &ConstraintSystemRef<Fr>,
        other: &LinearVar,
    ) -> Result<Self, SynthesisError> {
        let product = Self::new_witness(cs, self.value.zip(other.value).map(|(a, b)| a * b))?;
        cs.enforce_constraint(self.lc.clone(), other.lc.clone(), product.lc.clone())?;
        Ok(product)
    }

    /// Enforces `self == other`; one constraint.
    pub fn enforce_equal(
        &self,
        cs: &ConstraintSystemRef<Fr>,
        other: &LinearVar,
    ) -> Result<(), SynthesisError> {
        let diff = self.sub(other);
        cs.enforce_constraint(
            diff.lc,
            LinearCombination(vec![(Fr::one(), Variable::One)]),
            LinearCombination::zero(),
        )
    }

    /// Enforces `self ≠ 0` by exhibiting an inverse; one constraint.
    pub fn enforce_nonzero(&self, cs: &ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        // A zero assignment has no inverse; we assign zero so the prover
        // produces an unsatisfied system rather than an error, and the
        // constraint below refuses it.
        let inverse = Self::new_witness(cs, self.value.map(|v| v.inverse().unwrap_or_default()))?;
        cs.enforce_constraint(
            self.lc.clone(),
            inverse.lc,
            LinearCombination(vec![(Fr::one(), Variable::One)]),
        )
    }
}
