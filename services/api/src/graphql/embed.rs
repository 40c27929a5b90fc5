//! Embedded dashboards over GraphQL: signing embed tokens and the origins
//! allowed to frame them.

use async_graphql::{Context, Object, SimpleObject};

use slaproof_app::{AppError, Scope};

use super::limits::read_cost;
use super::{holds, parts, refuse};

fn holds_embed(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::EmbedTokenCreate)
}

#[derive(Debug, Default)]
pub(super) struct EmbedQuery;

#[Object]
impl EmbedQuery {
    /// The origins allowed to frame the tenant's embedded dashboards.
    #[graphql(visible = "holds_embed", complexity = "read_cost(child_complexity)")]
    async fn embed_origins(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<String>> {
        let (app, caller) = parts(ctx)?;
        app.embed_origins(caller).await.map_err(refuse)
    }
}

#[derive(Debug, Default)]
pub(super) struct EmbedMutation;

#[Object]
impl EmbedMutation {
    /// Signs an embed token for one customer's dashboard (`overview`, or
    /// the name of one of its SLAs): read scopes the caller holds, 60-3600
    /// seconds (900 by default), framed by `origin` only when given.
    async fn create_embed_token(
        &self,
        ctx: &Context<'_>,
        customer: String,
        dashboard: String,
        scopes: Vec<String>,
        ttl_secs: Option<u32>,
        origin: Option<String>,
    ) -> async_graphql::Result<EmbedToken> {
        let (app, caller) = parts(ctx)?;
        let customer = customer.parse().map_err(|_| {
            refuse(AppError::invalid(
                "customer",
                "is not a customer id (cus_…)",
            ))
        })?;
        let token = app
            .create_embed_token(
                caller,
                slaproof_app::embed::EmbedRequest {
                    customer,
                    dashboard,
                    scopes,
                    ttl_secs,
                    origin,
                },
            )
            .await
            .map_err(refuse)?;
        Ok(EmbedToken {
            id: token.id.to_string(),
            token: token.token,
            expires_at: token.expires_at.to_rfc3339(),
            scopes: token.scopes.into_iter().map(str::to_owned).collect(),
        })
    }

    /// Revokes an embed token (by its id) before it expires.
    async fn revoke_embed_token(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<bool> {
        let (app, caller) = parts(ctx)?;
        let id = id
            .parse()
            .map_err(|_| refuse(AppError::invalid("id", "is not a token id (a UUID)")))?;
        app.revoke_embed_token(caller, id).await.map_err(refuse)?;
        Ok(true)
    }

    /// Replaces the origins allowed to frame embedded dashboards.
    async fn set_embed_origins(
        &self,
        ctx: &Context<'_>,
        origins: Vec<String>,
    ) -> async_graphql::Result<Vec<String>> {
        let (app, caller) = parts(ctx)?;
        app.set_embed_origins(caller, origins).await.map_err(refuse)
    }
}

#[derive(Debug, SimpleObject)]
struct EmbedToken {
    /// The token's id (`jti`), to revoke it with.
    id: String,
    token: String,
    /// RFC 3339.
    expires_at: String,
    scopes: Vec<String>,
}
