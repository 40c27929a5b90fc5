//! The SLAs whose evaluation keeps failing while the evaluator goes on with
//! the tenant's others (`evaluation_failures`, written by the evaluator in
//! the same transaction as the round), as the API reads them.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::SlaId;

use crate::{StoreError, TenantTx};

/// Failures in a row after which an SLA the evaluate job keeps failing on
/// counts as stuck, as a job does after its `max_attempts` (10 by default).
pub const SLA_STUCK_AFTER: i32 = 10;

/// An SLA whose evaluation failed in the evaluate job's latest runs, while
/// the tenant's other SLAs were evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingSla {
    pub sla: SlaId,
    pub name: String,
    /// The version that failed.
    pub version: i32,
    /// Evaluation rounds in a row that failed on it.
    pub failures: i32,
    pub last_error: String,
    pub first_failed_at: DateTime<Utc>,
    pub last_failed_at: DateTime<Utc>,
}

impl FailingSla {
    /// Whether it has failed [`SLA_STUCK_AFTER`] rounds in a row or more.
    pub fn stuck(&self) -> bool {
        self.failures >= SLA_STUCK_AFTER
    }
}

/// The transaction's tenant's SLAs whose evaluation is failing, by name.
#[tracing::instrument(skip(tx))]
pub async fn failing_slas(tx: &mut TenantTx) -> Result<Vec<FailingSla>, StoreError> {
    type Row = (
        uuid::Uuid,
        String,
        i32,
        i32,
        String,
        DateTime<Utc>,
        DateTime<Utc>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT f.sla_id, s.name, f.version, f.failures, f.last_error, f.first_failed_at, f.last_failed_at \
         FROM evaluation_failures f JOIN slas s ON s.tenant_id = f.tenant_id AND s.id = f.sla_id \
         WHERE f.tenant_id = $1 ORDER BY s.name",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(sla, name, version, failures, last_error, first_failed_at, last_failed_at)| {
                FailingSla {
                    sla: SlaId::from_uuid(sla),
                    name,
                    version,
                    failures,
                    last_error,
                    first_failed_at,
                    last_failed_at,
                }
            },
        )
        .collect())
}
