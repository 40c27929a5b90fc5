//! The provider and customer API, transport only: routing, authentication
//! once per request, REST (with its OpenAPI document) and GraphQL, problem
//! documents. Every operation and rule is the application layer's
//! (`slaproof_app`); handlers and resolvers map shapes and call it.
//!
//! - [`auth`] checks tokens (the algorithm is pinned per key) once per
//!   request and hands a [`slaproof_app::Principal`] to the `Caller`
//!   extractor;
//! - [`rest`] and [`graphql`] map their shapes onto the application layer;
//! - [`problem`] answers its errors as RFC 9457 problem documents.

pub mod auth;
mod body;
mod graphql;
mod pages;
#[cfg(test)]
mod parity;
mod problem;
mod rest;
pub mod settings;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use slaproof_app::{App, Caller};

pub use pages::pages_dir;
pub use settings::{Settings, SettingsError};

use crate::problem::{ApiProblem, invalid};

/// Why the API could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("invalid api configuration: {0}")]
    Settings(#[from] SettingsError),
}

/// What every handler can reach.
#[derive(Clone)]
pub struct ApiState {
    pub verifier: Arc<auth::Verifier>,
    pub app: App,
    pub schema: graphql::ApiSchema,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState")
            .field("verifier", &self.verifier)
            .field("app", &self.app)
            .finish_non_exhaustive()
    }
}

/// The API's routes over `app`, ready to merge into the process's router.
/// The API's token verifier signs the embed tokens `app` issues, with the
/// key it checks them with.
pub fn router(app: App, settings: &Settings) -> Result<Router, BuildError> {
    let verifier = Arc::new(auth::Verifier::new(settings)?);
    let app = app.with_embed_signer(verifier.clone());
    let schema = graphql::schema(
        app.clone(),
        graphql::Limits {
            max_depth: settings.graphql_max_depth,
            max_complexity: settings.graphql_max_complexity,
            max_root_fields: settings.graphql_max_root_fields,
            max_fields: settings.graphql_max_fields,
            max_app_reads: settings.graphql_max_app_reads,
            time_budget: std::time::Duration::from_secs(settings.graphql_timeout_secs),
            introspection: settings.graphql_introspection,
        },
    );
    let state = ApiState {
        verifier,
        app,
        schema,
    };
    let pages = pages::Pages::new(pages_dir(settings.pages_dir.as_deref()));
    Ok(rest::router()
        .merge(pages::router(pages))
        .route("/graphql", axum::routing::post(graphql))
        // Every body, whoever sends it (a token is checked here but
        // refused only by the handler's `Caller`), arrives within the
        // deadline or is answered 408.
        .layer(axum::middleware::from_fn_with_state(
            std::time::Duration::from_secs(settings.body_read_timeout_secs),
            body::read_within,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::request::authenticate,
        ))
        .layer(axum::middleware::from_fn(refuse_nul_in_uri))
        .layer(axum::middleware::from_fn(no_store_by_default))
        .with_state(state))
}

/// Every answer is the caller's own (and some carry a secret once: a
/// webhook's signing secret, an ingest key, an embed token): no cache may
/// keep it, unless a route says otherwise. One rule for every route, REST
/// and GraphQL alike, so that no secret-bearing answer can miss it.
async fn no_store_by_default(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .entry(axum::http::header::CACHE_CONTROL)
        .or_insert(axum::http::HeaderValue::from_static("no-store"));
    response
}

/// `POST /graphql`: the caller is authenticated like any REST request and
/// handed to the resolvers; GraphQL errors answer 200 as the spec says.
async fn graphql(
    State(state): State<ApiState>,
    caller: Caller,
    bytes: axum::body::Bytes,
) -> Result<axum::Json<async_graphql::Response>, ApiProblem> {
    let request: async_graphql::Request = rest::parse_body(&bytes)?;
    Ok(axum::Json(state.schema.execute(request.data(caller)).await))
}

/// The same for paths and query strings (`%00`), for every route at once.
async fn refuse_nul_in_uri(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let uri = request.uri().to_string();
    if uri
        .as_bytes()
        .windows(3)
        .any(|w| w.eq_ignore_ascii_case(b"%00"))
    {
        return invalid("uri", "must not contain NUL (%00)").into_response();
    }
    next.run(request).await
}
