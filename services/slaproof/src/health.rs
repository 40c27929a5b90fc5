//! `/healthz` (the process is alive) and `/readyz` (it can do its work: the
//! database answers). Every service serves both.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use slaproof_store::Database;

use slaproof_http::Problem;

/// How long readiness waits for the database before saying no.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The health routes.
pub(crate) fn router(db: Database) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(db)
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(db): State<Database>) -> Response {
    match db.ping(READY_TIMEOUT).await {
        Ok(()) => {
            Json(json!({ "status": "ready", "checks": { "database": "ok" } })).into_response()
        }
        Err(err) => {
            tracing::warn!(error = %err, "not ready: database check failed");
            Problem::new(StatusCode::SERVICE_UNAVAILABLE, "not-ready", "Not ready")
                .with_detail("the database does not answer")
                .into_response()
        }
    }
}
