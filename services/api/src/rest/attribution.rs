//! `/v1/slas/{name}/attribution` (where an objective's bad events came from, by one dimension) and `/v1/customers/ranking` (the provider's customers by their bad events this period).

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use slaproof_app::Caller;
use slaproof_app::attribution::{AttributionAsk, AttributionView};
use slaproof_app::customer_ranking::CustomerRanking;

use super::{ApiProblem, ApiState, ProblemResponses, invalid};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/slas/{name}/attribution", get(attribution))
        .route("/v1/customers/ranking", get(ranking))
}

/// `?objective=…&by=…&from=…&to=…&limit=…`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttributionQuery {
    /// The objective whose events are broken down.
    pub objective: String,
    /// `model`, `status`, `error_class`, `source`, `streaming`, `customer`
    /// (the provider's only) or `attr.<name>`.
    pub by: String,
    /// Events that occurred from here (RFC 3339); default: an hour before `to`.
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub from: Option<chrono::DateTime<chrono::Utc>>,
    /// …up to here, at most 24 hours after `from`; default: now.
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub to: Option<chrono::DateTime<chrono::Utc>>,
    /// Values answered, 1-100 (default 10).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/attribution",
    operation_id = "slas_attribution",
    tag = "slas",
    summary = "An objective's bad events by model, status, customer, an attribute, … over at most a day",
    params(("name" = String, Path, description = "The SLA's name"), AttributionQuery),
    responses(
        (status = 200, description = "OK", body = AttributionView),
        ProblemResponses,
    ),
)]
pub(crate) async fn attribution(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<AttributionQuery>, QueryRejection>,
) -> Result<Json<AttributionView>, ApiProblem> {
    let Path(name) = path.map_err(|e| invalid("name", e.body_text()))?;
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    let ask = AttributionAsk {
        objective: query.objective,
        by: query.by,
        from: query.from,
        to: query.to,
        limit: query.limit,
    };
    Ok(Json(state.app.attribution(&caller, &name, &ask).await?))
}

/// `?limit=…`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct RankingQuery {
    /// Customers answered, 1-500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<usize>,
}

#[utoipa::path(
    get,
    path = "/v1/customers/ranking",
    operation_id = "customers_ranking",
    tag = "customers",
    summary = "Customers ranked by their SLAs' bad requests this period (provider only)",
    params(RankingQuery),
    responses(
        (status = 200, description = "OK", body = CustomerRanking),
        ProblemResponses,
    ),
)]
pub(crate) async fn ranking(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<RankingQuery>, QueryRejection>,
) -> Result<Json<CustomerRanking>, ApiProblem> {
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    Ok(Json(
        state.app.customer_ranking(&caller, query.limit).await?,
    ))
}
