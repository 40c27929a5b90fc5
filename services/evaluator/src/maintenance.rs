//! Maintenance as the evaluator applies it: the events of the minutes windows only cut, recounted (the merged windows are `slaproof_store::maintenance::periods`).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use futures_util::TryStreamExt;
use slaproof_domain::budget::Tally;
use slaproof_domain::objective::EventVerdict;
use slaproof_domain::window::{Period, in_any};
use slaproof_store::TenantTx;

use crate::error::{Doing, EvaluatorError};
use crate::events::{EVENT_COLUMNS, EventRow, ReadEvent};
use crate::tracked::TrackedSla;

/// Per objective, the events of each cut minute that fall inside
/// maintenance, recounted from the raw events received before `as_of`.
pub(crate) async fn recount_cut_minutes(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    windows: &[Period],
    minutes: &[DateTime<Utc>],
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<HashMap<String, BTreeMap<DateTime<Utc>, Tally>>, EvaluatorError> {
    let mut out: HashMap<String, BTreeMap<DateTime<Utc>, Tally>> = HashMap::new();
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3 \
         AND received_at < $4 AND service = $5"
    );
    for &minute in minutes {
        let mut rows = sqlx::query_as::<_, EventRow>(&sql)
            .bind(tx.tenant().uuid())
            .bind(minute)
            .bind(minute + Duration::minutes(1))
            .bind(as_of)
            .bind(&sla.definition.service)
            .fetch(&mut **tx);
        while let Some(row) = rows
            .try_next()
            .await
            .doing("recounting a maintenance edge")?
        {
            let event = ReadEvent::from(row);
            if !sla.scopes(&event)
                || !in_any(windows, event.occurred_at)
                || !sla
                    .arrival(event.occurred_at, event.received_at, grace)
                    .counts()
            {
                continue;
            }
            for objective in sla.counted_objectives() {
                let verdict = objective.classify(&event.fields);
                if verdict == EventVerdict::NotCounted {
                    continue;
                }
                let t = out
                    .entry(objective.name.as_str().to_owned())
                    .or_default()
                    .entry(minute)
                    .or_default();
                t.total += 1;
                t.good += u64::from(verdict == EventVerdict::Good);
            }
        }
    }
    // Gauge objectives count values, not events.
    for (objective, minutes) in
        crate::gauge::recount_cut_minutes(tx, sla, windows, minutes, as_of, grace).await?
    {
        out.entry(objective).or_default().extend(minutes);
    }
    Ok(out)
}
