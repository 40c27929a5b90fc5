//! Webhook endpoints over GraphQL: the same operations as
//! `/v1/webhook-endpoints`; a secret is answered once, at creation and at
//! each rotation.

use async_graphql::{Context, InputObject, MaybeUndefined, Object, SimpleObject};
use slaproof_app::Scope;
use slaproof_app::webhooks::{NewWebhookEndpoint, WebhookEndpointChange};

use super::limits::{read_cost, unpaged_cost};
use super::{holds, instant, parts, refuse};

fn holds_webhooks(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::WebhookRead)
}

#[derive(Debug, Default)]
pub(super) struct WebhookQuery;

#[Object]
impl WebhookQuery {
    /// The tenant's webhook endpoints (at most 50), oldest first.
    #[graphql(
        visible = "holds_webhooks",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn webhook_endpoints(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Vec<WebhookEndpoint>> {
        let (app, caller) = parts(ctx)?;
        let endpoints = app.list_webhook_endpoints(caller).await.map_err(refuse)?;
        Ok(endpoints.into_iter().map(Into::into).collect())
    }

    /// One webhook endpoint by id (`ep_…`).
    #[graphql(visible = "holds_webhooks", complexity = "read_cost(child_complexity)")]
    async fn webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<WebhookEndpoint> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .get_webhook_endpoint(caller, &id)
            .await
            .map_err(refuse)?
            .into())
    }

    /// The latest 100 delivery attempts to an endpoint, newest first.
    #[graphql(
        visible = "holds_webhooks",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn webhook_attempts(
        &self,
        ctx: &Context<'_>,
        endpoint_id: String,
    ) -> async_graphql::Result<Vec<WebhookAttempt>> {
        let (app, caller) = parts(ctx)?;
        let attempts = app
            .webhook_attempts(caller, &endpoint_id)
            .await
            .map_err(refuse)?;
        Ok(attempts.into_iter().map(Into::into).collect())
    }
}

/// An endpoint to create.
#[derive(Debug, InputObject)]
struct WebhookEndpointInput {
    /// http or https; private targets are refused unless the operator
    /// allows them.
    url: String,
    description: Option<String>,
    /// Exact types (`sla.breached`), prefixes (`sla.*`) or `*` (default).
    event_types: Option<Vec<String>>,
    enabled: Option<bool>,
    /// Custom headers sent with every delivery: at most 10, values visible
    /// ASCII up to 1 KiB; `webhook-*`, `content-type`, `content-length`,
    /// `host` and connection headers are refused. Values are never
    /// answered nor logged.
    headers: Option<Vec<WebhookHeaderInput>>,
    /// Only the facts about this customer (its external reference).
    customer_ref: Option<String>,
    /// At most this many attempts started per second (1-10000).
    rate_limit_per_sec: Option<i32>,
    /// One message at a time, in the order written (default false).
    ordered: Option<bool>,
}

/// Changes to an endpoint: fields left out stay; `null` clears
/// `customerRef` and `rateLimitPerSec`; `headers` replaces every header.
#[derive(Debug, InputObject)]
struct WebhookEndpointPatch {
    url: Option<String>,
    description: Option<String>,
    event_types: Option<Vec<String>>,
    headers: Option<Vec<WebhookHeaderInput>>,
    customer_ref: MaybeUndefined<String>,
    rate_limit_per_sec: MaybeUndefined<i32>,
    ordered: Option<bool>,
    enabled: Option<bool>,
}

/// `None` for a field left out, `Some(None)` for an explicit null.
fn given<T>(value: MaybeUndefined<T>) -> Option<Option<T>> {
    match value {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(v) => Some(Some(v)),
    }
}

/// One custom header. `Debug` leaves the value out.
#[derive(InputObject)]
struct WebhookHeaderInput {
    name: String,
    value: String,
}

impl std::fmt::Debug for WebhookHeaderInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookHeaderInput")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The headers as the application takes them; a name given twice (in any
/// case) is refused rather than one value silently winning.
fn headers_map(
    headers: Option<Vec<WebhookHeaderInput>>,
) -> Result<Option<std::collections::BTreeMap<String, String>>, slaproof_app::AppError> {
    let Some(headers) = headers else {
        return Ok(None);
    };
    let mut map = std::collections::BTreeMap::new();
    for header in headers {
        let name = header.name.to_ascii_lowercase();
        if map.insert(name.clone(), header.value).is_some() {
            return Err(slaproof_app::AppError::invalid(
                "headers",
                format!("{name} is given twice"),
            ));
        }
    }
    Ok(Some(map))
}

#[derive(Debug, Default)]
pub(super) struct WebhookMutation;

#[Object]
impl WebhookMutation {
    /// Creates a webhook endpoint; `secret` is shown this once.
    async fn create_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        input: WebhookEndpointInput,
    ) -> async_graphql::Result<WebhookEndpointWithSecret> {
        let (app, caller) = parts(ctx)?;
        let new = NewWebhookEndpoint {
            url: input.url,
            description: input.description,
            event_types: input.event_types,
            enabled: input.enabled,
            headers: headers_map(input.headers).map_err(refuse)?,
            customer_ref: input.customer_ref,
            rate_limit_per_sec: input.rate_limit_per_sec,
            ordered: input.ordered,
        };
        let made = app
            .create_webhook_endpoint(caller, new)
            .await
            .map_err(refuse)?;
        Ok(made.into())
    }

    /// Changes a webhook endpoint's URL, filters, limits, headers or state.
    async fn update_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        id: String,
        input: WebhookEndpointPatch,
    ) -> async_graphql::Result<WebhookEndpoint> {
        let (app, caller) = parts(ctx)?;
        let change = WebhookEndpointChange {
            url: input.url,
            description: input.description,
            event_types: input.event_types,
            headers: headers_map(input.headers).map_err(refuse)?,
            customer_ref: given(input.customer_ref),
            rate_limit_per_sec: given(input.rate_limit_per_sec),
            ordered: input.ordered,
            enabled: input.enabled,
        };
        Ok(app
            .update_webhook_endpoint(caller, &id, change)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Enables or disables a webhook endpoint.
    async fn set_webhook_endpoint_enabled(
        &self,
        ctx: &Context<'_>,
        id: String,
        enabled: bool,
    ) -> async_graphql::Result<WebhookEndpoint> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .set_webhook_endpoint_enabled(caller, &id, enabled)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Deletes a webhook endpoint with its pending deliveries and attempts.
    async fn delete_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<bool> {
        let (app, caller) = parts(ctx)?;
        app.delete_webhook_endpoint(caller, &id)
            .await
            .map_err(refuse)?;
        Ok(true)
    }

    /// Replaces an endpoint's signing secret; the new one is shown once.
    /// For 24 h deliveries carry signatures with both secrets.
    async fn rotate_webhook_secret(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<WebhookEndpointWithSecret> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .rotate_webhook_secret(caller, &id)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Delivers one message (`msg_…`) to an endpoint again, now, with its
    /// `webhook-id`.
    async fn resend_webhook_message(
        &self,
        ctx: &Context<'_>,
        endpoint_id: String,
        message_id: String,
    ) -> async_graphql::Result<WebhookReplay> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .resend_webhook_message(caller, &endpoint_id, &message_id)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Sends a `webhook.test` message to an endpoint and answers how its
    /// first attempt went (waiting up to 30 s for the webhook worker).
    async fn test_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<WebhookTestSend> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .test_webhook_endpoint(caller, &id, slaproof_app::webhooks::TEST_SEND_WAIT)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Delivers again to an endpoint every message since `since` (RFC
    /// 3339) that its filter takes, at most 10,000.
    async fn recover_webhook_messages(
        &self,
        ctx: &Context<'_>,
        endpoint_id: String,
        since: String,
    ) -> async_graphql::Result<WebhookReplay> {
        let (app, caller) = parts(ctx)?;
        let since = instant("since", Some(since))?
            .ok_or_else(|| async_graphql::Error::new("since is required"))?;
        Ok(app
            .recover_webhook_messages(caller, &endpoint_id, since)
            .await
            .map_err(refuse)?
            .into())
    }
}

/// A test-send: the `webhook.test` message and how its first attempt went.
#[derive(Debug, SimpleObject)]
struct WebhookTestSend {
    /// The `webhook-id` (`msg_…`).
    message_id: String,
    /// Whether the receiver answered 2xx.
    delivered: bool,
    /// Absent when no webhook worker tried within 30 s (it stays queued).
    attempt: Option<WebhookAttempt>,
}

impl From<slaproof_app::webhooks::WebhookTestSend> for WebhookTestSend {
    fn from(t: slaproof_app::webhooks::WebhookTestSend) -> Self {
        Self {
            message_id: t.message_id.to_string(),
            delivered: t.delivered,
            attempt: t.attempt.map(Into::into),
        }
    }
}

/// What a resend or a recovery queued.
#[derive(Debug, SimpleObject)]
struct WebhookReplay {
    /// Deliveries queued, due now (sent while the endpoint is enabled).
    queued: u64,
    /// When a recovery stopped at its cap: recover again from this time.
    next_since: Option<String>,
}

impl From<slaproof_app::webhooks::WebhookReplay> for WebhookReplay {
    fn from(r: slaproof_app::webhooks::WebhookReplay) -> Self {
        Self {
            queued: r.queued,
            next_since: r.next_since.map(|t| t.to_rfc3339()),
        }
    }
}

#[derive(Debug, SimpleObject)]
struct WebhookEndpoint {
    /// `ep_…`.
    id: String,
    url: String,
    description: String,
    event_types: Vec<String>,
    enabled: bool,
    /// Why the platform disabled it (e.g. a 410 answer).
    disabled_reason: Option<String>,
    /// After a rotation: until when deliveries also carry a signature with
    /// the previous secret.
    previous_secret_expires_at: Option<String>,
    /// The custom headers' names; their values are never answered.
    header_names: Vec<String>,
    /// Only the facts about this customer (its external reference).
    customer_ref: Option<String>,
    /// At most this many attempts started per second.
    rate_limit_per_sec: Option<i32>,
    /// One message at a time, in the order written.
    ordered: bool,
    created_at: String,
    updated_at: String,
}

impl From<slaproof_app::webhooks::WebhookEndpoint> for WebhookEndpoint {
    fn from(e: slaproof_app::webhooks::WebhookEndpoint) -> Self {
        Self {
            id: e.id.to_string(),
            url: e.url,
            description: e.description,
            event_types: e.event_types,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            previous_secret_expires_at: e.previous_secret_expires_at.map(|t| t.to_rfc3339()),
            header_names: e.header_names,
            customer_ref: e.customer_ref,
            rate_limit_per_sec: e.rate_limit_per_sec,
            ordered: e.ordered,
            created_at: e.created_at.to_rfc3339(),
            updated_at: e.updated_at.to_rfc3339(),
        }
    }
}

/// An endpoint with its signing secret (`whsec_…`), shown this once.
#[derive(SimpleObject)]
struct WebhookEndpointWithSecret {
    endpoint: WebhookEndpoint,
    secret: String,
}

impl std::fmt::Debug for WebhookEndpointWithSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpointWithSecret")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl From<slaproof_app::webhooks::WebhookEndpointWithSecret> for WebhookEndpointWithSecret {
    fn from(made: slaproof_app::webhooks::WebhookEndpointWithSecret) -> Self {
        Self {
            endpoint: made.endpoint.into(),
            secret: made.secret,
        }
    }
}

#[derive(Debug, SimpleObject)]
struct WebhookAttempt {
    /// The `webhook-id` (`msg_…`), the same on every attempt of a message.
    message_id: String,
    event_type: String,
    attempt: i32,
    started_at: String,
    duration_ms: i32,
    status: Option<i32>,
    response_excerpt: Option<String>,
    error: Option<String>,
}

impl From<slaproof_app::webhooks::WebhookAttempt> for WebhookAttempt {
    fn from(a: slaproof_app::webhooks::WebhookAttempt) -> Self {
        Self {
            message_id: a.message_id.to_string(),
            event_type: a.event_type,
            attempt: a.attempt,
            started_at: a.started_at.to_rfc3339(),
            duration_ms: a.duration_ms,
            status: a.status,
            response_excerpt: a.response_excerpt,
            error: a.error,
        }
    }
}
