//! `/v1/probes`: synthetic probes of the provider's endpoints. A probe is
//! named in paths by its id (`prb_…`) or its name.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use slaproof_app::idempotency::Creating;
use slaproof_app::probes::{ProbeKind, ProbeOutcome, StoredProbe};
use slaproof_domain::ids::ProbeId;

use super::{
    ApiProblem, ApiState, ListOut, PageQuery, ProblemResponses, created, invalid, page, parse_body,
};
use slaproof_app::Caller;
use slaproof_app::probes::{NewProbe, ProbePatch, ProbeRun};

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/v1/probes", get(list).post(create))
        .route("/v1/probes/{probe}", get(show).patch(update).delete(remove))
        .route("/v1/probes/{probe}/run", post(run_now))
        .route("/v1/probes/{probe}/runs", get(runs))
}

/// What a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKindIo {
    /// One request; good when it answers `expected_status`.
    Http,
    /// An OpenAI-style chat completion with `stream: true`: time to first
    /// token, time per output token, output tokens.
    StreamingCompletion,
}

impl From<ProbeKindIo> for ProbeKind {
    fn from(k: ProbeKindIo) -> Self {
        match k {
            ProbeKindIo::Http => ProbeKind::Http,
            ProbeKindIo::StreamingCompletion => ProbeKind::StreamingCompletion,
        }
    }
}

impl From<ProbeKind> for ProbeKindIo {
    fn from(k: ProbeKind) -> Self {
        match k {
            ProbeKind::Http => ProbeKindIo::Http,
            ProbeKind::StreamingCompletion => ProbeKindIo::StreamingCompletion,
        }
    }
}

/// A probe to define.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeIn {
    /// 1-63 characters of a-z, 0-9, `.` and `-`; unique in the tenant.
    pub name: String,
    /// The event `service` the results carry, so SLAs can select them.
    pub service: String,
    /// The customer the probe measures for (its reference; its credentials
    /// go in `headers`): the results name it and count for its SLAs.
    /// Absent: the provider's own probe, counted by service-wide SLAs.
    #[serde(default)]
    pub customer: Option<String>,
    /// The event `model`; needed by a `streaming_completion` without `body`.
    #[serde(default)]
    pub model: Option<String>,
    pub kind: ProbeKindIo,
    /// Default GET (`http`) or POST (`streaming_completion`, which only
    /// takes POST).
    #[serde(default)]
    pub method: Option<String>,
    /// http or https; loopback, private and link-local targets are refused
    /// unless the operator allows them.
    pub url: String,
    /// Request headers. Values (API keys) are stored but never answered.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON request body; for `streaming_completion` the chat completion
    /// request (`stream: true` is forced), by default a one-line prompt to
    /// `model`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub body: Option<serde_json::Value>,
    /// Default 200.
    #[serde(default)]
    #[schema(minimum = 100, maximum = 599)]
    pub expected_status: Option<i32>,
    /// Seconds between runs, 10-86400 (default 60).
    #[serde(default)]
    #[schema(minimum = 10, maximum = 86400)]
    pub interval_secs: Option<i32>,
    /// 100-120000 ms and at most the interval (default 10000).
    #[serde(default)]
    #[schema(minimum = 100, maximum = 120000)]
    pub timeout_ms: Option<i32>,
    /// Default true.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `Some(None)` for an explicit `null`, `None` for an absent field.
pub(super) fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Changes to a probe: absent fields stay as they are; `null` clears
/// `model` and `body`; `headers` replaces every header.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbePatchIn {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    /// `null`: the provider's own probe again.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub customer: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    #[serde(default)]
    pub kind: Option<ProbeKindIo>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>)]
    pub body: Option<Option<serde_json::Value>>,
    #[serde(default)]
    pub expected_status: Option<i32>,
    #[serde(default)]
    pub interval_secs: Option<i32>,
    #[serde(default)]
    pub timeout_ms: Option<i32>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ProbeOutcomeOut {
    /// Answered as expected.
    Good,
    /// Answered, but not as expected.
    Bad,
    /// No usable answer (timeout, connection, DNS, refused target).
    Error,
}

impl From<ProbeOutcome> for ProbeOutcomeOut {
    fn from(o: ProbeOutcome) -> Self {
        match o {
            ProbeOutcome::Good => ProbeOutcomeOut::Good,
            ProbeOutcome::Bad => ProbeOutcomeOut::Bad,
            ProbeOutcome::Error => ProbeOutcomeOut::Error,
        }
    }
}

/// The last run of a probe.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ProbeLastRunOut {
    pub at: DateTime<Utc>,
    pub outcome: ProbeOutcomeOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    /// The error class and what happened, e.g. `timeout: no complete answer within 2s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ProbeOut {
    #[schema(value_type = String, example = "prb_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: ProbeId,
    pub name: String,
    pub service: String,
    /// The customer it measures for; absent for the provider's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub kind: ProbeKindIo,
    pub method: String,
    pub url: String,
    /// The names of the request headers; their values are never answered.
    pub header_names: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub body: Option<serde_json::Value>,
    pub expected_status: i32,
    pub interval_secs: i32,
    pub timeout_ms: i32,
    pub enabled: bool,
    /// When the next run is due (while enabled).
    pub next_run_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<ProbeLastRunOut>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

impl From<StoredProbe> for ProbeOut {
    fn from(p: StoredProbe) -> Self {
        let d = p.definition;
        Self {
            id: p.id,
            name: d.name,
            service: d.service,
            customer: d.customer,
            model: d.model,
            kind: d.kind.into(),
            method: d.method,
            url: d.url,
            header_names: d.headers.into_keys().collect(),
            body: d.body,
            expected_status: d.expected_status,
            interval_secs: d.interval_secs,
            timeout_ms: d.timeout_ms,
            enabled: d.enabled,
            next_run_at: p.next_run_at,
            last_run: p.last.map(|l| ProbeLastRunOut {
                at: l.at,
                outcome: l.outcome.into(),
                status: l.status,
                error: l.error,
                latency_ms: l.latency_us.map(ms),
            }),
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// One run, from the event it was stored as.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ProbeRunOut {
    pub occurred_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    /// Absent for a good run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<i32>,
}

impl From<ProbeRun> for ProbeRunOut {
    fn from(r: ProbeRun) -> Self {
        Self {
            occurred_at: r.occurred_at,
            status: r.status,
            error_class: r.error_class,
            latency_ms: r.latency_us.map(ms),
            ttft_ms: r.ttft_us.map(ms),
            tpot_ms: r.tpot_us.map(ms),
            output_tokens: r.output_tokens,
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct ProbeRunsOut {
    /// The last 7 days' runs, newest first.
    pub data: Vec<ProbeRunOut>,
}

/// `?limit=…` of the runs.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RunsQuery {
    /// Runs answered, 1-200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

fn probe_ref(path: Result<Path<String>, PathRejection>) -> Result<String, ApiProblem> {
    let Path(reference) = path.map_err(|e| invalid("probe", e.body_text()))?;
    Ok(reference)
}

#[utoipa::path(
    get,
    path = "/v1/probes",
    operation_id = "probes_list",
    tag = "probes",
    summary = "List probes",
    params(PageQuery),
    responses(
        (status = 200, description = "OK", body = ListOut<ProbeOut>),
        ProblemResponses,
    ),
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<ListOut<ProbeOut>>, ApiProblem> {
    let page = state.app.list_probes(&caller, &page(query)?).await?;
    Ok(Json(page.into()))
}

#[utoipa::path(
    post,
    path = "/v1/probes",
    operation_id = "probes_create",
    tag = "probes",
    summary = "Define a probe; its first run is due at once",
    params(("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key and body get the first answer again")),
    request_body = ProbeIn,
    responses(
        (status = 201, description = "Created", body = ProbeOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiProblem> {
    let input: ProbeIn = parse_body(&bytes)?;
    let new = NewProbe {
        name: input.name,
        service: input.service,
        customer: input.customer,
        model: input.model,
        kind: input.kind.into(),
        method: input.method,
        url: input.url,
        headers: input.headers,
        body: input.body,
        expected_status: input.expected_status,
        interval_secs: input.interval_secs,
        timeout_ms: input.timeout_ms,
        enabled: input.enabled,
    };
    let route = "POST /v1/probes";
    let app = &state.app;
    // Checked (its host resolved) before the creating transaction opens.
    let new = app.check_probe(&caller, new).await?;
    created(
        &state,
        &caller,
        &headers,
        Creating::PROBE,
        (route, &bytes),
        async |tx| app.create_probe_in(tx, &caller, new).await,
        |probe| (StatusCode::CREATED, ProbeOut::from(probe)),
    )
    .await
}

#[utoipa::path(
    get,
    path = "/v1/probes/{probe}",
    operation_id = "probes_show",
    tag = "probes",
    summary = "Get a probe and its last run",
    params(("probe" = String, Path, description = "`prb_…` or the probe's name")),
    responses(
        (status = 200, description = "OK", body = ProbeOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<ProbeOut>, ApiProblem> {
    let reference = probe_ref(path)?;
    Ok(Json(state.app.get_probe(&caller, &reference).await?.into()))
}

#[utoipa::path(
    patch,
    path = "/v1/probes/{probe}",
    operation_id = "probes_update",
    tag = "probes",
    summary = "Change a probe (enable, disable, retarget, …)",
    params(("probe" = String, Path, description = "`prb_…` or the probe's name")),
    request_body = ProbePatchIn,
    responses(
        (status = 200, description = "OK", body = ProbeOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn update(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<ProbeOut>, ApiProblem> {
    let reference = probe_ref(path)?;
    let input: ProbePatchIn = parse_body(&bytes)?;
    let patch = ProbePatch {
        name: input.name,
        service: input.service,
        customer: input.customer,
        model: input.model,
        kind: input.kind.map(Into::into),
        method: input.method,
        url: input.url,
        headers: input.headers,
        body: input.body,
        expected_status: input.expected_status,
        interval_secs: input.interval_secs,
        timeout_ms: input.timeout_ms,
        enabled: input.enabled,
    };
    Ok(Json(
        state
            .app
            .update_probe(&caller, &reference, patch)
            .await?
            .into(),
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/probes/{probe}",
    operation_id = "probes_delete",
    tag = "probes",
    summary = "Delete a probe; its stored runs stay",
    params(("probe" = String, Path, description = "`prb_…` or the probe's name")),
    responses(
        (status = 204, description = "Deleted"),
        ProblemResponses,
    ),
)]
pub(crate) async fn remove(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiProblem> {
    let reference = probe_ref(path)?;
    state.app.delete_probe(&caller, &reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(
    post,
    path = "/v1/probes/{probe}/run",
    operation_id = "probes_run",
    tag = "probes",
    summary = "Run a probe now (within a poll of the runners); 409 when disabled",
    params(("probe" = String, Path, description = "`prb_…` or the probe's name")),
    responses(
        (status = 202, description = "Due now", body = ProbeOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn run_now(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<(StatusCode, Json<ProbeOut>), ApiProblem> {
    let reference = probe_ref(path)?;
    let probe = state.app.run_probe_now(&caller, &reference).await?;
    Ok((StatusCode::ACCEPTED, Json(probe.into())))
}

#[utoipa::path(
    get,
    path = "/v1/probes/{probe}/runs",
    operation_id = "probes_runs",
    tag = "probes",
    summary = "A probe's recent runs (last 7 days), newest first",
    params(("probe" = String, Path, description = "`prb_…` or the probe's name"), RunsQuery),
    responses(
        (status = 200, description = "OK", body = ProbeRunsOut),
        ProblemResponses,
    ),
)]
pub(crate) async fn runs(
    State(state): State<ApiState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<RunsQuery>, QueryRejection>,
) -> Result<Json<ProbeRunsOut>, ApiProblem> {
    let reference = probe_ref(path)?;
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    let (_, runs) = state
        .app
        .probe_runs(&caller, &reference, query.limit)
        .await?;
    Ok(Json(ProbeRunsOut {
        data: runs.into_iter().map(Into::into).collect(),
    }))
}
