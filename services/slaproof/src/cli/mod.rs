//! The command line: `up`, `serve`, `migrate`, and the operator commands for
//! tenants, customers, ingest keys, SLAs, synthetic probes, webhooks and the
//! chain.

use std::path::PathBuf;

mod ceremony;
mod keys;
mod tenancy;
mod transparency;
mod webhooks;

use anyhow::Context;
use clap::{Parser, Subcommand};
use slaproof_store::Database;
use tokio_util::sync::CancellationToken;

use crate::app::{Application, Service, cancel_on_signals, open_database};
use crate::chain::UpChain;
use crate::config::{Config, describe};
use crate::embedded::{Connections, EmbeddedPostgres};
use crate::{demo, telemetry};

pub use crate::chain::ChainCommand;
pub use tenancy::{
    CustomerCommand, ExportFormat, IngestKeyCommand, ProbeCommand, ProbeKindArg, SlaCommand,
    TenantArg, TenantCommand,
};
use tenancy::{customer, ingest_key, probe, sla, tenant};
use transparency::log;
pub use transparency::{LogCommand, check_anchor, check_anchor_into, dispute_checks, verify_proof};
pub use webhooks::WebhookCommand;
use webhooks::webhook;

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

// One command line is parsed once per process: the size of its largest
// variant (`verify`'s flags) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
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
    /// List a tenant's webhook endpoints; resend a message, recover every
    /// message since a time.
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// The transparency log: build due days, prove a request, check a
    /// client-side log, export a day; verify a proof or audit a day offline.
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
    /// Deploy slaproof to an EVM chain and check what is deployed where.
    Chain {
        #[command(subcommand)]
        command: ChainCommand,
    },
    /// Check an attestation as an auditor, from its exported files: the
    /// proof against the verifying key, the claim against the context, the
    /// statement id, and (with --rpc-url) the anchor on chain and its
    /// attester. Prints each check; exits non-zero naming the failed ones.
    Verify {
        /// Folder with verification_key.json, proof.json, public.json and
        /// statement.json (with --attestation: where they are downloaded
        /// to, and kept).
        #[arg(long)]
        dir: PathBuf,
        /// Download the bundle of this attestation id from slaproof's API
        /// first (`GET /v1/attestations/{id}/bundle`), with the bearer token
        /// in SLAPROOF_TOKEN; then check it like any exported folder.
        #[arg(long, value_name = "ID", requires = "api_url")]
        attestation: Option<String>,
        /// The API's base URL, for --attestation.
        #[arg(long, value_name = "URL")]
        api_url: Option<url::Url>,
        /// JSON-RPC URL of the chain the anchor is on (your own node, for
        /// independence); without it the anchor is not checked.
        #[arg(long, value_name = "URL")]
        rpc_url: Option<url::Url>,
        /// The verifying key's sha256 as the provider publishes it: without
        /// it the key is only the one the bundle names.
        #[arg(long, value_name = "HEX")]
        vk_sha256: Option<String>,
        /// The chain's EAS contract: without it, the one the bundle names.
        #[arg(long, value_name = "ADDRESS")]
        eas: Option<alloy::primitives::Address>,
        /// The provider's attester address: without it, any key the
        /// schema's resolver authorises.
        #[arg(long, value_name = "ADDRESS")]
        attester: Option<alloy::primitives::Address>,
        /// The chain id the anchor must be on: without it, the one the
        /// bundle names.
        #[arg(long, value_name = "ID")]
        chain_id: Option<u64>,
        /// Accept a check not done, by name (comma-separated or repeated):
        /// vk, eas, attester, chain (a trust anchor not pinned), anchor (no
        /// RPC URL), daily (a period proven over data committed only at its
        /// close), recount (a dispute's days not recounted), timely (days
        /// anchored after the period ended, later than 48 h after their
        /// end: not shown fixed before the outcome), setup (a development
        /// key, or a ceremony not checked). Without it, any
        /// check not done leaves the verdict UNVERIFIED, exit code 3.
        #[arg(long = "allow-unpinned", value_name = "CHECK", value_delimiter = ',')]
        allow_unpinned: Vec<slaproof_attestation::audit::Waiver>,
        /// In a dispute, the provider's openings of the period's days
        /// (`slaproof log open-days`): checked against the anchored
        /// commitments, and with --log-day each day recounted.
        #[arg(long, value_name = "FILE")]
        openings: Option<PathBuf>,
        /// The folder of the ceremony the verifying key comes from
        /// (`slaproof ceremony`): checked with snarkjs against --ptau and this
        /// build's circuit. Without it the key's setup is only what the
        /// statement says, and a development key is reported as one.
        #[arg(long, value_name = "DIR", requires = "ptau")]
        ceremony: Option<PathBuf>,
        /// The ceremony's phase-1 file (`.ptau`), for --ceremony.
        #[arg(long, value_name = "FILE", requires = "ceremony")]
        ptau: Option<PathBuf>,
        /// The blake2b-512 of the phase-1 file whose maker you trust, when
        /// it is not a published Hermez file (those are known by hash):
        /// without either, the key's setup is not checked.
        #[arg(long, value_name = "HEX", requires = "ptau")]
        ptau_blake2b: Option<String>,
        /// A log day exported with `slaproof log export`; repeat it for
        /// every day from the period's first to its last day's watermark
        /// (late events are logged in later days).
        #[arg(long = "log-day", value_name = "FILE", requires = "openings")]
        log_days: Vec<PathBuf>,
        /// The log's verifier key (`<origin>+<id>+<key>`), to rebuild each
        /// log day's signed head before its events are recounted.
        #[arg(long, value_name = "KEY")]
        log_verifier_key: Option<String>,
    },
    /// Manage the Groth16 proving and verifying keys of the circuits.
    Keys {
        #[command(subcommand)]
        command: keys::KeysCommand,
    },
    /// Set up the circuits' keys with several parties (snarkjs), so that no
    /// single one can forge a proof: init, contribute, beacon, verify,
    /// finalize. See docs/CIRCUITS.md.
    Ceremony {
        #[command(subcommand)]
        command: ceremony::CeremonyCommand,
    },
}

/// Runs a parsed command line. Must be called outside any async runtime:
/// `up` starts the embedded Postgres on this thread before it builds one.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref())?;
    let telemetry = telemetry::init(&config.log, &config.telemetry)?;
    let result = match cli.command {
        Command::Up { no_demo, loadgen } => up(config, !no_demo, loadgen),
        Command::Keys { command } => keys::run(command),
        Command::Ceremony { command } => ceremony::run(command),
        command => runtime()?.block_on(run_async(config, command)),
    };
    // After the graceful stop, with the runtime gone: the last spans and
    // metrics are flushed by the export threads.
    telemetry.shutdown();
    result
}

/// Fetches an attestation's bundle from the API into `dir`: the auditor
/// keeps the files it checked.
async fn download_bundle(api: &url::Url, id: &str, dir: &std::path::Path) -> anyhow::Result<()> {
    let token = std::env::var("SLAPROOF_TOKEN")
        .context("set SLAPROOF_TOKEN to a bearer token that may read the attestation")?;
    let id: uuid::Uuid = id
        .parse()
        .with_context(|| format!("{id:?} is not an attestation id"))?;
    // `join` replaces the last segment of a base without a final slash.
    let mut base = api.clone();
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    let url = base
        .join(&format!("v1/attestations/{id}/bundle"))
        .context("building the bundle's URL")?;
    let response = reqwest::Client::new()
        .get(url.clone())
        .bearer_auth(token.trim())
        .send()
        .await
        .with_context(|| format!("fetching {url}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .with_context(|| format!("reading {url}"))?;
    if !status.is_success() {
        // A problem document names what is wrong; anything else is shown
        // as it came (a proxy's page, an empty answer).
        let detail = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|p| p["detail"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(200).collect());
        anyhow::bail!("{url} answered {status}: {detail}");
    }
    let body: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{url} answered 200 with something that is not JSON"))?;
    slaproof_attestation::export::write(&body, dir)?;
    eprintln!("downloaded attestation {id} into {}", dir.display());
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
        // Before any worker runs: the evaluator learns events in the order
        // they were received, so a past is written before it first reads.
        let history = match &demo {
            Some(demo) => {
                let started = std::time::Instant::now();
                let written =
                    demo::history::ensure(&db, &config, demo.tenant, chrono::Utc::now()).await?;
                if let Some(w) = &written {
                    eprintln!(
                        "gave the demo its history: {} requests since {}, {} transparency log days, in {:.1} s",
                        w.events,
                        w.plan.stretch.from.format("%Y-%m-%d %H:%M UTC"),
                        w.log_days,
                        started.elapsed().as_secs_f64()
                    );
                }
                written
            }
            None => None,
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
        // Held until the application stops: dropping it stops anvil, which
        // writes its state for the next start.
        let chain = crate::chain::up(&config).await?;
        crate::pages::ensure_built(config.api.pages_dir.as_deref()).await;
        let app = Application::build(config.clone(), db, Service::ALL).await?;
        print_welcome(
            &app,
            embedded.as_ref(),
            &connections,
            chain.as_ref(),
            demo.as_ref(),
            tokens.as_ref(),
            history.as_ref(),
        );
        let shutdown = CancellationToken::new();
        cancel_on_signals(shutdown.clone());
        if let (Some(demo), Some(tokens), Some(history)) = (&demo, &tokens, &history) {
            tokio::spawn(demo::history::announce(
                demo::history::Pointers {
                    url: format!("http://{}", app.local_addr()),
                    provider_admin: tokens.provider_admin.clone(),
                    customer_admin: tokens.customer_admin.clone(),
                    sla: demo.sla_name.clone(),
                    closed: history.plan.closed,
                    chain: chain.as_ref().and_then(|c| {
                        let deployment = c.deployment.as_ref()?;
                        // up's own anvil attests with its development key.
                        c.anvil.as_ref()?;
                        Some((
                            c.rpc_url.clone(),
                            deployment.chain_id,
                            deployment.eas,
                            slaproof_chain::anvil::dev_address(),
                        ))
                    }),
                },
                shutdown.clone(),
            ));
        }
        if let (Some(demo), Some(tokens)) = (&demo, &tokens) {
            tokio::spawn(crate::pages::announce_dashboard(
                app.local_addr(),
                tokens.provider_admin.clone(),
                demo.customer,
                demo.sla_name.clone(),
            ));
        }
        if let (Some(rate), Some(demo)) = (loadgen, &demo) {
            crate::loadgen::spawn_demo(
                app.local_addr(),
                demo.ingest_key.clone(),
                rate,
                shutdown.clone(),
            );
        }
        let result = app.run(shutdown).await;
        drop(chain);
        result
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
    chain: Option<&UpChain>,
    demo: Option<&demo::Demo>,
    tokens: Option<&demo::DemoTokens>,
    history: Option<&demo::history::Written>,
) {
    let url = format!("http://{}", app.local_addr());
    let mut out = String::new();
    out.push_str("\nslaproof is up\n\n");
    out.push_str(&format!(
        "  HTTP        {url}   (liveness {url}/healthz, readiness {url}/readyz)\n"
    ));
    if let Some(metrics) = app.metrics_addr() {
        out.push_str(&format!(
            "  Prometheus  http://{metrics}/metrics   (SLO series http://{metrics}/metrics/slo)\n"
        ));
    }
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
    if let Some(chain) = chain {
        out.push_str(&crate::chain::banner(chain));
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
        for (sla, customer) in &demo.other_slas {
            out.push_str(&format!(
                "              SLA \"{sla}\" {}\n",
                match customer {
                    Some(c) => format!("for customer \"{c}\", on its own requests"),
                    None => "for every customer (scope: service)".to_owned(),
                }
            ));
        }
        out.push_str(
            "              loadgen traffic spreads over acme-corp, globex, initech and unregistered trial-N;\n              the incident hits the 70B model, which acme-corp uses most and globex never\n",
        );
        if let Some(history) = history {
            let (from, to) = history.plan.incident();
            out.push_str(&format!(
                "  History     {} requests from {} to now, written at this first start as if received live;\n              the 70B model's incident from {} to {} makes {}'s month missed:\n              its close, credit, proofs and anchors follow within minutes (printed below when ready)\n",
                history.events,
                history.plan.stretch.from.format("%Y-%m-%d %H:%M UTC"),
                from.format("%Y-%m-%d %H:%M"),
                to.format("%H:%M UTC"),
                demo.sla_name,
            ));
        }
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

/// Prints the verdict; fails with [`Unverified`] (exit code 3) when a
/// check was not done and not waived, and with an error when one failed.
pub(crate) fn verdict(verdict: slaproof_attestation::audit::Verdict) -> anyhow::Result<()> {
    use slaproof_attestation::audit::{Verdict, Waiver};
    match verdict {
        Verdict::Failed { failed } => {
            println!("FAILED: {}", failed.join(", "));
            anyhow::bail!("the attestation failed: {}", failed.join(", "))
        }
        Verdict::Unverified { not_checked } => {
            let waivers: Vec<&str> = not_checked
                .iter()
                .filter_map(|c| Waiver::of_check(c).map(Waiver::name))
                .collect();
            println!(
                "UNVERIFIED: nothing failed, but not checked: {}",
                not_checked.join(", ")
            );
            Err(Unverified(if waivers.is_empty() {
                format!("not checked: {}", not_checked.join(", "))
            } else {
                format!(
                    "not checked: {}; pin or give what they need, or accept them unchecked by name: --allow-unpinned {}",
                    not_checked.join(", "),
                    waivers.join(",")
                )
            })
            .into())
        }
        Verdict::Verified { waived } if waived.is_empty() => {
            println!("VERIFIED: every check passed");
            Ok(())
        }
        Verdict::Verified { waived } => {
            println!(
                "VERIFIED, with checks the auditor waived: {}",
                waived.join(", ")
            );
            Ok(())
        }
    }
}

/// A verification that failed nothing but left checks undone: exit code 3
/// (2 is clap's, for a command line it refused),
/// so that a script never reads it as a pass.
#[derive(Debug, thiserror::Error)]
#[error("unverified: {0}")]
pub struct Unverified(pub String);

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

async fn run_async(config: Config, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Up { .. } | Command::Keys { .. } | Command::Ceremony { .. } => {
            unreachable!("runs outside the runtime")
        }
        Command::Verify {
            dir,
            attestation,
            api_url,
            rpc_url,
            vk_sha256,
            eas,
            attester,
            chain_id,
            allow_unpinned,
            openings,
            log_days,
            log_verifier_key,
            ceremony,
            ptau,
            ptau_blake2b,
        } => {
            if let (Some(id), Some(api)) = (attestation, api_url) {
                download_bundle(&api, &id, &dir).await?;
            }
            let ceremony = match (ceremony, ptau) {
                (Some(folder), Some(ptau)) => Some(
                    tokio::task::spawn_blocking(move || {
                        ceremony::check(&ptau, ptau_blake2b.as_deref(), &folder)
                    })
                    .await?
                    .map(|c| slaproof_attestation::audit::CheckedCeremony {
                        vk_sha256: c.vk_sha256,
                        steps: c.steps,
                        phase1: c.phase1.trusted(),
                    })
                    .map_err(|e| format!("{e:#}")),
                ),
                _ => None,
            };
            let pins = slaproof_attestation::audit::Pins {
                vk_sha256,
                eas,
                attester,
                chain_id,
                ceremony,
            };
            let mut report =
                slaproof_attestation::audit::audit(&dir, rpc_url.as_ref(), &pins).await;
            if let Some(openings) = openings {
                transparency::dispute_checks(
                    &mut report,
                    &dir,
                    &openings,
                    &log_days,
                    log_verifier_key.as_deref(),
                );
            }
            print!("{}", report.render_with(&allow_unpinned));
            verdict(report.verdict(&allow_unpinned))
        }
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
        Command::Webhook { command } => webhook(&config, command).await,
        Command::Log { command } => log(&config, command).await,
        Command::Chain { command } => crate::chain::command(&config, command).await,
        Command::Loadgen(args) => crate::loadgen::run(&config, args).await,
    }
}
