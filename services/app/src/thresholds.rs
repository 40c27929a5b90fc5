//! Customers' own alert thresholds on their SLA's objectives: "tell me when
//! compliance of `availability` falls below 99.95%", "when under a quarter
//! of the error budget is left", "when the burn rate exceeds 2×". They are
//! what `sla:write:thresholds` means: lines to be told about, never the
//! contract — a target is the provider's (`change_target`, `sla:write`).
//!
//! A customer's user sets, lists and deletes the lines of its own SLA only
//! (any other answers 404, the `visible_sla` rule); a provider admin may
//! set them for the SLA's customer. Each line is about one objective, so
//! it also needs the scope of that objective's family.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::ids::CustomerId;
use slaproof_store::slas::StoredSla;
use slaproof_store::thresholds::{self, Lines, StoredThreshold};

use crate::authz::Scope;
use crate::slas::Family;
use crate::{App, AppError, Caller};

/// Parts per million in a whole.
const WHOLE_PPM: u32 = 1_000_000;
/// The highest burn-rate line taken: 10,000× the sustainable rate.
pub const MAX_BURN_RATE_MILLI: u64 = 10_000_000;

/// One objective's lines as the caller may see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ThresholdView {
    pub objective: String,
    pub family: Family,
    /// The customer whose lines these are.
    pub customer_ref: String,
    /// Told when compliance falls below this many parts per million
    /// (999500 = 99.95%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compliance_below_ppm: Option<u32>,
    /// Told when the remaining error budget falls below this many parts
    /// per million of the period's allowed budget (250000 = 25%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_remaining_below_ppm: Option<u32>,
    /// Told when the burn rate over the last hour exceeds this many
    /// thousandths of the sustainable rate (2000 = 2×).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burn_rate_above_milli: Option<u64>,
    /// The lines the latest evaluation was past: `compliance`, `budget`,
    /// `burn_rate`.
    #[schema(value_type = Vec<String>)]
    pub crossed: Vec<&'static str>,
    /// The evaluation `crossed` is from; absent before the first since
    /// the lines were set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluated_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

/// The lines a caller asks for on one objective; at least one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewThreshold {
    pub compliance_below_ppm: Option<u32>,
    pub budget_remaining_below_ppm: Option<u32>,
    pub burn_rate_above_milli: Option<u64>,
}

impl NewThreshold {
    /// The lines, or an error naming the first field out of range.
    pub fn validate(self) -> Result<Lines, AppError> {
        for (field, value) in [
            ("compliance_below_ppm", self.compliance_below_ppm),
            (
                "budget_remaining_below_ppm",
                self.budget_remaining_below_ppm,
            ),
        ] {
            if let Some(v) = value
                && !(1..=WHOLE_PPM).contains(&v)
            {
                return Err(AppError::invalid(
                    field,
                    format!("must be between 1 and {WHOLE_PPM} parts per million, got {v}"),
                ));
            }
        }
        if let Some(v) = self.burn_rate_above_milli
            && !(1..=MAX_BURN_RATE_MILLI).contains(&v)
        {
            return Err(AppError::invalid(
                "burn_rate_above_milli",
                format!("must be between 1 and {MAX_BURN_RATE_MILLI} thousandths, got {v}"),
            ));
        }
        if self.compliance_below_ppm.is_none()
            && self.budget_remaining_below_ppm.is_none()
            && self.burn_rate_above_milli.is_none()
        {
            return Err(AppError::invalid(
                "compliance_below_ppm",
                "at least one of compliance_below_ppm, budget_remaining_below_ppm and \
                 burn_rate_above_milli is needed",
            ));
        }
        Ok(Lines {
            compliance_below_ppm: self.compliance_below_ppm,
            budget_remaining_below_ppm: self.budget_remaining_below_ppm,
            burn_rate_above_milli: self.burn_rate_above_milli,
        })
    }
}

/// A stored row as answered.
pub fn threshold_view(
    stored: &StoredThreshold,
    family: Family,
    customer_ref: &str,
) -> ThresholdView {
    let crossed = [
        (stored.crossed.compliance, "compliance"),
        (stored.crossed.budget, "budget"),
        (stored.crossed.burn, "burn_rate"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    ThresholdView {
        objective: stored.objective.clone(),
        family,
        customer_ref: customer_ref.to_owned(),
        compliance_below_ppm: stored.lines.compliance_below_ppm,
        budget_remaining_below_ppm: stored.lines.budget_remaining_below_ppm,
        burn_rate_above_milli: stored.lines.burn_rate_above_milli,
        crossed,
        evaluated_at: stored.evaluated_at,
        updated_at: stored.updated_at,
    }
}

/// The family of `objective` in `stored`, or "objective not found".
fn family_of(stored: &StoredSla, objective: &str) -> Result<Family, AppError> {
    stored
        .definition
        .objectives
        .iter()
        .find(|o| o.name.as_str() == objective)
        .map(Family::of)
        .ok_or_else(|| AppError::NotFound {
            what: "objective",
            key: objective.to_owned(),
        })
}

/// The SLA's customer, whose lines these are: an SLA without one has no
/// customer to tell.
fn customer_of(stored: &StoredSla, name: &str) -> Result<CustomerId, AppError> {
    stored.customer.ok_or_else(|| {
        AppError::Conflict(format!(
            "SLA {name} has no customer; thresholds are a customer's"
        ))
    })
}

impl App {
    /// The lines on an SLA's objectives whose family the caller may read.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_thresholds(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<Vec<ThresholdView>, AppError> {
        caller.require(Scope::SlaWriteThresholds)?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let Some(customer) = stored.customer else {
            tx.commit().await?;
            return Ok(Vec::new());
        };
        let rows = thresholds::list(&mut tx, stored.id, Some(customer)).await?;
        tx.commit().await?;
        let customer_ref = customer_ref.unwrap_or_default();
        Ok(rows
            .iter()
            .filter_map(|row| {
                // A line on an objective a later version dropped is kept
                // but not shown (the evaluator no longer checks it).
                let family = family_of(&stored, &row.objective).ok()?;
                caller
                    .has(family.scope())
                    .then(|| threshold_view(row, family, &customer_ref))
            })
            .collect())
    }

    /// Sets (creates or replaces) the lines on one objective of an SLA for
    /// its customer. Never a new SLA version: the contract is untouched.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn set_threshold(
        &self,
        caller: &Caller,
        name: &str,
        objective: &str,
        new: NewThreshold,
    ) -> Result<ThresholdView, AppError> {
        caller.require(Scope::SlaWriteThresholds)?;
        let lines = new.validate()?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let family = family_of(&stored, objective)?;
        caller.require(family.scope())?;
        let customer = customer_of(&stored, name)?;
        let row = thresholds::set(&mut tx, stored.id, customer, objective, lines).await?;
        tx.commit().await?;
        Ok(threshold_view(
            &row,
            family,
            &customer_ref.unwrap_or_default(),
        ))
    }

    /// Deletes the lines on one objective; "not found" when there were none.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn delete_threshold(
        &self,
        caller: &Caller,
        name: &str,
        objective: &str,
    ) -> Result<(), AppError> {
        caller.require(Scope::SlaWriteThresholds)?;
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let family = family_of(&stored, objective)?;
        caller.require(family.scope())?;
        let customer = customer_of(&stored, name)?;
        if !thresholds::delete(&mut tx, stored.id, customer, objective).await? {
            return Err(AppError::NotFound {
                what: "threshold",
                key: objective.to_owned(),
            });
        }
        tx.commit().await?;
        Ok(())
    }
}
