//! The service layer: every operation of the API and every rule about who
//! may do it and see what. REST handlers (and GraphQL resolvers) only map
//! shapes and call in here, so no rule exists twice.
//!
//! Field-level rule: a read answers what the caller may see and names each
//! field it left out, with the scope that field needs, in `redacted`; an
//! operation that needs a scope as a whole (a write, an export, history)
//! is refused with [`ServiceError::MissingScope`] naming it.

pub mod compliance;
pub mod customers;
pub mod dashboard;
pub mod embed;
pub mod history;
pub mod idempotency;
pub mod ingest_keys;
pub mod maintenance;
pub mod probes;
pub mod slas;
pub mod tenants;
pub mod thresholds;

use std::sync::Arc;

use serde::Serialize;
use slaproof_domain::ids::{CustomerId, TenantId};
use slaproof_store::{Database, StoreError, TenantTx};

use crate::auth::Principal;
use crate::authz::{Authorizer, Scope, ScopeSet};

/// A caller whose token was checked and whose scopes were resolved.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: Principal,
    pub scopes: ScopeSet,
}

impl Caller {
    pub fn tenant(&self) -> TenantId {
        self.principal.tenant
    }

    /// The customer a customer's user is confined to.
    pub fn customer(&self) -> Option<CustomerId> {
        self.principal.customer
    }

    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }

    /// Refuses unless the caller holds `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), ServiceError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(ServiceError::MissingScope(scope))
        }
    }

    /// Provider-side operations (customers, keys, SLA documents) are not
    /// for a customer's users, whatever roles their token carries.
    pub fn require_provider(&self, scope: Scope) -> Result<(), ServiceError> {
        self.require(scope)?;
        if self.customer().is_some() {
            return Err(ServiceError::MissingScope(scope));
        }
        Ok(())
    }
}

/// A field left out of an answer, and the scope that would show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Redaction {
    /// The field left out, e.g. `objectives[latency-p99].target_ppm`.
    pub field: String,
    /// The scope that would show it, e.g. `sla:read:latency`.
    #[schema(value_type = String)]
    pub scope: &'static str,
}

/// What an operation can fail with, in terms both APIs map.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("this needs the scope {0}")]
    MissingScope(Scope),
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

impl ServiceError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ServiceError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { what, key } => ServiceError::NotFound { what, key },
            StoreError::Conflict { message, .. } => ServiceError::Conflict(message),
            StoreError::Invalid {
                constraint,
                message,
            } => ServiceError::Invalid {
                field: constraint,
                message,
            },
            other => ServiceError::Internal(Box::new(other)),
        }
    }
}

impl From<slaproof_evaluator::EvaluatorError> for ServiceError {
    fn from(err: slaproof_evaluator::EvaluatorError) -> Self {
        match err {
            // A read the caller shaped (a range, a step): their mistake,
            // answered as one, not as a server fault.
            slaproof_evaluator::EvaluatorError::InvalidQuery { field, reason } => {
                ServiceError::invalid(field, reason)
            }
            other => ServiceError::Internal(Box::new(other)),
        }
    }
}

/// The service layer's handle: the database and the policy.
#[derive(Debug, Clone)]
pub struct Service {
    db: Database,
    authz: Arc<Authorizer>,
    verifier: Arc<crate::auth::Verifier>,
    /// Where tenants' URLs (probe targets) may point.
    outbound: Arc<slaproof_http::outbound::OutboundPolicy>,
}

impl Service {
    pub fn new(db: Database, authz: Arc<Authorizer>, verifier: Arc<crate::auth::Verifier>) -> Self {
        Self {
            db,
            authz,
            verifier,
            outbound: Arc::new(slaproof_http::outbound::OutboundPolicy::strict()),
        }
    }

    /// The operator's outbound-address policy; strict until set.
    pub fn with_outbound(mut self, outbound: slaproof_http::outbound::OutboundPolicy) -> Self {
        self.outbound = Arc::new(outbound);
        self
    }

    /// Resolves a checked principal's scopes in its tenant.
    pub async fn caller(&self, principal: Principal) -> Result<Caller, ServiceError> {
        // An embed token's scopes were bounded by its issuer's when it was
        // signed; they are what it holds.
        if let Some(grant) = &principal.embed {
            let scopes = grant.scopes;
            return Ok(Caller { principal, scopes });
        }
        let scopes = self
            .authz
            .scopes(principal.tenant, &principal.roles)
            .await
            .map_err(|e| ServiceError::Internal(Box::new(e)))?;
        Ok(Caller { principal, scopes })
    }

    /// A transaction in the caller's tenant: row-level security is the
    /// second wall behind the checks here.
    async fn tx(&self, caller: &Caller) -> Result<TenantTx, ServiceError> {
        Ok(self.db.tenant_tx(caller.tenant()).await?)
    }
}

/// A page of a list, with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// How much of a list to answer.
#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    pub limit: Option<u32>,
}

pub const DEFAULT_PAGE: usize = 50;
pub const MAX_PAGE: usize = 200;

impl PageRequest {
    /// Pages a list sorted by `key`: cursors are opaque (hex of the last
    /// key), so a client cannot build one that skips a check.
    pub fn apply<T>(
        &self,
        items: Vec<T>,
        key: impl Fn(&T) -> &str,
    ) -> Result<Page<T>, ServiceError> {
        let limit = match self.limit {
            None => DEFAULT_PAGE,
            Some(n) if (1..=MAX_PAGE as u32).contains(&n) => n as usize,
            Some(n) => {
                return Err(ServiceError::invalid(
                    "limit",
                    format!("must be between 1 and {MAX_PAGE}, got {n}"),
                ));
            }
        };
        let after = match &self.cursor {
            None => None,
            Some(c) => Some(
                hex::decode(c)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| {
                        ServiceError::invalid("cursor", "is not a cursor this API gave")
                    })?,
            ),
        };
        let mut rest: Vec<T> = items
            .into_iter()
            .filter(|i| after.as_deref().is_none_or(|a| key(i) > a))
            .collect();
        let more = rest.len() > limit;
        rest.truncate(limit);
        let next_cursor = if more {
            rest.last().map(|l| hex::encode(key(l)))
        } else {
            None
        };
        Ok(Page {
            items: rest,
            next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_each_other_without_gaps() {
        let items: Vec<String> = (0..7).map(|i| format!("k{i}")).collect();
        let mut request = PageRequest {
            cursor: None,
            limit: Some(3),
        };
        let mut seen = Vec::new();
        loop {
            let page = request.apply(items.clone(), |s| s.as_str()).unwrap();
            seen.extend(page.items);
            match page.next_cursor {
                Some(c) => request.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert!(
            PageRequest {
                cursor: Some("zz".into()),
                limit: None
            }
            .apply(items.clone(), |s| s.as_str())
            .is_err()
        );
        assert!(
            PageRequest {
                cursor: None,
                limit: Some(0)
            }
            .apply(items, |s| s.as_str())
            .is_err()
        );
    }
}
