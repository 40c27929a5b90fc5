//! `/v1/customers`: the provider's customers.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_app::customers::Customer;
use slaproof_app::idempotency::Creating;
use slaproof_domain::ids::CustomerId;

use super::{
    ApiProblem, ApiState, ListOut, PageQuery, ProblemResponses, created, invalid, page, parse_body,
};
use slaproof_app::Caller;
use slaproof_app::customers::NewCustomer;

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/customers", get(list).post(create))
        .route("/v1/customers/{id}", get(show))
}

/// A customer to create.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CustomerIn {
    /// The customer's reference in the provider's own system; SLA
    /// documents name customers by it.
    pub external_ref: String,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct CustomerOut {
    #[schema(value_type = String, example = "cus_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: CustomerId,
    pub external_ref: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

impl From<Customer> for CustomerOut {
    fn from(c: Customer) -> Self {
        Self {
            id: c.id,
            external_ref: c.external_ref,
            name: c.name,
            created_at: c.created_at,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/customers",
    operation_id = "customers_list",
    tag = "customers",
    summary = "List customers",
    params(PageQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<CustomerOut>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<ListOut<CustomerOut>>, ApiProblem> {
    let page = state.app.list_customers(&caller, &page(query)?).await?;
    Ok(Json(page.into()))
}

#[utoipa::path(
    post,
    path = "/v1/customers",
    operation_id = "customers_create",
    tag = "customers",
    summary = "Create a customer",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = CustomerIn,
    responses(
        (status = 201, description = "Created", body = CustomerOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: CustomerIn = parse_body(&bytes)?;
    let new = NewCustomer {
        external_ref: input.external_ref,
        name: input.name,
    };
    let route = "POST /v1/customers";
    let app = &state.app;
    created(
        &state,
        &caller,
        &headers,
        Creating::CUSTOMER,
        (route, &bytes),
        async |tx| app.create_customer_in(tx, &caller, new).await,
        |customer| (StatusCode::CREATED, CustomerOut::from(customer)),
    )
    .await
}

#[utoipa::path(
    get,
    path = "/v1/customers/{id}",
    operation_id = "customers_show",
    tag = "customers",
    summary = "Get a customer",
    params(("id" = String, Path, description = "`cus_…`")),
    responses(
        (status = 200, description = "OK", body = CustomerOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<CustomerOut>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    // An id that does not parse cannot name a customer: not found, like
    // any other id the caller cannot see.
    let id: CustomerId = id.parse().map_err(|_| {
        ApiProblem::from(slaproof_app::AppError::NotFound {
            what: "customer",
            key: id.clone(),
        })
    })?;
    Ok(Json(state.app.get_customer(&caller, id).await?.into()))
}
