//! Embed tokens: short-lived, read-only tokens for one customer's
//! dashboard, signed by slaproof for the provider's backend to hand to the
//! browser; and the origins allowed to frame that dashboard.

use chrono::{DateTime, TimeZone, Utc};
use slaproof_domain::ids::{CustomerId, TenantId};
use slaproof_store::{TenantTx, customers, embed_origins};

use crate::authz::{Scope, ScopeSet};
use crate::{App, AppError, Caller};

/// The claims of an embed token, which slaproof signs itself.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EmbedClaims {
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub exp: u64,
    pub iat: u64,
    pub tenant: String,
    pub customer: String,
    pub dashboard: String,
    pub scopes: Vec<String>,
}

/// Embed tokens have their own audience, so that no other verifier of the
/// issuer's tokens mistakes one for a user's token.
pub const EMBED_AUDIENCE: &str = "slaproof-embed";

/// Signs embed tokens. The transport that verifies them (the API's token
/// verifier) implements it with the same key, so the key and the JWT
/// library stay in one place.
pub trait EmbedSigner: std::fmt::Debug + Send + Sync {
    /// The issuer embed tokens carry.
    fn issuer(&self) -> &str;
    /// A compact JWS of `claims`.
    fn sign(
        &self,
        claims: &EmbedClaims,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

/// The longest an embed token lives.
pub const MAX_TTL_SECS: u32 = 3600;
/// The lifetime when none is asked for.
pub const DEFAULT_TTL_SECS: u32 = 900;
/// At most this many framing origins per tenant.
pub const MAX_ORIGINS: usize = 32;

/// The scopes an embed token may carry: reading only.
pub const EMBEDDABLE: &[Scope] = &[
    Scope::SlaRead,
    Scope::SlaReadUptime,
    Scope::SlaReadLatency,
    Scope::SlaReadCredits,
    Scope::SlaReadHistory,
    Scope::MaintenanceRead,
    Scope::AlertRead,
    Scope::AttestationRead,
];

/// What the provider asks for.
#[derive(Debug, Clone)]
pub struct EmbedRequest {
    pub customer: CustomerId,
    pub dashboard: String,
    pub scopes: Vec<String>,
    pub ttl_secs: Option<u32>,
}

/// A signed embed token.
#[derive(Debug, Clone)]
pub struct EmbedToken {
    pub token: String,
    pub expires_at: DateTime<Utc>,
    pub scopes: Vec<&'static str>,
}

impl App {
    /// Signs an embed token. Its scopes must be embeddable and held by the
    /// provider asking, so an embed token never grants more than its issuer.
    pub async fn create_embed_token(
        &self,
        caller: &Caller,
        request: EmbedRequest,
    ) -> Result<EmbedToken, AppError> {
        self.in_tx(caller, async |tx| {
            self.create_embed_token_in(tx, caller, request).await
        })
        .await
    }

    /// [`App::create_embed_token`] inside a transaction of the caller's
    /// tenant (see [`App::once`]).
    #[tracing::instrument(skip(self, tx, caller), fields(tenant = %caller.tenant()))]
    pub async fn create_embed_token_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        request: EmbedRequest,
    ) -> Result<EmbedToken, AppError> {
        caller.require_provider(Scope::EmbedTokenCreate)?;
        let ttl = request.ttl_secs.unwrap_or(DEFAULT_TTL_SECS);
        if !(60..=MAX_TTL_SECS).contains(&ttl) {
            return Err(AppError::invalid(
                "ttl_secs",
                format!("must be between 60 and {MAX_TTL_SECS}"),
            ));
        }
        let dashboard = request.dashboard.as_str();
        if dashboard.is_empty()
            || dashboard.len() > 64
            || !dashboard
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(AppError::invalid(
                "dashboard",
                "must be 1-64 characters of a-z, 0-9 and '-'",
            ));
        }
        if request.scopes.is_empty() {
            return Err(AppError::invalid("scopes", "must name at least one scope"));
        }
        let mut scopes = ScopeSet::default();
        for text in &request.scopes {
            let scope = Scope::parse(text)
                .filter(|s| EMBEDDABLE.contains(s))
                .ok_or_else(|| {
                    AppError::invalid(
                        "scopes",
                        format!(
                            "{text:?} is not a scope an embed token may carry (read scopes only)"
                        ),
                    )
                })?;
            caller.require(scope)?;
            scopes.insert(scope);
        }
        customers::find(tx, request.customer).await?;

        let signer = self
            .embed_signer
            .as_ref()
            .ok_or_else(|| AppError::Internal("no embed token signer is configured".into()))?;
        let now = Utc::now().timestamp().max(0) as u64;
        let exp = now + u64::from(ttl);
        let claims = EmbedClaims {
            sub: format!("embed:{}", caller.principal.subject),
            iss: signer.issuer().to_owned(),
            aud: EMBED_AUDIENCE.to_owned(),
            exp,
            iat: now,
            tenant: caller.tenant().to_string(),
            customer: request.customer.to_string(),
            dashboard: request.dashboard,
            scopes: scopes.iter().map(|s| s.as_str().to_owned()).collect(),
        };
        let token = signer.sign(&claims).map_err(AppError::Internal)?;
        Ok(EmbedToken {
            token,
            expires_at: Utc
                .timestamp_opt(exp as i64, 0)
                .single()
                .unwrap_or_else(Utc::now),
            scopes: scopes.iter().map(Scope::as_str).collect(),
        })
    }

    /// Replaces the origins allowed to frame the tenant's embedded
    /// dashboards (`https://console.example.com`).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn set_embed_origins(
        &self,
        caller: &Caller,
        origins: Vec<String>,
    ) -> Result<Vec<String>, AppError> {
        caller.require_provider(Scope::EmbedTokenCreate)?;
        if origins.len() > MAX_ORIGINS {
            return Err(AppError::invalid(
                "origins",
                format!("at most {MAX_ORIGINS}"),
            ));
        }
        for origin in &origins {
            check_origin(origin)?;
        }
        let mut tx = self.tx(caller).await?;
        embed_origins::replace(&mut tx, &origins).await?;
        tx.commit().await?;
        self.frame_ancestors(caller.tenant()).await
    }

    /// The tenant's framing origins, as its provider reads them.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn embed_origins(&self, caller: &Caller) -> Result<Vec<String>, AppError> {
        caller.require_provider(Scope::EmbedTokenCreate)?;
        self.frame_ancestors(caller.tenant()).await
    }

    /// The origins allowed to frame a tenant's embedded dashboards.
    #[tracing::instrument(skip(self))]
    pub async fn frame_ancestors(&self, tenant: TenantId) -> Result<Vec<String>, AppError> {
        let mut tx = self.db.tenant_tx(tenant).await?;
        let origins = embed_origins::list(&mut tx).await?;
        tx.commit().await?;
        Ok(origins)
    }
}

/// An origin as CSP `frame-ancestors` takes it: scheme, host, optional
/// port, nothing else (a path or a quote would break out of the header).
fn check_origin(origin: &str) -> Result<(), AppError> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    let ok = rest.is_some_and(|r| {
        let (host, port) = match r.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (r, None),
        };
        !host.is_empty()
            && host.len() <= 253
            && host
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
            && port.is_none_or(|p| {
                !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
            })
    });
    if ok {
        Ok(())
    } else {
        Err(AppError::invalid(
            "origins",
            format!("{origin:?} is not an origin like https://console.example.com"),
        ))
    }
}
