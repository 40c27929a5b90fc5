//! Correcting the fee a credited period was computed on: the provider's explicit, audited act (who, when, why, from what), the one way a wrong fee reaches a period already credited.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::credit::{CreditRecord, Money};
use slaproof_store::fee_corrections::{self, FeeCorrection};
use slaproof_store::{credits, customers, slas};

use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// The fee a credited period is to be computed on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFeeCorrection {
    /// ISO 4217 (`EUR`): the SLA's credit currency.
    pub currency: String,
    /// Decimal text in the currency's unit (`1200.00`), exact to the minor unit.
    pub amount: String,
    /// The minor-unit exponent, required for a code slaproof does not know.
    pub minor_units: Option<u8>,
    /// Why the fee on file was wrong for the period, for the customer to read.
    pub reason: String,
}

/// A correction as answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FeeCorrectionView {
    pub sla: String,
    pub customer_ref: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub currency: String,
    /// The fee the period is credited on from now on, decimal text.
    pub amount: String,
    pub amount_minor: i64,
    /// The fee it had been credited on, decimal text.
    pub was_amount: String,
    pub was_amount_minor: i64,
    pub reason: String,
    pub corrected_by: String,
    pub corrected_at: DateTime<Utc>,
    /// The period's credit is computed again on the corrected fee; a
    /// correcting ledger entry follows when the amount changes.
    pub recompute_queued: bool,
}

/// A reason is read by the customer on its statement: said, and short.
const REASON_MAX_CHARS: usize = 1000;

impl App {
    /// Corrects the fee the SLA's period starting at `period_start` was
    /// credited on (`customer:write`). Only a period credited on a fee
    /// (409 otherwise: a fee recorded for the customer reaches it), before
    /// its settlement horizon (409 after: the period is final), in the
    /// SLA's credit currency, with a reason. Recorded on the SLA's audit
    /// trail (`fee.corrected`) and the period's credit computed again.
    #[tracing::instrument(skip(self, caller, correction), fields(tenant = %caller.tenant()))]
    pub async fn correct_credited_fee(
        &self,
        caller: &Caller,
        sla: &str,
        period_start: DateTime<Utc>,
        correction: NewFeeCorrection,
    ) -> Result<FeeCorrectionView, AppError> {
        caller.require_provider(Scope::CustomerWrite)?;
        let reason = correction.reason.trim().to_owned();
        if reason.is_empty() {
            return Err(AppError::invalid(
                "reason",
                "say why the fee is corrected: the customer reads it on its statement",
            ));
        }
        if reason.chars().count() > REASON_MAX_CHARS {
            return Err(AppError::invalid(
                "reason",
                format!("at most {REASON_MAX_CHARS} characters"),
            ));
        }
        let (currency, amount_minor) = crate::credits::fee_amount(
            &correction.currency,
            correction.minor_units,
            &correction.amount,
        )?;
        let now = Utc::now();
        self.in_tx(caller, async |tx| {
            let current = slas::find(tx, sla, None).await?;
            let results = credits::frozen_results(tx, current.id, period_start).await?;
            let (Some(version), Some(period_end)) = (
                results.iter().map(|r| r.version).max(),
                results.iter().map(|r| r.period_end).max(),
            ) else {
                return Err(AppError::invalid(
                    "period_start",
                    format!(
                        "no closed period of {sla} starts at {}",
                        period_start.to_rfc3339()
                    ),
                ));
            };
            let judged = slas::find_version(tx, current.id, version).await?;
            let Some(policy) = &judged.definition.credits else {
                return Err(AppError::Conflict(format!(
                    "{sla} had no credit policy in the version that judged the period (version {version}): there is no fee to correct"
                )));
            };
            if currency != policy.currency {
                return Err(AppError::invalid(
                    "currency",
                    format!(
                        "the SLA credits in {}, got {}",
                        policy.currency.code(),
                        currency.code()
                    ),
                ));
            }
            let final_at = judged.definition.policy.final_at(period_end);
            if final_at <= now {
                return Err(AppError::Conflict(format!(
                    "the period from {} to {} is final since {} ({} after it ended, the SLA's settlement): its credit no longer changes",
                    period_start.to_rfc3339(),
                    period_end.to_rfc3339(),
                    final_at.to_rfc3339(),
                    judged.definition.policy.settlement
                )));
            }
            let not_credited = || {
                AppError::Conflict(format!(
                    "the period of {sla} from {} was not credited on a fee: record the customer's fee (POST /v1/customers/{{ref}}/fees) and recompute the credit instead",
                    period_start.to_rfc3339()
                ))
            };
            let customer = slas::customer_of_version(tx, current.id, version)
                .await?
                .ok_or_else(not_credited)?;
            let entry = credits::latest_entry(tx, current.id, customer, period_start)
                .await?
                .ok_or_else(not_credited)?;
            let was: Money =
                CreditRecord::credited_fee(&entry.computation).ok_or_else(not_credited)?;
            let stored = fee_corrections::record(
                tx,
                &FeeCorrection {
                    id: uuid::Uuid::nil(),
                    sla: current.id,
                    customer,
                    period_start,
                    fee: Money::new(amount_minor, currency.clone()),
                    was: was.clone(),
                    reason: reason.clone(),
                    created_by: caller.principal.subject.clone(),
                    created_at: now,
                },
            )
            .await?;
            credits::request(tx, current.id, period_start).await?;
            let holder = customers::find(tx, customer).await?;
            let details = serde_json::json!({
                "customer": holder.external_ref,
                "period_start": period_start,
                "period_end": period_end,
                "currency": currency.code(),
                "amount_minor": amount_minor,
                "was_amount_minor": was.minor,
                "reason": reason,
            });
            crate::audit::record(tx, caller, current.id, "fee.corrected", &details).await?;
            Ok(FeeCorrectionView {
                sla: sla.to_owned(),
                customer_ref: holder.external_ref,
                period_start,
                period_end,
                currency: currency.code().to_owned(),
                amount: currency.amount_text(stored.fee.minor),
                amount_minor: stored.fee.minor,
                was_amount: was.currency.amount_text(was.minor),
                was_amount_minor: was.minor,
                reason: stored.reason,
                corrected_by: stored.created_by,
                corrected_at: stored.created_at,
                recompute_queued: true,
            })
        })
        .await
    }
}
