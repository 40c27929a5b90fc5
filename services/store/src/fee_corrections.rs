//! Fee corrections: the fee one credited period of an SLA is computed on, stated again by the provider with a reason (the latest counts; rows are added, never changed).

use chrono::{DateTime, Utc};
use slaproof_domain::credit::Money;
use slaproof_domain::ids::{CustomerId, SlaId};

use crate::{StoreError, TenantTx};

/// One correction of a credited period's fee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeeCorrection {
    pub id: uuid::Uuid,
    pub sla: SlaId,
    pub customer: CustomerId,
    pub period_start: DateTime<Utc>,
    /// The fee the period is credited on from now on.
    pub fee: Money,
    /// The fee it had been credited on.
    pub was: Money,
    pub reason: String,
    pub created_by: String,
    /// Stamped by the database when recorded.
    pub created_at: DateTime<Utc>,
}

type Row = (
    uuid::Uuid,
    uuid::Uuid,
    uuid::Uuid,
    DateTime<Utc>,
    String,
    i16,
    i64,
    String,
    i16,
    i64,
    String,
    String,
    DateTime<Utc>,
);

const COLUMNS: &str = "id, sla_id, customer_id, period_start, currency, minor_units, amount_minor, \
     was_currency, was_minor_units, was_amount_minor, reason, created_by, created_at";

fn money(code: &str, minor_units: i16, minor: i64) -> Result<Money, StoreError> {
    Ok(Money::new(
        minor,
        crate::credits::currency_of(code, minor_units)?,
    ))
}

fn correction(row: Row) -> Result<FeeCorrection, StoreError> {
    let (
        id,
        sla,
        customer,
        period_start,
        code,
        units,
        minor,
        was_code,
        was_units,
        was_minor,
        reason,
        by,
        at,
    ) = row;
    Ok(FeeCorrection {
        id,
        sla: SlaId::from_uuid(sla),
        customer: CustomerId::from_uuid(customer),
        period_start,
        fee: money(&code, units, minor)?,
        was: money(&was_code, was_units, was_minor)?,
        reason,
        created_by: by,
        created_at: at,
    })
}

/// Records a correction; `id` and `created_at` are the store's.
pub async fn record(tx: &mut TenantTx, new: &FeeCorrection) -> Result<FeeCorrection, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO fee_corrections (tenant_id, id, sla_id, customer_id, period_start, currency, \
             minor_units, amount_minor, was_currency, was_minor_units, was_amount_minor, reason, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(uuid::Uuid::now_v7())
    .bind(new.sla.uuid())
    .bind(new.customer.uuid())
    .bind(new.period_start)
    .bind(new.fee.currency.code())
    .bind(i16::from(new.fee.currency.exponent()))
    .bind(new.fee.minor)
    .bind(new.was.currency.code())
    .bind(i16::from(new.was.currency.exponent()))
    .bind(new.was.minor)
    .bind(&new.reason)
    .bind(&new.created_by)
    .fetch_one(&mut **tx)
    .await?;
    correction(row)
}

/// The correction in force for the SLA's period credited to `customer`:
/// the latest, if any.
pub async fn latest(
    tx: &mut TenantTx,
    sla: SlaId,
    customer: CustomerId,
    period_start: DateTime<Utc>,
) -> Result<Option<FeeCorrection>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM fee_corrections WHERE tenant_id = $1 AND sla_id = $2 \
           AND customer_id = $3 AND period_start = $4 \
         ORDER BY created_at DESC, id DESC LIMIT 1"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(customer.uuid())
    .bind(period_start)
    .fetch_optional(&mut **tx)
    .await?;
    row.map(correction).transpose()
}
