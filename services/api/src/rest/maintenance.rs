//! `/v1/maintenance-windows` and `/v1/slas/{name}/maintenance-windows`: providers announce and cancel windows, customers accept emergency ones for their SLAs.

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
use slaproof_app::maintenance::{SlaStanding, WindowView};
use slaproof_domain::ids::{MaintenanceWindowId, SlaId};
use slaproof_domain::maintenance::Standing;

use super::{ApiProblem, ApiState, ProblemResponses, created, invalid, parse_body};
use slaproof_app::maintenance::NewWindow;
use slaproof_app::{AppError, Caller};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/maintenance-windows", post(create))
        .route("/v1/maintenance-windows/{id}/cancel", post(cancel))
        .route("/v1/slas/{name}/maintenance-windows", get(list))
        .route(
            "/v1/slas/{name}/maintenance-windows/{id}/accept",
            post(accept),
        )
}

/// A window to plan.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MaintenanceWindowIn {
    /// The SLA's name; absent: every SLA of the tenant.
    #[serde(default)]
    pub sla: Option<String>,
    #[serde(deserialize_with = "crate::rest::instant::required")]
    pub starts_at: DateTime<Utc>,
    #[serde(deserialize_with = "crate::rest::instant::required")]
    pub ends_at: DateTime<Utc>,
    pub description: String,
}

/// How a window stands for an SLA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MaintenanceStatus {
    /// Inside the maintenance schedule of the SLA, announced with its
    /// notice and within its cap per period: excluded from the SLA's
    /// measurement.
    Planned,
    /// Inside the schedule with the notice, but beyond the SLA's cap per
    /// period in part or whole: that part counts against the provider
    /// unless the customer accepts the window.
    BeyondCap,
    /// Announced with the notice but outside the SLA's schedule (or the
    /// SLA has none): counts against the provider unless the customer
    /// accepts it.
    Proposed,
    /// Announced with less than the SLA's notice, or once it had started:
    /// counts against the provider unless the customer accepts it.
    Emergency,
    /// Accepted by the SLA's customer: excluded whole.
    Accepted,
    Cancelled,
}

impl From<Standing> for MaintenanceStatus {
    fn from(s: Standing) -> Self {
        match s {
            Standing::Planned => Self::Planned,
            Standing::BeyondCap => Self::BeyondCap,
            Standing::Proposed => Self::Proposed,
            Standing::Emergency => Self::Emergency,
            Standing::Accepted => Self::Accepted,
            Standing::Cancelled => Self::Cancelled,
        }
    }
}

/// How a window stands for one SLA it covers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct MaintenanceSlaOut {
    #[schema(value_type = String)]
    pub sla: SlaId,
    pub name: String,
    pub status: MaintenanceStatus,
}

impl From<SlaStanding> for MaintenanceSlaOut {
    fn from(s: SlaStanding) -> Self {
        Self {
            sla: s.sla,
            name: s.name,
            status: s.standing.into(),
        }
    }
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
    /// When the window was announced: its notice is judged from this.
    pub created_at: DateTime<Utc>,
    /// Who announced it (the subject of the caller's token).
    pub created_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<String>,
    /// How the window stands for the SLA it was read, accepted or
    /// cancelled for, or for its one SLA when announced; absent for a
    /// tenant-wide window just announced (see `slas`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<MaintenanceStatus>,
    /// When the SLA's customer accepted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_at: Option<DateTime<Utc>>,
    /// Who accepted it (the subject of the customer's user).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_by: Option<String>,
    /// When announced or cancelled: how it stands for each SLA it covers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slas: Vec<MaintenanceSlaOut>,
}

impl From<WindowView> for MaintenanceWindowOut {
    fn from(v: WindowView) -> Self {
        let w = v.window;
        Self {
            id: w.id,
            sla: w.sla,
            starts_at: w.starts_at,
            ends_at: w.ends_at,
            description: w.description,
            created_at: w.created_at,
            created_by: w.created_by,
            cancelled_at: w.cancelled_at,
            cancelled_by: w.cancelled_by,
            status: v.standing.map(Into::into),
            accepted_at: v.acceptance.as_ref().map(|a| a.accepted_at),
            accepted_by: v.acceptance.map(|a| a.accepted_by),
            slas: v.slas.into_iter().map(Into::into).collect(),
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
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub from: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub to: Option<DateTime<Utc>>,
}

#[utoipa::path(
    post,
    path = "/v1/maintenance-windows",
    operation_id = "maintenance_windows_create",
    tag = "maintenance",
    summary = "Announce a maintenance window",
    description = "Announced now, by the caller: for each SLA it covers, planned when it starts at least the SLA's notice from now (and excluded within the SLA's cap per period), an emergency otherwise (counted against the provider unless the customer accepts it). Tells `maintenance.scheduled`; each SLA's audit trail records `maintenance.created`.",
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
    description = "Records who cancelled it; tells `maintenance.cancelled` and records it on each covered SLA's audit trail. Cancelling again changes nothing. 409 once the window has started: its periods are judged with it, so it is cancelled only before it starts.",
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
    description = "Each with how it stands for the SLA (`status`): planned, beyond_cap, proposed, emergency or accepted.",
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

#[utoipa::path(
    post,
    path = "/v1/slas/{name}/maintenance-windows/{id}/accept",
    operation_id = "maintenance_windows_accept",
    tag = "maintenance",
    summary = "Accept an emergency maintenance window for an SLA",
    description = "The SLA's customer agrees to a window announced with less than the SLA's notice (or beyond its cap): it is then excluded whole. Needs `maintenance:accept`, held by a customer's users only (`customer_admin`); a provider is refused whatever its roles. 409 for a planned or cancelled window; accepting again answers the first acceptance. Tells `maintenance.accepted` and records it on the SLA's audit trail.",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("id" = String, Path, description = "`mw_…`"),
    ),
    responses(
        (status = 200, description = "OK", body = MaintenanceWindowOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn accept(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<MaintenanceWindowOut>, ApiProblem> {
    let Path((name, id)) = path.map_err(|e| invalid("id", e.body_text()))?;
    let id: MaintenanceWindowId = id.parse().map_err(|_| {
        ApiProblem::from(AppError::NotFound {
            what: "maintenance window",
            key: id.clone(),
        })
    })?;
    Ok(Json(
        state.app.accept_window(&caller, &name, id).await?.into(),
    ))
}
