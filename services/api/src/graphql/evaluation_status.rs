//! The tenant's evaluation status over GraphQL: the same read as `/v1/evaluation-status`, answered as its REST body.

use async_graphql::{Context, Json, Object};

use slaproof_app::Caller;
use slaproof_app::Scope;

use super::limits::read_cost;
use super::{parts, refuse};

/// Shown to a provider's callers with `sla:read`, whom it serves; never to
/// a customer's.
fn holds_status(ctx: &Context<'_>) -> bool {
    ctx.data_opt::<Caller>()
        .is_some_and(|c| c.has(Scope::SlaRead) && c.customer().is_none())
}

#[derive(Debug, Default)]
pub(super) struct EvaluationStatusQuery;

#[Object]
impl EvaluationStatusQuery {
    /// What the evaluator is stuck on in the caller's tenant: its
    /// evaluation job, the SLAs whose evaluation fails and the customer
    /// references events named that no customer has yet, as
    /// `GET /v1/evaluation-status` (a provider's `sla:read`).
    #[graphql(visible = "holds_status", complexity = "read_cost(child_complexity)")]
    async fn evaluation_status(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (app, caller) = parts(ctx)?;
        let status = app.evaluation_status(caller).await.map_err(refuse)?;
        Ok(Json(serde_json::to_value(status)?))
    }
}
