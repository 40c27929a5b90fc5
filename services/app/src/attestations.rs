//! Attestations: each closed period's proof and where it is anchored, read
//! per SLA and one by one, and the auditor's bundle of files.
//!
//! Reading needs `attestation:read` only: an auditor holds nothing else, and
//! an attestation is a claim made to be checked by anyone handed it. A
//! customer's user sees the attestations of its own SLAs' versions only,
//! an embed token those of its one SLA.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::ids::SlaId;
use slaproof_store::attestations;
pub use slaproof_store::attestations::Attestation;
use slaproof_store::{TenantTx, slas};

use crate::authz::Scope;
use crate::page::{PageRequest, cursor_of};
use crate::{App, AppError, Caller};

/// A page of an SLA's attestations, newest period first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AttestationsView {
    pub sla: String,
    pub attestations: Vec<Attestation>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl App {
    /// A page of the attestations of the SLA called `name`; of one period
    /// when `period_start` is given.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_attestations(
        &self,
        caller: &Caller,
        name: &str,
        period_start: Option<DateTime<Utc>>,
        page: &PageRequest,
    ) -> Result<AttestationsView, AppError> {
        caller.require(Scope::AttestationRead)?;
        let keyset = page.keyset()?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.sla_in_view(&mut tx, caller, name, None).await?;
        let readable = self
            .readable_versions(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        let mut rows = attestations::page(
            &mut tx,
            stored.id,
            period_start,
            readable.as_deref(),
            &keyset,
        )
        .await?;
        tx.commit().await?;
        // One row past the page says there is another.
        let more = rows.len() > keyset.limit as usize;
        rows.truncate(keyset.limit as usize);
        let next_cursor = rows
            .last()
            .filter(|_| more)
            .map(|last| cursor_of(&attestations::page_key(last)));
        Ok(AttestationsView {
            sla: name.to_owned(),
            attestations: rows,
            next_cursor,
        })
    }

    /// One attestation, if it is of an SLA version within the caller's view.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn attestation(&self, caller: &Caller, id: &str) -> Result<Attestation, AppError> {
        caller.require(Scope::AttestationRead)?;
        let mut tx = self.tx(caller).await?;
        let row = self.readable_attestation(&mut tx, caller, id).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// The auditor's files of an anchored attestation (file name →
    /// content): what `slaproof verify --dir` and `snarkjs groth16 verify`
    /// take.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn attestation_bundle(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<serde_json::Value, AppError> {
        caller.require(Scope::AttestationRead)?;
        let mut tx = self.tx(caller).await?;
        let row = self.readable_attestation(&mut tx, caller, id).await?;
        let bundle = attestations::bundle(&mut tx, row.id).await?;
        tx.commit().await?;
        bundle.ok_or_else(|| {
            AppError::Conflict(format!(
                "attestation {id} is {}: its files exist once it is anchored{}",
                row.status,
                row.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ))
        })
    }

    /// The attestation `id` if the caller may read it; "not found" for one
    /// it may not, exactly as for one that does not exist.
    async fn readable_attestation(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        id: &str,
    ) -> Result<Attestation, AppError> {
        let not_found = || AppError::NotFound {
            what: "attestation",
            key: id.to_owned(),
        };
        let uuid: uuid::Uuid = id.parse().map_err(|_| not_found())?;
        let row = attestations::get(tx, uuid).await?.ok_or_else(not_found)?;
        let name = slas::name_of(tx, SlaId::from_uuid(row.sla_id)).await?;
        let (stored, customer_ref) =
            self.sla_in_view(tx, caller, &name, None)
                .await
                .map_err(|e| match e {
                    // Hidden from this caller: the attestation's id says nothing.
                    AppError::NotFound { .. } => not_found(),
                    other => other,
                })?;
        let readable = self
            .readable_versions(tx, caller, &stored, customer_ref.as_deref())
            .await?;
        if readable.is_some_and(|v| !v.contains(&row.version)) {
            return Err(not_found());
        }
        Ok(row)
    }
}
