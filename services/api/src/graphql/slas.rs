//! SLAs over GraphQL: listing, reading and applying documents, and an SLA's
//! versions, objectives and export. An SLA's versions are `SlaVersion`s,
//! which lead nowhere back to SLAs, so versions cannot nest in versions.

use async_graphql::connection::Connection;
use async_graphql::{Context, Json, Object};
use chrono::Utc;

use slaproof_app::AppError;
use slaproof_app::Scope;
use slaproof_app::compliance::ComplianceView;
use slaproof_app::slas::{
    AppliedView, ApplyOptions, ExportFormat, ObjectiveView, SlaSummaryView, SlaView,
};

use super::audit::AuditRecord;
use super::compliance::{
    Alert, Breach, BudgetStatus, DataState, ObjectiveBudget, ObjectiveCompliance, PeriodResult,
    SeriesPoint,
};
use super::dashboard::{Dashboard, dashboard};
use super::limits::{page_cost, read_cost, unpaged_cost};
use super::maintenance::MaintenanceWindow;
use super::{
    family_name, holds, holds_a_metric, holds_audit, holds_history, holds_maintenance, instant,
    paged, parts, refuse,
};

fn holds_export(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaExport)
}

#[derive(Debug, Default)]
pub(super) struct SlaQuery;

#[Object]
impl SlaQuery {
    /// SLAs the caller may see, by name (a customer's user: its own).
    #[graphql(complexity = "page_cost(first, child_complexity)")]
    async fn slas(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, SlaSummary>> {
        paged(
            ctx,
            (first, after),
            async |app, caller, page| app.list_slas(caller, page).await,
            |it| &it.name,
            SlaSummary,
        )
        .await
    }

    /// One SLA, the version in force unless `version` is given.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn sla(
        &self,
        ctx: &Context<'_>,
        name: String,
        version: Option<i32>,
    ) -> async_graphql::Result<Sla> {
        let (app, caller) = parts(ctx)?;
        let view = app.get_sla(caller, &name, version).await.map_err(refuse)?;
        Ok(Sla(view))
    }
}

#[derive(Debug, Default)]
pub(super) struct SlaMutation;

#[Object]
impl SlaMutation {
    /// Creates an SLA or a new version from a native or OpenSLO document.
    /// OpenSLO SLOs merge into an SLA that exists (each replaces the
    /// objective of its name) unless `replace`; a version that would drop
    /// objectives is refused naming them unless `dropObjectives`.
    async fn apply_sla(
        &self,
        ctx: &Context<'_>,
        document: String,
        replace: Option<bool>,
        drop_objectives: Option<bool>,
    ) -> async_graphql::Result<AppliedSla> {
        let (app, caller) = parts(ctx)?;
        let options = ApplyOptions {
            replace: replace.unwrap_or(false),
            drop_objectives: drop_objectives.unwrap_or(false),
        };
        let applied = app
            .apply_sla(caller, &document, options)
            .await
            .map_err(refuse)?;
        Ok(AppliedSla(applied))
    }

    /// Changes one objective's target as a new version; answers `updated`
    /// or `unchanged`.
    async fn change_target(
        &self,
        ctx: &Context<'_>,
        sla: String,
        objective: String,
        target_ppm: u32,
    ) -> async_graphql::Result<String> {
        let (app, caller) = parts(ctx)?;
        let applied = app
            .change_target(caller, &sla, &objective, target_ppm)
            .await
            .map_err(refuse)?;
        Ok(applied.outcome.to_owned())
    }
}

/// What applying a document did.
#[derive(Debug)]
struct AppliedSla(AppliedView);

#[Object]
impl AppliedSla {
    async fn id(&self) -> String {
        self.0.id.to_string()
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn version(&self) -> i32 {
        self.0.version
    }
    /// `created`, `updated` or `unchanged`.
    async fn outcome(&self) -> &str {
        self.0.outcome
    }
    /// Objectives of the version that was in force which this one no
    /// longer has.
    async fn dropped(&self) -> &[String] {
        &self.0.dropped
    }
    /// RFC 3339: when this version takes effect, if not yet (a contract
    /// change takes effect at the end of the period it was made in).
    async fn takes_effect_at(&self) -> Option<String> {
        self.0.takes_effect_at.map(|t| t.to_rfc3339())
    }
}

#[derive(Debug)]
struct SlaSummary(SlaSummaryView);

#[Object]
impl SlaSummary {
    async fn id(&self) -> String {
        self.0.id.to_string()
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn current_version(&self) -> i32 {
        self.0.current_version
    }
    async fn customer_ref(&self) -> Option<&str> {
        self.0.customer_ref.as_deref()
    }
}

#[derive(Debug)]
struct Sla(SlaView);

#[Object]
impl Sla {
    async fn id(&self) -> String {
        self.0.id.to_string()
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn display_name(&self) -> Option<&str> {
        self.0.display_name.as_deref()
    }
    async fn service(&self) -> &str {
        &self.0.service
    }
    async fn customer_ref(&self) -> Option<&str> {
        self.0.customer_ref.as_deref()
    }
    async fn version(&self) -> i32 {
        self.0.version
    }
    async fn current_version(&self) -> i32 {
        self.0.current_version
    }
    async fn objectives(&self) -> Vec<Objective> {
        self.0.objectives.iter().cloned().map(Objective).collect()
    }

    /// Whether the SLA's service is sending data (no events for the SLA's
    /// `policy.noData.after` is missing data); `null` before the first
    /// evaluation.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn data_state(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<DataState>> {
        let (app, caller) = parts(ctx)?;
        let view = app
            .sla_compliance(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(view.data.map(|d| DataState {
            no_data: d.no_data,
            last_event_at: d.last_event_at.map(|t| t.to_rfc3339()),
            no_data_since: d.no_data_since.map(|t| t.to_rfc3339()),
        }))
    }

    /// Compliance and error budgets now, per objective.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn compliance(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Vec<ObjectiveCompliance>> {
        let (app, caller) = parts(ctx)?;
        let view: ComplianceView = app
            .sla_compliance(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(view
            .objectives
            .into_iter()
            .map(|o| ObjectiveCompliance {
                objective: o.objective,
                family: o.family,
                slice_secs: o.slice_secs,
                numbers: o.numbers,
            })
            .collect())
    }

    /// Remaining budget and burn per objective, as gateways read it.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn budget_status(&self, ctx: &Context<'_>) -> async_graphql::Result<BudgetStatus> {
        let (app, caller) = parts(ctx)?;
        let view = app
            .budget_status(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(BudgetStatus {
            exhausted: view.exhausted,
            degrade_level: view.degrade_level,
            at_risk: view.at_risk,
            objectives: view
                .objectives
                .into_iter()
                .map(|o| ObjectiveBudget {
                    objective: o.objective,
                    budget_remaining: o.budget_remaining,
                    burn_rate_milli: o.burn_rate_milli,
                    exhausted: o.exhausted,
                    at_risk: o.at_risk,
                    degrade_level: o.degrade_level,
                })
                .collect(),
        })
    }

    /// Burn-rate alerts, of the objectives the caller may read.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn alerts(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Alert>> {
        let (app, caller) = parts(ctx)?;
        let view = app.sla_alerts(caller, &self.0.name).await.map_err(refuse)?;
        Ok(view
            .alerts
            .into_iter()
            .map(|a| Alert {
                objective: a.objective,
                rule: a.rule,
                firing: a.firing,
                changed_at: a.changed_at.to_rfc3339(),
                long_burn_milli: a.long_burn_milli,
                short_burn_milli: a.short_burn_milli,
            })
            .collect())
    }

    /// Closed periods, met and not met, in their revision in force, of the
    /// objectives the caller may read: the verdicts credits are paid on.
    #[graphql(complexity = "unpaged_cost(child_complexity)")]
    async fn periods(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<PeriodResult>> {
        let (app, caller) = parts(ctx)?;
        let view = app
            .sla_periods(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(view
            .periods
            .into_iter()
            .map(|p| PeriodResult {
                objective: p.objective,
                period_start: p.period_start.to_rfc3339(),
                period_end: p.period_end.to_rfc3339(),
                version: p.version,
                revision: p.revision,
                target_ppm: p.target_ppm,
                met: p.met,
                compliance_ppm: p.compliance_ppm,
                good: p.good,
                total: p.total,
                excluded: p.excluded,
                late_total: p.late_total,
                late_total_now: p.late_total_now,
                late_good_now: p.late_good_now,
                closed_at: p.closed_at.to_rfc3339(),
            })
            .collect())
    }

    /// Closed periods not met, of the objectives the caller may read.
    #[graphql(complexity = "unpaged_cost(child_complexity)")]
    async fn breaches(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Breach>> {
        let (app, caller) = parts(ctx)?;
        let view = app
            .sla_breaches(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(view
            .breaches
            .into_iter()
            .map(|b| Breach {
                objective: b.objective,
                period_start: b.period_start.to_rfc3339(),
                period_end: b.period_end.to_rfc3339(),
                revision: b.revision,
                target_ppm: b.target_ppm,
                compliance_ppm: b.compliance_ppm,
            })
            .collect())
    }

    /// One objective's budget over the last `hours` (default 24, at most
    /// 2000 points).
    #[graphql(visible = "holds_history", complexity = "read_cost(child_complexity)")]
    async fn series(
        &self,
        ctx: &Context<'_>,
        objective: String,
        hours: Option<i32>,
    ) -> async_graphql::Result<Vec<SeriesPoint>> {
        let (app, caller) = parts(ctx)?;
        let hours = hours.unwrap_or(24);
        if !(1..=24 * 400).contains(&hours) {
            return Err(refuse(AppError::invalid(
                "hours",
                "must be between 1 and 9600",
            )));
        }
        let to = chrono::Utc::now();
        let view = app
            .compliance_series(
                caller,
                &self.0.name,
                &objective,
                to - chrono::Duration::hours(i64::from(hours)),
                to,
            )
            .await
            .map_err(refuse)?;
        Ok(view
            .points
            .into_iter()
            .map(|p| SeriesPoint {
                evaluated_at: p.evaluated_at.to_rfc3339(),
                met: p.met,
                compliance_ppm: p.compliance_ppm,
                budget_remaining: p.budget_remaining,
                burn_rate_milli: p.burn_rate_milli,
            })
            .collect())
    }

    /// Compliance, budgets and the points of `[from, to)` (RFC 3339;
    /// default the last day of minutes; at most 2,880 points of `step`), as
    /// `dashboard` answers.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn dashboard(
        &self,
        ctx: &Context<'_>,
        from: Option<String>,
        to: Option<String>,
        #[graphql(desc = "The width of each point: 1m (default), 5m, 15m, 1h, 6h or 1d")]
        step: Option<String>,
    ) -> async_graphql::Result<Dashboard> {
        dashboard(ctx, &self.0.name, from, to, step).await
    }

    /// Maintenance windows (the SLA's and the tenant-wide ones) overlapping
    /// `[from, to)`, RFC 3339; by default the last 30 days and the next 90.
    #[graphql(
        visible = "holds_maintenance",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn maintenance_windows(
        &self,
        ctx: &Context<'_>,
        from: Option<String>,
        to: Option<String>,
    ) -> async_graphql::Result<Vec<MaintenanceWindow>> {
        let (app, caller) = parts(ctx)?;
        let now = Utc::now();
        let from = instant("from", from)?.unwrap_or(now - chrono::Duration::days(30));
        let to = instant("to", to)?.unwrap_or(now + chrono::Duration::days(90));
        let windows = app
            .sla_windows(caller, &self.0.name, from, to)
            .await
            .map_err(refuse)?;
        Ok(windows.into_iter().map(Into::into).collect())
    }

    /// The verdict audit trail, oldest first: every maintenance window
    /// announced, cancelled or accepted and every version applied, who
    /// did it and when (`sla:read:audit`).
    #[graphql(
        visible = "holds_audit",
        complexity = "page_cost(first, child_complexity)"
    )]
    async fn audit(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, AuditRecord>> {
        let name = self.0.name.clone();
        paged(
            ctx,
            (first, after),
            async |app, caller, page| app.sla_audit(caller, &name, page).await,
            |it| &it.id,
            AuditRecord::from,
        )
        .await
    }

    /// Every version, newest first, as it was applied (what the SLA
    /// measures now is on the SLA itself).
    #[graphql(
        visible = "holds_history",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn versions(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<SlaVersion>> {
        let (app, caller) = parts(ctx)?;
        let versions = app
            .sla_versions(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(versions.into_iter().map(SlaVersion).collect())
    }

    /// The document, `native` or `openslo` YAML.
    #[graphql(visible = "holds_export", complexity = "read_cost(child_complexity)")]
    async fn export(
        &self,
        ctx: &Context<'_>,
        openslo: Option<bool>,
    ) -> async_graphql::Result<String> {
        let (app, caller) = parts(ctx)?;
        let format = if openslo.unwrap_or(false) {
            ExportFormat::OpenSlo
        } else {
            ExportFormat::Native
        };
        app.export_sla(caller, &self.0.name, None, format)
            .await
            .map_err(refuse)
    }
}

/// One version of an SLA as it was applied: its service, customer and
/// objectives. It reads nothing and leads back to no SLA.
#[derive(Debug)]
struct SlaVersion(SlaView);

#[Object]
impl SlaVersion {
    async fn version(&self) -> i32 {
        self.0.version
    }
    async fn display_name(&self) -> Option<&str> {
        self.0.display_name.as_deref()
    }
    async fn service(&self) -> &str {
        &self.0.service
    }
    /// The customer this version was for.
    async fn customer_ref(&self) -> Option<&str> {
        self.0.customer_ref.as_deref()
    }
    async fn objectives(&self) -> Vec<Objective> {
        self.0.objectives.iter().cloned().map(Objective).collect()
    }
}

#[derive(Debug)]
struct Objective(ObjectiveView);

#[Object]
impl Objective {
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn display_name(&self) -> Option<&str> {
        self.0.display_name.as_deref()
    }
    /// `uptime` or `latency`: which scope reads this objective's numbers.
    async fn family(&self) -> &'static str {
        family_name(self.0.family)
    }
    async fn kind(&self) -> &'static str {
        self.0.kind
    }
    /// Needs the scope of the objective's family.
    #[graphql(visible = "holds_a_metric")]
    async fn target_ppm(&self) -> async_graphql::Result<u32> {
        self.0
            .target_ppm
            .ok_or_else(|| refuse(AppError::MissingScope(self.0.family.scope())))
    }
    /// The objective as in the native document; needs the family's scope.
    #[graphql(visible = "holds_a_metric")]
    async fn definition(&self) -> async_graphql::Result<Json<serde_json::Value>> {
        self.0
            .definition
            .clone()
            .map(Json)
            .ok_or_else(|| refuse(AppError::MissingScope(self.0.family.scope())))
    }
}
