//! Compliance over time, burn-rate alerts and breaches of an SLA, each
//! objective's rows shown only with the scope of its family.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use slaproof_store::evaluations::{self, AlertView, BreachView, PeriodResultView, SeriesPoint};

use crate::authz::Scope;
use crate::slas::Family;
use crate::{App, AppError, Caller, Redaction};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SeriesView {
    pub sla: String,
    pub objective: String,
    pub points: Vec<SeriesPoint>,
    /// True when the range held more than `MAX_POINTS` evaluations and the
    /// newest were answered.
    pub truncated: bool,
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct PeriodsView {
    pub sla: String,
    pub periods: Vec<PeriodResultView>,
    pub redacted: Vec<Redaction>,
}

impl App {
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
    ) -> Result<SeriesView, AppError> {
        caller.require(Scope::SlaReadHistory)?;
        check_history_range(from, to)?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let readable = self
            .readable_versions(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        let found = stored
            .definition
            .objective(objective)
            .ok_or_else(|| AppError::NotFound {
                what: "objective",
                key: objective.to_owned(),
            })?;
        caller.require(Family::of(found).scope())?;
        let (points, truncated) =
            evaluations::series(&mut tx, stored.id, readable.as_deref(), objective, from, to)
                .await?;
        tx.commit().await?;
        Ok(SeriesView {
            sla: name.to_owned(),
            objective: objective.to_owned(),
            points,
            truncated,
        })
    }

    /// The burn-rate alerts of an SLA; those of objectives whose family the
    /// caller may not read are left out and named in `redacted`. A
    /// customer's user sees the states set under its own customer's
    /// versions only (after the SLA moved from another customer, not the
    /// alerts that customer's traffic set off).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_alerts(&self, caller: &Caller, name: &str) -> Result<AlertsView, AppError> {
        caller.require(Scope::AlertRead)?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let readable = self
            .readable_versions(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        let rows = evaluations::alert_states(&mut tx, stored.id, readable.as_deref()).await?;
        tx.commit().await?;
        let (alerts, redacted) =
            by_family(caller, &stored.definition, rows, |a| &a.objective, "alerts");
        Ok(AlertsView {
            sla: name.to_owned(),
            alerts,
            redacted,
        })
    }

    /// Closed periods, met and not met, each in its revision in force: the
    /// verdicts credits are paid on.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_periods(&self, caller: &Caller, name: &str) -> Result<PeriodsView, AppError> {
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let readable = self
            .readable_versions(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        let rows = evaluations::period_results(&mut tx, stored.id, readable.as_deref()).await?;
        tx.commit().await?;
        let (periods, redacted) = by_family(
            caller,
            &stored.definition,
            rows,
            |p| &p.objective,
            "periods",
        );
        Ok(PeriodsView {
            sla: name.to_owned(),
            periods,
            redacted,
        })
    }

    /// Closed periods not met, each in its revision in force.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_breaches(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<BreachesView, AppError> {
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let readable = self
            .readable_versions(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        let rows = evaluations::breaches(&mut tx, stored.id, readable.as_deref()).await?;
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

/// The longest range a history read answers.
pub(crate) const MAX_HISTORY_DAYS: i64 = 400;

/// A range `[from, to)` a history read may be asked for: not empty, at
/// most [`MAX_HISTORY_DAYS`].
pub(crate) fn check_history_range(from: DateTime<Utc>, to: DateTime<Utc>) -> Result<(), AppError> {
    crate::check_instants(&[("from", Some(from)), ("to", Some(to))])?;
    if to <= from || to - from > Duration::days(MAX_HISTORY_DAYS) {
        return Err(AppError::invalid(
            "to",
            format!("must be after from, within {MAX_HISTORY_DAYS} days"),
        ));
    }
    Ok(())
}
