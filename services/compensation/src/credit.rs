//! One period's credit: the inputs read from the frozen results, the fee and the minute rollups, the domain's computation, and the ledger entry it leads to.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use slaproof_domain::credit::ledger::{Standing, Step, next_step};
use slaproof_domain::credit::{
    CompositeOutcome, CreditComputation, CreditError, CreditInputs, CreditKind, CreditRecord,
    FeeCorrectionNote, Incident, Money, ObjectiveOutcome, PricedOn, compute,
};
use slaproof_domain::ids::{CreditId, CustomerId, SlaId};
use slaproof_domain::objective::ObjectiveName;
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::window::TimeWindow;
use slaproof_store::credits::{self, CreditEntry, EntryKind};
use slaproof_store::{StoreError, TenantTx, customers, fee_corrections, maintenance, outbox, slas};

/// Why a period's credit could not be worked out; each is retried.
#[derive(Debug, thiserror::Error)]
pub enum CompensationError {
    #[error("credit store: {0}")]
    Store(#[from] StoreError),
    #[error("the job's payload is not a credit job's: {0}")]
    Payload(String),
    #[error("the credit job's lease passed to another worker before it finished")]
    LeaseLost,
}

/// What computing a period's credit came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Credited {
    /// The SLA has no credit policy, or no customer to credit.
    NotCovered,
    /// No result is frozen for the period (yet).
    NotClosed,
    /// The policy owes nothing and nothing was issued before.
    NothingOwed,
    /// The period's credit is what the ledger holds already.
    Unchanged(CreditEntry),
    /// A new entry: the first credit, or a correction.
    Recorded(CreditEntry),
    /// The contract data does not allow a computation (no fee on file, a
    /// fee in another currency…): told as `credit.not_computed`, so the
    /// provider fixes it and asks again.
    Blocked(CreditError),
}

/// Computes the credit of the SLA's period starting at `period_start` from
/// the results in force and records what changed, in `tx`.
#[tracing::instrument(skip(tx))]
pub async fn credit_period(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: DateTime<Utc>,
) -> Result<Credited, CompensationError> {
    let results = credits::frozen_results(tx, sla, period_start).await?;
    let Some(version) = results.iter().map(|r| r.version).max() else {
        return Ok(Credited::NotClosed);
    };
    let period_end = results
        .iter()
        .map(|r| r.period_end)
        .max()
        .unwrap_or(period_start);
    let stored = slas::find_version(tx, sla, version).await?;
    // The customer the judged version was for, not the SLA's customer now:
    // a month judged under one customer's version is that customer's
    // credit, at its fee, after the SLA moved to another.
    let customer = slas::customer_of_version(tx, sla, version).await?;
    let (Some(policy), Some(customer)) = (&stored.definition.credits, customer) else {
        return Ok(Credited::NotCovered);
    };
    let composite = credits::frozen_composite(tx, sla, period_start).await?;
    let previous = credits::latest_entry(tx, sla, customer, period_start).await?;
    // A period credited already keeps the fee it was credited on, whatever
    // fee was recorded since (a correction of the results re-judges the
    // period, not the price), unless the provider corrected that fee by an
    // act of its own (`fee_corrections`, with its reason); the first credit
    // takes the fee in effect at its start.
    let correction = fee_corrections::latest(tx, sla, customer, period_start).await?;
    let credited_fee = previous
        .as_ref()
        .and_then(|p| CreditRecord::credited_fee(&p.computation));
    let fee = match (&correction, credited_fee) {
        (Some(c), _) => Some(c.fee.clone()),
        (None, Some(f)) => Some(f),
        (None, None) => {
            match credits::fee_at(tx, customer, period_start, zone_of(&stored.definition)).await? {
                Some(f) => Some(Money::new(f.amount_minor, f.currency()?)),
                None => None,
            }
        }
    };
    let objectives: Vec<ObjectiveOutcome> = results
        .iter()
        .filter_map(|r| {
            Some(ObjectiveOutcome {
                objective: ObjectiveName::parse(&r.objective).ok()?,
                achieved_ppm: r.compliance_ppm.map(i64::from),
                met: r.met,
            })
        })
        .collect();
    let mut incidents = Vec::new();
    if let CreditKind::Impact(impact) = &policy.kind {
        let excluded: Vec<(DateTime<Utc>, DateTime<Utc>)> =
            maintenance::periods(tx, sla, &stored.definition, period_start, period_end)
                .await?
                .into_iter()
                .map(|p| (p.start, p.end))
                .collect();
        for result in &results {
            let Ok(objective) = ObjectiveName::parse(&result.objective) else {
                continue;
            };
            if !impact.levels.contains_key(&objective) {
                continue;
            }
            // The contract's incident terms; the minute threshold defaults
            // to the objective's own floor (a time slice's target, not the
            // share of good slices), else the target the period was judged on.
            let terms = impact.terms(&objective);
            let floor = stored
                .definition
                .objectives
                .iter()
                .find(|o| o.name == objective)
                .map_or(u32::try_from(result.target_ppm).unwrap_or(0), |o| {
                    o.incident_floor_ppm()
                });
            let rule = credits::RunRule {
                below_ppm: terms.minute_below_ppm.unwrap_or(floor),
                min_requests: terms.min_requests,
                min_minutes: terms.min_minutes,
            };
            for run in credits::bad_runs(
                tx,
                sla,
                version,
                &result.objective,
                rule,
                period_start,
                period_end,
                &excluded,
            )
            .await?
            {
                incidents.push(Incident {
                    objective: objective.clone(),
                    start: run.start,
                    end: run.end,
                    requests: u64::try_from(run.requests).unwrap_or(0),
                });
            }
        }
    }
    let inputs = CreditInputs {
        fee,
        objectives,
        composite: composite
            .as_ref()
            .map(|c| CompositeOutcome::of_consumed(c.consumed_pico, c.met.unwrap_or(true))),
        incidents,
        // The rollups the incidents' requests come from count what the
        // SLA's scope counts: its customer's requests, or the service's.
        priced_on: Some(PricedOn {
            service: stored.definition.service.clone(),
            customer: stored.definition.measured_customer().map(str::to_owned),
        }),
    };
    let name = stored.definition.name.to_string();
    let computation = match compute(policy, &inputs) {
        Ok(c) => c,
        Err(e) => {
            return blocked(tx, &name, sla, customer, period_start, period_end, e).await;
        }
    };
    let mut links: Vec<Value> = results
        .iter()
        .map(|r| json!({"objective": r.objective, "periodResult": r.id, "revision": r.revision}))
        .collect();
    if let Some(c) = &composite {
        links.push(json!({"composite": true, "periodResult": c.id, "revision": c.revision}));
    }
    let fee_correction = correction.map(|c| FeeCorrectionNote {
        reason: c.reason,
        corrected_by: c.created_by,
        corrected_at: c.created_at,
        was: Some(c.was),
    });
    let total = computation.total.minor;
    // The ledger rule is the domain's (and property-tested there).
    let standing = previous.as_ref().map(|p| Standing {
        entry: p.id,
        revision: p.revision,
        total_minor: p.total_minor,
    });
    let (kind, revision, amount, corrects) = match next_step(standing, total) {
        Step::Nothing => return Ok(Credited::NothingOwed),
        Step::Unchanged => {
            return Ok(previous.map_or(Credited::NothingOwed, Credited::Unchanged));
        }
        Step::Issue { total_minor } => (EntryKind::Issued, 1, total_minor, None),
        Step::Correct {
            corrects,
            revision,
            amount_minor,
            ..
        } => (EntryKind::Corrected, revision, amount_minor, Some(corrects)),
    };
    let entry = credits::append(
        tx,
        &CreditEntry {
            id: CreditId::new(),
            sla,
            customer,
            period_start,
            period_end,
            version,
            revision,
            kind,
            corrects,
            currency: computation.currency.code().to_owned(),
            minor_units: i16::from(computation.currency.exponent()),
            amount_minor: amount,
            total_minor: total,
            computation: serde_json::to_value(CreditRecord {
                inputs,
                computation: computation.clone(),
                fee_correction: fee_correction.clone(),
            })
            .unwrap_or_default(),
            results: Value::Array(links),
            attestation: None,
            created_at: Utc::now(),
        },
    )
    .await?;
    let customer_ref = customers::find(tx, customer).await?.external_ref;
    let mut fact = told(&entry, &name, &customer_ref, &computation);
    if let Some(note) = &fee_correction {
        fact["feeCorrection"] = json!(note);
    }
    let event_type = match entry.kind {
        EntryKind::Issued => "credit.issued",
        EntryKind::Corrected => "credit.corrected",
    };
    outbox::enqueue(tx, event_type, &fact).await?;
    tracing::info!(
        credit = %entry.id, kind = entry.kind.as_str(), amount_minor = entry.amount_minor,
        total_minor = entry.total_minor, "credit recorded"
    );
    Ok(Credited::Recorded(entry))
}

/// The fact of a ledger entry: the amounts in minor units and as decimal
/// text, the formula's inputs and steps, and the links to what caused it.
pub(crate) fn told(
    entry: &CreditEntry,
    sla_name: &str,
    customer_ref: &str,
    computation: &CreditComputation,
) -> Value {
    let currency = &computation.currency;
    json!({
        "credit": entry.id.to_string(),
        "kind": entry.kind.as_str(),
        "sla": entry.sla.to_string(),
        "slaName": sla_name,
        "customer": entry.customer.to_string(),
        "customerRef": customer_ref,
        "version": entry.version,
        "periodStart": entry.period_start,
        "periodEnd": entry.period_end,
        "revision": entry.revision,
        "corrects": entry.corrects.map(|c| c.to_string()),
        "currency": entry.currency,
        "amountMinor": entry.amount_minor,
        "amount": currency.amount_text(entry.amount_minor),
        "totalMinor": entry.total_minor,
        "total": currency.amount_text(entry.total_minor),
        "formula": computation.formula,
        "computation": computation,
        "results": entry.results,
    })
}

/// Tells that a period's credit cannot be computed, and why.
async fn blocked(
    tx: &mut TenantTx,
    sla_name: &str,
    sla: SlaId,
    customer: CustomerId,
    period_start: DateTime<Utc>,
    period_end: DateTime<Utc>,
    error: CreditError,
) -> Result<Credited, CompensationError> {
    let fact = json!({
        "sla": sla.to_string(),
        "slaName": sla_name,
        "customer": customer.to_string(),
        "periodStart": period_start,
        "periodEnd": period_end,
        "reason": error.to_string(),
    });
    outbox::enqueue(tx, "credit.not_computed", &fact).await?;
    tracing::warn!(%sla, %period_start, error = %error, "credit not computed");
    Ok(Credited::Blocked(error))
}

/// The IANA name of the time zone an SLA's periods are read in (a fee from
/// a date takes effect at its midnight there): its calendar window's, UTC
/// for a rolling window (which credits never reach).
fn zone_of(definition: &SlaDefinition) -> &'static str {
    match definition.window {
        TimeWindow::Calendar { time_zone, .. } => time_zone.name(),
        TimeWindow::Rolling { .. } => "UTC",
    }
}
