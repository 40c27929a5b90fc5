//! Maintenance windows: proposed by the provider, excluded from an SLA's measurement only with its customer's agreement (inside the schedule the SLA states, with its notice and within its cap, or accepted window by window); every change told through the outbox and kept on the SLA's audit trail.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use slaproof_domain::ids::{MaintenanceWindowId, SlaId};
use slaproof_domain::maintenance::{MaintenanceWindow, Standing};
use slaproof_domain::window::TimeWindow;
use slaproof_store::maintenance::{self, Announcement};
pub use slaproof_store::maintenance::{Acceptance, StoredMaintenanceWindow};
use slaproof_store::slas::StoredSla;
use slaproof_store::{TenantTx, outbox, slas};

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

/// How a window stands for one SLA it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaStanding {
    pub sla: SlaId,
    pub name: String,
    pub standing: Standing,
}

/// A window as an operation answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowView {
    pub window: StoredMaintenanceWindow,
    /// How it stands for the SLA it was read, accepted or cancelled for,
    /// or for its one SLA when announced; `None` for a tenant-wide window
    /// just announced (see `slas`).
    pub standing: Option<Standing>,
    /// The customer's acceptance for that SLA.
    pub acceptance: Option<Acceptance>,
    /// When announced or cancelled: how it stands for each SLA it covers.
    pub slas: Vec<SlaStanding>,
}

impl WindowView {
    fn of(window: StoredMaintenanceWindow) -> Self {
        Self {
            window,
            standing: None,
            acceptance: None,
            slas: Vec::new(),
        }
    }
}

impl App {
    pub async fn create_window(
        &self,
        caller: &Caller,
        new: NewWindow,
    ) -> Result<WindowView, AppError> {
        self.in_tx(caller, async |tx| {
            self.create_window_in(tx, caller, new).await
        })
        .await
    }

    /// [`App::create_window`] inside a transaction of the caller's tenant
    /// (see [`App::once`]). Announced now, by the caller: for each SLA,
    /// planned when inside its schedule with its notice, proposed when
    /// outside the schedule, an emergency without the notice. Tells
    /// `maintenance.scheduled` and records `maintenance.created` on each
    /// SLA's audit trail.
    #[tracing::instrument(skip(self, tx, caller), fields(tenant = %caller.tenant()))]
    pub async fn create_window_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        new: NewWindow,
    ) -> Result<WindowView, AppError> {
        Creating::MAINTENANCE_WINDOW.require(caller)?;
        let window = MaintenanceWindow::new(new.starts_at, new.ends_at, &new.description)
            .map_err(|e| AppError::invalid(e.field(), e.rule()))?;
        let covered = match &new.sla {
            Some(name) => vec![slas::find(tx, name, None).await?],
            None => covered_slas(tx, None).await?,
        };
        let stored = maintenance::create(
            tx,
            &Announcement {
                sla: new.sla.as_ref().and(covered.first()).map(|s| s.id),
                starts_at: window.starts_at(),
                ends_at: window.ends_at(),
                description: window.description(),
                by: &caller.principal.subject,
                at: None,
            },
        )
        .await?;
        let mut view = WindowView::of(stored);
        for sla in &covered {
            let (standing, _) = standing_of(tx, &view.window, sla).await?;
            let policy = &sla.definition.policy.maintenance;
            let details = json!({
                "window": view.window.id.to_string(),
                "starts_at": view.window.starts_at,
                "ends_at": view.window.ends_at,
                "description": view.window.description,
                "announced_at": view.window.created_at,
                "status": standing.as_str(),
                "notice": policy.notice.to_string(),
                "max_per_period": policy.max_per_period.map(|s| s.to_string()),
                "schedule": policy.schedule.iter().map(ToString::to_string).collect::<Vec<_>>(),
            });
            crate::audit::record(tx, caller, sla.id, "maintenance.created", &details).await?;
            view.slas.push(SlaStanding {
                sla: sla.id,
                name: sla.definition.name.as_str().to_owned(),
                standing,
            });
        }
        if view.window.sla.is_some() {
            view.standing = view.slas.first().map(|s| s.standing);
        }
        let mut payload = told(&view.window, &view.slas);
        payload["announced_at"] = json!(view.window.created_at);
        payload["announced_by"] = json!(view.window.created_by);
        outbox::enqueue(tx, "maintenance.scheduled", &payload).await?;
        Ok(view)
    }

    /// Windows of one SLA (its own and the tenant-wide ones) overlapping
    /// `[from, to)`, each with how it stands for the SLA; a customer's
    /// user sees those of its own SLAs.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_windows(
        &self,
        caller: &Caller,
        name: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<WindowView>, AppError> {
        caller.require(Scope::MaintenanceRead)?;
        crate::history::check_history_range(from, to)?;
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let windows = maintenance::judged(&mut tx, stored.id, &stored.definition, from, to).await?;
        tx.commit().await?;
        Ok(windows
            .into_iter()
            .map(|j| WindowView {
                window: j.window,
                standing: Some(j.standing),
                acceptance: j.acceptance,
                slas: Vec::new(),
            })
            .collect())
    }

    /// Cancels a window, recording who did; the row stays so that past
    /// evaluations remain explainable. Tells `maintenance.cancelled` and
    /// records `maintenance.cancelled` on each covered SLA's audit trail;
    /// cancelling again changes nothing. A window that has started is not
    /// cancelled (409): once under way it is part of the periods it covers,
    /// and cancelling it would move their verdicts and credits after the
    /// fact (a window over the cap would free the cap for another).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn cancel_window(
        &self,
        caller: &Caller,
        id: MaintenanceWindowId,
    ) -> Result<WindowView, AppError> {
        caller.require_provider(Scope::MaintenanceWrite)?;
        let mut tx = self.tx(caller).await?;
        let before = maintenance::find(&mut tx, id).await?;
        if before.cancelled_at.is_none() && before.starts_at <= Utc::now() {
            return Err(AppError::Conflict(format!(
                "the maintenance window started at {}: a window is cancelled only before it starts, as its periods are judged with it",
                before
                    .starts_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )));
        }
        let covered = covered_slas(&mut tx, before.sla).await?;
        let mut was = Vec::new();
        if before.cancelled_at.is_none() {
            for sla in &covered {
                was.push(standing_of(&mut tx, &before, sla).await?.0);
            }
        }
        let window = maintenance::cancel(&mut tx, id, &caller.principal.subject).await?;
        let slas: Vec<SlaStanding> = covered
            .iter()
            .map(|s| SlaStanding {
                sla: s.id,
                name: s.definition.name.as_str().to_owned(),
                standing: Standing::Cancelled,
            })
            .collect();
        // Cancelled before: nothing changed, nothing to tell.
        if before.cancelled_at.is_none() {
            for (sla, was) in covered.iter().zip(&was) {
                let details = json!({
                    "window": window.id.to_string(),
                    "starts_at": window.starts_at,
                    "ends_at": window.ends_at,
                    "was": was.as_str(),
                });
                crate::audit::record(&mut tx, caller, sla.id, "maintenance.cancelled", &details)
                    .await?;
            }
            let mut payload = told(&window, &slas);
            payload["cancelled_at"] = json!(window.cancelled_at);
            payload["cancelled_by"] = json!(window.cancelled_by);
            outbox::enqueue(&mut tx, "maintenance.cancelled", &payload).await?;
        }
        tx.commit().await?;
        Ok(WindowView {
            standing: Some(Standing::Cancelled),
            slas,
            ..WindowView::of(window)
        })
    }

    /// The customer of the SLA `sla` accepts the window `id` for it: a
    /// proposed or emergency window (or one beyond the cap) is then
    /// excluded whole. Only a customer's user gives that agreement
    /// (`maintenance:accept`): a provider's caller is refused whatever its
    /// roles, an embed token never holds the scope. A planned window (the
    /// customer agreed to it in the SLA's schedule) needs none (409), nor
    /// can a window reaching into a period past its settlement horizon
    /// (409: that period is final), a
    /// cancelled one cannot get it (409), accepting again answers the first
    /// acceptance. Tells `maintenance.accepted` and records it on the SLA's
    /// audit trail.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn accept_window(
        &self,
        caller: &Caller,
        sla: &str,
        id: MaintenanceWindowId,
    ) -> Result<WindowView, AppError> {
        caller.require(Scope::MaintenanceAccept)?;
        let Some(customer) = caller.customer() else {
            return Err(AppError::MissingScope(Scope::MaintenanceAccept));
        };
        if caller.principal.embed.is_some() {
            return Err(AppError::MissingScope(Scope::MaintenanceAccept));
        }
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, sla, None).await?;
        let window = maintenance::find(&mut tx, id).await?;
        if window.sla.is_some_and(|s| s != stored.id) {
            return Err(AppError::NotFound {
                what: "maintenance window",
                key: id.to_string(),
            });
        }
        if window.cancelled_at.is_some() {
            return Err(AppError::Conflict(
                "the maintenance window was cancelled: there is nothing to accept".to_owned(),
            ));
        }
        refuse_final(&stored, &window, Utc::now())?;
        let (was, acceptance) = standing_of(&mut tx, &window, &stored).await?;
        if was == Standing::Planned {
            return Err(AppError::Conflict(
                "the maintenance window is planned (inside the SLA's maintenance schedule, announced with its notice, within its cap): it is excluded without acceptance".to_owned(),
            ));
        }
        let acceptance = match acceptance {
            Some(first) => first,
            None => {
                let acceptance = maintenance::accept(
                    &mut tx,
                    id,
                    stored.id,
                    Some(customer),
                    &caller.principal.subject,
                )
                .await?;
                let details = json!({
                    "window": window.id.to_string(),
                    "starts_at": window.starts_at,
                    "ends_at": window.ends_at,
                    "was": was.as_str(),
                });
                crate::audit::record(&mut tx, caller, stored.id, "maintenance.accepted", &details)
                    .await?;
                let slas = [SlaStanding {
                    sla: stored.id,
                    name: stored.definition.name.as_str().to_owned(),
                    standing: Standing::Accepted,
                }];
                let mut payload = told(&window, &slas);
                payload["was"] = json!(was.as_str());
                payload["accepted_at"] = json!(acceptance.accepted_at);
                payload["accepted_by"] = json!(acceptance.accepted_by);
                payload["customer"] = json!(customer.to_string());
                outbox::enqueue(&mut tx, "maintenance.accepted", &payload).await?;
                acceptance
            }
        };
        tx.commit().await?;
        Ok(WindowView {
            standing: Some(Standing::Accepted),
            acceptance: Some(acceptance),
            ..WindowView::of(window)
        })
    }
}

/// Refuses an agreement about `window` that would move a final period of
/// `sla`: one that ended its settlement horizon (`spec.policy.settlement`)
/// ago. Its verdict and credit were told and settled; an acceptance years
/// later must not re-judge it.
fn refuse_final(
    sla: &StoredSla,
    window: &StoredMaintenanceWindow,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let definition = &sla.definition;
    if !matches!(definition.window, TimeWindow::Calendar { .. }) {
        return Ok(());
    }
    let first = definition.window.period_containing(window.starts_at);
    if definition.policy.final_at(first.end) <= now {
        let text = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        return Err(AppError::Conflict(format!(
            "the maintenance window reaches into the period from {} to {}, final since {} ({} after it ended, the SLA's settlement): its verdict and credit no longer change",
            text(first.start),
            text(first.end),
            text(definition.policy.final_at(first.end)),
            definition.policy.settlement
        )));
    }
    Ok(())
}

/// The SLAs a window for `sla` covers (`None`: every SLA of the tenant),
/// each in the version in force.
async fn covered_slas(tx: &mut TenantTx, sla: Option<SlaId>) -> Result<Vec<StoredSla>, AppError> {
    let mut covered = Vec::new();
    for summary in slas::list(tx).await? {
        if sla.is_none_or(|id| id == summary.id) {
            covered.push(slas::find(tx, &summary.name, None).await?);
        }
    }
    Ok(covered)
}

/// How a window (not cancelled) stands for an SLA now, and the SLA's
/// customer's acceptance of it.
async fn standing_of(
    tx: &mut TenantTx,
    window: &StoredMaintenanceWindow,
    sla: &StoredSla,
) -> Result<(Standing, Option<Acceptance>), AppError> {
    let judged = maintenance::judged(
        tx,
        sla.id,
        &sla.definition,
        window.starts_at,
        window.ends_at,
    )
    .await?;
    Ok(judged
        .into_iter()
        .find(|j| j.window.id == window.id)
        .map_or((Standing::Cancelled, None), |j| (j.standing, j.acceptance)))
}

/// What the outbox tells about a window: its id, its SLA (absent: every
/// SLA), each SLA covered with how the window stands for it, its times
/// and description.
fn told(window: &StoredMaintenanceWindow, slas: &[SlaStanding]) -> Value {
    json!({
        "window": window.id.to_string(),
        "sla": window.sla.map(|s| s.to_string()),
        "slas": slas
            .iter()
            .map(|s| json!({ "sla": s.sla.to_string(), "name": s.name, "status": s.standing.as_str() }))
            .collect::<Vec<_>>(),
        "starts_at": window.starts_at,
        "ends_at": window.ends_at,
        "description": window.description,
    })
}
