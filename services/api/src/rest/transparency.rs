//! `/v1/transparency/…`: the tenant's transparency log: signed daily heads
//! and consistency between them (`attestation:read`), a request's
//! inclusion proof, and checks of a client-side log (`request:verify`; a
//! customer's user reaches its own requests only).

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use slaproof_app::Caller;
use slaproof_app::transparency::requests::{CheckReport, CheckRequestsIn, LastCheck, RequestProof};
use slaproof_app::transparency::{Consistency, TreeHead};

use super::{ApiProblem, ApiState, ProblemResponses, invalid, parse_body};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/transparency/heads", get(heads))
        .route("/v1/transparency/consistency", get(consistency))
        .route("/v1/transparency/requests/{request_id}", get(request_proof))
        .route("/v1/transparency/checks", post(check))
        .route("/v1/transparency/checks/latest", get(latest_check))
        .route("/v1/transparency/checks/{id}", get(show_check))
}

/// `?from=…&to=…`: a span of days, both included.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DaysQuery {
    /// The first day (`YYYY-MM-DD`, UTC).
    pub from: NaiveDate,
    /// The last day, included; at most 400 days after `from`.
    pub to: NaiveDate,
}

/// The tenant's signed heads.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct HeadsOut {
    pub data: Vec<TreeHead>,
}

#[utoipa::path(
    get,
    path = "/v1/transparency/heads",
    operation_id = "transparency_heads",
    tag = "transparency",
    summary = "The log's signed head after each day's batch",
    description = "One per built day, oldest first: the log's size and root after the day, and the C2SP checkpoint signed by the log's Ed25519 key. Needs `attestation:read` (held by `provider_admin`, `customer_admin` and `auditor`).",
    params(DaysQuery),
    responses((status = 200, description = "OK", body = HeadsOut), ProblemResponses),
)]
pub(crate) async fn heads(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<DaysQuery>, QueryRejection>,
) -> Result<Json<HeadsOut>, ApiProblem> {
    let Query(q) = query.map_err(|e| invalid("query", e.body_text()))?;
    let data = state.app.tree_heads(&caller, q.from, q.to).await?;
    Ok(Json(HeadsOut { data }))
}

#[utoipa::path(
    get,
    path = "/v1/transparency/consistency",
    operation_id = "transparency_consistency",
    tag = "transparency",
    summary = "Proof that one day's head extends an earlier day's",
    description = "The RFC 9162 consistency proof from the head of `from` to the head of `to`: that the log was only appended to in between. Needs `attestation:read`.",
    params(DaysQuery),
    responses((status = 200, description = "OK", body = Consistency), ProblemResponses),
)]
pub(crate) async fn consistency(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<DaysQuery>, QueryRejection>,
) -> Result<Json<Consistency>, ApiProblem> {
    let Query(q) = query.map_err(|e| invalid("query", e.body_text()))?;
    Ok(Json(
        state.app.tree_consistency(&caller, q.from, q.to).await?,
    ))
}

/// `?day=…`: the head to prove against.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ProofQuery {
    /// The day whose head the proof leads to (`YYYY-MM-DD`); the latest
    /// built when absent.
    pub day: Option<NaiveDate>,
}

#[utoipa::path(
    get,
    path = "/v1/transparency/requests/{request_id}",
    operation_id = "transparency_request_proof",
    tag = "transparency",
    summary = "The inclusion proof of one request",
    description = "The request's leaf (its exact bytes: canonical JSON whose SHA-256 after a 0x00 byte is the leaf hash), its index, the head and the audit path. `status` is `logged` when the stored event still hashes to its leaf, `altered` when it no longer does, `not_logged` before its day is built. Needs `request:verify` (held by `provider_admin` and `customer_admin`); a customer's user reaches only the requests of the services its SLAs measure, and any other request id answers 404.",
    params(("request_id" = String, Path, description = "The request id the provider reported"), ProofQuery),
    responses((status = 200, description = "OK", body = RequestProof), ProblemResponses),
)]
pub(crate) async fn request_proof(
    State(state): State<ApiState>,
    caller: Caller,
    request_id: Result<Path<String>, PathRejection>,
    query: Result<Query<ProofQuery>, QueryRejection>,
) -> Result<Json<RequestProof>, ApiProblem> {
    let Path(request_id) = request_id.map_err(|e| invalid("request_id", e.body_text()))?;
    let Query(q) = query.map_err(|e| invalid("query", e.body_text()))?;
    Ok(Json(
        state.app.request_proof(&caller, &request_id, q.day).await?,
    ))
}

#[utoipa::path(
    post,
    path = "/v1/transparency/checks",
    operation_id = "transparency_check",
    tag = "transparency",
    summary = "Check a client-side request log against the log",
    description = "For each request the client observed (its id, and the status and latency it saw): `included` (logged, its proof verified, values agree within the tolerance), `disagreeing` (logged, a value differs: each difference named), `altered` (logged, but the stored event no longer hashes to its leaf), `not_logged` (stored, its day not built yet) or `missing` (no such request). The report is kept and readable again. Needs `request:verify`; a customer's user checks its own requests only.",
    request_body = CheckRequestsIn,
    responses((status = 201, description = "Checked; the report", body = CheckReport), ProblemResponses),
)]
pub(crate) async fn check(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<(StatusCode, Json<CheckReport>), ApiProblem> {
    let input: CheckRequestsIn = parse_body(&body)?;
    let report = state.app.check_requests(&caller, input).await?;
    Ok((StatusCode::CREATED, Json(report)))
}

/// The caller's last check, if any.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct LatestCheckOut {
    pub check: Option<LastCheck>,
}

#[utoipa::path(
    get,
    path = "/v1/transparency/checks/latest",
    operation_id = "transparency_latest_check",
    tag = "transparency",
    summary = "The last check's summary",
    description = "For a customer's user, its customer's last check; for the provider, its own. Needs `request:verify` or `attestation:read` (so that an embed token can read it for the dashboard).",
    responses((status = 200, description = "OK", body = LatestCheckOut), ProblemResponses),
)]
pub(crate) async fn latest_check(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<LatestCheckOut>, ApiProblem> {
    Ok(Json(LatestCheckOut {
        check: state.app.last_request_check(&caller).await?,
    }))
}

#[utoipa::path(
    get,
    path = "/v1/transparency/checks/{id}",
    operation_id = "transparency_show_check",
    tag = "transparency",
    summary = "A kept check report",
    params(("id" = String, Path, description = "The report's id")),
    responses((status = 200, description = "OK", body = CheckReport), ProblemResponses),
)]
pub(crate) async fn show_check(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<uuid::Uuid>, PathRejection>,
) -> Result<Json<CheckReport>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    Ok(Json(state.app.request_check(&caller, id).await?))
}
