//! SLA definitions: a stable name per tenant, and an append-only list of
//! versions with their objectives. Applying a document adds a version when
//! it differs from the one in force and changes nothing when it does not.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use slaproof_domain::ids::{CustomerId, SlaId};
use slaproof_domain::sla::SlaDefinition;

use crate::{Keyset, StoreError, TenantTx, customers};

/// What applying a definition did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// A new SLA, at version 1.
    Created,
    /// A new version of an existing SLA.
    Updated,
    /// The definition equals the version in force; nothing was written.
    Unchanged,
}

/// The result of [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOutcome {
    pub sla: SlaId,
    pub version: i32,
    pub applied: Applied,
}

/// One version of an SLA as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSla {
    pub id: SlaId,
    pub customer: Option<CustomerId>,
    pub version: i32,
    /// The version in force (may be newer than `version` when an older one
    /// was asked for).
    pub current_version: i32,
    pub definition: SlaDefinition,
    pub created_at: DateTime<Utc>,
}

/// A line of [`list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaSummary {
    pub id: SlaId,
    pub name: String,
    pub current_version: i32,
    pub customer_ref: Option<String>,
    pub updated_at: DateTime<Utc>,
}

/// The canonical form of a definition and its hash: serde_json sorts object
/// keys, so equal definitions give equal bytes whatever their source order.
fn canonical(definition: &SlaDefinition) -> (serde_json::Value, Vec<u8>) {
    let json = definition.to_native_json();
    let bytes = serde_json::to_vec(&json).unwrap_or_default();
    (json, Sha256::digest(&bytes).to_vec())
}

/// Applies a validated definition for the transaction's tenant. The
/// customer it names must exist. Concurrent applies of the same name are
/// serialized by a row lock, so versions never collide.
#[tracing::instrument(skip(tx, definition), fields(sla = definition.name.as_str()))]
pub async fn apply(
    tx: &mut TenantTx,
    definition: &SlaDefinition,
) -> Result<ApplyOutcome, StoreError> {
    let tenant = tx.tenant().uuid();
    let customer = match &definition.customer {
        Some(reference) => Some(
            customers::find_by_ref(tx, reference)
                .await?
                .ok_or_else(|| StoreError::not_found("customer", reference))?
                .id,
        ),
        None => None,
    };
    let (json, hash) = canonical(definition);

    let existing: Option<(uuid::Uuid, i32, Vec<u8>)> = sqlx::query_as(
        "SELECT s.id, s.current_version, v.definition_sha256 FROM slas s \
         JOIN sla_versions v ON v.tenant_id = s.tenant_id AND v.sla_id = s.id AND v.version = s.current_version \
         WHERE s.tenant_id = $1 AND s.name = $2 FOR UPDATE OF s",
    )
    .bind(tenant)
    .bind(definition.name.as_str())
    .fetch_optional(&mut **tx)
    .await?;

    let (sla, version, applied) = match existing {
        Some((id, current, current_hash)) if current_hash == hash => {
            return Ok(ApplyOutcome {
                sla: SlaId::from_uuid(id),
                version: current,
                applied: Applied::Unchanged,
            });
        }
        Some((id, current, _)) => {
            let version = current + 1;
            // The version row first: the pointer must never name a version
            // that does not exist.
            insert_version(tx, id, version, &json, &hash, definition).await?;
            sqlx::query(
                "UPDATE slas SET current_version = $3, customer_id = $4, updated_at = now() \
                 WHERE tenant_id = $1 AND id = $2",
            )
            .bind(tenant)
            .bind(id)
            .bind(version)
            .bind(customer.map(|c| c.uuid()))
            .execute(&mut **tx)
            .await?;
            (id, version, Applied::Updated)
        }
        None => {
            let id = SlaId::new().uuid();
            sqlx::query(
                "INSERT INTO slas (tenant_id, id, name, customer_id, current_version) VALUES ($1, $2, $3, $4, 1)",
            )
            .bind(tenant)
            .bind(id)
            .bind(definition.name.as_str())
            .bind(customer.map(|c| c.uuid()))
            .execute(&mut **tx)
            .await?;
            insert_version(tx, id, 1, &json, &hash, definition).await?;
            (id, 1, Applied::Created)
        }
    };
    Ok(ApplyOutcome {
        sla: SlaId::from_uuid(sla),
        version,
        applied,
    })
}

async fn insert_version(
    tx: &mut TenantTx,
    sla: uuid::Uuid,
    version: i32,
    json: &serde_json::Value,
    hash: &[u8],
    definition: &SlaDefinition,
) -> Result<(), StoreError> {
    let tenant = tx.tenant().uuid();
    sqlx::query(
        "INSERT INTO sla_versions (tenant_id, sla_id, version, definition, definition_sha256) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(tenant)
    .bind(sla)
    .bind(version)
    .bind(json)
    .bind(hash)
    .execute(&mut **tx)
    .await?;
    let objective_docs = json
        .pointer("/spec/objectives")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    for (i, objective) in definition.objectives.iter().enumerate() {
        sqlx::query(
            "INSERT INTO objectives (tenant_id, sla_id, version, name, kind, target_ppm, sli) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(tenant)
        .bind(sla)
        .bind(version)
        .bind(objective.name.as_str())
        .bind(objective.kind_name())
        .bind(objective.target.ppm() as i32)
        .bind(
            objective_docs
                .get(i)
                .cloned()
                .unwrap_or(serde_json::Value::Null),
        )
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The version in force of the SLA called `name`, or the given `version`.
#[tracing::instrument(skip(tx))]
pub async fn find(
    tx: &mut TenantTx,
    name: &str,
    version: Option<i32>,
) -> Result<StoredSla, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: uuid::Uuid,
        customer_id: Option<uuid::Uuid>,
        version: i32,
        current_version: i32,
        definition: serde_json::Value,
        created_at: DateTime<Utc>,
    }
    let row: Option<Row> = sqlx::query_as(
        "SELECT s.id, s.customer_id, v.version, s.current_version, v.definition, v.created_at FROM slas s \
         JOIN sla_versions v ON v.tenant_id = s.tenant_id AND v.sla_id = s.id \
              AND v.version = coalesce($3, s.current_version) \
         WHERE s.tenant_id = $1 AND s.name = $2",
    )
    .bind(tx.tenant().uuid())
    .bind(name)
    .bind(version)
    .fetch_optional(&mut **tx)
    .await?;
    let key = match version {
        Some(v) => format!("{name} version {v}"),
        None => name.to_owned(),
    };
    let row = row.ok_or_else(|| StoreError::NotFound { what: "SLA", key })?;
    let definition: SlaDefinition =
        serde_json::from_value(row.definition).map_err(|e| StoreError::Corrupt {
            what: "SLA definition",
            reason: e.to_string(),
        })?;
    Ok(StoredSla {
        id: SlaId::from_uuid(row.id),
        customer: row.customer_id.map(CustomerId::from_uuid),
        version: row.version,
        current_version: row.current_version,
        definition,
        created_at: row.created_at,
    })
}

/// The name of the SLA `id`.
pub async fn name_of(tx: &mut TenantTx, id: SlaId) -> Result<String, StoreError> {
    let name: Option<String> =
        sqlx::query_scalar("SELECT name FROM slas WHERE tenant_id = $1 AND id = $2")
            .bind(tx.tenant().uuid())
            .bind(id.uuid())
            .fetch_optional(&mut **tx)
            .await?;
    name.ok_or_else(|| StoreError::not_found("SLA", id))
}

/// Version `version` of the SLA `id` (the terms a period was judged by).
pub async fn find_version(
    tx: &mut TenantTx,
    id: SlaId,
    version: i32,
) -> Result<StoredSla, StoreError> {
    let name = name_of(tx, id).await?;
    find(tx, &name, Some(version)).await
}

/// The version in force of the SLA called `name`, its row locked until the
/// transaction ends, or `None` when there is no such SLA: what a new
/// version is made from, so that two applies of the same SLA never build
/// on the same version (and one's objectives are never lost to the other).
#[tracing::instrument(skip(tx))]
pub async fn find_for_update(
    tx: &mut TenantTx,
    name: &str,
) -> Result<Option<StoredSla>, StoreError> {
    let exists: Option<i32> = sqlx::query_scalar(
        "SELECT current_version FROM slas WHERE tenant_id = $1 AND name = $2 FOR UPDATE",
    )
    .bind(tx.tenant().uuid())
    .bind(name)
    .fetch_optional(&mut **tx)
    .await?;
    match exists {
        Some(_) => find(tx, name, None).await.map(Some),
        None => Ok(None),
    }
}

/// The tenant's SLAs by name, all of them (the evaluator tracks each).
pub async fn list(tx: &mut TenantTx) -> Result<Vec<SlaSummary>, StoreError> {
    summaries(tx, None, None, None, None).await
}

/// One stored version of an SLA, its definition as stored (JSON): what the
/// evaluator reads of every SLA each round.
#[derive(Debug, Clone)]
pub struct StoredVersion {
    pub sla: SlaId,
    pub version: i32,
    pub definition: serde_json::Value,
    /// When it was applied.
    pub created_at: DateTime<Utc>,
}

/// Every version of every SLA of the tenant, by SLA and oldest first, in
/// one statement: a round over thousands of customer SLAs reads them all,
/// and one query each was a round trip per SLA.
pub async fn all_versions(tx: &mut TenantTx) -> Result<Vec<StoredVersion>, StoreError> {
    let rows: Vec<(uuid::Uuid, i32, serde_json::Value, DateTime<Utc>)> = sqlx::query_as(
        "SELECT sla_id, version, definition, created_at FROM sla_versions \
         WHERE tenant_id = $1 ORDER BY sla_id, version",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(sla, version, definition, created_at)| StoredVersion {
            sla: SlaId::from_uuid(sla),
            version,
            definition,
            created_at,
        })
        .collect())
}

/// A page of the tenant's SLAs by name; only `customer`'s when given, and
/// only the one called `only` when given.
pub async fn page(
    tx: &mut TenantTx,
    customer: Option<CustomerId>,
    only: Option<&str>,
    page: &Keyset,
) -> Result<Vec<SlaSummary>, StoreError> {
    summaries(
        tx,
        customer,
        only,
        page.after.as_deref(),
        Some(page.fetch()),
    )
    .await
}

/// The SLAs whose current version is for `customer`.
#[tracing::instrument(skip(tx))]
pub async fn of_customer(
    tx: &mut TenantTx,
    customer: CustomerId,
) -> Result<Vec<SlaId>, StoreError> {
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT id FROM slas WHERE tenant_id = $1 AND customer_id = $2 ORDER BY name",
    )
    .bind(tx.tenant().uuid())
    .bind(customer.uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(ids.into_iter().map(SlaId::from_uuid).collect())
}

/// One version of an SLA as the fee-share check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareVersion {
    pub window: slaproof_domain::window::TimeWindow,
    pub applied_at: DateTime<Utc>,
    /// The share of the customer's fee (ppm) the version credits on: none
    /// when it states no credits or is another customer's.
    pub fee_share_ppm: Option<u32>,
}

/// Every version, oldest first, of each SLA but `except` that is the
/// customer `external_ref`'s now, by name: what the customer's fee is
/// shared between, in every version still to judge a period (the
/// application layer tells which, [`slaproof_domain::versions`]). Only the
/// customer's SLAs are read.
#[tracing::instrument(skip(tx))]
pub async fn fee_shares(
    tx: &mut TenantTx,
    external_ref: &str,
    except: &str,
) -> Result<Vec<(String, Vec<ShareVersion>)>, StoreError> {
    let rows: Vec<(String, serde_json::Value, DateTime<Utc>)> = sqlx::query_as(
        "SELECT s.name, v.definition, v.created_at FROM slas s \
         JOIN sla_versions v ON v.tenant_id = s.tenant_id AND v.sla_id = s.id \
         WHERE s.tenant_id = $1 AND s.name <> $3 \
           AND s.customer_id = (SELECT c.id FROM customers c WHERE c.tenant_id = $1 AND c.external_ref = $2) \
         ORDER BY s.name, v.version",
    )
    .bind(tx.tenant().uuid())
    .bind(external_ref)
    .bind(except)
    .fetch_all(&mut **tx)
    .await?;
    let mut out: Vec<(String, Vec<ShareVersion>)> = Vec::new();
    for (name, definition, applied_at) in rows {
        let d = serde_json::from_value::<SlaDefinition>(definition).map_err(|e| {
            StoreError::Corrupt {
                what: "SLA definition",
                reason: e.to_string(),
            }
        })?;
        let fee_share_ppm = d
            .credits
            .filter(|_| d.customer.as_deref() == Some(external_ref))
            .map(|c| c.fee_share_ppm);
        let version = ShareVersion {
            window: d.window,
            applied_at,
            fee_share_ppm,
        };
        match out.last_mut() {
            Some((last, versions)) if *last == name => versions.push(version),
            _ => out.push((name, vec![version])),
        }
    }
    Ok(out)
}

/// The versions of an SLA that were for the customer `external_ref`
/// (their documents name it in `spec.customer`: versions keep the native
/// document as written), oldest first.
#[tracing::instrument(skip(tx))]
pub async fn versions_for_customer(
    tx: &mut TenantTx,
    sla: SlaId,
    external_ref: &str,
) -> Result<Vec<i32>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT version FROM sla_versions \
         WHERE tenant_id = $1 AND sla_id = $2 AND definition #>> '{spec,customer}' = $3 ORDER BY version",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(external_ref)
    .fetch_all(&mut **tx)
    .await?)
}

/// The customer version `version` of an SLA was for: the one its document
/// names in `spec.customer`, whoever the SLA is for now (an SLA moved to
/// another customer keeps each version's). `None` for a service-wide
/// version, or one naming a customer not on file.
#[tracing::instrument(skip(tx))]
pub async fn customer_of_version(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
) -> Result<Option<CustomerId>, StoreError> {
    let found: Option<Option<uuid::Uuid>> = sqlx::query_scalar(
        "SELECT c.id FROM sla_versions v \
         LEFT JOIN customers c ON c.tenant_id = v.tenant_id \
              AND c.external_ref = v.definition #>> '{spec,customer}' \
         WHERE v.tenant_id = $1 AND v.sla_id = $2 AND v.version = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .fetch_optional(&mut **tx)
    .await?;
    match found {
        Some(customer) => Ok(customer.map(CustomerId::from_uuid)),
        None => Err(StoreError::NotFound {
            what: "SLA version",
            key: format!("{sla} version {version}"),
        }),
    }
}

async fn summaries(
    tx: &mut TenantTx,
    customer: Option<CustomerId>,
    only: Option<&str>,
    after: Option<&str>,
    fetch: Option<i64>,
) -> Result<Vec<SlaSummary>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: uuid::Uuid,
        name: String,
        current_version: i32,
        external_ref: Option<String>,
        updated_at: DateTime<Utc>,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT s.id, s.name, s.current_version, c.external_ref, s.updated_at FROM slas s \
         LEFT JOIN customers c ON c.tenant_id = s.tenant_id AND c.id = s.customer_id \
         WHERE s.tenant_id = $1 AND ($2::uuid IS NULL OR s.customer_id = $2) \
           AND ($3::text IS NULL OR s.name > $3) AND ($5::text IS NULL OR s.name = $5) \
         ORDER BY s.name LIMIT $4",
    )
    .bind(tx.tenant().uuid())
    .bind(customer.map(|c| c.uuid()))
    .bind(after)
    .bind(fetch)
    .bind(only)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| SlaSummary {
            id: SlaId::from_uuid(r.id),
            name: r.name,
            current_version: r.current_version,
            customer_ref: r.external_ref,
            updated_at: r.updated_at,
        })
        .collect())
}

/// When the version `version` of an SLA takes effect (see
/// [`slaproof_domain::versions`]): `None` when it is in force already at
/// `now` (or is the first), else the instant the period it was applied in
/// ends. Reads the window and time of every version up to it.
#[tracing::instrument(skip(tx))]
pub async fn takes_effect_at(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let rows: Vec<(serde_json::Value, DateTime<Utc>)> = sqlx::query_as(
        "SELECT definition -> 'spec' -> 'window', created_at FROM sla_versions \
         WHERE tenant_id = $1 AND sla_id = $2 AND version <= $3 ORDER BY version",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .fetch_all(&mut **tx)
    .await?;
    let mut schedule = Vec::with_capacity(rows.len());
    for (window, created_at) in rows {
        let window =
            slaproof_domain::window::TimeWindow::from_native_json(&window).map_err(|reason| {
                StoreError::Corrupt {
                    what: "SLA window",
                    reason,
                }
            })?;
        schedule.push((window, created_at));
    }
    let effective = slaproof_domain::versions::effective_from(&schedule);
    Ok(effective.last().copied().flatten().filter(|t| *t > now))
}
