//! `/v1/embed-tokens` and `/v1/embed-origins` (the CSP `frame-ancestors`
//! header on answers to embed tokens is set by `auth::request`).

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_domain::ids::CustomerId;

use super::{ApiProblem, ApiState, ProblemResponses, created, invalid, parse_body};
use slaproof_app::Caller;
use slaproof_app::embed::EmbedRequest;
use slaproof_app::idempotency::Creating;

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/embed-tokens", post(create))
        .route("/v1/embed-tokens/{id}", delete(revoke))
        .route("/v1/embed-origins", get(origins).put(set_origins))
}

/// A token for one customer's dashboard.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmbedTokenIn {
    #[schema(value_type = String, example = "cus_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub customer: CustomerId,
    /// `overview` (every SLA of the customer), or the name of one of the
    /// customer's SLAs: the token then reads that SLA and nothing else.
    pub dashboard: String,
    /// Read scopes only, each held by the caller, e.g. `sla:read:uptime`.
    pub scopes: Vec<String>,
    /// 60-3600 seconds; 900 by default.
    pub ttl_secs: Option<u32>,
    /// One of the tenant's framing origins (`PUT /v1/embed-origins`): only
    /// it may frame the dashboard. Any of them when absent.
    #[serde(default)]
    pub origin: Option<String>,
}

/// A signed embed token (no `Debug`, so it cannot reach a log).
#[derive(Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct EmbedTokenOut {
    /// The token's id (its `jti`), to revoke it with
    /// `DELETE /v1/embed-tokens/{id}`.
    #[schema(value_type = String, example = "0190c0f5-c6a0-7d3e-8e3f-4a1b2c3d4e5f")]
    pub id: uuid::Uuid,
    /// The token. Absent from an idempotent replay (`Idempotent-Replayed:
    /// true`): tokens are not kept; ask for a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub scopes: Vec<String>,
}

/// The origins allowed to frame embedded dashboards.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmbedOriginsIn {
    /// `https://console.example.com`; scheme, host and port only.
    pub origins: Vec<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct EmbedOriginsOut {
    pub origins: Vec<String>,
}

#[utoipa::path(
    post,
    path = "/v1/embed-tokens",
    operation_id = "embed_tokens_create",
    tag = "embed",
    summary = "Sign an embed token for a customer's dashboard (at most an hour)",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = EmbedTokenIn,
    responses(
        (status = 201, description = "Created", body = EmbedTokenOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: EmbedTokenIn = parse_body(&bytes)?;
    let request = EmbedRequest {
        customer: input.customer,
        dashboard: input.dashboard,
        scopes: input.scopes,
        ttl_secs: input.ttl_secs,
        origin: input.origin,
    };
    let route = "POST /v1/embed-tokens";
    let app = &state.app;
    created(
        &state,
        &caller,
        &headers,
        Creating::EMBED_TOKEN,
        (route, &bytes),
        async |tx| app.create_embed_token_in(tx, &caller, request).await,
        |token| {
            let out = EmbedTokenOut {
                id: token.id,
                token: Some(token.token),
                expires_at: token.expires_at,
                scopes: token.scopes.into_iter().map(str::to_owned).collect(),
            };
            (StatusCode::CREATED, out)
        },
    )
    .await
}

#[utoipa::path(
    delete,
    path = "/v1/embed-tokens/{id}",
    operation_id = "embed_tokens_revoke",
    tag = "embed",
    summary = "Revoke an embed token before it expires",
    params(("id" = String, Path, description = "The token's id (`jti`), as its creation answered")),
    responses(
        (status = 204, description = "Revoked: every request with the token is refused from now on"),
        ProblemResponses,
    ),
)]
pub(crate) async fn revoke(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<uuid::Uuid>, PathRejection>,
) -> Result<StatusCode, ApiProblem> {
    let Path(id) = path.map_err(|_| invalid("id", "must be a token id (a UUID)"))?;
    state.app.revoke_embed_token(&caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get,
    path = "/v1/embed-origins",
    operation_id = "embed_origins_get",
    tag = "embed",
    summary = "Origins allowed to frame embedded dashboards",
    responses(
        (status = 200, description = "OK", body = EmbedOriginsOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn origins(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<EmbedOriginsOut>, ApiProblem> {
    let origins = state.app.embed_origins(&caller).await?;
    Ok(Json(EmbedOriginsOut { origins }))
}

#[utoipa::path(
    put,
    path = "/v1/embed-origins",
    operation_id = "embed_origins_set",
    tag = "embed",
    summary = "Replace the origins allowed to frame embedded dashboards",
    request_body = EmbedOriginsIn,
    responses(
        (status = 200, description = "OK", body = EmbedOriginsOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn set_origins(
    State(state): State<ApiState>,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<EmbedOriginsOut>, ApiProblem> {
    let input: EmbedOriginsIn = parse_body(&bytes)?;
    let origins = state.app.set_embed_origins(&caller, input.origins).await?;
    Ok(Json(EmbedOriginsOut { origins }))
}
