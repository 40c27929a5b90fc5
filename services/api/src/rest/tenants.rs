//! `/v1/tenants`: slaproof's operators only.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_app::idempotency::Creating;
use slaproof_app::tenants::Tenant;
use slaproof_domain::ids::TenantId;

use super::{
    ApiProblem, ApiState, ListOut, PageQuery, ProblemResponses, created, page, parse_body,
};
use slaproof_app::Caller;

pub(crate) fn router() -> Router<ApiState> {
    Router::new().route("/v1/tenants", get(list).post(create))
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TenantIn {
    /// 1-63 characters of a-z, 0-9 and '-'.
    pub name: String,
    pub display_name: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct TenantOut {
    #[schema(value_type = String, example = "ten_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: TenantId,
    pub name: String,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
}

impl From<Tenant> for TenantOut {
    fn from(t: Tenant) -> Self {
        Self {
            id: t.id,
            name: t.name,
            display_name: t.display_name,
            created_at: t.created_at,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/tenants",
    operation_id = "tenants_list",
    tag = "tenants",
    summary = "List tenants (operators only)",
    params(PageQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<TenantOut>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<ListOut<TenantOut>>, ApiProblem> {
    let page = state.app.list_tenants(&caller, &page(query)?).await?;
    Ok(Json(page.into()))
}

#[utoipa::path(
    post,
    path = "/v1/tenants",
    operation_id = "tenants_create",
    tag = "tenants",
    summary = "Create a tenant (operators only)",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = TenantIn,
    responses(
        (status = 201, description = "Created", body = TenantOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: TenantIn = parse_body(&bytes)?;
    let route = "POST /v1/tenants";
    let app = &state.app;
    created(
        &state,
        &caller,
        &headers,
        Creating::TENANT,
        (route, &bytes),
        async |tx| {
            app.create_tenant_in(tx, &caller, &input.name, &input.display_name)
                .await
        },
        |tenant| (StatusCode::CREATED, TenantOut::from(tenant)),
    )
    .await
}
