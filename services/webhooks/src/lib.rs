#![doc = include_str!("../README.md")]
//! The webhook worker: outbox facts delivered to tenants' endpoints, signed
//! per Standard Webhooks, at least once (see the README above).

pub mod schedule;
mod settings;
pub mod signature;
mod worker;

pub use settings::{Settings, SettingsError};
pub use worker::{Deliverer, WebhookError, relay_outbox, run};
