//! The command line: `up`, `serve`, `migrate`, and the operator commands for
//! tenants, customers, ingest keys, SLAs and synthetic probes.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use slaproof_app::customers::NewCustomer;
use slaproof_app::{App, AppError, Page, PageRequest};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::Database;
use tokio_util::sync::CancellationToken;

use crate::app::{Application, Service, cancel_on_signals, open_database};
use crate::config::{Config, describe};
use crate::embedded::{Connections, EmbeddedPostgres};
use crate::{demo, telemetry};

/// slaproof: every SLA measured exactly, every missed promise credited,
/// every period proven.
#[derive(Debug, Parser)]
#[command(name = "slaproof", version, max_term_width = 100)]
pub struct Cli {
    /// Configuration file (TOML). Default: ./slaproof.toml when it exists.
    /// SLAPROOF_* environment variables override it.
    #[arg(
        long,
        short,
        global = true,
        env = "SLAPROOF_CONFIG",
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every service in one process. With no database configured, starts
    /// a private Postgres cluster under embedded.data_dir and stops it on exit.
    Up {
        /// Do not create the demo tenant.
        #[arg(long)]
        no_demo: bool,
        /// Send demo traffic (events per second) for the demo tenant.
        #[arg(long, value_name = "EVENTS_PER_SEC")]
        loadgen: Option<f64>,
    },
    /// Run one service against the configured database.
    Serve {
        #[arg(value_enum)]
        service: Service,
    },
    /// Apply pending database migrations (as database.migrate_url).
    Migrate,
    /// Manage tenants (providers using slaproof).
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Manage a tenant's customers.
    Customer {
        #[command(subcommand)]
        command: CustomerCommand,
    },
    /// Manage a tenant's ingest keys.
    IngestKey {
        #[command(subcommand)]
        command: IngestKeyCommand,
    },
    /// Send realistic LLM telemetry through the ingest API (traffic generator).
    Loadgen(crate::loadgen::LoadgenArgs),
    /// Apply, list and export SLA definitions.
    Sla {
        #[command(subcommand)]
        command: SlaCommand,
    },
    /// Define, list and delete synthetic probes of a tenant's endpoints.
    Probe {
        #[command(subcommand)]
        command: ProbeCommand,
    },
    /// Manage the Groth16 proving and verifying keys of the circuits.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Run the (single-party) setup for one circuit size and write its keys.
    /// Existing keys are never overwritten. See docs/CIRCUITS.md for the
    /// trust model of this setup.
    Generate {
        /// Slots of the circuit: 64, 1024 or 16384 (any power of two works).
        #[arg(long)]
        slots: usize,
        /// Folder to write the keys to.
        #[arg(long, default_value = ".slaproof/keys")]
        dir: PathBuf,
    },
}

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
    /// An unchanged document makes no new version.
    Apply {
        #[command(flatten)]
        tenant: TenantArg,
        /// The document; `-` reads standard input.
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: PathBuf,
        /// Validate only; write nothing.
        #[arg(long)]
        dry_run: bool,
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

/// Runs a parsed command line. Must be called outside any async runtime:
/// `up` starts the embedded Postgres on this thread before it builds one.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref())?;
    let telemetry = telemetry::init(&config.log, &config.telemetry)?;
    let result = match cli.command {
        Command::Up { no_demo, loadgen } => up(config, !no_demo, loadgen),
        Command::Keys { command } => keys(command),
        command => runtime()?.block_on(run_async(config, command)),
    };
    // After the graceful stop, with the runtime gone: the last spans and
    // metrics are flushed by the export threads.
    telemetry.shutdown();
    result
}

/// Key generation is CPU-bound and synchronous; it reports its stages, and
/// a ticker shows that the long setup step is alive.
fn keys(command: KeysCommand) -> anyhow::Result<()> {
    use slaproof_circuits::keys::{KeygenStage, generate_keys};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let KeysCommand::Generate { slots, dir } = command;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let in_setup = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (in_setup, done) = (in_setup.clone(), done.clone());
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(250));
                if in_setup.load(Ordering::Relaxed) && started.elapsed().as_secs().is_multiple_of(5)
                {
                    eprintln!("  setup running, {} s so far", started.elapsed().as_secs());
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        })
    };
    let result = generate_keys(&dir, slots, &mut |p| {
        let at = format!("{:>7.1} s", p.elapsed.as_secs_f64());
        match p.stage {
            KeygenStage::Synthesizing => {
                eprintln!("{at}  counting constraints of the {slots}-slot circuit")
            }
            KeygenStage::Setup { constraints } => {
                eprintln!("{at}  Groth16 setup over {constraints} constraints (the long step)");
                in_setup.store(true, Ordering::Relaxed);
            }
            KeygenStage::WritingProvingKey => {
                in_setup.store(false, Ordering::Relaxed);
                eprintln!("{at}  writing the proving key");
            }
            KeygenStage::WritingVerifyingKey => {
                eprintln!("{at}  writing the verifying key and manifest")
            }
            KeygenStage::Done => eprintln!("{at}  done"),
        }
    });
    done.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    let manifest = result?;
    println!(
        "keys for {} slots ({} constraints) in {}",
        manifest.slots,
        manifest.constraints,
        dir.display()
    );
    println!(
        "  proving key    {}  sha256 {}",
        manifest.proving_key.file, manifest.proving_key.sha256
    );
    println!(
        "  verifying key  {}  sha256 {}",
        manifest.verifying_key.file, manifest.verifying_key.sha256
    );
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn up(mut config: Config, with_demo: bool, loadgen: Option<f64>) -> anyhow::Result<()> {
    let embedded = match (config.service_connection(), config.owner_connection()) {
        (Some(_), Some(_)) => None,
        _ => {
            eprintln!(
                "no database configured: starting a private Postgres in {}",
                config.embedded.data_dir.display()
            );
            Some(EmbeddedPostgres::start(&config.embedded)?)
        }
    };
    let result = runtime()?.block_on(async {
        let connections = match &embedded {
            Some(pg) => pg.connections(),
            None => configured_connections(&config)?,
        };
        // The embedded cluster's service role can only be made once the
        // migrations have made slaproof_service, so it always migrates first.
        if let Some(pg) = &embedded {
            slaproof_store::migrate(&connections.owner)
                .await
                .context("migrating")?;
            pg.provision_service_role().await?;
        }
        let migrate = embedded.is_none() && config.database.migrate_on_start;
        let db = open_database(&config, &connections.owner, &connections.service, migrate).await?;
        let demo = if with_demo && config.demo.enabled {
            Some(demo::ensure(&db, &config.embedded.data_dir).await?)
        } else {
            None
        };
        // With no token issuer configured the API would refuse everyone:
        // the demo brings a key of its own and prints tokens to try it.
        let tokens = match &demo {
            Some(demo) if config.api.keys.is_empty() && config.api.jwks_url.is_none() => {
                let key = demo::api_key(&config.embedded.data_dir)?;
                let tokens = demo::tokens(&config.embedded.data_dir, demo, &key, &config.api)?;
                config.api.keys.push(key);
                Some(tokens)
            }
            _ => None,
        };
        let app = Application::build(config.clone(), db, Service::ALL).await?;
        print_welcome(
            &app,
            embedded.as_ref(),
            &connections,
            demo.as_ref(),
            tokens.as_ref(),
        );
        let shutdown = CancellationToken::new();
        cancel_on_signals(shutdown.clone());
        if let (Some(rate), Some(demo)) = (loadgen, &demo) {
            crate::loadgen::spawn_demo(
                app.local_addr(),
                demo.ingest_key.clone(),
                rate,
                shutdown.clone(),
            );
        }
        app.run(shutdown).await
    });
    if let Some(pg) = embedded {
        eprintln!("stopping the private Postgres");
        pg.stop()?;
    }
    result
}

fn print_welcome(
    app: &Application,
    embedded: Option<&EmbeddedPostgres>,
    connections: &Connections,
    demo: Option<&demo::Demo>,
    tokens: Option<&demo::DemoTokens>,
) {
    let url = format!("http://{}", app.local_addr());
    let mut out = String::new();
    out.push_str("\nslaproof is up\n\n");
    out.push_str(&format!(
        "  HTTP        {url}   (liveness {url}/healthz, readiness {url}/readyz)\n"
    ));
    match embedded {
        Some(pg) => out.push_str(&format!(
            "  Database    private Postgres {} on 127.0.0.1:{}, data in {}\n",
            pg.version(),
            pg.port(),
            pg.cluster_dir().display()
        )),
        None => out.push_str(&format!(
            "  Database    {}\n",
            describe(&connections.service)
        )),
    }
    let services: Vec<&str> = Service::ALL.iter().map(|s| s.name()).collect();
    out.push_str(&format!("  Services    {}\n", services.join(", ")));
    if let Some(demo) = demo {
        out.push_str(&format!(
            "  Demo        tenant \"{}\" ({}), customer \"{}\", SLA \"{}\"{}\n",
            demo::TENANT,
            demo.tenant,
            demo.customer_ref,
            demo.sla_name,
            if demo.created { " (created now)" } else { "" }
        ));
        out.push_str(&format!("  Ingest key  {}\n", demo.ingest_key));
        if let Some(tokens) = tokens {
            out.push_str(&format!(
                "  API tokens  valid {} h, signed with the demo's HS256 key (kid {}, secret in {})\n",
                demo::TOKEN_HOURS,
                demo::API_KEY_ID,
                tokens.secret_file.display()
            ));
            out.push_str(&format!(
                "    provider admin        {}\n",
                tokens.provider_admin
            ));
            out.push_str(&format!(
                "    {} customer admin  {}\n",
                demo.customer_ref, tokens.customer_admin
            ));
        }
        out.push_str("\nTry, in another terminal:\n");
        out.push_str(&format!("  curl {url}/readyz\n"));
        if let Some(tokens) = tokens {
            out.push_str(&format!(
                "  curl -H 'Authorization: Bearer {}' {url}/v1/slas/{}/dashboard\n",
                tokens.customer_admin, demo.sla_name
            ));
        }
        out.push_str(&format!(
            "  cargo run -p slaproof -- sla export --tenant demo {}\n",
            demo.sla_name
        ));
        out.push_str(&format!(
            "  cargo run -p slaproof -- sla export --tenant demo {} --format openslo\n",
            demo.sla_name
        ));
        out.push_str("  cargo run -p slaproof -- tenant create my-provider\n");
        out.push_str(&format!(
            "  cargo run -p slaproof -- loadgen --url {url} --key {} --rate 50\n",
            demo.ingest_key
        ));
    }
    out.push_str("\nStop with Ctrl-C.\n");
    println!("{out}");
}

/// The connections of the configured database, or of the embedded one that
/// a running `slaproof up` started.
fn configured_connections(config: &Config) -> anyhow::Result<Connections> {
    match (config.service_connection(), config.owner_connection()) {
        (Some(service), Some(owner)) => Ok(Connections { owner, service }),
        _ => Ok(EmbeddedPostgres::discover(&config.embedded)?),
    }
}

async fn connect(config: &Config) -> anyhow::Result<Database> {
    let connections = configured_connections(config)?;
    let db = Database::connect(&connections.service, 2)
        .await
        .with_context(|| format!("connecting to {}", describe(&connections.service)))?;
    db.check_service_role().await?;
    Ok(db)
}

/// The application layer over the configured database: the operator
/// commands go through the same rules as the API.
async fn application(config: &Config) -> anyhow::Result<App> {
    Ok(App::with_default_policy(connect(config).await?)
        .await?
        .with_outbound(config.outbound.clone()))
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

async fn run_async(config: Config, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Up { .. } | Command::Keys { .. } => unreachable!("runs outside the runtime"),
        Command::Serve { service } => {
            let connections = configured_connections(&config)?;
            let migrate = config.database.migrate_on_start;
            let db =
                open_database(&config, &connections.owner, &connections.service, migrate).await?;
            let app = Application::build(config, db, &[service]).await?;
            let shutdown = CancellationToken::new();
            cancel_on_signals(shutdown.clone());
            app.run(shutdown).await
        }
        Command::Migrate => {
            let connections = configured_connections(&config)?;
            slaproof_store::migrate(&connections.owner).await?;
            println!("migrated {}", describe(&connections.owner));
            Ok(())
        }
        Command::Tenant { command } => tenant(&config, command).await,
        Command::Customer { command } => customer(&config, command).await,
        Command::IngestKey { command } => ingest_key(&config, command).await,
        Command::Sla { command } => sla(&config, command).await,
        Command::Probe { command } => probe(&config, command).await,
        Command::Loadgen(args) => crate::loadgen::run(&config, args).await,
    }
}

async fn tenant(config: &Config, command: TenantCommand) -> anyhow::Result<()> {
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

async fn customer(config: &Config, command: CustomerCommand) -> anyhow::Result<()> {
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

async fn ingest_key(config: &Config, command: IngestKeyCommand) -> anyhow::Result<()> {
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

async fn sla(config: &Config, command: SlaCommand) -> anyhow::Result<()> {
    match command {
        SlaCommand::Apply {
            tenant,
            file,
            dry_run,
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
            let applied = app.apply_sla(&admin, &text).await?;
            println!(
                "SLA \"{}\" {}: version {} ({})",
                applied.name, applied.outcome, applied.version, applied.id
            );
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

async fn probe(config: &Config, command: ProbeCommand) -> anyhow::Result<()> {
    use slaproof_app::probes::{NewProbe, ProbeKind};
    let app = application(config).await?;
    match command {
        ProbeCommand::Create {
            tenant,
            name,
            url,
            service,
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
