//! The verdict audit trail over GraphQL: `Sla.audit`'s records.

use async_graphql::{Json, SimpleObject};

use slaproof_app::audit::AuditRecordView;

/// An action that changed what an SLA's verdict rests on.
#[derive(Debug, SimpleObject)]
pub(super) struct AuditRecord {
    /// `aud_…`, time-ordered.
    id: String,
    /// RFC 3339.
    at: String,
    /// `maintenance.created`, `maintenance.cancelled`,
    /// `maintenance.accepted`, `sla.applied`, `fee.recorded` or `fee.corrected`.
    action: String,
    /// Who acted: the subject of the caller's token.
    actor: String,
    /// `cus_…`: the customer the actor acted for, when it was a
    /// customer's user.
    actor_customer: Option<String>,
    /// What was done (as in REST's `details`).
    details: Json<serde_json::Value>,
}

impl From<AuditRecordView> for AuditRecord {
    fn from(r: AuditRecordView) -> Self {
        Self {
            id: r.id,
            at: r.at.to_rfc3339(),
            action: r.action,
            actor: r.actor,
            actor_customer: r.actor_customer.map(|c| c.to_string()),
            details: Json(r.details),
        }
    }
}
