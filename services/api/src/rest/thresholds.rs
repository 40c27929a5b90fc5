//! `/v1/slas/{name}/thresholds`: a customer's own alert lines on its SLA's
//! objectives (`sla:write:thresholds`). They never change the contract: a
//! target is the provider's (`PUT …/objectives/{objective}/target`).

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::{ApiProblem, ApiState, ProblemResponses, invalid, parse_body};
use slaproof_app::Caller;
use slaproof_app::thresholds::{NewThreshold, ThresholdView};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/slas/{name}/thresholds", get(list))
        .route(
            "/v1/slas/{name}/thresholds/{objective}",
            axum::routing::put(set).delete(remove),
        )
}

/// The lines on one objective; at least one. Setting replaces all three:
/// a line left out is removed.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThresholdIn {
    /// Tell when compliance falls below this many parts per million
    /// (999500 = 99.95%), 1-1000000.
    #[schema(minimum = 1, maximum = 1000000)]
    pub compliance_below_ppm: Option<u32>,
    /// Tell when the remaining error budget falls below this many parts per
    /// million of the period's allowed budget (250000 = 25%), 1-1000000.
    #[schema(minimum = 1, maximum = 1000000)]
    pub budget_remaining_below_ppm: Option<u32>,
    /// Tell when the burn rate over the last hour exceeds this many
    /// thousandths of the sustainable rate (2000 = 2×), 1-10000000.
    #[schema(minimum = 1, maximum = 10000000)]
    pub burn_rate_above_milli: Option<u64>,
}

/// The lines on an SLA's objectives.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ThresholdsOut {
    pub data: Vec<ThresholdView>,
}

fn sla_name(path: Result<Path<String>, PathRejection>) -> Result<String, ApiProblem> {
    path.map(|Path(n)| n)
        .map_err(|e| invalid("name", e.body_text()))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/thresholds",
    operation_id = "slas_thresholds_list",
    tag = "slas",
    summary = "The customer's own alert lines on the SLA's objectives",
    params(("name" = String, Path, description = "The SLA's name")),
    responses(
        (status = 200, description = "OK", body = ThresholdsOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<ThresholdsOut>, ApiProblem> {
    let name = sla_name(path)?;
    Ok(Json(ThresholdsOut {
        data: state.app.list_thresholds(&caller, &name).await?,
    }))
}

#[utoipa::path(
    put,
    path = "/v1/slas/{name}/thresholds/{objective}",
    operation_id = "slas_thresholds_set",
    tag = "slas",
    summary = "Set the customer's alert lines on one objective (never the contract)",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("objective" = String, Path, description = "The objective's name"),
    ),
    request_body = ThresholdIn,
    responses(
        (status = 200, description = "OK", body = ThresholdView),
        ProblemResponses,
    ),
)]
pub(crate) async fn set(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<ThresholdView>, ApiProblem> {
    let Path((name, objective)) = path.map_err(|e| invalid("path", e.body_text()))?;
    let input: ThresholdIn = parse_body(&bytes)?;
    let new = NewThreshold {
        compliance_below_ppm: input.compliance_below_ppm,
        budget_remaining_below_ppm: input.budget_remaining_below_ppm,
        burn_rate_above_milli: input.burn_rate_above_milli,
    };
    Ok(Json(
        state
            .app
            .set_threshold(&caller, &name, &objective, new)
            .await?,
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/slas/{name}/thresholds/{objective}",
    operation_id = "slas_thresholds_delete",
    tag = "slas",
    summary = "Delete the customer's alert lines on one objective",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("objective" = String, Path, description = "The objective's name"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        ProblemResponses,
    ),
)]
pub(crate) async fn remove(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiProblem> {
    let Path((name, objective)) = path.map_err(|e| invalid("path", e.body_text()))?;
    state
        .app
        .delete_threshold(&caller, &name, &objective)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
