//! Embed tokens: short-lived, read-only tokens for one customer's
//! dashboard, signed by slaproof for the provider's backend to hand to the
//! browser; and the origins allowed to frame that dashboard.

use chrono::{DateTime, TimeZone, Utc};
use slaproof_domain::ids::{CustomerId, TenantId};
use slaproof_store::{TenantTx, customers, embed_origins, embed_tokens, platform_secrets, slas};

use crate::authz::{Scope, ScopeSet};
use crate::idempotency::Creating;
use crate::{App, AppError, Caller};

/// The claims of an embed token, which slaproof signs itself.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EmbedClaims {
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub exp: u64,
    pub iat: u64,
    /// The token's id, by which it is revoked.
    pub jti: String,
    pub tenant: String,
    pub customer: String,
    /// [`OVERVIEW`] or the name of the one SLA the token shows.
    pub dashboard: String,
    pub scopes: Vec<String>,
    /// The one origin that may frame the dashboard, when bound to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The dashboard of every SLA of the customer; any other `dashboard` names
/// the one SLA a token shows.
pub const OVERVIEW: &str = "overview";

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

/// The name of the embed-token key among the platform's secrets.
const EMBED_SECRET_NAME: &str = "embed_token_key";

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
    Scope::SlaReadAudit,
    Scope::MaintenanceRead,
    Scope::AlertRead,
    Scope::AttestationRead,
];

/// What the provider asks for.
#[derive(Debug, Clone)]
pub struct EmbedRequest {
    pub customer: CustomerId,
    /// [`OVERVIEW`], or the name of one of the customer's SLAs: the token
    /// then reads that SLA and nothing else.
    pub dashboard: String,
    pub scopes: Vec<String>,
    pub ttl_secs: Option<u32>,
    /// One of the tenant's framing origins: only it may frame the
    /// dashboard (else any of them).
    pub origin: Option<String>,
}

/// A signed embed token (`Debug` leaves the token out).
#[derive(Clone)]
pub struct EmbedToken {
    /// The token's `jti`, by which it is revoked.
    pub id: uuid::Uuid,
    pub token: String,
    pub expires_at: DateTime<Utc>,
    pub scopes: Vec<&'static str>,
}

impl std::fmt::Debug for EmbedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedToken")
            .field("id", &self.id)
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish()
    }
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
        Creating::EMBED_TOKEN.require(caller)?;
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
        if dashboard != OVERVIEW {
            let shown = match slas::find(tx, dashboard, None).await {
                Ok(sla) => Some(sla),
                Err(slaproof_store::StoreError::NotFound { .. }) => None,
                Err(other) => return Err(other.into()),
            };
            if shown.is_none_or(|sla| sla.customer != Some(request.customer)) {
                return Err(AppError::invalid(
                    "dashboard",
                    format!(
                        "must be {OVERVIEW:?} or the name of one of the customer's SLAs; {dashboard:?} is neither"
                    ),
                ));
            }
        }
        if let Some(origin) = &request.origin {
            check_origin(origin)?;
            if !embed_origins::list(tx).await?.contains(origin) {
                return Err(AppError::invalid(
                    "origin",
                    format!(
                        "{origin:?} is not one of the tenant's framing origins (PUT /v1/embed-origins)"
                    ),
                ));
            }
        }

        let signer = self
            .embed_signer
            .as_ref()
            .ok_or_else(|| AppError::Internal("no embed token signer is configured".into()))?;
        let now = Utc::now().timestamp().max(0) as u64;
        let exp = now + u64::from(ttl);
        let id = uuid::Uuid::new_v4();
        let claims = EmbedClaims {
            jti: id.to_string(),
            sub: format!("embed:{}", caller.principal.subject),
            iss: signer.issuer().to_owned(),
            aud: EMBED_AUDIENCE.to_owned(),
            exp,
            iat: now,
            tenant: caller.tenant().to_string(),
            customer: request.customer.to_string(),
            dashboard: request.dashboard,
            scopes: scopes.iter().map(|s| s.as_str().to_owned()).collect(),
            origin: request.origin,
        };
        let token = signer.sign(&claims).map_err(AppError::Internal)?;
        Ok(EmbedToken {
            id,
            token,
            expires_at: Utc
                .timestamp_opt(exp as i64, 0)
                .single()
                .unwrap_or_else(Utc::now),
            scopes: scopes.iter().map(Scope::as_str).collect(),
        })
    }

    /// The key embed tokens are signed with when none is configured: made
    /// on first use and kept in the database, so that every replica signs
    /// and checks with the same one (a key made per process would have each
    /// replica refuse the others' tokens).
    pub async fn shared_embed_secret(&self) -> Result<String, AppError> {
        let fresh = rand::random::<[u8; 32]>();
        let kept = platform_secrets::get_or_create(&self.db, EMBED_SECRET_NAME, &fresh).await?;
        Ok(hex::encode(kept))
    }

    /// Revokes an embed token before it expires: every request with it is
    /// refused from now on (401).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn revoke_embed_token(
        &self,
        caller: &Caller,
        token_id: uuid::Uuid,
    ) -> Result<(), AppError> {
        caller.require_provider(Scope::EmbedTokenCreate)?;
        let mut tx = self.tx(caller).await?;
        embed_tokens::revoke(&mut tx, token_id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The origins allowed to frame the dashboard a caller reads: an embed
    /// token bound to one origin gets that one, others the tenant's.
    /// A bound origin the tenant has since removed frames nothing.
    pub async fn frame_ancestors_of(
        &self,
        principal: &crate::Principal,
    ) -> Result<Vec<String>, AppError> {
        let mut origins = self.frame_ancestors(principal.tenant).await?;
        if let Some(bound) = principal.embed.as_ref().and_then(|g| g.origin.as_ref()) {
            origins.retain(|o| o == bound);
        }
        Ok(origins)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_reach_a_debug_line() {
        let token = EmbedToken {
            id: uuid::Uuid::nil(),
            token: "eyJ.secret-token.sig".to_owned(),
            expires_at: Utc::now(),
            scopes: vec!["sla:read"],
        };
        assert!(!format!("{token:?}").contains("secret-token"));
        let key = crate::ingest_keys::CreatedKey {
            key: slaproof_store::ingest_keys::IngestKey {
                id: slaproof_domain::ids::IngestKeyId::new(),
                prefix: "sp_live_ab".to_owned(),
                name: "ci".to_owned(),
                created_at: Utc::now(),
                revoked_at: None,
            },
            secret: "sp_live_ab.the-secret-part".to_owned(),
        };
        assert!(!format!("{key:?}").contains("the-secret-part"));
    }
}
