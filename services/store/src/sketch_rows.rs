//! The evaluator's chart sketch rows (`evaluator_sketches` per minute, `evaluator_sketches_hourly` per hour) as the rollups write them; `charts` reads them back.
//!
//! Sketches do not merge in SQL: the evaluator inserts the rows that are
//! new, reads the ones that are taken, merges them in Rust and writes them
//! back, under the tenant's watermark lock (no other run writes these rows
//! in between).

use chrono::{DateTime, Utc};

use crate::{StoreError, TenantTx};

/// A sketch row's key: SLA, version, minute (or hour).
pub type SketchKey = (uuid::Uuid, i32, DateTime<Utc>);

/// A row's three sketch columns (latency, TTFT, TPOT), each encoded or
/// none when no event of the row carried the field.
pub type SketchColumns = [Option<Vec<u8>>; 3];

/// Which of the two tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SketchUnit {
    Minute,
    Hour,
}

impl SketchUnit {
    fn table(self) -> &'static str {
        match self {
            SketchUnit::Minute => "evaluator_sketches",
            SketchUnit::Hour => "evaluator_sketches_hourly",
        }
    }

    fn column(self) -> &'static str {
        match self {
            SketchUnit::Minute => "minute",
            SketchUnit::Hour => "hour",
        }
    }
}

/// Rows as the arrays the statements bind.
struct Arrays {
    sla: Vec<uuid::Uuid>,
    version: Vec<i32>,
    at: Vec<DateTime<Utc>>,
    columns: [Vec<Option<Vec<u8>>>; 3],
}

impl Arrays {
    fn new(keys: &[SketchKey], rows: Vec<SketchColumns>) -> Self {
        let mut columns: [Vec<Option<Vec<u8>>>; 3] = Default::default();
        for row in rows {
            for (column, bytes) in columns.iter_mut().zip(row) {
                column.push(bytes);
            }
        }
        Arrays {
            sla: keys.iter().map(|k| k.0).collect(),
            version: keys.iter().map(|k| k.1).collect(),
            at: keys.iter().map(|k| k.2).collect(),
            columns,
        }
    }
}

/// Inserts the rows whose key has none yet (`keys[n]` with `rows[n]`) and
/// answers the keys inserted; the others are left as they are.
pub async fn insert_new(
    tx: &mut TenantTx,
    unit: SketchUnit,
    keys: &[SketchKey],
    rows: Vec<SketchColumns>,
) -> Result<Vec<SketchKey>, StoreError> {
    let (table, column) = (unit.table(), unit.column());
    let sql = format!(
        "INSERT INTO {table} (tenant_id, sla_id, version, {column}, latency, ttft, tpot, updated_at) \
         SELECT $1, u.*, now() FROM UNNEST($2::uuid[], $3::int4[], $4::timestamptz[], \
             $5::bytea[], $6::bytea[], $7::bytea[]) AS u \
         ON CONFLICT (tenant_id, sla_id, version, {column}) DO NOTHING \
         RETURNING sla_id, version, {column}"
    );
    write(tx, &sql, keys, rows).await
}

/// The stored rows of `keys` (those that exist), in no order.
pub async fn read(
    tx: &mut TenantTx,
    unit: SketchUnit,
    keys: &[SketchKey],
) -> Result<Vec<(SketchKey, SketchColumns)>, StoreError> {
    type Row = (
        uuid::Uuid,
        i32,
        DateTime<Utc>,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
    );
    let (table, column) = (unit.table(), unit.column());
    let a = Arrays::new(keys, Vec::new());
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT s.sla_id, s.version, s.{column}, s.latency, s.ttft, s.tpot FROM {table} s \
         JOIN unnest($2::uuid[], $3::int4[], $4::timestamptz[]) AS k(sla_id, version, at) \
           ON s.sla_id = k.sla_id AND s.version = k.version AND s.{column} = k.at \
         WHERE s.tenant_id = $1"
    ))
    .bind(tx.tenant().uuid())
    .bind(&a.sla)
    .bind(&a.version)
    .bind(&a.at)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(s, v, at, l, tt, tp)| ((s, v, at), [l, tt, tp]))
        .collect())
}

/// Replaces the sketches of existing rows (`keys[n]` with `rows[n]`).
pub async fn update(
    tx: &mut TenantTx,
    unit: SketchUnit,
    keys: &[SketchKey],
    rows: Vec<SketchColumns>,
) -> Result<(), StoreError> {
    let (table, column) = (unit.table(), unit.column());
    let sql = format!(
        "UPDATE {table} s SET latency = u.latency, ttft = u.ttft, tpot = u.tpot, updated_at = now() \
         FROM UNNEST($2::uuid[], $3::int4[], $4::timestamptz[], $5::bytea[], $6::bytea[], $7::bytea[]) \
             AS u(sla_id, version, at, latency, ttft, tpot) \
         WHERE s.tenant_id = $1 AND s.sla_id = u.sla_id AND s.version = u.version AND s.{column} = u.at \
         RETURNING s.sla_id, s.version, s.{column}"
    );
    write(tx, &sql, keys, rows).await?;
    Ok(())
}

/// Runs a write of [`insert_new`] or [`update`] with the rows bound as
/// `$1` (tenant) to `$7`; answers the keys it wrote.
async fn write(
    tx: &mut TenantTx,
    sql: &str,
    keys: &[SketchKey],
    rows: Vec<SketchColumns>,
) -> Result<Vec<SketchKey>, StoreError> {
    let a = Arrays::new(keys, rows);
    let [latency, ttft, tpot] = &a.columns;
    Ok(sqlx::query_as(sql)
        .bind(tx.tenant().uuid())
        .bind(&a.sla)
        .bind(&a.version)
        .bind(&a.at)
        .bind(latency)
        .bind(ttft)
        .bind(tpot)
        .fetch_all(&mut **tx)
        .await?)
}
