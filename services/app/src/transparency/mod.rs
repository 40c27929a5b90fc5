//! The transparency log's operations: building each tenant's log a day at
//! a time ([`build`]), its signed heads and consistency proofs (for anyone
//! holding `attestation:read`), inclusion proofs for a request and a check
//! of a client-side log ([`requests`], `request:verify`; a customer's user
//! for its own requests only), and a day's export for auditors.

pub mod audit;
pub mod build;
pub mod requests;

use chrono::{Duration, NaiveDate};
use serde::{Deserialize, Serialize};
use slaproof_domain::ids::TenantId;
use slaproof_domain::transparency::note::LogKey;
use slaproof_domain::transparency::tree;
use slaproof_domain::transparency::{Hash, hash_hex};
use slaproof_store::platform_secrets;
use slaproof_store::transparency::{self as log, DayHead};

use crate::authz::Scope;
use crate::{App, AppError, Caller};
use build::internal;

/// The platform secret leaves are salted under.
const LEAF_SALT_SECRET: &str = "transparency_leaf_salt";
/// The platform secret the logs' Ed25519 key is made from.
const LOG_KEY_SECRET: &str = "transparency_log_key";

/// How logs are built; `[transparency]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransparencySettings {
    /// Names the logs: tenant `t`'s log is `<origin>/<t>`, the name in its
    /// checkpoints and verifier key.
    pub origin: String,
    /// How long after a day ends its log is built: events arriving later
    /// go in a later day's batch, marked late.
    pub grace_secs: u64,
    /// How far back a day's batch looks for late events.
    pub lookback_days: u32,
    /// Events read, hashed and written at a time.
    pub page_size: i64,
    /// How often housekeeping looks for days to build, in seconds.
    pub interval_secs: u64,
}

impl Default for TransparencySettings {
    fn default() -> Self {
        Self {
            origin: "slaproof.localhost/log".into(),
            grace_secs: 3600,
            lookback_days: 7,
            page_size: 10_000,
            interval_secs: 600,
        }
    }
}

impl TransparencySettings {
    pub fn grace(&self) -> Duration {
        Duration::seconds(i64::try_from(self.grace_secs).unwrap_or(i64::MAX / 1000))
    }

    /// Why the settings cannot be used, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        if !slaproof_domain::transparency::note::is_origin_valid(&self.origin) {
            return Err(format!(
                "transparency.origin {:?} must be non-empty, without spaces or '+'",
                self.origin
            ));
        }
        if self.lookback_days == 0 || self.lookback_days > 366 {
            return Err("transparency.lookback_days must be 1 to 366".into());
        }
        if !(1..=1_000_000).contains(&self.page_size) {
            return Err("transparency.page_size must be 1 to 1000000".into());
        }
        if !(1..=86_400).contains(&self.interval_secs) {
            return Err("transparency.interval_secs must be 1 to 86400".into());
        }
        Ok(())
    }

    /// The name of `tenant`'s log.
    pub fn origin_of(&self, tenant: TenantId) -> String {
        format!("{}/{tenant}", self.origin.trim_end_matches('/'))
    }
}

/// The deployment's log secrets, made once by whichever replica is first.
#[derive(Clone)]
pub struct LogSecrets {
    pub(crate) leaf_salt: Vec<u8>,
    key_seed: [u8; 32],
}

impl std::fmt::Debug for LogSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogSecrets(..)")
    }
}

impl LogSecrets {
    /// The signing key of `tenant`'s log.
    pub fn key(
        &self,
        settings: &TransparencySettings,
        tenant: TenantId,
    ) -> Result<LogKey, AppError> {
        LogKey::from_seed(&settings.origin_of(tenant), &self.key_seed)
            .map_err(|err| AppError::invalid("transparency.origin", err.to_string()))
    }
}

/// A day's signed head, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TreeHead {
    /// The day whose batch ends at this head.
    pub day: NaiveDate,
    /// The day's leaves are `[first_index, size)`.
    pub first_index: i64,
    pub size: i64,
    /// The log's root at `size`, hex.
    pub root: String,
    /// Events of earlier days logged in this day's batch.
    pub late_entries: i64,
    /// The C2SP checkpoint in a signed note.
    pub checkpoint: String,
    /// The key that signed it (`<origin>+<id>+<base64 key>`).
    pub verifier_key: String,
    pub built_at: chrono::DateTime<chrono::Utc>,
    /// Where the head is anchored, once it is: the chain, EAS, the
    /// attestation's UID and transaction, the head's id (the batch's one
    /// member) and the batch root.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub anchor: Option<serde_json::Value>,
}

impl From<DayHead> for TreeHead {
    fn from(h: DayHead) -> Self {
        Self {
            day: h.log_day,
            first_index: h.first_index,
            size: h.size,
            root: hex::encode(&h.root),
            late_entries: h.late_entries,
            checkpoint: h.checkpoint,
            verifier_key: h.verifier_key,
            built_at: h.built_at,
            anchor: h.anchor,
        }
    }
}

/// A proof that one day's head extends an earlier day's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Consistency {
    pub from: TreeHead,
    pub to: TreeHead,
    /// RFC 9162 consistency proof from `from.size` to `to.size`, hex.
    pub proof: Vec<String>,
}

/// The most days a heads listing spans.
pub const MAX_HEAD_DAYS: i64 = 400;

impl App {
    /// The deployment's log secrets (made on first use), read once per
    /// process: every proof, check and build needs them.
    pub async fn log_secrets(&self) -> Result<LogSecrets, AppError> {
        self.log_secrets
            .get_or_try_init(|| async {
                let salt = platform_secrets::get_or_create(
                    &self.db,
                    LEAF_SALT_SECRET,
                    &rand::random::<[u8; 32]>(),
                )
                .await?;
                let seed = platform_secrets::get_or_create(
                    &self.db,
                    LOG_KEY_SECRET,
                    &rand::random::<[u8; 32]>(),
                )
                .await?;
                let key_seed = seed.try_into().map_err(|_| {
                    AppError::Conflict("the transparency log key secret is not 32 bytes".into())
                })?;
                Ok(LogSecrets {
                    leaf_salt: salt,
                    key_seed,
                })
            })
            .await
            .cloned()
    }

    /// The signed heads of the days `[from, to]`, oldest first.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn tree_heads(
        &self,
        caller: &Caller,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<TreeHead>, AppError> {
        caller.require(Scope::AttestationRead)?;
        if to < from {
            return Err(AppError::invalid("to", "must not be before from"));
        }
        if (to - from).num_days() >= MAX_HEAD_DAYS {
            return Err(AppError::invalid(
                "to",
                format!("a listing spans at most {MAX_HEAD_DAYS} days"),
            ));
        }
        let mut tx = self.tx(caller).await?;
        let heads = log::heads(&mut tx, from, to).await?;
        tx.commit().await?;
        Ok(heads.into_iter().map(TreeHead::from).collect())
    }

    /// Proof that the head of day `to` extends the head of day `from`.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn tree_consistency(
        &self,
        caller: &Caller,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Consistency, AppError> {
        caller.require(Scope::AttestationRead)?;
        if to < from {
            return Err(AppError::invalid("to", "must not be before from"));
        }
        let mut tx = self.tx(caller).await?;
        let not_built = |day: NaiveDate| AppError::NotFound {
            what: "tree head",
            key: day.to_string(),
        };
        let old = log::head(&mut tx, from)
            .await?
            .ok_or_else(|| not_built(from))?;
        let new = log::head(&mut tx, to).await?.ok_or_else(|| not_built(to))?;
        let (old_size, size) = (old.size as u64, new.size as u64);
        let proof = if old_size == 0 || old_size == size {
            Vec::new()
        } else {
            let hashes =
                log::read_hashes(&mut tx, &tree::consistency_reads(old_size, size)).await?;
            tree::prove_consistency(old_size, size, &hashes).map_err(internal)?
        };
        tx.commit().await?;
        Ok(Consistency {
            from: old.into(),
            to: new.into(),
            proof: proof.iter().map(hash_hex).collect(),
        })
    }
}

/// A hash from stored bytes.
pub(crate) fn stored_hash(bytes: &[u8]) -> Result<Hash, AppError> {
    <[u8; 32]>::try_from(bytes)
        .map(Hash)
        .map_err(|_| AppError::Conflict("a stored root is not 32 bytes".into()))
}
