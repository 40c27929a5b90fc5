//! Errors as answered over HTTP: RFC 9457 problem documents from the
//! application layer's errors (refused tokens: `auth`), and their shape in
//! the OpenAPI document.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use slaproof_app::AppError;
use slaproof_http::Problem;

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

impl From<AppError> for ApiProblem {
    fn from(err: AppError) -> Self {
        let problem = match &err {
            AppError::Forbidden(message) => {
                Problem::new(StatusCode::FORBIDDEN, "forbidden", "Forbidden")
                    .with_detail(message.clone())
            }
            AppError::Unauthenticated(message) => Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "Unauthenticated",
            )
            .with_detail(message.clone()),
            AppError::MissingScope(scope) => {
                Problem::new(StatusCode::FORBIDDEN, "missing-scope", "Missing scope")
                    .with_detail(err.to_string())
                    .with_extension("scope", scope.as_str())
            }
            AppError::NotFound { .. } => {
                Problem::new(StatusCode::NOT_FOUND, "not-found", "Not found")
                    .with_detail(err.to_string())
            }
            AppError::Conflict(message) => {
                Problem::new(StatusCode::CONFLICT, "conflict", "Conflict")
                    .with_detail(message.clone())
            }
            AppError::Invalid { field, message } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "Invalid request",
            )
            .with_detail(format!("{field}: {message}"))
            .with_extension("field", field.clone()),
            AppError::Internal(source) => {
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
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> ApiProblem {
    AppError::invalid(field, message).into()
}

/// The shape of every error answer, for the OpenAPI document; answers are
/// built by `slaproof_http::Problem`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ProblemOut {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: Option<String>,
    /// 403: the scope the caller lacks.
    pub scope: Option<String>,
    /// 422: the field or parameter that is wrong.
    pub field: Option<String>,
}

/// The error answers every operation may give, declared once for all of
/// them: `responses((status = 200, …), ProblemResponses)`.
#[derive(Debug)]
pub(crate) struct ProblemResponses;

impl utoipa::IntoResponses for ProblemResponses {
    fn responses() -> std::collections::BTreeMap<
        String,
        utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
    > {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let problem = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ProblemOut")))
                        .build(),
                )
                .build()
                .into()
        };
        [
            (
                "4XX".to_owned(),
                problem("A problem document (RFC 9457); 403 names the missing `scope`"),
            ),
            ("5XX".to_owned(), problem("A problem document (RFC 9457)")),
        ]
        .into()
    }
}
