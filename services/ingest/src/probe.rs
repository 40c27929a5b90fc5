//! Synthetic probes: slaproof measures a provider's endpoint itself, on each
//! probe's schedule, and stores every run as an event with source `probe`.
//!
//! A runner polls for due probes and claims them through the database
//! (`FOR UPDATE SKIP LOCKED`, `next_run_at` moved on in the same
//! statement), so any number of replicas run each slot exactly once. Every
//! connection goes through the operator's [`OutboundPolicy`], checked again
//! at the resolution the connection uses. A run's event id is derived from
//! the probe and its slot, so a retried write never stores it twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use slaproof_domain::ids::{EventId, ProbeId};
use slaproof_http::outbound::{OutboundPolicy, Refusal, refusal_of};
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_store::probes::{
    self, ClaimedProbe, ProbeDefinition, ProbeKind, ProbeOutcome, ProbeResult,
};
use slaproof_store::{Database, StoreError};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::writer::{EventWriter, WriteError};

/// The `User-Agent` of every probe request, so providers can tell probe
/// traffic from their customers'.
pub const USER_AGENT: &str = concat!("slaproof-probe/", env!("CARGO_PKG_VERSION"));

/// Retries of a probe event's write after a passing database failure.
const WRITE_RETRIES: u32 = 3;

/// How the probe runner behaves; `slaproof`'s `[probes]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// How often a runner asks for due probes, in milliseconds: a run
    /// starts at most this late after its slot.
    pub poll_interval_ms: u64,
    /// Probes one runner measures at once.
    pub concurrency: usize,
    /// Bytes of an answer read at most; an answer is timed to its end or
    /// to this many bytes, whichever comes first.
    pub max_response_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 1000,
            concurrency: 16,
            max_response_bytes: 1024 * 1024,
        }
    }
}

pub use slaproof_domain::settings::SettingsError;

impl Settings {
    /// Checks the rules.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(50..=60_000).contains(&self.poll_interval_ms) {
            return Err(SettingsError {
                key: "probes.poll_interval_ms",
                rule: format!(
                    "must be between 50 and 60000, got {}",
                    self.poll_interval_ms
                ),
            });
        }
        if !(1..=1024).contains(&self.concurrency) {
            return Err(SettingsError {
                key: "probes.concurrency",
                rule: format!("must be between 1 and 1024, got {}", self.concurrency),
            });
        }
        if !(1024..=64 * 1024 * 1024).contains(&self.max_response_bytes) {
            return Err(SettingsError {
                key: "probes.max_response_bytes",
                rule: format!(
                    "must be between 1024 and 64 MiB, got {}",
                    self.max_response_bytes
                ),
            });
        }
        Ok(())
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms)
    }
}

/// Why a run could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("reading the probe: {0}")]
    Store(#[from] StoreError),
    #[error("storing the probe's event: {0}")]
    Write(#[from] WriteError),
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    /// When the request started (to the microsecond, as stored).
    pub started_at: DateTime<Utc>,
    pub outcome: ProbeOutcome,
    /// The answer's status, when there was one.
    pub status: Option<i32>,
    /// `status_mismatch`, `no_tokens`, `stream_error`, `protocol`,
    /// `timeout`, `connect`, `dns`, `refused_target`, `too_large` or
    /// `request`; `None` for a good run.
    pub error_class: Option<&'static str>,
    /// What went wrong, for people (the probe's last result).
    pub error: Option<String>,
    /// From the start to the answer's end, or to the failure.
    pub latency_us: i64,
    pub ttft_us: Option<i64>,
    pub tpot_us: Option<i64>,
    pub input_tokens: Option<i32>,
    pub output_tokens: Option<i32>,
}

/// Runs due probes. Cheap to share: one HTTP client (its connection pool)
/// and one event writer for every probe.
#[derive(Debug)]
pub struct ProbeRunner {
    db: Database,
    settings: Settings,
    policy: OutboundPolicy,
    client: reqwest::Client,
    writer: EventWriter,
}

impl ProbeRunner {
    pub fn new(
        db: Database,
        settings: Settings,
        policy: OutboundPolicy,
    ) -> Result<Self, ProbeError> {
        let client = policy
            .client_builder()
            .user_agent(USER_AGENT)
            // Every run opens its own connection (DNS, TCP, TLS included):
            // runs are alike whatever the interval, and every run's
            // addresses pass the policy's resolver again.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(ProbeError::Client)?;
        Ok(Self {
            writer: EventWriter::new(db.clone()),
            db,
            settings,
            policy,
            client,
        })
    }

    /// Polls for due probes and runs them until `shutdown`; runs already
    /// started finish (each is bounded by its timeout).
    pub async fn run(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        let permits = Arc::new(Semaphore::new(self.settings.concurrency));
        let mut running = JoinSet::new();
        loop {
            while running.try_join_next().is_some() {}
            let free = permits.available_permits();
            if free > 0 {
                match probes::claim_due(&self.db, i32::try_from(free).unwrap_or(i32::MAX)).await {
                    Ok(claimed) => {
                        for probe in claimed {
                            let Ok(permit) = permits.clone().acquire_owned().await else {
                                break;
                            };
                            let runner = self.clone();
                            running.spawn(async move {
                                runner.run_claimed(probe).await;
                                drop(permit);
                            });
                        }
                    }
                    Err(err) => tracing::error!(error = %err, "could not claim due probes"),
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(self.settings.poll_interval()) => {}
            }
        }
        while running.join_next().await.is_some() {}
    }

    /// Claims and runs every due probe, one batch after another, and
    /// returns how many ran: for tools and tests that want a round now.
    pub async fn run_due(self: &Arc<Self>) -> Result<usize, ProbeError> {
        let mut ran = 0;
        loop {
            let limit = i32::try_from(self.settings.concurrency).unwrap_or(i32::MAX);
            let claimed = probes::claim_due(&self.db, limit).await?;
            if claimed.is_empty() {
                return Ok(ran);
            }
            let mut batch = JoinSet::new();
            for probe in claimed {
                let runner = self.clone();
                batch.spawn(async move { runner.run_claimed(probe).await });
            }
            while batch.join_next().await.is_some() {
                ran += 1;
            }
        }
    }

    /// Runs one claimed slot and records it; failures are logged, since the
    /// slot is gone either way (the next one comes at the probe's cadence).
    #[tracing::instrument(skip(self), fields(tenant = %probe.tenant, probe = %probe.id))]
    async fn run_claimed(&self, probe: ClaimedProbe) {
        if let Err(err) = self.try_run_claimed(probe).await {
            tracing::error!(error = %err, "probe run not recorded");
        }
    }

    async fn try_run_claimed(&self, claimed: ClaimedProbe) -> Result<(), ProbeError> {
        let mut tx = self.db.tenant_tx(claimed.tenant).await?;
        let stored = match probes::find(&mut tx, claimed.id).await {
            Ok(stored) => stored,
            // Deleted since it was claimed: nothing to measure.
            Err(StoreError::NotFound { .. }) => return Ok(()),
            Err(err) => return Err(err.into()),
        };
        tx.commit().await?;
        // Switched off since it was claimed: its owner wants no more runs.
        if !stored.definition.enabled {
            return Ok(());
        }
        let measured = measure(
            &self.client,
            &self.policy,
            &stored.definition,
            self.settings.max_response_bytes,
        )
        .await;
        tracing::debug!(outcome = measured.outcome.as_str(), status = ?measured.status, latency_us = measured.latency_us, "probe ran");
        crate::metrics::probe_run(measured.outcome.as_str());
        let event = event_of(
            claimed.id,
            claimed.scheduled_at,
            &stored.definition,
            &measured,
        );
        // The measurement cannot be repeated, so a passing database failure
        // is retried; the slot's event id makes a retry that did commit a
        // duplicate, never a second event.
        let mut attempt = 0;
        loop {
            match self
                .writer
                .write(claimed.tenant, std::slice::from_ref(&event))
                .await
            {
                Ok(_) => break,
                Err(err) if err.is_transient() && attempt < WRITE_RETRIES => {
                    attempt += 1;
                    tracing::warn!(error = %err, attempt, "probe event not stored yet; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * (1 << attempt))).await;
                }
                Err(err) => return Err(err.into()),
            }
        }
        let mut tx = self.db.tenant_tx(claimed.tenant).await?;
        probes::record_result(
            &mut tx,
            claimed.id,
            &ProbeResult {
                at: measured.started_at,
                outcome: measured.outcome,
                status: measured.status,
                // The detail may quote the target (a stream's error
                // message): bounded, so a target cannot fill the row.
                error: measured.error_class.map(|class| match &measured.error {
                    Some(detail) => {
                        format!("{class}: {}", detail.chars().take(500).collect::<String>())
                    }
                    None => class.to_owned(),
                }),
                latency_us: Some(measured.latency_us),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// The id of a probe's run in one slot: the same on every retry of the
/// write, different for every slot.
pub fn event_id(probe: ProbeId, scheduled_at: DateTime<Utc>) -> EventId {
    let mut hash = Sha256::new();
    hash.update(b"slaproof-probe-run\0");
    hash.update(probe.uuid().as_bytes());
    hash.update(scheduled_at.timestamp_micros().to_be_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    EventId::from_uuid(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// The event a run becomes.
pub fn event_of(
    probe: ProbeId,
    scheduled_at: DateTime<Utc>,
    definition: &ProbeDefinition,
    measured: &Measurement,
) -> StoredEvent {
    StoredEvent {
        id: event_id(probe, scheduled_at),
        occurred_at: measured.started_at,
        source: EventSource::Probe,
        service: definition.service.clone(),
        model: definition.model.clone(),
        // The probe and its slot, so an operator can find the run.
        request_id: Some(format!("{probe}@{}", scheduled_at.timestamp())),
        status: measured.status,
        error_class: measured.error_class.map(str::to_owned),
        latency_us: Some(measured.latency_us),
        ttft_us: measured.ttft_us,
        tpot_us: measured.tpot_us,
        input_tokens: measured.input_tokens,
        output_tokens: measured.output_tokens,
        streaming: Some(definition.kind == ProbeKind::StreamingCompletion),
        attributes: serde_json::json!({}),
    }
}

/// The request body of a streaming completion: the probe's own (with
/// `stream: true` forced), or a minimal chat completion for its model.
pub fn completion_body(definition: &ProbeDefinition) -> serde_json::Value {
    let mut body = definition.body.clone().unwrap_or_else(|| {
        serde_json::json!({
            "model": definition.model.clone().unwrap_or_default(),
            "messages": [{"role": "user", "content": "Reply with the single word: pong"}],
            "max_tokens": 16,
            "stream_options": {"include_usage": true},
        })
    });
    if let Some(object) = body.as_object_mut() {
        object.insert("stream".into(), serde_json::Value::Bool(true));
    }
    body
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Measures one run of a probe. Never fails: every way a run can go wrong
/// is a measurement too.
pub async fn measure(
    client: &reqwest::Client,
    policy: &OutboundPolicy,
    definition: &ProbeDefinition,
    max_response_bytes: usize,
) -> Measurement {
    let now = Utc::now();
    let started_at = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
    let start = Instant::now();
    let timeout = Duration::from_millis(u64::try_from(definition.timeout_ms).unwrap_or(1000));
    let mut measured = Measurement {
        started_at,
        outcome: ProbeOutcome::Error,
        status: None,
        error_class: None,
        error: None,
        latency_us: 0,
        ttft_us: None,
        tpot_us: None,
        input_tokens: None,
        output_tokens: None,
    };
    // The literal check (the client's resolver checks names).
    let url = match policy.parse_target(&definition.url) {
        Ok(url) => url,
        Err(refusal) => {
            measured.error_class = Some(refusal_class(&refusal));
            measured.error = Some(format!("url {refusal}"));
            return measured;
        }
    };
    let request = match build_request(client, definition, url, timeout) {
        Ok(request) => request,
        Err(reason) => {
            measured.error_class = Some("request");
            measured.error = Some(reason);
            return measured;
        }
    };
    let run = exchange(
        request,
        definition,
        start,
        &mut measured,
        max_response_bytes,
    );
    // Also bounds the body, which the client's own timeout covers too; the
    // outer bound makes the class `timeout` whatever stage it hit.
    let finished = tokio::time::timeout(timeout, run).await;
    measured.latency_us = micros(start.elapsed());
    match finished {
        Err(_) => {
            measured.outcome = ProbeOutcome::Error;
            measured.error_class = Some("timeout");
            measured.error = Some(format!("no complete answer within {timeout:?}"));
        }
        Ok(Err(err)) => {
            measured.outcome = ProbeOutcome::Error;
            let (class, detail) = classify(&err);
            measured.error_class = Some(class);
            measured.error = Some(detail);
        }
        Ok(Ok(())) => {}
    }
    measured
}

fn build_request(
    client: &reqwest::Client,
    definition: &ProbeDefinition,
    url: url::Url,
    timeout: Duration,
) -> Result<reqwest::RequestBuilder, String> {
    let method = reqwest::Method::from_bytes(definition.method.as_bytes())
        .map_err(|_| format!("method {} is not an HTTP method", definition.method))?;
    let mut request = client.request(method, url).timeout(timeout);
    for (name, value) in &definition.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    match definition.kind {
        ProbeKind::Http => {
            if let Some(body) = &definition.body {
                request = request.json(body);
            }
        }
        ProbeKind::StreamingCompletion => {
            request = request
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(&completion_body(definition));
        }
    }
    Ok(request)
}

/// Sends the request and reads the answer into `measured`.
async fn exchange(
    request: reqwest::RequestBuilder,
    definition: &ProbeDefinition,
    start: Instant,
    measured: &mut Measurement,
    max_response_bytes: usize,
) -> Result<(), reqwest::Error> {
    let mut response = request.send().await?;
    let status = response.status().as_u16();
    measured.status = Some(i32::from(status));
    let expected = i32::from(status) == definition.expected_status;
    if definition.kind == ProbeKind::StreamingCompletion && expected {
        return read_stream(response, start, measured, max_response_bytes).await;
    }
    // Timed to the end of the answer, as a client would wait for it.
    let mut read = 0usize;
    while let Some(chunk) = response.chunk().await? {
        read += chunk.len();
        if read >= max_response_bytes {
            break;
        }
    }
    if expected {
        measured.outcome = ProbeOutcome::Good;
    } else {
        measured.outcome = ProbeOutcome::Bad;
        measured.error_class = Some("status_mismatch");
        measured.error = Some(format!(
            "answered {status}, expected {}",
            definition.expected_status
        ));
    }
    Ok(())
}

/// Reads a server-sent event stream of chat-completion chunks: the first
/// chunk with content is the first token; the final chunk's `usage` (when
/// sent) counts the output tokens, else each content chunk counts one.
async fn read_stream(
    mut response: reqwest::Response,
    start: Instant,
    measured: &mut Measurement,
    max_response_bytes: usize,
) -> Result<(), reqwest::Error> {
    let mut stream = SseReader::default();
    let mut first_token: Option<Duration> = None;
    let mut read = 0usize;
    let mut failure: Option<(&'static str, String)> = None;
    'read: while let Some(chunk) = response.chunk().await? {
        read += chunk.len();
        for data in stream.push(&chunk) {
            match parse_chunk(&data) {
                Chunk::Done => break 'read,
                Chunk::Data { content, usage } => {
                    if content && first_token.is_none() {
                        first_token = Some(start.elapsed());
                    }
                    if content {
                        stream.content_chunks += 1;
                    }
                    if let Some((input, output)) = usage {
                        measured.input_tokens = input.or(measured.input_tokens);
                        measured.output_tokens = output.or(measured.output_tokens);
                    }
                }
                Chunk::Error(message) => {
                    failure = Some(("stream_error", message));
                    break 'read;
                }
                Chunk::Invalid(reason) => {
                    failure = Some(("protocol", reason));
                    break 'read;
                }
            }
        }
        if read >= max_response_bytes {
            failure = Some((
                "too_large",
                format!("the stream passed {max_response_bytes} bytes"),
            ));
            break;
        }
    }
    let end = start.elapsed();
    measured.ttft_us = first_token.map(micros);
    if measured.output_tokens.is_none() && stream.content_chunks > 0 {
        measured.output_tokens = Some(i32::try_from(stream.content_chunks).unwrap_or(i32::MAX));
    }
    if let (Some(first), Some(tokens)) = (first_token, measured.output_tokens)
        && tokens > 1
    {
        // The tokens after the first, spread over the time after it.
        let after = end.saturating_sub(first);
        measured.tpot_us = Some(micros(after) / i64::from(tokens - 1));
    }
    match failure {
        Some((class, detail)) => {
            measured.outcome = ProbeOutcome::Bad;
            measured.error_class = Some(class);
            measured.error = Some(detail);
        }
        None if first_token.is_none() => {
            measured.outcome = ProbeOutcome::Bad;
            measured.error_class = Some("no_tokens");
            measured.error = Some("the stream ended without a token".into());
        }
        None => measured.outcome = ProbeOutcome::Good,
    }
    Ok(())
}

/// Splits a byte stream into the `data` of server-sent events, across
/// chunk boundaries (a line may arrive in pieces).
#[derive(Debug, Default)]
struct SseReader {
    line: Vec<u8>,
    data: Option<String>,
    content_chunks: u64,
}

impl SseReader {
    /// Feeds bytes; returns the data of every event they completed.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte != b'\n' {
                self.line.push(byte);
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.is_empty() {
                // A blank line ends an event.
                if let Some(data) = self.data.take() {
                    events.push(data);
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            if let Some(value) = text.strip_prefix("data:") {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
            // Comments (`:`), `event:`, `id:` and `retry:` lines carry no
            // tokens.
        }
        events
    }
}

/// One event of a completion stream, as far as timing goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Chunk {
    Done,
    /// Whether it carried content, and the usage (prompt, completion
    /// tokens) when it had one.
    Data {
        content: bool,
        usage: Option<(Option<i32>, Option<i32>)>,
    },
    Error(String),
    Invalid(String),
}

fn parse_chunk(data: &str) -> Chunk {
    let data = data.trim();
    if data == "[DONE]" {
        return Chunk::Done;
    }
    let value: serde_json::Value = match serde_json::from_str(data) {
        Ok(value) => value,
        Err(err) => return Chunk::Invalid(format!("a stream event is not JSON: {err}")),
    };
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string());
        return Chunk::Error(message);
    }
    let content = value
        .get("choices")
        .and_then(|c| c.as_array())
        .is_some_and(|choices| {
            choices.iter().any(|choice| {
                let non_empty = |v: Option<&serde_json::Value>| {
                    v.and_then(|t| t.as_str()).is_some_and(|t| !t.is_empty())
                };
                let delta = choice.get("delta");
                non_empty(delta.and_then(|d| d.get("content")))
                    || non_empty(delta.and_then(|d| d.get("reasoning_content")))
                    || non_empty(choice.get("text"))
            })
        });
    let tokens = |key: &str, usage: &serde_json::Value| {
        usage
            .get(key)
            .and_then(|n| n.as_u64())
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX))
    };
    let usage = value.get("usage").filter(|u| u.is_object()).map(|usage| {
        (
            tokens("prompt_tokens", usage),
            tokens("completion_tokens", usage),
        )
    });
    Chunk::Data { content, usage }
}

fn refusal_class(refusal: &Refusal) -> &'static str {
    if refusal.is_dns() {
        "dns"
    } else {
        "refused_target"
    }
}

/// The error class of a failed exchange, and what happened.
fn classify(err: &reqwest::Error) -> (&'static str, String) {
    if let Some(refusal) = refusal_of(err) {
        return (refusal_class(refusal), refusal.to_string());
    }
    let class = if err.is_timeout() {
        "timeout"
    } else if err.is_connect() {
        "connect"
    } else if err.is_body() || err.is_decode() {
        "protocol"
    } else {
        "request"
    };
    // The innermost cause says most ("connection refused").
    let mut cause: &dyn std::error::Error = err;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    (class, cause.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_found_across_chunk_boundaries() {
        let mut reader = SseReader::default();
        assert!(reader.push(b": keep-alive\n\nda").is_empty());
        assert!(reader.push(b"ta: {\"a\":").is_empty());
        assert_eq!(
            reader.push(b"1}\r\n\r\ndata: [DONE]\n\n"),
            ["{\"a\":1}", "[DONE]"]
        );
    }

    #[test]
    fn chunks_tell_content_usage_errors_and_the_end() {
        assert_eq!(
            parse_chunk(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#),
            Chunk::Data {
                content: false,
                usage: None
            }
        );
        assert_eq!(
            parse_chunk(r#"{"choices":[{"delta":{"content":"po"}}],"usage":null}"#),
            Chunk::Data {
                content: true,
                usage: None
            }
        );
        assert_eq!(
            parse_chunk(
                r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#
            ),
            Chunk::Data {
                content: false,
                usage: Some((Some(9), Some(3)))
            }
        );
        assert_eq!(parse_chunk("[DONE]"), Chunk::Done);
        assert_eq!(
            parse_chunk(r#"{"error":{"message":"overloaded"}}"#),
            Chunk::Error("overloaded".into())
        );
        assert!(matches!(parse_chunk("{nope"), Chunk::Invalid(_)));
    }

    #[test]
    fn a_slot_has_one_event_id() {
        let probe = ProbeId::new();
        let at = Utc::now();
        assert_eq!(event_id(probe, at), event_id(probe, at));
        assert_ne!(
            event_id(probe, at),
            event_id(probe, at + chrono::Duration::seconds(10))
        );
        assert_ne!(event_id(probe, at), event_id(ProbeId::new(), at));
    }

    #[test]
    fn the_completion_body_always_streams() {
        let mut definition = ProbeDefinition {
            name: "p".into(),
            service: "chat".into(),
            model: Some("llama-3".into()),
            kind: ProbeKind::StreamingCompletion,
            method: "POST".into(),
            url: "https://api.example.com/v1/chat/completions".into(),
            headers: Default::default(),
            body: None,
            expected_status: 200,
            interval_secs: 60,
            timeout_ms: 10_000,
            enabled: true,
        };
        let body = completion_body(&definition);
        assert_eq!(body["stream"], true);
        assert_eq!(body["model"], "llama-3");
        definition.body = Some(serde_json::json!({"model": "x", "stream": false, "messages": []}));
        assert_eq!(completion_body(&definition)["stream"], true);
    }
}
