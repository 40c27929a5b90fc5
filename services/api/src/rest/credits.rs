//! `/v1/credits`, `/v1/slas/{name}/credits/…` and `/v1/customers/{ref}/fees`: the credit ledger read and exported, a period's statement (JSON or a printable page), a credit recomputed, a credited period's fee corrected, and the fees tiered credits are a share of.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_app::Caller;
use slaproof_app::credit_statement::statement_html;
use slaproof_app::credits::{
    Credit, CreditQuery, CreditStatement, CustomerFee, NewFee, credits_csv,
};
use slaproof_app::fee_corrections::{FeeCorrectionView, NewFeeCorrection};
use slaproof_domain::credit::FeeStart;

use super::{ApiProblem, ApiState, ListOut, ProblemResponses, invalid, parse_body};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/credits", get(list))
        .route("/v1/credits/export", get(export))
        .route("/v1/credits/{id}", get(show))
        .route("/v1/slas/{name}/credits/{period_start}", get(statement))
        .route(
            "/v1/slas/{name}/credits/{period_start}/recompute",
            post(recompute),
        )
        .route(
            "/v1/slas/{name}/credits/{period_start}/fee-correction",
            post(correct_fee),
        )
        .route("/v1/customers/{ref}/fees", get(fees).post(set_fee))
}

/// Which credits: `?customer_ref=…&sla=…&from=…&to=…`, and a page of them.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CreditsQuery {
    /// A customer's external reference (a customer's user reads its own
    /// whatever it asks).
    pub customer_ref: Option<String>,
    /// An SLA's name.
    pub sla: Option<String>,
    /// Periods starting at or after this instant (RFC 3339).
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub from: Option<DateTime<Utc>>,
    /// Periods starting before this instant (RFC 3339).
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub to: Option<DateTime<Utc>>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1-200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// The export's format and filters.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ExportQuery {
    /// `csv` (default) or `json`.
    pub format: Option<String>,
    /// A customer's external reference.
    pub customer_ref: Option<String>,
    /// An SLA's name.
    pub sla: Option<String>,
    /// Periods starting at or after this instant (RFC 3339).
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub from: Option<DateTime<Utc>>,
    /// Periods starting before this instant (RFC 3339).
    #[serde(default, deserialize_with = "crate::rest::instant::optional")]
    pub to: Option<DateTime<Utc>>,
}

/// The statement's format.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct StatementQuery {
    /// `json` (default) or `html`: a printable, self-contained page.
    pub format: Option<String>,
}

/// A fee to record: what the customer pays per SLA period from
/// `effective_from` on.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CustomerFeeIn {
    /// A date (`2026-01-01`: each SLA's periods starting on or after it,
    /// read in the SLA's time zone) or an RFC 3339 instant.
    pub effective_from: String,
    /// ISO 4217 (`EUR`).
    pub currency: String,
    /// Decimal text in the currency's unit (`1200.00`), exact to the minor
    /// unit.
    pub amount: String,
    /// The minor-unit exponent, required for a code slaproof does not know.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 4)]
    pub minor_units: Option<u8>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct CustomerFeesOut {
    /// Oldest first.
    pub data: Vec<CustomerFee>,
}

/// The fee a credited period is to be computed on, and why.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeeCorrectionIn {
    /// ISO 4217 (`EUR`): the SLA's credit currency.
    pub currency: String,
    /// Decimal text in the currency's unit (`1200.00`), exact to the minor
    /// unit.
    pub amount: String,
    /// The minor-unit exponent, required for a code slaproof does not know.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 4)]
    pub minor_units: Option<u8>,
    /// Why the fee on file was wrong for the period, 1-1,000 characters:
    /// the customer reads it on its statement.
    pub reason: String,
}

/// The answer to a recompute request.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct RecomputeOut {
    /// Always true: the compensation worker computes it shortly.
    pub queued: bool,
}

fn query_of(
    customer_ref: Option<String>,
    sla: Option<String>,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> CreditQuery {
    CreditQuery {
        customer_ref,
        sla,
        from,
        to,
    }
}

/// The SLA's name and a period's start (RFC 3339, URL-encoded) from the path.
fn sla_period(
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<(String, DateTime<Utc>), ApiProblem> {
    let Path((name, start)) = path.map_err(|e| invalid("period_start", e.body_text()))?;
    let start = DateTime::parse_from_rfc3339(&start)
        .map_err(|e| invalid("period_start", format!("not an RFC 3339 instant: {e}")))?;
    Ok((name, start.with_timezone(&Utc)))
}

#[utoipa::path(
    get,
    path = "/v1/credits",
    operation_id = "credits_list",
    tag = "credits",
    summary = "List credits (a customer's user: its own)",
    description = "The ledger in the order written: issued credits and corrections (a correction's `amount` is the difference, `total` the period's credit after it). Needs `sla:read:credits`.",
    params(CreditsQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<Credit>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<CreditsQuery>, QueryRejection>,
) -> Result<Json<ListOut<Credit>>, ApiProblem> {
    let Query(q) = query.map_err(|e| invalid("query", e.body_text()))?;
    let page = slaproof_app::PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    let credits = query_of(q.customer_ref, q.sla, q.from, q.to);
    let listed = state.app.list_credits(&caller, &credits, &page).await?;
    Ok(Json(listed.into()))
}

#[utoipa::path(
    get,
    path = "/v1/credits/export",
    operation_id = "credits_export",
    tag = "credits",
    summary = "Export credits for a billing system (CSV or JSON)",
    description = "Every credit the filters match, oldest first (at most 100000): CSV (RFC 4180, one line per entry, amounts as decimal text and in minor units) or a JSON array. Needs `sla:read:credits`.",
    params(ExportQuery),
    responses(
        (status = 200, description = "The credits", content(
            (String = "text/csv"),
            (Vec<Credit> = "application/json"),
        )),
        ProblemResponses,
    ),
)]
pub(crate) async fn export(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, ApiProblem> {
    let Query(q) = query.map_err(|e| invalid("query", e.body_text()))?;
    let csv = match q.format.as_deref() {
        None | Some("csv") => true,
        Some("json") => false,
        Some(other) => {
            return Err(invalid(
                "format",
                format!("must be `csv` or `json`, got {other:?}"),
            ));
        }
    };
    let query = query_of(q.customer_ref, q.sla, q.from, q.to);
    let credits = state.app.export_credits(&caller, &query).await?;
    if !csv {
        return Ok(Json(credits).into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"credits.csv\"",
            ),
        ],
        credits_csv(&credits),
    )
        .into_response())
}

#[utoipa::path(
    get,
    path = "/v1/credits/{id}",
    operation_id = "credits_show",
    tag = "credits",
    summary = "One credit, with its computation and the results it was computed from",
    params(("id" = String, Path, description = "`cred_…`")),
    responses(
        (status = 200, description = "OK", body = Credit),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Credit>, ApiProblem> {
    let Path(id) = id.map_err(|e| invalid("id", e.body_text()))?;
    Ok(Json(state.app.get_credit(&caller, &id).await?))
}

#[utoipa::path(
    get,
    path = "/v1/slas/{name}/credits/{period_start}",
    operation_id = "credits_statement",
    tag = "credits",
    summary = "The credit statement of an SLA's period (JSON or printable HTML)",
    description = "Every ledger entry of the period, each with the objectives' results, the policy's formula and every step of the computation, and the total owed. `?format=html` answers a self-contained page to print. Needs `sla:read:credits`; a customer's user reads its own SLAs' only.",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("period_start" = String, Path, format = DateTime, description = "The period's start, RFC 3339 (URL-encoded)"),
        StatementQuery,
    ),
    responses(
        (status = 200, description = "The statement", content(
            (CreditStatement = "application/json"),
            (String = "text/html"),
        )),
        ProblemResponses,
    ),
)]
pub(crate) async fn statement(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<StatementQuery>, QueryRejection>,
) -> Result<Response, ApiProblem> {
    let (name, start) = sla_period(path)?;
    let Query(q) = query.map_err(|e| invalid("query", e.body_text()))?;
    let html = match q.format.as_deref() {
        None | Some("json") => false,
        Some("html") => true,
        Some(other) => {
            return Err(invalid(
                "format",
                format!("must be `json` or `html`, got {other:?}"),
            ));
        }
    };
    let statement = state.app.credit_statement(&caller, &name, start).await?;
    if !html {
        return Ok(Json(statement).into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // The page is self-contained: nothing to load, nothing to run.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'",
            ),
        ],
        statement_html(&statement),
    )
        .into_response())
}

#[utoipa::path(
    post,
    path = "/v1/slas/{name}/credits/{period_start}/recompute",
    operation_id = "credits_recompute",
    tag = "credits",
    summary = "Compute a closed period's credit again",
    description = "From the results in force and the fee on file now (after a missing fee was recorded, say; a period credited already keeps the fee it was credited on): the compensation worker records a correction when the amount changed, nothing otherwise. Needs `sla:write`; 422 when no period of the SLA closed at that start.",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("period_start" = String, Path, format = DateTime, description = "The period's start, RFC 3339 (URL-encoded)"),
    ),
    responses(
        (status = 202, description = "Queued", body = RecomputeOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn recompute(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<(StatusCode, Json<RecomputeOut>), ApiProblem> {
    let (name, start) = sla_period(path)?;
    state.app.recompute_credit(&caller, &name, start).await?;
    Ok((StatusCode::ACCEPTED, Json(RecomputeOut { queued: true })))
}

#[utoipa::path(
    post,
    path = "/v1/slas/{name}/credits/{period_start}/fee-correction",
    operation_id = "credits_correct_fee",
    tag = "credits",
    summary = "Correct the fee a credited period was computed on",
    description = "The one way a wrong fee reaches a period already credited (a fee recorded later never does): an act of its own, with a reason the customer reads on its statement, recorded on the SLA's audit trail (`fee.corrected`: who, when, the fee before and after). The period's credit is computed again on the corrected fee: a correcting ledger entry (`credit.corrected`) follows when the amount changes, its record naming the correction. Needs `customer:write`. 422 when no period of the SLA closed at that start, or the currency is not the SLA's credit currency; 409 when the period was not credited on a fee, or is past its settlement horizon (final).",
    params(
        ("name" = String, Path, description = "The SLA's name"),
        ("period_start" = String, Path, format = DateTime, description = "The period's start, RFC 3339 (URL-encoded)"),
    ),
    request_body = FeeCorrectionIn,
    responses(
        (status = 201, description = "Recorded; the credit is computed again", body = FeeCorrectionView),
        ProblemResponses,
    ),
)]
pub(crate) async fn correct_fee(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
    bytes: Bytes,
) -> Result<(StatusCode, Json<FeeCorrectionView>), ApiProblem> {
    let (name, start) = sla_period(path)?;
    let input: FeeCorrectionIn = parse_body(&bytes)?;
    let corrected = state
        .app
        .correct_credited_fee(
            &caller,
            &name,
            start,
            NewFeeCorrection {
                currency: input.currency,
                amount: input.amount,
                minor_units: input.minor_units,
                reason: input.reason,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(corrected)))
}

#[utoipa::path(
    get,
    path = "/v1/customers/{ref}/fees",
    operation_id = "customer_fees_list",
    tag = "credits",
    summary = "A customer's fees per SLA period, oldest first",
    params(("ref" = String, Path, description = "The customer's external reference")),
    responses(
        (status = 200, description = "OK", body = CustomerFeesOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn fees(
    State(state): State<ApiState>,
    caller: Caller,
    reference: Result<Path<String>, PathRejection>,
) -> Result<Json<CustomerFeesOut>, ApiProblem> {
    let Path(reference) = reference.map_err(|e| invalid("ref", e.body_text()))?;
    Ok(Json(CustomerFeesOut {
        data: state.app.customer_fees(&caller, &reference).await?,
    }))
}

#[utoipa::path(
    post,
    path = "/v1/customers/{ref}/fees",
    operation_id = "customer_fees_set",
    tag = "credits",
    summary = "Record a customer's fee from an instant on",
    description = "A later price is a new fee from a later instant; the history stays. 409 when a fee from the same instant is on file, or when the fee would reach back into a period already credited on a fee (it takes effect at that period's end or later). Recorded on the audit trail of each of the customer's SLAs (`fee.recorded`). Needs `customer:write`.",
    params(("ref" = String, Path, description = "The customer's external reference")),
    request_body = CustomerFeeIn,
    responses(
        (status = 201, description = "Recorded", body = CustomerFee),
        ProblemResponses,
    ),
)]
pub(crate) async fn set_fee(
    State(state): State<ApiState>,
    caller: Caller,
    reference: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<(StatusCode, Json<CustomerFee>), ApiProblem> {
    let Path(reference) = reference.map_err(|e| invalid("ref", e.body_text()))?;
    let input: CustomerFeeIn = parse_body(&bytes)?;
    let fee = state
        .app
        .set_customer_fee(
            &caller,
            &reference,
            NewFee {
                effective_from: FeeStart::parse(&input.effective_from)
                    .map_err(|e| invalid("effective_from", e))?,
                currency: input.currency,
                amount: input.amount,
                minor_units: input.minor_units,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(fee)))
}
