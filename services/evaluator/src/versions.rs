//! Which version of an SLA judges which period, and which versions the evaluator tracks for it: the rule (a contract change takes effect at the next period, every period judged by the version in force at its start) is [`slaproof_domain::versions`].
//!
//! A provider that lowers a target on the 28th must not have the whole
//! month judged by the lower one; nor may a customer find a month judged
//! by terms that did not hold when it began.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::SlaId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::versions::in_force;
use slaproof_domain::window::Period;
use slaproof_store::TenantTx;

use crate::error::EvaluatorError;

/// One stored version of an SLA.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub version: i32,
    pub definition: SlaDefinition,
    /// When it was applied.
    pub created_at: DateTime<Utc>,
}

/// Every version of every SLA of the tenant, oldest first, read in one
/// statement: per SLA, its versions, or why they cannot be read (a stored
/// definition that no longer parses leaves that SLA out, not the round).
pub(crate) async fn read_all(
    tx: &mut TenantTx,
) -> Result<HashMap<SlaId, Result<Vec<Version>, EvaluatorError>>, EvaluatorError> {
    let rows = slaproof_store::slas::all_versions(tx).await?;
    let mut out: HashMap<SlaId, Result<Vec<Version>, EvaluatorError>> = HashMap::new();
    for row in rows {
        let entry = out.entry(row.sla).or_insert_with(|| Ok(Vec::new()));
        let Ok(versions) = entry else { continue };
        match serde_json::from_value::<SlaDefinition>(row.definition) {
            Ok(definition) => versions.push(Version {
                version: row.version,
                definition,
                created_at: row.created_at,
            }),
            Err(e) => {
                *entry = Err(EvaluatorError::Corrupt {
                    what: "SLA definition",
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(out)
}

/// When each version (oldest first) takes effect (see
/// [`slaproof_domain::versions::effective_from`]).
fn effective_from(versions: &[Version]) -> Vec<Option<DateTime<Utc>>> {
    let schedule: Vec<_> = versions
        .iter()
        .map(|v| (v.definition.window, v.created_at))
        .collect();
    slaproof_domain::versions::effective_from(&schedule)
}

/// Who judges what as of an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Judges {
    /// The version in force (an index), and since when (`None`: the first).
    pub live: (usize, Option<DateTime<Utc>>),
    /// The version that judges the last period before the live one took
    /// effect, with that period: it closes it.
    pub closing: Option<(usize, Period)>,
    /// The newest version while it has not taken effect, and when it will.
    pub pending: Option<(usize, DateTime<Utc>)>,
}

/// Who judges what as of `as_of`, for versions oldest first (at least one).
pub(crate) fn judges(versions: &[Version], as_of: DateTime<Utc>) -> Judges {
    let effective = effective_from(versions);
    let live = in_force(&effective, as_of);
    let closing = effective[live].map(|from| {
        let last_moment = from - Duration::seconds(1);
        let judge = in_force(&effective, last_moment);
        let period = versions[judge]
            .definition
            .window
            .period_containing(last_moment);
        (judge, period)
    });
    let newest = versions.len() - 1;
    let pending = (newest != live)
        .then(|| effective[newest].map(|from| (newest, from)))
        .flatten();
    Judges {
        live: (live, effective[live]),
        closing: closing.filter(|(judge, _)| *judge != live),
        pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn version(n: i32, target: &str, window: &str, applied: &str) -> Version {
        let doc = format!(
            "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {{name: acme}}\nspec:\n  service: chat\n  window: {window}\n  objectives:\n    - {{name: availability, target: {target}, ratio: {{good: \"status < 500\"}}}}\n"
        );
        Version {
            version: n,
            definition: SlaDefinition::from_document(&doc).unwrap(),
            created_at: t(applied),
        }
    }

    const MONTH: &str = "{calendar: month, timeZone: UTC}";

    #[test]
    fn a_target_lowered_late_in_a_month_takes_effect_the_next_month() {
        let versions = [
            version(1, "99%", MONTH, "2026-10-15T00:00:00Z"),
            version(2, "95%", MONTH, "2026-11-28T00:00:00Z"),
        ];
        // November is still judged by version 1; version 2 waits.
        let j = judges(&versions, t("2026-11-29T00:00:00Z"));
        assert_eq!(j.live, (0, None));
        assert_eq!(j.closing, None);
        assert_eq!(j.pending, Some((1, t("2026-12-01T00:00:00Z"))));
        // From December version 2 judges; version 1 closes November.
        let j = judges(&versions, t("2026-12-01T00:03:00Z"));
        assert_eq!(j.live, (1, Some(t("2026-12-01T00:00:00Z"))));
        let (judge, period) = j.closing.unwrap();
        assert_eq!(judge, 0);
        assert_eq!(period.start, t("2026-11-01T00:00:00Z"));
        assert_eq!(j.pending, None);
    }

    #[test]
    fn the_first_version_judges_from_the_start_and_an_overtaken_one_never() {
        let versions = [
            version(1, "99%", MONTH, "2026-11-10T00:00:00Z"),
            version(2, "98%", MONTH, "2026-11-12T00:00:00Z"),
            version(3, "97%", MONTH, "2026-11-20T00:00:00Z"),
        ];
        let j = judges(&versions, t("2026-11-25T00:00:00Z"));
        assert_eq!(j.live, (0, None));
        assert_eq!(j.pending, Some((2, t("2026-12-01T00:00:00Z"))));
        // Versions 2 and 3 both take effect in December: 3 is in force.
        let j = judges(&versions, t("2026-12-05T00:00:00Z"));
        assert_eq!(j.live.0, 2);
        assert_eq!(j.closing.map(|c| c.0), Some(0));
    }

    #[test]
    fn after_a_rolling_window_a_new_version_takes_effect_at_once() {
        let versions = [
            version(1, "99%", "{rolling: 28d}", "2026-10-15T00:00:00Z"),
            version(2, "95%", "{rolling: 28d}", "2026-11-28T10:00:00Z"),
        ];
        let j = judges(&versions, t("2026-11-28T10:01:00Z"));
        assert_eq!(j.live, (1, Some(t("2026-11-28T10:00:00Z"))));
        assert_eq!(j.pending, None);
    }
}
