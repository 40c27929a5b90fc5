//! Maintenance windows over GraphQL: announcing and cancelling them, and a
//! customer's acceptance of an emergency window (an SLA's windows are read
//! through `Sla.maintenanceWindows`).

use async_graphql::{Context, Object, SimpleObject};
use chrono::{DateTime, Utc};

use slaproof_app::AppError;

use super::{instant, parts, refuse};

#[derive(Debug, Default)]
pub(super) struct MaintenanceMutation;

#[Object]
impl MaintenanceMutation {
    /// Announces a maintenance window for one SLA (by name) or, without
    /// `sla`, every SLA of the tenant; times in RFC 3339. Planned for each
    /// SLA whose notice it meets, an emergency for the others (`slas`).
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

    /// The SLA's customer accepts an emergency (or beyond-cap) window
    /// (`mw_…`) for the SLA `sla`: it is then excluded whole. Needs
    /// `maintenance:accept`, a customer's users' only.
    async fn accept_maintenance_window(
        &self,
        ctx: &Context<'_>,
        sla: String,
        id: String,
    ) -> async_graphql::Result<MaintenanceWindow> {
        let (app, caller) = parts(ctx)?;
        let id = id.parse().map_err(|_| {
            refuse(AppError::NotFound {
                what: "maintenance window",
                key: id.clone(),
            })
        })?;
        let accepted = app.accept_window(caller, &sla, id).await.map_err(refuse)?;
        Ok(accepted.into())
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
    /// When it was announced: its notice is judged from this.
    created_at: String,
    /// Who announced it (the subject of the caller's token).
    created_by: String,
    cancelled_at: Option<String>,
    cancelled_by: Option<String>,
    /// How it stands for the SLA it was read, accepted or cancelled for:
    /// `planned`, `beyond_cap`, `proposed`, `emergency`, `accepted` or `cancelled`;
    /// absent for a tenant-wide window just announced (see `slas`).
    status: Option<String>,
    /// When and by whom the SLA's customer accepted it.
    accepted_at: Option<String>,
    accepted_by: Option<String>,
    /// When announced or cancelled: how it stands for each SLA it covers.
    slas: Vec<MaintenanceSla>,
}

/// How a window stands for one SLA it covers.
#[derive(Debug, SimpleObject)]
pub(super) struct MaintenanceSla {
    /// `sla_…`.
    sla: String,
    name: String,
    status: String,
}

impl From<slaproof_app::maintenance::WindowView> for MaintenanceWindow {
    fn from(v: slaproof_app::maintenance::WindowView) -> Self {
        let w = v.window;
        Self {
            id: w.id.to_string(),
            sla: w.sla.map(|s| s.to_string()),
            starts_at: w.starts_at.to_rfc3339(),
            ends_at: w.ends_at.to_rfc3339(),
            description: w.description,
            created_at: w.created_at.to_rfc3339(),
            created_by: w.created_by,
            cancelled_at: w.cancelled_at.map(|t| t.to_rfc3339()),
            cancelled_by: w.cancelled_by,
            status: v.standing.map(|s| s.as_str().to_owned()),
            accepted_at: v.acceptance.as_ref().map(|a| a.accepted_at.to_rfc3339()),
            accepted_by: v.acceptance.map(|a| a.accepted_by),
            slas: v
                .slas
                .into_iter()
                .map(|s| MaintenanceSla {
                    sla: s.sla.to_string(),
                    name: s.name,
                    status: s.standing.as_str().to_owned(),
                })
                .collect(),
        }
    }
}
