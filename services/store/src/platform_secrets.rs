//! Secrets the platform makes for itself (`platform_secrets`): made once,
//! on first use, by whichever replica comes first, and read by all.

use crate::{Database, StoreError};

/// The secret called `name`: the one kept, or `fresh` kept now when there
/// is none yet. Replicas starting together all end with the same secret
/// (the first insert wins; the others read it).
#[tracing::instrument(skip(db, fresh))]
pub async fn get_or_create(db: &Database, name: &str, fresh: &[u8]) -> Result<Vec<u8>, StoreError> {
    // Through a SECURITY DEFINER function: the service role cannot read
    // the table itself.
    let mut tx = db.platform_tx().await?;
    let secret = sqlx::query_scalar("SELECT slaproof_platform_secret($1, $2)")
        .bind(name)
        .bind(fresh)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(secret)
}
