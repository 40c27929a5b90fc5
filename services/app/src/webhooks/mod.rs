//! Webhook endpoints: where a tenant receives its facts (Standard
//! Webhooks), which types, and the secret deliveries are signed with —
//! shown once, sealed at rest.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::ids::{OutboxMessageId, TenantId, WebhookEndpointId};
use slaproof_store::webhooks;

mod keys;
mod replay;
mod update;

pub use keys::Resealed;

pub use update::{MAX_RATE_LIMIT_PER_SEC, WebhookEndpointChange};

use crate::authz::Scope;
pub use crate::webhook_secret::{
    PROBE_HEADER_PREFIX, SECRET_PREFIX, SealError, SigningSecret, WebhookKey,
};
use crate::{App, AppError, Caller};

/// Endpoints one tenant may have.
pub const MAX_ENDPOINTS: i64 = 50;
/// How long the secret a rotation replaces still signs deliveries beside
/// the new one, so receivers can switch without refusing any.
pub const ROTATION_OVERLAP: chrono::Duration = chrono::Duration::hours(24);
/// Event-type patterns one endpoint may have.
pub const MAX_EVENT_TYPES: usize = 64;
/// Messages one recovery queues at most; a later `since` continues.
pub const MAX_RECOVERED: i64 = 10_000;
/// How long a test-send waits for the worker's first attempt before it
/// answers without one (the delivery stays queued).
pub const TEST_SEND_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A new endpoint as asked for; `Debug` leaves the header values out.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct NewWebhookEndpoint {
    pub url: String,
    pub description: Option<String>,
    /// Defaults to every type (`*`).
    pub event_types: Option<Vec<String>>,
    pub enabled: Option<bool>,
    /// Custom headers sent with every delivery (see [`headers_of`]).
    pub headers: Option<BTreeMap<String, String>>,
    /// Only the facts about this customer (its external reference).
    pub customer_ref: Option<String>,
    /// At most this many attempts started per second.
    pub rate_limit_per_sec: Option<i32>,
    /// One message at a time, in the order written.
    pub ordered: Option<bool>,
}

impl std::fmt::Debug for NewWebhookEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewWebhookEndpoint")
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("enabled", &self.enabled)
            .field("customer_ref", &self.customer_ref)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .field("ordered", &self.ordered)
            .finish_non_exhaustive()
    }
}

/// An endpoint as the provider reads it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WebhookEndpoint {
    /// `ep_…`
    #[schema(value_type = String, example = "ep_0192f0c1a2b37c8d9e0f112233445566")]
    pub id: WebhookEndpointId,
    pub url: String,
    pub description: String,
    /// Event types delivered: exact (`sla.breached`), a prefix (`sla.*`)
    /// or every type (`*`).
    pub event_types: Vec<String>,
    pub enabled: bool,
    /// Why the platform disabled it (e.g. the endpoint answered 410).
    pub disabled_reason: Option<String>,
    /// After a rotation: until when deliveries also carry a signature with
    /// the previous secret.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    /// The custom headers sent with every delivery, by (lower-case) name;
    /// their values are never answered, as they may be credentials.
    pub header_names: Vec<String>,
    /// Only the facts about this customer (its SLAs' facts, its alert
    /// lines, its credits): the customer's external reference.
    pub customer_ref: Option<String>,
    /// At most this many attempts started per second; absent: no limit
    /// but the worker's.
    pub rate_limit_per_sec: Option<i32>,
    /// One message at a time, in the order they were written: a message
    /// waits while an earlier one is neither delivered nor given up on.
    pub ordered: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The endpoint as answered, its customer named by reference.
impl From<webhooks::StoredEndpoint> for WebhookEndpoint {
    fn from(stored: webhooks::StoredEndpoint) -> Self {
        Self {
            id: stored.id,
            url: stored.url,
            description: stored.description,
            event_types: stored.event_types,
            enabled: stored.enabled,
            disabled_reason: stored.disabled_reason,
            previous_secret_expires_at: stored.previous_secret_expires_at,
            header_names: stored.headers.into_keys().collect(),
            customer_ref: stored.customer_ref,
            rate_limit_per_sec: stored.flow.rate_limit_per_sec,
            ordered: stored.flow.ordered,
            created_at: stored.created_at,
            updated_at: stored.updated_at,
        }
    }
}

/// An endpoint with its signing secret: answered once, at creation and at
/// each rotation. `Debug` leaves the secret out.
#[derive(Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WebhookEndpointWithSecret {
    pub endpoint: WebhookEndpoint,
    /// `whsec_` + base64 of 32 bytes: the key of the `webhook-signature`
    /// HMAC. Shown this once; slaproof keeps it only sealed.
    pub secret: String,
}

impl std::fmt::Debug for WebhookEndpointWithSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpointWithSecret")
            .field("endpoint", &self.endpoint)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// An attempt to deliver to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WebhookAttempt {
    /// The `webhook-id` (`msg_…`), the same on every attempt of a message.
    #[schema(value_type = String)]
    pub message_id: OutboxMessageId,
    pub event_type: String,
    /// 1 for the first attempt.
    pub attempt: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    /// The receiver's status; absent when there was no answer.
    pub status: Option<i32>,
    /// At most 1 KiB of the answer.
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
}

/// What a resend or a recovery queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WebhookReplay {
    /// Deliveries queued, due now; a message whose replay to the endpoint
    /// is still pending is not queued twice. They are sent while the
    /// endpoint is enabled.
    pub queued: u64,
    /// When a recovery stopped at its cap (10,000 messages): recover again
    /// from this time for the rest.
    pub next_since: Option<DateTime<Utc>>,
}

/// A test-send: the `webhook.test` message and how its first attempt went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WebhookTestSend {
    /// The `webhook-id` (`msg_…`) the receiver got.
    #[schema(value_type = String)]
    pub message_id: OutboxMessageId,
    /// Whether the receiver answered 2xx.
    pub delivered: bool,
    /// The attempt, as the attempt log keeps it; absent when no webhook
    /// worker tried within 30 s (the message stays queued, then retried on
    /// the schedule like any other).
    pub attempt: Option<WebhookAttempt>,
}

/// Checks one event-type pattern: `*`, an exact type (`sla.breached`) or
/// a prefix (`sla.*`); types are dotted lower-case words, as the outbox
/// writes them.
pub fn check_event_type(pattern: &str) -> Result<(), String> {
    if pattern == "*" {
        return Ok(());
    }
    let words: Vec<&str> = pattern.split('.').collect();
    let (last, head) = words.split_last().unwrap_or((&"", &[]));
    let word = |w: &&str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    let fits = !head.is_empty() && head.iter().all(word) && (*last == "*" || word(last));
    if fits {
        Ok(())
    } else {
        Err(format!(
            "{pattern:?} is no event type: dotted lower-case words (sla.breached), a prefix (sla.*) or *"
        ))
    }
}

/// Whether `event_type` matches `pattern` (the same rule the store's
/// fan-out applies in SQL).
pub fn matches(pattern: &str, event_type: &str) -> bool {
    match pattern.strip_suffix('*') {
        _ if pattern == "*" => true,
        Some(prefix) if prefix.ends_with('.') => event_type.starts_with(prefix),
        _ => pattern == event_type,
    }
}

fn event_types_of(given: Option<Vec<String>>) -> Result<Vec<String>, AppError> {
    let mut types = given.unwrap_or_else(|| vec!["*".to_owned()]);
    if types.is_empty() || types.len() > MAX_EVENT_TYPES {
        return Err(AppError::invalid(
            "event_types",
            format!("must name between 1 and {MAX_EVENT_TYPES} types"),
        ));
    }
    for (i, pattern) in types.iter_mut().enumerate() {
        *pattern = pattern.trim().to_owned();
        check_event_type(pattern).map_err(|m| AppError::invalid(format!("event_types[{i}]"), m))?;
    }
    types.sort();
    types.dedup();
    Ok(types)
}

fn parse_id(id: &str) -> Result<WebhookEndpointId, AppError> {
    id.parse().map_err(|_| AppError::NotFound {
        what: "webhook endpoint",
        key: id.to_owned(),
    })
}

impl App {
    /// Creates an endpoint; its secret is in the answer, and only there.
    #[tracing::instrument(skip(self, caller, new), fields(tenant = %caller.tenant()))]
    pub async fn create_webhook_endpoint(
        &self,
        caller: &Caller,
        new: NewWebhookEndpoint,
    ) -> Result<WebhookEndpointWithSecret, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let description = update::description_of(new.description.unwrap_or_default())?;
        let event_types = event_types_of(new.event_types)?;
        let rate_limit_per_sec = update::rate_limit_of(new.rate_limit_per_sec)?;
        let headers = headers_of(new.headers.unwrap_or_default())?;
        // Before any transaction: resolving the host can take seconds.
        let url = crate::probes::check_url(&self.outbound, &new.url).await?;
        let key = self.webhook_key().await?;
        let secret = SigningSecret::generate();
        let id = WebhookEndpointId::new();
        let stored = self
            .in_tx(caller, async |tx| {
                if webhooks::count_locked(tx).await? >= MAX_ENDPOINTS {
                    return Err(AppError::Conflict(format!(
                        "a tenant may have at most {MAX_ENDPOINTS} webhook endpoints; delete one first"
                    )));
                }
                let customer = match &new.customer_ref {
                    Some(r) => Some(update::customer_of(tx, r).await?),
                    None => None,
                };
                let new = webhooks::NewEndpoint {
                    id,
                    url,
                    description,
                    event_types,
                    enabled: new.enabled.unwrap_or(true),
                    secret_sealed: key.seal(caller.tenant(), id, &secret),
                    headers: seal_headers(&key, caller.tenant(), id, &headers),
                    flow: webhooks::Flow {
                        customer,
                        rate_limit_per_sec,
                        ordered: new.ordered.unwrap_or(false),
                    },
                };
                Ok(webhooks::create(tx, &new).await?)
            })
            .await?;
        Ok(WebhookEndpointWithSecret {
            endpoint: stored.into(),
            secret: secret.reveal(),
        })
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_webhook_endpoints(
        &self,
        caller: &Caller,
    ) -> Result<Vec<WebhookEndpoint>, AppError> {
        caller.require_provider(Scope::WebhookRead)?;
        let rows = self
            .in_tx(caller, async |tx| Ok(webhooks::list(tx).await?))
            .await?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn get_webhook_endpoint(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<WebhookEndpoint, AppError> {
        caller.require_provider(Scope::WebhookRead)?;
        let id = parse_id(id)?;
        let stored = self
            .in_tx(caller, async |tx| Ok(webhooks::find(tx, id).await?))
            .await?;
        Ok(stored.into())
    }

    /// Enables or disables an endpoint. Enabling one the platform disabled
    /// clears the reason; deliveries written while it was disabled are
    /// sent when it is enabled again.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn set_webhook_endpoint_enabled(
        &self,
        caller: &Caller,
        id: &str,
        enabled: bool,
    ) -> Result<WebhookEndpoint, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        let reason = format!("disabled by {}", caller.principal.subject);
        let stored = self
            .in_tx(caller, async |tx| {
                Ok(webhooks::set_enabled(tx, id, enabled, Some(&reason)).await?)
            })
            .await?;
        Ok(stored.into())
    }

    /// Deletes an endpoint, its pending deliveries and its attempt log.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn delete_webhook_endpoint(&self, caller: &Caller, id: &str) -> Result<(), AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        self.in_tx(caller, async |tx| Ok(webhooks::delete(tx, id).await?))
            .await
    }

    /// Replaces an endpoint's secret, which the answer shows once. For
    /// [`ROTATION_OVERLAP`] deliveries carry two signatures, with the new
    /// secret and the one it replaced, so the receiver can switch when it
    /// likes; a second rotation ends the first one's overlap.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn rotate_webhook_secret(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<WebhookEndpointWithSecret, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        let key = self.webhook_key().await?;
        let secret = SigningSecret::generate();
        let sealed = key.seal(caller.tenant(), id, &secret);
        let stored = self
            .in_tx(caller, async |tx| {
                let until = Utc::now() + ROTATION_OVERLAP;
                Ok(webhooks::set_secret(tx, id, &sealed, until).await?)
            })
            .await?;
        Ok(WebhookEndpointWithSecret {
            endpoint: stored.into(),
            secret: secret.reveal(),
        })
    }

    /// The latest attempts to deliver to an endpoint (at most 100), newest
    /// first.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn webhook_attempts(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Vec<WebhookAttempt>, AppError> {
        caller.require_provider(Scope::WebhookRead)?;
        let id = parse_id(id)?;
        let rows = self
            .in_tx(caller, async |tx| {
                webhooks::find(tx, id).await?;
                Ok(webhooks::attempts(tx, id, 100).await?)
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|a| WebhookAttempt {
                message_id: a.message,
                event_type: a.event_type,
                attempt: a.attempt,
                started_at: a.started_at,
                duration_ms: a.duration_ms,
                status: a.status,
                response_excerpt: a.response_excerpt,
                error: a.error,
            })
            .collect())
    }
}

/// Custom headers one endpoint may have.
pub const MAX_HEADERS: usize = 10;
/// The longest custom header value, in bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 1024;
/// Header names the platform sets itself, or that belong to the connection
/// rather than to the receiver: refused as custom headers (with any
/// `webhook-*` name, which Standard Webhooks reserves).
const RESERVED_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "proxy-authorization",
];

/// Checks an endpoint's custom headers and answers them by lower-case
/// name: at most [`MAX_HEADERS`], names HTTP tokens and not reserved,
/// values visible ASCII (spaces and tabs inside) of at most
/// [`MAX_HEADER_VALUE_BYTES`]. `authorization` is allowed: a receiver
/// behind a gateway often needs one. Errors name the header, never its
/// value.
pub fn headers_of(headers: BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AppError> {
    use crate::headers::{HeaderProblem, HeaderRules, check};
    const RULES: HeaderRules = HeaderRules {
        max: MAX_HEADERS,
        max_name_bytes: 100,
        max_value_bytes: MAX_HEADER_VALUE_BYTES,
        reserved: RESERVED_HEADERS,
        reserved_prefix: Some("webhook-"),
        trimmed: true,
    };
    let message = match check(&headers, &RULES) {
        Ok(checked) => return Ok(checked),
        Err(HeaderProblem::TooMany) => format!("at most {MAX_HEADERS} headers"),
        Err(HeaderProblem::BadName(name)) => {
            format!("{name:?} is not an HTTP header name (1-100 token characters)")
        }
        Err(HeaderProblem::Reserved(name)) => format!(
            "{} is set by the platform or the connection; it cannot be custom",
            name.to_ascii_lowercase()
        ),
        Err(HeaderProblem::BadValue(name)) => format!(
            "the value of {} must be visible ASCII without leading or trailing blanks, at most {MAX_HEADER_VALUE_BYTES} bytes",
            name.to_ascii_lowercase()
        ),
        Err(HeaderProblem::Twice(name)) => {
            format!("{} is given twice", name.to_ascii_lowercase())
        }
    };
    Err(AppError::invalid("headers", message))
}

/// `headers` as kept: their names, and names and values sealed under
/// `key` for this endpoint only.
pub(crate) fn seal_headers(
    key: &WebhookKey,
    tenant: TenantId,
    endpoint: WebhookEndpointId,
    headers: &BTreeMap<String, String>,
) -> webhooks::SealedHeaders {
    webhooks::SealedHeaders {
        names: headers.keys().cloned().collect(),
        sealed: Some(key.seal_headers(tenant, endpoint, headers)),
    }
}

/// Deletes attempts older than `keep_days` (`webhooks.attempts_retention_days`)
/// and the finished deliveries they leave without any (run by housekeeping).
pub async fn expire_attempts(
    db: &slaproof_store::Database,
    keep_days: u32,
) -> Result<webhooks::Expired, AppError> {
    Ok(webhooks::expire(db, keep_days).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_exact_prefixes_or_everything() {
        for good in ["*", "sla.*", "sla.breached", "slo.burn_rate_alert", "a.b.*"] {
            assert_eq!(check_event_type(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "sla",
            "sla.",
            "*.breached",
            "SLA.breached",
            "sla.*.x",
            "sla.b*",
            ".*",
        ] {
            assert!(check_event_type(bad).is_err(), "{bad}");
        }
        assert!(matches("*", "sla.breached"));
        assert!(matches("sla.*", "sla.breached"));
        assert!(!matches("sla.*", "slo.at_risk"));
        assert!(!matches("sla.*", "slaa.x"));
        assert!(matches("sla.breached", "sla.breached"));
        assert!(!matches("sla.breached", "sla.breached_x"));
    }
}
