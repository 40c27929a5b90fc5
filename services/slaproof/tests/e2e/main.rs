//! The binary's own tests, one test binary (each links the whole platform):
//! the CLI, `slaproof apply`, telemetry export, the Prometheus endpoints
//! and `slaproof verify`.

mod support;

mod ceremony;
mod cli;
mod cli_apply;
mod cli_log;
mod demo_history;
mod prometheus;
mod telemetry;
mod verify;
