//! Maintenance windows: planned downtime excluded from every SLI it covers.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::MaintenanceWindowId;
use slaproof_store::maintenance;
pub use slaproof_store::maintenance::StoredMaintenanceWindow;
use slaproof_store::slas;

use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// A window to plan.
#[derive(Debug, Clone)]
pub struct NewWindow {
    /// The SLA it applies to by name; `None`: every SLA of the tenant.
    pub sla: Option<String>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub description: String,
}

/// The longest window accepted: a "maintenance" longer than this is an
/// outage being hidden.
pub const MAX_WINDOW_DAYS: i64 = 7;

impl App {
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn create_window(
        &self,
        caller: &Caller,
        new: NewWindow,
    ) -> Result<StoredMaintenanceWindow, AppError> {
        caller.require_provider(Scope::MaintenanceWrite)?;
        if new.ends_at <= new.starts_at {
            return Err(AppError::invalid("ends_at", "must be after starts_at"));
        }
        if new.ends_at - new.starts_at > Duration::days(MAX_WINDOW_DAYS) {
            return Err(AppError::invalid(
                "ends_at",
                format!("a window may last at most {MAX_WINDOW_DAYS} days"),
            ));
        }
        let description = new.description.trim();
        if description.is_empty() || description.chars().count() > 1000 {
            return Err(AppError::invalid(
                "description",
                "must be 1-1000 characters",
            ));
        }
        let mut tx = self.tx(caller).await?;
        let sla = match &new.sla {
            Some(name) => Some(slas::find(&mut tx, name, None).await?.id),
            None => None,
        };
        let window =
            maintenance::create(&mut tx, sla, new.starts_at, new.ends_at, description).await?;
        tx.commit().await?;
        Ok(window)
    }

    /// Windows of one SLA (its own and the tenant-wide ones) overlapping
    /// `[from, to)`; a customer's user sees those of its own SLAs.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_windows(
        &self,
        caller: &Caller,
        name: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<StoredMaintenanceWindow>, AppError> {
        caller.require(Scope::MaintenanceRead)?;
        if to <= from || to - from > Duration::days(400) {
            return Err(AppError::invalid(
                "to",
                "must be after from, within 400 days",
            ));
        }
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let windows = maintenance::overlapping(&mut tx, stored.id, from, to).await?;
        tx.commit().await?;
        Ok(windows)
    }

    /// Cancels a window; the row stays so that past evaluations remain
    /// explainable.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn cancel_window(
        &self,
        caller: &Caller,
        id: MaintenanceWindowId,
    ) -> Result<StoredMaintenanceWindow, AppError> {
        caller.require_provider(Scope::MaintenanceWrite)?;
        let mut tx = self.tx(caller).await?;
        let window = maintenance::cancel(&mut tx, id).await?;
        tx.commit().await?;
        Ok(window)
    }
}
