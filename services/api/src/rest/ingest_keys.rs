//! `/v1/ingest-keys`: telemetry credentials, shown once at creation.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{delete, get};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_app::idempotency::Creating;
use slaproof_app::ingest_keys::IngestKey;
use slaproof_domain::ids::IngestKeyId;

use super::{
    ApiProblem, ApiState, ListOut, PageQuery, ProblemResponses, created, invalid, page, parse_body,
};
use slaproof_app::Caller;

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/ingest-keys", get(list).post(create))
        .route("/v1/ingest-keys/{id}", delete(revoke))
        .route("/v1/ingest-settings", get(settings).put(set_settings))
}

/// How the tenant's telemetry is read.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestSettingsBody {
    /// The OTLP attribute, on a span or else on its resource, that names
    /// the customer the request served by the provider's reference:
    /// `slaproof.customer` unless set (`enduser.id`, `user.id`, or any
    /// attribute the provider's instrumentation already sets).
    #[schema(example = "enduser.id")]
    pub otlp_customer_attribute: String,
}

#[utoipa::path(
    get,
    path = "/v1/ingest-settings",
    operation_id = "ingest_settings_show",
    tag = "ingest-keys",
    summary = "How the tenant's telemetry is read",
    description = "Needs `ingest_key:manage`.",
    responses(
        (status = 200, description = "OK", body = IngestSettingsBody),
        ProblemResponses,
    ),
)]
pub(crate) async fn settings(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<IngestSettingsBody>, ApiProblem> {
    let s = state.app.ingest_settings(&caller).await?;
    Ok(Json(IngestSettingsBody {
        otlp_customer_attribute: s.otlp_customer_attribute,
    }))
}

#[utoipa::path(
    put,
    path = "/v1/ingest-settings",
    operation_id = "ingest_settings_set",
    tag = "ingest-keys",
    summary = "Set how the tenant's telemetry is read",
    description = "Ingest reads the settings with each key it authenticates: a change reaches every replica within `ingest.key_cache_secs` (30 s by default). Needs `ingest_key:manage`.",
    request_body = IngestSettingsBody,
    responses(
        (status = 200, description = "OK", body = IngestSettingsBody),
        ProblemResponses,
    ),
)]
pub(crate) async fn set_settings(
    State(state): State<ApiState>,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<IngestSettingsBody>, ApiProblem> {
    let input: IngestSettingsBody = parse_body(&bytes)?;
    let s = state
        .app
        .set_ingest_settings(
            &caller,
            slaproof_app::ingest_keys::IngestSettings {
                otlp_customer_attribute: input.otlp_customer_attribute,
            },
        )
        .await?;
    Ok(Json(IngestSettingsBody {
        otlp_customer_attribute: s.otlp_customer_attribute,
    }))
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestKeyIn {
    /// What the key is for, e.g. `eu-west gateway`.
    pub name: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct IngestKeyOut {
    #[schema(value_type = String, example = "key_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: IngestKeyId,
    /// The key's public part, enough to tell keys apart in logs.
    pub prefix: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<IngestKey> for IngestKeyOut {
    fn from(k: IngestKey) -> Self {
        Self {
            id: k.id,
            prefix: k.prefix,
            name: k.name,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        }
    }
}

/// A key just created: `key` is shown this once and never again (no
/// `Debug`, so it cannot reach a log).
#[derive(Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct IngestKeyCreatedOut {
    #[serde(flatten)]
    pub ingest_key: IngestKeyOut,
    /// The secret. Absent from an idempotent replay (`Idempotent-Replayed:
    /// true`): slaproof keeps only its hash, so a client that lost the
    /// first answer revokes the key and creates another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

#[utoipa::path(
    post,
    path = "/v1/ingest-keys",
    operation_id = "ingest_keys_create",
    tag = "ingest-keys",
    summary = "Create an ingest key (its secret is shown once)",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = IngestKeyIn,
    responses(
        (status = 201, description = "Created", body = IngestKeyCreatedOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: IngestKeyIn = parse_body(&bytes)?;
    let route = "POST /v1/ingest-keys";
    let app = &state.app;
    created(
        &state,
        &caller,
        &headers,
        Creating::INGEST_KEY,
        (route, &bytes),
        async |tx| app.create_ingest_key_in(tx, &caller, &input.name).await,
        |made| {
            let out = IngestKeyCreatedOut {
                ingest_key: made.key.into(),
                key: Some(made.secret),
            };
            (StatusCode::CREATED, out)
        },
    )
    .await
}

#[utoipa::path(
    get,
    path = "/v1/ingest-keys",
    operation_id = "ingest_keys_list",
    tag = "ingest-keys",
    summary = "List ingest keys",
    params(PageQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<IngestKeyOut>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<ListOut<IngestKeyOut>>, ApiProblem> {
    let page = state.app.list_ingest_keys(&caller, &page(query)?).await?;
    Ok(Json(page.into()))
}

#[utoipa::path(
    delete,
    path = "/v1/ingest-keys/{id}",
    operation_id = "ingest_keys_revoke",
    tag = "ingest-keys",
    summary = "Revoke an ingest key by id or prefix",
    params(("id" = String, Path, description = "`key_…` or the key prefix")),
    responses(
        (status = 200, description = "OK", body = IngestKeyOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn revoke(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<IngestKeyOut>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    Ok(Json(
        state.app.revoke_ingest_key(&caller, &id).await?.into(),
    ))
}
