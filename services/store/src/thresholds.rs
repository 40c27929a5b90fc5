//! Customers' own alert thresholds on their SLA's objectives: lines to be
//! told about, never the contract (targets live in SLA versions), with the
//! crossing state the evaluator keeps so each crossing is told once.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{CustomerId, SlaId};

use crate::{StoreError, TenantTx};

/// The lines of one objective; at least one is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lines {
    /// Compliance below this many parts per million of good events.
    pub compliance_below_ppm: Option<u32>,
    /// Remaining error budget below this many parts per million of the
    /// period's allowed budget.
    pub budget_remaining_below_ppm: Option<u32>,
    /// Burn rate over the last hour above this many thousandths.
    pub burn_rate_above_milli: Option<u64>,
}

/// Which lines the latest evaluation was past.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Crossed {
    pub compliance: bool,
    pub budget: bool,
    pub burn: bool,
}

/// A threshold row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredThreshold {
    pub sla: SlaId,
    pub customer: CustomerId,
    pub objective: String,
    pub lines: Lines,
    pub crossed: Crossed,
    /// The evaluation the crossing state is from; `None` before the first.
    pub evaluated_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct Row {
    sla_id: uuid::Uuid,
    customer_id: uuid::Uuid,
    objective: String,
    compliance_below_ppm: Option<i32>,
    budget_remaining_below_ppm: Option<i32>,
    burn_rate_above_milli: Option<i64>,
    compliance_crossed: bool,
    budget_crossed: bool,
    burn_crossed: bool,
    evaluated_at: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "sla_id, customer_id, objective, compliance_below_ppm, \
     budget_remaining_below_ppm, burn_rate_above_milli, compliance_crossed, budget_crossed, \
     burn_crossed, evaluated_at, updated_at";

impl From<Row> for StoredThreshold {
    fn from(r: Row) -> Self {
        // The schema's checks keep these positive.
        let unsigned = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok());
        StoredThreshold {
            sla: SlaId::from_uuid(r.sla_id),
            customer: CustomerId::from_uuid(r.customer_id),
            objective: r.objective,
            lines: Lines {
                compliance_below_ppm: unsigned(r.compliance_below_ppm),
                budget_remaining_below_ppm: unsigned(r.budget_remaining_below_ppm),
                burn_rate_above_milli: r.burn_rate_above_milli.and_then(|v| u64::try_from(v).ok()),
            },
            crossed: Crossed {
                compliance: r.compliance_crossed,
                budget: r.budget_crossed,
                burn: r.burn_crossed,
            },
            evaluated_at: r.evaluated_at,
            updated_at: r.updated_at,
        }
    }
}

/// Sets (creates or replaces) a customer's lines on one objective. Changed
/// lines start uncrossed: the next evaluation tells a crossing of the new
/// line if the objective is past it.
#[tracing::instrument(skip(tx))]
pub async fn set(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: CustomerId,
    objective: &str,
    lines: Lines,
) -> Result<StoredThreshold, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO customer_thresholds (tenant_id, sla_id, customer_id, objective, \
             compliance_below_ppm, budget_remaining_below_ppm, burn_rate_above_milli, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, now()) \
         ON CONFLICT (tenant_id, sla_id, customer_id, objective) DO UPDATE SET \
             compliance_below_ppm = EXCLUDED.compliance_below_ppm, \
             budget_remaining_below_ppm = EXCLUDED.budget_remaining_below_ppm, \
             burn_rate_above_milli = EXCLUDED.burn_rate_above_milli, \
             compliance_crossed = false, budget_crossed = false, burn_crossed = false, \
             evaluated_at = NULL, updated_at = EXCLUDED.updated_at \
         RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.uuid())
    .bind(objective)
    .bind(
        lines
            .compliance_below_ppm
            .map(|v| i32::try_from(v).unwrap_or(i32::MAX)),
    )
    .bind(
        lines
            .budget_remaining_below_ppm
            .map(|v| i32::try_from(v).unwrap_or(i32::MAX)),
    )
    .bind(
        lines
            .burn_rate_above_milli
            .map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// The thresholds on an SLA, of one customer or (`None`) of any, by
/// objective.
pub async fn list(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: Option<CustomerId>,
) -> Result<Vec<StoredThreshold>, StoreError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM customer_thresholds \
         WHERE tenant_id = $1 AND sla_id = $2 AND ($3::uuid IS NULL OR customer_id = $3) \
         ORDER BY objective, customer_id"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.map(|c| c.uuid()))
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(StoredThreshold::from).collect())
}

/// Deletes a customer's lines on one objective; whether there were any.
#[tracing::instrument(skip(tx))]
pub async fn delete(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: CustomerId,
    objective: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "DELETE FROM customer_thresholds \
         WHERE tenant_id = $1 AND sla_id = $2 AND customer_id = $3 AND objective = $4",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.uuid())
    .bind(objective)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The thresholds on one objective of an SLA, every customer's, locked for
/// the evaluator's update of their crossing state.
pub async fn of_objective(
    tx: &mut TenantTx,
    sla: SlaId,
    objective: &str,
) -> Result<Vec<StoredThreshold>, StoreError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM customer_thresholds \
         WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3 \
         ORDER BY customer_id FOR UPDATE"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(objective)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(StoredThreshold::from).collect())
}

/// Stores which lines an evaluation at `evaluated_at` was past.
pub async fn set_crossed(
    tx: &mut TenantTx,
    threshold: &StoredThreshold,
    crossed: Crossed,
    evaluated_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE customer_thresholds SET compliance_crossed = $5, budget_crossed = $6, \
             burn_crossed = $7, evaluated_at = $8 \
         WHERE tenant_id = $1 AND sla_id = $2 AND customer_id = $3 AND objective = $4",
    )
    .bind(tx.tenant().uuid())
    .bind(threshold.sla.uuid())
    .bind(threshold.customer.uuid())
    .bind(&threshold.objective)
    .bind(crossed.compliance)
    .bind(crossed.budget)
    .bind(crossed.burn)
    .bind(evaluated_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
