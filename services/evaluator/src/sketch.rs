//! Chart sketches written as the rollups advance: per SLA version and minute (and hour), the [`Sketches`] of the events the SLA measures (its customer's, or its whole service's) — for charts, never for verdicts.
//!
//! What a sketch is and why it merges exactly: `slaproof_domain::sketch`;
//! reading charts back: `slaproof_store::charts`.
//!
//! One set of three sketches per SLA and minute, not one per objective:
//! the distributions are those of the SLA's requests (an objective's filter
//! or threshold says what is good, not what is charted), so per objective
//! they would repeat the same values up to 64 times. Like the counts,
//! events arriving within the grace period are folded into their minute;
//! later ones are left out. Maintenance is not applied: the chart shows
//! what happened, and marks maintenance beside it.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use slaproof_domain::event::EventFields;
use slaproof_domain::minute::floor_hour;
use slaproof_domain::sketch::Sketches;
use slaproof_store::TenantTx;
use slaproof_store::sketch_rows::{self, SketchKey as RowKey, SketchUnit};

use crate::error::{Doing, EvaluatorError};
use crate::tracked::TrackedSla;

/// A stored sketch column.
type Bytes = Option<Vec<u8>>;

/// Key of a sketch row in the making: (index of the tracked SLA, minute or hour).
pub(crate) type SketchKey = (usize, DateTime<Utc>);

/// One minute's sketches while an advance accumulates them: open, or
/// packed into their stored form.
#[derive(Debug)]
enum Slot {
    // Boxed: a packed slot should not take an open one's room.
    Open(Box<Sketches>),
    Packed([Bytes; 3]),
}

impl Slot {
    fn open(&mut self) -> &mut Sketches {
        if let Slot::Packed([l, tt, tp]) = self {
            // Bytes this advance encoded itself; were they ever unreadable,
            // the minute's earlier values would be lost from the chart only.
            let sketches = Sketches::decode(l.take(), tt.take(), tp.take()).unwrap_or_else(|err| {
                tracing::error!(error = %err, "could not reopen a packed sketch");
                Sketches::default()
            });
            *self = Slot::Open(Box::new(sketches));
        }
        match self {
            Slot::Open(s) => s,
            Slot::Packed(_) => unreachable!("opened above"),
        }
    }

    /// The stored form: a packed slot's bytes as they are.
    fn encoded(&self) -> [Bytes; 3] {
        match self {
            Slot::Open(s) => s.encode(),
            Slot::Packed(bytes) => bytes.clone(),
        }
    }

    fn sketches(&self) -> Result<Sketches, EvaluatorError> {
        match self {
            Slot::Open(s) => Ok(Sketches::clone(s)),
            Slot::Packed([l, tt, tp]) => Ok(Sketches::decode(l.clone(), tt.clone(), tp.clone())?),
        }
    }
}

/// The minute sketches of one advance. A backlog (a new SLA version is
/// backfilled from the start of its period, up to a month of minutes) would
/// hold every minute's bins in memory, some kilobytes each; minutes are
/// packed into their encoded form (a few hundred bytes) once many are open,
/// and reopened if a later event falls in them. Steady rounds touch a few
/// minutes and never pack.
#[derive(Debug, Default)]
pub(crate) struct MinuteSketches {
    slots: HashMap<SketchKey, Slot>,
    open: usize,
    added: u64,
}

/// Open minutes above which the accumulator packs them all.
const MAX_OPEN: usize = 1_024;

impl MinuteSketches {
    /// Adds an event to the sketches of its SLA and minute.
    pub(crate) fn add(&mut self, key: SketchKey, event: &impl EventFields) {
        self.added += 1;
        if self.added.is_multiple_of(10_000) && self.open > MAX_OPEN {
            self.pack();
        }
        let slot = self
            .slots
            .entry(key)
            .or_insert_with(|| Slot::Packed([None, None, None]));
        if matches!(slot, Slot::Packed(_)) {
            self.open += 1;
        }
        slot.open().add(event);
    }

    fn pack(&mut self) {
        for slot in self.slots.values_mut() {
            if let Slot::Open(s) = slot {
                *slot = Slot::Packed(s.encode());
            }
        }
        self.open = 0;
    }
}

/// Merges this advance's minute sketches into the stored minute and hour
/// rows (read, merged in Rust, written back: sketches do not merge in SQL).
/// The caller holds the tenant's watermark lock, so no other run writes
/// these rows in between. Returns the minute rows written.
#[tracing::instrument(skip_all)]
pub(crate) async fn write(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    minutes: MinuteSketches,
) -> Result<usize, EvaluatorError> {
    let mut hours: HashMap<SketchKey, Slot> = HashMap::new();
    for ((i, minute), slot) in &minutes.slots {
        hours
            .entry((*i, floor_hour(*minute)))
            .or_insert_with(|| Slot::Open(Box::default()))
            .open()
            .merge(&slot.sketches()?)?;
    }
    let written = minutes.slots.len();
    upsert(tx, tracked, minutes.slots, SketchUnit::Minute).await?;
    upsert(tx, tracked, hours, SketchUnit::Hour).await?;
    Ok(written)
}

/// Writes `rows` into the `unit`'s table: inserted where the SLA's minute
/// (or hour) has no row yet, merged into the stored sketches where it has.
/// A backlog of sparse minutes is nearly all new rows, so the insert goes
/// first and only the rows it finds taken are read and merged: one
/// statement a batch instead of a read and a write.
async fn upsert(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    rows: HashMap<SketchKey, Slot>,
    unit: SketchUnit,
) -> Result<(), EvaluatorError> {
    const BATCH: usize = 2_000;
    let rows: Vec<_> = rows.into_iter().collect();
    for chunk in rows.chunks(BATCH) {
        let keys: Vec<RowKey> = chunk
            .iter()
            .map(|((i, at), _)| (tracked[*i].id.uuid(), tracked[*i].version, *at))
            .collect();
        let encoded = chunk.iter().map(|(_, slot)| slot.encoded()).collect();
        let inserted = sketch_rows::insert_new(tx, unit, &keys, encoded)
            .await
            .doing("writing sketches")?;
        if inserted.len() == chunk.len() {
            continue;
        }
        // The rows already stored: read, merged with this advance's, written back.
        let inserted: HashSet<RowKey> = inserted.into_iter().collect();
        let (taken, slots): (Vec<RowKey>, Vec<&Slot>) = keys
            .iter()
            .zip(chunk)
            .filter(|(key, _)| !inserted.contains(*key))
            .map(|(key, (_, slot))| (*key, slot))
            .unzip();
        let mut stored: HashMap<RowKey, Sketches> = sketch_rows::read(tx, unit, &taken)
            .await
            .doing("reading sketches to merge")?
            .into_iter()
            .map(|(key, [l, tt, tp])| Ok((key, Sketches::decode(l, tt, tp)?)))
            .collect::<Result<_, EvaluatorError>>()?;
        let mut merged = Vec::with_capacity(taken.len());
        for (key, slot) in taken.iter().zip(slots) {
            let mut sketches = stored.remove(key).unwrap_or_default();
            sketches.merge(&slot.sketches()?)?;
            merged.push(sketches.encode());
        }
        sketch_rows::update(tx, unit, &taken, merged)
            .await
            .doing("merging sketches")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use slaproof_domain::event::EventView;
    use slaproof_domain::sketch::Summary;

    const QS: [f64; 6] = [0.0, 0.5, 0.9, 0.95, 0.99, 1.0];

    #[test]
    fn packed_minutes_reopen_and_lose_nothing() {
        let minute = |m: i64| DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(m);
        let event = |v: u64| EventView {
            latency_us: Some(v),
            ttft_us: Some(v / 3),
            ..EventView::default()
        };
        let mut acc = MinuteSketches::default();
        let mut direct: HashMap<i64, Sketches> = HashMap::new();
        // 3000 minutes, then every minute again: the first pass packs
        // (more than MAX_OPEN open), the second reopens packed minutes.
        for round in 0..2u64 {
            for m in 0..3_000i64 {
                for k in 0..4u64 {
                    let v = 1_000 + (m as u64 * 7_919 + k * 104_729 + round) % 5_000_000;
                    acc.add((0, minute(m)), &event(v));
                    direct.entry(m).or_default().add(&event(v));
                }
            }
        }
        assert!(acc.slots.values().any(|s| matches!(s, Slot::Packed(_))));
        for (m, expected) in &direct {
            let got = acc.slots[&(0, minute(*m))].sketches().unwrap();
            assert_eq!(
                Summary::of(&got.latency, &QS),
                Summary::of(&expected.latency, &QS)
            );
            assert_eq!(
                Summary::of(&got.ttft, &QS),
                Summary::of(&expected.ttft, &QS)
            );
            assert!(got.tpot.is_none());
        }
    }
}
