//! The customer references a round's events named, tallied as they are read so that unknown ones reach the provider without a scan of events.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use slaproof_store::TenantTx;
use slaproof_store::customers::ReferenceSeen;

use crate::error::EvaluatorError;
use crate::events::ReadEvent;

/// Per reference: events, first and last arrival in the round.
#[derive(Debug, Default)]
pub struct Seen {
    by_ref: HashMap<String, (u64, DateTime<Utc>, DateTime<Utc>)>,
}

impl Seen {
    /// Notes a new event of the round (never a backfilled one, which an
    /// earlier round already noted).
    pub fn note(&mut self, event: &ReadEvent) {
        let Some(customer) = event.customer.as_deref() else {
            return;
        };
        let at = event.received_at;
        match self.by_ref.get_mut(customer) {
            Some((n, first, last)) => {
                *n += 1;
                *first = (*first).min(at);
                *last = (*last).max(at);
            }
            None => {
                self.by_ref.insert(customer.to_owned(), (1, at, at));
            }
        }
    }
}

/// Adds the round's tally to the tenant's, in the round's transaction.
pub async fn write(tx: &mut TenantTx, seen: Seen) -> Result<(), EvaluatorError> {
    if seen.by_ref.is_empty() {
        return Ok(());
    }
    let rows: Vec<ReferenceSeen> = seen
        .by_ref
        .into_iter()
        .map(|(external_ref, (events, first, last))| ReferenceSeen {
            external_ref,
            events: i64::try_from(events).unwrap_or(i64::MAX),
            first_seen_at: first,
            last_seen_at: last,
        })
        .collect();
    slaproof_store::customers::note_references(tx, &rows).await?;
    Ok(())
}
