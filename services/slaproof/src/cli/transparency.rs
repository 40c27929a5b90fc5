//! `slaproof log`: the transparency log at the command line. The provider
//! builds due days, proves a request, checks a client-side log and exports
//! a day (through the application layer, as the API would); anyone checks
//! a proof or audits an exported day offline, with the log's verifier key
//! and nothing of slaproof's but this binary.

use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::NaiveDate;
use clap::Subcommand;
use slaproof_app::transparency::audit::{DayExport, audit_and_read_day, audit_day};
use slaproof_app::transparency::requests::{CheckRequestsIn, RequestProof};
use slaproof_attestation::audit::{Pins, Report, Waiver, pin, where_anchored};
use slaproof_attestation::bundle::StatementFile;
use slaproof_attestation::opening::{
    LoggedDay, Openings, Recount, check_openings, check_recount, open_days,
};
use slaproof_domain::transparency::note;
use slaproof_domain::transparency::tree;
use slaproof_domain::transparency::{Leaf, hash_from_hex, hash_hex, leaf_hash};

use super::tenancy::{TenantArg, application};
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Build every tenant's days that are past their grace, now.
    Build,
    /// Print a request's inclusion proof (JSON, as the API answers it).
    Prove {
        #[command(flatten)]
        tenant: TenantArg,
        /// The request id the provider reported.
        request_id: String,
        /// Prove against this day's head (YYYY-MM-DD); the latest if absent.
        #[arg(long)]
        day: Option<NaiveDate>,
    },
    /// Check a proof offline: the checkpoint's signature under the log's
    /// key, the leaf's hash, and its path to the signed root. Exits
    /// non-zero naming what failed.
    VerifyProof {
        /// The proof as `GET /v1/transparency/requests/{id}` answered it.
        file: PathBuf,
        /// The log's verifier key as the provider publishes it
        /// (`<origin>+<id>+<key>`).
        #[arg(long)]
        verifier_key: String,
        /// Fail unless the leaf records this status.
        #[arg(long)]
        expect_status: Option<i32>,
        /// JSON-RPC URL of the chain the head is anchored on (your own
        /// node): the head's anchor is then read there and must attest
        /// this very head. Without it the anchor is not checked.
        #[arg(long, value_name = "URL")]
        rpc_url: Option<url::Url>,
        /// The chain id the head must be anchored on: without it, the one
        /// the proof names.
        #[arg(long, value_name = "ID")]
        chain_id: Option<u64>,
        /// The chain's EAS contract: without it, the one the proof names.
        #[arg(long, value_name = "ADDRESS")]
        eas: Option<alloy::primitives::Address>,
        /// The provider's attester address: without it, any key the
        /// schema's resolver authorises.
        #[arg(long, value_name = "ADDRESS")]
        attester: Option<alloy::primitives::Address>,
        /// Accept a check not done, by name (comma-separated): anchor (no
        /// RPC URL), chain, eas, attester (not pinned). Without it, any
        /// check not done leaves the verdict UNVERIFIED, exit code 3.
        #[arg(long = "allow-unpinned", value_name = "CHECK", value_delimiter = ',')]
        allow_unpinned: Vec<Waiver>,
    },
    /// Check a client-side log (JSON: {"requests": [{"request_id", "status",
    /// "latency_ms"}], "tolerance": …}) and print the kept report.
    Check {
        #[command(flatten)]
        tenant: TenantArg,
        file: PathBuf,
    },
    /// Export one day for auditors (JSON on stdout).
    Export {
        #[command(flatten)]
        tenant: TenantArg,
        day: NaiveDate,
    },
    /// Open the days a period was proven over, for a dispute (JSON on
    /// stdout): each day's weights and salt, the SLA version's terms and
    /// the maintenance excluded. An auditor checks them with `slaproof
    /// verify --openings`. Each salt opens its day only.
    OpenDays {
        #[command(flatten)]
        tenant: TenantArg,
        /// The attestation (proven over daily commitments).
        attestation: uuid::Uuid,
    },
    /// Rebuild an exported day's head from the file alone. Exits non-zero
    /// naming every problem.
    Audit {
        file: PathBuf,
        #[arg(long)]
        verifier_key: String,
    },
}

pub(super) async fn log(config: &Config, command: LogCommand) -> anyhow::Result<()> {
    match command {
        LogCommand::VerifyProof {
            file,
            verifier_key,
            expect_status,
            rpc_url,
            chain_id,
            eas,
            attester,
            allow_unpinned,
        } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let proof: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let leaf = verify_proof(&proof, &verifier_key)?;
            if let Some(expected) = expect_status
                && leaf.status != Some(expected)
            {
                anyhow::bail!(
                    "the log records status {:?} for {}, not {expected}",
                    leaf.status,
                    leaf.event
                );
            }
            println!(
                "ok: {} ({}) is in the log, status {:?}, latency {:?} us{}",
                leaf.request_id.as_deref().unwrap_or("-"),
                leaf.event,
                leaf.status,
                leaf.latency_us,
                if leaf.late { ", logged late" } else { "" },
            );
            // The head the path leads to is the one anchored for all to
            // see, or the customer may be shown a tree of its own: that is
            // checked on chain, against pins, or said to be not checked.
            let pins = Pins {
                vk_sha256: None,
                eas,
                attester,
                chain_id,
                ceremony: None,
            };
            let mut report = Report::default();
            match rpc_url {
                Some(url) => {
                    check_anchor_into(&mut report, &proof, &verifier_key, url, &pins).await
                }
                None => report.not_checked(
                    "anchor",
                    "no --rpc-url: the head was not looked up on chain, so a head shown to this \
                     customer alone would pass",
                ),
            }
            print!("{}", report.render_with(&allow_unpinned));
            super::verdict(report.verdict(&allow_unpinned))
        }
        LogCommand::Audit { file, verifier_key } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let export: DayExport = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a day's export", file.display()))?;
            let audit = audit_day(&export, &verifier_key);
            if audit.problems.is_empty() {
                println!(
                    "ok: {} rebuilds its signed head from {} leaves ({} late)",
                    audit.day, audit.leaves, audit.late
                );
                Ok(())
            } else {
                for p in &audit.problems {
                    eprintln!("{}: {p}", audit.day);
                }
                anyhow::bail!("{} problem(s) in {}", audit.problems.len(), audit.day)
            }
        }
        command => {
            let app = application(config).await?;
            match command {
                LogCommand::Build => {
                    let built = app
                        .build_transparency_logs(&config.transparency, chrono::Utc::now())
                        .await?;
                    for day in &built {
                        println!(
                            "{}\t{}\t{} leaves ({} late)\tsize {}",
                            day.tenant, day.day, day.leaves, day.late, day.size
                        );
                    }
                    if built.is_empty() {
                        println!("no day was due");
                    }
                }
                LogCommand::Prove {
                    tenant,
                    request_id,
                    day,
                } => {
                    let admin = app.operator_in(&tenant.tenant).await?;
                    let proof: RequestProof = app.request_proof(&admin, &request_id, day).await?;
                    println!("{}", serde_json::to_string_pretty(&proof)?);
                }
                LogCommand::Check { tenant, file } => {
                    let admin = app.operator_in(&tenant.tenant).await?;
                    let text = std::fs::read_to_string(&file)
                        .with_context(|| format!("reading {}", file.display()))?;
                    let input: CheckRequestsIn = serde_json::from_str(&text)
                        .with_context(|| format!("{} is not a client-side log", file.display()))?;
                    let report = app.check_requests(&admin, input).await?;
                    println!("{}", serde_json::to_string_pretty(&report)?);
                }
                LogCommand::Export { tenant, day } => {
                    let admin = app.operator_in(&tenant.tenant).await?;
                    let export = app.export_log_day(&admin, day).await?;
                    println!("{}", serde_json::to_string_pretty(&export)?);
                }
                LogCommand::OpenDays {
                    tenant,
                    attestation,
                } => {
                    let admin = app.operator_in(&tenant.tenant).await?;
                    let db = super::connect(config).await?;
                    let openings =
                        open_days(&db, admin.tenant(), attestation, config.evaluator.grace())
                            .await?;
                    println!("{}", serde_json::to_string_pretty(&openings)?);
                }
                LogCommand::VerifyProof { .. } | LogCommand::Audit { .. } => unreachable!(),
            }
            Ok(())
        }
    }
}

/// Checks a proof as the API answered it, trusting only `verifier_key`:
/// the leaf hashes to `leaf_hash`, and its path leads to the root of the
/// checkpoint that key signed. Returns the leaf.
pub fn verify_proof(proof: &serde_json::Value, verifier_key: &str) -> anyhow::Result<Leaf> {
    let field = |name: &str| {
        proof
            .get(name)
            .with_context(|| format!("the proof has no `{name}`"))
    };
    let leaf_text = field("leaf")?.as_str().context("`leaf` is not text")?;
    let leaf = Leaf::parse(leaf_text.as_bytes()).context("`leaf` is not a leaf")?;
    let hash = leaf_hash(leaf_text.as_bytes());
    let claimed = hash_from_hex("leaf_hash", field("leaf_hash")?.as_str().unwrap_or(""))?;
    anyhow::ensure!(
        hash == claimed,
        "the leaf hashes to {}, not to the leaf_hash given",
        hash_hex(&hash)
    );
    // The server's own `status` is not trusted: the path is checked
    // whatever it says, and only a request without one cannot be.
    let status = field("status")?.as_str().unwrap_or("");
    anyhow::ensure!(
        status != "not_logged",
        "the request's day is not logged yet, so there is no proof to check"
    );
    let head = field("head")?;
    let checkpoint = head
        .get("checkpoint")
        .and_then(|c| c.as_str())
        .context("the head has no checkpoint")?;
    let signed = note::open(checkpoint, verifier_key).context("the head's checkpoint")?;
    let index = field("leaf_index")?
        .as_u64()
        .context("`leaf_index` is not a number")?;
    let path = field("proof")?
        .as_array()
        .context("`proof` is not a list")?
        .iter()
        .map(|h| hash_from_hex("proof", h.as_str().unwrap_or("")))
        .collect::<Result<Vec<_>, _>>()?;
    tree::verify_inclusion(&path, signed.size, signed.root, index, hash)
        .context("the audit path does not lead to the signed root")?;
    Ok(leaf)
}

/// The head anchor's checks into `report`: the chain and EAS the proof
/// names against the pinned ones (not read at all when they differ), the
/// anchor ([`check_anchor`] on the pinned EAS), its attester authorised by
/// the schema's resolver and the pinned one.
pub async fn check_anchor_into(
    report: &mut Report,
    proof: &serde_json::Value,
    verifier_key: &str,
    url: url::Url,
    pins: &Pins,
) {
    let named = |name: &str| {
        proof
            .pointer(&format!("/head/anchor/{name}"))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let eas: Option<alloy::primitives::Address> = named("eas").and_then(|e| e.parse().ok());
    let (Some(eas), Some(chain_id)) = (
        eas,
        proof
            .pointer("/head/anchor/chainId")
            .and_then(|c| c.as_u64()),
    ) else {
        report.check(
            "anchor",
            Err(
                "the proof's head names no anchor (EAS and chain): it is not anchored (yet)".into(),
            ),
        );
        return;
    };
    let (location, readable) = where_anchored(pins.chain_id, pins.eas, chain_id, eas);
    report.checks.extend(location);
    if !readable {
        report.check(
            "anchor",
            Err("not read: the proof names another chain or EAS than the pinned one".into()),
        );
        return;
    }
    let chain = match slaproof_chain::Chain::reader(url).await {
        Ok(chain) => chain,
        Err(err) => {
            report.check("anchor", Err(format!("connecting to the chain: {err}")));
            return;
        }
    };
    let found = match check_anchor_on(&chain, proof, verifier_key).await {
        Ok(found) => found,
        Err(err) => {
            report.check("anchor", Err(format!("{err:#}")));
            return;
        }
    };
    report.check(
        "anchor",
        Ok(format!(
            "attestation {} attests this very head (the batch root its id leads to)",
            found.uid
        )),
    );
    let authorised = slaproof_attestation::audit::authorised(
        &chain,
        eas,
        found.schema,
        slaproof_chain::anchor::BATCH_SCHEMA,
        found.attester,
    )
    .await;
    report.check("attester", authorised);
    report.checks.push(pin(
        "attester pinned",
        pins.attester,
        found.attester,
        "the attestation's attester",
        "--attester with the provider's attester address",
    ));
}

/// Reads the proof's head anchor on the chain at `url` and checks that it
/// attests this head: its data is the batch root whose one member is the
/// head's id, recomputed from the signed checkpoint and the day, and it is
/// on the chain the proof names. Returns the attestation found.
pub async fn check_anchor(
    proof: &serde_json::Value,
    verifier_key: &str,
    url: url::Url,
) -> anyhow::Result<slaproof_chain::attest::Attestation> {
    let chain = slaproof_chain::Chain::reader(url)
        .await
        .context("connecting to the chain")?;
    check_anchor_on(&chain, proof, verifier_key).await
}

/// [`check_anchor`] on a chain already connected.
async fn check_anchor_on(
    chain: &slaproof_chain::Chain,
    proof: &serde_json::Value,
    verifier_key: &str,
) -> anyhow::Result<slaproof_chain::attest::Attestation> {
    use slaproof_chain::anchor::{BatchRoot, log_day_root, log_head_id};
    let head = proof.get("head").context("the proof has no head")?;
    let anchor = head
        .get("anchor")
        .context("the head is not anchored (yet): there is nothing on chain to check")?;
    let signed = note::open(
        head.get("checkpoint")
            .and_then(|c| c.as_str())
            .unwrap_or(""),
        verifier_key,
    )
    .context("the head's checkpoint")?;
    let day: NaiveDate = head
        .get("day")
        .and_then(|d| d.as_str())
        .context("the head has no day")?
        .parse()
        .context("the head's day")?;
    let day_start = u64::try_from(
        day.and_hms_opt(0, 0, 0)
            .context("midnight")?
            .and_utc()
            .timestamp(),
    )?;
    let head_id = log_head_id(&signed.origin, day_start, signed.size, signed.root.0);
    let expected = log_day_root(head_id, day_start);
    // A day whose anchor also carries daily measurements: the head is the
    // first member of the batch, proven into its root.
    let head_proof: Option<Vec<alloy::primitives::B256>> = anchor
        .get("headProof")
        .map(|p| serde_json::from_value(p.clone()))
        .transpose()
        .context("the anchor's head proof")?;
    let field = |name: &str| {
        anchor
            .get(name)
            .and_then(|v| v.as_str())
            .with_context(|| format!("the anchor has no {name}"))
    };
    let eas: alloy::primitives::Address = field("eas")?.parse().context("the anchor's EAS")?;
    let uid: alloy::primitives::B256 = field("uid")?.parse().context("the anchor's UID")?;
    if let Some(named) = anchor.get("chainId").and_then(|c| c.as_u64()) {
        anyhow::ensure!(
            chain.chain_id() == named,
            "the RPC serves chain {}, the head is anchored on chain {named}",
            chain.chain_id()
        );
    }
    let found = slaproof_chain::attest::attestation_at(chain, eas, uid)
        .await?
        .with_context(|| format!("no attestation {uid} on that chain"))?;
    let data = BatchRoot::from_data(&found.data).context("the attestation is not a batch root")?;
    match head_proof {
        Some(proof) => anyhow::ensure!(
            data.epochStart == expected.epochStart
                && data.epochEnd == expected.epochEnd
                && slaproof_chain::merkle::StandardTree::verify(data.root, head_id, &proof),
            "attestation {uid} does not anchor this head (its root {} over {}..{} is not reached from head {head_id})",
            data.root,
            data.epochStart,
            data.epochEnd
        ),
        None => anyhow::ensure!(
            data == expected,
            "attestation {uid} does not anchor this head (its root is {}, the head's is {})",
            data.root,
            expected.root
        ),
    }
    anyhow::ensure!(!found.revoked, "attestation {uid} was revoked");
    Ok(found)
}

/// A dispute's checks, added to `report`: the provider's openings of the
/// period's days (`slaproof log open-days`) against the bundle's anchored
/// commitments, and each day recounted from the log days exported with
/// `slaproof log export`, every one first rebuilt to its head signed by
/// `verifier_key`.
pub fn dispute_checks(
    report: &mut Report,
    dir: &Path,
    openings: &Path,
    log_days: &[PathBuf],
    verifier_key: Option<&str>,
) {
    let read = || -> Result<(StatementFile, Openings), String> {
        let statement = StatementFile::read(dir).map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(openings)
            .map_err(|e| format!("reading {}: {e}", openings.display()))?;
        let openings = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a period's openings: {e}", openings.display()))?;
        Ok((statement, openings))
    };
    let (statement, openings) = match read() {
        Ok(files) => files,
        Err(why) => {
            report.check("day openings", Err(why));
            return;
        }
    };
    let opened = report.check("day openings", check_openings(&statement, &openings));
    if log_days.is_empty() {
        report.not_checked(
            "day recount",
            "no --log-day: give every log day the period's events may be logged in",
        );
        return;
    }
    if !opened {
        report.not_checked(
            "day recount",
            "the openings are not the anchored commitments",
        );
        return;
    }
    let Some(key) = verifier_key else {
        report.check(
            "day recount",
            Err("--log-verifier-key is needed to check the exported log days".into()),
        );
        return;
    };
    let mut log = Vec::with_capacity(log_days.len());
    for path in log_days {
        match logged_day(path, key) {
            Ok(day) => log.push(day),
            Err(why) => {
                report.check("day recount", Err(why));
                return;
            }
        }
    }
    match check_recount(&openings, &log) {
        Recount::Agrees(detail) => report.check("day recount", Ok(detail)),
        Recount::Disagrees(why) => report.check("day recount", Err(why)),
        Recount::NotPossible(why) => {
            report.not_checked("day recount", why);
            false
        }
    };
}

/// An exported log day rebuilt to its signed head, and its leaves.
fn logged_day(path: &Path, verifier_key: &str) -> Result<LoggedDay, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let export: DayExport = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a day's export: {e}", path.display()))?;
    let (audit, leaves) = audit_and_read_day(&export, verifier_key);
    if !audit.problems.is_empty() {
        return Err(format!(
            "the log day {} does not rebuild its signed head: {}",
            export.day,
            audit.problems.join("; ")
        ));
    }
    Ok(LoggedDay {
        day: export.day,
        starts_log: export.head.first_index == 0,
        leaves,
    })
}
