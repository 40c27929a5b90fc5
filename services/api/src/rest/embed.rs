//! `/v1/embed-tokens` and `/v1/embed-origins` (the CSP `frame-ancestors`
//! header on answers to embed tokens is set by `auth::request`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_domain::ids::CustomerId;

use super::{ApiProblem, ApiState, ProblemResponses, created, parse_body};
use slaproof_app::Caller;
use slaproof_app::embed::EmbedRequest;

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/embed-tokens", post(create))
        .route("/v1/embed-origins", get(origins).put(set_origins))
}

/// A token for one customer's dashboard.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmbedTokenIn {
    #[schema(value_type = String, example = "cus_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub customer: CustomerId,
    /// Which dashboard, e.g. `overview`.
    pub dashboard: String,
    /// Read scopes only, each held by the caller, e.g. `sla:read:uptime`.
    pub scopes: Vec<String>,
    /// 60-3600 seconds; 900 by default.
    pub ttl_secs: Option<u32>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct EmbedTokenOut {
    pub token: String,
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
    };
    let route = "POST /v1/embed-tokens";
    let app = &state.app;
    created(
        &state,
        &caller,
        &headers,
        (route, &bytes),
        async |tx| app.create_embed_token_in(tx, &caller, request).await,
        |token| {
            let out = EmbedTokenOut {
                token: token.token,
                expires_at: token.expires_at,
                scopes: token.scopes.into_iter().map(str::to_owned).collect(),
            };
            (StatusCode::CREATED, out)
        },
    )
    .await
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
