//! `Idempotency-Key` on creating requests: the claim of the key, the work
//! and the answer kept for retries commit in one transaction, so a request
//! either did everything (and a retry gets its answer back) or nothing
//! (and a retry runs it afresh).

use serde_json::Value;
use sha2::{Digest, Sha256};

use slaproof_store::{Database, TenantTx, idempotency};

use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// Seconds after which a claim left unanswered counts as abandoned. Claims
/// commit with their answers now; only a key claimed by an earlier
/// release, whose request died between its two transactions, can be left
/// unanswered, and it is taken over after this long.
pub const ABANDONED_AFTER_SECS: f64 = 300.0;

/// Seconds an answered key is kept: a client retries within minutes, and a
/// day still covers one that retries after an outage. Housekeeping deletes
/// older keys ([`expire_keys`]), so the table holds about a day of
/// creating requests.
pub const KEEP_SECS: f64 = 24.0 * 3600.0;

/// Deletes every tenant's keys older than [`KEEP_SECS`] (run by
/// housekeeping); answers how many went.
pub async fn expire_keys(db: &Database) -> Result<u64, AppError> {
    Ok(idempotency::expire(db, KEEP_SECS).await?)
}

/// A creating request's key and the fingerprint of what it asks (its
/// route and body): the same key with another request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    key: String,
    fingerprint: Vec<u8>,
}

impl IdempotencyKey {
    /// The key a client sent for the request `route` with `body`.
    pub fn new(key: &str, route: &str, body: &[u8]) -> Result<Self, AppError> {
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AppError::invalid(
                "Idempotency-Key",
                "must be 1-255 visible ASCII characters",
            ));
        }
        Ok(Self {
            key: key.to_owned(),
            fingerprint: fingerprint(route, body),
        })
    }
}

/// The fingerprint of a request: its route and its body.
pub fn fingerprint(route: &str, body: &[u8]) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(route.as_bytes());
    hash.update([0]);
    hash.update(body);
    hash.finalize().to_vec()
}

/// What a creating request needs and hands out: the scope it requires
/// (checked before a kept answer is replayed, so a retry by a caller who
/// lost the scope, or never had it, learns nothing), and the field of its
/// answer that holds a secret shown once (an ingest key, an embed token),
/// which is never kept: a replay answers without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creating {
    pub scope: Scope,
    pub secret: Option<&'static str>,
}

impl Creating {
    const fn plain(scope: Scope) -> Self {
        Self {
            scope,
            secret: None,
        }
    }

    /// The creations of the application, each with the scope its
    /// `create_…_in` operation requires (the one place that rule is
    /// written) and the answer field of its secret, if any.
    pub const CUSTOMER: Self = Self::plain(Scope::CustomerWrite);
    pub const EMBED_TOKEN: Self = Self {
        scope: Scope::EmbedTokenCreate,
        secret: Some("token"),
    };
    pub const INGEST_KEY: Self = Self {
        scope: Scope::IngestKeyManage,
        secret: Some("key"),
    };
    pub const MAINTENANCE_WINDOW: Self = Self::plain(Scope::MaintenanceWrite);
    pub const PROBE: Self = Self::plain(Scope::ProbeManage);
    pub const SLA: Self = Self::plain(Scope::SlaWrite);
    pub const TENANT: Self = Self::plain(Scope::TenantAdmin);

    /// Refuses a caller who may not make this: a provider's user holding
    /// the scope.
    pub(crate) fn require(self, caller: &Caller) -> Result<(), AppError> {
        caller.require_provider(self.scope)
    }
}

/// What a creating request answers: a status and a body, made now or kept
/// from the first request with the same key.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// Kept from the first request with this key.
    pub replayed: bool,
}

impl App {
    /// Runs a creating operation (`work`, one of the `create_…_in`
    /// operations, all provider-side) at most once per `key`, after
    /// checking the caller holds `creating.scope`, in one transaction of the
    /// caller's tenant that also claims the key and keeps `answer` of what
    /// the work made. Without a key it simply runs. With a key done before
    /// (same request): its kept answer, `replayed`. A retry while the first
    /// request still runs waits for it (the claim's row lock) and then
    /// replays; when the first failed, nothing of it committed, its claim
    /// included, and the retry runs afresh.
    #[tracing::instrument(skip_all, fields(tenant = %caller.tenant()))]
    pub async fn once<T>(
        &self,
        caller: &Caller,
        creating: Creating,
        key: Option<&IdempotencyKey>,
        work: impl AsyncFnOnce(&mut TenantTx) -> Result<T, AppError>,
        answer: impl FnOnce(T) -> Result<(u16, Value), AppError>,
    ) -> Result<Answer, AppError> {
        creating.require(caller)?;
        let mut tx = self.tx(caller).await?;
        let subject = caller.principal.subject.as_str();
        if let Some(k) = key
            && !idempotency::claim(
                &mut tx,
                subject,
                &k.key,
                &k.fingerprint,
                ABANDONED_AFTER_SECS,
            )
            .await?
        {
            let stored = idempotency::find(&mut tx, subject, &k.key).await?;
            tx.commit().await?;
            return replay(stored, &k.fingerprint);
        }
        let (status, body) = answer(work(&mut tx).await?)?;
        if let Some(k) = key {
            let kept = i16::try_from(status).unwrap_or(500);
            let kept_body = without_secret(&body, creating.secret);
            idempotency::answer(&mut tx, subject, &k.key, kept, &kept_body).await?;
        }
        tx.commit().await?;
        Ok(Answer {
            status,
            body,
            replayed: false,
        })
    }
}

/// `body` as kept for replays: without its secret field.
fn without_secret(body: &Value, secret: Option<&str>) -> Value {
    let mut kept = body.clone();
    if let (Some(field), Some(object)) = (secret, kept.as_object_mut()) {
        object.remove(field);
    }
    kept
}

/// The answer kept for a key, for a request that must be the same one.
fn replay(stored: idempotency::StoredKey, fingerprint: &[u8]) -> Result<Answer, AppError> {
    if stored.fingerprint != fingerprint {
        return Err(AppError::invalid(
            "Idempotency-Key",
            "was used before with a different request",
        ));
    }
    match (stored.status, stored.response) {
        (Some(status), Some(body)) => Ok(Answer {
            status: u16::try_from(status).unwrap_or(500),
            body,
            replayed: true,
        }),
        _ => Err(AppError::Conflict(
            "a request with this Idempotency-Key is still running; retry later".to_owned(),
        )),
    }
}
