//! An SLA's dashboard over GraphQL: compliance, budgets, thresholds and the
//! minutes of a range in one read.

use async_graphql::{Context, Object, SimpleObject};
use chrono::{DateTime, Utc};

use slaproof_app::dashboard::{DashboardView, MinuteMaintenance};
use slaproof_app::{AppError, Scope};

use super::compliance::ObjectiveCompliance;
use super::limits::read_cost;
use super::thresholds::Threshold;
use super::{
    family_name, holds_a_metric, holds_credits, holds_history, holds_maintenance, instant, parts,
    refuse,
};

#[derive(Debug, Default)]
pub(super) struct DashboardQuery;

#[Object]
impl DashboardQuery {
    /// An SLA's dashboard in one read: compliance, budgets and the minutes
    /// of `[from, to)` (RFC 3339; default the last day, at most two days).
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn dashboard(
        &self,
        ctx: &Context<'_>,
        sla: String,
        from: Option<String>,
        to: Option<String>,
        #[graphql(desc = "The width of each point: 1m (default), 5m, 15m, 1h, 6h or 1d")]
        step: Option<String>,
    ) -> async_graphql::Result<Dashboard> {
        dashboard(ctx, &sla, from, to, step).await
    }
}

/// The dashboard of `sla`, as both `dashboard` and `Sla.dashboard` answer.
pub(super) async fn dashboard(
    ctx: &Context<'_>,
    sla: &str,
    from: Option<String>,
    to: Option<String>,
    step: Option<String>,
) -> async_graphql::Result<Dashboard> {
    let (app, caller) = parts(ctx)?;
    let (from, to) = (instant("from", from)?, instant("to", to)?);
    let step = slaproof_app::dashboard::parse_step(step.as_deref()).map_err(refuse)?;
    let view = app
        .sla_dashboard(caller, sla, from, to, step)
        .await
        .map_err(refuse)?;
    Ok(Dashboard(view))
}

/// An SLA's dashboard; fields the caller lacks the scope for are refused
/// naming it, as everywhere.
#[derive(Debug)]
pub(super) struct Dashboard(DashboardView);

#[Object]
impl Dashboard {
    async fn sla(&self) -> &str {
        &self.0.sla
    }
    async fn version(&self) -> i32 {
        self.0.version
    }
    /// RFC 3339, a whole minute.
    async fn from(&self) -> String {
        self.0.from.to_rfc3339()
    }
    /// RFC 3339, a whole minute; the minutes are `[from, to)`.
    async fn to(&self) -> String {
        self.0.to.to_rfc3339()
    }

    /// The width of every point in seconds.
    async fn step_secs(&self) -> i64 {
        self.0.step_secs
    }

    /// The time zone the SLA's calendar periods follow; null for a rolling window.
    async fn time_zone(&self) -> Option<&str> {
        self.0.time_zone.as_deref()
    }
    /// Whose requests the SLA is judged on: `customer` (its customer's own)
    /// or `service` (every request of the service).
    async fn scope(&self) -> &'static str {
        self.0.scope.as_str()
    }
    async fn objectives(&self) -> Vec<DashboardObjective> {
        self.0
            .objectives
            .iter()
            .map(|o| {
                let minutes_scope = self
                    .0
                    .redacted
                    .iter()
                    .find(|r| r.field == format!("objectives[{}].minutes", o.objective))
                    .and_then(|r| Scope::parse(r.scope))
                    .unwrap_or(Scope::SlaReadHistory);
                DashboardObjective {
                    compliance: ObjectiveCompliance {
                        objective: o.objective.clone(),
                        family: o.family,
                        slice_secs: o.slice_secs,
                        numbers: o.numbers.clone(),
                    },
                    minutes: o.minutes.clone(),
                    minutes_scope,
                    thresholds: o.thresholds.clone(),
                }
            })
            .collect()
    }
    /// Latency, TTFT and TPOT percentiles per minute with events (within
    /// 1%); needs `sla:read:latency` and `sla:read:history`.
    #[graphql(visible = "holds_history")]
    async fn percentiles(&self) -> async_graphql::Result<Vec<PercentilePoint>> {
        let points = self.0.percentiles.as_ref().ok_or_else(|| {
            let scope = self
                .0
                .redacted
                .iter()
                .find(|r| r.field == "percentiles")
                .and_then(|r| Scope::parse(r.scope))
                .unwrap_or(Scope::SlaReadLatency);
            refuse(AppError::MissingScope(scope))
        })?;
        let measure = |p: &slaproof_app::dashboard::Percentiles| Percentiles {
            count: p.count,
            p50_us: p.p50_us,
            p95_us: p.p95_us,
            p99_us: p.p99_us,
        };
        Ok(points
            .iter()
            .map(|p| PercentilePoint {
                minute: minute_text(p.minute),
                latency: measure(&p.latency),
                ttft: measure(&p.ttft),
                tpot: measure(&p.tpot),
                maintenance: p.maintenance.map(maintenance_name),
            })
            .collect())
    }

    /// Maintenance overlapping the range; needs `maintenance:read`.
    #[graphql(visible = "holds_maintenance")]
    async fn maintenance(&self) -> async_graphql::Result<Vec<MaintenanceSpan>> {
        let spans = self
            .0
            .maintenance
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(Scope::MaintenanceRead)))?;
        Ok(spans
            .iter()
            .map(|s| MaintenanceSpan {
                starts_at: s.starts_at.to_rfc3339(),
                ends_at: s.ends_at.to_rfc3339(),
            })
            .collect())
    }

    /// The credit owed for each of the last 12 closed periods that earned
    /// one, newest first; needs `sla:read:credits`.
    #[graphql(visible = "holds_credits")]
    async fn credits(&self) -> async_graphql::Result<Vec<PeriodCredit>> {
        let credits = self
            .0
            .credits
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(Scope::SlaReadCredits)))?;
        Ok(credits
            .iter()
            .map(|c| PeriodCredit {
                period_start: c.period_start.to_rfc3339(),
                period_end: c.period_end.to_rfc3339(),
                currency: c.currency.clone(),
                total: c.total.clone(),
                total_minor: c.total_minor,
                credit: c.credit.clone(),
                corrections: c.corrections,
            })
            .collect())
    }
}

/// A closed period's credit as it stands.
#[derive(Debug, SimpleObject)]
struct PeriodCredit {
    period_start: String,
    period_end: String,
    currency: String,
    /// Decimal text in the currency's unit.
    total: String,
    total_minor: i64,
    /// The ledger entry it stands at (`cred_…`).
    credit: String,
    /// How many times a later result corrected it.
    corrections: i32,
}

#[derive(Debug, SimpleObject)]
struct MaintenanceSpan {
    starts_at: String,
    ends_at: String,
}

#[derive(Debug)]
struct DashboardObjective {
    compliance: ObjectiveCompliance,
    minutes: Option<Vec<slaproof_app::dashboard::MinutePoint>>,
    minutes_scope: Scope,
    thresholds: Option<Option<slaproof_app::thresholds::ThresholdView>>,
}

#[Object]
impl DashboardObjective {
    async fn objective(&self) -> &str {
        &self.compliance.objective
    }
    async fn family(&self) -> &'static str {
        family_name(self.compliance.family)
    }
    /// The latest evaluation, as `Sla.compliance` answers it.
    async fn compliance(&self) -> &ObjectiveCompliance {
        &self.compliance
    }
    /// The customer's own alert lines on this objective, for the chart to
    /// draw (null when none are set); needs the family's scope.
    #[graphql(visible = "holds_a_metric")]
    async fn thresholds(&self) -> async_graphql::Result<Option<Threshold>> {
        let lines = self
            .thresholds
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(self.compliance.family.scope())))?;
        Ok(lines.clone().map(Threshold::from))
    }

    /// One point per minute that counted events, oldest first; needs the
    /// family's scope and `sla:read:history`.
    #[graphql(visible = "holds_history")]
    async fn minutes(&self) -> async_graphql::Result<Vec<MinutePoint>> {
        let points = self
            .minutes
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(self.minutes_scope)))?;
        Ok(points
            .iter()
            .map(|p| MinutePoint {
                minute: minute_text(p.minute),
                good: p.good,
                total: p.total,
                ratio_ppm: p.ratio_ppm,
                maintenance: p.maintenance.map(maintenance_name),
            })
            .collect())
    }
}

/// A minute as REST writes it (`2026-11-30T12:34:00Z`).
fn minute_text(minute: DateTime<Utc>) -> String {
    minute.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn maintenance_name(m: MinuteMaintenance) -> &'static str {
    match m {
        MinuteMaintenance::Whole => "whole",
        MinuteMaintenance::Part => "part",
    }
}

#[derive(Debug, SimpleObject)]
struct PercentilePoint {
    /// RFC 3339.
    minute: String,
    latency: Percentiles,
    ttft: Percentiles,
    tpot: Percentiles,
    /// `whole` or `part` when the minute overlaps maintenance.
    maintenance: Option<&'static str>,
}

/// Microseconds, within 1%; null when no event carried the measure.
#[derive(Debug, SimpleObject)]
struct Percentiles {
    count: u64,
    p50_us: Option<u64>,
    p95_us: Option<u64>,
    p99_us: Option<u64>,
}

#[derive(Debug, SimpleObject)]
struct MinutePoint {
    /// RFC 3339.
    minute: String,
    good: i64,
    total: i64,
    ratio_ppm: Option<u32>,
    /// `whole` or `part` when the minute overlaps maintenance.
    maintenance: Option<&'static str>,
}
