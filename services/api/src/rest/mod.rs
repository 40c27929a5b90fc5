//! REST over the service layer: one module per resource with its own
//! `router()`, request types `XIn`, responses `XOut`, and every error an
//! RFC 9457 problem document.
//!
//! Missing field scopes: a read omits each field the caller may not see
//! (absent, not null) and lists it with the scope it needs in the
//! response's `redacted` array; an operation that needs a scope as a whole
//! (writes, exports, history) answers 403 with the scope in the problem's
//! `scope` member. Both come from the service layer, so GraphQL applies the
//! same rule.

pub mod customers;
pub mod ingest_keys;
pub mod maintenance;
pub mod slas;

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use slaproof_http::Problem;

use crate::auth::{AuthError, Principal, Verifier};
use crate::service::{Caller, PageRequest, Service, ServiceError};

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct ApiState {
    pub verifier: Arc<Verifier>,
    pub service: Service,
}

/// Every REST route.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .merge(customers::router())
        .merge(slas::router())
        .merge(maintenance::router())
        .merge(ingest_keys::router())
        .with_state(state)
}

/// An error as answered: a problem document.
#[derive(Debug)]
pub struct ApiProblem(pub Problem);

impl IntoResponse for ApiProblem {
    fn into_response(self) -> Response {
        let unauthorized = self.0.status == 401;
        let mut response = self.0.into_response();
        if unauthorized {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer error=\"invalid_token\""),
            );
        }
        response
    }
}

impl From<AuthError> for ApiProblem {
    fn from(err: AuthError) -> Self {
        ApiProblem(
            Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "Unauthenticated",
            )
            .with_detail(err.to_string()),
        )
    }
}

impl From<ServiceError> for ApiProblem {
    fn from(err: ServiceError) -> Self {
        let problem = match &err {
            ServiceError::MissingScope(scope) => {
                Problem::new(StatusCode::FORBIDDEN, "missing-scope", "Missing scope")
                    .with_detail(err.to_string())
                    .with_extension("scope", scope.as_str())
            }
            ServiceError::NotFound { .. } => {
                Problem::new(StatusCode::NOT_FOUND, "not-found", "Not found")
                    .with_detail(err.to_string())
            }
            ServiceError::Conflict(message) => {
                Problem::new(StatusCode::CONFLICT, "conflict", "Conflict")
                    .with_detail(message.clone())
            }
            ServiceError::Invalid { field, message } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "Invalid request",
            )
            .with_detail(format!("{field}: {message}"))
            .with_extension("field", field.clone()),
            ServiceError::Internal(source) => {
                // Logged once, here; the client learns nothing of it.
                tracing::error!(error = %source, "internal error");
                Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "Internal error",
                )
            }
        };
        ApiProblem(problem)
    }
}

/// Bad path or query parameters, as a problem naming the parameter.
pub fn invalid(field: &str, message: impl Into<String>) -> ApiProblem {
    ServiceError::invalid(field, message).into()
}

impl FromRequestParts<ApiState> for Caller {
    type Rejection = ApiProblem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ApiState,
    ) -> Result<Self, Self::Rejection> {
        let principal = Principal::from_request_parts(parts, state).await?;
        Ok(state.service.caller(principal).await?)
    }
}

impl axum::extract::FromRef<ApiState> for Arc<Verifier> {
    fn from_ref(state: &ApiState) -> Self {
        state.verifier.clone()
    }
}

/// `?cursor=…&limit=…` of list endpoints.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PageQuery {
    pub cursor: Option<String>,
    pub limit: Option<u32>,
}

impl PageQuery {
    pub fn request(&self) -> PageRequest {
        PageRequest {
            cursor: self.cursor.clone(),
            limit: self.limit,
        }
    }
}

/// A page of a list as answered.
#[derive(Debug, Clone, Serialize)]
pub struct ListOut<T> {
    pub data: Vec<T>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The page asked for; a query string that fails to parse is a problem too.
pub fn page(
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<PageRequest, ApiProblem> {
    query
        .map(|Query(q)| q.request())
        .map_err(|e| invalid("query", e.body_text()))
}

/// A JSON body, or a problem saying what is wrong with it.
pub fn body<T>(
    json: Result<axum::Json<T>, axum::extract::rejection::JsonRejection>,
) -> Result<T, ApiProblem> {
    json.map(|axum::Json(t)| t)
        .map_err(|e| invalid("body", e.body_text()))
}

/// The header naming a creating request's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Parses a JSON body taken as bytes (kept whole for the idempotency
/// fingerprint).
pub fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiProblem> {
    serde_json::from_slice(bytes).map_err(|e| invalid("body", e.to_string()))
}

/// Runs a creating request at most once per `Idempotency-Key`: a retry
/// with the same key and body gets the first answer again (with
/// `Idempotent-Replayed: true`); without the header it simply runs.
pub async fn idempotent<T, F>(
    state: &ApiState,
    caller: &Caller,
    headers: &axum::http::HeaderMap,
    route: &str,
    body: &[u8],
    run: F,
) -> Result<Response, ApiProblem>
where
    T: Serialize,
    F: Future<Output = Result<(StatusCode, T), ApiProblem>>,
{
    use crate::service::idempotency::{Claim, fingerprint};
    let Some(key) = headers.get(IDEMPOTENCY_KEY) else {
        let (status, out) = run.await?;
        return Ok((status, axum::Json(out)).into_response());
    };
    let key = key
        .to_str()
        .map_err(|_| invalid("Idempotency-Key", "must be visible ASCII"))?;
    let service = &state.service;
    match service
        .claim_idempotent(caller, key, &fingerprint(route, body))
        .await?
    {
        Claim::Replay { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            let mut response = (status, axum::Json(body)).into_response();
            response
                .headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(response)
        }
        Claim::Fresh => match run.await {
            Ok((status, out)) => {
                let value = serde_json::to_value(&out)
                    .map_err(|e| ApiProblem::from(ServiceError::Internal(Box::new(e))))?;
                service
                    .finish_idempotent(caller, key, Some((status.as_u16(), &value)))
                    .await?;
                Ok((status, axum::Json(value)).into_response())
            }
            Err(problem) => {
                // Freed, so that the client may retry once it has fixed
                // the request; the key answers nothing it did not create.
                service.finish_idempotent(caller, key, None).await?;
                Err(problem)
            }
        },
    }
}
