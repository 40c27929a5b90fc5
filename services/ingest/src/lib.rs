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
//! The event schema and the answers are documented in `README.md`.

mod auth;
pub mod body;
pub mod event;
pub mod gate;
pub mod native;
pub mod problem;
pub mod writer;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::post;
use chrono::Utc;
use slaproof_store::Database;

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

/// The ingest routes.
pub fn router(db: Database, settings: Settings) -> Router {
    let limit = settings.max_body_bytes;
    let ingest = Arc::new(Ingest::new(db, settings));
    Router::new()
        .route("/v1/events", post(native::post_events))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(ingest)
}
