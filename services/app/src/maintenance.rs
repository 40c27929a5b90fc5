//! Maintenance windows: planned downtime excluded from every SLI it covers.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::MaintenanceWindowId;
use slaproof_domain::maintenance::MaintenanceWindow;
use slaproof_store::maintenance;
pub use slaproof_store::maintenance::StoredMaintenanceWindow;
use slaproof_store::{TenantTx, slas};

use crate::authz::Scope;
use crate::idempotency::Creating;
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

impl App {
    pub async fn create_window(
        &self,
        caller: &Caller,
        new: NewWindow,
    ) -> Result<StoredMaintenanceWindow, AppError> {
        self.in_tx(caller, async |tx| {
            self.create_window_in(tx, caller, new).await
        })
        .await
    }

    /// [`App::create_window`] inside a transaction of the caller's tenant
    /// (see [`App::once`]).
    #[tracing::instrument(skip(self, tx, caller), fields(tenant = %caller.tenant()))]
    pub async fn create_window_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        new: NewWindow,
    ) -> Result<StoredMaintenanceWindow, AppError> {
        Creating::MAINTENANCE_WINDOW.require(caller)?;
        let window = MaintenanceWindow::new(new.starts_at, new.ends_at, &new.description)
            .map_err(|e| AppError::invalid(e.field(), e.rule()))?;
        let sla = match &new.sla {
            Some(name) => Some(slas::find(tx, name, None).await?.id),
            None => None,
        };
        Ok(maintenance::create(
            tx,
            sla,
            window.starts_at(),
            window.ends_at(),
            window.description(),
        )
        .await?)
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
        crate::history::check_history_range(from, to)?;
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
