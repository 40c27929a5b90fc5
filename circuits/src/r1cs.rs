//! The circuits as public artefacts: each circuit and size exported to iden3's `.r1cs` binary format, from the same synthesis the prover runs, so anyone can rebuild it from source and a ceremony (`snarkjs groth16 setup`) runs over exactly what slaproof proves.
//!
//! Wires are numbered as the prover's constraint matrices number their
//! columns: wire 0 is the constant one, wires 1..=4 the public inputs in
//! the verifier's order ([`crate::statement::PUBLIC_INPUTS`]), then every
//! witness in allocation order. No wire is an output or a private *input*
//! in circom's sense: the circuit has no inputs apart from its witnesses, so
//! all of them are counted as internal wires, and each wire's label is its
//! own number. Coefficients are written in their standard (not Montgomery)
//! little-endian form, as the format asks.
//!
//! The format: <https://github.com/iden3/r1csfile/blob/master/doc/r1cs_bin_format.md>.

use ark_bn254::Fr;
use ark_ff::{BigInteger, PrimeField};
use ark_relations::r1cs::{
    ConstraintMatrices, ConstraintSynthesizer, ConstraintSystem, OptimizationGoal, SynthesisMode,
};
use sha2::{Digest, Sha256};

use crate::catalog::Circuit;
use crate::circuit::ThresholdCircuit;
use crate::daily::DailyCircuit;
use crate::error::CircuitError;

/// Bytes of a BN254 scalar.
const FIELD_BYTES: usize = 32;
const HEADER_SECTION: u32 = 1;
const CONSTRAINTS_SECTION: u32 = 2;
const WIRE_LABELS_SECTION: u32 = 3;

/// One circuit at one size, as the prover synthesizes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct R1cs {
    pub circuit: Circuit,
    pub size: usize,
    /// Every wire: the constant one, the public inputs, the witnesses.
    pub wires: usize,
    /// Public inputs, not counting the constant one.
    pub public: usize,
    pub constraints: usize,
    /// The `.r1cs` file.
    pub bytes: Vec<u8>,
}

impl R1cs {
    /// sha256 of the `.r1cs` file, hex: what a ceremony's transcript names.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }

    /// The file name the CLI writes: `<circuit>-<size>.r1cs`.
    pub fn file_name(&self) -> String {
        format!("{}-{}.r1cs", self.circuit.name(), self.size)
    }
}

/// Synthesizes `circuit` at `size` as Groth16's setup does (the
/// constraints goal, setup mode, linear combinations inlined) and
/// returns its matrices with the wire counts.
pub(crate) fn matrices(
    circuit: Circuit,
    size: usize,
) -> Result<(ConstraintMatrices<Fr>, usize, usize), CircuitError> {
    circuit.check_size(size)?;
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Setup);
    match circuit {
        Circuit::Threshold => ThresholdCircuit::blank(size).generate_constraints(cs.clone())?,
        Circuit::Daily => DailyCircuit::blank(size).generate_constraints(cs.clone())?,
    }
    cs.finalize();
    let matrices = cs.to_matrices().ok_or(CircuitError::Malformed {
        field: "r1cs",
        reason: "the constraint system kept no matrices".to_owned(),
    })?;
    let public = cs.num_instance_variables() - 1;
    let wires = cs.num_instance_variables() + cs.num_witness_variables();
    Ok((matrices, wires, public))
}

/// `slaproof keys r1cs --circuit C --size N`: the circuit's `.r1cs` file.
pub fn export(circuit: Circuit, size: usize) -> Result<R1cs, CircuitError> {
    let (m, wires, public) = matrices(circuit, size)?;
    let too_big = |what: &'static str| CircuitError::Malformed {
        field: "r1cs",
        reason: format!("{what} do not fit the format's 32-bit counts"),
    };
    let u32_of = |n: usize, what| u32::try_from(n).map_err(|_| too_big(what));

    let mut header = Vec::with_capacity(64);
    header.extend_from_slice(&u32_of(FIELD_BYTES, "field bytes")?.to_le_bytes());
    header.extend_from_slice(&Fr::MODULUS.to_bytes_le());
    header.extend_from_slice(&u32_of(wires, "wires")?.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes()); // public outputs
    header.extend_from_slice(&u32_of(public, "public inputs")?.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes()); // private inputs
    header.extend_from_slice(&(wires as u64).to_le_bytes()); // labels
    header.extend_from_slice(&u32_of(m.num_constraints, "constraints")?.to_le_bytes());

    let terms = m.a_num_non_zero + m.b_num_non_zero + m.c_num_non_zero;
    let mut constraints = Vec::with_capacity(m.num_constraints * 12 + terms * (4 + FIELD_BYTES));
    for i in 0..m.num_constraints {
        for row in [&m.a[i], &m.b[i], &m.c[i]] {
            constraints.extend_from_slice(&u32_of(row.len(), "terms")?.to_le_bytes());
            for (coefficient, wire) in row {
                constraints.extend_from_slice(&u32_of(*wire, "wires")?.to_le_bytes());
                constraints.extend_from_slice(&coefficient.into_bigint().to_bytes_le());
            }
        }
    }

    let mut labels = Vec::with_capacity(wires * 8);
    for wire in 0..wires as u64 {
        labels.extend_from_slice(&wire.to_le_bytes());
    }

    let mut bytes =
        Vec::with_capacity(12 + 3 * 12 + header.len() + constraints.len() + labels.len());
    bytes.extend_from_slice(b"r1cs");
    bytes.extend_from_slice(&1u32.to_le_bytes()); // version
    bytes.extend_from_slice(&3u32.to_le_bytes()); // sections
    for (kind, body) in [
        (HEADER_SECTION, &header),
        (CONSTRAINTS_SECTION, &constraints),
        (WIRE_LABELS_SECTION, &labels),
    ] {
        bytes.extend_from_slice(&kind.to_le_bytes());
        bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
        bytes.extend_from_slice(body);
    }
    Ok(R1cs {
        circuit,
        size,
        wires,
        public,
        constraints: m.num_constraints,
        bytes,
    })
}
