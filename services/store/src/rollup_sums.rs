//! Sums of the evaluator's rollups (`evaluator_rollups` by minute, `evaluator_rollups_hourly` by hour) per objective over time ranges: what an evaluation counts.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::SlaId;
use slaproof_domain::minute::{ceil_hour, floor_hour};

use crate::{StoreError, TenantTx};

/// An objective's sums over one range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sums {
    pub good: i64,
    pub total: i64,
    pub late_folded: i64,
    pub late_good: i64,
    pub late_total: i64,
}

/// The sums of `sla`'s `version` per objective over each of `ranges`
/// (`[from, to)`, whole minutes), in one statement: `out[i]` holds the
/// objectives with rollups in `ranges[i]`. Whole hours are read from the
/// hourly rows, the partial hours at both edges from the minute rows:
/// `[from, h0) ∪ [h0, h1) ∪ [h1, to)`.
#[tracing::instrument(skip(tx, ranges))]
pub async fn over_ranges(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    ranges: &[(DateTime<Utc>, DateTime<Utc>)],
) -> Result<Vec<Vec<(String, Sums)>>, StoreError> {
    let mut out: Vec<Vec<(String, Sums)>> = vec![Vec::new(); ranges.len()];
    let mut keys = Vec::new();
    let (mut froms, mut h0s, mut h1s, mut tos) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, &(from, to)) in ranges.iter().enumerate() {
        if from >= to {
            continue;
        }
        let (h0, h1) = (ceil_hour(from), floor_hour(to));
        let (h0, h1) = if h0 < h1 { (h0, h1) } else { (to, to) };
        keys.push(i32::try_from(i).unwrap_or(i32::MAX));
        froms.push(from);
        h0s.push(h0);
        h1s.push(h1);
        tos.push(to);
    }
    if keys.is_empty() {
        return Ok(out);
    }
    type Row = (i32, String, i64, i64, i64, i64, i64);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT r.k, p.objective, sum(p.good)::int8, sum(p.total)::int8, sum(p.late_folded)::int8, \
             sum(p.late_good)::int8, sum(p.late_total)::int8 \
         FROM unnest($4::int4[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[]) \
             AS r(k, f, h0, h1, t) \
         CROSS JOIN LATERAL ( \
           SELECT objective, good, total, late_folded, late_good, late_total FROM evaluator_rollups_hourly \
           WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND hour >= r.h0 AND hour < r.h1 \
           UNION ALL \
           SELECT objective, good, total, late_folded, late_good, late_total FROM evaluator_rollups \
           WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND minute >= r.f AND minute < r.h0 \
           UNION ALL \
           SELECT objective, good, total, late_folded, late_good, late_total FROM evaluator_rollups \
           WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND minute >= r.h1 AND minute < r.t \
         ) AS p \
         GROUP BY r.k, p.objective",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(&keys)
    .bind(&froms)
    .bind(&h0s)
    .bind(&h1s)
    .bind(&tos)
    .fetch_all(&mut **tx)
    .await?;
    for (k, objective, good, total, late_folded, late_good, late_total) in rows {
        if let Some(range) = usize::try_from(k).ok().and_then(|k| out.get_mut(k)) {
            range.push((
                objective,
                Sums {
                    good,
                    total,
                    late_folded,
                    late_good,
                    late_total,
                },
            ));
        }
    }
    Ok(out)
}

/// The good and total sums of `sla`'s `version` per objective over the
/// minutes of the ranges `[starts[i], ends[i])` (disjoint: the whole
/// minutes of maintenance windows).
#[tracing::instrument(skip(tx, starts, ends))]
pub async fn over_minutes(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    starts: &[DateTime<Utc>],
    ends: &[DateTime<Utc>],
) -> Result<Vec<(String, i64, i64)>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT r.objective, sum(r.good)::int8, sum(r.total)::int8 FROM evaluator_rollups r \
         JOIN unnest($4::timestamptz[], $5::timestamptz[]) AS w(s, e) ON r.minute >= w.s AND r.minute < w.e \
         WHERE r.tenant_id = $1 AND r.sla_id = $2 AND r.version = $3 \
         GROUP BY r.objective",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(starts)
    .bind(ends)
    .fetch_all(&mut **tx)
    .await?)
}
