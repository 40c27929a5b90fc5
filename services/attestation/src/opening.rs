//! A period's daily commitments opened for a dispute: the provider hands
//! an auditor each day's weights and salt, the SLA version's terms and the
//! maintenance it excluded ([`open_days`], `slaproof log open-days`); the
//! auditor checks that the openings are the anchored commitments
//! ([`check_openings`]) and recounts each day from the transparency log's
//! exported leaves ([`check_recount`]), with nothing of the platform's but
//! these files (`docs/TRANSPARENCY.md`).

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use slaproof_circuits::daily::day_commitment;
use slaproof_circuits::statement::parse_field;
use slaproof_domain::ids::{SlaId, TenantId};
use slaproof_domain::period_vector::{DayTally, day_measurement};
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::transparency::Leaf;
use slaproof_domain::transparency::recount::{DayRules, recount_day, recountable};
use slaproof_domain::window::Period;
use slaproof_store::{Database, attestations, maintenance, measurements, slas};

use crate::bundle::{ClaimRecord, DayAnchor, StatementFile};
use crate::daily::open_day;
use crate::error::AttestationError;
use crate::worker::{claim_of, salt_secret, store};

/// The openings file's format tag.
pub const OPENINGS_FORMAT: &str = "slaproof-day-openings/1";

/// What the provider reveals of a period proven over its days: enough to
/// recount each day from the log, and nothing of other periods (each salt
/// opens one day's commitment only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Openings {
    pub format: String,
    /// The attestation whose days these are.
    pub attestation: String,
    /// Its claim, as `statement.json` states it.
    pub claim: ClaimRecord,
    /// The SLA version's terms, its native document (JSON).
    pub sla: serde_json::Value,
    /// The platform's late grace, which an SLA without its own uses.
    pub default_grace_secs: i64,
    /// The maintenance the period excluded, merged and sorted.
    pub maintenance: Vec<Period>,
    /// One per day of the statement, in its order.
    pub days: Vec<OpenedDay>,
}

/// One day's commitment opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenedDay {
    /// Unix seconds, as the statement's day.
    pub day_start: i64,
    pub day_end: i64,
    pub revision: u32,
    /// The weights at or under `T`, and past it.
    pub good: u64,
    pub bad: u64,
    /// The day's salt, a decimal field element.
    pub salt: String,
    /// The evaluator's watermark the weights were counted at: every event
    /// received before it. None for days measured before it was kept.
    pub counted_to: Option<DateTime<Utc>>,
}

/// Opens the days of `tenant`'s attestation `id` (proven with the daily
/// circuit). `default_grace` is the platform's (`evaluator.grace_secs`).
pub async fn open_days(
    db: &Database,
    tenant: TenantId,
    id: uuid::Uuid,
    default_grace: Duration,
) -> Result<Openings, AttestationError> {
    let mut tx = db.tenant_tx(tenant).await.map_err(store)?;
    let row = attestations::get(&mut tx, id)
        .await
        .map_err(store)?
        .ok_or_else(|| AttestationError::Invalid(format!("no attestation {id}")))?;
    let days: Vec<DayAnchor> = match (&row.days, row.circuit.as_str()) {
        (Some(days), "daily") => serde_json::from_value(days.clone())
            .map_err(|e| AttestationError::Invalid(format!("the stored days: {e}")))?,
        _ => {
            return Err(AttestationError::Invalid(format!(
                "attestation {id} was not proven over daily commitments (circuit {}, status {}): \
                 it has no days to open",
                row.circuit, row.status
            )));
        }
    };
    let claim = claim_of(&mut tx, &row).await?;
    let sla = SlaId::from_uuid(row.sla_id);
    let stored = slas::find_version(&mut tx, sla, row.version)
        .await
        .map_err(store)?;
    let windows = maintenance::periods(
        &mut tx,
        sla,
        &stored.definition,
        row.period_start,
        row.period_end,
    )
    .await
    .map_err(store)?;
    let revisions = measurements::revisions(
        &mut tx,
        sla,
        row.version,
        &row.objective,
        row.period_start,
        row.period_end,
    )
    .await
    .map_err(store)?;
    tx.commit().await.map_err(store)?;
    // Read only once the attestation is known to be opened: reading it
    // makes the secret on a platform that has none yet.
    let secret = salt_secret(db).await?;
    let mut opened = Vec::with_capacity(days.len());
    for day in &days {
        let m = revisions
            .iter()
            .find(|m| {
                m.day_start.timestamp() == day.day_start
                    && u32::try_from(m.revision).ok() == Some(day.revision)
            })
            .ok_or_else(|| {
                AttestationError::Invalid(format!(
                    "the measurement of the day from {} (revision {}) is not stored",
                    day.day_start, day.revision
                ))
            })?;
        let opening = open_day(&claim, m, &secret);
        if opening.commitment()?.to_string() != day.commitment {
            return Err(AttestationError::Invalid(format!(
                "the stored measurement of the day from {} does not open its commitment",
                day.day_start
            )));
        }
        opened.push(OpenedDay {
            day_start: day.day_start,
            day_end: day.day_end,
            revision: day.revision,
            good: opening.good,
            bad: opening.bad,
            salt: opening.salt.to_string(),
            counted_to: m.counted_to,
        });
    }
    Ok(Openings {
        format: OPENINGS_FORMAT.into(),
        attestation: id.to_string(),
        claim,
        sla: stored.definition.to_native_json(),
        default_grace_secs: default_grace.num_seconds(),
        maintenance: windows,
        days: opened,
    })
}

impl Openings {
    /// The SLA version's definition, read as the store keeps versions: an
    /// openings file written before SLAs had scopes holds a version judged
    /// on its whole service, and reads so.
    pub fn definition(&self) -> Result<SlaDefinition, String> {
        serde_json::from_value::<SlaDefinition>(self.sla.clone())
            .map_err(|e| format!("the openings' SLA document: {e}"))
    }
}

/// Whether `openings` open the days `statement` was proven over: the same
/// claim and days, each salt and weights recomputing the anchored
/// commitment, and the SLA's objective proven in the claim's form.
pub fn check_openings(statement: &StatementFile, openings: &Openings) -> Result<String, String> {
    if openings.format != OPENINGS_FORMAT {
        return Err(format!(
            "the openings are {:?}, not {OPENINGS_FORMAT:?}",
            openings.format
        ));
    }
    let days = statement
        .days
        .as_ref()
        .ok_or("the statement was not proven over daily commitments")?;
    if openings.claim != statement.claim {
        return Err("the openings are of another claim than the statement's".into());
    }
    if openings.days.len() != days.len() {
        return Err(format!(
            "the openings have {} days, the statement {}",
            openings.days.len(),
            days.len()
        ));
    }
    let definition = openings.definition()?;
    let objective = definition
        .objective(&statement.claim.objective)
        .ok_or_else(|| {
            format!(
                "the openings' SLA has no objective {:?}",
                statement.claim.objective
            )
        })?;
    let empty = DayTally {
        day: DateTime::UNIX_EPOCH,
        good: 0,
        total: 0,
    };
    let form = day_measurement(objective, empty).map_err(|e| e.to_string())?;
    if form.field != statement.claim.field
        || form.unit != statement.claim.unit
        || u64::from(form.threshold) != statement.claim.threshold
    {
        return Err(format!(
            "the openings' objective measures {} {} at {}, the claim {} {} at {}",
            form.field,
            form.unit,
            form.threshold,
            statement.claim.field,
            statement.claim.unit,
            statement.claim.threshold
        ));
    }
    let (mut good, mut bad) = (0u64, 0u64);
    for (opened, day) in openings.days.iter().zip(days) {
        let label = day_label(opened.day_start);
        if (opened.day_start, opened.day_end, opened.revision)
            != (day.day_start, day.day_end, day.revision)
        {
            return Err(format!(
                "the opening of {label} is of another day or revision than the statement's"
            ));
        }
        let salt = parse_field("days.salt", &opened.salt).map_err(|e| e.to_string())?;
        let commitment =
            day_commitment(salt, opened.good, opened.bad).map_err(|e| format!("{label}: {e}"))?;
        if commitment.to_string() != day.commitment {
            return Err(format!(
                "{label}: {} good and {} bad under the salt given do not make the anchored \
                 commitment",
                opened.good, opened.bad
            ));
        }
        good += opened.good;
        bad += opened.bad;
    }
    // The proof says at least `quota_ppm` of the values are good; the
    // opened days are the data it was made over. A proof made with the
    // setup's toxic waste can claim more than they hold, and only this
    // comparison sees it.
    let total = u128::from(good) + u128::from(bad);
    let quota = u128::from(statement.quota_ppm);
    if total == 0 {
        return Err(format!(
            "the {} opened days hold no values: nothing supports the claimed {}",
            days.len(),
            percent(quota)
        ));
    }
    let held = u128::from(good) * 1_000_000 / total;
    if u128::from(good) * 1_000_000 < quota * total {
        return Err(format!(
            "the opened days hold {good} good of {total} ({}), less than the {} the proof claims: \
             the proof does not hold for the anchored data",
            percent(held),
            percent(quota)
        ));
    }
    Ok(format!(
        "{} days open to their anchored commitments: {good} good and {bad} bad in all, {} \
         against the {} the proof claims",
        days.len(),
        percent(held),
        percent(quota)
    ))
}

/// Millionths as a percentage with four decimals: 996991 → `99.6991%`.
fn percent(ppm: u128) -> String {
    format!("{}.{:04}%", ppm / 10_000, ppm % 10_000)
}

/// A log day's leaves as exported (`slaproof log export`), its head
/// already rebuilt from them.
#[derive(Debug, Clone)]
pub struct LoggedDay {
    pub day: NaiveDate,
    /// Whether this day begins the log (no day before it was logged).
    pub starts_log: bool,
    pub leaves: Vec<Leaf>,
}

/// What a recount found: passed (the detail), failed (every day that
/// disagrees, named), or not possible (why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recount {
    Agrees(String),
    Disagrees(String),
    NotPossible(String),
}

/// Recounts each opened day from the events of `log` (log days, each
/// rebuilt from its export) under the openings' terms and compares with
/// the opened weights. Every log day the period covers must be given,
/// and the days after it whose batches hold its late events (up to the
/// last watermark): a missing late event shows as a disagreement.
pub fn check_recount(openings: &Openings, log: &[LoggedDay]) -> Recount {
    let definition = match openings.definition() {
        Ok(d) => d,
        Err(why) => return Recount::NotPossible(why),
    };
    let Some(objective) = definition.objective(&openings.claim.objective) else {
        return Recount::NotPossible(format!(
            "the openings' SLA has no objective {:?}",
            openings.claim.objective
        ));
    };
    if let Err(why) = recountable(objective) {
        return Recount::NotPossible(format!(
            "{:?} is not recounted from the log: {why}",
            openings.claim.objective
        ));
    }
    let Some(first) = openings.days.first() else {
        return Recount::NotPossible("no day is opened".into());
    };
    // The evaluator's rule reads them sorted and disjoint, as stored.
    if openings
        .maintenance
        .windows(2)
        .any(|w| w[0].end > w[1].start)
        || openings.maintenance.iter().any(|p| p.start >= p.end)
    {
        return Recount::NotPossible(
            "the openings' maintenance periods are not sorted, disjoint and non-empty".into(),
        );
    }
    let Some(last) = openings.days.last() else {
        return Recount::NotPossible("no day is opened".into());
    };
    let mut watermark = None;
    for d in &openings.days {
        match d.counted_to {
            Some(t) => watermark = watermark.max(Some(t)),
            None => {
                return Recount::NotPossible(format!(
                    "{} was measured before its watermark was kept",
                    day_label(d.day_start)
                ));
            }
        }
    }
    // Every UTC date the days cover must be given, but those before the
    // log began (the export that starts it says so).
    let given: BTreeSet<NaiveDate> = log.iter().map(|d| d.day).collect();
    let log_start = log.iter().filter(|d| d.starts_log).map(|d| d.day).min();
    let date = |t: i64| DateTime::from_timestamp(t, 0).map(|t| t.date_naive());
    if let (Some(from), Some(to)) = (date(first.day_start), date(last.day_end - 1)) {
        let missing: Vec<String> = from
            .iter_days()
            .take_while(|d| *d <= to)
            .filter(|d| !given.contains(d) && log_start.is_none_or(|s| *d >= s))
            .map(|d| d.to_string())
            .collect();
        if !missing.is_empty() {
            return Recount::NotPossible(format!(
                "the log days {} are not given: every day the period covers holds its events",
                missing.join(", ")
            ));
        }
    }
    // Each event once: the log holds an event in one batch only.
    let mut events: HashMap<&str, &Leaf> = HashMap::new();
    for leaf in log.iter().flat_map(|d| &d.leaves) {
        if let Some(other) = events.insert(&leaf.event, leaf)
            && other != leaf
        {
            return Recount::Disagrees(format!(
                "event {} is logged twice, differently",
                leaf.event
            ));
        }
    }
    let default_grace = Duration::seconds(openings.default_grace_secs);
    let mut wrong = Vec::new();
    let (mut good, mut bad) = (0u64, 0u64);
    for d in &openings.days {
        let (Some(start), Some(end), Some(counted_to)) = (
            DateTime::from_timestamp(d.day_start, 0),
            DateTime::from_timestamp(d.day_end, 0),
            d.counted_to,
        ) else {
            return Recount::NotPossible(format!("{}: bounds out of range", d.day_start));
        };
        let rules = DayRules {
            definition: &definition,
            maintenance: &openings.maintenance,
            default_grace,
            counted_to,
        };
        let tally = match recount_day(
            &rules,
            objective,
            Period { start, end },
            events.values().copied(),
        ) {
            Ok(t) => t,
            Err(why) => return Recount::NotPossible(why),
        };
        let (g, b) = (tally.good, tally.total - tally.good);
        if (g, b) != (d.good, d.bad) {
            wrong.push(format!(
                "{}: the log's events count {g} good and {b} bad, the commitment opens to {} \
                 good and {} bad",
                day_label(d.day_start),
                d.good,
                d.bad
            ));
        }
        good += g;
        bad += b;
    }
    if !wrong.is_empty() {
        // A late event is logged in the batch built after it arrived.
        if let Some(t) = watermark {
            wrong.push(format!(
                "(were the days' events received up to {t} all given? a late event is logged in \
                 the first log day built after it arrived)"
            ));
        }
    }
    if wrong.is_empty() {
        Recount::Agrees(format!(
            "{} days recounted from {} logged events of {} log days: {good} good and {bad} bad, \
             as opened",
            openings.days.len(),
            events.len(),
            given.len()
        ))
    } else {
        Recount::Disagrees(wrong.join("; "))
    }
}

/// A day as people read it: its start in UTC.
fn day_label(start: i64) -> String {
    DateTime::from_timestamp(start, 0).map_or(start.to_string(), |t| {
        format!("the day from {}", t.format("%Y-%m-%d %H:%M UTC"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn openings(good: u64, bad: u64) -> Openings {
        let doc = "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme}\nspec:\n  service: chat\n  \
                   window: {calendar: month, timeZone: UTC}\n  objectives:\n    \
                   - {name: ok, target: 99%, ratio: {good: \"status < 500\"}}\n";
        Openings {
            format: OPENINGS_FORMAT.into(),
            attestation: uuid::Uuid::nil().to_string(),
            claim: ClaimRecord {
                tenant: "acme".into(),
                sla: "acme".into(),
                sla_version: 1,
                objective: "ok".into(),
                field: "ratio".into(),
                unit: "verdict".into(),
                operator: "<=".into(),
                threshold: 0,
                period_start: at("2026-11-01T00:00:00Z").timestamp(),
                period_end: at("2026-12-01T00:00:00Z").timestamp(),
                revision: 1,
            },
            sla: SlaDefinition::from_document(doc).unwrap().to_native_json(),
            default_grace_secs: 300,
            maintenance: Vec::new(),
            days: vec![OpenedDay {
                day_start: at("2026-11-10T00:00:00Z").timestamp(),
                day_end: at("2026-11-11T00:00:00Z").timestamp(),
                revision: 1,
                good,
                bad,
                salt: "1".into(),
                counted_to: Some(at("2026-11-12T00:00:00Z")),
            }],
        }
    }

    fn leaf(event: &str, occurred: &str, status: i32) -> Leaf {
        let t = at(occurred).timestamp_micros();
        Leaf {
            v: 1,
            salt: "00".repeat(32),
            event: event.into(),
            request_id: None,
            source: "provider".into(),
            service: "chat".into(),
            customer: None,
            model: None,
            occurred_at_us: t,
            received_at_us: t,
            late: false,
            status: Some(status),
            error_class: None,
            latency_us: None,
            ttft_us: None,
            tpot_us: None,
            input_tokens: None,
            output_tokens: None,
            streaming: None,
        }
    }

    fn day(date: &str, starts_log: bool, leaves: Vec<Leaf>) -> LoggedDay {
        LoggedDay {
            day: date.parse().unwrap(),
            starts_log,
            leaves,
        }
    }

    #[test]
    fn a_day_recounts_from_its_log_days_and_what_is_missing_is_named() {
        let log = [day(
            "2026-11-10",
            false,
            vec![
                leaf("evt_1", "2026-11-10T01:00:00Z", 200),
                leaf("evt_2", "2026-11-10T02:00:00Z", 503),
            ],
        )];
        assert!(matches!(
            check_recount(&openings(1, 1), &log),
            Recount::Agrees(_)
        ));
        match check_recount(&openings(2, 0), &log) {
            Recount::Disagrees(why) => assert!(
                why.contains("the log's events count 1 good and 1 bad, the commitment opens to 2 good and 0 bad"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        match check_recount(&openings(1, 1), &[]) {
            Recount::NotPossible(why) => assert!(why.contains("2026-11-10 are not given"), "{why}"),
            other => panic!("{other:?}"),
        }
        // A day before the log began holds no events: nothing is missing.
        let later = [day("2026-11-11", true, Vec::new())];
        assert!(matches!(
            check_recount(&openings(0, 0), &later),
            Recount::Agrees(_)
        ));
    }

    #[test]
    fn an_event_logged_twice_differently_and_unsorted_maintenance_are_refused() {
        let mut altered = leaf("evt_1", "2026-11-10T01:00:00Z", 503);
        altered.late = true;
        let log = [
            day(
                "2026-11-10",
                false,
                vec![leaf("evt_1", "2026-11-10T01:00:00Z", 200)],
            ),
            day("2026-11-11", false, vec![altered]),
        ];
        match check_recount(&openings(1, 0), &log) {
            Recount::Disagrees(why) => assert!(why.contains("evt_1 is logged twice"), "{why}"),
            other => panic!("{other:?}"),
        }
        let mut unsorted = openings(1, 0);
        unsorted.maintenance = vec![
            Period {
                start: at("2026-11-10T05:00:00Z"),
                end: at("2026-11-10T06:00:00Z"),
            },
            Period {
                start: at("2026-11-10T01:00:00Z"),
                end: at("2026-11-10T02:00:00Z"),
            },
        ];
        assert!(matches!(
            check_recount(&unsorted, &log[..1]),
            Recount::NotPossible(_)
        ));
    }
}
