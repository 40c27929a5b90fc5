//! A provider's customers over GraphQL.

use async_graphql::connection::Connection;
use async_graphql::{Context, Object, SimpleObject};

use slaproof_app::{AppError, Scope};

use super::limits::{page_cost, read_cost};
use super::{holds, paged, parts, refuse};

fn holds_customers(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::CustomerRead)
}

#[derive(Debug, Default)]
pub(super) struct CustomerQuery;

#[Object]
impl CustomerQuery {
    /// The provider's customers.
    #[graphql(
        visible = "holds_customers",
        complexity = "page_cost(first, child_complexity)"
    )]
    async fn customers(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Customer>> {
        paged(
            ctx,
            (first, after),
            async |app, caller, page| app.list_customers(caller, page).await,
            |c| &c.external_ref,
            |c| Customer {
                id: c.id.to_string(),
                external_ref: c.external_ref,
                name: c.name,
            },
        )
        .await
    }

    /// One customer of the tenant (`cus_…`).
    #[graphql(
        visible = "holds_customers",
        complexity = "read_cost(child_complexity)"
    )]
    async fn customer(&self, ctx: &Context<'_>, id: String) -> async_graphql::Result<Customer> {
        let (app, caller) = parts(ctx)?;
        // An id that does not parse cannot name a customer: not found,
        // as over REST.
        let id = id.parse().map_err(|_| {
            refuse(AppError::NotFound {
                what: "customer",
                key: id.clone(),
            })
        })?;
        let c = app.get_customer(caller, id).await.map_err(refuse)?;
        Ok(Customer {
            id: c.id.to_string(),
            external_ref: c.external_ref,
            name: c.name,
        })
    }
}

#[derive(Debug, Default)]
pub(super) struct CustomerMutation;

#[Object]
impl CustomerMutation {
    /// Creates a customer of the tenant.
    async fn create_customer(
        &self,
        ctx: &Context<'_>,
        external_ref: String,
        name: String,
    ) -> async_graphql::Result<Customer> {
        let (app, caller) = parts(ctx)?;
        let c = app
            .create_customer(
                caller,
                slaproof_app::customers::NewCustomer { external_ref, name },
            )
            .await
            .map_err(refuse)?;
        Ok(Customer {
            id: c.id.to_string(),
            external_ref: c.external_ref,
            name: c.name,
        })
    }
}

#[derive(Debug, SimpleObject)]
struct Customer {
    id: String,
    external_ref: String,
    name: String,
}
