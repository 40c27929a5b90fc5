//! `Idempotency-Key` on creating requests: the first request claims the
//! key, its answer is kept, and a retry gets the same answer back.

use serde_json::Value;
use sha2::{Digest, Sha256};

use slaproof_store::{Database, StoreError, tenants};

use super::{Caller, Service, ServiceError};

/// Seconds after which an unfinished claim counts as abandoned: longer than
/// any request may run.
pub const ABANDONED_AFTER_SECS: f64 = 300.0;

/// Seconds an answered key is kept: a client retries within minutes, and a
/// day still covers one that retries after an outage. Housekeeping deletes
/// older keys ([`expire_keys`]), so the table holds about a day of
/// creating requests.
pub const KEEP_SECS: f64 = 24.0 * 3600.0;

/// Deletes every tenant's keys older than [`KEEP_SECS`] (run by
/// housekeeping); answers how many went. Each tenant in its own
/// transaction: row-level security holds for this too.
pub async fn expire_keys(db: &Database) -> Result<u64, StoreError> {
    let mut deleted = 0;
    for tenant in tenants::list(db).await? {
        let mut tx = db.tenant_tx(tenant.id).await?;
        deleted += sqlx::query(
            "DELETE FROM api_idempotency_keys \
             WHERE tenant_id = $1 AND created_at < now() - make_interval(secs => $2)",
        )
        .bind(tenant.id.uuid())
        .bind(KEEP_SECS)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
    }
    Ok(deleted)
}

/// What a claimed key says about this request.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key is new: run the request, then [`Service::finish_idempotent`].
    Fresh,
    /// Done before: answer this again.
    Replay { status: u16, body: Value },
}

/// The fingerprint of a request: its route and its body.
pub fn fingerprint(route: &str, body: &[u8]) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(route.as_bytes());
    hash.update([0]);
    hash.update(body);
    hash.finalize().to_vec()
}

impl Service {
    /// Claims `key` for this request, or finds its earlier answer.
    #[tracing::instrument(skip(self, caller, fingerprint), fields(tenant = %caller.tenant()))]
    pub async fn claim_idempotent(
        &self,
        caller: &Caller,
        key: &str,
        fingerprint: &[u8],
    ) -> Result<Claim, ServiceError> {
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ServiceError::invalid(
                "Idempotency-Key",
                "must be 1-255 visible ASCII characters",
            ));
        }
        let mut tx = self.tx(caller).await?;
        let inserted = sqlx::query(
            // A claim whose request never finished (its process died) is
            // taken over after a while rather than blocking the key forever.
            "INSERT INTO api_idempotency_keys (tenant_id, subject, key, fingerprint) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant_id, subject, key) DO UPDATE \
               SET fingerprint = EXCLUDED.fingerprint, created_at = now() \
               WHERE api_idempotency_keys.status IS NULL \
                 AND api_idempotency_keys.created_at < now() - make_interval(secs => $5)",
        )
        .bind(caller.tenant().uuid())
        .bind(&caller.principal.subject)
        .bind(key)
        .bind(fingerprint)
        .bind(ABANDONED_AFTER_SECS)
        .execute(&mut *tx)
        .await
        .map_err(slaproof_store::StoreError::from)?
        .rows_affected();
        if inserted == 1 {
            tx.commit().await?;
            return Ok(Claim::Fresh);
        }
        let (stored, status, body): (Vec<u8>, Option<i16>, Option<Value>) = sqlx::query_as(
            "SELECT fingerprint, status, response FROM api_idempotency_keys \
             WHERE tenant_id = $1 AND subject = $2 AND key = $3",
        )
        .bind(caller.tenant().uuid())
        .bind(&caller.principal.subject)
        .bind(key)
        .fetch_one(&mut *tx)
        .await
        .map_err(slaproof_store::StoreError::from)?;
        tx.commit().await?;
        if stored != fingerprint {
            return Err(ServiceError::invalid(
                "Idempotency-Key",
                "was used before with a different request",
            ));
        }
        match (status, body) {
            (Some(status), Some(body)) => Ok(Claim::Replay {
                status: u16::try_from(status).unwrap_or(500),
                body,
            }),
            _ => Err(ServiceError::Conflict(
                "a request with this Idempotency-Key is still running; retry later".to_owned(),
            )),
        }
    }

    /// Keeps the answer of a claimed key; a failed request frees the key so
    /// that it can be retried.
    #[tracing::instrument(skip(self, caller, answer), fields(tenant = %caller.tenant()))]
    pub async fn finish_idempotent(
        &self,
        caller: &Caller,
        key: &str,
        answer: Option<(u16, &Value)>,
    ) -> Result<(), ServiceError> {
        let mut tx = self.tx(caller).await?;
        let query = match answer {
            Some((status, body)) => sqlx::query(
                "UPDATE api_idempotency_keys SET status = $4, response = $5 \
                 WHERE tenant_id = $1 AND subject = $2 AND key = $3",
            )
            .bind(caller.tenant().uuid())
            .bind(&caller.principal.subject)
            .bind(key)
            .bind(i16::try_from(status).unwrap_or(500))
            .bind(body),
            None => sqlx::query(
                "DELETE FROM api_idempotency_keys WHERE tenant_id = $1 AND subject = $2 AND key = $3",
            )
            .bind(caller.tenant().uuid())
            .bind(&caller.principal.subject)
            .bind(key),
        };
        query
            .execute(&mut *tx)
            .await
            .map_err(slaproof_store::StoreError::from)?;
        tx.commit().await?;
        Ok(())
    }
}
