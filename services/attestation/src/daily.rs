//! A period proven over its daily commitments, anchored as it went: which
//! days a period opens and where each is anchored, the worker's choice
//! between the daily and the threshold circuit, and the checks an auditor
//! runs on the days a bundle lists (`docs/TRANSPARENCY.md`).

use alloy::primitives::B256;
use chrono::{DateTime, Duration, Utc};
use slaproof_chain::anchor::day_member_id;
use slaproof_chain::merkle::StandardTree;
use slaproof_circuits::daily::{DayOpening, aggregate};
use slaproof_circuits::{CircuitKeys, Claim, ContextHash, Fr, derive_salt};
use slaproof_domain::ids::SlaId;
use slaproof_domain::period_vector::PeriodVector;
use slaproof_store::attestations::Attestation;
use slaproof_store::measurements::{self, DayRecord, Measurement};
use slaproof_store::{TenantTx, outbox};

pub use crate::bundle::DayAnchor;
use crate::bundle::{ClaimRecord, field_word};
use crate::error::AttestationError;

/// How long after the close asked for a proof the worker waits for the
/// period's last days' anchors before proving it over a vector committed
/// at the close instead: the last day is measured at the close and
/// anchored with the next log day's head, about a day later.
pub const WAIT_FOR_DAYS: i64 = 3;

impl ClaimRecord {
    /// The label of one of the claim's days: the same fields, the day's
    /// bounds and the measurement's revision (`ContextHash::of_day`).
    pub fn day_claim(&self, day_start: i64, day_end: i64, revision: u32) -> Claim<'_> {
        Claim {
            period_start: day_start,
            period_end: day_end,
            revision,
            ..self.claim()
        }
    }
}

/// The batch member of `claim`'s day `[start, end)` at `revision`,
/// committed as `commitment`.
pub fn member_id(claim: &ClaimRecord, start: i64, end: i64, revision: u32, commitment: Fr) -> B256 {
    let context = ContextHash::of_day(&claim.day_claim(start, end, revision));
    day_member_id(field_word(context.as_field()).0, field_word(commitment).0)
}

/// The opening of measurement `m` of `claim`'s objective: its weights and
/// the salt derived from the platform's secret and the day's label. The
/// one rule the anchoring worker commits by and a period's proof opens by.
pub(crate) fn open_day(claim: &ClaimRecord, m: &Measurement, secret: &[u8; 32]) -> DayOpening {
    let revision = u32::try_from(m.revision).unwrap_or(0);
    let label = claim.day_claim(m.day_start.timestamp(), m.day_end.timestamp(), revision);
    DayOpening {
        salt: derive_salt(secret, ContextHash::of_day(&label)),
        good: u64::try_from(m.good).unwrap_or(0),
        bad: u64::try_from(m.bad).unwrap_or(0),
    }
}

/// What the worker can prove a period with.
pub(crate) enum DailyPlan {
    /// Every day anchored and agreeing with the vector: prove over them.
    Ready {
        keys: std::sync::Arc<CircuitKeys>,
        openings: Vec<DayOpening>,
        days: Vec<DayAnchor>,
    },
    /// Every day measured and agreeing, some not anchored yet.
    Waiting(String),
    /// Not over daily commitments: the reason. Proven over the vector
    /// committed at the close only where the SLA allows it
    /// (`spec.attestation.circuit: threshold`); else refused and told.
    Unavailable(String),
}

/// Tells `attestation.failed` for `row`, which its SLA asks to prove over
/// its days and cannot be (`reason`): retried, so `retrying` is true.
pub(crate) async fn tell_refused(
    tx: &mut TenantTx,
    row: &Attestation,
    claim: &ClaimRecord,
    reason: &str,
) -> Result<(), AttestationError> {
    outbox::enqueue(
        tx,
        "attestation.failed",
        &crate::facts::about(
            row,
            claim,
            serde_json::json!({"reason": reason, "retrying": true}),
        ),
    )
    .await?;
    Ok(())
}

/// The days of `row`'s period, each with its end (the next day's start,
/// the period's end for the last).
fn vector_days(row: &Attestation, vector: &PeriodVector) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    vector
        .days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let end = vector
                .days
                .get(i + 1)
                .map_or(row.period_end, |next| next.day);
            (d.day, end)
        })
        .collect()
}

/// Decides how `row` is proven: over its anchored days when every day of
/// its vector was measured as the period counts it and anchored.
pub(crate) async fn plan(
    tx: &mut TenantTx,
    keys: Option<std::sync::Arc<CircuitKeys>>,
    chain: bool,
    row: &Attestation,
    claim: &ClaimRecord,
    vector: &PeriodVector,
    secret: &[u8; 32],
) -> Result<DailyPlan, AttestationError> {
    let Some(keys) = keys else {
        return Ok(DailyPlan::Unavailable(format!(
            "no daily-circuit keys hold {} days (attestation.daily_sizes)",
            vector.days.len()
        )));
    };
    let records = measurements::days_of(
        tx,
        SlaId::from_uuid(row.sla_id),
        row.version,
        &row.objective,
        row.period_start,
        row.period_end,
    )
    .await?;
    let wanted = vector_days(row, vector);
    let mut openings = Vec::with_capacity(wanted.len());
    let mut days = Vec::with_capacity(wanted.len());
    let mut unanchored = 0;
    for (i, (start, end)) in wanted.iter().enumerate() {
        let Some(r) = records.iter().find(|r| r.measurement.day_start == *start) else {
            return Ok(DailyPlan::Unavailable(format!(
                "the day from {start} was not measured as the period went"
            )));
        };
        let m = &r.measurement;
        let day = vector.days[i];
        let agrees = m.day_end == *end
            && m.field == vector.field
            && m.unit == vector.unit
            && m.threshold == i64::from(vector.threshold)
            && u64::try_from(m.good).ok() == Some(day.good)
            && u64::try_from(m.bad).ok() == Some(day.total - day.good);
        if !agrees {
            return Ok(DailyPlan::Unavailable(format!(
                "the day from {start} was measured as {} good and {} bad, the period counts {} of {}",
                m.good, m.bad, day.good, day.total
            )));
        }
        match anchored(r, claim, secret)? {
            Some((opening, anchor)) => {
                openings.push(opening);
                days.push(anchor);
            }
            None => unanchored += 1,
        }
    }
    if unanchored > 0 {
        let waited = Utc::now() - row.created_at;
        if chain && waited < Duration::days(WAIT_FOR_DAYS) {
            return Ok(DailyPlan::Waiting(format!(
                "{unanchored} of {} days are not anchored yet",
                wanted.len()
            )));
        }
        return Ok(DailyPlan::Unavailable(format!(
            "{unanchored} of {} days are not anchored{}",
            wanted.len(),
            if chain {
                format!(" {WAIT_FOR_DAYS} days after the close")
            } else {
                " (no chain)".into()
            }
        )));
    }
    Ok(DailyPlan::Ready {
        keys,
        openings,
        days,
    })
}

/// A day's opening and anchor, when committed and anchored; the stored
/// commitment is checked against the one its opening recomputes.
fn anchored(
    r: &DayRecord,
    claim: &ClaimRecord,
    secret: &[u8; 32],
) -> Result<Option<(DayOpening, DayAnchor)>, AttestationError> {
    let (Some(commitment), Some(member), Some(log_day), Some(proof), Some(anchor)) =
        (&r.commitment, &r.member_id, r.log_day, &r.proof, &r.anchor)
    else {
        return Ok(None);
    };
    let m = &r.measurement;
    let revision = u32::try_from(m.revision).unwrap_or(0);
    let (start, end) = (m.day_start.timestamp(), m.day_end.timestamp());
    let opening = open_day(claim, m, secret);
    if opening.commitment()?.to_string() != *commitment {
        return Err(AttestationError::Invalid(format!(
            "the stored commitment of the day from {} does not open with the platform's salt",
            m.day_start
        )));
    }
    let text = |name: &str| {
        anchor
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let day = DayAnchor {
        day_start: start,
        day_end: end,
        revision,
        commitment: commitment.clone(),
        member_id: member.clone(),
        log_day: log_day.to_string(),
        proof: serde_json::from_value(proof.clone())
            .map_err(|e| AttestationError::Invalid(format!("a day's stored proof: {e}")))?,
        chain_id: anchor
            .get("chainId")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or_default(),
        eas: text("eas"),
        uid: text("uid"),
        root: text("root"),
        block: anchor
            .get("block")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or_default(),
    };
    Ok(Some((opening, day)))
}

/// The auditor's checks of a bundle's days, with no secret and no chain:
/// they tile the claim's period in order, each member id is the label's
/// and the commitment's, each proof leads its member to its root, and the
/// aggregate of their commitments is the proof's public commitment.
pub fn check_days(
    claim: &ClaimRecord,
    slots: usize,
    commitment: Fr,
    context: ContextHash,
    days: &[DayAnchor],
) -> Result<(), String> {
    let mut at = claim.period_start;
    let mut commitments = Vec::with_capacity(days.len());
    for day in days {
        if day.day_start != at || day.day_end <= day.day_start {
            return Err(format!(
                "the days do not tile the period: one starts at {} where {at} was expected",
                day.day_start
            ));
        }
        at = day.day_end;
        let c = slaproof_circuits::statement::parse_field("days.commitment", &day.commitment)
            .map_err(|e| e.to_string())?;
        let member = member_id(claim, day.day_start, day.day_end, day.revision, c);
        if member.to_string() != day.member_id {
            return Err(format!(
                "the day from {} is anchored as member {}, its label and commitment make {member}",
                day.day_start, day.member_id
            ));
        }
        let root: B256 = day
            .root
            .parse()
            .map_err(|_| format!("the day from {} names no root", day.day_start))?;
        let proof = day
            .proof
            .iter()
            .map(|p| p.parse::<B256>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("the day from {} has a malformed proof", day.day_start))?;
        if !StandardTree::verify(root, member, &proof) {
            return Err(format!(
                "the day from {}'s member does not prove into root {root}",
                day.day_start
            ));
        }
        commitments.push(c);
    }
    if at != claim.period_end {
        return Err(format!(
            "the days end at {at}, the period at {}",
            claim.period_end
        ));
    }
    let expected = aggregate(slots, context, &commitments).map_err(|e| e.to_string())?;
    if expected != commitment {
        return Err(format!(
            "the aggregate of the anchored days is {expected}, the proof's commitment {commitment}"
        ));
    }
    Ok(())
}

/// How long after its end a day may be anchored and still count as fixed
/// before the period's outcome was known, for the days at a period's end
/// (a day is measured once its late grace has passed, then anchored with
/// its log day's batch). A day anchored before the period ended is in time
/// whatever this says.
pub const DAY_ANCHOR_ALLOWANCE_SECS: i64 = 2 * 86_400;

/// Whether a day ending at `day_end`, anchored at `at`, came too late to
/// count as fixed before the outcome of a period ending at `period_end`:
/// after the period ended, and past the allowance after its own end.
fn anchored_late(day_end: i64, period_end: i64, at: i64) -> bool {
    at >= period_end && at > day_end.saturating_add(DAY_ANCHOR_ALLOWANCE_SECS)
}

/// What the day anchors showed: the check's line, and the days anchored too
/// late to count as fixed before the outcome (start, anchored at).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayAnchors {
    pub summary: String,
    pub late: Vec<(i64, i64)>,
}

impl DayAnchors {
    /// The `days in time` verdict: `Ok` when every day was anchored before
    /// the period ended or within [`DAY_ANCHOR_ALLOWANCE_SECS`] of its own
    /// end; `Err` says which were not, and why that matters.
    pub fn in_time(&self, days: usize) -> Result<String, String> {
        match self.late.iter().max_by_key(|(start, at)| at - start) {
            None => Ok(format!(
                "all {days} days anchored before the period ended or within {} h of their end: fixed before the outcome was known",
                DAY_ANCHOR_ALLOWANCE_SECS / 3600
            )),
            Some((start, at)) => Err(format!(
                "{} of {days} days anchored after the period ended and more than {} h after their end \
                 (the latest: the day from {start}, {:.1} days after it began): the data was not \
                 shown fixed before the outcome was known",
                self.late.len(),
                DAY_ANCHOR_ALLOWANCE_SECS / 3600,
                (at - start) as f64 / 86_400.0
            )),
        }
    }
}

/// The on-chain check of a bundle's days: each day's batch root is attested
/// (not revoked) at its UID on `eas`, the period's EAS, by `attester`, the
/// period's own attester. Says how many days were anchored before
/// `period_end` (fixed before the period's outcome was known), and which
/// were anchored too late to count as fixed before it ([`DayAnchors`]).
pub async fn check_day_anchors(
    chain: &slaproof_chain::Chain,
    eas: alloy::primitives::Address,
    days: &[DayAnchor],
    attester: alloy::primitives::Address,
    period_end: i64,
) -> Result<DayAnchors, String> {
    let mut seen = std::collections::HashMap::new();
    let mut before_end = 0;
    let mut late = Vec::new();
    for day in days {
        let uid: B256 = day
            .uid
            .parse()
            .map_err(|_| format!("the day from {} names no UID", day.day_start))?;
        // Read from the period's EAS (pinned, or checked to be the pinned
        // one), never from one the day's entry names: a look-alike
        // contract could answer any time.
        let named: alloy::primitives::Address = day
            .eas
            .parse()
            .map_err(|_| format!("the day from {} names no EAS", day.day_start))?;
        if named != eas {
            return Err(format!(
                "the day from {} names EAS {named}, the period's anchor is on {eas}",
                day.day_start
            ));
        }
        let time = match seen.get(&uid) {
            Some(time) => *time,
            None => {
                let found = slaproof_chain::attest::attestation_at(chain, eas, uid)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("EAS at {eas} holds no attestation {uid}"))?;
                if found.revoked {
                    return Err(format!("the day anchor {uid} is revoked"));
                }
                if found.attester != attester {
                    return Err(format!(
                        "the day anchor {uid} is by {}, the period's by {attester}",
                        found.attester
                    ));
                }
                let root = slaproof_chain::anchor::BatchRoot::from_data(&found.data)
                    .map_err(|e| format!("the day anchor {uid} is not a batch root: {e}"))?;
                if root.root.to_string() != day.root {
                    return Err(format!(
                        "the day anchor {uid} holds root {}, the bundle says {}",
                        root.root, day.root
                    ));
                }
                seen.insert(uid, found.time);
                found.time
            }
        };
        let at = i64::try_from(time).unwrap_or(i64::MAX);
        if at < period_end {
            before_end += 1;
        }
        if anchored_late(day.day_end, period_end, at) {
            late.push((day.day_start, at));
        }
    }
    Ok(DayAnchors {
        summary: format!(
            "{} days in {} anchors by the period's attester; {before_end} anchored before the period ended",
            days.len(),
            seen.len()
        ),
        late,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    #[test]
    fn a_day_is_late_only_after_the_period_ended_and_past_its_allowance() {
        let period_end = 30 * DAY;
        // The 3rd, anchored on the 20th: before the end, in time.
        assert!(!anchored_late(3 * DAY, period_end, 20 * DAY));
        // The 3rd, anchored after the month: late.
        assert!(anchored_late(3 * DAY, period_end, period_end + 60));
        // The last day, anchored a day after the month: within the allowance.
        assert!(!anchored_late(period_end, period_end, period_end + DAY));
        // … and three days after: late.
        assert!(anchored_late(period_end, period_end, period_end + 3 * DAY));
    }

    #[test]
    fn days_anchored_before_the_end_or_within_the_allowance_are_in_time() {
        let anchors = DayAnchors {
            summary: String::new(),
            late: Vec::new(),
        };
        assert!(anchors.in_time(30).is_ok());
    }

    #[test]
    fn a_day_anchored_after_the_period_and_past_the_allowance_is_not_in_time() {
        // The 3rd, anchored a month later: named, with how late.
        let anchors = DayAnchors {
            summary: String::new(),
            late: vec![(2 * DAY, 2 * DAY + 30 * DAY), (3 * DAY, 3 * DAY + 29 * DAY)],
        };
        let why = anchors.in_time(30).unwrap_err();
        assert!(
            why.starts_with("2 of 30 days anchored after the period ended and more than 48 h"),
            "{why}"
        );
        assert!(
            why.contains("the day from 172800, 30.0 days after it began"),
            "{why}"
        );
    }
}
