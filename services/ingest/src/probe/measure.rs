//! One run of a probe: the HTTP exchange, timed, and the parsing of a
//! completion's server-sent event stream.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use slaproof_http::outbound::{OutboundPolicy, refusal_of};
use slaproof_store::probes::{ProbeDefinition, ProbeKind, ProbeOutcome};

use super::target::{TargetRefused, check_literal};

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
    let url = match check_literal(policy, &definition.url) {
        Ok(url) => url,
        Err(refused) => {
            measured.error_class = Some(refused.class);
            measured.error = Some(format!("url: {}", refused.text));
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

/// The error class of a failed exchange, and what happened.
fn classify(err: &reqwest::Error) -> (&'static str, String) {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(refused) = e.downcast_ref::<TargetRefused>() {
            return (refused.class, refused.text.clone());
        }
        current = e.source();
    }
    // The policy's own resolver is replaced, but should its refusal come
    // through, it is told without the address too.
    if let Some(refusal) = refusal_of(err) {
        let refused = TargetRefused::of(None, refusal);
        return (refused.class, refused.text);
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
pub(super) mod tests {
    use std::sync::Arc;

    use super::super::target::ProbeResolver;
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

    pub(in crate::probe) fn definition() -> ProbeDefinition {
        ProbeDefinition {
            name: "p".into(),
            service: "chat".into(),
            customer: None,
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
        }
    }

    #[test]
    fn the_completion_body_always_streams() {
        let mut definition = definition();
        let body = completion_body(&definition);
        assert_eq!(body["stream"], true);
        assert_eq!(body["model"], "llama-3");
        definition.body = Some(serde_json::json!({"model": "x", "stream": false, "messages": []}));
        assert_eq!(completion_body(&definition)["stream"], true);
    }

    #[tokio::test]
    async fn a_refused_target_is_recorded_without_its_addresses() {
        let strict = OutboundPolicy::strict();
        let client = strict
            .client_builder()
            .dns_resolver(Arc::new(ProbeResolver {
                policy: strict.clone(),
            }))
            .build()
            .unwrap();
        let mut definition = definition();
        definition.kind = ProbeKind::Http;
        definition.method = "GET".into();
        definition.timeout_ms = 2000;
        for (url, host) in [
            (
                "http://localhost:9/",
                "localhost is or resolves to a loopback",
            ),
            (
                "http://[64:ff9b:1::a00:1]:9/",
                "64:ff9b:1::a00:1 is or resolves to a NAT64 local-use",
            ),
            (
                "http://127.0.0.1:9/",
                "127.0.0.1 is or resolves to a loopback",
            ),
        ] {
            definition.url = url.into();
            let measured = measure(&client, &strict, &definition, 1024).await;
            assert_eq!(measured.outcome, ProbeOutcome::Error, "{url}");
            assert_eq!(measured.error_class, Some("refused_target"), "{url}");
            let error = measured.error.unwrap();
            assert!(error.contains(host), "{url}: {error}");
            if url.contains("localhost") {
                for address in ["127.0.0.1", "::1"] {
                    assert!(!error.contains(address), "{url}: {error}");
                }
            }
        }
    }
}
