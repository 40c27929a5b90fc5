//! Compensation: each closed period's frozen results turned into the credit the SLA's policy owes, recorded once in an append-only ledger and told as `credit.issued` / `credit.corrected`.
//!
//! The evaluator enqueues a `credit` job in the transaction that freezes a
//! period's result (a first close, or a correction); a compensation worker
//! claims it and computes the period's credit from every result in force,
//! appending to the ledger, telling the fact and completing the job in one
//! transaction (the jobs of a tenant claimed together share it, each in a
//! savepoint, so that they pay for one commit). A worker that dies before
//! its commit leaves nothing; the jobs' leases run out and another does the
//! work. The ledger's unique key (SLA, customer, period, version,
//! revision) leaves one entry however many workers race.

mod credit;
mod worker;

pub use credit::{CompensationError, Credited, credit_period};
pub use worker::{Settings, run, run_job, work_due};
