//! The pages, built by Vite into `frontend/dist`: `/embed/`, the embedded
//! customer dashboard; `/audit/`, the auditor's page; `/console/`, the
//! provider's console; and their assets.
//!
//! The dashboard's HTML is answered per embed token (`?token=`): checked
//! here, so that its Content-Security-Policy can let only the token's
//! tenant's embed origins (or the one origin the token is bound to) frame
//! it, and so that a bad link gets a plain page saying so. The page allows
//! scripts, styles and requests to its own origin only. Assets carry hashed
//! names and are cached for a year; the HTML is never cached (it answers
//! one token).

use std::path::{Path, PathBuf};

use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::ApiState;
use crate::problem::ApiProblem;

/// Where the built pages are, and the routes serving them.
#[derive(Debug, Clone)]
pub(crate) struct Pages {
    dir: PathBuf,
}

/// The directory the pages are built into: `pages_dir` when set, else
/// `frontend/dist` under the working directory, else beside this source
/// tree (a development build run from elsewhere).
pub fn pages_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_owned();
    }
    let here = PathBuf::from("frontend/dist");
    if here.join("index.html").is_file() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../frontend/dist")
}

pub(crate) fn router(pages: Pages) -> Router<ApiState> {
    Router::new()
        .route("/embed", get(|| async { Redirect::permanent("/embed/") }))
        .route("/embed/", get(dashboard))
        .route("/embed/assets/{file}", get(asset))
        .route("/embed/slaproof-embed.js", get(web_component))
        .route("/audit", get(|| async { Redirect::permanent("/audit/") }))
        .route("/audit/", get(auditor))
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/") }),
        )
        .route("/console/", get(console))
        .layer(axum::Extension(pages))
}

impl Pages {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn read(&self, relative: &str) -> Result<Vec<u8>, ApiProblem> {
        std::fs::read(self.dir.join(relative)).map_err(|_| {
            ApiProblem(
                slaproof_http::Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "pages-not-built",
                    "Pages not built",
                )
                .with_detail(
                    "the dashboard pages are not built: run `npm ci --prefix frontend && npm run build --prefix frontend`",
                ),
            )
        })
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct EmbedQuery {
    token: Option<String>,
}

/// The policy of a page answered to an embed token (images also from any
/// https origin: the provider's logo, `?logo=`).
fn policy(frame_ancestors: &[String]) -> String {
    let ancestors = if frame_ancestors.is_empty() {
        "'none'".to_owned()
    } else {
        frame_ancestors.join(" ")
    };
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; \
         connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors {ancestors}"
    )
}

/// The auditor's page's policy: snarkjs compiles WebAssembly and verifies
/// in workers it makes from blobs; the page reads the chain from whatever
/// RPC address the auditor gives (https, or a node on this machine). It is
/// framed by no one.
const AUDITOR_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
    worker-src 'self' blob:; style-src 'self'; img-src 'self' data:; \
    connect-src 'self' https: http://127.0.0.1:* http://localhost:*; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'";

/// `/audit/`: public (the checks run in the browser; reading a bundle from
/// the API takes the auditor's own token).
async fn auditor(axum::Extension(pages): axum::Extension<Pages>) -> Response {
    match pages.read("audit.html") {
        Ok(html) => {
            let mut response = page(StatusCode::OK, html, &[]);
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(AUDITOR_POLICY),
            );
            response
        }
        Err(problem) => problem.into_response(),
    }
}

/// `/console/`: public HTML; everything it shows is read with the token the
/// provider signs in with. Its own origin only, framed by no one.
async fn console(axum::Extension(pages): axum::Extension<Pages>) -> Response {
    match pages.read("console.html") {
        Ok(html) => page(StatusCode::OK, html, &[]),
        Err(problem) => problem.into_response(),
    }
}

/// A page with its security headers; never cached.
fn page(status: StatusCode, body: Vec<u8>, frame_ancestors: &[String]) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(value) = HeaderValue::from_str(&policy(frame_ancestors)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// A page that says, with no script, why the dashboard is not shown.
fn refusal(status: StatusCode, why: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Dashboard unavailable</title></head>\
         <body><main><h1>Dashboard unavailable</h1><p>{why}</p></main></body></html>"
    );
    page(status, body.into_bytes(), &[])
}

async fn dashboard(
    State(state): State<ApiState>,
    axum::Extension(pages): axum::Extension<Pages>,
    query: Result<Query<EmbedQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let token = query.ok().and_then(|Query(q)| q.token);
    let Some(token) = token else {
        return refusal(
            StatusCode::UNAUTHORIZED,
            "This address needs an embed token: the service that shows this dashboard adds one.",
        );
    };
    let principal = match state.verifier.authenticate(&token).await {
        Ok(principal) if principal.embed.is_some() => principal,
        Ok(_) => {
            return refusal(
                StatusCode::FORBIDDEN,
                "This link carries a token that is not an embed token.",
            );
        }
        Err(_) => {
            return refusal(
                StatusCode::UNAUTHORIZED,
                "This dashboard link has expired or was withdrawn: reload the page that shows it.",
            );
        }
    };
    let origins = state
        .app
        .frame_ancestors_of(&principal)
        .await
        .unwrap_or_default();
    match pages.read("index.html") {
        Ok(html) => page(StatusCode::OK, html, &origins),
        Err(problem) => problem.into_response(),
    }
}

/// A built asset by its (hashed) name, cached for a year.
async fn asset(
    axum::Extension(pages): axum::Extension<Pages>,
    UrlPath(file): UrlPath<String>,
) -> Response {
    let safe = !file.is_empty()
        && !file.starts_with('.')
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    let kind = match file.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("woff2") => "font/woff2",
        _ => "",
    };
    if !safe || kind.is_empty() {
        return StatusCode::NOT_FOUND.into_response();
    }
    match std::fs::read(pages.dir.join("assets").join(&file)) {
        Ok(bytes) => with_type(bytes, kind, "public, max-age=31536000, immutable"),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `<slaproof-dashboard>`, for a provider's console to include; cached
/// briefly, as its name carries no hash.
async fn web_component(axum::Extension(pages): axum::Extension<Pages>) -> Response {
    match pages.read("slaproof-embed.js") {
        Ok(bytes) => with_type(
            bytes,
            "text/javascript; charset=utf-8",
            "public, max-age=300",
        ),
        Err(problem) => problem.into_response(),
    }
}

fn with_type(bytes: Vec<u8>, kind: &'static str, cache: &'static str) -> Response {
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_only_its_own_origin_and_the_framing_origins_given() {
        let p = policy(&["https://console.example.com".into()]);
        assert!(p.contains("script-src 'self';"), "{p}");
        assert!(
            p.ends_with("frame-ancestors https://console.example.com"),
            "{p}"
        );
        assert!(!p.contains("unsafe"), "{p}");
        assert!(policy(&[]).ends_with("frame-ancestors 'none'"));
    }
}
