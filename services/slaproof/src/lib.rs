//! The slaproof process: configuration, the services it can run, and the
//! embedded Postgres of `slaproof up`. The binary in `main.rs` is a thin
//! command-line layer over this library, which tests drive directly.

pub mod app;
mod chain;
pub mod cli;
mod config;
pub mod demo;
mod embedded;
mod health;
mod housekeeping;
mod listener;
mod loadgen;
mod metrics;
mod npm;
mod pages;
mod telemetry;
mod transparency;

pub use app::{Application, Service};
pub use config::Config;
