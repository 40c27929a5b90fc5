//! `/v1/evaluation-status`: what the evaluator is stuck on in the caller's
//! tenant — its evaluation job and the SLAs whose evaluation fails (a
//! provider's `sla:read`; not for customers' users).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use slaproof_app::Caller;
use slaproof_app::evaluation_status::EvaluationStatus;

use super::{ApiProblem, ApiState, ProblemResponses};

pub(crate) fn router() -> Router<ApiState> {
    Router::new().route("/v1/evaluation-status", get(show))
}

#[utoipa::path(
    get,
    path = "/v1/evaluation-status",
    operation_id = "evaluation_status_show",
    tag = "evaluation",
    summary = "The tenant's evaluation job (last success, failed attempts, next run) and its SLAs whose evaluation fails",
    responses(
        (status = 200, description = "OK", body = EvaluationStatus),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<EvaluationStatus>, ApiProblem> {
    Ok(Json(state.app.evaluation_status(&caller).await?))
}
