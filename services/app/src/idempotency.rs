//! `Idempotency-Key` on creating requests: the first request claims the
//! key, its answer is kept, and a retry gets the same answer back.

use serde_json::Value;
use sha2::{Digest, Sha256};

use slaproof_store::{Database, idempotency};

use crate::{App, AppError, Caller};

/// Seconds after which an unfinished claim counts as abandoned: longer than
/// any request may run.
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

/// What a claimed key says about this request.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key is new: run the request, then [`App::finish_idempotent`].
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

impl App {
    /// Claims `key` for this request, or finds its earlier answer.
    #[tracing::instrument(skip(self, caller, fingerprint), fields(tenant = %caller.tenant()))]
    pub async fn claim_idempotent(
        &self,
        caller: &Caller,
        key: &str,
        fingerprint: &[u8],
    ) -> Result<Claim, AppError> {
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AppError::invalid(
                "Idempotency-Key",
                "must be 1-255 visible ASCII characters",
            ));
        }
        let mut tx = self.tx(caller).await?;
        let subject = &caller.principal.subject;
        if idempotency::claim(&mut tx, subject, key, fingerprint, ABANDONED_AFTER_SECS).await? {
            tx.commit().await?;
            return Ok(Claim::Fresh);
        }
        let idempotency::StoredKey {
            fingerprint: stored,
            status,
            response: body,
        } = idempotency::find(&mut tx, subject, key).await?;
        tx.commit().await?;
        if stored != fingerprint {
            return Err(AppError::invalid(
                "Idempotency-Key",
                "was used before with a different request",
            ));
        }
        match (status, body) {
            (Some(status), Some(body)) => Ok(Claim::Replay {
                status: u16::try_from(status).unwrap_or(500),
                body,
            }),
            _ => Err(AppError::Conflict(
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
    ) -> Result<(), AppError> {
        let mut tx = self.tx(caller).await?;
        let subject = &caller.principal.subject;
        match answer {
            Some((status, body)) => {
                let status = i16::try_from(status).unwrap_or(500);
                idempotency::answer(&mut tx, subject, key, status, body).await?;
            }
            None => idempotency::release(&mut tx, subject, key).await?,
        }
        tx.commit().await?;
        Ok(())
    }
}
