//! A day of the log for auditors: the day's head and the one before, the
//! previous log's right edge, and every leaf of the day's batch as stored
//! now; and the auditor's recomputation of the head from those files alone
//! ([`audit_day`], pure, which `slaproof log audit` runs offline).

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate};
use serde::{Deserialize, Serialize};
use slaproof_domain::transparency::note;
use slaproof_domain::transparency::tree::{self, Hashes};
use slaproof_domain::transparency::{Leaf, hash_from_hex, hash_hex, leaf_hash};
use slaproof_store::transparency as log;

use super::TreeHead;
use super::build::{day_start, internal, leaf_of};
use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// Everything an auditor needs to rebuild one day's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayExport {
    pub day: NaiveDate,
    pub head: ExportedHead,
    /// The previous day's head; none for the log's first day.
    pub previous: Option<ExportedHead>,
    /// The stored hashes of the previous log's right edge (stored index to
    /// hex hash): what appending to it reads.
    pub edge: BTreeMap<u64, String>,
    /// The day's leaves in log order, each its exact bytes; `None` where
    /// the event is no longer stored.
    pub leaves: Vec<Option<String>>,
}

/// A head as exported: the signed checkpoint is what counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedHead {
    pub day: NaiveDate,
    pub first_index: i64,
    pub size: i64,
    pub root: String,
    pub checkpoint: String,
    pub verifier_key: String,
}

impl From<TreeHead> for ExportedHead {
    fn from(h: TreeHead) -> Self {
        Self {
            day: h.day,
            first_index: h.first_index,
            size: h.size,
            root: h.root,
            checkpoint: h.checkpoint,
            verifier_key: h.verifier_key,
        }
    }
}

impl App {
    /// The day's export, for auditors (`attestation:read`, the provider's
    /// or an auditor's: the leaves are every customer's requests, so a
    /// customer's user is refused).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn export_log_day(
        &self,
        caller: &Caller,
        day: NaiveDate,
    ) -> Result<DayExport, AppError> {
        caller.require_provider(Scope::AttestationRead)?;
        let secrets = self.log_secrets().await?;
        let mut tx = self.tx(caller).await?;
        let head = log::head(&mut tx, day).await?.ok_or(AppError::NotFound {
            what: "tree head",
            key: day.to_string(),
        })?;
        let previous = log::head(&mut tx, day - Duration::days(1)).await?;
        let prev_size = head.first_index as u64;
        let edge_hashes = log::read_hashes(&mut tx, &tree::append_reads(prev_size)).await?;
        let mut edge = BTreeMap::new();
        for index in tree::append_reads(prev_size) {
            let hash = edge_hashes.get(index).ok_or_else(|| {
                AppError::Conflict(format!("the log's stored hash {index} is missing"))
            })?;
            edge.insert(index, hash_hex(&hash));
        }
        let rows = log::batch_events(&mut tx, head.first_index, head.size).await?;
        tx.commit().await?;
        let leaves = rows
            .into_iter()
            .map(|(_, late, event)| {
                event
                    .map(|e| {
                        String::from_utf8(
                            leaf_of(&secrets.leaf_salt, caller.tenant(), &e, late).bytes(),
                        )
                        .map_err(internal)
                    })
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        Ok(DayExport {
            day,
            head: TreeHead::from(head).into(),
            previous: previous.map(|p| TreeHead::from(p).into()),
            edge,
            leaves,
        })
    }
}

/// What an auditor's recomputation of a day found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DayAudit {
    pub day: NaiveDate,
    pub leaves: u64,
    pub late: u64,
    /// Each problem found, named; none when the day checks.
    pub problems: Vec<String>,
}

/// Rebuilds the day's head from its export alone: both checkpoints signed
/// by `verifier_key`, the previous edge leading to the previous root, the
/// day's leaves appended to it leading to the day's root, and each leaf
/// in its day (late ones before it).
pub fn audit_day(export: &DayExport, verifier_key: &str) -> DayAudit {
    audit_and_read_day(export, verifier_key).0
}

/// [`audit_day`], and the leaves it read (those that parse), for a caller
/// that goes on to use them (the recount of a disputed period's days):
/// each leaf is parsed once.
pub fn audit_and_read_day(export: &DayExport, verifier_key: &str) -> (DayAudit, Vec<Leaf>) {
    let mut problems = Vec::new();
    let mut read = Vec::with_capacity(export.leaves.len());
    let mut late = 0;
    let head = match note::open(&export.head.checkpoint, verifier_key) {
        Ok(h) => Some(h),
        Err(err) => {
            problems.push(format!("the day's checkpoint: {err}"));
            None
        }
    };
    let prev_size = export.head.first_index.max(0) as u64;
    let mut edge = Hashes::new();
    for (index, hex) in &export.edge {
        match hash_from_hex("edge", hex) {
            Ok(h) => edge.insert(*index, h),
            Err(err) => problems.push(err.to_string()),
        }
    }
    match &export.previous {
        Some(prev) => match note::open(&prev.checkpoint, verifier_key) {
            Ok(p) if p.size != prev_size => problems.push(format!(
                "the previous head holds {} leaves, the day starts at {prev_size}",
                p.size
            )),
            Ok(p) => match tree::root(prev_size, &edge) {
                Ok(root) if root == p.root => {}
                _ => problems.push("the edge does not lead to the previous root".into()),
            },
            Err(err) => problems.push(format!("the previous checkpoint: {err}")),
        },
        None if prev_size > 0 => {
            problems.push("the day does not start the log, but no previous head is given".into())
        }
        None => {}
    }
    let start = day_start(export.day).timestamp_micros();
    let end = start + 86_400_000_000;
    let mut hashes = Vec::with_capacity(export.leaves.len());
    for (i, leaf) in export.leaves.iter().enumerate() {
        let index = prev_size + i as u64;
        let Some(bytes) = leaf else {
            problems.push(format!("leaf {index}: its event is no longer stored"));
            hashes.push(tree::EMPTY_HASH);
            continue;
        };
        hashes.push(leaf_hash(bytes.as_bytes()));
        match Leaf::parse(bytes.as_bytes()) {
            Ok(l) => {
                late += u64::from(l.late);
                let in_day = (start..end).contains(&l.occurred_at_us);
                if l.late && l.occurred_at_us >= start || !l.late && !in_day {
                    problems.push(format!(
                        "leaf {index} ({}): its time does not fit its batch",
                        l.event
                    ));
                }
                read.push(l);
            }
            Err(err) => problems.push(format!("leaf {index}: not a leaf ({err})")),
        }
    }
    let size = prev_size + hashes.len() as u64;
    if size != export.head.size.max(0) as u64 {
        problems.push(format!(
            "the export has {} leaves, the head counts {}",
            hashes.len(),
            export.head.size - export.head.first_index
        ));
    }
    match tree::append(prev_size, hashes, &edge) {
        Ok(added) => {
            let base = tree::stored_hash_count(prev_size);
            for (k, h) in added.into_iter().enumerate() {
                edge.insert(base + k as u64, h);
            }
            match (tree::root(size, &edge), &head) {
                (Ok(root), Some(head)) if root == head.root && head.size == size => {}
                (Ok(root), Some(_)) => problems.push(format!(
                    "the day's leaves rebuild the root {}, not the signed head's",
                    hash_hex(&root)
                )),
                (Err(err), _) => problems.push(err.to_string()),
                (Ok(_), None) => {}
            }
        }
        Err(err) => problems.push(format!("the edge is incomplete: {err}")),
    }
    let audit = DayAudit {
        day: export.day,
        leaves: export.leaves.len() as u64,
        late,
        problems,
    };
    (audit, read)
}
