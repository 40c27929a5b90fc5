#![doc = include_str!("../README.md")]
//! The ingest service: providers' telemetry in, durably, fast.
//!
//! `POST /v1/events` takes a batch of events as a JSON array or NDJSON,
//! optionally gzip-compressed, authenticated by a tenant's ingest key. Each
//! event is validated on its own; valid events are written with `COPY` in one
//! transaction per batch, and the answer is sent after the commit. Retries
//! are idempotent: an event's id comes from the sender, or from its request
//! id, or from the batch's `Idempotency-Key` and its position, and an event
//! whose `(occurred_at, id)` is stored already is skipped. A request is
//! authenticated first, then held to its key's rate limit, to its tenant's
//! share of a bounded gate (429 with `Retry-After` when the writers fall
//! behind), to a body read timeout (408) and to a memory budget shared by
//! all requests.
//!
//! `POST /v1/gauges` takes values delivered later by callback (a quality
//! score for a request id) the same way; see [`gauges`].
//!
//! The event schema and the answers are documented in `README.md`.

mod auth;
mod body;
mod budget;
pub mod event;
#[doc(hidden)]
pub mod fuzzing;
mod gate;
mod gauges;
pub mod loadgen;
mod metrics;
mod native;
mod otlp;
mod otlp_metrics;
mod otlp_size;
pub mod probe;
mod problem;
mod rate;
pub mod writer;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::http::{HeaderMap, header};
use axum::routing::post;
use chrono::Utc;
use slaproof_domain::ids::TenantId;
use slaproof_store::Database;
use slaproof_store::events::StoredEvent;

use crate::budget::{Budget, Charge, Transient};
use crate::problem::IngestProblem;

pub use event::{EventError, EventIn};
pub use native::EventsOut;
pub use problem::RefusalCount;
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
    /// Requests of one tenant admitted at once; more get 429. `None`: a
    /// quarter of `max_in_flight`, at least one.
    pub max_in_flight_per_tenant: Option<usize>,
    /// The `Retry-After` sent with 429 and 503, in seconds.
    pub retry_after_secs: u64,
    /// Memory all admitted requests may hold at once (bodies as sent and
    /// decompressed, what they decode into, the events they write); a
    /// request that would go past it gets 429, or 413 if it alone would.
    pub max_memory_bytes: usize,
    /// Seconds an admitted request's whole body has to arrive in; 408
    /// after that.
    pub body_timeout_secs: u64,
    /// Requests per second one ingest key may send (a token bucket); more
    /// get 429 with `Retry-After`. 0 turns the limit off.
    pub rate_limit_per_sec: f64,
    /// Requests one key may send at once above its rate (the bucket's size).
    pub rate_limit_burst: u32,
    /// Seconds what the store said of a key is remembered; a revoked key
    /// is refused within this time. 0 asks the store every time.
    pub key_cache_secs: u64,
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
            max_in_flight_per_tenant: None,
            retry_after_secs: 1,
            max_memory_bytes: 256 * 1024 * 1024,
            body_timeout_secs: 30,
            rate_limit_per_sec: 50.0,
            rate_limit_burst: 100,
            key_cache_secs: 30,
        }
    }
}

/// The ingest service's shared state.
#[derive(Debug)]
pub struct Ingest {
    db: Database,
    settings: Settings,
    keys: auth::Keys,
    rate: rate::RateLimiter,
    gate: gate::Gate,
    memory: Arc<Budget>,
    writer: EventWriter,
}

impl Ingest {
    pub fn new(db: Database, settings: Settings) -> Self {
        Self {
            keys: auth::Keys::new(Duration::from_secs(settings.key_cache_secs)),
            rate: rate::RateLimiter::new(settings.rate_limit_per_sec, settings.rate_limit_burst),
            gate: gate::Gate::new(
                settings.max_in_flight,
                settings
                    .max_in_flight_per_tenant
                    .unwrap_or_else(|| gate::Gate::default_share(settings.max_in_flight)),
                settings.writers,
                settings.retry_after_secs,
            ),
            memory: Budget::new(settings.max_memory_bytes, settings.retry_after_secs),
            writer: EventWriter::new(db.clone()),
            db,
            settings,
        }
    }

    /// Lets a request in, cheapest refusal first: authenticates it (401,
    /// before anything else, so bad keys take nothing from anyone), holds
    /// it to its key's rate limit (429) and to its tenant's share of the
    /// gate (429), then reads its body within the time (408), the size
    /// limit (413) and the memory budget (429). The admission and the
    /// memory are held until the answer is sent.
    pub(crate) async fn admit(&self, request: Request) -> Result<Admitted, IngestProblem> {
        let who = self
            .keys
            .authenticate(&self.db, request.headers(), self.gate.retry_after_secs())
            .await?;
        tracing::Span::current().record("tenant", tracing::field::display(who.tenant));
        if let Err(wait) = self.rate.check(who.key, Instant::now()) {
            metrics::batch_refused(429);
            return Err(IngestProblem::rate_limited(
                self.settings.rate_limit_per_sec,
                self.settings.rate_limit_burst,
                rate::retry_after_secs(wait),
            ));
        }
        let admission = self
            .gate
            .admit(who.tenant)
            .inspect_err(|_| metrics::batch_refused(429))?;
        let charge = Charge::new(&self.memory);
        let mut held = Transient::new(&charge);
        let limit = self.settings.max_body_bytes;
        // The body as sent, charged before it is read: its announced
        // length, else the most it may be (given back once it is read).
        let announced = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(limit, |n| n.min(limit));
        held.take_now(announced).inspect_err(count_429)?;
        let headers = request.headers().clone();
        let timeout = Duration::from_secs(self.settings.body_timeout_secs);
        let body = tokio::time::timeout(timeout, Bytes::from_request(request, &()))
            .await
            .map_err(|_| IngestProblem::body_timeout(self.settings.body_timeout_secs))?
            .map_err(|rejection| match rejection {
                BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_)) => {
                    IngestProblem::too_large(limit)
                }
                other => IngestProblem::bad_request(format!("the body cannot be read: {other}")),
            })?;
        held.give_back(announced.saturating_sub(body.len()));
        Ok(Admitted {
            admission,
            who,
            headers,
            body,
            charge,
            held,
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
    /// The body, its decompressed copy and what `work` holds in
    /// `memory.held` are given back to the budget when `work` is done;
    /// what it keeps (`memory.kept`) stays charged until the answer.
    /// A JSON body is tamed first (see [`body::tame_json`]).
    pub(crate) async fn off_thread<T: Send + 'static>(
        &self,
        admitted: Body,
        syntax: body::Syntax,
        work: impl FnOnce(&[u8], event::TimeBounds, &mut Memory) -> Result<T, IngestProblem>
        + Send
        + 'static,
    ) -> Result<T, IngestProblem> {
        let bounds = self.time_bounds();
        let max_decoded = self.settings.max_decoded_bytes;
        let Body {
            headers,
            body,
            charge,
            held,
        } = admitted;
        tokio::task::spawn_blocking(move || {
            let mut memory = Memory { kept: charge, held };
            let mut decoded = body::decode(&headers, &body, max_decoded, &mut memory.held)?;
            if syntax != body::Syntax::Binary {
                body::tame_json(
                    &mut decoded,
                    syntax == body::Syntax::Ndjson,
                    &mut memory.held,
                )?;
            }
            let result = work(&decoded, bounds, &mut memory);
            // The body and its copy go before their charge does.
            drop(decoded);
            drop(body);
            result
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "checking a batch panicked");
            IngestProblem::internal()
        })?
        .inspect_err(count_429)
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

/// Counts a 429 of the memory budget with the gate's.
fn count_429(problem: &IngestProblem) {
    if problem.status() == axum::http::StatusCode::TOO_MANY_REQUESTS {
        metrics::batch_refused(429);
    }
}

/// A request let in: who sent it and its body, as sent.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub admission: gate::Admission,
    pub who: auth::Authenticated,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Its memory, given back when the answer is sent.
    pub charge: Arc<Charge>,
    /// The part of it held only until the body is checked (the body).
    pub held: Transient,
}

impl Admitted {
    /// The admission and who sent it, and the body with its memory for
    /// [`Ingest::off_thread`].
    pub(crate) fn split(self) -> (gate::Admission, auth::Authenticated, Arc<Charge>, Body) {
        let body = Body {
            headers: self.headers,
            body: self.body,
            charge: Arc::clone(&self.charge),
            held: self.held,
        };
        (self.admission, self.who, self.charge, body)
    }
}

/// A body on its way to be checked, with its memory.
#[derive(Debug)]
pub(crate) struct Body {
    headers: HeaderMap,
    body: Bytes,
    charge: Arc<Charge>,
    held: Transient,
}

/// A request's memory while its body is checked: `held` is given back
/// when the check is done, `kept` when the answer is sent.
#[derive(Debug)]
pub(crate) struct Memory {
    pub kept: Arc<Charge>,
    pub held: Transient,
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
