//! The facts the attestation worker tells (`attestation.anchored`, `attestation.failed`): what each says of the attestation it is about.

use serde_json::{Map, Value, json};
use slaproof_domain::ids::SlaId;
use slaproof_store::attestations::Attestation;

use crate::bundle::ClaimRecord;

/// A fact about `row` (its SLA named as `claim` names it) with `fields`
/// added: the attestation, its SLA and version, the objective, the period
/// and the result's revision, as every attestation fact starts.
pub(crate) fn about(row: &Attestation, claim: &ClaimRecord, fields: Value) -> Value {
    let mut fact = Map::new();
    fact.insert("attestation".into(), json!(row.id));
    fact.insert(
        "sla".into(),
        json!(SlaId::from_uuid(row.sla_id).to_string()),
    );
    fact.insert("slaName".into(), json!(claim.sla));
    fact.insert("version".into(), json!(row.version));
    fact.insert("objective".into(), json!(row.objective));
    fact.insert("periodStart".into(), json!(row.period_start));
    fact.insert("periodEnd".into(), json!(row.period_end));
    fact.insert("revision".into(), json!(row.revision));
    if let Value::Object(more) = fields {
        fact.extend(more);
    }
    Value::Object(fact)
}
