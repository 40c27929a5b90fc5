//! Reading and writing an SLA's attestation policy (`spec.attestation` natively, the `slaproof.dev/attestation` annotation in OpenSLO).

use serde::Serialize;

use super::error::Problems;
use super::tree::Node;
use crate::anchoring::{AnchorPath, AttestationPolicy, KeyHash, ProofCircuit};

/// `{anchor: hash-only | verified | batched, circuit: daily | threshold,
/// verifyingKey: <sha256>}`; `anchor` left out is `hash-only`, `circuit`
/// left out `daily`, `verifyingKey` left out any key the platform loads.
pub(crate) fn read(node: &Node<'_>, p: &mut Problems) -> Option<AttestationPolicy> {
    let o = node.object(&["anchor", "circuit", "verifyingKey"], false, p)?;
    let mut policy = AttestationPolicy::default();
    if let Some(n) = o.get("anchor") {
        let name = n.str(p)?;
        policy.anchor = p.check(&n.path, AnchorPath::parse(name))?;
    }
    if let Some(n) = o.get("circuit") {
        let name = n.str(p)?;
        policy.circuit = p.check(&n.path, ProofCircuit::parse(name))?;
    }
    if let Some(n) = o.get("verifyingKey") {
        let hash = n.str(p)?;
        policy.verifying_key = Some(p.check(&n.path, KeyHash::parse(hash))?);
    }
    Some(policy)
}

/// The document form; `None` for the default, which documents leave out.
pub(crate) fn write(policy: &AttestationPolicy) -> Option<AttestationDoc> {
    (*policy != AttestationPolicy::default()).then(|| AttestationDoc {
        anchor: policy.anchor.as_str(),
        circuit: (policy.circuit != ProofCircuit::default()).then(|| policy.circuit.as_str()),
        verifying_key: policy.verifying_key.map(|k| k.to_string()),
    })
}

#[derive(Debug, Serialize)]
pub(crate) struct AttestationDoc {
    anchor: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    circuit: Option<&'static str>,
    #[serde(rename = "verifyingKey", skip_serializing_if = "Option::is_none")]
    verifying_key: Option<String>,
}

#[cfg(test)]
mod tests {
    use crate::anchoring::KeyHash;
    use crate::sla::SlaDefinition;

    fn doc(attestation: &str) -> String {
        format!(
            "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {{name: acme}}\nspec:\n  service: chat\n  window: {{calendar: month, timeZone: UTC}}\n  objectives:\n    - {{name: availability, target: 99.9%, ratio: {{good: \"status < 500\"}}}}\n  attestation: {attestation}\n"
        )
    }

    #[test]
    fn the_agreed_verifying_key_is_read_written_back_and_a_bad_one_named() {
        let hash = "0f".repeat(32);
        let sla = SlaDefinition::from_document(&doc(&format!("{{verifyingKey: {hash}}}"))).unwrap();
        assert_eq!(
            sla.attestation.verifying_key,
            Some(KeyHash::parse(&hash).unwrap())
        );
        assert_eq!(sla.attestation.verifying_key.unwrap().to_string(), hash);
        for written in [sla.to_native_yaml(), sla.to_openslo_yaml()] {
            assert_eq!(
                SlaDefinition::from_document(&written).unwrap(),
                sla,
                "{written}"
            );
        }
        for bad in ["abc", &"0g".repeat(32), &"0f".repeat(33)] {
            let err = SlaDefinition::from_document(&doc(&format!("{{verifyingKey: \"{bad}\"}}")))
                .unwrap_err();
            assert!(
                err.has("spec.attestation.verifyingKey", "64 hex digits"),
                "{bad}: {err}"
            );
        }
    }
}
