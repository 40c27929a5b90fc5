//! The operator commands on tenants and their resources (`tenant`,
//! `customer`, `ingest-key`, `sla`, `probe`): each goes through the
//! application layer, under the same rules as the API.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use slaproof_app::customers::NewCustomer;
use slaproof_app::{App, AppError, Page, PageRequest};
use slaproof_domain::sla::SlaDefinition;

use super::connect;
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant and its first ingest key (shown once).
    Create {
        /// Short handle: a-z, 0-9 and '-'.
        name: String,
        /// Name shown to people; defaults to the handle.
        #[arg(long)]
        display_name: Option<String>,
    },
    /// List every tenant.
    List,
}

#[derive(Debug, Subcommand)]
pub enum CustomerCommand {
    /// Add a customer, known by the provider's own reference for it.
    Create {
        #[command(flatten)]
        tenant: TenantArg,
        /// The provider's id for the customer (used by SLA documents).
        external_ref: String,
        /// Name shown to people; defaults to the reference.
        #[arg(long)]
        name: Option<String>,
    },
    /// List the tenant's customers.
    List {
        #[command(flatten)]
        tenant: TenantArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum IngestKeyCommand {
    /// Create an ingest key; the key is printed once and never again.
    Create {
        #[command(flatten)]
        tenant: TenantArg,
        /// What the key is for, e.g. "gateway-eu".
        #[arg(long, default_value = "default")]
        name: String,
    },
    /// List the tenant's keys (prefixes only).
    List {
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Revoke a key by id (key_…) or prefix (spk_…).
    Revoke {
        #[command(flatten)]
        tenant: TenantArg,
        key: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SlaCommand {
    /// Apply an SLA document (native slaproof/v1 or OpenSLO v1 YAML/JSON).
    /// An unchanged document makes no new version. OpenSLO SLOs merge into
    /// an SLA that exists (each replaces the objective of its name, the
    /// others are kept); a native document is the whole SLA.
    Apply {
        #[command(flatten)]
        tenant: TenantArg,
        /// The document; `-` reads standard input.
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: PathBuf,
        /// Validate only; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// An OpenSLO document replaces the whole SLA instead of merging
        /// into it.
        #[arg(long)]
        replace: bool,
        /// Confirm a version that drops objectives of the one in force
        /// (refused, naming them, without it).
        #[arg(long)]
        drop_objectives: bool,
    },
    /// List the tenant's SLAs.
    List {
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Print an SLA definition.
    Export {
        #[command(flatten)]
        tenant: TenantArg,
        /// The SLA's name.
        name: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Native)]
        format: ExportFormat,
        /// A past version instead of the one in force.
        #[arg(long)]
        version: Option<i32>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProbeCommand {
    /// Define a probe (checked like `POST /v1/probes`, including the
    /// outbound-address policy); its first run is due at once.
    Create {
        #[command(flatten)]
        tenant: TenantArg,
        /// a-z, 0-9, '.' and '-'; unique in the tenant.
        name: String,
        /// The target, http:// or https://.
        #[arg(long)]
        url: String,
        /// The event `service` the results carry.
        #[arg(long)]
        service: String,
        /// Measure for this customer (its reference; put its credentials in
        /// --header): the results name it and count for its SLAs.
        #[arg(long)]
        customer: Option<String>,
        #[arg(long, value_enum, default_value_t = ProbeKindArg::Http)]
        kind: ProbeKindArg,
        /// The event `model` (and the completion's model).
        #[arg(long)]
        model: Option<String>,
        /// Default GET (http) or POST (streaming-completion).
        #[arg(long)]
        method: Option<String>,
        /// A request header, `Name: value`; repeatable. Values are never shown.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// A JSON request body from a file (`-`: standard input).
        #[arg(long, value_name = "FILE")]
        body_file: Option<PathBuf>,
        #[arg(long)]
        expected_status: Option<i32>,
        /// Seconds between runs, 10-86400 (default 60).
        #[arg(long)]
        interval_secs: Option<i32>,
        /// Default 10000, at most the interval.
        #[arg(long)]
        timeout_ms: Option<i32>,
        /// Define it switched off.
        #[arg(long)]
        disabled: bool,
    },
    /// List the tenant's probes with their last result.
    List {
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Delete a probe by name or id (prb_…); its recorded runs stay.
    Delete {
        #[command(flatten)]
        tenant: TenantArg,
        probe: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeKindArg {
    /// One request, good when it answers the expected status.
    Http,
    /// An OpenAI-style chat completion with stream: true (TTFT, TPOT).
    StreamingCompletion,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// slaproof/v1 YAML.
    Native,
    /// OpenSLO v1 YAML (SLI and SLO documents).
    Openslo,
}

#[derive(Debug, clap::Args)]
pub struct TenantArg {
    /// The tenant, by name or id (ten_…).
    #[arg(long, short, env = "SLAPROOF_TENANT")]
    pub tenant: String,
}

/// The application layer over the configured database: the operator
/// commands go through the same rules as the API.
pub(super) async fn application(config: &Config) -> anyhow::Result<App> {
    let app = App::with_default_policy(connect(config).await?)
        .await?
        .with_outbound(config.outbound.clone());
    // The operator's webhook key: a re-seal and a test-send need it.
    crate::app::with_configured_webhook_key(app, config)
}

/// Every item of a paged list, page after page.
async fn every_page<T, F, Fut>(mut fetch: F) -> anyhow::Result<Vec<T>>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = Result<Page<T>, AppError>>,
{
    let mut all = Vec::new();
    let mut request = PageRequest {
        cursor: None,
        limit: Some(slaproof_app::page::MAX_PAGE),
    };
    loop {
        let page = fetch(request.clone()).await?;
        all.extend(page.items);
        match page.next_cursor {
            Some(cursor) => request.cursor = Some(cursor),
            None => return Ok(all),
        }
    }
}

pub(super) async fn tenant(config: &Config, command: TenantCommand) -> anyhow::Result<()> {
    let app = application(config).await?;
    let operator = app.operator().await?;
    match command {
        TenantCommand::Create { name, display_name } => {
            let tenant = app
                .create_tenant(&operator, &name, display_name.as_deref().unwrap_or(&name))
                .await?;
            // A tenant can send telemetry at once with its first key.
            let admin = app.operator_in(&tenant.id.to_string()).await?;
            let key = app.create_ingest_key(&admin, "default").await?;
            println!("created tenant {} ({})", tenant.name, tenant.id);
            println!("ingest key (shown once, keep it secret): {}", key.secret);
        }
        TenantCommand::List => {
            for tenant in every_page(|page| {
                let (app, operator) = (&app, &operator);
                async move { app.list_tenants(operator, &page).await }
            })
            .await?
            {
                println!("{}\t{}\t{}", tenant.id, tenant.name, tenant.display_name);
            }
        }
    }
    Ok(())
}

pub(super) async fn customer(config: &Config, command: CustomerCommand) -> anyhow::Result<()> {
    let app = application(config).await?;
    match command {
        CustomerCommand::Create {
            tenant,
            external_ref,
            name,
        } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            let customer = app
                .create_customer(
                    &admin,
                    NewCustomer {
                        name: name.unwrap_or_else(|| external_ref.clone()),
                        external_ref,
                    },
                )
                .await?;
            println!(
                "created customer {} ({})",
                customer.external_ref, customer.id
            );
        }
        CustomerCommand::List { tenant } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            for customer in every_page(|page| {
                let (app, admin) = (&app, &admin);
                async move { app.list_customers(admin, &page).await }
            })
            .await?
            {
                println!(
                    "{}\t{}\t{}",
                    customer.id, customer.external_ref, customer.name
                );
            }
        }
    }
    Ok(())
}

pub(super) async fn ingest_key(config: &Config, command: IngestKeyCommand) -> anyhow::Result<()> {
    let app = application(config).await?;
    match command {
        IngestKeyCommand::Create { tenant, name } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            let created = app.create_ingest_key(&admin, &name).await?;
            println!(
                "created ingest key {} ({})",
                created.key.prefix, created.key.id
            );
            println!(
                "ingest key (shown once, keep it secret): {}",
                created.secret
            );
        }
        IngestKeyCommand::List { tenant } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            for key in every_page(|page| {
                let (app, admin) = (&app, &admin);
                async move { app.list_ingest_keys(admin, &page).await }
            })
            .await?
            {
                let state = match key.revoked_at {
                    Some(at) => format!("revoked {}", at.to_rfc3339()),
                    None => "active".to_owned(),
                };
                println!("{}\t{}\t{}\t{}", key.id, key.prefix, key.name, state);
            }
        }
        IngestKeyCommand::Revoke { tenant, key } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            let key = app.revoke_ingest_key(&admin, &key).await?;
            println!("revoked ingest key {} ({})", key.prefix, key.id);
        }
    }
    Ok(())
}

fn read_document(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("reading standard input")?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

pub(super) async fn sla(config: &Config, command: SlaCommand) -> anyhow::Result<()> {
    match command {
        SlaCommand::Apply {
            tenant,
            file,
            dry_run,
            replace,
            drop_objectives,
        } => {
            // Validate before touching the database: an invalid document
            // writes nothing, and needs no database to be refused.
            let text = read_document(&file)?;
            let definition = match SlaDefinition::from_document(&text) {
                Ok(d) => d,
                Err(err) => bail!("{} is not a valid SLA document:\n{err}", file.display()),
            };
            if dry_run {
                println!(
                    "{} is valid: SLA \"{}\" with {} objective(s)",
                    file.display(),
                    definition.name.as_str(),
                    definition.objectives.len()
                );
                return Ok(());
            }
            let app = application(config).await?;
            let admin = app.operator_in(&tenant.tenant).await?;
            let options = slaproof_app::slas::ApplyOptions {
                replace,
                drop_objectives,
            };
            let applied = app.apply_sla(&admin, &text, options).await?;
            println!(
                "SLA \"{}\" {}: version {} ({})",
                applied.name, applied.outcome, applied.version, applied.id
            );
            if !applied.dropped.is_empty() {
                println!("dropped objectives: {}", applied.dropped.join(", "));
            }
            if let Some(at) = applied.takes_effect_at {
                println!(
                    "takes effect at {at}: the period it was applied in stays judged by the terms in force when it began"
                );
            }
        }
        SlaCommand::List { tenant } => {
            let app = application(config).await?;
            let admin = app.operator_in(&tenant.tenant).await?;
            for sla in every_page(|page| {
                let (app, admin) = (&app, &admin);
                async move { app.list_slas(admin, &page).await }
            })
            .await?
            {
                println!(
                    "{}\t{}\tv{}\t{}",
                    sla.id,
                    sla.name,
                    sla.current_version,
                    sla.customer_ref.as_deref().unwrap_or("-")
                );
            }
        }
        SlaCommand::Export {
            tenant,
            name,
            format,
            version,
        } => {
            let app = application(config).await?;
            let admin = app.operator_in(&tenant.tenant).await?;
            let format = match format {
                ExportFormat::Native => slaproof_app::slas::ExportFormat::Native,
                ExportFormat::Openslo => slaproof_app::slas::ExportFormat::OpenSlo,
            };
            print!("{}", app.export_sla(&admin, &name, version, format).await?);
        }
    }
    Ok(())
}

pub(super) async fn probe(config: &Config, command: ProbeCommand) -> anyhow::Result<()> {
    use slaproof_app::probes::{NewProbe, ProbeKind};
    let app = application(config).await?;
    match command {
        ProbeCommand::Create {
            tenant,
            name,
            url,
            service,
            customer,
            kind,
            model,
            method,
            headers,
            body_file,
            expected_status,
            interval_secs,
            timeout_ms,
            disabled,
        } => {
            let mut header_map = std::collections::BTreeMap::new();
            for header in headers {
                let Some((name, value)) = header.split_once(':') else {
                    bail!("--header {header:?}: expected `Name: value`");
                };
                header_map.insert(name.trim().to_owned(), value.trim().to_owned());
            }
            let body = match body_file {
                Some(path) => Some(
                    serde_json::from_str(&read_document(&path)?)
                        .with_context(|| format!("{} is not JSON", path.display()))?,
                ),
                None => None,
            };
            let admin = app.operator_in(&tenant.tenant).await?;
            let stored = app
                .create_probe(
                    &admin,
                    NewProbe {
                        name,
                        service,
                        customer,
                        model,
                        kind: match kind {
                            ProbeKindArg::Http => ProbeKind::Http,
                            ProbeKindArg::StreamingCompletion => ProbeKind::StreamingCompletion,
                        },
                        method,
                        url,
                        headers: header_map,
                        body,
                        expected_status,
                        interval_secs,
                        timeout_ms,
                        enabled: Some(!disabled),
                    },
                )
                .await?;
            println!(
                "created probe {} ({}): {} {} every {} s",
                stored.definition.name,
                stored.id,
                stored.definition.method,
                stored.definition.url,
                stored.definition.interval_secs
            );
        }
        ProbeCommand::List { tenant } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            for stored in every_page(|page| {
                let (app, admin) = (&app, &admin);
                async move { app.list_probes(admin, &page).await }
            })
            .await?
            {
                let d = &stored.definition;
                let last = match &stored.last {
                    Some(last) => format!(
                        "{} {}{}",
                        last.outcome.as_str(),
                        last.at.to_rfc3339(),
                        last.error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    ),
                    None => "not run yet".to_owned(),
                };
                println!(
                    "{}\t{}\t{}\t{} {}\tevery {} s\t{}\t{}",
                    stored.id,
                    d.name,
                    d.kind.as_str(),
                    d.method,
                    d.url,
                    d.interval_secs,
                    if d.enabled { "enabled" } else { "disabled" },
                    last
                );
            }
        }
        ProbeCommand::Delete { tenant, probe } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            let stored = app.get_probe(&admin, &probe).await?;
            app.delete_probe(&admin, &stored.id.to_string()).await?;
            println!("deleted probe {} ({})", stored.definition.name, stored.id);
        }
    }
    Ok(())
}
