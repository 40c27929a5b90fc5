//! The circuits slaproof ships: their names, the ids their key manifests carry, their sizes and constraint counts.

use ark_bn254::Fr;
use ark_relations::r1cs::{ConstraintSynthesizer, ConstraintSystem, SynthesisMode};
use serde::{Deserialize, Serialize};

use crate::circuit::ThresholdCircuit;
use crate::daily::DailyCircuit;
use crate::error::CircuitError;
use crate::statement::MAX_SLOTS;

/// Names the statement and its public-input layout; bumped whenever the
/// constraints change, so old keys are refused rather than misused.
pub const CIRCUIT_ID: &str = "slaproof/threshold-fraction/v1";

/// Which circuit a key is for. Both take the same four public inputs
/// (`PUBLIC_INPUTS`); their sizes count slots for the threshold circuit
/// and days for the daily one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Circuit {
    /// A committed vector of (value, weight) slots (`crate::circuit`).
    Threshold,
    /// A period over its anchored daily commitments (`crate::daily`).
    Daily,
}

impl Circuit {
    /// The id in key manifests.
    pub fn id(self) -> &'static str {
        match self {
            Self::Threshold => CIRCUIT_ID,
            Self::Daily => crate::daily::CIRCUIT_ID,
        }
    }

    /// The circuit of a manifest's id.
    pub fn of_id(id: &str) -> Option<Self> {
        [Self::Threshold, Self::Daily]
            .into_iter()
            .find(|c| c.id() == id)
    }

    /// The circuit named `threshold` or `daily`.
    pub fn of_name(name: &str) -> Option<Self> {
        [Self::Threshold, Self::Daily]
            .into_iter()
            .find(|c| c.name() == name)
    }

    /// `threshold` or `daily`: the stem of its key files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::Daily => "daily",
        }
    }

    pub(crate) fn check_size(self, size: usize) -> Result<(), CircuitError> {
        let max = match self {
            Self::Threshold => MAX_SLOTS,
            Self::Daily => crate::daily::MAX_DAYS,
        };
        if size == 0 || size > max {
            return Err(CircuitError::UnsupportedSlots { slots: size, max });
        }
        Ok(())
    }

    /// Exact number of R1CS constraints at `size`, by synthesis alone.
    pub fn constraint_count(self, size: usize) -> Result<usize, CircuitError> {
        self.check_size(size)?;
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_mode(SynthesisMode::Setup);
        match self {
            Self::Threshold => ThresholdCircuit::blank(size).generate_constraints(cs.clone())?,
            Self::Daily => DailyCircuit::blank(size).generate_constraints(cs.clone())?,
        }
        Ok(cs.num_constraints())
    }
}
