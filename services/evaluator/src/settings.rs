//! The evaluator's settings: the `[evaluator]` section of the configuration.

use std::time::Duration;

use serde::Deserialize;
use slaproof_store::TenantTx;

use crate::error::{Doing, EvaluatorError};

/// How the evaluator runs. Read from `[evaluator]`; every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Seconds between two rounds: each round asks for an evaluation of every
    /// tenant and works through the due ones.
    pub interval_secs: u64,
    /// The late grace of SLAs that set none (`spec.policy.lateGrace`): a
    /// period closes this long after its end, and its events arriving
    /// before then count. Later events are counted as late and reported,
    /// never silently dropped, but left out of the verdict.
    pub grace_secs: u64,
    /// How far behind the clock the watermark stays, so that an ingest
    /// transaction that started (and stamped `received_at`) before the
    /// watermark has committed before the evaluator reads past it. The
    /// watermark also never passes the start of a transaction still
    /// running in a session the evaluator's role can see; for ingest
    /// running as another role this must exceed its longest transaction.
    pub settle_secs: u64,
    /// How long a worker holds a tenant's job before another may take it over.
    pub lease_secs: u64,
    /// Tenants one worker claims per round.
    pub batch: i32,
    /// Days every evaluation is kept; housekeeping thins older ones to the
    /// last of each hour per objective (see [`crate::thinning`]).
    pub evaluations_full_days: u32,
    /// The longest any statement of a tenant's evaluation may run (or wait
    /// on a lock) before Postgres cancels it: the round fails naming this
    /// setting and the job is retried, instead of one pathological query
    /// holding the tenant forever.
    pub statement_timeout_secs: u64,
    /// Events a round may read to backfill newly seen SLA versions: a new
    /// version learns the events received before it was first seen in
    /// chunks of this many, one chunk a round, and is neither evaluated
    /// nor closes periods until it has learnt them all.
    pub backfill_events_per_round: u64,
    /// Connections one tenant's evaluation spreads its SLAs over, each a
    /// transaction of its own (one of them also holds the tenant and
    /// completes its job). A round is a round trip or more per SLA and
    /// query, so a provider with thousands of customer SLAs is evaluated
    /// that many times faster, up to what the database's cores take. `1`
    /// evaluates a tenant in one transaction, rollups included.
    pub connections: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            interval_secs: 30,
            grace_secs: 300,
            settle_secs: 10,
            lease_secs: 300,
            batch: 8,
            evaluations_full_days: 7,
            statement_timeout_secs: 300,
            backfill_events_per_round: 500_000,
            connections: 4,
        }
    }
}

impl Settings {
    pub fn grace(&self) -> chrono::Duration {
        chrono::Duration::seconds(i64::try_from(self.grace_secs).unwrap_or(i64::MAX / 1000))
    }

    pub fn settle(&self) -> chrono::Duration {
        chrono::Duration::seconds(i64::try_from(self.settle_secs).unwrap_or(i64::MAX / 1000))
    }

    pub fn interval(&self) -> Duration {
        Duration::from_secs(self.interval_secs)
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_secs)
    }

    /// Bounds every later statement of `tx` by `statement_timeout_secs`
    /// (`SET LOCAL`: it ends with the transaction).
    pub(crate) async fn bound_statements(&self, tx: &mut TenantTx) -> Result<(), EvaluatorError> {
        // A number from the checked configuration, not text from outside:
        // `SET` takes no parameters.
        let millis = self.statement_timeout_secs.saturating_mul(1000);
        sqlx::query(&format!("SET LOCAL statement_timeout = {millis}"))
            .execute(&mut **tx)
            .await
            .doing("setting the statement timeout")?;
        Ok(())
    }

    /// Checks the rules.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let check = slaproof_domain::settings::within;
        check("evaluator.interval_secs", self.interval_secs, 1, 3600)?;
        check("evaluator.grace_secs", self.grace_secs, 0, 7 * 86_400)?;
        check("evaluator.settle_secs", self.settle_secs, 0, 3600)?;
        check("evaluator.lease_secs", self.lease_secs, 10, 86_400)?;
        check(
            "evaluator.statement_timeout_secs",
            self.statement_timeout_secs,
            1,
            86_400,
        )?;
        check(
            "evaluator.backfill_events_per_round",
            self.backfill_events_per_round,
            1,
            100_000_000,
        )?;
        check(
            "evaluator.evaluations_full_days",
            u64::from(self.evaluations_full_days),
            1,
            3650,
        )?;
        check("evaluator.connections", u64::from(self.connections), 1, 64)?;
        check(
            "evaluator.batch",
            u64::try_from(self.batch).unwrap_or(0),
            1,
            1000,
        )?;
        Ok(())
    }
}

use slaproof_domain::settings::SettingsError;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_errors_name_the_key() {
        assert_eq!(Settings::default().validate(), Ok(()));
        let err = Settings {
            batch: 0,
            ..Settings::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "evaluator.batch: must be between 1 and 1000, got 0"
        );
        let err = Settings {
            statement_timeout_secs: 0,
            ..Settings::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "evaluator.statement_timeout_secs: must be between 1 and 86400, got 0"
        );
    }
}
