#![doc = include_str!("../README.md")]
//! The ingest service: providers' telemetry in, durably, fast.
//!
//! `POST /v1/events` takes a batch of events as a JSON array or NDJSON,
//! optionally gzip-compressed, authenticated by a tenant's ingest key. Each
//! event is validated on its own; valid events are written with `COPY` in one
//! transaction per batch, and the answer is sent after the commit. Retries
//! are idempotent: an event's id comes from the sender, or from its request
//! id, or from the batch's `Idempotency-Key` and its position, and an event
//! whose `(occurred_at, id)` is stored already is skipped. A bounded gate
//! answers 429 with `Retry-After` when the writers fall behind.
//!
//! `POST /v1/gauges` takes values delivered later by callback (a quality
//! score for a request id) the same way; see [`gauges`].
//!
//! The event schema and the answers are documented in `README.md`.

mod auth;
mod body;
pub mod event;
mod gate;
mod gauges;
pub mod loadgen;
mod metrics;
mod native;
mod otlp;
mod otlp_metrics;
pub mod probe;
mod problem;
pub mod writer;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::http::HeaderMap;
use axum::routing::post;
use chrono::Utc;
use slaproof_domain::ids::TenantId;
use slaproof_store::Database;
use slaproof_store::events::StoredEvent;

use crate::problem::IngestProblem;

pub use event::{EventError, EventIn};
pub use native::EventsOut;
pub use writer::{EventWriter, Written};

/// How the ingest service behaves; `slaproof`'s `[ingest]` section.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Largest request body, as sent (compressed or not).
    pub max_body_bytes: usize,
    /// Largest body once decompressed.
    pub max_decoded_bytes: usize,
    /// How far in the future an event's time may be (clock skew).
    pub max_future_secs: u64,
    /// Events older than this many days are refused (the events retention).
    pub retention_days: u32,
    /// Batches written at once (each holds a database connection).
    pub writers: usize,
    /// Requests admitted at once, writing or waiting; more get 429.
    pub max_in_flight: usize,
    /// The `Retry-After` sent with 429 and 503, in seconds.
    pub retry_after_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_body_bytes: 8 * 1024 * 1024,
            max_decoded_bytes: 64 * 1024 * 1024,
            max_future_secs: 300,
            retention_days: 400,
            writers: 4,
            max_in_flight: 16,
            retry_after_secs: 1,
        }
    }
}

/// The ingest service's shared state.
#[derive(Debug)]
pub struct Ingest {
    db: Database,
    settings: Settings,
    gate: gate::Gate,
    writer: EventWriter,
}

impl Ingest {
    pub fn new(db: Database, settings: Settings) -> Self {
        Self {
            gate: gate::Gate::new(
                settings.max_in_flight,
                settings.writers,
                settings.retry_after_secs,
            ),
            writer: EventWriter::new(db.clone()),
            db,
            settings,
        }
    }

    /// Admits a request (429 when the gate is full), authenticates it
    /// (401) and reads its body within the limit (413). The admission is
    /// held until the answer is sent.
    pub(crate) async fn admit(&self, request: Request) -> Result<Admitted, IngestProblem> {
        let admission = self
            .gate
            .admit()
            .inspect_err(|_| metrics::batch_refused(429))?;
        let who =
            auth::authenticate(&self.db, request.headers(), self.gate.retry_after_secs()).await?;
        tracing::Span::current().record("tenant", tracing::field::display(who.tenant));
        let headers = request.headers().clone();
        let limit = self.settings.max_body_bytes;
        let body =
            Bytes::from_request(request, &())
                .await
                .map_err(|rejection| match rejection {
                    BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_)) => {
                        IngestProblem::too_large(limit)
                    }
                    other => {
                        IngestProblem::bad_request(format!("the body cannot be read: {other}"))
                    }
                })?;
        Ok(Admitted {
            admission,
            who,
            headers,
            body,
        })
    }

    /// Writes valid events for an admitted request, waiting for a writer.
    /// A transient failure is a 503 the client retries; 2xx may follow only
    /// an `Ok`.
    pub(crate) async fn store(
        &self,
        admission: &gate::Admission,
        tenant: TenantId,
        events: &[StoredEvent],
    ) -> Result<Written, IngestProblem> {
        let started = std::time::Instant::now();
        let written = {
            let _writer = self.gate.writer(admission).await?;
            self.writer.write(tenant, events).await
        };
        metrics::write_duration(started.elapsed());
        if written.is_ok() {
            metrics::accepted(events.len());
        }
        written.map_err(|err| self.not_stored("events", &err))
    }

    /// The answer to a batch whose write failed, for every door alike: a
    /// passing database failure is a 503 the client retries (counted as a
    /// refused batch), anything else a 500.
    pub(crate) fn not_stored(&self, what: &'static str, err: &writer::WriteError) -> IngestProblem {
        if err.is_transient() {
            metrics::batch_refused(503);
            tracing::warn!(error = %err, what, "batch not stored; the client will retry");
            IngestProblem::unavailable(self.gate.retry_after_secs())
        } else {
            tracing::error!(error = %err, what, "batch not stored");
            IngestProblem::internal()
        }
    }

    /// The decompressed body, off the I/O threads with `work` after it.
    pub(crate) async fn off_thread<T: Send + 'static>(
        &self,
        headers: HeaderMap,
        body: Bytes,
        work: impl FnOnce(&[u8], event::TimeBounds) -> Result<T, IngestProblem> + Send + 'static,
    ) -> Result<T, IngestProblem> {
        let bounds = self.time_bounds();
        let max_decoded = self.settings.max_decoded_bytes;
        tokio::task::spawn_blocking(move || {
            let decoded = body::decode(&headers, &body, max_decoded)?;
            work(&decoded, bounds)
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "checking a batch panicked");
            IngestProblem::internal()
        })?
    }

    /// The times accepted now.
    fn time_bounds(&self) -> event::TimeBounds {
        event::TimeBounds::at(
            Utc::now(),
            self.settings.retention_days,
            chrono::Duration::seconds(
                i64::try_from(self.settings.max_future_secs).unwrap_or(i64::MAX),
            ),
        )
    }
}

/// A request let in: who sent it and its body, as sent.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub admission: gate::Admission,
    pub who: auth::Authenticated,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The ingest routes.
pub fn router(db: Database, settings: Settings) -> Router {
    let limit = settings.max_body_bytes;
    let ingest = Arc::new(Ingest::new(db, settings));
    Router::new()
        .route("/v1/events", post(native::post_events))
        .route("/v1/traces", post(otlp::post_traces))
        .route("/v1/gauges", post(gauges::post_gauges))
        .route("/v1/metrics", post(otlp_metrics::post_metrics))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(ingest)
}
