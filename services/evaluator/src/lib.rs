#![doc = include_str!("../README.md")]
//! The evaluator service: exact rollups, evaluations, budgets and burn-rate alerts per tenant.

pub mod composite;
mod error;
pub mod evaluate;
mod events;
mod facts;
mod failures;
pub mod gauge;
mod maintenance;
mod measurements;
mod metrics;
mod nodata;
mod proof_days;
pub mod records;
pub mod recount;
pub mod references;
mod removed;
pub mod rollup;
mod settings;
mod signals;
mod sketch;
pub mod thinning;
mod thresholds;
mod tracked;
mod versions;
mod worker;

pub use error::EvaluatorError;
pub use evaluate::{AlertCheck, ObjectiveEvaluation};
pub use failures::{SlaFailure, Stuck};
pub use measurements::LOOKBACK_DAYS as MEASURE_LOOKBACK_DAYS;
pub use rollup::Advance;
pub use settings::Settings;
pub use tracked::TrackedSla;
pub use worker::{
    JOB_KIND, Round, Scheduled, TenantRun, evaluate_tenant, evaluate_tenant_spread,
    evaluate_tenant_up_to, run, run_job, schedule_all, work_due,
};
