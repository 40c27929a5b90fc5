//! The numbers behind a verdict computed from scratch over the raw events: the reference that incremental rollups are checked against, and an audit tool.

use chrono::{DateTime, Duration, Utc};
use futures_util::TryStreamExt;
use slaproof_domain::budget::Tally;
use slaproof_domain::objective::EventVerdict;
use slaproof_store::{TenantTx, maintenance};

use crate::error::{Doing, EvaluatorError};
use crate::events::{EVENT_COLUMNS, EventRow, ReadEvent};
use crate::tracked::{Recount, TrackedSla};
use slaproof_domain::minute::Arrival;
use slaproof_domain::window::in_any;

/// Recounts `objective` of `sla` over events that occurred in `[from, to)`
/// and were received before `as_of`, by the same rules as the rollups.
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name))]
pub async fn recount(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    objective: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Recount, EvaluatorError> {
    let Some(objective) = sla.definition.objective(objective) else {
        return Err(EvaluatorError::Corrupt {
            what: "objective name",
            reason: format!("SLA {} has no objective {objective:?}", sla.name),
        });
    };
    let windows = maintenance::periods(tx, sla.id, &sla.definition, from, to).await?;
    if let Some(gauge) = crate::gauge::gauge_sli(&objective.sli) {
        return crate::gauge::recount(tx, sla, gauge, &windows, from, to, as_of, grace).await;
    }
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3 \
         AND received_at < $4"
    );
    let mut rows = sqlx::query_as::<_, EventRow>(&sql)
        .bind(tx.tenant().uuid())
        .bind(from)
        .bind(to)
        .bind(as_of)
        .fetch(&mut **tx);
    let mut out = Recount::default();
    while let Some(row) = rows.try_next().await.doing("recounting events")? {
        let event = ReadEvent::from(row);
        if !sla.scopes(&event) {
            continue;
        }
        let verdict = objective.classify(&event.fields);
        if verdict == EventVerdict::NotCounted {
            continue;
        }
        let one = Tally {
            good: u64::from(verdict == EventVerdict::Good),
            total: 1,
        };
        match sla.arrival(event.occurred_at, event.received_at, grace) {
            Arrival::Late => {
                out.late = out.late + one;
                continue;
            }
            Arrival::LateFolded => out.late_folded += 1,
            Arrival::OnTime => {}
        }
        if in_any(&windows, event.occurred_at) {
            out.excluded = out.excluded + one;
        } else {
            out.tally = out.tally + one;
        }
    }
    Ok(out)
}
