//! `/v1/slas/{name}/attestations` and `/v1/attestations/{id}[/bundle]`: each closed period's proof and anchor, and the files an auditor verifies with `slaproof verify` or snarkjs.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use slaproof_app::attestations::{Attestation, AttestationsView};
use slaproof_app::{Caller, PageRequest};

use super::{ApiProblem, ApiState, ProblemResponses, invalid};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/slas/{name}/attestations", get(list))
        .route("/v1/attestations/{id}", get(show))
        .route("/v1/attestations/{id}/bundle", get(bundle))
}

/// Which period, and which page: `?period_start=…&cursor=…&limit=…`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AttestationsQuery {
    /// Only the period starting at this instant (RFC 3339).
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub period_start: Option<DateTime<Utc>>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1-200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/attestations",
    operation_id = "slas_attestations",
    tag = "attestations",
    summary = "A page of the SLA's attestations, newest period first",
    description = "One per closed period result of each objective: `pending` (to be proven), `proven`, `anchored` (with the chain, EAS contract, attestation UID and transaction) or `not_provable` (with the reason). Needs `attestation:read` (held by `provider_admin`, `customer_admin` and `auditor`); a customer's user reads its own SLAs' versions.",
    params(("name" = String, Path, description = "The SLA's name"), AttestationsQuery),
    responses(
        (status = 200, description = "OK", body = AttestationsView),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    name: Result<Path<String>, PathRejection>,
    query: Result<Query<AttestationsQuery>, QueryRejection>,
) -> Result<Json<AttestationsView>, ApiProblem> {
    let Path(name) = name.map_err(|e| invalid("name", e.body_text()))?;
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    Ok(Json(
        state
            .app
            .sla_attestations(
                &caller,
                &name,
                query.period_start,
                &PageRequest {
                    cursor: query.cursor,
                    limit: query.limit,
                },
            )
            .await?,
    ))
}

#[utoipa::path(
    get,
    path = "/v1/attestations/{id}",
    operation_id = "attestations_show",
    tag = "attestations",
    summary = "One attestation",
    params(("id" = String, Path, description = "The attestation's id")),
    responses(
        (status = 200, description = "OK", body = Attestation),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Attestation>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    Ok(Json(state.app.attestation(&caller, &id).await?))
}

#[utoipa::path(
    get,
    path = "/v1/attestations/{id}/bundle",
    operation_id = "attestations_bundle",
    tag = "attestations",
    summary = "The auditor's files of an anchored attestation",
    description = "An object of four files by name: snarkjs's `verification_key.json`, `proof.json` and `public.json`, and `statement.json` (the claim in words, each public input explained, the statement id and the anchor). Written to a folder, `slaproof verify --dir` and `snarkjs groth16 verify` check them with no access to slaproof. 409 while the attestation is not anchored.",
    params(("id" = String, Path, description = "The attestation's id")),
    responses(
        (status = 200, description = "OK", body = Object),
        ProblemResponses,
    ),
)]
pub(crate) async fn bundle(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    Ok(Json(state.app.attestation_bundle(&caller, &id).await?))
}
