//! Tenants: slaproof's operators only, across every tenant.

use slaproof_domain::label::Label;
pub use slaproof_store::tenants::Tenant;
use slaproof_store::{TenantTx, tenants};

use crate::authz::Scope;
use crate::idempotency::Creating;
use crate::{App, AppError, Caller, Page, PageRequest, Principal};

impl App {
    #[tracing::instrument(skip(self, caller))]
    pub async fn list_tenants(
        &self,
        caller: &Caller,
        page: &PageRequest,
    ) -> Result<Page<Tenant>, AppError> {
        caller.require_provider(Scope::TenantAdmin)?;
        let keyset = page.keyset()?;
        let rows = tenants::page(&self.db, &keyset).await?;
        Ok(Page::of(rows, &keyset, |t| t.name.as_str()))
    }

    pub async fn create_tenant(
        &self,
        caller: &Caller,
        name: &str,
        display_name: &str,
    ) -> Result<Tenant, AppError> {
        self.in_tx(caller, async |tx| {
            self.create_tenant_in(tx, caller, name, display_name).await
        })
        .await
    }

    /// [`App::create_tenant`] for [`App::once`]. The tenant itself is
    /// written in a transaction of its own (row-level security lets a
    /// transaction write only its own tenant's rows), so a crash after it
    /// leaves the caller's key unanswered, and the retry is refused with
    /// 409 (the name is taken) rather than making a second tenant.
    #[tracing::instrument(skip(self, _tx, caller))]
    pub async fn create_tenant_in(
        &self,
        _tx: &mut TenantTx,
        caller: &Caller,
        name: &str,
        display_name: &str,
    ) -> Result<Tenant, AppError> {
        Creating::TENANT.require(caller)?;
        let display_name = Label::parse(display_name)
            .map_err(|e| AppError::invalid("display_name", e.to_string()))?;
        let display_name = display_name.as_str();
        Ok(tenants::create(&self.db, name, display_name).await?)
    }
}

impl App {
    /// slaproof's operator at the command line, which holds the database's
    /// service credentials and so acts for the platform.
    pub async fn operator(&self) -> Result<Caller, AppError> {
        self.caller(Principal::operator()).await
    }

    /// The operator acting as the administrator of one tenant, named by id
    /// (`ten_…`) or name: `slaproof customer create --tenant acme …` and
    /// the like, under the same rules as a `provider_admin` token.
    #[tracing::instrument(skip(self))]
    pub async fn operator_in(&self, tenant: &str) -> Result<Caller, AppError> {
        self.operator().await?.require(Scope::TenantAdmin)?;
        let id = tenants::resolve(&self.db, tenant).await?;
        self.caller(Principal::provider_admin(id)).await
    }
}
