//! Ingest keys over GraphQL: listing, creating and revoking them (a secret
//! is answered once, when its key is created), and the tenant's ingest
//! settings.

use async_graphql::connection::Connection;
use async_graphql::{Context, Object, SimpleObject};

use slaproof_app::Scope;

use super::limits::page_cost;
use super::{holds, paged, parts, refuse};

fn holds_ingest_keys(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::IngestKeyManage)
}

#[derive(Debug, Default)]
pub(super) struct IngestKeyQuery;

#[Object]
impl IngestKeyQuery {
    /// The tenant's ingest keys, by prefix; never their secrets.
    #[graphql(
        visible = "holds_ingest_keys",
        complexity = "page_cost(first, child_complexity)"
    )]
    async fn ingest_keys(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, IngestKey>> {
        paged(
            ctx,
            (first, after),
            async |app, caller, page| app.list_ingest_keys(caller, page).await,
            |it| &it.prefix,
            IngestKey::from,
        )
        .await
    }

    /// How the tenant's telemetry is read.
    #[graphql(visible = "holds_ingest_keys")]
    async fn ingest_settings(&self, ctx: &Context<'_>) -> async_graphql::Result<IngestSettings> {
        let (app, caller) = parts(ctx)?;
        let s = app.ingest_settings(caller).await.map_err(refuse)?;
        Ok(s.into())
    }
}

#[derive(Debug, Default)]
pub(super) struct IngestKeyMutation;

#[Object]
impl IngestKeyMutation {
    /// Creates an ingest key; `key` is its secret, shown this once.
    async fn create_ingest_key(
        &self,
        ctx: &Context<'_>,
        name: String,
    ) -> async_graphql::Result<CreatedIngestKey> {
        let (app, caller) = parts(ctx)?;
        let created = app.create_ingest_key(caller, &name).await.map_err(refuse)?;
        Ok(CreatedIngestKey {
            ingest_key: created.key.into(),
            key: created.secret,
        })
    }

    /// Sets the OTLP attribute (on a span, else on its resource) that names
    /// the customer a request served: `slaproof.customer` by default,
    /// `enduser.id`, `user.id` or any other the instrumentation sets.
    async fn set_ingest_settings(
        &self,
        ctx: &Context<'_>,
        otlp_customer_attribute: String,
    ) -> async_graphql::Result<IngestSettings> {
        let (app, caller) = parts(ctx)?;
        let s = app
            .set_ingest_settings(
                caller,
                slaproof_app::ingest_keys::IngestSettings {
                    otlp_customer_attribute,
                },
            )
            .await
            .map_err(refuse)?;
        Ok(s.into())
    }

    /// Revokes an ingest key by id or prefix.
    async fn revoke_ingest_key(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<IngestKey> {
        let (app, caller) = parts(ctx)?;
        let key = app.revoke_ingest_key(caller, &id).await.map_err(refuse)?;
        Ok(key.into())
    }
}

#[derive(Debug, SimpleObject)]
struct IngestKey {
    /// `key_…`.
    id: String,
    /// The key's public part, enough to tell keys apart in logs.
    prefix: String,
    name: String,
    created_at: String,
    revoked_at: Option<String>,
}

impl From<slaproof_app::ingest_keys::IngestKey> for IngestKey {
    fn from(k: slaproof_app::ingest_keys::IngestKey) -> Self {
        Self {
            id: k.id.to_string(),
            prefix: k.prefix,
            name: k.name,
            created_at: k.created_at.to_rfc3339(),
            revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// A key just created: `key` is its secret, shown this once.
#[derive(Debug, SimpleObject)]
struct CreatedIngestKey {
    ingest_key: IngestKey,
    key: String,
}

/// How the tenant's telemetry is read.
#[derive(Debug, SimpleObject)]
struct IngestSettings {
    /// The OTLP attribute that names the customer a request served.
    otlp_customer_attribute: String,
}

impl From<slaproof_app::ingest_keys::IngestSettings> for IngestSettings {
    fn from(s: slaproof_app::ingest_keys::IngestSettings) -> Self {
        Self {
            otlp_customer_attribute: s.otlp_customer_attribute,
        }
    }
}
