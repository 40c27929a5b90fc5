//! The worker: fan-out from the outbox, then delivery, claiming more as
//! slots free up, each tenant held to its share of them.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use chrono::Utc;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use slaproof_app::webhooks::WebhookKey;
use slaproof_domain::ids::TenantId;
use slaproof_http::outbound::{OutboundPolicy, refusal_of};
use slaproof_store::webhooks::{self, Attempt, AttemptRecord, ClaimLimits, ClaimedDelivery, Next};
use slaproof_store::{Database, StoreError, outbox};
use tokio_util::sync::CancellationToken;

use crate::{Settings, schedule, signature};

/// What the answer excerpt keeps of a receiver's answer.
const EXCERPT_BYTES: usize = 1024;
const USER_AGENT: &str = concat!("slaproof-webhooks/", env!("CARGO_PKG_VERSION"));

/// A round that could not run.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("webhook store: {0}")]
    Store(#[from] StoreError),
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Claims outbox messages and writes their deliveries, each tenant's in
/// one transaction with marking them dispatched. Answers
/// how many messages were handed on.
#[tracing::instrument(skip(db))]
pub async fn relay_outbox(
    db: &Database,
    worker: &str,
    batch: i32,
    lease: Duration,
) -> Result<usize, WebhookError> {
    let messages = outbox::claim(db, worker, batch, lease).await?;
    let count = messages.len();
    let mut by_tenant: BTreeMap<TenantId, Vec<webhooks::Relayed>> = BTreeMap::new();
    for message in messages {
        by_tenant
            .entry(message.tenant)
            .or_default()
            .push(webhooks::Relayed {
                message: message.id,
                event_type: message.event_type,
                payload: message.payload,
                created_at: message.created_at,
            });
    }
    for (tenant, messages) in by_tenant {
        let mut tx = db.tenant_tx(tenant).await?;
        webhooks::fan_out(&mut tx, &messages).await?;
        let ids: Vec<_> = messages.iter().map(|m| m.message).collect();
        outbox::mark_dispatched(&mut tx, &ids).await?;
        tx.commit().await?;
    }
    Ok(count)
}

/// Sends claimed deliveries: the HTTP client, the key that opens
/// endpoints' secrets, and this worker's name in the leases.
#[derive(Debug, Clone)]
pub struct Deliverer {
    db: Database,
    settings: Settings,
    key: WebhookKey,
    policy: OutboundPolicy,
    client: reqwest::Client,
    worker: String,
}

/// What sending one delivery came to.
struct Sent {
    attempt: Attempt,
    retry_after: Option<Duration>,
    gone: bool,
}

impl Deliverer {
    pub fn new(
        db: Database,
        settings: Settings,
        key: WebhookKey,
        policy: OutboundPolicy,
        worker: impl Into<String>,
    ) -> Result<Self, WebhookError> {
        let client = policy
            .client_builder()
            .user_agent(USER_AGENT)
            .timeout(settings.request_timeout())
            .connect_timeout(settings.request_timeout())
            .build()
            .map_err(WebhookError::Client)?;
        Ok(Self {
            db,
            settings,
            key,
            policy,
            client,
            worker: worker.into(),
        })
    }

    /// One round: fan out what the outbox holds, then send what is due.
    /// Answers how much was done (0: the worker may sleep).
    pub async fn round(&self) -> Result<usize, WebhookError> {
        let relayed = relay_outbox(
            &self.db,
            &self.worker,
            self.settings.batch,
            self.settings.lease(),
        )
        .await?;
        let sent = self.deliver_due().await?;
        Ok(relayed + sent)
    }

    /// What one claim may hand out when `free` slots are open.
    fn limits(&self, free: usize) -> ClaimLimits {
        ClaimLimits {
            batch: self
                .settings
                .batch
                .min(i32::try_from(free).unwrap_or(i32::MAX)),
            per_endpoint: self.settings.endpoint_concurrency,
            per_tenant: self.settings.tenant_concurrency,
        }
    }

    /// Claims due deliveries and sends them, at most `concurrency` at once,
    /// recording the attempts as they finish: those finished together in
    /// one transaction per tenant. [`Self::serve`] is the worker's loop;
    /// this is one claim of it, for tests and benches that step it.
    #[tracing::instrument(skip(self), fields(worker = %self.worker))]
    pub async fn deliver_due(&self) -> Result<usize, WebhookError> {
        let claimed = webhooks::claim(
            &self.db,
            &self.worker,
            self.settings.lease(),
            self.limits(usize::MAX),
        )
        .await?;
        let count = claimed.len();
        let mut finished = futures_util::stream::iter(claimed)
            .map(|delivery| self.sent(delivery))
            .buffer_unordered(self.settings.concurrency)
            .ready_chunks(self.settings.concurrency);
        // A batch that fails to record is left to its leases (sent again
        // later: at least once); the others are still recorded.
        let mut first_error = None;
        while let Some(batch) = finished.next().await {
            if let Err(err) = self.record(batch).await {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(count), Err)
    }

    /// Sends deliveries until `shutdown`: whenever a slot is free, fans out
    /// the outbox and claims up to the free slots, so a slow delivery holds
    /// its own slot only, never a batch. One tenant holds at most
    /// `tenant_concurrency` of the slots (the claim counts this worker's
    /// leases), so however far behind its endpoints are, the other
    /// tenants' deliveries go out beside them. On shutdown it claims
    /// nothing more, and records what is in flight as it finishes.
    pub async fn serve(&self, shutdown: &CancellationToken) {
        let poll = self.settings.poll_interval();
        let mut in_flight = FuturesUnordered::new();
        loop {
            let free = self.settings.concurrency.saturating_sub(in_flight.len());
            // Whether the last claim was full, so more may be due at once.
            let mut full = false;
            if free > 0 && !shutdown.is_cancelled() {
                match self.claim(free).await {
                    Ok(claimed) => {
                        full = claimed.len() == self.limits(free).batch as usize;
                        in_flight.extend(claimed.into_iter().map(|d| self.sent(d)));
                    }
                    Err(err) => {
                        tracing::error!(error = %err, "claiming webhook deliveries failed; retrying")
                    }
                }
            }
            let free = self.settings.concurrency.saturating_sub(in_flight.len());
            if full && free > 0 {
                continue;
            }
            if in_flight.is_empty() {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(poll) => continue,
                }
            }
            // The next to finish; with slots open, at most a poll's wait,
            // so new work is seen while others are still in flight.
            let first = if free > 0 && !shutdown.is_cancelled() {
                tokio::select! {
                    done = in_flight.next() => done,
                    () = tokio::time::sleep(poll) => None,
                    () = shutdown.cancelled() => None,
                }
            } else {
                in_flight.next().await
            };
            let mut finished: Vec<_> = first.into_iter().collect();
            while let Some(Some(done)) = in_flight.next().now_or_never() {
                finished.push(done);
            }
            if !finished.is_empty()
                && let Err(err) = self.record(finished).await
            {
                // Left to their leases: sent again later, at least once.
                tracing::error!(error = %err, "recording webhook attempts failed");
            }
        }
    }

    /// Fans out the outbox, then claims up to `free` deliveries.
    async fn claim(&self, free: usize) -> Result<Vec<ClaimedDelivery>, WebhookError> {
        let lease = self.settings.lease();
        relay_outbox(&self.db, &self.worker, self.settings.batch, lease).await?;
        Ok(webhooks::claim(&self.db, &self.worker, lease, self.limits(free)).await?)
    }

    /// Sends one delivery, handing it back with what came of it.
    async fn sent(&self, delivery: ClaimedDelivery) -> (ClaimedDelivery, Sent) {
        let sent = self.send(&delivery).await;
        (delivery, sent)
    }

    /// Records finished attempts and what follows each, one transaction
    /// per tenant; disables an endpoint that answered 410 or has failed
    /// for too long.
    async fn record(&self, finished: Vec<(ClaimedDelivery, Sent)>) -> Result<(), WebhookError> {
        let mut by_tenant: BTreeMap<TenantId, Vec<(ClaimedDelivery, Sent, Next)>> = BTreeMap::new();
        for (delivery, sent) in finished {
            let next = next_of(&delivery, &sent);
            if next != Next::Delivered {
                tracing::info!(tenant = %delivery.tenant, endpoint = %delivery.endpoint, message = %delivery.message, attempt = delivery.attempt, status = ?sent.attempt.status, error = ?sent.attempt.error, ?next, "webhook attempt failed");
            }
            by_tenant
                .entry(delivery.tenant)
                .or_default()
                .push((delivery, sent, next));
        }
        for (tenant, finished) in by_tenant {
            let records: Vec<AttemptRecord> = finished
                .iter()
                .map(|(delivery, sent, next)| AttemptRecord {
                    delivery: delivery.id,
                    attempt: delivery.attempt,
                    outcome: sent.attempt.clone(),
                    next: *next,
                })
                .collect();
            let mut tx = self.db.tenant_tx(tenant).await?;
            let recorded: HashSet<uuid::Uuid> =
                webhooks::record_attempts(&mut tx, &self.worker, &records)
                    .await?
                    .into_iter()
                    .collect();
            for (delivery, sent, next) in &finished {
                if !recorded.contains(&delivery.id) {
                    tracing::warn!(tenant = %delivery.tenant, endpoint = %delivery.endpoint, message = %delivery.message, attempt = delivery.attempt, "lease lost before the attempt was recorded; another worker owns it");
                } else if sent.gone {
                    let detail = "the endpoint answered 410 Gone";
                    disable(&mut tx, delivery, "gone", detail, None).await?;
                } else if *next != Next::Delivered {
                    let threshold = self.settings.disable_after_failing();
                    if let Some(since) =
                        webhooks::failing_since(&mut tx, delivery.endpoint, threshold).await?
                    {
                        let detail = format!("every attempt failed since {}", since.to_rfc3339());
                        disable(&mut tx, delivery, "failing", &detail, Some(since)).await?;
                    }
                }
            }
            tx.commit().await?;
        }
        Ok(())
    }

    /// The HTTP exchange; never fails: every way it can go wrong is an
    /// attempt too.
    #[tracing::instrument(skip(self, delivery), fields(tenant = %delivery.tenant, endpoint = %delivery.endpoint, message = %delivery.message, attempt = delivery.attempt))]
    async fn send(&self, delivery: &ClaimedDelivery) -> Sent {
        let started_at = Utc::now();
        let start = Instant::now();
        let failed = |error: String| Sent {
            attempt: Attempt {
                started_at,
                duration_ms: millis(start.elapsed()),
                status: None,
                response_excerpt: None,
                error: Some(error),
            },
            retry_after: None,
            gone: false,
        };
        let secret =
            match self
                .key
                .open(delivery.tenant, delivery.endpoint, &delivery.secret_sealed)
            {
                Ok(secret) => secret,
                Err(err) => return failed(err.to_string()),
            };
        // Sealed since 20261205000800; a row from before carries them in
        // the clear until it is re-sealed.
        let headers = match &delivery.headers_sealed {
            Some(sealed) => match self
                .key
                .open_headers(delivery.tenant, delivery.endpoint, sealed)
            {
                Ok(headers) => headers,
                Err(err) => return failed(err.to_string()),
            },
            None => delivery.headers.clone(),
        };
        // The scheme and address literals (the client's resolver checks
        // names, at the connection).
        let url = match self.policy.parse_target(&delivery.url) {
            Ok(url) => url,
            Err(refusal) => return failed(format!("refused: {refusal}")),
        };
        let id = delivery.message.to_string();
        let timestamp = Utc::now().timestamp();
        let body = signature::body(
            &delivery.event_type,
            delivery.message_created_at,
            &delivery.payload,
        );
        let mut signed = signature::sign(secret.bytes(), &id, timestamp, &body);
        // During a rotation's overlap, a second signature with the previous
        // secret (Standard Webhooks: space-separated, any one may match).
        if let Some(sealed) = &delivery.previous_secret_sealed {
            match self.key.open(delivery.tenant, delivery.endpoint, sealed) {
                Ok(previous) => {
                    signed.push(' ');
                    signed.push_str(&signature::sign(previous.bytes(), &id, timestamp, &body));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "previous secret does not open; signing with the current one only")
                }
            }
        }
        let mut request = self.client.post(url);
        // The endpoint's own first, so none can stand in for the signed
        // headers (the application refuses those names anyway).
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let request = request
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signed)
            .body(body);
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(err) => {
                let refused = refusal_of(&err).map(|refusal| format!("refused: {refusal}"));
                let error = match refused {
                    Some(refused) => refused,
                    None if err.is_timeout() => {
                        format!("no answer within {}s", self.settings.request_timeout_secs)
                    }
                    // Without the URL: its query may carry the
                    // receiver's secret, and this text is stored and logged.
                    None => format!("request failed: {}", error_chain(&err.without_url())),
                };
                return failed(error);
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| schedule::parse_retry_after(v, Utc::now()));
        let mut read = Vec::new();
        let mut error = None;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.settings.max_response_bytes.saturating_sub(read.len());
                    read.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if read.len() >= self.settings.max_response_bytes {
                        // The rest is not read: the connection is dropped.
                        break;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    error = Some(format!(
                        "reading the answer: {}",
                        error_chain(&err.without_url())
                    ));
                    break;
                }
            }
        }
        Sent {
            attempt: Attempt {
                started_at,
                duration_ms: millis(start.elapsed()),
                status: Some(i32::from(status.as_u16())),
                response_excerpt: excerpt(&read),
                error,
            },
            retry_after,
            gone: status == reqwest::StatusCode::GONE,
        }
    }
}

/// What follows an attempt: delivered on a 2xx, given up on a 410 or when
/// the schedule is exhausted, else retried (after `Retry-After` if the
/// receiver asked for longer).
fn next_of(delivery: &ClaimedDelivery, sent: &Sent) -> Next {
    if sent.attempt.status.is_some_and(|s| (200..300).contains(&s)) {
        Next::Delivered
    } else if sent.gone {
        Next::Failed
    } else {
        match schedule::next_delay(delivery.attempt, sent.retry_after) {
            Some(delay) => Next::RetryAt(
                Utc::now() + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX),
            ),
            None => Next::Failed,
        }
    }
}

/// Disables the delivery's endpoint, unless it is disabled already, and
/// tells of it as a fact like any other: the tenant's other endpoints
/// hear of it. `reason` is a code (`gone`, `failing`), `detail` a sentence
/// (the endpoint's `disabled_reason`).
async fn disable(
    tx: &mut slaproof_store::TenantTx,
    delivery: &ClaimedDelivery,
    reason: &str,
    detail: &str,
    failing_since: Option<chrono::DateTime<Utc>>,
) -> Result<(), WebhookError> {
    let Some(endpoint) = webhooks::disable_if_enabled(tx, delivery.endpoint, detail).await? else {
        return Ok(());
    };
    let mut fact = serde_json::json!({
        "endpoint": endpoint.id.to_string(),
        "url": endpoint.url,
        "reason": reason,
        "detail": detail,
        "message": delivery.message.to_string(),
        "at": Utc::now(),
    });
    if let Some(since) = failing_since {
        fact["failing_since"] = serde_json::json!(since);
    }
    outbox::enqueue(tx, "endpoint.disabled", &fact).await?;
    tracing::warn!(reason, detail, "webhook endpoint disabled");
    Ok(())
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// At most [`EXCERPT_BYTES`] of the answer as text, cut at a character.
fn excerpt(read: &[u8]) -> Option<String> {
    if read.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&read[..read.len().min(EXCERPT_BYTES)]);
    let mut end = text.len().min(EXCERPT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(text[..end].to_owned())
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Runs the worker ([`Deliverer::serve`]) until `shutdown`.
pub async fn run(
    db: Database,
    settings: Settings,
    key: WebhookKey,
    policy: OutboundPolicy,
    worker: String,
    shutdown: CancellationToken,
) {
    let deliverer = match Deliverer::new(db, settings, key, policy, worker) {
        Ok(deliverer) => deliverer,
        Err(err) => {
            tracing::error!(error = %err, "webhook worker cannot start");
            return;
        }
    };
    deliverer.serve(&shutdown).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_keep_a_kibibyte_cut_at_a_character() {
        assert_eq!(excerpt(b""), None);
        assert_eq!(excerpt(b"ok").as_deref(), Some("ok"));
        let long = "é".repeat(1000);
        let cut = excerpt(long.as_bytes()).unwrap();
        assert!(cut.len() <= EXCERPT_BYTES && cut.chars().all(|c| c == 'é'));
    }
}
