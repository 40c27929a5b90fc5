//! What the evaluator is stuck on, for the provider: its tenant's evaluation
//! job (last success, failed attempts in a row, next run) and the SLAs whose
//! evaluation fails while the others go on. Provider-side (`sla:read`, not
//! a customer's user): the errors name SLAs of every customer.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_store::customers;
use slaproof_store::evaluation_failures::{self, FailingSla};
use slaproof_store::jobs::{self, JobState};

use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// Where the tenant's evaluation job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobHealth {
    /// Done; asked for again at the next round.
    Idle,
    /// Due, waiting for a worker.
    Scheduled,
    /// A worker is evaluating the tenant now.
    Running,
    /// Failed, and retried after a delay that grows with each failure.
    Retrying,
    /// Failed its attempts in a row (`max_attempts`) or more; still retried,
    /// every ten minutes at most.
    Stuck,
}

/// The tenant's evaluation job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EvaluationJobView {
    pub state: JobHealth,
    /// When the last successful evaluation started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_succeeded_at: Option<DateTime<Utc>>,
    /// Attempts since the last success: failed ones, and one running.
    pub attempts: i32,
    /// Failed attempts in a row after which the job counts as stuck.
    pub max_attempts: i32,
    /// When it runs next; absent when done until the next round asks again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<DateTime<Utc>>,
    /// The first failure since the last success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<DateTime<Utc>>,
    /// When the failed attempts in a row reached `max_attempts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck_since: Option<DateTime<Utc>>,
    /// Why the latest attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// An SLA whose evaluation fails, left out of the rounds that evaluate the
/// tenant's other SLAs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FailingSlaView {
    /// The SLA's name.
    pub sla: String,
    /// The version that failed.
    pub version: i32,
    /// Evaluation rounds in a row that failed on it.
    pub failures: i32,
    /// It has failed ten rounds in a row or more.
    pub stuck: bool,
    /// Why the latest failed.
    pub error: String,
    /// The first of the failures in a row.
    pub failing_since: DateTime<Utc>,
    /// The latest of them.
    pub last_failed_at: DateTime<Utc>,
}

/// The tenant's evaluation status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EvaluationStatus {
    /// Absent until the evaluator first asks for the tenant's evaluation
    /// (within a round of the tenant's creation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<EvaluationJobView>,
    /// By name; empty when every SLA was evaluated.
    pub failing_slas: Vec<FailingSlaView>,
    /// Customer references the tenant's events named that no customer has
    /// (`slaproof customer create REF` registers one, its history intact):
    /// how many, in all.
    pub unknown_customer_count: i64,
    /// The first of them by events, at most 100.
    pub unknown_customers: Vec<UnknownCustomerView>,
}

/// A customer reference named by events that no customer of the tenant
/// has. Its events are kept, and count for an SLA of that customer once
/// one is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct UnknownCustomerView {
    /// The reference as the events named it.
    pub customer: String,
    /// Events read by the evaluator that named it.
    pub events: i64,
    /// When the first of them arrived.
    pub first_seen_at: DateTime<Utc>,
    /// When the latest arrived.
    pub last_seen_at: DateTime<Utc>,
}

/// Unknown references listed in a status.
const UNKNOWN_LISTED: i64 = 100;

fn job_view(state: JobState) -> EvaluationJobView {
    let health = if state.stuck_since.is_some() {
        JobHealth::Stuck
    } else if state.failing_since.is_some() {
        JobHealth::Retrying
    } else if state.running {
        JobHealth::Running
    } else if state.run_at.is_some() {
        JobHealth::Scheduled
    } else {
        JobHealth::Idle
    };
    EvaluationJobView {
        state: health,
        last_succeeded_at: state.succeeded_at,
        attempts: state.attempts,
        max_attempts: state.max_attempts,
        next_run_at: state.run_at,
        failing_since: state.failing_since,
        stuck_since: state.stuck_since,
        last_error: state.last_error,
    }
}

fn failing_view(failing: FailingSla) -> FailingSlaView {
    FailingSlaView {
        stuck: failing.stuck(),
        sla: failing.name,
        version: failing.version,
        failures: failing.failures,
        error: failing.last_error,
        failing_since: failing.first_failed_at,
        last_failed_at: failing.last_failed_at,
    }
}

impl App {
    /// The caller's tenant's evaluation status.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn evaluation_status(&self, caller: &Caller) -> Result<EvaluationStatus, AppError> {
        caller.require_provider(Scope::SlaRead)?;
        self.in_tx(caller, async |tx| {
            let job = jobs::state(tx, jobs::EVALUATE).await?;
            let failing = evaluation_failures::failing_slas(tx).await?;
            let (unknown, unknown_count) =
                customers::unknown_references(tx, UNKNOWN_LISTED).await?;
            Ok(EvaluationStatus {
                job: job.map(job_view),
                failing_slas: failing.into_iter().map(failing_view).collect(),
                unknown_customer_count: unknown_count,
                unknown_customers: unknown
                    .into_iter()
                    .map(|u| UnknownCustomerView {
                        customer: u.external_ref,
                        events: u.events,
                        first_seen_at: u.first_seen_at,
                        last_seen_at: u.last_seen_at,
                    })
                    .collect(),
            })
        })
        .await
    }
}
