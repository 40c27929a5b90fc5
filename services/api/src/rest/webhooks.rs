//! `/v1/webhook-endpoints`: where a tenant receives its facts, signed per
//! Standard Webhooks. The signing secret is answered at creation and at
//! each rotation, and never again.

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use slaproof_app::Caller;
use slaproof_app::webhooks::{
    NewWebhookEndpoint, TEST_SEND_WAIT, WebhookAttempt, WebhookEndpoint, WebhookEndpointChange,
    WebhookEndpointWithSecret, WebhookReplay, WebhookTestSend,
};

use super::{ApiProblem, ApiState, ListOut, ProblemResponses, invalid, parse_body};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/webhook-endpoints", get(list).post(create))
        .route(
            "/v1/webhook-endpoints/{id}",
            get(show).patch(update).delete(remove),
        )
        .route("/v1/webhook-endpoints/{id}/enable", post(enable))
        .route("/v1/webhook-endpoints/{id}/disable", post(disable))
        .route(
            "/v1/webhook-endpoints/{id}/rotate-secret",
            post(rotate_secret),
        )
        .route("/v1/webhook-endpoints/{id}/attempts", get(attempts))
        .route(
            "/v1/webhook-endpoints/{id}/messages/{msg_id}/resend",
            post(resend),
        )
        .route("/v1/webhook-endpoints/{id}/recover", post(recover))
        .route("/v1/webhook-endpoints/{id}/test", post(test_send))
}

/// An endpoint to create.
// `Debug` by hand: it leaves the header values out.
#[derive(Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebhookEndpointIn {
    /// http or https; loopback, private and link-local targets are refused
    /// unless the operator allows them.
    pub url: String,
    /// Up to 1000 characters, for people.
    #[serde(default)]
    pub description: Option<String>,
    /// Types delivered: exact (`sla.breached`), a prefix (`sla.*`) or every
    /// type (`*`, the default).
    #[serde(default)]
    pub event_types: Option<Vec<String>>,
    /// Default true.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Custom headers sent with every delivery, name to value: at most 10,
    /// values visible ASCII up to 1 KiB; `webhook-*`, `content-type`,
    /// `content-length`, `host` and connection headers are refused. The
    /// values are never answered nor logged.
    #[serde(default)]
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// Only the facts about this customer (its external reference): its
    /// SLAs' facts, its alert lines and credits. Absent: every fact.
    #[serde(default)]
    pub customer_ref: Option<String>,
    /// At most this many attempts started per second (1-10000). Absent:
    /// no limit but the platform's.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub rate_limit_per_sec: Option<i32>,
    /// One message at a time, in the order written: a message waits while
    /// an earlier one is retried. Default false.
    #[serde(default)]
    pub ordered: Option<bool>,
}

/// Changes to an endpoint: absent fields stay as they are; `null` clears
/// `customer_ref` and `rate_limit_per_sec`; `headers` replaces every
/// header. The secret changes by rotation only.
// `Debug` by hand: it leaves the header values out.
#[derive(Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebhookEndpointPatchIn {
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub event_types: Option<Vec<String>>,
    #[serde(default)]
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "super::probes::present")]
    #[schema(value_type = Option<String>)]
    pub customer_ref: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::probes::present")]
    #[schema(value_type = Option<i32>, minimum = 1, maximum = 10000)]
    pub rate_limit_per_sec: Option<Option<i32>>,
    #[serde(default)]
    pub ordered: Option<bool>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

impl std::fmt::Debug for WebhookEndpointPatchIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpointPatchIn")
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("customer_ref", &self.customer_ref)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .field("ordered", &self.ordered)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for WebhookEndpointIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpointIn")
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

/// A recovery: every message since a time.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebhookRecoverIn {
    /// RFC 3339; messages written at or after it are delivered again.
    pub since: chrono::DateTime<chrono::Utc>,
}

fn endpoint_id(path: Result<Path<String>, PathRejection>) -> Result<String, ApiProblem> {
    let Path(id) = path.map_err(|e| invalid("id", e.body_text()))?;
    Ok(id)
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints",
    operation_id = "webhook_endpoints_create",
    tag = "webhooks",
    summary = "Create a webhook endpoint (its secret is shown once)",
    request_body = WebhookEndpointIn,
    responses(
        (status = 201, description = "Created", body = WebhookEndpointWithSecret),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: WebhookEndpointIn = parse_body(&bytes)?;
    let new = NewWebhookEndpoint {
        url: input.url,
        description: input.description,
        event_types: input.event_types,
        enabled: input.enabled,
        headers: input.headers,
        customer_ref: input.customer_ref,
        rate_limit_per_sec: input.rate_limit_per_sec,
        ordered: input.ordered,
    };
    let made = state.app.create_webhook_endpoint(&caller, new).await?;
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

#[utoipa::path(
    get,
    path = "/v1/webhook-endpoints",
    operation_id = "webhook_endpoints_list",
    tag = "webhooks",
    summary = "List webhook endpoints (at most 50 per tenant, one page)",
    responses(
        (status = 200, description = "OK", body = ListOut<WebhookEndpoint>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<ListOut<WebhookEndpoint>>, ApiProblem> {
    let data = state.app.list_webhook_endpoints(&caller).await?;
    Ok(Json(ListOut {
        data,
        next_cursor: None,
    }))
}

#[utoipa::path(
    get,
    path = "/v1/webhook-endpoints/{id}",
    operation_id = "webhook_endpoints_show",
    tag = "webhooks",
    summary = "Show a webhook endpoint",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 200, description = "OK", body = WebhookEndpoint),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<WebhookEndpoint>, ApiProblem> {
    let id = endpoint_id(path)?;
    Ok(Json(state.app.get_webhook_endpoint(&caller, &id).await?))
}

#[utoipa::path(
    patch,
    path = "/v1/webhook-endpoints/{id}",
    operation_id = "webhook_endpoints_update",
    tag = "webhooks",
    summary = "Change a webhook endpoint's URL, filters, limits, headers or state",
    params(("id" = String, Path, description = "`ep_…`")),
    request_body = WebhookEndpointPatchIn,
    responses(
        (status = 200, description = "OK", body = WebhookEndpoint),
        ProblemResponses,
    ),
)]
pub(crate) async fn update(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<WebhookEndpoint>, ApiProblem> {
    let id = endpoint_id(path)?;
    let input: WebhookEndpointPatchIn = parse_body(&bytes)?;
    let change = WebhookEndpointChange {
        url: input.url,
        description: input.description,
        event_types: input.event_types,
        headers: input.headers,
        customer_ref: input.customer_ref,
        rate_limit_per_sec: input.rate_limit_per_sec,
        ordered: input.ordered,
        enabled: input.enabled,
    };
    Ok(Json(
        state
            .app
            .update_webhook_endpoint(&caller, &id, change)
            .await?,
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/webhook-endpoints/{id}",
    operation_id = "webhook_endpoints_delete",
    tag = "webhooks",
    summary = "Delete a webhook endpoint with its pending deliveries and attempt log",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 204, description = "Deleted"),
        ProblemResponses,
    ),
)]
pub(crate) async fn remove(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiProblem> {
    let id = endpoint_id(path)?;
    state.app.delete_webhook_endpoint(&caller, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints/{id}/enable",
    operation_id = "webhook_endpoints_enable",
    tag = "webhooks",
    summary = "Enable a webhook endpoint; deliveries held while it was disabled are sent",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 200, description = "OK", body = WebhookEndpoint),
        ProblemResponses,
    ),
)]
pub(crate) async fn enable(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<WebhookEndpoint>, ApiProblem> {
    let id = endpoint_id(path)?;
    Ok(Json(
        state
            .app
            .set_webhook_endpoint_enabled(&caller, &id, true)
            .await?,
    ))
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints/{id}/disable",
    operation_id = "webhook_endpoints_disable",
    tag = "webhooks",
    summary = "Disable a webhook endpoint: nothing is sent to it until it is enabled",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 200, description = "OK", body = WebhookEndpoint),
        ProblemResponses,
    ),
)]
pub(crate) async fn disable(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<WebhookEndpoint>, ApiProblem> {
    let id = endpoint_id(path)?;
    Ok(Json(
        state
            .app
            .set_webhook_endpoint_enabled(&caller, &id, false)
            .await?,
    ))
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints/{id}/rotate-secret",
    operation_id = "webhook_endpoints_rotate_secret",
    tag = "webhooks",
    summary = "Replace a webhook endpoint's signing secret (shown once); for 24 h deliveries carry signatures with both",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 200, description = "OK", body = WebhookEndpointWithSecret),
        ProblemResponses,
    ),
)]
pub(crate) async fn rotate_secret(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<WebhookEndpointWithSecret>, ApiProblem> {
    let id = endpoint_id(path)?;
    Ok(Json(state.app.rotate_webhook_secret(&caller, &id).await?))
}

#[utoipa::path(
    get,
    path = "/v1/webhook-endpoints/{id}/attempts",
    operation_id = "webhook_endpoints_attempts",
    tag = "webhooks",
    summary = "The latest 100 delivery attempts to a webhook endpoint, newest first",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 200, description = "OK", body = ListOut<WebhookAttempt>),
        ProblemResponses,
    ),
)]
pub(crate) async fn attempts(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<ListOut<WebhookAttempt>>, ApiProblem> {
    let id = endpoint_id(path)?;
    let data = state.app.webhook_attempts(&caller, &id).await?;
    Ok(Json(ListOut {
        data,
        next_cursor: None,
    }))
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints/{id}/messages/{msg_id}/resend",
    operation_id = "webhook_endpoints_resend",
    tag = "webhooks",
    summary = "Deliver one message to a webhook endpoint again, now, with its webhook-id",
    params(
        ("id" = String, Path, description = "`ep_…`"),
        ("msg_id" = String, Path, description = "`msg_…`, the `webhook-id`"),
    ),
    responses(
        (status = 202, description = "Queued", body = WebhookReplay),
        ProblemResponses,
    ),
)]
pub(crate) async fn resend(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiProblem> {
    let Path((id, message)) = path.map_err(|e| invalid("id", e.body_text()))?;
    let queued = state
        .app
        .resend_webhook_message(&caller, &id, &message)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(queued)).into_response())
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints/{id}/recover",
    operation_id = "webhook_endpoints_recover",
    tag = "webhooks",
    summary = "Deliver again every message since a time that the endpoint's filter takes (at most 10,000)",
    params(("id" = String, Path, description = "`ep_…`")),
    request_body = WebhookRecoverIn,
    responses(
        (status = 202, description = "Queued", body = WebhookReplay),
        ProblemResponses,
    ),
)]
pub(crate) async fn recover(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let id = endpoint_id(path)?;
    let input: WebhookRecoverIn = parse_body(&bytes)?;
    let queued = state
        .app
        .recover_webhook_messages(&caller, &id, input.since)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(queued)).into_response())
}

#[utoipa::path(
    post,
    path = "/v1/webhook-endpoints/{id}/test",
    operation_id = "webhook_endpoints_test",
    tag = "webhooks",
    summary = "Send a webhook.test message to a webhook endpoint and answer how its first attempt went (waits up to 30 s)",
    params(("id" = String, Path, description = "`ep_…`")),
    responses(
        (status = 200, description = "Attempted, or still queued when `attempt` is absent", body = WebhookTestSend),
        ProblemResponses,
    ),
)]
pub(crate) async fn test_send(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<WebhookTestSend>, ApiProblem> {
    let id = endpoint_id(path)?;
    Ok(Json(
        state
            .app
            .test_webhook_endpoint(&caller, &id, TEST_SEND_WAIT)
            .await?,
    ))
}
