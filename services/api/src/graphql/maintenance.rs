//! Maintenance windows over GraphQL: planning and cancelling them (an
//! SLA's windows are read through `Sla.maintenanceWindows`).

use async_graphql::{Context, Object, SimpleObject};
use chrono::{DateTime, Utc};

use slaproof_app::AppError;

use super::{instant, parts, refuse};

#[derive(Debug, Default)]
pub(super) struct MaintenanceMutation;

#[Object]
impl MaintenanceMutation {
    /// Plans a maintenance window for one SLA (by name) or, without
    /// `sla`, every SLA of the tenant; times in RFC 3339.
    async fn create_maintenance_window(
        &self,
        ctx: &Context<'_>,
        sla: Option<String>,
        starts_at: String,
        ends_at: String,
        description: String,
    ) -> async_graphql::Result<MaintenanceWindow> {
        let (app, caller) = parts(ctx)?;
        let window = slaproof_app::maintenance::NewWindow {
            sla,
            starts_at: required_instant("startsAt", starts_at)?,
            ends_at: required_instant("endsAt", ends_at)?,
            description,
        };
        let created = app.create_window(caller, window).await.map_err(refuse)?;
        Ok(created.into())
    }

    /// Cancels a maintenance window (`mw_…`); it stays on record.
    async fn cancel_maintenance_window(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<MaintenanceWindow> {
        let (app, caller) = parts(ctx)?;
        let id = id.parse().map_err(|_| {
            refuse(AppError::NotFound {
                what: "maintenance window",
                key: id.clone(),
            })
        })?;
        let cancelled = app.cancel_window(caller, id).await.map_err(refuse)?;
        Ok(cancelled.into())
    }
}

fn required_instant(field: &str, text: String) -> async_graphql::Result<DateTime<Utc>> {
    Ok(instant(field, Some(text))?.unwrap_or_else(Utc::now))
}

#[derive(Debug, SimpleObject)]
pub(super) struct MaintenanceWindow {
    /// `mw_…`.
    id: String,
    /// `sla_…`; absent for a tenant-wide window.
    sla: Option<String>,
    /// RFC 3339.
    starts_at: String,
    ends_at: String,
    description: String,
    cancelled_at: Option<String>,
}

impl From<slaproof_app::maintenance::StoredMaintenanceWindow> for MaintenanceWindow {
    fn from(w: slaproof_app::maintenance::StoredMaintenanceWindow) -> Self {
        Self {
            id: w.id.to_string(),
            sla: w.sla.map(|s| s.to_string()),
            starts_at: w.starts_at.to_rfc3339(),
            ends_at: w.ends_at.to_rfc3339(),
            description: w.description,
            cancelled_at: w.cancelled_at.map(|t| t.to_rfc3339()),
        }
    }
}
