//! `/v1/maintenance-windows` and `/v1/slas/{name}/maintenance-windows`.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use slaproof_app::idempotency::Creating;
use slaproof_app::maintenance::StoredMaintenanceWindow;
use slaproof_domain::ids::{MaintenanceWindowId, SlaId};

use super::{ApiProblem, ApiState, ProblemResponses, created, invalid, parse_body};
use slaproof_app::maintenance::NewWindow;
use slaproof_app::{AppError, Caller};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/maintenance-windows", post(create))
        .route("/v1/maintenance-windows/{id}/cancel", post(cancel))
        .route("/v1/slas/{name}/maintenance-windows", get(list))
}

/// A window to plan.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MaintenanceWindowIn {
    /// The SLA's name; absent: every SLA of the tenant.
    #[serde(default)]
    pub sla: Option<String>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub description: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct MaintenanceWindowOut {
    #[schema(value_type = String, example = "mw_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: MaintenanceWindowId,
    /// Absent for a tenant-wide window.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub sla: Option<SlaId>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<DateTime<Utc>>,
}

impl From<StoredMaintenanceWindow> for MaintenanceWindowOut {
    fn from(w: StoredMaintenanceWindow) -> Self {
        Self {
            id: w.id,
            sla: w.sla,
            starts_at: w.starts_at,
            ends_at: w.ends_at,
            description: w.description,
            cancelled_at: w.cancelled_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct MaintenanceWindowsOut {
    pub data: Vec<MaintenanceWindowOut>,
}

/// `?from=…&to=…`; by default the last 30 days and the next 90.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RangeQuery {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

#[utoipa::path(
    post,
    path = "/v1/maintenance-windows",
    operation_id = "maintenance_windows_create",
    tag = "maintenance",
    summary = "Plan a maintenance window",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = MaintenanceWindowIn,
    responses(
        (status = 201, description = "Created", body = MaintenanceWindowOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: MaintenanceWindowIn = parse_body(&bytes)?;
    let new = NewWindow {
        sla: input.sla,
        starts_at: input.starts_at,
        ends_at: input.ends_at,
        description: input.description,
    };
    let route = "POST /v1/maintenance-windows";
    let app = &state.app;
    created(
        &state,
        &caller,
        &headers,
        Creating::MAINTENANCE_WINDOW,
        (route, &bytes),
        async |tx| app.create_window_in(tx, &caller, new).await,
        |window| (StatusCode::CREATED, MaintenanceWindowOut::from(window)),
    )
    .await
}

#[utoipa::path(
    post,
    path = "/v1/maintenance-windows/{id}/cancel",
    operation_id = "maintenance_windows_cancel",
    tag = "maintenance",
    summary = "Cancel a maintenance window",
    params(("id" = String, Path, description = "`mw_…`")),
    responses(
        (status = 200, description = "OK", body = MaintenanceWindowOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn cancel(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<MaintenanceWindowOut>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    let id: MaintenanceWindowId = id.parse().map_err(|_| {
        ApiProblem::from(AppError::NotFound {
            what: "maintenance window",
            key: id.clone(),
        })
    })?;
    Ok(Json(state.app.cancel_window(&caller, id).await?.into()))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/maintenance-windows",
    operation_id = "maintenance_windows_list",
    tag = "maintenance",
    summary = "Maintenance windows of an SLA in a range",
    params(("name" = String, Path, description = "The SLA's name"), RangeQuery),
    responses(
        (status = 200, description = "OK", body = MaintenanceWindowsOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    name: Result<Path<String>, PathRejection>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> Result<Json<MaintenanceWindowsOut>, ApiProblem> {
    let Path(name) = name.map_err(|e| invalid("name", e.body_text()))?;
    let Query(range) = query.map_err(|e| invalid("query", e.body_text()))?;
    let now = Utc::now();
    let from = range.from.unwrap_or(now - Duration::days(30));
    let to = range.to.unwrap_or(now + Duration::days(90));
    let windows = state.app.sla_windows(&caller, &name, from, to).await?;
    Ok(Json(MaintenanceWindowsOut {
        data: windows.into_iter().map(Into::into).collect(),
    }))
}
