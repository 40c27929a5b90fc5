//! `/v1/webhook-event-types`: the webhook event catalogue (every type with its version, description and an example) and each type's JSON Schema, readable without a token.
//!
//! Public on purpose: the catalogue is the same for every tenant and holds
//! nothing of theirs, and a receiver's developer (or a code generator)
//! needs it before holding credentials — Svix publishes its catalogue the
//! same way. The authentication layer lets a request without a token
//! through; these handlers simply take no `Caller`.

use axum::extract::Path;
use axum::extract::rejection::PathRejection;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use slaproof_app::webhook_events::{self, EventType};

use super::{ApiProblem, ApiState, ProblemResponses, invalid};

/// The media type of a JSON Schema document.
const SCHEMA_JSON: &str = "application/schema+json";

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/webhook-event-types", get(list))
        .route("/v1/webhook-event-types/{type}", get(schema))
}

/// Every event type, written and reserved.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct EventTypesOut {
    pub data: &'static [EventType],
}

#[utoipa::path(
    get,
    path = "/v1/webhook-event-types",
    operation_id = "webhook_event_types_list",
    tag = "webhooks",
    summary = "The webhook event catalogue: every type with its payload version, a description, whether it is reserved and an example `data`",
    security(()),
    responses(
        (status = 200, description = "OK", body = EventTypesOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn list() -> Json<EventTypesOut> {
    Json(EventTypesOut {
        data: webhook_events::catalogue(),
    })
}

#[utoipa::path(
    get,
    path = "/v1/webhook-event-types/{type}",
    operation_id = "webhook_event_types_schema",
    tag = "webhooks",
    summary = "The JSON Schema (draft 2020-12) of one event type's `data`, with an example",
    security(()),
    params(("type" = String, Path, description = "The event type, e.g. `sla.breached`")),
    responses(
        (status = 200, description = "The schema", body = Object, content_type = "application/schema+json"),
        ProblemResponses,
    ),
)]
pub(crate) async fn schema(
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiProblem> {
    let name = path
        .map(|Path(n)| n)
        .map_err(|e| invalid("type", e.body_text()))?;
    let found = webhook_events::event_type(&name)?;
    Ok(([(header::CONTENT_TYPE, SCHEMA_JSON)], Json(&found.schema)).into_response())
}
