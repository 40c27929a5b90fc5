//! Attestations over GraphQL: the same reads as `/v1/slas/{name}/attestations` and `/v1/attestations/{id}[/bundle]`.

use async_graphql::{Context, Json, Object, SimpleObject};
use slaproof_app::Scope;

use super::limits::{read_cost, unpaged_cost};
use super::{holds, instant, parts, refuse};

fn holds_attestations(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::AttestationRead)
}

#[derive(Debug, Default)]
pub(super) struct AttestationQuery;

#[Object]
impl AttestationQuery {
    /// An SLA's attestations, newest period first: one per closed period
    /// result of each objective.
    #[graphql(
        visible = "holds_attestations",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn attestations(
        &self,
        ctx: &Context<'_>,
        sla: String,
        #[graphql(desc = "Only the period starting at this instant (RFC 3339)")]
        period_start: Option<String>,
    ) -> async_graphql::Result<Vec<Attestation>> {
        let start = instant("periodStart", period_start)?;
        let (app, caller) = parts(ctx)?;
        // Read whole, page by page, and costed as such (as the credits are).
        let mut page = slaproof_app::page::PageRequest {
            cursor: None,
            limit: Some(slaproof_app::page::MAX_PAGE),
        };
        let mut all = Vec::new();
        loop {
            let view = app
                .sla_attestations(caller, &sla, start, &page)
                .await
                .map_err(refuse)?;
            all.extend(view.attestations.into_iter().map(Attestation::from));
            match view.next_cursor {
                Some(next) => page.cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One attestation.
    #[graphql(
        visible = "holds_attestations",
        complexity = "read_cost(child_complexity)"
    )]
    async fn attestation(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<Attestation> {
        let (app, caller) = parts(ctx)?;
        Ok(app.attestation(caller, &id).await.map_err(refuse)?.into())
    }

    /// The auditor's files of an anchored attestation, by file name.
    #[graphql(
        visible = "holds_attestations",
        complexity = "read_cost(child_complexity)"
    )]
    async fn attestation_bundle(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (app, caller) = parts(ctx)?;
        Ok(Json(
            app.attestation_bundle(caller, &id).await.map_err(refuse)?,
        ))
    }
}

/// A closed period's proof and where it is anchored.
#[derive(Debug, SimpleObject)]
struct Attestation {
    id: String,
    objective: String,
    version: i32,
    period_start: String,
    period_end: String,
    /// The revision of the period result it proves.
    revision: i32,
    /// `pending`, `proven`, `anchored` or `not_provable`.
    status: String,
    /// Why it is not provable, or what the last attempt met.
    reason: Option<String>,
    /// The vector proven: field, unit, threshold, committed values, the
    /// proven fraction and the days' counts.
    vector: Option<Json<serde_json::Value>>,
    slots: Option<i32>,
    /// The proven fraction, parts per million.
    quota_ppm: Option<i32>,
    commitment: Option<String>,
    context: Option<String>,
    vk_sha256: Option<String>,
    proof_sha256: Option<String>,
    statement_id: Option<String>,
    proven_at: Option<String>,
    /// Where it is (to be) anchored: `hash-only`, `verified` or `batched`
    /// (the SLA version's `spec.attestation.anchor`).
    anchor_path: String,
    /// Path, chain id, EAS address, attestation UID, transaction, block;
    /// for a batch also its root, epoch, size and the inclusion proof.
    anchor: Option<Json<serde_json::Value>>,
    anchored_at: Option<String>,
    /// Who set up the key it was proven with: `development` (one party's
    /// setup: whoever ran it can forge a proof) or `ceremony`.
    key_setup: String,
}

impl From<slaproof_app::attestations::Attestation> for Attestation {
    fn from(a: slaproof_app::attestations::Attestation) -> Self {
        Self {
            id: a.id.to_string(),
            objective: a.objective,
            version: a.version,
            period_start: a.period_start.to_rfc3339(),
            period_end: a.period_end.to_rfc3339(),
            revision: a.revision,
            status: a.status,
            reason: a.reason,
            vector: a.vector.map(Json),
            slots: a.slots,
            quota_ppm: a.quota_ppm,
            commitment: a.commitment,
            context: a.context,
            vk_sha256: a.vk_sha256,
            proof_sha256: a.proof_sha256,
            statement_id: a.statement_id,
            proven_at: a.proven_at.map(|t| t.to_rfc3339()),
            anchor_path: a.anchor_path,
            anchor: a.anchor.map(Json),
            anchored_at: a.anchored_at.map(|t| t.to_rfc3339()),
            key_setup: a.key_setup,
        }
    }
}
