//! Reading and writing an SLA's attestation policy (`spec.attestation` natively, the `slaproof.dev/attestation` annotation in OpenSLO).

use serde::Serialize;

use super::error::Problems;
use super::tree::Node;
use crate::anchoring::{AnchorPath, AttestationPolicy, ProofCircuit};

/// `{anchor: hash-only | verified | batched, circuit: daily | threshold}`;
/// `anchor` left out is `hash-only`, `circuit` left out `daily`.
pub(crate) fn read(node: &Node<'_>, p: &mut Problems) -> Option<AttestationPolicy> {
    let o = node.object(&["anchor", "circuit"], false, p)?;
    let mut policy = AttestationPolicy::default();
    if let Some(n) = o.get("anchor") {
        let name = n.str(p)?;
        policy.anchor = p.check(&n.path, AnchorPath::parse(name))?;
    }
    if let Some(n) = o.get("circuit") {
        let name = n.str(p)?;
        policy.circuit = p.check(&n.path, ProofCircuit::parse(name))?;
    }
    Some(policy)
}

/// The document form; `None` for the default, which documents leave out.
pub(crate) fn write(policy: &AttestationPolicy) -> Option<AttestationDoc> {
    (*policy != AttestationPolicy::default()).then(|| AttestationDoc {
        anchor: policy.anchor.as_str(),
        circuit: (policy.circuit != ProofCircuit::default()).then(|| policy.circuit.as_str()),
    })
}

#[derive(Debug, Serialize)]
pub(crate) struct AttestationDoc {
    anchor: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    circuit: Option<&'static str>,
}
