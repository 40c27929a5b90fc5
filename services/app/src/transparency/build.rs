//! Building each tenant's log a day at a time: once a day is past its
//! grace, every event of it stored by then (and every event of an earlier
//! day stored since its day was built, marked late) is appended in the
//! log's order, in one transaction with the day's signed head.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use slaproof_domain::ids::{EventId, TenantId};
use slaproof_domain::transparency::tree::{self, stored_hash_count};
use slaproof_domain::transparency::{Hash, Leaf, LeafSalt};
use slaproof_store::jobs::{self, NewJob};
use slaproof_store::transparency::{self as log, DayHead, LoggedEvent, NewEntry};
use slaproof_store::{TenantTx, tenants};

use super::{LogSecrets, TransparencySettings};
use crate::{App, AppError};

/// How long before the last build an event it missed can have been
/// stored: `received_at` is its ingest transaction's start, and ingest
/// transactions last seconds.
pub const LATE_SLACK: Duration = Duration::hours(1);

/// One day appended to a tenant's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltDay {
    pub tenant: TenantId,
    pub day: NaiveDate,
    pub leaves: u64,
    pub late: u64,
    pub size: u64,
}

/// The leaf an event becomes in `tenant`'s log.
pub fn leaf_of(secret: &[u8], tenant: TenantId, event: &LoggedEvent, late: bool) -> Leaf {
    Leaf {
        v: Leaf::VERSION,
        salt: LeafSalt::derive(secret, tenant.uuid(), event.id).hex(),
        event: EventId::from_uuid(event.id).to_string(),
        request_id: event.request_id.clone(),
        source: event.source.clone(),
        service: event.service.clone(),
        customer: event.customer.clone(),
        model: event.model.clone(),
        occurred_at_us: event.occurred_at.timestamp_micros(),
        received_at_us: event.received_at.timestamp_micros(),
        late,
        status: event.status,
        error_class: event.error_class.clone(),
        latency_us: event.latency_us,
        ttft_us: event.ttft_us,
        tpot_us: event.tpot_us,
        input_tokens: event.input_tokens,
        output_tokens: event.output_tokens,
        streaming: event.streaming,
    }
}

/// Midnight UTC opening `day`.
pub(crate) fn day_start(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc()
}

impl App {
    /// Builds every tenant's due days, tenant by tenant; a tenant another
    /// replica is building is left to it. A tenant that fails is logged
    /// and left for the next round, so one cannot stop the others.
    #[tracing::instrument(skip(self, settings))]
    pub async fn build_transparency_logs(
        &self,
        settings: &TransparencySettings,
        now: DateTime<Utc>,
    ) -> Result<Vec<BuiltDay>, AppError> {
        let secrets = self.log_secrets().await?;
        let mut built = Vec::new();
        for tenant in tenants::list(&self.db).await? {
            match self
                .build_tenant_log(&secrets, settings, tenant.id, now)
                .await
            {
                Ok(days) => built.extend(days),
                Err(err) => {
                    tracing::error!(tenant = %tenant.id, error = %err, "building the transparency log failed")
                }
            }
        }
        Ok(built)
    }

    /// Builds `tenant`'s due days, one transaction each.
    pub async fn build_tenant_log(
        &self,
        secrets: &LogSecrets,
        settings: &TransparencySettings,
        tenant: TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<BuiltDay>, AppError> {
        let mut built = Vec::new();
        loop {
            let mut tx = self.db.tenant_tx(tenant).await?;
            let Some(state) = log::lock_log(&mut tx).await? else {
                return Ok(built);
            };
            let lookback = Duration::days(i64::from(settings.lookback_days));
            let day = match state.logged_through {
                Some(last) => last.succ_opt().expect("a day follows"),
                // A new log starts on the day of the earliest event it can
                // take; none yet, no log yet.
                None => match log::first_unlogged(&mut tx, now - lookback).await? {
                    Some(first) => first.date_naive(),
                    None => {
                        tx.commit().await?;
                        return Ok(built);
                    }
                },
            };
            let due = day_start(day) + Duration::days(1) + settings.grace();
            if due > now {
                tx.commit().await?;
                return Ok(built);
            }
            let done = self
                .append_day(&mut tx, secrets, settings, state.size, day, now)
                .await?;
            tx.commit().await?;
            tracing::info!(tenant = %tenant, day = %day, leaves = done.leaves, late = done.late, size = done.size, "transparency log day built");
            built.push(done);
        }
    }

    /// Appends `day`'s batch to a log of `size` leaves and records its head.
    async fn append_day(
        &self,
        tx: &mut TenantTx,
        secrets: &LogSecrets,
        settings: &TransparencySettings,
        size: u64,
        day: NaiveDate,
        now: DateTime<Utc>,
    ) -> Result<BuiltDay, AppError> {
        let tenant = tx.tenant();
        let start = day_start(day);
        let until = start + Duration::days(1);
        let first_index = size;
        let mut size = size;
        let mut late_count = 0;
        // Late events first (they occurred before the day), then the day's
        // own: the log's order is time, then id. A new log takes no late
        // events: its first day is its earliest.
        let mut batches = vec![log::Batch::Day { start, until }];
        if let Some(last) = log::latest_head(tx).await? {
            batches.insert(
                0,
                log::Batch::Late {
                    since: start - Duration::days(i64::from(settings.lookback_days)),
                    start,
                    // An event the last build missed was stored by a
                    // transaction that began at most LATE_SLACK before it.
                    received_from: last.built_at - LATE_SLACK,
                },
            );
        }
        // Page by page, so a day of millions of events is never held whole:
        // each page is hashed, appended and written before the next.
        for batch in batches {
            let mut after = None;
            loop {
                let page = log::batch_page(tx, batch, after, settings.page_size).await?;
                let Some(last) = page.last() else { break };
                after = Some((last.occurred_at, last.id));
                let mut leaves = Vec::with_capacity(page.len());
                let mut entries = Vec::with_capacity(page.len());
                for (event, index) in page.iter().zip(size..) {
                    let late = event.occurred_at < start;
                    late_count += u64::from(late);
                    leaves.push(leaf_of(&secrets.leaf_salt, tenant, event, late).hash());
                    entries.push(NewEntry {
                        occurred_at: event.occurred_at,
                        event_id: event.id,
                        leaf_index: index,
                        late,
                        request_id: event.request_id.clone(),
                        customer: event.customer.clone(),
                    });
                }
                let edge = log::read_hashes(tx, &tree::append_reads(size)).await?;
                let added = tree::append(size, leaves, &edge).map_err(internal)?;
                log::append_hashes(tx, stored_hash_count(size), &added).await?;
                log::insert_entries(tx, day, &entries).await?;
                size += entries.len() as u64;
            }
        }
        let hashes = log::read_hashes(tx, &tree::root_reads(size)).await?;
        let root: Hash = tree::root(size, &hashes).map_err(internal)?;
        let key = secrets.key(settings, tenant)?;
        log::record_head(
            tx,
            &DayHead {
                log_day: day,
                first_index: first_index as i64,
                size: size as i64,
                root: root.0.to_vec(),
                late_entries: late_count as i64,
                checkpoint: key.sign(size, root).map_err(internal)?,
                verifier_key: key.verifier_key().to_owned(),
                built_at: now,
                anchor: None,
            },
        )
        .await?;
        // The day's head goes on chain with the attestation worker, from
        // this transaction: a built day is always anchored.
        jobs::enqueue(
            tx,
            &NewJob {
                kind: jobs::LOG_ANCHOR.to_owned(),
                payload: serde_json::json!({ "day": day }),
                dedup_key: Some(day.to_string()),
                run_at: now,
            },
        )
        .await?;
        Ok(BuiltDay {
            tenant,
            day,
            leaves: size - first_index,
            late: late_count,
            size,
        })
    }
}

pub(crate) fn internal(err: impl std::error::Error + Send + Sync + 'static) -> AppError {
    AppError::Internal(Box::new(err))
}
