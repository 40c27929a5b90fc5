//! Authentication once per request: a layer checks the bearer token (and
//! adds the CSP `frame-ancestors` header to answers to embed tokens); the
//! [`Caller`] extractor reads what it found and resolves the scopes.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use slaproof_app::{Caller, Principal};

use super::{AuthError, bearer};
use crate::ApiState;
use crate::problem::ApiProblem;

/// What the layer found for one request.
#[derive(Debug, Clone)]
struct Authentication(Result<Principal, AuthError>);

/// Checks the request's token, once, before any handler runs. A request
/// without a token goes on (a route may need none); the [`Caller`]
/// extractor refuses it where one is needed.
pub async fn authenticate(
    State(state): State<ApiState>,
    mut request: Request,
    next: Next,
) -> Response {
    let found = match bearer(request.headers()) {
        Ok(token) => state.verifier.authenticate(token).await,
        Err(err) => Err(err),
    };
    let embed = found.as_ref().ok().filter(|p| p.embed.is_some()).cloned();
    request.extensions_mut().insert(Authentication(found));
    let mut response = next.run(request).await;
    // Only the tenant's own origins (or the one a token is bound to) may
    // frame what an embed token reads; nothing may frame anything else.
    let origins = match &embed {
        Some(principal) => state
            .app
            .frame_ancestors_of(principal)
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let policy = if origins.is_empty() {
        "frame-ancestors 'none'".to_owned()
    } else {
        format!("frame-ancestors {}", origins.join(" "))
    };
    let headers = response.headers_mut();
    // A page sets its own, fuller policy (`pages`).
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY)
        && let Ok(value) = HeaderValue::from_str(&policy)
    {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

impl FromRequestParts<ApiState> for Caller {
    type Rejection = ApiProblem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ApiState,
    ) -> Result<Self, Self::Rejection> {
        let principal = match parts.extensions.get::<Authentication>() {
            Some(Authentication(found)) => found.clone()?,
            // A router assembled without the layer: refuse rather than
            // check here, so a token is never checked twice.
            None => return Err(AuthError::Missing.into()),
        };
        Ok(state.app.caller(principal).await?)
    }
}
