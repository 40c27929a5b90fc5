#![doc = include_str!("../README.md")]
//! The evaluator service: exact rollups, evaluations, budgets and burn-rate alerts per tenant.

pub mod attribution;
pub mod composite;
pub mod error;
pub mod evaluate;
pub mod events;
pub mod facts;
pub mod gauge;
pub mod maintenance;
mod metrics;
pub mod records;
pub mod recount;
pub mod rollup;
pub mod settings;
pub mod sketch;
pub mod thinning;
pub mod thresholds;
pub mod tracked;
pub mod worker;

pub use error::EvaluatorError;
pub use evaluate::{AlertCheck, ObjectiveEvaluation};
pub use rollup::Advance;
pub use settings::Settings;
pub use tracked::TrackedSla;
pub use worker::{
    JOB_KIND, Round, TenantRun, evaluate_tenant, evaluate_tenant_up_to, run, run_job, schedule_all,
    work_due,
};
