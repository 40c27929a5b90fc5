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

pub(crate) mod attestations;
pub(crate) mod attribution;
pub(crate) mod audit;
pub(crate) mod credits;
pub(crate) mod customers;
pub(crate) mod embed;
pub(crate) mod evaluation_status;
pub(crate) mod ingest_keys;
pub(crate) mod instant;
pub(crate) mod maintenance;
pub(crate) mod probes;
pub(crate) mod slas;
pub(crate) mod tenants;
pub(crate) mod thresholds;
pub(crate) mod transparency;
pub(crate) mod webhook_events;
pub(crate) mod webhooks;

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use slaproof_app::idempotency::{Creating, IdempotencyKey};
use slaproof_app::{AppError, Caller, PageRequest, TenantTx};

pub(crate) use crate::ApiState;
pub(crate) use crate::problem::{ApiProblem, ProblemOut, ProblemResponses, invalid};

/// Every REST route, and the OpenAPI document at `/openapi.json`.
pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/openapi.json", axum::routing::get(openapi_json))
        .merge(attribution::router())
        .merge(customers::router())
        .merge(slas::router())
        .merge(maintenance::router())
        .merge(audit::router())
        .merge(ingest_keys::router())
        .merge(embed::router())
        .merge(tenants::router())
        .merge(probes::router())
        .merge(webhooks::router())
        .merge(webhook_events::router())
        .merge(thresholds::router())
        .merge(evaluation_status::router())
        .merge(credits::router())
        .merge(attestations::router())
        .merge(transparency::router())
}

/// `?cursor=…&limit=…` of list endpoints.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1-200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

impl PageQuery {
    pub(crate) fn request(&self) -> PageRequest {
        PageRequest {
            cursor: self.cursor.clone(),
            limit: self.limit,
        }
    }
}

/// A page of a list as answered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ListOut<T> {
    pub data: Vec<T>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl<T, U> From<slaproof_app::Page<U>> for ListOut<T>
where
    T: From<U>,
{
    /// A service page as the REST list answer, each item in its REST shape.
    fn from(page: slaproof_app::Page<U>) -> Self {
        Self {
            data: page.items.into_iter().map(T::from).collect(),
            next_cursor: page.next_cursor,
        }
    }
}

/// The page asked for; a query string that fails to parse is a problem too.
pub(crate) fn page(
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<PageRequest, ApiProblem> {
    query
        .map(|Query(q)| q.request())
        .map_err(|e| invalid("query", e.body_text()))
}

/// The header naming a creating request's idempotency key.
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Parses a JSON body taken as bytes (kept whole for the idempotency
/// fingerprint).
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiProblem> {
    refuse_nul(bytes)?;
    serde_json::from_slice(bytes).map_err(|e| invalid("body", e.to_string()))
}

/// Postgres text cannot hold NUL, so a NUL in a body (only possible as the
/// JSON escape) would fail deep in a query as a 500; it is refused up front.
fn refuse_nul(bytes: &[u8]) -> Result<(), ApiProblem> {
    if bytes.windows(6).any(|w| w == b"\\u0000") {
        return Err(invalid("body", "text must not contain NUL (\\u0000)"));
    }
    Ok(())
}

/// Runs a creating request at most once per `Idempotency-Key`: the key's
/// claim, the work (a `create_…_in` operation of the application layer)
/// and the answer commit in one transaction ([`slaproof_app::App::once`]),
/// so a retry with the same key and body gets the first answer again (with
/// `Idempotent-Replayed: true`), and one after a failure runs afresh.
/// Without the header it simply runs. `creating` names the scope checked
/// before anything (a replay included) and the answer's secret field,
/// which a replay leaves out and whose answer no cache may keep.
pub(crate) async fn created<T, O>(
    state: &ApiState,
    caller: &Caller,
    headers: &axum::http::HeaderMap,
    creating: Creating,
    (route, body): (&str, &[u8]),
    work: impl AsyncFnOnce(&mut TenantTx) -> Result<T, AppError>,
    answer: impl FnOnce(T) -> (StatusCode, O),
) -> Result<Response, ApiProblem>
where
    O: Serialize,
{
    let key = match headers.get(IDEMPOTENCY_KEY) {
        None => None,
        Some(key) => {
            let key = key
                .to_str()
                .map_err(|_| invalid("Idempotency-Key", "must be visible ASCII"))?;
            Some(IdempotencyKey::new(key, route, body)?)
        }
    };
    let answered = state
        .app
        .once(caller, creating, key.as_ref(), work, |made| {
            let (status, out) = answer(made);
            let body = serde_json::to_value(&out).map_err(|e| AppError::Internal(Box::new(e)))?;
            Ok((status.as_u16(), body))
        })
        .await?;
    let status = StatusCode::from_u16(answered.status).unwrap_or(StatusCode::OK);
    let mut response = (status, axum::Json(answered.body)).into_response();
    if creating.secret.is_some() {
        response.headers_mut().insert(
            axum::http::header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        );
    }
    if answered.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// The OpenAPI 3.1 document, generated from the handlers and their types.
#[derive(Debug, utoipa::OpenApi)]
#[openapi(
    info(
        title = "slaproof API",
        version = "1",
        description = "Providers manage customers, SLAs, maintenance windows, ingest keys, synthetic probes and webhook endpoints; customers read their SLAs' compliance. Bearer JWTs; fields a caller lacks the scope for are omitted and listed in `redacted`, operations it lacks the scope for answer 403 naming the scope."
    ),
    paths(
        customers::list,
        customers::create,
        customers::show,
        attribution::ranking,
        slas::list,
        slas::apply,
        slas::show,
        slas::versions,
        slas::export,
        slas::compliance,
        slas::budget_status,
        slas::series,
        slas::dashboard,
        attribution::attribution,
        slas::alerts,
        slas::breaches,
        slas::periods,
        slas::change_target,
        maintenance::create,
        maintenance::cancel,
        maintenance::list,
        maintenance::accept,
        audit::list,
        ingest_keys::create,
        ingest_keys::list,
        ingest_keys::revoke,
        ingest_keys::settings,
        ingest_keys::set_settings,
        embed::create,
        embed::origins,
        embed::set_origins,
        tenants::list,
        tenants::create,
        probes::list,
        probes::create,
        probes::show,
        probes::update,
        probes::remove,
        probes::run_now,
        probes::runs,
        webhooks::create,
        webhooks::list,
        webhooks::show,
        webhooks::update,
        webhooks::remove,
        webhooks::enable,
        webhooks::disable,
        webhooks::rotate_secret,
        webhooks::attempts,
        webhooks::resend,
        webhooks::recover,
        webhooks::test_send,
        webhook_events::list,
        webhook_events::schema,
        thresholds::list,
        thresholds::set,
        thresholds::remove,
        evaluation_status::show,
        credits::list,
        credits::export,
        credits::show,
        credits::statement,
        credits::recompute,
        credits::correct_fee,
        credits::fees,
        credits::set_fee,
        attestations::list,
        attestations::show,
        attestations::bundle,
        transparency::heads,
        transparency::consistency,
        transparency::request_proof,
        transparency::check,
        transparency::latest_check,
        transparency::show_check,
    ),
    components(schemas(ProblemOut)),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
pub(crate) struct ApiDoc;

/// The document as served and committed: pretty JSON with a final newline.
pub(crate) fn openapi_document() -> String {
    use utoipa::OpenApi;
    let mut text = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi_document(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI fails when the committed document differs from what the code
    /// generates; `SLAPROOF_UPDATE_OPENAPI=1` rewrites it.
    #[test]
    fn the_committed_openapi_document_matches_the_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        let generated = openapi_document();
        if std::env::var_os("SLAPROOF_UPDATE_OPENAPI").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/openapi.json differs from the code; run \
             `SLAPROOF_UPDATE_OPENAPI=1 cargo test -p slaproof-api openapi` and commit it"
        );
    }

    #[test]
    fn the_document_is_openapi_3_1_with_every_route() {
        let doc: serde_json::Value = serde_json::from_str(&openapi_document()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        for path in [
            "/v1/customers",
            "/v1/slas/{name}/compliance",
            "/v1/ingest-keys/{id}",
        ] {
            assert!(doc["paths"].get(path).is_some(), "{path}");
        }
    }
}
