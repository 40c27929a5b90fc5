//! The tenant's evaluation status over GraphQL: the same read as `/v1/evaluation-status`, answered as its REST body.

use async_graphql::{Context, Json, Object};

use super::limits::read_cost;
use super::{parts, refuse};

#[derive(Debug, Default)]
pub(super) struct EvaluationStatusQuery;

#[Object]
impl EvaluationStatusQuery {
    /// What the evaluator is stuck on in the caller's tenant: its
    /// evaluation job, the SLAs whose evaluation fails and the customer
    /// references events named that no customer has yet, as
    /// `GET /v1/evaluation-status` (a provider's `sla:read`).
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn evaluation_status(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (app, caller) = parts(ctx)?;
        let status = app.evaluation_status(caller).await.map_err(refuse)?;
        Ok(Json(serde_json::to_value(status)?))
    }
}
