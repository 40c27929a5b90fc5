//! Requests against the log: the inclusion proof of one request id, and
//! the check of a client-side log, kept as a report. Both need
//! `request:verify`; a customer's user reaches only the requests of the
//! services its SLAs measure (the one SLA's for an embed token).

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use slaproof_domain::ids::EventId;
use slaproof_domain::transparency::check::{self, Finding, Observation, Tolerance};
use slaproof_domain::transparency::tree;
use slaproof_domain::transparency::{Hash, hash_hex};
use slaproof_store::TenantTx;
use slaproof_store::transparency::{self as log, CheckSummary, DayHead, LoggedEvent};

use super::build::{internal, leaf_of};
use super::{LogSecrets, TreeHead, stored_hash};
use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// The most requests one check takes.
pub const MAX_CHECKED: usize = 10_000;
/// The longest request id looked up.
const MAX_REQUEST_ID: usize = 256;

/// Where a request stands in the log, as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogStatus {
    /// In a built day, and its proof leads to the head.
    Logged,
    /// In a built day, but the stored event no longer hashes to its leaf.
    Altered,
    /// Stored, its day not built yet.
    NotLogged,
}

/// An inclusion proof for a request: the leaf (its exact bytes, which a
/// verifier hashes), its index, the head and the audit path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RequestProof {
    pub request_id: String,
    pub event: String,
    pub status: LogStatus,
    /// The leaf as canonical JSON: hash `0x00 ‖ these bytes` with SHA-256.
    pub leaf: String,
    pub leaf_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaf_index: Option<i64>,
    /// The day whose batch logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_day: Option<NaiveDate>,
    /// The head the proof leads to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<TreeHead>,
    /// RFC 9162 inclusion proof, hex, leaf to root.
    pub proof: Vec<String>,
}

/// One request as the customer's client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedRequest {
    pub request_id: String,
    /// The HTTP status the client received.
    #[serde(default)]
    pub status: Option<i32>,
    /// The latency the client measured, in milliseconds.
    #[serde(default)]
    pub latency_ms: Option<f64>,
}

/// How far recorded latencies may stand from observed ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTolerance {
    /// Absolute, in milliseconds (default 100).
    pub latency_ms: f64,
    /// Relative to the observed latency (default 0.1); the larger wins.
    pub latency_ratio: f64,
}

/// A client-side log to check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequestsIn {
    /// At most 10,000 requests.
    pub requests: Vec<ObservedRequest>,
    #[serde(default)]
    pub tolerance: Option<CheckTolerance>,
    /// The stretch the customer's records are complete for: every request
    /// it sent that started in it is among `requests`. The check then also
    /// reports the requests logged for the customer in it that its records
    /// do not hold (`unclaimed`: traffic it did not send, counted for it).
    /// A customer's token only; at most 31 days.
    #[serde(default)]
    pub covers: Option<CheckSpan>,
}

/// `[from, to)`, RFC 3339.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckSpan {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// The requests logged for the customer in the span its records cover
/// that its records do not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UnclaimedReport {
    pub covers: CheckSpan,
    /// How many, in all.
    pub count: i64,
    /// How many per UTC day of their start.
    pub by_day: Vec<UnclaimedDay>,
    /// The first of them in time order, at most 100.
    pub first: Vec<UnclaimedItem>,
}

/// Unclaimed requests of one day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UnclaimedDay {
    pub day: NaiveDate,
    pub count: i64,
}

/// One logged request the customer's records do not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UnclaimedItem {
    /// Absent when the event names no request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub event: String,
    pub occurred_at: DateTime<Utc>,
    pub log_day: NaiveDate,
    pub leaf_index: i64,
}

/// The longest stretch a check's `covers` may name.
const MAX_COVERED_DAYS: i64 = 31;
/// Unclaimed requests listed in a report.
const UNCLAIMED_LISTED: i64 = 100;

/// What the check found for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckFinding {
    Included,
    Disagreeing,
    Altered,
    NotLogged,
    Missing,
}

impl From<Finding> for CheckFinding {
    fn from(f: Finding) -> Self {
        match f {
            Finding::Included => Self::Included,
            Finding::Disagreeing => Self::Disagreeing,
            Finding::Altered => Self::Altered,
            Finding::NotLogged => Self::NotLogged,
            Finding::Missing => Self::Missing,
        }
    }
}

/// A field on which the log and the client disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckDifference {
    pub field: String,
    pub observed: String,
    pub recorded: String,
}

/// One request's line in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckItem {
    pub request_id: String,
    pub finding: CheckFinding,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_index: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_day: Option<NaiveDate>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<CheckDifference>,
}

/// Counts by finding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckCounts {
    pub requests: i32,
    pub included: i32,
    pub disagreeing: i32,
    pub altered: i32,
    pub not_logged: i32,
    pub missing: i32,
}

/// A check's report: kept, and readable again by its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckReport {
    #[schema(value_type = String)]
    pub id: uuid::Uuid,
    pub checked_at: DateTime<Utc>,
    pub checked_by: String,
    /// The head every proof was checked against (the latest built day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_day: Option<NaiveDate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_root: Option<String>,
    pub tolerance: CheckTolerance,
    pub counts: CheckCounts,
    pub items: Vec<CheckItem>,
    /// With `covers`: what was logged for the customer that it did not
    /// send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unclaimed: Option<UnclaimedReport>,
}

/// The last check's summary, for the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct LastCheck {
    #[schema(value_type = String)]
    pub id: uuid::Uuid,
    pub checked_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_day: Option<NaiveDate>,
    pub counts: CheckCounts,
}

impl From<CheckSummary> for LastCheck {
    fn from(s: CheckSummary) -> Self {
        Self {
            id: s.id,
            checked_at: s.checked_at,
            head_day: s.head_day,
            counts: CheckCounts {
                requests: s.requests,
                included: s.included,
                disagreeing: s.disagreeing,
                altered: s.altered,
                not_logged: s.not_logged,
                missing: s.missing,
            },
        }
    }
}

fn check_request_id(field: &str, id: &str) -> Result<(), AppError> {
    if id.is_empty() || id.len() > MAX_REQUEST_ID {
        return Err(AppError::invalid(
            field,
            format!("a request id is 1 to {MAX_REQUEST_ID} bytes"),
        ));
    }
    // Postgres text cannot hold NUL: no stored request id has one.
    if id.contains('\0') {
        return Err(AppError::invalid(
            field,
            "a request id has no NUL character",
        ));
    }
    Ok(())
}

impl App {
    /// Whose requests the caller may look up: a customer its own (the
    /// events that name its reference), whichever SLA its token is for;
    /// `None` for the provider (all of its tenant's).
    async fn request_customer(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
    ) -> Result<Option<String>, AppError> {
        match caller.customer() {
            None => Ok(None),
            Some(customer) => Ok(Some(
                slaproof_store::customers::find(tx, customer)
                    .await?
                    .external_ref,
            )),
        }
    }

    /// Where events no log holds yet can be: from the first day not built,
    /// less the late window (events of earlier days stored since); `None`
    /// for a tenant with no log yet.
    async fn unlogged_since(&self, tx: &mut TenantTx) -> Result<Option<DateTime<Utc>>, AppError> {
        let lookback = chrono::Duration::days(i64::from(
            super::TransparencySettings::default().lookback_days,
        ));
        Ok(log::log_state(tx)
            .await?
            .and_then(|s| s.logged_through)
            .map(|last| super::build::day_start(last) + chrono::Duration::days(1) - lookback))
    }

    /// The inclusion proof of the request `request_id` against the head of
    /// `day` (the latest built when `None`).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn request_proof(
        &self,
        caller: &Caller,
        request_id: &str,
        day: Option<NaiveDate>,
    ) -> Result<RequestProof, AppError> {
        caller.require(Scope::RequestVerify)?;
        check_request_id("request_id", request_id)?;
        let secrets = self.log_secrets().await?;
        let mut tx = self.tx(caller).await?;
        let customer = self.request_customer(&mut tx, caller).await?;
        let found = {
            let since = self.unlogged_since(&mut tx).await?;
            log::events_by_request(
                &mut tx,
                &[request_id.to_owned()],
                customer.as_deref(),
                since,
            )
            .await?
        };
        let event = found.into_iter().next().ok_or_else(|| AppError::NotFound {
            what: "request",
            key: request_id.to_owned(),
        })?;
        let entry = log::entry(&mut tx, event.occurred_at, event.id).await?;
        let leaf = leaf_of(
            &secrets.leaf_salt,
            caller.tenant(),
            &event,
            entry.is_some_and(|e| e.late),
        );
        let mut answer = RequestProof {
            request_id: request_id.to_owned(),
            event: EventId::from_uuid(event.id).to_string(),
            status: LogStatus::NotLogged,
            leaf: String::from_utf8(leaf.bytes()).map_err(internal)?,
            leaf_hash: hash_hex(&leaf.hash()),
            leaf_index: None,
            log_day: None,
            head: None,
            proof: Vec::new(),
        };
        let Some(entry) = entry else {
            tx.commit().await?;
            return Ok(answer);
        };
        let head = match day {
            Some(day) => log::head(&mut tx, day).await?.ok_or(AppError::NotFound {
                what: "tree head",
                key: day.to_string(),
            })?,
            None => log::latest_head(&mut tx)
                .await?
                .ok_or_else(|| internal(std::io::Error::other("a logged event without a head")))?,
        };
        if head.size <= entry.leaf_index {
            return Err(AppError::invalid(
                "day",
                format!(
                    "the head of {} predates the request's batch ({})",
                    head.log_day, entry.log_day
                ),
            ));
        }
        let index = entry.leaf_index as u64;
        let size = head.size as u64;
        let hashes = log::read_hashes(&mut tx, &tree::inclusion_reads(size, index)).await?;
        let proof = tree::prove_inclusion(size, index, &hashes).map_err(internal)?;
        tx.commit().await?;
        let root = stored_hash(&head.root)?;
        answer.status = match tree::verify_inclusion(&proof, size, root, index, leaf.hash()) {
            Ok(()) => LogStatus::Logged,
            Err(_) => LogStatus::Altered,
        };
        answer.leaf_index = Some(entry.leaf_index);
        answer.log_day = Some(entry.log_day);
        answer.head = Some(head.into());
        answer.proof = proof.iter().map(hash_hex).collect();
        Ok(answer)
    }

    /// Checks a client-side log against the latest built head and keeps
    /// the report.
    #[tracing::instrument(skip(self, caller, input), fields(tenant = %caller.tenant(), requests = input.requests.len()))]
    pub async fn check_requests(
        &self,
        caller: &Caller,
        input: CheckRequestsIn,
    ) -> Result<CheckReport, AppError> {
        caller.require(Scope::RequestVerify)?;
        if input.requests.is_empty() || input.requests.len() > MAX_CHECKED {
            return Err(AppError::invalid(
                "requests",
                format!("a check takes 1 to {MAX_CHECKED} requests"),
            ));
        }
        for (i, r) in input.requests.iter().enumerate() {
            check_request_id(&format!("requests[{i}].request_id"), &r.request_id)?;
            if r.latency_ms.is_some_and(|l| !l.is_finite() || l < 0.0) {
                return Err(AppError::invalid(
                    format!("requests[{i}].latency_ms"),
                    "must be a finite number at or above 0",
                ));
            }
        }
        let tolerance = input
            .tolerance
            .map_or_else(Tolerance::default, |t| Tolerance {
                latency_ms: t.latency_ms,
                latency_ratio: t.latency_ratio,
            });
        tolerance
            .validate()
            .map_err(|message| AppError::invalid("tolerance", message))?;
        if let Some(span) = input.covers {
            if caller.customer().is_none() {
                return Err(AppError::invalid(
                    "covers",
                    "names the stretch a customer's own records are complete for: call with a customer's token",
                ));
            }
            if span.to <= span.from
                || span.to - span.from > chrono::Duration::days(MAX_COVERED_DAYS)
            {
                return Err(AppError::invalid(
                    "covers",
                    format!(
                        "must run forwards (from before to), over at most {MAX_COVERED_DAYS} days"
                    ),
                ));
            }
        }

        let secrets = self.log_secrets().await?;
        let mut tx = self.tx(caller).await?;
        let customer = self.request_customer(&mut tx, caller).await?;
        let ids: Vec<String> = input
            .requests
            .iter()
            .map(|r| r.request_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // The newest event per request id.
        let mut events: HashMap<String, LoggedEvent> = HashMap::new();
        let since = self.unlogged_since(&mut tx).await?;
        for e in log::events_by_request(&mut tx, &ids, customer.as_deref(), since).await? {
            if let Some(id) = e.request_id.clone() {
                events.entry(id).or_insert(e);
            }
        }
        let keys: Vec<_> = events.values().map(|e| (e.occurred_at, e.id)).collect();
        let entries: HashMap<_, _> = log::entries_of(&mut tx, &keys).await?.into_iter().collect();
        let head = log::latest_head(&mut tx).await?;
        let proofs = match &head {
            Some(head) => {
                self.proofs(&mut tx, head, entries.values().map(|e| e.leaf_index))
                    .await?
            }
            None => HashMap::new(),
        };
        let unclaimed = match (input.covers, customer.as_deref()) {
            (Some(covers), Some(reference)) => {
                let (by_day, first) = log::unclaimed(
                    &mut tx,
                    reference,
                    covers.from,
                    covers.to,
                    &ids,
                    UNCLAIMED_LISTED,
                )
                .await?;
                Some(UnclaimedReport {
                    covers,
                    count: by_day.iter().map(|(_, n)| n).sum(),
                    by_day: by_day
                        .into_iter()
                        .map(|(day, count)| UnclaimedDay { day, count })
                        .collect(),
                    first: first
                        .into_iter()
                        .map(|u| UnclaimedItem {
                            request_id: u.request_id,
                            event: EventId::from_uuid(u.event_id).to_string(),
                            occurred_at: u.occurred_at,
                            log_day: u.log_day,
                            leaf_index: u.leaf_index,
                        })
                        .collect(),
                })
            }
            _ => None,
        };
        let checked_at = Utc::now();
        let mut counts = CheckCounts::default();
        let mut items = Vec::with_capacity(input.requests.len());
        for observed in &input.requests {
            let item = judge(
                &secrets,
                caller,
                head.as_ref(),
                &proofs,
                observed,
                events.get(&observed.request_id),
                &entries,
                &tolerance,
            )?;
            counts.requests += 1;
            *match item.finding {
                CheckFinding::Included => &mut counts.included,
                CheckFinding::Disagreeing => &mut counts.disagreeing,
                CheckFinding::Altered => &mut counts.altered,
                CheckFinding::NotLogged => &mut counts.not_logged,
                CheckFinding::Missing => &mut counts.missing,
            } += 1;
            items.push(item);
        }
        let report = CheckReport {
            id: uuid::Uuid::now_v7(),
            checked_at,
            checked_by: caller.principal.subject.clone(),
            head_day: head.as_ref().map(|h| h.log_day),
            head_size: head.as_ref().map(|h| h.size),
            head_root: head.as_ref().map(|h| hex::encode(&h.root)),
            tolerance: CheckTolerance {
                latency_ms: tolerance.latency_ms,
                latency_ratio: tolerance.latency_ratio,
            },
            counts,
            items,
            unclaimed,
        };
        log::record_check(
            &mut tx,
            &CheckSummary {
                id: report.id,
                customer_id: caller.customer().map(|c| c.uuid()),
                checked_by: report.checked_by.clone(),
                checked_at,
                head_day: report.head_day,
                head_size: report.head_size,
                requests: counts.requests,
                included: counts.included,
                disagreeing: counts.disagreeing,
                altered: counts.altered,
                not_logged: counts.not_logged,
                missing: counts.missing,
            },
            &serde_json::to_value(&report).map_err(internal)?,
        )
        .await?;
        tx.commit().await?;
        Ok(report)
    }

    /// The caller's last check (a customer's user: its customer's; the
    /// provider: its own), if any. Its summary is readable with
    /// `attestation:read` too, so that the embedded dashboard (whose tokens
    /// carry reads only) can show it.
    pub async fn last_request_check(&self, caller: &Caller) -> Result<Option<LastCheck>, AppError> {
        if !caller.has(Scope::AttestationRead) {
            caller.require(Scope::RequestVerify)?;
        }
        let mut tx = self.tx(caller).await?;
        let last = log::latest_check(&mut tx, caller.customer().map(|c| c.uuid())).await?;
        tx.commit().await?;
        Ok(last.map(LastCheck::from))
    }

    /// A kept report; a customer's user reads its customer's only.
    pub async fn request_check(
        &self,
        caller: &Caller,
        id: uuid::Uuid,
    ) -> Result<CheckReport, AppError> {
        caller.require(Scope::RequestVerify)?;
        let mut tx = self.tx(caller).await?;
        let report = log::check_report(&mut tx, id, caller.customer().map(|c| c.uuid())).await?;
        tx.commit().await?;
        let report = report.ok_or(AppError::NotFound {
            what: "check",
            key: id.to_string(),
        })?;
        serde_json::from_value(report).map_err(internal)
    }

    /// The audit paths of `indexes` in the log at `head`, from one read.
    async fn proofs(
        &self,
        tx: &mut TenantTx,
        head: &DayHead,
        indexes: impl Iterator<Item = i64>,
    ) -> Result<HashMap<i64, Vec<Hash>>, AppError> {
        let size = head.size as u64;
        let indexes: Vec<i64> = indexes.filter(|&i| (i as u64) < size).collect();
        let mut reads: Vec<u64> = indexes
            .iter()
            .flat_map(|&i| tree::inclusion_reads(size, i as u64))
            .collect();
        reads.sort_unstable();
        reads.dedup();
        let hashes = log::read_hashes(tx, &reads).await?;
        indexes
            .into_iter()
            .map(|i| {
                tree::prove_inclusion(size, i as u64, &hashes)
                    .map(|p| (i, p))
                    .map_err(internal)
            })
            .collect()
    }
}

/// One observed request's finding.
#[allow(clippy::too_many_arguments)]
fn judge(
    secrets: &LogSecrets,
    caller: &Caller,
    head: Option<&DayHead>,
    proofs: &HashMap<i64, Vec<Hash>>,
    observed: &ObservedRequest,
    event: Option<&LoggedEvent>,
    entries: &HashMap<uuid::Uuid, log::Entry>,
    tolerance: &Tolerance,
) -> Result<CheckItem, AppError> {
    let mut item = CheckItem {
        request_id: observed.request_id.clone(),
        finding: CheckFinding::Missing,
        event: None,
        leaf_index: None,
        leaf_hash: None,
        log_day: None,
        differences: Vec::new(),
    };
    let Some(event) = event else { return Ok(item) };
    item.event = Some(EventId::from_uuid(event.id).to_string());
    let entry = entries.get(&event.id);
    let leaf = leaf_of(
        &secrets.leaf_salt,
        caller.tenant(),
        event,
        entry.is_some_and(|e| e.late),
    );
    item.leaf_hash = Some(hash_hex(&leaf.hash()));
    let (Some(entry), Some(head), Some(proof)) =
        (entry, head, entry.and_then(|e| proofs.get(&e.leaf_index)))
    else {
        item.finding = CheckFinding::NotLogged;
        return Ok(item);
    };
    item.leaf_index = Some(entry.leaf_index);
    item.log_day = Some(entry.log_day);
    let root = stored_hash(&head.root)?;
    let verified = tree::verify_inclusion(
        proof,
        head.size as u64,
        root,
        entry.leaf_index as u64,
        leaf.hash(),
    );
    if verified.is_err() {
        item.finding = CheckFinding::Altered;
        return Ok(item);
    }
    let observation = Observation {
        request_id: observed.request_id.clone(),
        status: observed.status,
        latency_ms: observed.latency_ms,
    };
    item.differences = check::differences(&observation, &leaf, tolerance)
        .into_iter()
        .map(|d| CheckDifference {
            field: d.field,
            observed: d.observed,
            recorded: d.recorded,
        })
        .collect();
    item.finding = if item.differences.is_empty() {
        CheckFinding::Included
    } else {
        CheckFinding::Disagreeing
    };
    Ok(item)
}
