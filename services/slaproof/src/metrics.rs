//! The Prometheus endpoints on `telemetry.metrics_listen`, a listener of
//! their own: `/metrics`, this process's operator metrics; `/metrics/slo`,
//! every tenant's SLOs in the recording-rule names Sloth and Pyrra use, so
//! their dashboards and alerts work on slaproof's numbers unchanged.

use anyhow::Context;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus::{Encoder, GaugeVec, Opts, Registry, TextEncoder};
use slaproof_app::App;
use slaproof_app::slo::{SloReport, SloState, TenantQueue};
use slaproof_http::Problem;

use crate::telemetry;

/// What the metrics listener serves with.
#[derive(Debug, Clone)]
pub(crate) struct MetricsState {
    pub app: App,
    /// The SHA-256 of the token Prometheus must send (`Authorization:
    /// Bearer …`); `None` only on a loopback listener (config rule).
    pub token_digest: Option<[u8; 32]>,
    /// At most this many objectives of one tenant in `/metrics/slo`.
    pub per_tenant: usize,
}

/// The routes of the metrics listener, every one behind the token.
pub(crate) fn router(state: MetricsState) -> Router {
    Router::new()
        .route("/metrics", get(process_metrics))
        .route("/metrics/slo", get(slo_metrics))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_token,
        ))
        .with_state(state)
}

/// Refuses a scrape without the configured bearer token (401): the SLO
/// series name every tenant, its SLAs and customers.
async fn require_token(
    State(state): State<MetricsState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use sha2::{Digest, Sha256};
    if let Some(expected) = state.token_digest {
        let sent = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        // Digests compared, not the tokens: the comparison's time tells
        // nothing about the token.
        let matches = sent.is_some_and(|token| <[u8; 32]>::from(Sha256::digest(token)) == expected);
        if !matches {
            return Problem::new(
                StatusCode::UNAUTHORIZED,
                "metrics-unauthorized",
                "A metrics token is required",
            )
            .with_detail(
                "send the listener's token (telemetry.metrics_token) as `Authorization: Bearer …`",
            )
            .into_response();
        }
    }
    next.run(request).await
}

async fn process_metrics() -> Response {
    // Without a registry (telemetry not set up, as in tests) the answer is
    // an empty exposition, not an error: there is nothing to report.
    let families = telemetry::prometheus_registry()
        .map(Registry::gather)
        .unwrap_or_default();
    exposition(&families)
}

async fn slo_metrics(State(state): State<MetricsState>) -> Response {
    let app = &state.app;
    let report = match app.operator().await {
        Ok(operator) => app.slo_report(&operator, state.per_tenant).await,
        Err(err) => Err(err),
    };
    match report
        .map_err(anyhow::Error::from)
        .and_then(|r| slo_families(&r))
    {
        Ok(families) => exposition(&families),
        Err(err) => {
            tracing::warn!(error = format!("{err:#}"), "reading the SLO series failed");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "slo-metrics-unavailable",
                "SLO metrics unavailable",
            )
            .with_detail("the SLO states could not be read from the database")
            .into_response()
        }
    }
}

fn exposition(families: &[prometheus::proto::MetricFamily]) -> Response {
    let encoder = TextEncoder::new();
    let mut body = Vec::new();
    if let Err(err) = encoder.encode(families, &mut body) {
        tracing::warn!(error = %err, "encoding metrics failed");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    ([(header::CONTENT_TYPE, encoder.format_type())], body).into_response()
}

/// The labels of every SLO series: slaproof's own, then Sloth's, whose
/// dashboards select on `sloth_service` and `sloth_slo`.
const LABELS: &[&str] = &[
    "tenant",
    "sla",
    "customer",
    "objective",
    "sloth_service",
    "sloth_slo",
    "sloth_id",
];

/// A gauge family with the SLO labels and `extra` ones.
struct Family {
    vec: GaugeVec,
}

impl Family {
    fn new(registry: &Registry, name: &str, help: &str, extra: &[&str]) -> anyhow::Result<Self> {
        let labels: Vec<&str> = LABELS.iter().chain(extra).copied().collect();
        let vec = GaugeVec::new(Opts::new(name, help), &labels)
            .with_context(|| format!("the series {name}"))?;
        registry
            .register(Box::new(vec.clone()))
            .with_context(|| format!("registering {name}"))?;
        Ok(Self { vec })
    }

    fn set(&self, state: &SloState, extra: &[&str], value: f64) -> anyhow::Result<()> {
        let service = format!("{}/{}", state.tenant, state.sla);
        let id = format!("{service}-{}", state.objective);
        let mut values = vec![
            state.tenant.as_str(),
            state.sla.as_str(),
            state.customer.as_deref().unwrap_or(""),
            state.objective.as_str(),
            service.as_str(),
            state.objective.as_str(),
            id.as_str(),
        ];
        values.extend_from_slice(extra);
        self.vec
            .get_metric_with_label_values(&values)
            .context("the SLO labels")?
            .set(value);
        Ok(())
    }
}

/// The SLO and queue series of `report`, one registry per scrape: a state
/// that is gone (an objective removed) leaves no stale series behind.
fn slo_families(report: &SloReport) -> anyhow::Result<Vec<prometheus::proto::MetricFamily>> {
    let registry = Registry::new();
    queue_series(&registry, report)?;
    let states = &report.slos;
    let info = Family::new(
        &registry,
        "sloth_slo_info",
        "Each SLO, with its objective in percent (Sloth's info series)",
        &["sloth_objective", "sloth_mode"],
    )?;
    let objective = Family::new(
        &registry,
        "slo:objective:ratio",
        "The SLO's target (0.999 for 99.9%)",
        &[],
    )?;
    let error_budget = Family::new(
        &registry,
        "slo:error_budget:ratio",
        "The allowed share of bad events: 1 - the target",
        &[],
    )?;
    let period = Family::new(
        &registry,
        "slo:time_period:days",
        "The length of the SLO's current period, in days",
        &[],
    )?;
    let recent_errors = Family::new(
        &registry,
        "slo:sli_error:ratio_rate1h",
        "The share of bad events over the last hour",
        &["sloth_window"],
    )?;
    let current_burn = Family::new(
        &registry,
        "slo:current_burn_rate:ratio",
        "Error budget burn rate over the last hour: 1 spends exactly the period's budget by its end",
        &[],
    )?;
    let period_burn = Family::new(
        &registry,
        "slo:period_burn_rate:ratio",
        "Error budget burn rate over the period so far: the bad share over the allowed share",
        &[],
    )?;
    let remaining = Family::new(
        &registry,
        "slo:period_error_budget_remaining:ratio",
        "The share of the period's error budget left: 1 untouched, 0 spent, below 0 overspent",
        &[],
    )?;
    let compliance = Family::new(
        &registry,
        "slaproof_slo_compliance_ratio",
        "Good over counted events this period so far (absent before any event)",
        &[],
    )?;
    let met = Family::new(
        &registry,
        "slaproof_slo_met",
        "1 while the period so far meets the target, else 0",
        &[],
    )?;
    let good = Family::new(
        &registry,
        "slaproof_slo_good_events",
        "Good events (or slices) counted this period so far",
        &[],
    )?;
    let counted = Family::new(
        &registry,
        "slaproof_slo_counted_events",
        "Events (or slices) counted this period so far, good or bad",
        &[],
    )?;
    let as_of = Family::new(
        &registry,
        "slaproof_slo_as_of_timestamp_seconds",
        "The instant the verdict's data runs to (events received before it): alert when it stops moving",
        &[],
    )?;
    let pyrra_objective = Family::new(
        &registry,
        "pyrra_objective",
        "The SLO's target (Pyrra's name)",
        &["slo"],
    )?;
    let pyrra_window = Family::new(
        &registry,
        "pyrra_window",
        "The SLO's period in seconds (Pyrra's name)",
        &["slo"],
    )?;
    let pyrra_availability = Family::new(
        &registry,
        "pyrra_availability",
        "Good over counted events this period so far (Pyrra's name)",
        &["slo"],
    )?;

    for state in states {
        let target_percent = format!("{}", state.objective_ratio * 100.0);
        info.set(state, &[&target_percent, "slaproof"], 1.0)?;
        objective.set(state, &[], state.objective_ratio)?;
        error_budget.set(state, &[], state.error_budget_ratio())?;
        period.set(state, &[], state.period_days)?;
        recent_errors.set(state, &["1h"], state.recent_error_ratio())?;
        current_burn.set(state, &[], state.current_burn_rate)?;
        period_burn.set(state, &[], state.period_burn_rate)?;
        remaining.set(state, &[], state.budget_remaining)?;
        if let Some(value) = state.compliance {
            compliance.set(state, &[], value)?;
        }
        met.set(state, &[], if state.met { 1.0 } else { 0.0 })?;
        good.set(state, &[], state.good as f64)?;
        counted.set(state, &[], state.total as f64)?;
        as_of.set(state, &[], state.as_of.timestamp_millis() as f64 / 1000.0)?;
        let slo = format!("{}/{}/{}", state.tenant, state.sla, state.objective);
        pyrra_objective.set(state, &[&slo], state.objective_ratio)?;
        pyrra_window.set(state, &[&slo], state.period_days * 86_400.0)?;
        if let Some(value) = state.compliance {
            pyrra_availability.set(state, &[&slo], value)?;
        }
    }
    Ok(registry.gather())
}

/// Each tenant's queues: what waits, since when, and what was given up on.
fn queue_series(registry: &Registry, report: &SloReport) -> anyhow::Result<()> {
    let gauge = |name: &str, help: &str| -> anyhow::Result<GaugeVec> {
        let vec = GaugeVec::new(Opts::new(name, help), &["tenant", "queue"])
            .with_context(|| format!("the series {name}"))?;
        registry
            .register(Box::new(vec.clone()))
            .with_context(|| format!("registering {name}"))?;
        Ok(vec)
    };
    let waiting = gauge(
        "slaproof_queue_waiting",
        "Items due and not done: jobs by kind (queue=\"jobs:<kind>\"), outbox facts, webhook deliveries, attestations not yet anchored",
    )?;
    let oldest = gauge(
        "slaproof_queue_oldest_seconds",
        "Age of the oldest waiting item since it became due (absent when none waits)",
    )?;
    let truncated = GaugeVec::new(
        Opts::new(
            "slaproof_slo_series_truncated",
            "1 for a tenant with more objectives than telemetry.slo_series_per_tenant: only its first are shown",
        ),
        &["tenant"],
    )
    .context("the series slaproof_slo_series_truncated")?;
    registry
        .register(Box::new(truncated.clone()))
        .context("registering slaproof_slo_series_truncated")?;
    for tenant in &report.truncated {
        truncated.with_label_values(&[tenant.as_str()]).set(1.0);
    }
    let failed = gauge(
        "slaproof_queue_failed",
        "Items stuck or given up on: jobs failing their attempts in a row, deliveries failed for good, periods not provable",
    )?;
    for TenantQueue { tenant, queue } in &report.queues {
        let labels = [tenant.as_str(), queue.queue.as_str()];
        waiting.with_label_values(&labels).set(queue.waiting as f64);
        failed.with_label_values(&labels).set(queue.failed as f64);
        if let Some(secs) = queue.oldest_secs {
            oldest.with_label_values(&labels).set(secs);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn state(tenant: &str, customer: Option<&str>, compliance: Option<f64>) -> SloState {
        SloState {
            tenant: tenant.into(),
            sla: "chat".into(),
            customer: customer.map(Into::into),
            objective: "availability".into(),
            objective_ratio: 0.999,
            period_days: 30.0,
            compliance,
            current_burn_rate: 2.0,
            period_burn_rate: 0.5,
            budget_remaining: 0.5,
            met: true,
            good: 1_999_000,
            total: 2_000_000,
            as_of: Utc.with_ymd_and_hms(2026, 11, 15, 12, 0, 0).unwrap(),
        }
    }

    fn text(states: &[SloState]) -> String {
        let report = SloReport {
            slos: states.to_vec(),
            queues: Vec::new(),
            truncated: vec!["big".into()],
        };
        let families = slo_families(&report).unwrap();
        let mut body = Vec::new();
        TextEncoder::new().encode(&families, &mut body).unwrap();
        String::from_utf8(body).unwrap()
    }

    #[test]
    fn a_tenant_over_the_cap_is_marked_truncated() {
        let body = text(&[]);
        assert!(
            body.contains("slaproof_slo_series_truncated{tenant=\"big\"} 1"),
            "{body}"
        );
    }

    #[test]
    fn series_carry_sloth_and_pyrra_names_and_labels() {
        let body = text(&[state("acme", Some("globex"), Some(0.9995))]);
        let labels = r#"customer="globex",objective="availability",sla="chat",sloth_id="acme/chat-availability",sloth_service="acme/chat",sloth_slo="availability",tenant="acme""#;
        for line in [
            format!("slo:objective:ratio{{{labels}}} 0.999"),
            format!("slo:period_error_budget_remaining:ratio{{{labels}}} 0.5"),
            format!("slo:current_burn_rate:ratio{{{labels}}} 2"),
            format!("slaproof_slo_compliance_ratio{{{labels}}} 0.9995"),
            format!("slaproof_slo_as_of_timestamp_seconds{{{labels}}} 1794744000"),
            r#"pyrra_window{customer="globex",objective="availability",sla="chat",slo="acme/chat/availability",sloth_id="acme/chat-availability",sloth_service="acme/chat",sloth_slo="availability",tenant="acme"} 2592000"#.to_owned(),
        ] {
            assert!(body.contains(&line), "{line} missing from\n{body}");
        }
        assert!(body.contains("# TYPE slo:objective:ratio gauge"));
    }

    #[test]
    fn no_compliance_before_any_event_and_labels_escaped() {
        let body = text(&[state("acme", Some("a\"b"), None)]);
        assert!(!body.contains("slaproof_slo_compliance_ratio{"), "{body}");
        assert!(!body.contains("pyrra_availability{"), "{body}");
        assert!(body.contains(r#"customer="a\"b""#), "{body}");
    }
}
