//! Synthetic probes over GraphQL: defining, changing, running and deleting
//! them; header values are stored, never answered.

use async_graphql::connection::Connection;
use async_graphql::{Context, Json, Object, SimpleObject};

use slaproof_app::{AppError, Scope};

use super::limits::{page_cost, read_cost, unpaged_cost};
use super::{holds, paged, parts, refuse};

fn holds_probes(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::ProbeManage)
}

#[derive(Debug, Default)]
pub(super) struct ProbeQuery;

#[Object]
impl ProbeQuery {
    /// The tenant's synthetic probes, by name.
    #[graphql(
        visible = "holds_probes",
        complexity = "page_cost(first, child_complexity)"
    )]
    async fn probes(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Probe>> {
        paged(
            ctx,
            (first, after),
            async |app, caller, page| app.list_probes(caller, page).await,
            |it| &it.definition.name,
            Probe::from,
        )
        .await
    }

    /// One probe, by id (`prb_…`) or name.
    #[graphql(visible = "holds_probes", complexity = "read_cost(child_complexity)")]
    async fn probe(&self, ctx: &Context<'_>, probe: String) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        Ok(app.get_probe(caller, &probe).await.map_err(refuse)?.into())
    }

    /// A probe's recent runs (last 7 days), newest first, as
    /// `GET /v1/probes/{probe}/runs`.
    #[graphql(
        visible = "holds_probes",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn probe_runs(
        &self,
        ctx: &Context<'_>,
        probe: String,
        #[graphql(desc = "Runs answered, 1-200 (default 50)")] limit: Option<u32>,
    ) -> async_graphql::Result<Vec<ProbeRun>> {
        let (app, caller) = parts(ctx)?;
        let (_, runs) = app
            .probe_runs(caller, &probe, limit)
            .await
            .map_err(refuse)?;
        Ok(runs.into_iter().map(ProbeRun::from).collect())
    }
}

#[derive(Debug, Default)]
pub(super) struct ProbeMutation;

#[Object]
impl ProbeMutation {
    /// Defines a probe; its first run is due at once.
    #[graphql(visible = "holds_probes")]
    async fn create_probe(
        &self,
        ctx: &Context<'_>,
        input: ProbeInput,
    ) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        let new = slaproof_app::probes::NewProbe {
            name: input.name,
            service: input.service,
            customer: input.customer,
            model: input.model,
            kind: input.kind.into(),
            method: input.method,
            url: input.url,
            headers: headers_of(input.headers)?,
            body: input.body.map(|b| b.0),
            expected_status: input.expected_status,
            interval_secs: input.interval_secs,
            timeout_ms: input.timeout_ms,
            enabled: input.enabled,
        };
        Ok(app.create_probe(caller, new).await.map_err(refuse)?.into())
    }

    /// Changes a probe (by id or name): given fields only; `headers`
    /// replaces every header.
    #[graphql(visible = "holds_probes")]
    async fn update_probe(
        &self,
        ctx: &Context<'_>,
        probe: String,
        input: ProbePatchInput,
    ) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        let patch = slaproof_app::probes::ProbePatch {
            name: input.name,
            service: input.service,
            customer: match input.customer {
                async_graphql::MaybeUndefined::Undefined => None,
                async_graphql::MaybeUndefined::Null => Some(None),
                async_graphql::MaybeUndefined::Value(c) => Some(Some(c)),
            },
            model: match input.model {
                async_graphql::MaybeUndefined::Undefined => None,
                async_graphql::MaybeUndefined::Null => Some(None),
                async_graphql::MaybeUndefined::Value(m) => Some(Some(m)),
            },
            kind: input.kind.map(Into::into),
            method: input.method,
            url: input.url,
            headers: input.headers.map(headers_of).transpose()?,
            body: match input.body {
                async_graphql::MaybeUndefined::Undefined => None,
                async_graphql::MaybeUndefined::Null => Some(None),
                async_graphql::MaybeUndefined::Value(b) => Some(Some(b.0)),
            },
            expected_status: input.expected_status,
            interval_secs: input.interval_secs,
            timeout_ms: input.timeout_ms,
            enabled: input.enabled,
        };
        Ok(app
            .update_probe(caller, &probe, patch)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Deletes a probe (by id or name); its recorded runs stay.
    #[graphql(visible = "holds_probes")]
    async fn delete_probe(&self, ctx: &Context<'_>, probe: String) -> async_graphql::Result<bool> {
        let (app, caller) = parts(ctx)?;
        app.delete_probe(caller, &probe).await.map_err(refuse)?;
        Ok(true)
    }

    /// Makes a probe due now; a runner measures it within a poll.
    #[graphql(visible = "holds_probes")]
    async fn run_probe(&self, ctx: &Context<'_>, probe: String) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .run_probe_now(caller, &probe)
            .await
            .map_err(refuse)?
            .into())
    }
}

/// What a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, async_graphql::Enum)]
enum ProbeKindGql {
    /// One request; good when it answers the expected status.
    Http,
    /// An OpenAI-style chat completion with `stream: true`.
    StreamingCompletion,
}

impl From<ProbeKindGql> for slaproof_app::probes::ProbeKind {
    fn from(k: ProbeKindGql) -> Self {
        match k {
            ProbeKindGql::Http => Self::Http,
            ProbeKindGql::StreamingCompletion => Self::StreamingCompletion,
        }
    }
}

/// A request header of a probe.
#[derive(Debug, Clone, async_graphql::InputObject)]
struct ProbeHeaderInput {
    name: String,
    /// Stored, never answered.
    value: String,
}

fn headers_of(
    headers: Vec<ProbeHeaderInput>,
) -> async_graphql::Result<std::collections::BTreeMap<String, String>> {
    let mut map = std::collections::BTreeMap::new();
    for h in headers {
        if map.insert(h.name.clone(), h.value).is_some() {
            return Err(refuse(AppError::invalid(
                format!("headers.{}", h.name),
                "is given twice",
            )));
        }
    }
    Ok(map)
}

/// A probe to define; the fields and defaults of `POST /v1/probes`.
#[derive(Debug, async_graphql::InputObject)]
struct ProbeInput {
    name: String,
    service: String,
    /// The customer it measures for (its reference).
    customer: Option<String>,
    model: Option<String>,
    kind: ProbeKindGql,
    method: Option<String>,
    url: String,
    #[graphql(default)]
    headers: Vec<ProbeHeaderInput>,
    body: Option<Json<serde_json::Value>>,
    expected_status: Option<i32>,
    interval_secs: Option<i32>,
    timeout_ms: Option<i32>,
    enabled: Option<bool>,
}

/// Changes to a probe: omitted fields stay; `null` clears `model`/`body`.
#[derive(Debug, async_graphql::InputObject)]
struct ProbePatchInput {
    name: Option<String>,
    service: Option<String>,
    customer: async_graphql::MaybeUndefined<String>,
    model: async_graphql::MaybeUndefined<String>,
    kind: Option<ProbeKindGql>,
    method: Option<String>,
    url: Option<String>,
    headers: Option<Vec<ProbeHeaderInput>>,
    body: async_graphql::MaybeUndefined<Json<serde_json::Value>>,
    expected_status: Option<i32>,
    interval_secs: Option<i32>,
    timeout_ms: Option<i32>,
    enabled: Option<bool>,
}

/// The last run of a probe.
#[derive(Debug, SimpleObject)]
struct ProbeLastRun {
    /// RFC 3339.
    at: String,
    /// `good`, `bad` or `error`.
    outcome: &'static str,
    status: Option<i32>,
    error: Option<String>,
    latency_ms: Option<f64>,
}

/// A synthetic probe; header values are never answered.
#[derive(Debug, SimpleObject)]
struct Probe {
    /// `prb_…`.
    id: String,
    name: String,
    service: String,
    /// The customer it measures for; null for the provider's own.
    customer: Option<String>,
    model: Option<String>,
    /// `http` or `streaming_completion`.
    kind: &'static str,
    method: String,
    url: String,
    header_names: Vec<String>,
    body: Option<Json<serde_json::Value>>,
    expected_status: i32,
    interval_secs: i32,
    timeout_ms: i32,
    enabled: bool,
    /// RFC 3339.
    next_run_at: String,
    last_run: Option<ProbeLastRun>,
}

impl From<slaproof_app::probes::StoredProbe> for Probe {
    fn from(p: slaproof_app::probes::StoredProbe) -> Self {
        let d = p.definition;
        Self {
            id: p.id.to_string(),
            name: d.name,
            service: d.service,
            customer: d.customer,
            model: d.model,
            kind: d.kind.as_str(),
            method: d.method,
            url: d.url,
            header_names: d.headers.into_keys().collect(),
            body: d.body.map(Json),
            expected_status: d.expected_status,
            interval_secs: d.interval_secs,
            timeout_ms: d.timeout_ms,
            enabled: d.enabled,
            next_run_at: p.next_run_at.to_rfc3339(),
            last_run: p.last.map(|l| ProbeLastRun {
                at: l.at.to_rfc3339(),
                outcome: l.outcome.as_str(),
                status: l.status,
                error: l.error,
                latency_ms: l.latency_us.map(|us| us as f64 / 1000.0),
            }),
        }
    }
}

/// One run, from the event it was stored as.
#[derive(Debug, SimpleObject)]
struct ProbeRun {
    /// RFC 3339.
    occurred_at: String,
    status: Option<i32>,
    /// Absent for a good run.
    error_class: Option<String>,
    latency_ms: Option<f64>,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    output_tokens: Option<i32>,
}

impl From<slaproof_app::probes::ProbeRun> for ProbeRun {
    fn from(r: slaproof_app::probes::ProbeRun) -> Self {
        let ms = |us: i64| us as f64 / 1000.0;
        Self {
            occurred_at: r.occurred_at.to_rfc3339(),
            status: r.status,
            error_class: r.error_class,
            latency_ms: r.latency_us.map(ms),
            ttft_ms: r.ttft_us.map(ms),
            tpot_ms: r.tpot_us.map(ms),
            output_tokens: r.output_tokens,
        }
    }
}
