//! Authorization: casbin RBAC with domains (the tenant is the domain) turns
//! a caller's roles into the scopes it holds. What each scope unlocks is
//! decided in the service layer, in one place for REST and GraphQL.

use std::collections::HashMap;
use std::sync::Mutex;

use casbin::{CoreApi, DefaultModel, Enforcer, StringAdapter};
use slaproof_domain::ids::TenantId;
use tokio::sync::RwLock;

/// A permission. Sensitive fields each name the scope they need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// SLAs exist: names, services, windows, versions.
    SlaRead,
    /// Availability objectives: targets, compliance and budgets.
    SlaReadUptime,
    /// Latency objectives: thresholds, targets, compliance and budgets.
    SlaReadLatency,
    /// Service credits owed (compensation).
    SlaReadCredits,
    /// Past versions and time series.
    SlaReadHistory,
    /// The verdict audit trail: every action that changed what an SLA's
    /// verdict rests on, who did it and when.
    SlaReadAudit,
    /// Whole documents, native and OpenSLO.
    SlaExport,
    /// Creating and changing SLA documents.
    SlaWrite,
    /// A customer's own alert thresholds on its SLA's objectives; never the
    /// contract's targets (those are `sla:write`, provider only).
    SlaWriteThresholds,
    CustomerRead,
    CustomerWrite,
    MaintenanceRead,
    MaintenanceWrite,
    /// Accepting an emergency maintenance window for an SLA: the
    /// customer's agreement, never the provider's (a customer's user only).
    MaintenanceAccept,
    IngestKeyManage,
    EmbedTokenCreate,
    AlertRead,
    AttestationRead,
    /// Synthetic probes: define, change, run and delete them.
    ProbeManage,
    /// Webhook endpoints and their deliveries: seeing them.
    WebhookRead,
    /// Webhook endpoints: creating, enabling, disabling, deleting, and
    /// rotating their secrets.
    WebhookWrite,
    /// The transparency log: inclusion proofs for requests and checks of
    /// a client-side log against it (a customer's user: its own requests).
    RequestVerify,
    /// Operators of slaproof itself: every tenant.
    TenantAdmin,
}

impl Scope {
    pub const ALL: &'static [Scope] = &[
        Scope::SlaRead,
        Scope::SlaReadUptime,
        Scope::SlaReadLatency,
        Scope::SlaReadCredits,
        Scope::SlaReadHistory,
        Scope::SlaReadAudit,
        Scope::SlaExport,
        Scope::SlaWrite,
        Scope::SlaWriteThresholds,
        Scope::CustomerRead,
        Scope::CustomerWrite,
        Scope::MaintenanceRead,
        Scope::MaintenanceWrite,
        Scope::MaintenanceAccept,
        Scope::IngestKeyManage,
        Scope::EmbedTokenCreate,
        Scope::AlertRead,
        Scope::AttestationRead,
        Scope::ProbeManage,
        Scope::WebhookRead,
        Scope::WebhookWrite,
        Scope::RequestVerify,
        Scope::TenantAdmin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::SlaRead => "sla:read",
            Scope::SlaReadUptime => "sla:read:uptime",
            Scope::SlaReadLatency => "sla:read:latency",
            Scope::SlaReadCredits => "sla:read:credits",
            Scope::SlaReadHistory => "sla:read:history",
            Scope::SlaReadAudit => "sla:read:audit",
            Scope::SlaExport => "sla:export",
            Scope::SlaWrite => "sla:write",
            Scope::SlaWriteThresholds => "sla:write:thresholds",
            Scope::CustomerRead => "customer:read",
            Scope::CustomerWrite => "customer:write",
            Scope::MaintenanceRead => "maintenance:read",
            Scope::MaintenanceWrite => "maintenance:write",
            Scope::MaintenanceAccept => "maintenance:accept",
            Scope::IngestKeyManage => "ingest_key:manage",
            Scope::EmbedTokenCreate => "embed_token:create",
            Scope::AlertRead => "alert:read",
            Scope::AttestationRead => "attestation:read",
            Scope::ProbeManage => "probe:manage",
            Scope::WebhookRead => "webhook:read",
            Scope::WebhookWrite => "webhook:write",
            Scope::RequestVerify => "request:verify",
            Scope::TenantAdmin => "tenant:admin",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.iter().copied().find(|s| s.as_str() == text)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ScopeSet(u32);

impl ScopeSet {
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn insert(&mut self, scope: Scope) {
        self.0 |= scope.bit();
    }

    /// Only the scopes both sets hold (an embed token narrows its issuer's).
    pub fn intersection(self, other: ScopeSet) -> ScopeSet {
        ScopeSet(self.0 & other.0)
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL
            .iter()
            .copied()
            .filter(move |s| self.contains(*s))
    }
}

impl FromIterator<Scope> for ScopeSet {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        let mut set = ScopeSet::default();
        for scope in iter {
            set.insert(scope);
        }
        set
    }
}

/// The roles that act for one of the provider's customers: a token with
/// one of them must name that customer, and is confined to its SLAs.
pub(crate) const CUSTOMER_ROLES: &[&str] = &["customer_admin"];

/// Why the policy could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("authorization policy: {0}")]
pub struct AuthzError(#[from] casbin::Error);

/// The casbin enforcer with a cache of each (tenant, role)'s scopes: the
/// policy changes rarely and every request asks.
pub struct Authorizer {
    enforcer: RwLock<Enforcer>,
    cache: Mutex<HashMap<(TenantId, String), ScopeSet>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The model and default roles shipped with slaproof.
    pub async fn with_default_policy() -> Result<Self, AuthzError> {
        let model = DefaultModel::from_str(include_str!("model.conf")).await?;
        let adapter = StringAdapter::new(include_str!("policy.csv"));
        let enforcer = Enforcer::new(model, adapter).await?;
        Ok(Self {
            enforcer: RwLock::new(enforcer),
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The scopes `roles` grant in `tenant`. Unknown roles grant nothing.
    pub async fn scopes(&self, tenant: TenantId, roles: &[String]) -> Result<ScopeSet, AuthzError> {
        let mut set = ScopeSet::default();
        for role in roles {
            let cached = self
                .cache
                .lock()
                .ok()
                .and_then(|c| c.get(&(tenant, role.clone())).copied());
            let granted = match cached {
                Some(granted) => granted,
                None => {
                    let granted = self.enforce_all(tenant, role).await?;
                    if let Ok(mut cache) = self.cache.lock() {
                        // Roles come from tokens; a bound keeps made-up
                        // role names from growing the cache forever.
                        if cache.len() > 10_000 {
                            cache.clear();
                        }
                        cache.insert((tenant, role.clone()), granted);
                    }
                    granted
                }
            };
            set = ScopeSet(set.0 | granted.0);
        }
        Ok(set)
    }

    async fn enforce_all(&self, tenant: TenantId, role: &str) -> Result<ScopeSet, AuthzError> {
        let enforcer = self.enforcer.read().await;
        let domain = tenant.to_string();
        let mut set = ScopeSet::default();
        for scope in Scope::ALL {
            if enforcer.enforce((role, domain.as_str(), scope.as_str()))? {
                set.insert(*scope);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn scopes(role: &str) -> ScopeSet {
        let authz = Authorizer::with_default_policy().await.unwrap();
        authz
            .scopes(TenantId::new(), &[role.to_owned()])
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn default_roles_grant_what_the_issue_says() {
        let admin = scopes("provider_admin").await;
        // Everything in its tenant, nothing across tenants, and never the
        // customer's agreement to a maintenance window.
        assert!(
            Scope::ALL.iter().all(|s| admin.contains(*s)
                == !matches!(s, Scope::TenantAdmin | Scope::MaintenanceAccept))
        );
        assert_eq!(
            scopes("operator").await.iter().collect::<Vec<_>>(),
            [Scope::TenantAdmin]
        );

        let customer = scopes("customer_admin").await;
        for s in [
            Scope::SlaReadUptime,
            Scope::SlaReadLatency,
            Scope::SlaReadCredits,
            Scope::SlaReadHistory,
            Scope::SlaExport,
            Scope::SlaWriteThresholds,
            Scope::SlaReadAudit,
            Scope::MaintenanceAccept,
            Scope::AttestationRead,
            Scope::RequestVerify,
        ] {
            assert!(customer.contains(s), "{s}");
        }
        assert!(!customer.contains(Scope::SlaWrite));
        assert!(!customer.contains(Scope::IngestKeyManage));

        let viewer = scopes("operations_viewer").await;
        assert_eq!(
            viewer.iter().collect::<Vec<_>>(),
            [Scope::SlaRead, Scope::SlaReadUptime, Scope::SlaReadLatency]
        );

        let auditor = scopes("auditor").await;
        assert_eq!(auditor.iter().collect::<Vec<_>>(), [Scope::AttestationRead]);

        assert_eq!(scopes("root").await, ScopeSet::default());
    }

    #[test]
    fn scope_names_round_trip() {
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.as_str()), Some(*s));
        }
        assert_eq!(Scope::ALL.len(), 23);
    }
}
