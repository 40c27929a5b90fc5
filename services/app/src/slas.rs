//! SLAs: documents in, views out, each objective shown only to callers
//! holding the scope of its metric family, and a customer's users confined
//! to that customer's SLAs.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::CreditPolicy;
use slaproof_domain::ids::SlaId;
use slaproof_domain::objective::{MeasuredField, Objective, Sli, SliceIndicator};
use slaproof_domain::sla::{DocumentFormat, SlaDefinition};
use slaproof_store::slas::{self, Applied, StoredSla};
use slaproof_store::{TenantTx, customers};

use crate::authz::Scope;
use crate::idempotency::Creating;
pub use crate::sla_apply::{ApplyOptions, ReadDocument};
use crate::sla_apply::{NextVersion, next_version};
use crate::{App, AppError, Caller, Page, PageRequest, Redaction};

/// The metric family of an objective, which decides the scope that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Success ratios, available minutes, gauges: `sla:read:uptime`.
    Uptime,
    /// Latency, time to first token, time per output token: `sla:read:latency`.
    Latency,
}

impl Family {
    pub fn of(objective: &Objective) -> Family {
        let latency = |field: &MeasuredField| {
            matches!(
                field,
                MeasuredField::Latency | MeasuredField::Ttft | MeasuredField::Tpot
            )
        };
        match &objective.sli {
            Sli::Threshold(t) if latency(&t.field) => Family::Latency,
            Sli::TimeSlices(t) => match &t.indicator {
                SliceIndicator::Threshold(th) if latency(&th.field) => Family::Latency,
                _ => Family::Uptime,
            },
            _ => Family::Uptime,
        }
    }

    pub fn scope(self) -> Scope {
        match self {
            Family::Uptime => Scope::SlaReadUptime,
            Family::Latency => Scope::SlaReadLatency,
        }
    }
}

/// An SLA as a caller may see it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SlaView {
    #[schema(value_type = String, example = "sla_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: SlaId,
    pub name: String,
    pub display_name: Option<String>,
    pub service: String,
    pub customer_ref: Option<String>,
    pub version: i32,
    pub current_version: i32,
    pub objectives: Vec<ObjectiveView>,
    pub redacted: Vec<Redaction>,
}

/// One objective; its promise (target, threshold, filter) only with the
/// scope of its family.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ObjectiveView {
    pub name: String,
    pub display_name: Option<String>,
    pub family: Family,
    /// `ratio`, `threshold`, `time_slices` or `gauge`.
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// Parts per million of good events promised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ppm: Option<u32>,
    /// The objective as in the native document (thresholds, filters).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub definition: Option<serde_json::Value>,
}

/// A line of the SLA list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SlaSummaryView {
    #[schema(value_type = String, example = "sla_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: SlaId,
    pub name: String,
    pub current_version: i32,
    pub customer_ref: Option<String>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// What applying a document did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AppliedView {
    #[schema(value_type = String, example = "sla_0190c0f5c6a07d3e8e3f4a1b2c3d4e5f")]
    pub id: SlaId,
    pub name: String,
    pub version: i32,
    /// `created`, `updated` or `unchanged`.
    #[schema(value_type = String)]
    pub outcome: &'static str,
    /// Objectives of the version that was in force which this version no
    /// longer has (only with `drop_objectives` confirmed).
    pub dropped: Vec<String>,
    /// When this version takes effect, if not yet: a contract change takes
    /// effect at the end of the period it was made in (every period is
    /// judged by the terms in force at its start). Absent when it is in
    /// force already (a first version, or after a rolling window).
    pub takes_effect_at: Option<DateTime<Utc>>,
}

/// The document formats an SLA exports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Native,
    OpenSlo,
}

/// Field-level view of a definition for a caller.
pub fn view(caller: &Caller, stored: &StoredSla, customer_ref: Option<String>) -> SlaView {
    let native = stored.definition.to_native_json();
    let mut redacted = Vec::new();
    let objectives = stored
        .definition
        .objectives
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let family = Family::of(o);
            let visible = caller.has(family.scope());
            if !visible {
                for field in ["target_ppm", "definition"] {
                    redacted.push(Redaction {
                        field: format!("objectives[{}].{field}", o.name.as_str()),
                        scope: family.scope().as_str(),
                    });
                }
            }
            ObjectiveView {
                name: o.name.as_str().to_owned(),
                display_name: o.display_name.clone(),
                family,
                kind: o.kind_name(),
                target_ppm: visible.then(|| o.target.ppm()),
                definition: visible
                    .then(|| native["spec"]["objectives"].get(i).cloned())
                    .flatten(),
            }
        })
        .collect();
    SlaView {
        id: stored.id,
        name: stored.definition.name.as_str().to_owned(),
        display_name: stored.definition.display_name.clone(),
        service: stored.definition.service.clone(),
        customer_ref,
        version: stored.version,
        current_version: stored.current_version,
        objectives,
        redacted,
    }
}

impl App {
    /// The SLA called `name` if the caller may see it at all: a customer's
    /// user gets "not found" for any other customer's SLA, exactly as for
    /// one that does not exist.
    pub(crate) async fn visible_sla(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        name: &str,
        version: Option<i32>,
    ) -> Result<(StoredSla, Option<String>), AppError> {
        caller.require(Scope::SlaRead)?;
        self.sla_in_view(tx, caller, name, version).await
    }

    /// The SLA called `name` if it is within the caller's view — the
    /// tenant's for a provider, the customer's own for a customer's user,
    /// the one SLA of an embed token — whatever scopes it holds (a read
    /// checks its own). "Not found" for any other, as for none.
    pub(crate) async fn sla_in_view(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        name: &str,
        version: Option<i32>,
    ) -> Result<(StoredSla, Option<String>), AppError> {
        let hidden = || AppError::NotFound {
            what: "SLA",
            key: name.to_owned(),
        };
        // An embed token for one SLA's dashboard reads that SLA only.
        if caller.only_sla().is_some_and(|only| only != name) {
            return Err(hidden());
        }
        let stored = slas::find(tx, name, version).await?;
        let customer_ref = match stored.customer {
            Some(c) => Some(customers::find(tx, c).await?.external_ref),
            None => None,
        };
        if let Some(own) = caller.customer() {
            // The SLA is the customer's now, and so is the version asked
            // for: an SLA moved from another customer keeps that customer's
            // versions (and their history) from the new one.
            if stored.customer != Some(own) || stored.definition.customer != customer_ref {
                return Err(hidden());
            }
        }
        Ok((stored, customer_ref))
    }

    /// The versions of `stored`'s SLA whose history the caller may read:
    /// all for the provider, and for a customer's user only the versions
    /// that were that customer's (`None`: every version).
    pub(crate) async fn readable_versions(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        stored: &StoredSla,
        customer_ref: Option<&str>,
    ) -> Result<Option<Vec<i32>>, AppError> {
        match (caller.customer(), customer_ref) {
            (None, _) => Ok(None),
            (Some(_), Some(own)) => {
                Ok(Some(slas::versions_for_customer(tx, stored.id, own).await?))
            }
            (Some(_), None) => Ok(Some(Vec::new())),
        }
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_slas(
        &self,
        caller: &Caller,
        page: &PageRequest,
    ) -> Result<Page<SlaSummaryView>, AppError> {
        caller.require(Scope::SlaRead)?;
        let mut tx = self.tx(caller).await?;
        let keyset = page.keyset()?;
        let rows = slas::page(&mut tx, caller.customer(), caller.only_sla(), &keyset).await?;
        tx.commit().await?;
        Ok(
            Page::of(rows, &keyset, |s| s.name.as_str()).map(|s| SlaSummaryView {
                id: s.id,
                name: s.name,
                current_version: s.current_version,
                customer_ref: s.customer_ref,
                updated_at: s.updated_at,
            }),
        )
    }

    /// One version of an SLA (the one in force by default). Older versions
    /// are history: they need `sla:read:history`.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn get_sla(
        &self,
        caller: &Caller,
        name: &str,
        version: Option<i32>,
    ) -> Result<SlaView, AppError> {
        if version.is_some() {
            caller.require(Scope::SlaReadHistory)?;
        }
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, version).await?;
        tx.commit().await?;
        Ok(view(caller, &stored, customer_ref))
    }

    /// Every version of an SLA, newest first.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_versions(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<Vec<SlaView>, AppError> {
        caller.require(Scope::SlaReadHistory)?;
        let mut tx = self.tx(caller).await?;
        let (current, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let readable = self
            .readable_versions(&mut tx, caller, &current, customer_ref.as_deref())
            .await?;
        let mut versions = vec![view(caller, &current, customer_ref.clone())];
        for v in (1..current.current_version).rev() {
            if readable.as_ref().is_some_and(|r| !r.contains(&v)) {
                continue;
            }
            let stored = slas::find(&mut tx, name, Some(v)).await?;
            // Each version names the customer it was for.
            let its_customer = stored.definition.customer.clone();
            versions.push(view(caller, &stored, its_customer));
        }
        tx.commit().await?;
        Ok(versions)
    }

    /// The whole document: every objective's promise is in it, so it needs
    /// `sla:export` and the scope of every family the SLA has.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn export_sla(
        &self,
        caller: &Caller,
        name: &str,
        version: Option<i32>,
        format: ExportFormat,
    ) -> Result<String, AppError> {
        caller.require(Scope::SlaExport)?;
        if version.is_some() {
            caller.require(Scope::SlaReadHistory)?;
        }
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, version).await?;
        tx.commit().await?;
        for o in &stored.definition.objectives {
            caller.require(Family::of(o).scope())?;
        }
        Ok(match format {
            ExportFormat::Native => stored.definition.to_native_yaml(),
            ExportFormat::OpenSlo => stored.definition.to_openslo_yaml(),
        })
    }

    /// Creates an SLA, or a new version of one, from a native `slaproof/v1`
    /// or OpenSLO v1 document (YAML or JSON). OpenSLO merges into an SLA
    /// that exists unless `options.replace`; a version that would drop
    /// objectives needs `options.drop_objectives` (see [`crate::sla_apply`]).
    pub async fn apply_sla(
        &self,
        caller: &Caller,
        document: &str,
        options: ApplyOptions,
    ) -> Result<AppliedView, AppError> {
        let document = self.read_sla_document(caller, document).await?;
        self.in_tx(caller, async |tx| {
            self.apply_sla_in(tx, caller, document, options).await
        })
        .await
    }

    /// Reads an SLA document for [`App::apply_sla_in`], after checking the
    /// caller may create SLAs: on a blocking thread, before any transaction
    /// is open, so that a large document (up to the reader's caps) holds
    /// neither the async runtime nor a database connection.
    pub async fn read_sla_document(
        &self,
        caller: &Caller,
        document: &str,
    ) -> Result<ReadDocument, AppError> {
        Creating::SLA.require(caller)?;
        let text = document.to_owned();
        tokio::task::spawn_blocking(move || SlaDefinition::read_document(&text))
            .await
            .map_err(|e| AppError::Internal(Box::new(e)))?
            .map(|(definition, format)| ReadDocument { definition, format })
            .map_err(|e| AppError::invalid("document", e.to_string()))
    }

    /// [`App::apply_sla`] inside a transaction of the caller's tenant (see
    /// [`App::once`]), with the document read by
    /// [`App::read_sla_document`].
    #[tracing::instrument(skip(self, tx, caller, document), fields(tenant = %caller.tenant()))]
    pub async fn apply_sla_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        document: ReadDocument,
        options: ApplyOptions,
    ) -> Result<AppliedView, AppError> {
        Creating::SLA.require(caller)?;
        let ReadDocument {
            definition: document,
            format,
        } = document;
        // `overview` names every SLA of a customer in an embed token: an
        // SLA of that name would make a one-SLA token read them all.
        if document.name.as_str() == crate::embed::OVERVIEW {
            return Err(AppError::invalid(
                "metadata.name",
                format!(
                    "{:?} is reserved: it names the overview of every SLA in embed tokens",
                    crate::embed::OVERVIEW
                ),
            ));
        }
        let current = match slas::find_for_update(tx, document.name.as_str()).await {
            Ok(current) => current,
            // A version in force that no longer reads (an old release's
            // document) can still be replaced whole, though not merged
            // into: what it drops cannot be told.
            Err(slaproof_store::StoreError::Corrupt { .. })
                if options.replace || format == DocumentFormat::Native =>
            {
                None
            }
            Err(e) => return Err(e.into()),
        };
        let NextVersion {
            definition,
            dropped,
        } = next_version(document, format, current.as_ref(), options)?;
        check_fee_shares(tx, &definition).await?;
        let outcome = slas::apply(tx, &definition).await?;
        let changed = (!dropped.is_empty()).then(|| serde_json::json!({ "dropped": dropped }));
        audit_applied(tx, caller, &outcome, &definition, changed).await?;
        let takes_effect_at =
            slas::takes_effect_at(tx, outcome.sla, outcome.version, Utc::now()).await?;
        Ok(AppliedView {
            id: outcome.sla,
            name: definition.name.as_str().to_owned(),
            version: outcome.version,
            outcome: match outcome.applied {
                Applied::Created => "created",
                Applied::Updated => "updated",
                Applied::Unchanged => "unchanged",
            },
            dropped,
            takes_effect_at,
        })
    }
}

/// Refuses a credited SLA whose share of its customer's fee, with the
/// shares its customer's other credited SLAs take, would come to more than
/// the whole fee: one fee credited whole by each of two SLAs could pay
/// twice what the customer pays. Another SLA takes the largest share of
/// its versions still to judge a period: the one in force now and a newer
/// one waiting for the next period (a share lowered for next month is
/// still credited on this month).
async fn check_fee_shares(tx: &mut TenantTx, definition: &SlaDefinition) -> Result<(), AppError> {
    let (Some(customer), Some(credits)) = (&definition.customer, &definition.credits) else {
        return Ok(());
    };
    let now = Utc::now();
    let others: Vec<(String, u32)> = slas::fee_shares(tx, customer, definition.name.as_str())
        .await?
        .into_iter()
        .filter_map(|(name, versions)| {
            let schedule: Vec<_> = versions.iter().map(|v| (v.window, v.applied_at)).collect();
            let effective = slaproof_domain::versions::effective_from(&schedule);
            let live = slaproof_domain::versions::in_force(&effective, now);
            let share = versions[live..]
                .iter()
                .filter_map(|v| v.fee_share_ppm)
                .max()?;
            Some((name, share))
        })
        .collect();
    let taken: u64 = others.iter().map(|(_, share)| u64::from(*share)).sum();
    if taken + u64::from(credits.fee_share_ppm) <= u64::from(CreditPolicy::WHOLE_FEE) {
        return Ok(());
    }
    let percent = CreditPolicy::percent_text;
    let listed: Vec<String> = others
        .iter()
        .map(|(name, share)| format!("{name} ({}%)", percent(u64::from(*share))))
        .collect();
    Err(AppError::invalid(
        "spec.credits.feeShare",
        format!(
            "must leave the customer's other credited SLAs their part: {customer}'s fee is credited on by {} already, and this SLA's {}% would make {}% of one fee; give each SLA its share (feeShare), at most {}% here",
            listed.join(", "),
            percent(u64::from(credits.fee_share_ppm)),
            percent(taken + u64::from(credits.fee_share_ppm)),
            percent(u64::from(CreditPolicy::WHOLE_FEE).saturating_sub(taken)),
        ),
    ))
}

impl App {
    /// Changes one objective's target, as a new version of the SLA. The
    /// target is the contract credits are paid on, so it is the provider's
    /// alone (`sla:write`, like applying a document): a customer's user is
    /// refused whatever its roles say, or it could promise itself 100% and
    /// collect. A customer's own alert lines are thresholds
    /// ([`App::set_threshold`]), which never touch the contract. The new
    /// target must be one the caller may read, too.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn change_target(
        &self,
        caller: &Caller,
        name: &str,
        objective: &str,
        target_ppm: u32,
    ) -> Result<AppliedView, AppError> {
        caller.require_provider(Scope::SlaWrite)?;
        let target = slaproof_domain::quantity::TargetPpm::from_ppm(target_ppm)
            .map_err(|e| AppError::invalid("target_ppm", e.to_string()))?;
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let mut definition = stored.definition;
        let found = definition
            .objectives
            .iter_mut()
            .find(|o| o.name.as_str() == objective)
            .ok_or_else(|| AppError::NotFound {
                what: "objective",
                key: objective.to_owned(),
            })?;
        caller.require(Family::of(found).scope())?;
        found.target = target;
        let outcome = slas::apply(&mut tx, &definition).await?;
        let changed = serde_json::json!({ "objective": objective, "target_ppm": target_ppm });
        audit_applied(&mut tx, caller, &outcome, &definition, Some(changed)).await?;
        let takes_effect_at =
            slas::takes_effect_at(&mut tx, outcome.sla, outcome.version, Utc::now()).await?;
        tx.commit().await?;
        Ok(AppliedView {
            id: outcome.sla,
            name: name.to_owned(),
            version: outcome.version,
            outcome: match outcome.applied {
                Applied::Created => "created",
                Applied::Updated => "updated",
                Applied::Unchanged => "unchanged",
            },
            dropped: Vec::new(),
            takes_effect_at,
        })
    }
}

/// Records a version applied on the SLA's audit trail (`sla.applied`): a
/// new version changes what the SLA's verdicts are judged by. `changed`
/// names what a targeted change (not a whole document) changed.
async fn audit_applied(
    tx: &mut TenantTx,
    caller: &Caller,
    outcome: &slaproof_store::slas::ApplyOutcome,
    definition: &SlaDefinition,
    changed: Option<serde_json::Value>,
) -> Result<(), AppError> {
    let created = match outcome.applied {
        Applied::Created => true,
        Applied::Updated => false,
        Applied::Unchanged => return Ok(()),
    };
    let policy = &definition.policy.maintenance;
    let mut details = serde_json::json!({
        "version": outcome.version,
        "outcome": if created { "created" } else { "updated" },
        "maintenance": {
            "notice": policy.notice.to_string(),
            "max_per_period": policy.max_per_period.map(|s| s.to_string()),
            "schedule": policy.schedule.iter().map(ToString::to_string).collect::<Vec<_>>(),
        },
    });
    if let Some(changed) = changed {
        details["changed"] = changed;
    }
    crate::audit::record(tx, caller, outcome.sla, "sla.applied", &details).await
}
