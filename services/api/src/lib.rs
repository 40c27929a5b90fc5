//! The provider and customer API: REST and GraphQL over one service layer, JWT bearer
//! authentication against configured keys, and field-level RBAC with casbin.
//!
//! - [`auth`] checks tokens (the algorithm is pinned per key) and yields a
//!   [`auth::Principal`] from an extractor;
//! - [`authz`] turns roles into scopes with casbin, the tenant as domain;
//! - [`service`] owns every operation and every rule, including which
//!   fields a caller may see;
//! - [`rest`] and [`graphql`] map their shapes onto the service layer.

pub mod auth;
pub mod authz;
pub mod graphql;
pub mod rest;
pub mod service;
pub mod settings;

use std::sync::Arc;

use axum::Router;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::Database;

pub use settings::{Settings, SettingsError};

/// Why the API could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("invalid api configuration: {0}")]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Policy(#[from] authz::AuthzError),
}

/// The API's routes, ready to merge into the application's router.
/// `outbound` is the operator's rule for URLs tenants save (probe targets).
pub async fn router(
    db: Database,
    settings: &Settings,
    outbound: OutboundPolicy,
) -> Result<Router, BuildError> {
    let verifier = Arc::new(auth::Verifier::new(settings)?);
    let authz = Arc::new(authz::Authorizer::with_default_policy().await?);
    let service = service::Service::new(db, authz, verifier.clone()).with_outbound(outbound);
    let schema = graphql::schema(
        service.clone(),
        graphql::Limits {
            max_depth: settings.graphql_max_depth,
            max_complexity: settings.graphql_max_complexity,
            introspection: settings.graphql_introspection,
        },
    );
    Ok(rest::router(rest::ApiState {
        verifier,
        service,
        schema,
    }))
}
