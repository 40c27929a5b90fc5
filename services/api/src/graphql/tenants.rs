//! Tenants over GraphQL, for slaproof's operators only.

use async_graphql::connection::Connection;
use async_graphql::{Context, Object, SimpleObject};

use slaproof_app::Scope;

use super::limits::page_cost;
use super::{holds, paged, parts, refuse};

fn holds_tenants(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::TenantAdmin)
}

#[derive(Debug, Default)]
pub(super) struct TenantQuery;

#[Object]
impl TenantQuery {
    /// Every tenant (slaproof's operators only).
    #[graphql(
        visible = "holds_tenants",
        complexity = "page_cost(first, child_complexity)"
    )]
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Tenant>> {
        paged(
            ctx,
            (first, after),
            async |app, caller, page| app.list_tenants(caller, page).await,
            |it| &it.name,
            Tenant::from,
        )
        .await
    }
}

#[derive(Debug, Default)]
pub(super) struct TenantMutation;

#[Object]
impl TenantMutation {
    /// Creates a tenant (slaproof's operators only).
    async fn create_tenant(
        &self,
        ctx: &Context<'_>,
        name: String,
        display_name: String,
    ) -> async_graphql::Result<Tenant> {
        let (app, caller) = parts(ctx)?;
        let tenant = app
            .create_tenant(caller, &name, &display_name)
            .await
            .map_err(refuse)?;
        Ok(tenant.into())
    }
}

#[derive(Debug, SimpleObject)]
struct Tenant {
    /// `ten_…`.
    id: String,
    name: String,
    display_name: String,
    created_at: String,
}

impl From<slaproof_app::tenants::Tenant> for Tenant {
    fn from(t: slaproof_app::tenants::Tenant) -> Self {
        Self {
            id: t.id.to_string(),
            name: t.name,
            display_name: t.display_name,
            created_at: t.created_at.to_rfc3339(),
        }
    }
}
