//! Tenants: slaproof's operators only, across every tenant.

use slaproof_store::tenants::{self, Tenant};

use super::{Caller, Page, PageRequest, Service, ServiceError};
use crate::authz::Scope;

impl Service {
    #[tracing::instrument(skip(self, caller))]
    pub async fn list_tenants(
        &self,
        caller: &Caller,
        page: &PageRequest,
    ) -> Result<Page<Tenant>, ServiceError> {
        caller.require_provider(Scope::TenantAdmin)?;
        let all = tenants::list(&self.db).await?;
        page.apply(all, |t| t.name.as_str())
    }

    #[tracing::instrument(skip(self, caller))]
    pub async fn create_tenant(
        &self,
        caller: &Caller,
        name: &str,
        display_name: &str,
    ) -> Result<Tenant, ServiceError> {
        caller.require_provider(Scope::TenantAdmin)?;
        let display_name = display_name.trim();
        if display_name.is_empty() || display_name.chars().count() > 200 {
            return Err(ServiceError::invalid(
                "display_name",
                "must be 1-200 characters",
            ));
        }
        Ok(tenants::create(&self.db, name, display_name).await?)
    }
}
