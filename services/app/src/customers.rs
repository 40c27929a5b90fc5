//! Customers: the provider's side only.

use slaproof_domain::ids::CustomerId;
use slaproof_domain::label::Label;
pub use slaproof_store::customers::Customer;
use slaproof_store::{TenantTx, customers};

use crate::authz::Scope;
use crate::idempotency::Creating;
use crate::{App, AppError, Caller, Page, PageRequest};

/// What creating a customer takes.
#[derive(Debug, Clone)]
pub struct NewCustomer {
    pub external_ref: String,
    pub name: String,
}

impl App {
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_customers(
        &self,
        caller: &Caller,
        page: &PageRequest,
    ) -> Result<Page<Customer>, AppError> {
        caller.require_provider(Scope::CustomerRead)?;
        let mut tx = self.tx(caller).await?;
        let keyset = page.keyset()?;
        let rows = customers::list(&mut tx, &keyset).await?;
        tx.commit().await?;
        Ok(Page::of(rows, &keyset, |c| c.external_ref.as_str()))
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn get_customer(
        &self,
        caller: &Caller,
        id: CustomerId,
    ) -> Result<Customer, AppError> {
        caller.require_provider(Scope::CustomerRead)?;
        let mut tx = self.tx(caller).await?;
        let customer = customers::find(&mut tx, id).await?;
        tx.commit().await?;
        Ok(customer)
    }

    pub async fn create_customer(
        &self,
        caller: &Caller,
        new: NewCustomer,
    ) -> Result<Customer, AppError> {
        self.in_tx(caller, async |tx| {
            self.create_customer_in(tx, caller, new).await
        })
        .await
    }

    /// [`App::create_customer`] inside a transaction of the caller's
    /// tenant (see [`App::once`]).
    #[tracing::instrument(skip(self, tx, caller), fields(tenant = %caller.tenant()))]
    pub async fn create_customer_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        new: NewCustomer,
    ) -> Result<Customer, AppError> {
        Creating::CUSTOMER.require(caller)?;
        slaproof_domain::sla::check_customer_ref(&new.external_ref)
            .map_err(|e| AppError::invalid("external_ref", e.to_string()))?;
        let name = Label::parse(&new.name).map_err(|e| AppError::invalid("name", e.to_string()))?;
        Ok(customers::create(tx, &new.external_ref, name.as_str()).await?)
    }
}
