//! Chart sketches: per SLA version and minute (and hour), DDSketches of the latency, time to first token and time per output token of the SLA's service's events — for charts, never for verdicts.
//!
//! Percentile objectives are judged on exact counts of events at or under
//! their thresholds (the rollups); a chart of "p99 over the day" needs the
//! distribution instead, which exact counts cannot give for any
//! percentile asked afterwards. A DDSketch answers every quantile within a
//! relative error ([`RELATIVE_ERROR`]) and merges exactly: its bins are
//! keyed by value alone, so the merge of sixty minute sketches is the
//! sketch of the hour's values, bin for bin.
//!
//! One set of three sketches per SLA and minute, not one per objective:
//! the distributions are those of the SLA's service (an objective's filter
//! or threshold says what is good, not what is charted), so per objective
//! they would repeat the same values up to 64 times. Like the counts,
//! events arriving within the grace period are folded into their minute;
//! later ones are left out. Maintenance is not applied: the chart shows
//! what happened, and marks maintenance beside it.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use sketches_ddsketch::{Config, DDSketch};
use slaproof_domain::event::EventFields;
use slaproof_domain::ids::SlaId;
use slaproof_store::TenantTx;

use crate::error::{Doing, EvaluatorError};
use crate::minute::{floor_hour, floor_minute};
use crate::rollup::TrackedSla;

/// The relative accuracy of every quantile read from a sketch: the
/// answer for quantile q is within 1% of the value of rank
/// ⌊q·(n − 1)⌋ among the n values (DDSketch's α, the crate's default).
pub const RELATIVE_ERROR: f64 = 0.01;

/// A stored sketch column.
type Bytes = Option<Vec<u8>>;

/// The most points one chart read returns (a week of minutes).
pub const MAX_POINTS: i64 = 7 * 24 * 60;

fn config() -> Config {
    // The defaults (α = 1%, up to 2048 bins) are what the binary encoding
    // decodes to, so stored and fresh sketches always merge.
    Config::defaults()
}

/// The three sketches of one minute, hour or chart point; `None` while no
/// event carried the field.
#[derive(Clone, Default)]
pub struct Sketches {
    pub latency: Option<DDSketch>,
    pub ttft: Option<DDSketch>,
    pub tpot: Option<DDSketch>,
}

impl std::fmt::Debug for Sketches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The crate's sketch has no Debug; the counts say enough.
        let count = |s: &Option<DDSketch>| s.as_ref().map(DDSketch::count);
        f.debug_struct("Sketches")
            .field("latency", &count(&self.latency))
            .field("ttft", &count(&self.ttft))
            .field("tpot", &count(&self.tpot))
            .finish()
    }
}

fn record(slot: &mut Option<DDSketch>, micros: Option<u64>) {
    if let Some(v) = micros {
        // Microseconds below 2⁵³ are exact as f64.
        slot.get_or_insert_with(|| DDSketch::new(config()))
            .add(v as f64);
    }
}

fn merge_slot(slot: &mut Option<DDSketch>, other: &Option<DDSketch>) -> Result<(), EvaluatorError> {
    match (slot.as_mut(), other) {
        (_, None) => Ok(()),
        (None, Some(o)) => {
            *slot = Some(o.clone());
            Ok(())
        }
        (Some(s), Some(o)) => s.merge(o).map_err(|e| EvaluatorError::Corrupt {
            what: "sketch",
            reason: format!("cannot merge sketches of different accuracy: {e}"),
        }),
    }
}

fn encode(slot: &Option<DDSketch>) -> Option<Vec<u8>> {
    slot.as_ref().map(DDSketch::to_java_bytes)
}

fn decode(bytes: Option<Vec<u8>>) -> Result<Option<DDSketch>, EvaluatorError> {
    bytes
        .map(|b| {
            DDSketch::from_java_bytes(&b).map_err(|e| EvaluatorError::Corrupt {
                what: "sketch",
                reason: e.to_string(),
            })
        })
        .transpose()
}

impl Sketches {
    /// Adds one event's latency, TTFT and TPOT (those it carries).
    pub fn add(&mut self, event: &impl EventFields) {
        record(&mut self.latency, event.latency_us());
        record(&mut self.ttft, event.ttft_us());
        record(&mut self.tpot, event.tpot_us());
    }

    /// Merges another set in (exact: the result is the sketch of both sets
    /// of values).
    pub fn merge(&mut self, other: &Sketches) -> Result<(), EvaluatorError> {
        merge_slot(&mut self.latency, &other.latency)?;
        merge_slot(&mut self.ttft, &other.ttft)?;
        merge_slot(&mut self.tpot, &other.tpot)
    }

    /// The stored form: each sketch in the sketches-java binary encoding.
    pub fn encode(&self) -> [Option<Vec<u8>>; 3] {
        [
            encode(&self.latency),
            encode(&self.ttft),
            encode(&self.tpot),
        ]
    }

    /// Reads the stored form back.
    pub fn decode(
        latency: Option<Vec<u8>>,
        ttft: Option<Vec<u8>>,
        tpot: Option<Vec<u8>>,
    ) -> Result<Self, EvaluatorError> {
        Ok(Self {
            latency: decode(latency)?,
            ttft: decode(ttft)?,
            tpot: decode(tpot)?,
        })
    }
}

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

    fn sketches(&self) -> Result<Sketches, EvaluatorError> {
        match self {
            Slot::Open(s) => Ok(Sketches::clone(s)),
            Slot::Packed([l, tt, tp]) => Sketches::decode(l.clone(), tt.clone(), tp.clone()),
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
    upsert(tx, tracked, minutes.slots, "evaluator_sketches", "minute").await?;
    upsert(tx, tracked, hours, "evaluator_sketches_hourly", "hour").await?;
    Ok(written)
}

async fn upsert(
    tx: &mut TenantTx,
    tracked: &[TrackedSla],
    rows: HashMap<SketchKey, Slot>,
    table: &'static str,
    unit: &'static str,
) -> Result<(), EvaluatorError> {
    const BATCH: usize = 2_000;
    type Stored = (uuid::Uuid, i32, DateTime<Utc>, Bytes, Bytes, Bytes);
    let tenant = tx.tenant().uuid();
    let rows: Vec<_> = rows.into_iter().collect();
    let read = format!(
        "SELECT s.sla_id, s.version, s.{unit}, s.latency, s.ttft, s.tpot FROM {table} s \
         JOIN unnest($2::uuid[], $3::int4[], $4::timestamptz[]) AS k(sla_id, version, at) \
           ON s.sla_id = k.sla_id AND s.version = k.version AND s.{unit} = k.at \
         WHERE s.tenant_id = $1"
    );
    let write = format!(
        "INSERT INTO {table} (tenant_id, sla_id, version, {unit}, latency, ttft, tpot) \
         SELECT $1, * FROM UNNEST($2::uuid[], $3::int4[], $4::timestamptz[], $5::bytea[], $6::bytea[], $7::bytea[]) \
         ON CONFLICT (tenant_id, sla_id, version, {unit}) DO UPDATE SET \
             latency = EXCLUDED.latency, ttft = EXCLUDED.ttft, tpot = EXCLUDED.tpot, updated_at = now()"
    );
    for chunk in rows.chunks(BATCH) {
        let sla: Vec<uuid::Uuid> = chunk
            .iter()
            .map(|((i, _), _)| tracked[*i].id.uuid())
            .collect();
        let version: Vec<i32> = chunk
            .iter()
            .map(|((i, _), _)| tracked[*i].version)
            .collect();
        let at: Vec<DateTime<Utc>> = chunk.iter().map(|((_, at), _)| *at).collect();
        let stored: Vec<Stored> = sqlx::query_as(&read)
            .bind(tenant)
            .bind(&sla)
            .bind(&version)
            .bind(&at)
            .fetch_all(&mut **tx)
            .await
            .doing("reading sketches to merge")?;
        let mut stored: HashMap<(uuid::Uuid, i32, DateTime<Utc>), Sketches> = stored
            .into_iter()
            .map(|(s, v, at, l, tt, tp)| Ok(((s, v, at), Sketches::decode(l, tt, tp)?)))
            .collect::<Result<_, EvaluatorError>>()?;
        let mut columns: [Vec<Option<Vec<u8>>>; 3] = Default::default();
        for (n, (_, new)) in chunk.iter().enumerate() {
            let merged = match stored.remove(&(sla[n], version[n], at[n])) {
                Some(mut old) => {
                    old.merge(&new.sketches()?)?;
                    old
                }
                None => new.sketches()?,
            };
            for (column, bytes) in columns.iter_mut().zip(merged.encode()) {
                column.push(bytes);
            }
        }
        let [latency, ttft, tpot] = columns;
        sqlx::query(&write)
            .bind(tenant)
            .bind(&sla)
            .bind(&version)
            .bind(&at)
            .bind(&latency)
            .bind(&ttft)
            .bind(&tpot)
            .execute(&mut **tx)
            .await
            .doing("writing sketches")?;
    }
    Ok(())
}

/// One measure over one chart point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Events that carried the field.
    pub count: u64,
    /// In microseconds, one per quantile asked, each within
    /// [`RELATIVE_ERROR`]; empty when `count` is 0.
    pub quantiles: Vec<f64>,
}

impl Summary {
    fn of(sketch: &Option<DDSketch>, quantiles: &[f64]) -> Self {
        let Some(s) = sketch.as_ref().filter(|s| s.count() > 0) else {
            return Self {
                count: 0,
                quantiles: Vec::new(),
            };
        };
        Self {
            count: s.count() as u64,
            // Quantiles were checked to lie in [0, 1]; a non-empty sketch
            // answers each.
            quantiles: quantiles
                .iter()
                .map(|&q| s.quantile(q).ok().flatten().unwrap_or(f64::NAN))
                .collect(),
        }
    }
}

/// One point of a chart: `[start, start + step)`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    pub start: DateTime<Utc>,
    pub latency: Summary,
    pub ttft: Summary,
    pub tpot: Summary,
}

/// Latency, TTFT and TPOT quantiles of an SLA's service over `[from, to)`
/// in points of `step` (whole minutes; hours read the hourly sketches when
/// `from` and `step` are whole hours), every point present, empty ones with
/// count 0. One query; the sketches are merged in Rust.
///
/// Each minute is read from the newest SLA version that has it (a version
/// is backfilled from its coverage start, so a minute is never counted
/// twice). `from` is rounded down and `to` up to whole minutes.
#[tracing::instrument(skip(tx))]
pub async fn percentiles(
    tx: &mut TenantTx,
    sla: SlaId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    step: Duration,
    quantiles: &[f64],
) -> Result<Vec<Point>, EvaluatorError> {
    let invalid = |field, reason: String| EvaluatorError::InvalidQuery { field, reason };
    if step < Duration::minutes(1) || step.num_seconds() % 60 != 0 || step.subsec_nanos() != 0 {
        return Err(invalid(
            "step",
            format!(
                "must be a whole number of minutes, got {}s",
                step.num_seconds()
            ),
        ));
    }
    if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(invalid(
            "quantiles",
            format!("must each lie in [0, 1], got {q}"),
        ));
    }
    let from = floor_minute(from);
    let to = crate::minute::ceil_minute(to);
    if to <= from {
        return Err(invalid(
            "to",
            format!("must be after from ({from}), got {to}"),
        ));
    }
    let (span, step_secs) = ((to - from).num_seconds(), step.num_seconds());
    let steps = (span + step_secs - 1) / step_secs;
    if steps > MAX_POINTS {
        return Err(invalid(
            "step",
            format!(
                "gives {steps} points from {from} to {to}; at most {MAX_POINTS} are read at once"
            ),
        ));
    }
    let hourly = step.num_seconds() % 3600 == 0 && floor_hour(from) == from;
    let (table, unit) = if hourly {
        ("evaluator_sketches_hourly", "hour")
    } else {
        ("evaluator_sketches", "minute")
    };
    let rows: Vec<(DateTime<Utc>, Bytes, Bytes, Bytes)> = sqlx::query_as(&format!(
        "SELECT DISTINCT ON ({unit}) {unit}, latency, ttft, tpot FROM {table} \
             WHERE tenant_id = $1 AND sla_id = $2 AND {unit} >= $3 AND {unit} < $4 \
             ORDER BY {unit}, version DESC"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(from)
    .bind(to)
    .fetch_all(&mut **tx)
    .await
    .doing("reading sketches")?;
    let mut points: Vec<Sketches> = vec![Sketches::default(); usize::try_from(steps).unwrap_or(0)];
    for (at, latency, ttft, tpot) in rows {
        let n = usize::try_from((at - from).num_seconds() / step.num_seconds()).unwrap_or(0);
        if let Some(point) = points.get_mut(n) {
            point.merge(&Sketches::decode(latency, ttft, tpot)?)?;
        }
    }
    Ok(points
        .iter()
        .enumerate()
        .map(|(n, s)| Point {
            start: from + step * i32::try_from(n).unwrap_or(i32::MAX),
            latency: Summary::of(&s.latency, quantiles),
            ttft: Summary::of(&s.ttft, quantiles),
            tpot: Summary::of(&s.tpot, quantiles),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use slaproof_domain::event::EventView;

    fn sketch_of(values: &[u64]) -> Sketches {
        let mut s = Sketches::default();
        for &v in values {
            s.add(&EventView {
                latency_us: Some(v),
                ..EventView::default()
            });
        }
        s
    }

    /// The value of rank ⌊q·(n − 1)⌋, the rank DDSketch answers for.
    fn exact(sorted: &[u64], q: f64) -> f64 {
        sorted[(q * (sorted.len() as f64 - 1.0)) as usize] as f64
    }

    fn within(estimate: f64, exact: f64) -> bool {
        (estimate - exact).abs() <= RELATIVE_ERROR * exact + 1e-9
    }

    const QS: [f64; 6] = [0.0, 0.5, 0.9, 0.95, 0.99, 1.0];

    proptest! {
        #[test]
        fn quantiles_are_within_the_relative_error_of_exact_ones(
            values in prop::collection::vec(1u64..60_000_000, 1..2_000)
        ) {
            let s = sketch_of(&values);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let summary = Summary::of(&s.latency, &QS);
            prop_assert_eq!(summary.count, values.len() as u64);
            for (q, estimate) in QS.iter().zip(&summary.quantiles) {
                prop_assert!(within(*estimate, exact(&sorted, *q)), "q{} = {} vs {}", q, estimate, exact(&sorted, *q));
            }
        }

        #[test]
        fn merged_minutes_equal_one_sketch_of_all_and_survive_encoding(
            minutes in prop::collection::vec(prop::collection::vec(1u64..60_000_000, 0..300), 1..60)
        ) {
            let mut merged = Sketches::default();
            for minute in &minutes {
                let [l, t, p] = sketch_of(minute).encode();
                merged.merge(&Sketches::decode(l, t, p).unwrap()).unwrap();
            }
            let all: Vec<u64> = minutes.concat();
            let one = sketch_of(&all);
            let (m, o) = (Summary::of(&merged.latency, &QS), Summary::of(&one.latency, &QS));
            // Bins are keyed by value alone: the merge is the same sketch.
            prop_assert_eq!(&m, &o);
            if !all.is_empty() {
                let mut sorted = all;
                sorted.sort_unstable();
                for (q, estimate) in QS.iter().zip(&m.quantiles) {
                    prop_assert!(within(*estimate, exact(&sorted, *q)));
                }
            }
        }
    }

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

    #[test]
    fn an_event_without_the_field_leaves_its_sketch_empty() {
        let mut s = Sketches::default();
        s.add(&EventView {
            latency_us: Some(1_000),
            ..EventView::default()
        });
        assert!(s.ttft.is_none() && s.tpot.is_none());
        let [l, t, p] = s.encode();
        assert!(l.is_some() && t.is_none() && p.is_none());
        // A latency sketch of one value is a few dozen bytes.
        assert!(l.unwrap().len() < 64);
    }
}
