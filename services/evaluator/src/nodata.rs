//! Missing data: an SLA whose service sends no events it counts for its `policy.noData.after`, while it is in force, is in a no-data state — shown, and told as `sla.no_data` (and its recovery) once per change.
//!
//! Silence is not compliance: an SLA with no events has nothing to fail,
//! so without this a provider whose telemetry stopped would look perfect.
//! The last event is read from the version's minute rollups (an index
//! scan from the newest minute), so an event counts here as soon as it is
//! rolled up, late or not.

use chrono::{DateTime, Duration, Utc};
use slaproof_store::signals as store_signals;
use slaproof_store::{TenantTx, outbox};

use crate::error::{Doing, EvaluatorError};
use crate::tracked::TrackedSla;

/// An SLA's data as of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DataState {
    /// The end of the last minute with an event the SLA counts.
    pub(crate) last_event_at: Option<DateTime<Utc>>,
    /// Since when data is missing, while it is.
    pub(crate) no_data_since: Option<DateTime<Utc>>,
}

impl DataState {
    /// Missing when nothing arrived for `after` up to `as_of` (counting,
    /// when nothing ever arrived, from when the SLA came into force:
    /// `in_force_since`).
    pub(crate) fn judge(
        last_event_at: Option<DateTime<Utc>>,
        in_force_since: DateTime<Utc>,
        as_of: DateTime<Utc>,
        after: Duration,
    ) -> Self {
        let since = last_event_at.unwrap_or(in_force_since);
        Self {
            last_event_at,
            no_data_since: (as_of - since >= after).then_some(since),
        }
    }
}

/// Judges `sla`'s data as of `as_of`, tells a change, and keeps the state.
/// Returns the number of messages told.
#[tracing::instrument(skip_all, fields(sla = %sla.name))]
pub(crate) async fn record(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    as_of: DateTime<Utc>,
) -> Result<usize, EvaluatorError> {
    let seen = store_signals::data_seen(tx, sla.id, sla.version, as_of)
        .await
        .doing("reading an SLA's last event and data state")?;
    let after = sla.definition.policy.no_data.after.chrono();
    // A new SLA has no data yet because it is new, not because its
    // service went silent: count from when it was applied (its rollups
    // may reach back days, to when nothing was asked of the service).
    let now = DataState::judge(
        seen.last_minute.map(|m| m + Duration::minutes(1)),
        sla.covers_from.max(sla.applied_at),
        as_of,
        after,
    );
    let missing = now.no_data_since.is_some();
    let changed = seen.was_missing.unwrap_or(false) != missing;
    let mut told = 0;
    if changed {
        let payload = serde_json::json!({
            "sla": sla.id.to_string(),
            "slaName": sla.name,
            "version": sla.version,
            "service": sla.definition.service,
            "state": if missing { "no_data" } else { "recovered" },
            "asOf": as_of,
            "lastEventAt": now.last_event_at,
            "noDataSince": now.no_data_since,
            "afterSecs": after.num_seconds(),
        });
        outbox::enqueue(tx, "sla.no_data", &payload).await?;
        told += 1;
    }
    store_signals::record_data_state(
        tx,
        sla.id,
        &store_signals::DataState {
            last_event_at: now.last_event_at,
            no_data_since: now.no_data_since,
        },
        as_of,
        changed,
    )
    .await
    .doing("writing an SLA's data state")?;
    Ok(told)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn silence_longer_than_the_policy_is_missing_data() {
        let after = Duration::minutes(15);
        let covers = t("2026-11-01T00:00:00Z");
        let last = Some(t("2026-11-10T10:00:00Z"));
        assert_eq!(
            DataState::judge(last, covers, t("2026-11-10T10:14:00Z"), after).no_data_since,
            None
        );
        assert_eq!(
            DataState::judge(last, covers, t("2026-11-10T10:15:00Z"), after).no_data_since,
            last
        );
        // Nothing ever: missing since coverage began.
        assert_eq!(
            DataState::judge(None, covers, t("2026-11-01T00:15:00Z"), after).no_data_since,
            Some(covers)
        );
    }
}
