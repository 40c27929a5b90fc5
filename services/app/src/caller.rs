//! Who is calling: the identity a transport checked (a token, the command
//! line) and the scopes it holds in its tenant.

use slaproof_domain::ids::{CustomerId, TenantId};

use crate::AppError;
use crate::authz::{Scope, ScopeSet};

/// Who is calling, as its credentials say: checked, not yet authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub subject: String,
    pub tenant: TenantId,
    pub roles: Vec<String>,
    /// Set for a customer's user: such a caller sees that customer's SLAs
    /// and nothing else.
    pub customer: Option<CustomerId>,
    /// Set for an embed token: its scopes replace what roles would grant.
    pub embed: Option<EmbedGrant>,
}

/// What an embed token allows: fixed when the provider asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedGrant {
    /// The token's `jti`, by which the provider revokes it.
    pub token_id: uuid::Uuid,
    /// [`OVERVIEW`](crate::embed::OVERVIEW) (every SLA of the customer) or
    /// the one SLA the token shows.
    pub dashboard: String,
    pub scopes: ScopeSet,
    /// The one origin that may frame the dashboard, when the token was
    /// bound to one (else any of the tenant's framing origins).
    pub origin: Option<String>,
}

impl Principal {
    /// slaproof's operator at the command line: whoever holds the
    /// database's service credentials. Operator operations span tenants, so
    /// the tenant is none in particular.
    pub fn operator() -> Self {
        Self {
            subject: "cli:operator".to_owned(),
            tenant: TenantId::from_uuid(uuid::Uuid::nil()),
            roles: vec!["operator".to_owned()],
            customer: None,
            embed: None,
        }
    }

    /// A provider's administrator acting at the command line on its tenant
    /// (`slaproof customer create`, `slaproof sla apply`, …): the same rules
    /// as the API applies to a `provider_admin` token.
    pub fn provider_admin(tenant: TenantId) -> Self {
        Self {
            subject: "cli:provider_admin".to_owned(),
            tenant,
            roles: vec!["provider_admin".to_owned()],
            customer: None,
            embed: None,
        }
    }
}

/// A caller whose identity was checked and whose scopes were resolved.
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

    /// The one SLA an embed token for a single SLA's dashboard may read.
    pub fn only_sla(&self) -> Option<&str> {
        self.principal
            .embed
            .as_ref()
            .map(|grant| grant.dashboard.as_str())
            .filter(|dashboard| *dashboard != crate::embed::OVERVIEW)
    }

    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }

    /// Refuses unless the caller holds `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), AppError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(AppError::MissingScope(scope))
        }
    }

    /// Provider-side operations (customers, keys, SLA documents) are not
    /// for a customer's users, whatever roles their token carries.
    pub fn require_provider(&self, scope: Scope) -> Result<(), AppError> {
        self.require(scope)?;
        if self.customer().is_some() {
            return Err(AppError::MissingScope(scope));
        }
        Ok(())
    }
}
