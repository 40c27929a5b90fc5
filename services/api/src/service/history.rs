//! Compliance over time, burn-rate alerts and breaches of an SLA, read from
//! the evaluator's append-only tables (its crate has no read API for them
//! yet; these queries only read, under the caller's tenant).

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use slaproof_store::StoreError;

use super::slas::Family;
use super::{Caller, Redaction, Service, ServiceError};
use crate::authz::Scope;

/// Most points one series answers.
pub const MAX_POINTS: i64 = 2000;

/// One evaluation of one objective.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct SeriesPoint {
    pub evaluated_at: DateTime<Utc>,
    pub as_of: DateTime<Utc>,
    pub met: bool,
    pub compliance_ppm: Option<i32>,
    pub budget_remaining: i64,
    pub burn_rate_milli: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SeriesView {
    pub sla: String,
    pub objective: String,
    pub points: Vec<SeriesPoint>,
    /// True when the range held more than `MAX_POINTS` evaluations and the
    /// newest were answered.
    pub truncated: bool,
}

/// A multiwindow burn-rate alert's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AlertView {
    pub objective: String,
    /// `page-1h`, `page-6h` or `ticket-3d`.
    pub rule: String,
    pub firing: bool,
    pub changed_at: DateTime<Utc>,
    pub evaluated_at: DateTime<Utc>,
    pub long_burn_milli: i64,
    pub short_burn_milli: i64,
}

/// A closed period whose objective was not met, in its revision in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct BreachView {
    pub objective: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub revision: i32,
    pub target_ppm: i32,
    pub compliance_ppm: Option<i32>,
    pub good: i64,
    pub total: i64,
    pub closed_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AlertsView {
    pub sla: String,
    pub alerts: Vec<AlertView>,
    pub redacted: Vec<Redaction>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BreachesView {
    pub sla: String,
    pub breaches: Vec<BreachView>,
    pub redacted: Vec<Redaction>,
}

impl Service {
    /// Budget and compliance of one objective over `[from, to)`: history,
    /// so `sla:read:history` and the objective's family scope.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn compliance_series(
        &self,
        caller: &Caller,
        name: &str,
        objective: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<SeriesView, ServiceError> {
        caller.require(Scope::SlaReadHistory)?;
        if to <= from || to - from > Duration::days(400) {
            return Err(ServiceError::invalid(
                "to",
                "must be after from, within 400 days",
            ));
        }
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let found =
            stored
                .definition
                .objective(objective)
                .ok_or_else(|| ServiceError::NotFound {
                    what: "objective",
                    key: objective.to_owned(),
                })?;
        caller.require(Family::of(found).scope())?;
        let mut points: Vec<SeriesPoint> = sqlx::query_as(
            "SELECT evaluated_at, as_of, met, compliance_ppm, budget_remaining, burn_rate_milli \
             FROM evaluations WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3 \
               AND evaluated_at >= $4 AND evaluated_at < $5 \
             ORDER BY evaluated_at DESC, id DESC LIMIT $6",
        )
        .bind(caller.tenant().uuid())
        .bind(stored.id.uuid())
        .bind(objective)
        .bind(from)
        .bind(to)
        .bind(MAX_POINTS + 1)
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::from)?;
        tx.commit().await?;
        let truncated = points.len() as i64 > MAX_POINTS;
        points.truncate(MAX_POINTS as usize);
        points.reverse();
        Ok(SeriesView {
            sla: name.to_owned(),
            objective: objective.to_owned(),
            points,
            truncated,
        })
    }

    /// The burn-rate alerts of an SLA; those of objectives whose family the
    /// caller may not read are left out and named in `redacted`.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_alerts(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<AlertsView, ServiceError> {
        caller.require(Scope::AlertRead)?;
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let rows: Vec<AlertView> = sqlx::query_as(
            "SELECT objective, rule, firing, changed_at, evaluated_at, long_burn_milli, short_burn_milli \
             FROM alert_states WHERE tenant_id = $1 AND sla_id = $2 ORDER BY objective, rule",
        )
        .bind(caller.tenant().uuid())
        .bind(stored.id.uuid())
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::from)?;
        tx.commit().await?;
        let (alerts, redacted) =
            by_family(caller, &stored.definition, rows, |a| &a.objective, "alerts");
        Ok(AlertsView {
            sla: name.to_owned(),
            alerts,
            redacted,
        })
    }

    /// Closed periods not met, each in its revision in force.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_breaches(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<BreachesView, ServiceError> {
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let rows: Vec<BreachView> = sqlx::query_as(
            "SELECT objective, period_start, period_end, revision, target_ppm, compliance_ppm, good, total, closed_at \
             FROM (SELECT DISTINCT ON (objective, period_start) * FROM period_results \
                   WHERE tenant_id = $1 AND sla_id = $2 \
                   ORDER BY objective, period_start, revision DESC) AS in_force \
             WHERE NOT met ORDER BY period_start DESC, objective",
        )
        .bind(caller.tenant().uuid())
        .bind(stored.id.uuid())
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::from)?;
        tx.commit().await?;
        let (breaches, redacted) = by_family(
            caller,
            &stored.definition,
            rows,
            |b| &b.objective,
            "breaches",
        );
        Ok(BreachesView {
            sla: name.to_owned(),
            breaches,
            redacted,
        })
    }
}

/// Keeps the rows of objectives the caller may read and names the others.
fn by_family<T>(
    caller: &Caller,
    definition: &slaproof_domain::sla::SlaDefinition,
    rows: Vec<T>,
    objective: impl Fn(&T) -> &String,
    list: &str,
) -> (Vec<T>, Vec<Redaction>) {
    let mut redacted: Vec<Redaction> = Vec::new();
    let kept = rows
        .into_iter()
        .filter(|row| {
            let name = objective(row);
            let scope = definition
                .objective(name)
                .map(|o| Family::of(o).scope())
                // An objective of an older version: the strictest reading.
                .unwrap_or(Scope::SlaReadHistory);
            if caller.has(scope) {
                return true;
            }
            let field = format!("{list}[{name}]");
            if !redacted.iter().any(|r| r.field == field) {
                redacted.push(Redaction {
                    field,
                    scope: scope.as_str(),
                });
            }
            false
        })
        .collect();
    (kept, redacted)
}
