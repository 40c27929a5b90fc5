//! Replay and test-send: a message delivered again to one endpoint, every message since a time, and a `webhook.test` through the worker.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::OutboxMessageId;
use slaproof_store::webhooks;

use super::{MAX_RECOVERED, WebhookAttempt, WebhookReplay, WebhookTestSend, matches, parse_id};
use crate::authz::Scope;
use crate::{App, AppError, Caller};

impl App {
    /// Delivers one message to one endpoint again: a new delivery, due now,
    /// with the message's `webhook-id`. The message must be of a type the
    /// endpoint's filter takes.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn resend_webhook_message(
        &self,
        caller: &Caller,
        id: &str,
        message_id: &str,
    ) -> Result<WebhookReplay, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        let not_found = || AppError::NotFound {
            what: "webhook message",
            key: message_id.to_owned(),
        };
        let message: OutboxMessageId = message_id.parse().map_err(|_| not_found())?;
        let queued = self
            .in_tx(caller, async |tx| {
                let endpoint = webhooks::find(tx, id).await?;
                let event_type = webhooks::message_type(tx, message)
                    .await?
                    .ok_or_else(not_found)?;
                if !endpoint.event_types.iter().any(|p| matches(p, &event_type)) {
                    return Err(AppError::invalid(
                        "msg_id",
                        format!(
                            "the message is a {event_type}, a type the endpoint's filter does not take"
                        ),
                    ));
                }
                Ok(webhooks::resend(tx, id, message).await?)
            })
            .await?;
        Ok(WebhookReplay {
            queued: u64::from(queued),
            next_since: None,
        })
    }

    /// Delivers again to one endpoint every message since `since` whose
    /// type its filter takes, delivered before or not (while the endpoint
    /// was disabled it was not), oldest first, at most [`MAX_RECOVERED`].
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn recover_webhook_messages(
        &self,
        caller: &Caller,
        id: &str,
        since: DateTime<Utc>,
    ) -> Result<WebhookReplay, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        let recovered = self
            .in_tx(caller, async |tx| {
                webhooks::find(tx, id).await?;
                Ok(webhooks::recover(tx, id, since, MAX_RECOVERED).await?)
            })
            .await?;
        let capped = recovered.considered >= MAX_RECOVERED.unsigned_abs();
        Ok(WebhookReplay {
            queued: recovered.queued,
            next_since: recovered.last_at.filter(|_| capped),
        })
    }
}

impl App {
    /// Sends a `webhook.test` message to one endpoint, whatever its filter,
    /// through the webhook worker (the same signing, outbound policy and
    /// attempt log as every delivery), and answers how its first attempt
    /// went, waiting at most `wait` for it.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn test_webhook_endpoint(
        &self,
        caller: &Caller,
        id: &str,
        wait: std::time::Duration,
    ) -> Result<WebhookTestSend, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        let (message, delivery) = self
            .in_tx(caller, async |tx| {
                let endpoint = webhooks::find(tx, id).await?;
                if !endpoint.enabled {
                    return Err(AppError::Conflict(
                        "the endpoint is disabled: enable it to send it a test".to_owned(),
                    ));
                }
                let payload = serde_json::json!({
                    "endpoint": endpoint.id.to_string(),
                    "message": "a test from slaproof: this endpoint receives and verifies webhooks",
                });
                Ok(webhooks::enqueue_test(tx, id, &payload).await?)
            })
            .await?;
        let deadline = tokio::time::Instant::now() + wait;
        let attempt = loop {
            let first = self
                .in_tx(caller, async |tx| {
                    Ok(webhooks::first_attempt(tx, delivery).await?)
                })
                .await?;
            if first.is_some() || tokio::time::Instant::now() >= deadline {
                break first;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        Ok(WebhookTestSend {
            message_id: message,
            delivered: attempt
                .as_ref()
                .is_some_and(|a| a.status.is_some_and(|s| (200..300).contains(&s))),
            attempt: attempt.map(|a| WebhookAttempt {
                message_id: message,
                event_type: "webhook.test".to_owned(),
                attempt: 1,
                started_at: a.started_at,
                duration_ms: a.duration_ms,
                status: a.status,
                response_excerpt: a.response_excerpt,
                error: a.error,
            }),
        })
    }
}
