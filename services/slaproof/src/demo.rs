//! The demo tenant `slaproof up` creates so a newcomer has something to look
//! at: a tenant, three customers on one service each with an SLA of its own,
//! a public service-wide SLA, and an ingest key.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use slaproof_domain::ids::{CustomerId, TenantId};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::{Database, StoreError, customers, ingest_keys, slas, tenants};

pub mod history;

/// The demo tenant's name.
pub const TENANT: &str = "demo";
/// The demo SLA, shipped with the domain crate's fixtures.
pub const SLA_DOCUMENT: &str = include_str!("../../domain/fixtures/demo-sla.yaml");
/// The demo's other SLAs, with their customer's name and monthly fee (in
/// minor units of the SLA's currency): Globex on the 8B model only, which
/// the incident spares; Initech; and the provider's public SLA, judged on
/// every customer's requests (`scope: service`), with no customer.
pub const OTHER_SLAS: &[(&str, Option<(&str, i64)>)] = &[
    (
        include_str!("../../domain/fixtures/demo-sla-globex.yaml"),
        Some(("Globex Corporation", 400_000)),
    ),
    (
        include_str!("../../domain/fixtures/demo-sla-initech.yaml"),
        Some(("Initech", 250_000)),
    ),
    (
        include_str!("../../domain/fixtures/demo-sla-public.yaml"),
        None,
    ),
];
/// Where the demo ingest key is kept, inside the data directory, so that it
/// can be shown again on later starts (a real tenant's key is shown once).
const KEY_FILE: &str = "demo-ingest-key";
/// Where the demo's API signing secret is kept, beside the ingest key, so
/// that tokens printed on one start still work after a restart.
const API_SECRET_FILE: &str = "demo-api-secret";
/// The `kid` of the demo's API key.
pub const API_KEY_ID: &str = "slaproof-demo";
/// How long the tokens printed at start are valid.
pub const TOKEN_HOURS: u64 = 12;
/// When the incident of `up --loadgen` starts, counted from the start:
/// five healthy minutes first, so that the SLA is seen met.
pub const INCIDENT_AT: std::time::Duration = std::time::Duration::from_secs(300);
/// How long it lasts (a quarter of the requests failing, slow first tokens
/// and decoding: see `slaproof_ingest::loadgen`). Ten minutes page on the
/// availability and available-minutes objectives and put them at risk;
/// the page resolves about five minutes after the incident ends
/// (`tests/tests/e2e/demo_story.rs`, and "The demo" in the README).
pub const INCIDENT_LENGTH: std::time::Duration = std::time::Duration::from_secs(600);

/// The demo customer's fee per month (10,000.00 EUR), from this date on (in each SLA's time zone).
const DEMO_FEE_MINOR: i64 = 1_000_000;
const DEMO_FEE_FROM: &str = "2020-01-01";

/// What the demo consists of.
#[derive(Debug, Clone)]
pub struct Demo {
    pub tenant: TenantId,
    pub customer_ref: String,
    pub customer: CustomerId,
    pub sla_name: String,
    /// The other SLAs, by name, with their customer's reference (none for
    /// the public one).
    pub other_slas: Vec<(String, Option<String>)>,
    pub ingest_key: String,
    /// Whether this start created the tenant.
    pub created: bool,
}

/// Makes sure every part of the demo exists; each step is idempotent, so an
/// interrupted first start is completed by the next.
pub async fn ensure(db: &Database, data_dir: &Path) -> anyhow::Result<Demo> {
    let definition =
        SlaDefinition::from_document(SLA_DOCUMENT).context("the shipped demo SLA is invalid")?;
    let customer_ref = definition
        .customer
        .clone()
        .unwrap_or_else(|| "acme-corp".to_owned());

    let (tenant, created) = match tenants::resolve(db, TENANT).await {
        Ok(id) => (id, false),
        Err(StoreError::NotFound { .. }) => (
            tenants::create(db, TENANT, "Demo LLM provider").await?.id,
            true,
        ),
        Err(err) => return Err(err.into()),
    };

    let mut tx = db.tenant_tx(tenant).await?;
    let customer = match customers::find_by_ref(&mut tx, &customer_ref).await? {
        Some(found) => found.id,
        None => {
            customers::create(&mut tx, &customer_ref, "Acme Corp")
                .await?
                .id
        }
    };
    slas::apply(&mut tx, &definition).await?;
    // The customer's fee, which the demo SLA's credits are a share of.
    ensure_fee(&mut tx, customer, "EUR", DEMO_FEE_MINOR).await?;
    let mut other_slas = Vec::new();
    for (document, customer) in OTHER_SLAS {
        let other =
            SlaDefinition::from_document(document).context("a shipped demo SLA is invalid")?;
        if let (Some(reference), Some((name, fee))) = (&other.customer, customer) {
            let id = match customers::find_by_ref(&mut tx, reference).await? {
                Some(found) => found.id,
                None => customers::create(&mut tx, reference, name).await?.id,
            };
            let currency = other
                .credits
                .as_ref()
                .map_or_else(|| "EUR".to_owned(), |c| c.currency.to_string());
            ensure_fee(&mut tx, id, &currency, *fee).await?;
        }
        slas::apply(&mut tx, &other).await?;
        other_slas.push((other.name.as_str().to_owned(), other.customer.clone()));
    }

    fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let key_path = data_dir.join(KEY_FILE);
    let saved = fs::read_to_string(&key_path)
        .ok()
        .map(|k| k.trim().to_owned());
    let still_valid = match &saved {
        Some(key) => ingest_keys::authenticate(db, key)
            .await?
            .is_some_and(|a| a.tenant == tenant),
        None => false,
    };
    let ingest_key = match saved {
        Some(key) if still_valid => key,
        _ => {
            let key = ingest_keys::create(&mut tx, "demo").await?;
            let mut file = fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&key_path)
                .with_context(|| format!("saving the demo key to {}", key_path.display()))?;
            writeln!(file, "{}", key.reveal())?;
            key.reveal().to_owned()
        }
    };
    tx.commit().await?;
    Ok(Demo {
        tenant,
        customer_ref,
        customer,
        sla_name: definition.name.as_str().to_owned(),
        other_slas,
        ingest_key,
        created,
    })
}

/// Gives a demo customer its monthly fee (in cents) unless it has one.
async fn ensure_fee(
    tx: &mut slaproof_store::TenantTx,
    customer: CustomerId,
    currency: &str,
    amount_minor: i64,
) -> anyhow::Result<()> {
    if slaproof_store::credits::fees(tx, customer)
        .await?
        .is_empty()
    {
        let start = slaproof_domain::credit::FeeStart::parse(DEMO_FEE_FROM)
            .map_err(anyhow::Error::msg)
            .context("the demo fee's start")?;
        slaproof_store::credits::add_fee(
            tx,
            &slaproof_store::credits::Fee {
                customer,
                effective_from: start.utc_key(),
                effective_on: start.date(),
                currency: currency.to_owned(),
                minor_units: 2,
                amount_minor,
                created_at: chrono::Utc::now(),
                created_by: "demo".to_owned(),
            },
        )
        .await?;
    }
    Ok(())
}

/// The API key of a demo start: with no token issuer configured (no
/// `[[api.keys]]`, no `api.jwks_url`) the API would refuse every request,
/// so `slaproof up` configures an HS256 key of its own, kept in the data
/// directory, and prints tokens signed with it. A deployment configures its
/// issuer's keys instead, and then none of this happens.
pub fn api_key(data_dir: &Path) -> anyhow::Result<slaproof_api::settings::KeySettings> {
    fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let path = data_dir.join(API_SECRET_FILE);
    let saved = fs::read_to_string(&path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| s.len() >= 2 * slaproof_api::settings::MIN_SECRET_BYTES);
    let secret = match saved {
        Some(secret) => secret,
        None => {
            let secret = hex::encode(rand::random::<[u8; 32]>());
            let mut file = fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)
                .with_context(|| format!("saving the demo API secret to {}", path.display()))?;
            writeln!(file, "{secret}")?;
            secret
        }
    };
    Ok(slaproof_api::settings::KeySettings {
        id: API_KEY_ID.to_owned(),
        algorithm: slaproof_api::settings::KeyAlgorithm::HS256,
        public_key_pem: None,
        secret: Some(secret.into()),
        operator: false,
        tenants: Vec::new(),
    })
}

/// Tokens for trying the API on the demo tenant.
#[derive(Debug, Clone)]
pub struct DemoTokens {
    /// The provider's admin: every operation of the tenant.
    pub provider_admin: String,
    /// The demo customer's admin: its own SLA, every metric and history.
    pub customer_admin: String,
    /// Where the key's secret is kept.
    pub secret_file: std::path::PathBuf,
}

/// Signs a provider-admin and a customer-admin token for the demo with
/// `key`, valid for [`TOKEN_HOURS`].
pub fn tokens(
    data_dir: &Path,
    demo: &Demo,
    key: &slaproof_api::settings::KeySettings,
    api: &slaproof_api::Settings,
) -> anyhow::Result<DemoTokens> {
    use secrecy::ExposeSecret;
    let secret = key
        .secret
        .as_ref()
        .context("the demo API key has no secret")?;
    let encoding = jsonwebtoken::EncodingKey::from_secret(secret.expose_secret().as_bytes())
        .context("the demo API secret")?;
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(key.id.clone());
    let exp = u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0) + TOKEN_HOURS * 3600;
    let sign = |sub: &str, role: &str, customer: Option<String>| {
        let claims = slaproof_api::auth::Claims {
            sub: sub.to_owned(),
            iss: api.issuer.clone(),
            aud: api.audience.clone(),
            exp,
            nbf: None,
            tenant: demo.tenant.to_string(),
            roles: vec![role.to_owned()],
            customer,
        };
        jsonwebtoken::encode(&header, &claims, &encoding).context("signing a demo token")
    };
    Ok(DemoTokens {
        provider_admin: sign("demo-provider-admin", "provider_admin", None)?,
        customer_admin: sign(
            "demo-customer-admin",
            "customer_admin",
            Some(demo.customer.to_string()),
        )?,
        secret_file: data_dir.join(API_SECRET_FILE),
    })
}
