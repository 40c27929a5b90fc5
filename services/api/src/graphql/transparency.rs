//! The transparency log over GraphQL: the same reads and checks as `/v1/transparency/…`, each answering the REST body as one JSON value (one shape per concept, not a third copy of the proof types).

use async_graphql::{Context, Json, Object};
use chrono::NaiveDate;
use slaproof_app::AppError;
use slaproof_app::transparency::requests::CheckRequestsIn;

use slaproof_app::Scope;

use super::limits::read_cost;
use super::{holds, parts, refuse};

/// Introspection shows each field to the callers its REST operation
/// serves: the log's heads to `attestation:read`, requests and checks to
/// `request:verify`, the last check to either.
fn holds_log_heads(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::AttestationRead)
}

fn holds_request_verify(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::RequestVerify)
}

fn holds_either(ctx: &Context<'_>) -> bool {
    holds_log_heads(ctx) || holds_request_verify(ctx)
}

/// A `YYYY-MM-DD` argument, refused by its name when it is not a date.
fn day(field: &str, text: &str) -> async_graphql::Result<NaiveDate> {
    text.parse().map_err(|e| {
        refuse(AppError::invalid(
            field,
            format!("not a YYYY-MM-DD date: {e}"),
        ))
    })
}

#[derive(Debug, Default)]
pub(super) struct TransparencyQuery;

#[Object]
impl TransparencyQuery {
    /// The log's signed head after each built day from `from` to `to`
    /// (both included, at most 400 days), oldest first, as
    /// `GET /v1/transparency/heads` answers them (`attestation:read`).
    #[graphql(
        visible = "holds_log_heads",
        complexity = "read_cost(child_complexity)"
    )]
    async fn tree_heads(
        &self,
        ctx: &Context<'_>,
        from: String,
        to: String,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (from, to) = (day("from", &from)?, day("to", &to)?);
        let (app, caller) = parts(ctx)?;
        let heads = app.tree_heads(caller, from, to).await.map_err(refuse)?;
        Ok(Json(serde_json::to_value(heads)?))
    }

    /// The RFC 9162 consistency proof from the head of `from` to the head
    /// of `to`, as `GET /v1/transparency/consistency` (`attestation:read`).
    #[graphql(
        visible = "holds_log_heads",
        complexity = "read_cost(child_complexity)"
    )]
    async fn tree_consistency(
        &self,
        ctx: &Context<'_>,
        from: String,
        to: String,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (from, to) = (day("from", &from)?, day("to", &to)?);
        let (app, caller) = parts(ctx)?;
        let proof = app
            .tree_consistency(caller, from, to)
            .await
            .map_err(refuse)?;
        Ok(Json(serde_json::to_value(proof)?))
    }

    /// One request's inclusion proof against the head of `day` (the latest
    /// built when absent), as `GET /v1/transparency/requests/{id}`
    /// (`request:verify`; a customer's user reaches its own requests only).
    #[graphql(
        visible = "holds_request_verify",
        complexity = "read_cost(child_complexity)"
    )]
    async fn request_proof(
        &self,
        ctx: &Context<'_>,
        request_id: String,
        day: Option<String>,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let day = day.map(|d| self::day("day", &d)).transpose()?;
        let (app, caller) = parts(ctx)?;
        let proof = app
            .request_proof(caller, &request_id, day)
            .await
            .map_err(refuse)?;
        Ok(Json(serde_json::to_value(proof)?))
    }

    /// The caller's last check of its own request log, summed up, or null,
    /// as `GET /v1/transparency/checks/latest` answers `check`.
    #[graphql(visible = "holds_either", complexity = "read_cost(child_complexity)")]
    async fn last_request_check(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (app, caller) = parts(ctx)?;
        let last = app.last_request_check(caller).await.map_err(refuse)?;
        Ok(Json(serde_json::to_value(last)?))
    }

    /// A kept check report, as `GET /v1/transparency/checks/{id}`.
    #[graphql(
        visible = "holds_request_verify",
        complexity = "read_cost(child_complexity)"
    )]
    async fn request_check(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let id = uuid::Uuid::parse_str(&id)
            .map_err(|e| refuse(AppError::invalid("id", format!("not a report id: {e}"))))?;
        let (app, caller) = parts(ctx)?;
        let report = app.request_check(caller, id).await.map_err(refuse)?;
        Ok(Json(serde_json::to_value(report)?))
    }
}

#[derive(Debug, Default)]
pub(super) struct TransparencyMutation;

#[Object]
impl TransparencyMutation {
    /// Checks a client-side request log against the log, as
    /// `POST /v1/transparency/checks` (the same body as `input`); the
    /// report is kept and answered.
    #[graphql(visible = "holds_request_verify")]
    async fn check_requests(
        &self,
        ctx: &Context<'_>,
        input: Json<CheckRequestsIn>,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let (app, caller) = parts(ctx)?;
        let report = app.check_requests(caller, input.0).await.map_err(refuse)?;
        Ok(Json(serde_json::to_value(report)?))
    }
}
