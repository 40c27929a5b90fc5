//! The verdict audit trail: every action that changes what an SLA's verdict rests on (maintenance windows announced, cancelled or accepted, versions applied), written by the operation itself and readable by the SLA's customer.

use chrono::{DateTime, Utc};
use serde_json::Value;
use slaproof_domain::ids::{CustomerId, SlaId};
use slaproof_store::{TenantTx, audit};

use crate::authz::Scope;
use crate::page::{Page, PageRequest};
use crate::{App, AppError, Caller};

/// One record as its readers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecordView {
    /// `aud_…`, time-ordered.
    pub id: String,
    pub at: DateTime<Utc>,
    /// `maintenance.created`, `maintenance.cancelled`,
    /// `maintenance.accepted`, `sla.applied`, `fee.recorded` or `fee.corrected`.
    pub action: String,
    /// Who acted: the subject of the caller's credentials.
    pub actor: String,
    /// The customer the actor acted for, when it was a customer's user.
    pub actor_customer: Option<CustomerId>,
    pub details: Value,
}

/// Records, in the operation's transaction, that `caller` did `action` to
/// what `sla`'s verdict rests on.
pub(crate) async fn record(
    tx: &mut TenantTx,
    caller: &Caller,
    sla: SlaId,
    action: &str,
    details: &Value,
) -> Result<(), AppError> {
    let actor = audit::Actor {
        subject: &caller.principal.subject,
        customer: caller.customer(),
    };
    audit::record(tx, sla, action, &actor, details).await?;
    Ok(())
}

impl App {
    /// An SLA's audit trail, oldest first, in pages: needs `sla:read:audit`
    /// (an embed token may carry it); a customer's user reads its own
    /// SLAs' only.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_audit(
        &self,
        caller: &Caller,
        name: &str,
        page: &PageRequest,
    ) -> Result<Page<AuditRecordView>, AppError> {
        caller.require(Scope::SlaReadAudit)?;
        let keyset = page.keyset()?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        // A customer's user reads none of another customer's records: an
        // SLA moved between customers keeps each one's from the other.
        let own = match (caller.customer(), customer_ref.as_deref()) {
            (Some(id), Some(reference)) => Some((id, reference)),
            _ => None,
        };
        let rows = audit::page(&mut tx, stored.id, own, &keyset).await?;
        tx.commit().await?;
        let views = rows
            .into_iter()
            .map(|r| AuditRecordView {
                id: r.id.to_string(),
                at: r.at,
                action: r.action,
                actor: r.actor,
                actor_customer: r.actor_customer,
                details: r.details,
            })
            .collect();
        Ok(Page::of(views, &keyset, |r| r.id.as_str()))
    }
}
