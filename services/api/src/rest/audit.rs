//! `/v1/slas/{name}/audit`: the SLA's verdict audit trail, readable by its customer.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_app::Caller;
use slaproof_app::audit::AuditRecordView;
use slaproof_domain::ids::CustomerId;

use super::{ApiProblem, ApiState, ListOut, PageQuery, ProblemResponses, invalid, page};

pub(crate) fn router() -> Router<ApiState> {
    Router::new().route("/v1/slas/{name}/audit", get(list))
}

/// An action that changed what the SLA's verdict rests on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct AuditRecordOut {
    #[schema(example = "aud_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: String,
    pub at: DateTime<Utc>,
    /// `maintenance.created`, `maintenance.cancelled`,
    /// `maintenance.accepted`, `sla.applied`, `fee.recorded` or `fee.corrected`.
    pub action: String,
    /// Who acted: the subject of the caller's token.
    pub actor: String,
    /// The customer the actor acted for, when it was a customer's user.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub actor_customer: Option<CustomerId>,
    /// What was done: the window (`window`, `starts_at`, `ends_at`) and how
    /// it stood for the SLA (`status`, or `was` before a cancellation or
    /// acceptance), or the version applied (`version`, `outcome`).
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

impl From<AuditRecordView> for AuditRecordOut {
    fn from(r: AuditRecordView) -> Self {
        Self {
            id: r.id,
            at: r.at,
            action: r.action,
            actor: r.actor,
            actor_customer: r.actor_customer,
            details: r.details,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/audit",
    operation_id = "slas_audit",
    tag = "slas",
    summary = "The SLA's verdict audit trail, oldest first",
    description = "Every action that changed what the SLA's verdicts rest on: maintenance windows announced, cancelled and accepted, versions applied; who did it and when. Needs `sla:read:audit` (held by `provider_admin` and `customer_admin`, and an embed token may carry it); a customer's user reads its own SLAs'.",
    params(("name" = String, Path, description = "The SLA's name"), PageQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<AuditRecordOut>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    name: Result<Path<String>, PathRejection>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<ListOut<AuditRecordOut>>, ApiProblem> {
    let Path(name) = name.map_err(|e| invalid("name", e.body_text()))?;
    let records = state.app.sla_audit(&caller, &name, &page(query)?).await?;
    Ok(Json(records.into()))
}
