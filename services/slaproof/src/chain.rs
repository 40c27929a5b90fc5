//! The chain under `slaproof up` (anvil with slaproof deployed when no chain
//! is configured) and the `slaproof chain` commands.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use serde::{Deserialize, Serialize};
use slaproof_chain::anvil::{self, Anvil};
use slaproof_chain::{Chain, Deployment, Settings};

use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum ChainCommand {
    /// Deploy EAS (unless chain.contracts names it), slaproof's resolvers,
    /// batch checker and schemas to the configured chain, and write the
    /// record to chain.deployment_file.
    Deploy,
    /// Deploy and register, for each proving key of attestation.sizes in
    /// attestation.key_dir, the verifier contract the verified anchoring
    /// path needs (generated from the key, compiled with npm solc from
    /// contracts/node_modules). Needs the resolver's owner's key; keys
    /// already registered are left alone.
    RegisterVerifiers,
    /// Show what is deployed where, and whether it is all there.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Where a running `slaproof up` left its local chain, for the commands run
/// beside it.
#[derive(Debug, Serialize, Deserialize)]
struct LocalEndpoint {
    rpc_url: url::Url,
}

/// A chain slaproof runs on: the local anvil `up` started, or the
/// configured one.
pub(crate) struct UpChain {
    pub anvil: Option<Anvil>,
    pub rpc_url: url::Url,
    pub deployment: Option<Deployment>,
    pub note: Option<String>,
}

fn local_dir(config: &Config) -> PathBuf {
    config.embedded.data_dir.join("chain")
}

/// The settings of the anvil `up` starts in `data_dir`, at `url`.
fn local_settings(config: &Config, url: url::Url) -> Settings {
    let mut settings = Settings::local(url, anvil::dev_key());
    settings.deployment_file = Some(local_dir(config).join("deployment.json"));
    settings
}

/// For `up`: with no chain configured, starts anvil (state kept under
/// embedded.data_dir, so a restart finds its deployment) and deploys
/// slaproof's contracts unless they are there already; with a chain
/// configured, reads its deployment record. Never fails `up` for want of
/// anvil: the banner says how to get it.
pub(crate) async fn up(config: &Config) -> anyhow::Result<Option<UpChain>> {
    if let Some(url) = config.chain.rpc_url.clone() {
        let deployment = match &config.chain.deployment_file {
            Some(path) if path.exists() => Some(Deployment::read(path)?),
            _ => None,
        };
        let note = deployment
            .is_none()
            .then(|| "not deployed yet: run `slaproof chain deploy`".to_owned());
        return Ok(Some(UpChain {
            anvil: None,
            rpc_url: url,
            deployment,
            note,
        }));
    }
    if !config.embedded.anvil {
        return Ok(None);
    }
    let mut found = workspaces().iter().find_map(|root| anvil::binary(root));
    // A fresh clone has the contracts' manifest but not their tools: get
    // them as `up` gets the pages' (npm, registry only).
    if found.is_none()
        && let Some(dir) = contracts_dir().filter(|d| d.join("package-lock.json").is_file())
    {
        let installed = tokio::task::spawn_blocking(move || {
            crate::npm::ci(&dir, "the local chain's tools (anvil, solc)")
        })
        .await
        .unwrap_or(false);
        if installed {
            found = workspaces().iter().find_map(|root| anvil::binary(root));
        }
    }
    let Some(binary) = found else {
        eprintln!(
            "no chain configured and no anvil found: anchoring is off. Install it with \
             `npm ci --prefix contracts` (or put Foundry's anvil on the PATH), or set chain.rpc_url."
        );
        return Ok(None);
    };
    let dir = local_dir(config);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    eprintln!("no chain configured: starting anvil ({})", binary.display());
    let node = Anvil::start(
        &binary,
        config.embedded.anvil_port,
        Some(&dir.join("anvil-state.json")),
    )
    .context("starting anvil")?;
    let settings = local_settings(config, node.url().clone());
    std::fs::write(
        dir.join("endpoint.json"),
        serde_json::to_vec_pretty(&LocalEndpoint {
            rpc_url: node.url().clone(),
        })?,
    )?;
    let chain = Chain::connect(&settings).await?;
    let record = settings.deployment_file.clone().expect("set above");
    let known = match Deployment::read(&record) {
        Ok(deployment) if deployment.chain_id == chain.chain_id() => {
            let status = slaproof_chain::status(&chain, &deployment).await?;
            status.is_complete().then_some(deployment)
        }
        _ => None,
    };
    let deployment = match known {
        Some(deployment) => deployment,
        None => {
            eprintln!("deploying EAS and slaproof's contracts to anvil");
            let deployment = slaproof_chain::deploy(&chain, &Default::default()).await?;
            deployment.write(&record)?;
            deployment
        }
    };
    Ok(Some(UpChain {
        rpc_url: node.url().clone(),
        anvil: Some(node),
        deployment: Some(deployment),
        note: None,
    }))
}

/// The banner's chain lines.
pub(crate) fn banner(chain: &UpChain) -> String {
    let mut out = String::new();
    let what = if chain.anvil.is_some() {
        "anvil (local, dev key #0 attests)"
    } else {
        "configured"
    };
    out.push_str(&format!("  Chain       {} {}\n", chain.rpc_url, what));
    if let Some(d) = &chain.deployment {
        out.push_str(&format!(
            "    chain id {}, EAS {}, SchemaRegistry {}\n",
            d.chain_id, d.eas, d.schema_registry
        ));
        out.push_str(&format!(
            "    resolvers: verified {}, attester {}; BatchCheck {}\n",
            d.slaproof_resolver, d.attester_resolver, d.batch_check
        ));
        out.push_str(&format!(
            "    schemas: period {}\n             verified {}\n             batch root {}\n",
            d.schemas.period, d.schemas.verified, d.schemas.batch_root
        ));
    }
    if let Some(note) = &chain.note {
        out.push_str(&format!("    {note}\n"));
    }
    out
}

/// How long the attestation service waits for its first look for the
/// chain before it proves without one.
const FIRST_LOOK_FOR_CHAIN: std::time::Duration = std::time::Duration::from_secs(30);

/// The attestation service: loads (or makes) the proving keys off the
/// runtime, connects to the chain the `chain` commands would use, and runs
/// the worker until `shutdown`. Without a chain it proves and keeps the
/// proofs to be anchored once one is there; a key that does not load stops
/// the service (never replaced by a new one).
pub(crate) async fn run_attestation(
    config: Config,
    db: slaproof_store::Database,
    shutdown: tokio_util::sync::CancellationToken,
) {
    use slaproof_attestation::worker::{Prover, Worker};
    let settings = config.attestation.clone();
    let dir = settings
        .key_dir
        .clone()
        .unwrap_or_else(|| config.embedded.data_dir.join("keys"));
    let (sizes, daily_sizes, generate, concurrency) = (
        settings.sizes.clone(),
        settings.daily_sizes.clone(),
        settings.generate_keys,
        settings.concurrency,
    );
    let loading = tokio::task::spawn_blocking(move || {
        Prover::load(&dir, &sizes, &daily_sizes, generate, concurrency).map(|p| (p, dir))
    });
    let (prover, dir) = tokio::select! {
        () = shutdown.cancelled() => return,
        loaded = loading => match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(err)) => {
                tracing::error!(error = %err, "the attestation service cannot load its proving keys; not attesting");
                return;
            }
            Err(err) => {
                tracing::error!(error = %err, "loading the proving keys failed");
                return;
            }
        },
    };
    if let Ok(keys) = prover.verifying_keys() {
        for (slots, sha256) in keys {
            tracing::info!(slots, %sha256, dir = %dir.display(), "proving keys loaded");
        }
    }
    // The chain is looked for beside the proving, and again every minute
    // while it is configured but not reachable (or not deployed yet): proofs
    // are made meanwhile, and anchored once it is there.
    let (found, mut arrived) = tokio::sync::oneshot::channel();
    let looking = {
        let (config, shutdown) = (config.clone(), shutdown.clone());
        tokio::spawn(async move {
            loop {
                match anchoring(&config).await {
                    Ok(Some(anchoring)) => {
                        let _ = found.send(anchoring);
                        return;
                    }
                    Ok(None) => {
                        tracing::info!("no chain configured: proving only");
                        return;
                    }
                    Err(err) => tracing::warn!(
                        error = format!("{err:#}"),
                        "no chain to anchor on yet: proving only, looking again in a minute"
                    ),
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
                }
            }
        })
    };
    let mut worker = Worker {
        db,
        settings,
        prover,
        anchoring: None,
        name: format!(
            "attestation-{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ),
    };
    let poll = std::time::Duration::from_millis(worker.settings.poll_interval_ms);
    // The first look for the chain is waited for, briefly: a worker that
    // took a closed period before it knew of its chain would prove it over
    // a vector committed at the close instead of over its anchored days
    // (and leave the days' anchors for ten minutes), as every first start
    // of `up` did, its anvil found a second after the worker started.
    let mut first = tokio::select! {
        () = shutdown.cancelled() => return,
        looked = tokio::time::timeout(FIRST_LOOK_FOR_CHAIN, &mut arrived) => {
            looked.ok().and_then(Result::ok)
        }
    };
    loop {
        if worker.anchoring.is_none()
            && let Some(anchoring) = first.take().or_else(|| arrived.try_recv().ok())
        {
            tracing::info!(
                chain_id = anchoring.chain.chain_id(),
                "anchoring on the chain"
            );
            // up's own anvil: its dev key owns the resolver, so the
            // verifiers are registered here; on a configured chain the
            // owner does it, and a missing one is named.
            tokio::spawn(verifiers_for(
                config.chain.rpc_url.is_none(),
                anchoring.clone(),
                worker.prover.verifiers(),
            ));
            worker.anchoring = Some(anchoring);
        }
        if let Err(err) = worker.work_due().await {
            tracing::error!(error = %err, "attestation round failed; retrying");
        }
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(poll) => {}
        }
    }
    looking.abort();
}

/// The verified path's verifier contracts on the chain anchors go to:
/// registered when `register` (and solc-js is installed), else checked, with
/// a warning for each key that has none.
async fn verifiers_for(
    register: bool,
    anchoring: slaproof_attestation::worker::Anchoring,
    keys: Vec<(usize, slaproof_circuits::VerifierKey)>,
) {
    use slaproof_attestation::verifiers::{SolcJs, register_missing};
    let (chain, deployment) = (anchoring.chain.as_ref(), &anchoring.deployment);
    if register && let Some(solc) = contracts_dir().as_deref().and_then(SolcJs::find) {
        match register_missing(chain, deployment, &keys, &solc).await {
            Ok(done) => {
                for r in done.iter().filter(|r| r.new) {
                    tracing::info!(slots = r.slots, verifier = %r.verifier, "registered the verifier of a key on the local chain");
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "could not register the verifiers: the verified path waits")
            }
        }
        return;
    }
    for (slots, key) in keys {
        let Ok(hash) = key.sha256() else { continue };
        let Ok(word) = slaproof_attestation::bundle::hex_word(&hash) else {
            continue;
        };
        if let Ok(None) = slaproof_chain::deploy::registered_verifier(chain, deployment, word).await
        {
            tracing::warn!(slots, vk_sha256 = %hash, "no verifier is registered for this key: SLAs on the verified path wait until the resolver's owner runs `slaproof chain register-verifiers`");
        }
    }
}

/// Where the workspace's npm tools are looked for, in order: the working
/// directory, then the source tree this binary was built from.
fn workspaces() -> [PathBuf; 2] {
    [
        std::env::current_dir().unwrap_or_default(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    ]
}

/// The workspace's `contracts/` folder, if it is there.
fn contracts_dir() -> Option<PathBuf> {
    workspaces()
        .into_iter()
        .map(|root| root.join("contracts"))
        .find(|d| d.join("compile.mjs").is_file())
}

/// The chain and deployment anchors go to: the configured chain, or the
/// local anvil of `slaproof up`; `None` when neither is there.
async fn anchoring(
    config: &Config,
) -> anyhow::Result<Option<slaproof_attestation::worker::Anchoring>> {
    let settings = match command_settings(config) {
        Ok(settings) => settings,
        Err(_) => return Ok(None),
    };
    let Some(path) = settings.deployment_file.clone() else {
        anyhow::bail!("chain.deployment_file is not set: run `slaproof chain deploy`");
    };
    let deployment = Deployment::read(&path)
        .with_context(|| format!("reading the deployment record {}", path.display()))?;
    let chain = Chain::connect(&settings).await?;
    anyhow::ensure!(
        deployment.chain_id == chain.chain_id(),
        "the deployment record {} is for chain {}, the node is chain {}",
        path.display(),
        deployment.chain_id,
        chain.chain_id()
    );
    Ok(Some(slaproof_attestation::worker::Anchoring {
        chain: std::sync::Arc::new(chain),
        deployment,
    }))
}

/// The settings `chain` commands use: the configured chain, or the local
/// anvil of a `slaproof up` running in this data folder.
fn command_settings(config: &Config) -> anyhow::Result<Settings> {
    if config.chain.rpc_url.is_some() {
        return Ok(config.chain.clone());
    }
    let endpoint = local_dir(config).join("endpoint.json");
    let text = std::fs::read_to_string(&endpoint).with_context(|| {
        format!(
            "no chain configured (chain.rpc_url) and no local chain from `slaproof up` ({} is missing)",
            endpoint.display()
        )
    })?;
    let local: LocalEndpoint = serde_json::from_str(&text)?;
    Ok(local_settings(config, local.rpc_url))
}

pub(crate) async fn command(config: &Config, command: ChainCommand) -> anyhow::Result<()> {
    let settings = command_settings(config)?;
    let chain = Chain::connect(&settings).await?;
    match command {
        ChainCommand::Deploy => {
            let path = settings
                .deployment_file
                .clone()
                .context("set chain.deployment_file: the deployment record is written there")?;
            let deployment = slaproof_chain::deploy(&chain, &settings.contracts).await?;
            deployment.write(&path)?;
            println!("{}", serde_json::to_string_pretty(&deployment)?);
            eprintln!("deployment record written to {}", path.display());
        }
        ChainCommand::RegisterVerifiers => {
            use slaproof_attestation::verifiers::{SolcJs, register_missing};
            let path = settings
                .deployment_file
                .clone()
                .context("set chain.deployment_file")?;
            let deployment = Deployment::read(&path)?;
            let attestation = &config.attestation;
            let dir = attestation
                .key_dir
                .clone()
                .unwrap_or_else(|| config.embedded.data_dir.join("keys"));
            // The daily circuit's keys when made (the worker makes them on
            // its first start): a deployment without them yet still
            // registers the threshold circuit's verifiers.
            let daily: Vec<usize> = attestation
                .daily_sizes
                .iter()
                .copied()
                .filter(|days| {
                    slaproof_circuits::keys::circuit_key_paths(
                        &dir,
                        slaproof_circuits::Circuit::Daily,
                        *days,
                    )
                    .0
                    .exists()
                })
                .collect();
            let prover = slaproof_attestation::worker::Prover::load(
                &dir,
                &attestation.sizes,
                &daily,
                false,
                1,
            )?;
            let solc = contracts_dir().as_deref().and_then(SolcJs::find).context(
                "node and npm solc are needed to compile the verifiers: run `npm ci --prefix contracts` in the workspace",
            )?;
            for r in register_missing(&chain, &deployment, &prover.verifiers(), &solc).await? {
                println!(
                    "{:>5} slots  key sha256 {}  verifier {}  {}",
                    r.slots,
                    r.vk_sha256,
                    r.verifier,
                    if r.new {
                        "deployed and registered"
                    } else {
                        "already registered"
                    }
                );
            }
        }
        ChainCommand::Status { json } => {
            let path = settings
                .deployment_file
                .clone()
                .context("set chain.deployment_file")?;
            let deployment = Deployment::read(&path)?;
            let status = slaproof_chain::status(&chain, &deployment).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                let mut out = format!(
                    "chain {} at {} (head {})\nattester {} ({} wei){}\n\ncontracts\n",
                    status.chain_id,
                    status.endpoint,
                    status.head,
                    status.attester,
                    status.attester_balance_wei,
                    if status.attester_authorised {
                        ", authorised"
                    } else {
                        ", NOT authorised on the resolvers"
                    }
                );
                for c in &status.contracts {
                    out.push_str(&format!(
                        "  {:<18} {}  {}\n",
                        c.name,
                        c.address,
                        if c.has_code { "deployed" } else { "NO CODE" }
                    ));
                }
                out.push_str("\nschemas\n");
                for s in &status.schemas {
                    out.push_str(&format!(
                        "  {:<10} {}  {}\n",
                        s.name,
                        s.uid,
                        if s.registered {
                            "registered"
                        } else {
                            "NOT REGISTERED"
                        }
                    ));
                }
                out.push_str(if status.is_complete() {
                    "\ncomplete\n"
                } else {
                    "\nINCOMPLETE: run `slaproof chain deploy`\n"
                });
                print!("{out}");
            }
            if !status.is_complete() {
                anyhow::bail!("the deployment in {} is incomplete", path.display());
            }
        }
    }
    Ok(())
}
