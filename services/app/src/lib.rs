//! The application layer: every operation of slaproof and every rule about
//! who may do it and see what. REST handlers, GraphQL resolvers, the CLI,
//! the workers and housekeeping only map shapes and call in here, so no
//! rule exists twice.
//!
//! Field-level rule: a read answers what the caller may see and names each
//! field it left out, with the scope that field needs, in `redacted`; an
//! operation that needs a scope as a whole (a write, an export, history)
//! is refused with [`AppError::MissingScope`] naming it.

pub mod attestations;
pub mod attribution;
pub mod audit;
mod authz;
mod caller;
pub mod compliance;
pub mod credit_statement;
pub mod credits;
pub mod customer_ranking;
pub mod customers;
pub mod dashboard;
pub mod embed;
pub mod evaluation_status;
pub mod fee_corrections;
mod headers;
pub mod history;
pub mod idempotency;
pub mod ingest_keys;
pub mod maintenance;
pub mod page;
pub mod probes;
mod sla_apply;
pub mod slas;
pub mod slo;
pub mod tenants;
pub mod thresholds;
pub mod transparency;
pub mod webhook_events;
mod webhook_secret;
pub mod webhooks;

use std::sync::Arc;

use serde::Serialize;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::{Database, StoreError, embed_tokens};

pub use authz::{Authorizer, Scope, ScopeSet};
pub use caller::{Caller, EmbedGrant, Principal};
pub use embed::{EMBED_AUDIENCE, EmbedClaims, EmbedSigner};
pub use page::{Page, PageRequest};
/// The transaction a creating operation runs in under [`App::once`].
pub use slaproof_store::TenantTx;

/// A field left out of an answer, and the scope that would show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Redaction {
    /// The field left out, e.g. `objectives[latency-p99].target_ppm`.
    pub field: String,
    /// The scope that would show it, e.g. `sla:read:latency`.
    #[schema(value_type = String)]
    pub scope: &'static str,
}

/// What an operation can fail with, in terms every caller maps (REST to a
/// problem document, GraphQL to an error with a code, the CLI to a message).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("this needs the scope {0}")]
    MissingScope(Scope),
    /// Credentials that can never be used as they are (a customer's role
    /// without the customer it acts for): refused whatever is asked.
    #[error("{0}")]
    Forbidden(String),
    /// Credentials that were good once and are no longer (a revoked embed
    /// token): the caller must get new ones.
    #[error("{0}")]
    Unauthenticated(String),
    /// Also what another tenant's or another customer's rows look like:
    /// their existence is not revealed.
    #[error("{what} {key:?} not found")]
    NotFound { what: &'static str, key: String },
    #[error("{0}")]
    Conflict(String),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl AppError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        AppError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl From<StoreError> for AppError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { what, key } => AppError::NotFound { what, key },
            StoreError::Conflict { message, .. } => AppError::Conflict(message),
            StoreError::Invalid { field, message, .. } => AppError::invalid(field, message),
            // A read the caller shaped (a range, a step): their mistake,
            // answered as one, not as a server fault.
            StoreError::InvalidQuery { field, reason } => AppError::invalid(field, reason),
            other => AppError::Internal(Box::new(other)),
        }
    }
}

/// Refuses any given instant outside 1970–2200 (`minute::check_instant`),
/// naming its field, before any minute arithmetic: the one check every
/// range a caller gives goes through.
pub(crate) fn check_instants(
    instants: &[(&str, Option<chrono::DateTime<chrono::Utc>>)],
) -> Result<(), AppError> {
    for (field, at) in instants {
        if let Some(at) = at {
            slaproof_domain::minute::check_instant(*at)
                .map_err(|rule| AppError::invalid(*field, rule))?;
        }
    }
    Ok(())
}

/// The evaluator's default late grace (`evaluator.grace_secs`), until the
/// configuration says otherwise ([`App::with_late_grace`]).
pub const DEFAULT_LATE_GRACE_SECS: i64 = 300;

/// The application layer's handle: the database, the policy, and what the
/// operator configured for tenants' URLs and embed tokens.
#[derive(Debug, Clone)]
pub struct App {
    db: Database,
    authz: Arc<Authorizer>,
    /// Signs embed tokens; the API's verifier checks them.
    embed_signer: Option<Arc<dyn EmbedSigner>>,
    /// Where tenants' URLs (probe targets) may point.
    outbound: Arc<OutboundPolicy>,
    /// Seals webhook endpoints' secrets; the platform's own when unset.
    webhook_key: Option<Arc<webhooks::WebhookKey>>,
    /// The platform-made webhook key, read from the database once: it
    /// never changes once made.
    platform_webhook_key: Arc<tokio::sync::OnceCell<webhooks::WebhookKey>>,
    /// The transparency log's secrets, read from the database once: they
    /// never change once made.
    log_secrets: Arc<tokio::sync::OnceCell<transparency::LogSecrets>>,
    /// The late grace of SLAs that set none, as the evaluator is
    /// configured (`evaluator.grace_secs`): readers that count raw events
    /// (attribution) leave out what the evaluator leaves out.
    late_grace: chrono::Duration,
}

impl App {
    /// The layer over `db` with `authz`'s roles; strict outbound policy
    /// and no embed signer until set.
    pub fn new(db: Database, authz: Arc<Authorizer>) -> Self {
        Self {
            db,
            authz,
            embed_signer: None,
            outbound: Arc::new(OutboundPolicy::strict()),
            webhook_key: None,
            platform_webhook_key: Arc::default(),
            log_secrets: Arc::default(),
            late_grace: chrono::Duration::seconds(DEFAULT_LATE_GRACE_SECS),
        }
    }

    /// The late grace of SLAs that set none: the evaluator's
    /// `evaluator.grace_secs` (default [`DEFAULT_LATE_GRACE_SECS`]).
    pub fn with_late_grace(mut self, grace: chrono::Duration) -> Self {
        self.late_grace = grace;
        self
    }

    /// The layer over `db` with the roles shipped with slaproof.
    pub async fn with_default_policy(db: Database) -> Result<Self, authz::AuthzError> {
        Ok(Self::new(
            db,
            Arc::new(Authorizer::with_default_policy().await?),
        ))
    }

    /// The operator's outbound-address policy; strict until set.
    pub fn with_outbound(mut self, outbound: OutboundPolicy) -> Self {
        self.outbound = Arc::new(outbound);
        self
    }

    /// What signs embed tokens; without one, asking for a token fails.
    pub fn with_embed_signer(mut self, signer: Arc<dyn EmbedSigner>) -> Self {
        self.embed_signer = Some(signer);
        self
    }

    /// Resolves a checked principal's scopes in its tenant. A customer's
    /// role without a customer is refused: such a token is confined to
    /// nothing, and must not fall back to seeing every customer's SLAs.
    pub async fn caller(&self, principal: Principal) -> Result<Caller, AppError> {
        if principal.customer.is_none()
            && let Some(role) = principal
                .roles
                .iter()
                .find(|r| authz::CUSTOMER_ROLES.contains(&r.as_str()))
        {
            return Err(AppError::Forbidden(format!(
                "the role {role} acts for a customer: the token must name it (claim `customer`)"
            )));
        }
        // An embed token's scopes were bounded by its issuer's when it was
        // signed; they are what it holds.
        if let Some(grant) = &principal.embed {
            let mut tx = self.db.tenant_tx(principal.tenant).await?;
            let revoked = embed_tokens::is_revoked(&mut tx, grant.token_id).await?;
            tx.commit().await?;
            if revoked {
                return Err(AppError::Unauthenticated(
                    "this embed token was revoked".to_owned(),
                ));
            }
            let scopes = grant.scopes;
            return Ok(Caller { principal, scopes });
        }
        let scopes = self
            .authz
            .scopes(principal.tenant, &principal.roles)
            .await
            .map_err(|e| AppError::Internal(Box::new(e)))?;
        Ok(Caller { principal, scopes })
    }

    /// A transaction in the caller's tenant: row-level security is the
    /// second wall behind the checks here.
    async fn tx(&self, caller: &Caller) -> Result<TenantTx, AppError> {
        Ok(self.db.tenant_tx(caller.tenant()).await?)
    }

    /// Runs `work` in one transaction of the caller's tenant and commits
    /// what it did, or nothing when it fails.
    async fn in_tx<T>(
        &self,
        caller: &Caller,
        work: impl AsyncFnOnce(&mut TenantTx) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let mut tx = self.tx(caller).await?;
        let value = work(&mut tx).await?;
        tx.commit().await?;
        Ok(value)
    }
}
