//! `/v1/slas`: SLA documents in (native or OpenSLO), views, versions,
//! exports and compliance out.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::{
    ApiProblem, ApiState, ListOut, PageQuery, ProblemResponses, created, invalid, page, parse_body,
};
use slaproof_app::Caller;
use slaproof_app::compliance::{BudgetStatusView, ComplianceView};
use slaproof_app::dashboard::DashboardView;
use slaproof_app::history::{AlertsView, BreachesView, PeriodsView, SeriesView};
use slaproof_app::idempotency::Creating;
use slaproof_app::slas::{AppliedView, ApplyOptions, ExportFormat, SlaSummaryView, SlaView};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/slas", get(list).post(apply))
        .route("/v1/slas/{name}", get(show))
        .route("/v1/slas/{name}/versions", get(versions))
        .route("/v1/slas/{name}/export", get(export))
        .route("/v1/slas/{name}/compliance", get(compliance))
        .route("/v1/slas/{name}/budget-status", get(budget_status))
        .route("/v1/slas/{name}/compliance/series", get(series))
        .route("/v1/slas/{name}/dashboard", get(dashboard))
        .route("/v1/slas/{name}/alerts", get(alerts))
        .route("/v1/slas/{name}/breaches", get(breaches))
        .route("/v1/slas/{name}/periods", get(periods))
        .route(
            "/v1/slas/{name}/objectives/{objective}/target",
            axum::routing::put(change_target),
        )
}

/// An SLA document to apply: native `slaproof/v1` or OpenSLO v1, YAML or
/// JSON, as text. Applying an equal document again changes nothing. To an
/// SLA that exists, a native document is the whole SLA; OpenSLO SLOs merge
/// into it (each replaces the objective of its name, the others are kept)
/// unless `replace`. A version that would drop objectives is refused (409
/// naming them) unless `drop_objectives`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlaIn {
    pub document: String,
    /// An OpenSLO document replaces the whole SLA instead of merging into it.
    #[serde(default)]
    pub replace: bool,
    /// Confirms a version that drops objectives of the one in force.
    #[serde(default)]
    pub drop_objectives: bool,
}

/// The service layer's views are already the wire shapes; these aliases
/// keep the REST naming.
pub(crate) type SlaOut = SlaView;
pub(crate) type SlaSummaryOut = SlaSummaryView;
pub(crate) type ComplianceOut = ComplianceView;

#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ShowQuery {
    /// An older version (needs `sla:read:history`); default: the one in force.
    #[param(minimum = 1)]
    pub version: Option<i32>,
}

#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ExportQuery {
    /// `native` (default) or `openslo`.
    pub format: Option<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct VersionsOut {
    pub data: Vec<SlaOut>,
}

fn name(path: Result<Path<String>, PathRejection>) -> Result<String, ApiProblem> {
    path.map(|Path(n)| n)
        .map_err(|e| invalid("name", e.body_text()))
}

#[utoipa::path(
    get,
    path = "/v1/slas",
    operation_id = "slas_list",
    tag = "slas",
    summary = "List SLAs (a customer's user: its own)",
    params(PageQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<SlaSummaryView>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<ListOut<SlaSummaryOut>>, ApiProblem> {
    let page = state.app.list_slas(&caller, &page(query)?).await?;
    Ok(Json(page.into()))
}

#[utoipa::path(
    post,
    path = "/v1/slas",
    operation_id = "slas_apply",
    tag = "slas",
    summary = "Create an SLA or a new version from a native or OpenSLO document",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = SlaIn,
    responses(
        (status = 201, description = "Created", body = AppliedView),
        (status = 200, description = "A new version, or unchanged", body = AppliedView),
        ProblemResponses,
    ),
)]
pub(crate) async fn apply(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: SlaIn = parse_body(&bytes)?;
    let route = "POST /v1/slas";
    let app = &state.app;
    // Read before the transaction, off the runtime.
    let document = app.read_sla_document(&caller, &input.document).await?;
    created(
        &state,
        &caller,
        &headers,
        Creating::SLA,
        (route, &bytes),
        async |tx| {
            let options = ApplyOptions {
                replace: input.replace,
                drop_objectives: input.drop_objectives,
            };
            app.apply_sla_in(tx, &caller, document, options).await
        },
        |applied| {
            let status = if applied.outcome == "created" {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            (status, applied)
        },
    )
    .await
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}",
    operation_id = "slas_show",
    tag = "slas",
    summary = "Get an SLA, fields limited by scope",
    params(("name" = String, Path, description = "The SLA's name"), ShowQuery),
    responses(
        (status = 200, description = "OK", body = SlaView),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<ShowQuery>, QueryRejection>,
) -> Result<Json<SlaOut>, ApiProblem> {
    let name = name(path)?;
    let Query(query) = query.map_err(|e| invalid("version", e.body_text()))?;
    Ok(Json(
        state.app.get_sla(&caller, &name, query.version).await?,
    ))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/versions",
    operation_id = "slas_versions",
    tag = "slas",
    summary = "Every version of an SLA, newest first",
    params(("name" = String, Path, description = "The SLA's name")),
    responses(
        (status = 200, description = "OK", body = VersionsOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn versions(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<VersionsOut>, ApiProblem> {
    let name = name(path)?;
    Ok(Json(VersionsOut {
        data: state.app.sla_versions(&caller, &name).await?,
    }))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/export",
    operation_id = "slas_export",
    tag = "slas",
    summary = "Export an SLA document",
    params(("name" = String, Path, description = "The SLA's name"), ExportQuery),
    responses(
        (status = 200, description = "The document", body = String, content_type = "application/yaml"),
        ProblemResponses,
    ),
)]
pub(crate) async fn export(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, ApiProblem> {
    let name = name(path)?;
    let Query(query) = query.map_err(|e| invalid("format", e.body_text()))?;
    let format = match query.format.as_deref() {
        None | Some("native") => ExportFormat::Native,
        Some("openslo") => ExportFormat::OpenSlo,
        Some(other) => {
            return Err(invalid(
                "format",
                format!("must be `native` or `openslo`, got {other:?}"),
            ));
        }
    };
    let yaml = state.app.export_sla(&caller, &name, None, format).await?;
    Ok(([(header::CONTENT_TYPE, "application/yaml")], yaml).into_response())
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/compliance",
    operation_id = "slas_compliance",
    tag = "slas",
    summary = "Current compliance and error budgets, per objective",
    params(("name" = String, Path, description = "The SLA's name")),
    responses(
        (status = 200, description = "OK", body = ComplianceView),
        ProblemResponses,
    ),
)]
pub(crate) async fn compliance(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<ComplianceOut>, ApiProblem> {
    let name = name(path)?;
    Ok(Json(state.app.sla_compliance(&caller, &name).await?))
}

/// Seconds a gateway may reuse a budget status: the evaluator refreshes it
/// every round (30 s by default), so a shorter age would only add load.
pub(crate) const BUDGET_STATUS_MAX_AGE_SECS: u32 = 10;

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/budget-status",
    operation_id = "slas_budget_status",
    tag = "slas",
    summary = "Remaining error budget and burn rate, cacheable, for gateways",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("If-None-Match" = Option<String>, Header, description = "The ETag of a status already held"),
    ),
    responses(
        (status = 200, description = "OK", body = BudgetStatusView),
        (status = 304, description = "Unchanged since the ETag given"),
        ProblemResponses,
    ),
)]
pub(crate) async fn budget_status(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiProblem> {
    let name = name(path)?;
    let status = state.app.budget_status(&caller, &name).await?;
    let body = serde_json::to_vec(&status)
        .map_err(|e| ApiProblem::from(slaproof_app::AppError::Internal(Box::new(e))))?;
    // A strong validator of exactly these bytes; the answer depends on the
    // caller's scopes, so caches must keep it private.
    let etag = format!("\"{}\"", hex::encode(&sha2::Sha256::digest(&body)[..16]));
    let cache = format!("private, max-age={BUDGET_STATUS_MAX_AGE_SECS}");
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let headers = [
        (header::ETAG, etag),
        (header::CACHE_CONTROL, cache),
        (header::VARY, "authorization".to_owned()),
    ];
    if matches {
        return Ok((StatusCode::NOT_MODIFIED, headers).into_response());
    }
    Ok((
        StatusCode::OK,
        headers,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// `?objective=…&from=…&to=…`; by default the last day.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SeriesQuery {
    /// The objective's name.
    pub objective: String,
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub from: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub to: Option<chrono::DateTime<chrono::Utc>>,
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/compliance/series",
    operation_id = "slas_compliance_series",
    tag = "slas",
    summary = "Compliance and budget of one objective over time (every evaluation)",
    params(("name" = String, Path, description = "The SLA's name"), SeriesQuery),
    responses(
        (status = 200, description = "OK", body = SeriesView),
        ProblemResponses,
    ),
)]
pub(crate) async fn series(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<SeriesQuery>, QueryRejection>,
) -> Result<Json<SeriesView>, ApiProblem> {
    let name = name(path)?;
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    let to = query.to.unwrap_or_else(chrono::Utc::now);
    let from = query.from.unwrap_or(to - chrono::Duration::days(1));
    Ok(Json(
        state
            .app
            .compliance_series(&caller, &name, &query.objective, from, to)
            .await?,
    ))
}

/// `?from=…&to=…`, RFC 3339; by default the last day, at most two days.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DashboardQuery {
    /// Start of the minutes (rounded down to the minute); default: a day before `to`.
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub from: Option<chrono::DateTime<chrono::Utc>>,
    /// End of the minutes (rounded up to the minute); default: now.
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub to: Option<chrono::DateTime<chrono::Utc>>,
    /// The width of each point: `1m` (default), `5m`, `15m`, `1h`, `6h` or
    /// `1d`; at most 2,880 points are answered (a month takes `1h`).
    pub step: Option<String>,
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/dashboard",
    operation_id = "slas_dashboard",
    tag = "slas",
    summary = "Compliance, budgets and one-minute points per objective, in one read",
    params(("name" = String, Path, description = "The SLA's name"), DashboardQuery),
    responses(
        (status = 200, description = "OK", body = DashboardView),
        ProblemResponses,
    ),
)]
pub(crate) async fn dashboard(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<DashboardQuery>, QueryRejection>,
) -> Result<Json<DashboardView>, ApiProblem> {
    let name = name(path)?;
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    Ok(Json(
        state
            .app
            .sla_dashboard(
                &caller,
                &name,
                query.from,
                query.to,
                slaproof_app::dashboard::parse_step(query.step.as_deref())?,
            )
            .await?,
    ))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/alerts",
    operation_id = "slas_alerts",
    tag = "slas",
    summary = "Burn-rate alerts of an SLA",
    params(("name" = String, Path, description = "The SLA's name")),
    responses(
        (status = 200, description = "OK", body = AlertsView),
        ProblemResponses,
    ),
)]
pub(crate) async fn alerts(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<AlertsView>, ApiProblem> {
    let name = name(path)?;
    Ok(Json(state.app.sla_alerts(&caller, &name).await?))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/breaches",
    operation_id = "slas_breaches",
    tag = "slas",
    summary = "Closed periods not met, in their revision in force",
    params(("name" = String, Path, description = "The SLA's name")),
    responses(
        (status = 200, description = "OK", body = BreachesView),
        ProblemResponses,
    ),
)]
pub(crate) async fn breaches(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<BreachesView>, ApiProblem> {
    let name = name(path)?;
    Ok(Json(state.app.sla_breaches(&caller, &name).await?))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/periods",
    operation_id = "slas_periods",
    tag = "slas",
    summary = "Closed periods, met and not met, in their revision in force",
    params(("name" = String, Path, description = "The SLA's name")),
    responses(
        (status = 200, description = "OK", body = PeriodsView),
        ProblemResponses,
    ),
)]
pub(crate) async fn periods(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<PeriodsView>, ApiProblem> {
    let name = name(path)?;
    Ok(Json(state.app.sla_periods(&caller, &name).await?))
}

/// A new target for one objective.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TargetIn {
    /// Parts per million of good events, 1-999999 (999000 = 99.9%).
    #[schema(minimum = 1, maximum = 999999)]
    pub target_ppm: u32,
}

#[utoipa::path(
    put,
    path = "/v1/slas/{name}/objectives/{objective}/target",
    operation_id = "slas_change_target",
    tag = "slas",
    summary = "Change one objective's target, as a new version",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("objective" = String, Path, description = "The objective's name"),
    ),
    request_body = TargetIn,
    responses(
        (status = 200, description = "OK", body = AppliedView),
        ProblemResponses,
    ),
)]
pub(crate) async fn change_target(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<AppliedView>, ApiProblem> {
    let Path((name, objective)) = path.map_err(|e| invalid("path", e.body_text()))?;
    let input: TargetIn = parse_body(&bytes)?;
    Ok(Json(
        state
            .app
            .change_target(&caller, &name, &objective, input.target_ppm)
            .await?,
    ))
}
