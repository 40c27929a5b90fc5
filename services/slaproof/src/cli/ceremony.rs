//! `slaproof ceremony`: a multi-party Groth16 setup run with snarkjs over the circuit exported from source, one step per party on a folder the parties pass around, so that no single party can forge a proof.
//!
//! The folder holds the circuit's `.r1cs`, each step's `.zkey` and
//! `ceremony.json`, the transcript: the r1cs and phase-1 hashes, the beacon
//! announced in advance, and every step with its key's hash. Each step is
//! snarkjs's own (`groth16 setup`, `zkey contribute`, `zkey beacon`,
//! `zkey verify`); slaproof regenerates the r1cs, keeps the transcript and
//! imports the final key. The trust model and the runbook:
//! `docs/CIRCUITS.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail, ensure};
use clap::Subcommand;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use slaproof_circuits::Circuit;
use slaproof_circuits::ptau::Published;

#[derive(Debug, Subcommand)]
pub enum CeremonyCommand {
    /// Start phase 2 for one circuit and size: writes the circuit's `.r1cs`
    /// (from this build's source), runs `snarkjs groth16 setup` over it
    /// and the phase-1 file, and starts the transcript.
    Init {
        /// `threshold` or `daily`.
        #[arg(long, value_parser = ["threshold", "daily"])]
        circuit: String,
        /// Slots of the threshold circuit, or days of the daily one.
        #[arg(long)]
        size: usize,
        /// The phase-1 powers of tau (`.ptau`), large enough for the circuit,
        /// e.g. a public ceremony's `powersOfTau28_hez_final_NN.ptau`.
        #[arg(long)]
        ptau: PathBuf,
        /// The blake2b-512 the phase-1 file's publisher gives, when it is not
        /// a published Hermez file (those are known by hash): the file must
        /// have it.
        #[arg(long, value_name = "HEX")]
        ptau_blake2b: Option<String>,
        /// The block whose hash will be the final random beacon: one not yet
        /// mined when every party has agreed to it.
        #[arg(long)]
        beacon_block: Option<u64>,
        /// The ceremony's folder (created; must not hold a ceremony).
        #[arg(long, default_value = "ceremony")]
        folder: PathBuf,
    },
    /// Add one party's contribution, drawn from this machine's randomness
    /// and never written anywhere.
    Contribute {
        /// Who contributes, as the transcript and every verdict will show.
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "ceremony")]
        folder: PathBuf,
    },
    /// The last step: the random beacon announced at `init`, read from the
    /// chain (`--rpc`), or given (`--hash`) when none was announced.
    Beacon {
        /// A JSON-RPC endpoint of the chain whose block was announced.
        #[arg(long, conflicts_with = "hash")]
        rpc: Option<url::Url>,
        /// The beacon, 32 bytes in hex, when no block was announced.
        #[arg(long)]
        hash: Option<String>,
        #[arg(long, default_value = "ceremony")]
        folder: PathBuf,
    },
    /// Check the ceremony as anyone can: the r1cs rebuilt from source, the
    /// phase-1 file and every step's key against the transcript, and
    /// `snarkjs zkey verify` over the newest key.
    Verify {
        #[arg(long)]
        ptau: PathBuf,
        /// The blake2b-512 of a phase-1 file that is not a published one,
        /// from a maker you trust.
        #[arg(long, value_name = "HEX")]
        ptau_blake2b: Option<String>,
        #[arg(long, default_value = "ceremony")]
        folder: PathBuf,
    },
    /// Verify, then store the final key for the attestation worker, with the
    /// transcript beside it. Refuses a ceremony that did not end with its
    /// beacon.
    Finalize {
        #[arg(long)]
        ptau: PathBuf,
        /// As for `verify`.
        #[arg(long, value_name = "HEX")]
        ptau_blake2b: Option<String>,
        #[arg(long, default_value = "ceremony")]
        folder: PathBuf,
        /// Folder to write the keys to.
        #[arg(long, default_value = ".slaproof/keys")]
        dir: PathBuf,
    },
}

/// `ceremony.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Transcript {
    circuit: String,
    size: usize,
    r1cs: Hashed,
    ptau_sha256: String,
    /// The phase-1 file's blake2b-512, the hash its publishers give.
    #[serde(default)]
    ptau_blake2b: String,
    /// The block whose hash is the beacon, announced before any contribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    beacon_block: Option<u64>,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Hashed {
    file: String,
    sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Step {
    /// `setup`, `contribution` or `beacon`.
    kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    beacon: Option<String>,
    zkey: Hashed,
    at: chrono::DateTime<chrono::Utc>,
}

const TRANSCRIPT: &str = "ceremony.json";

pub(super) fn run(command: CeremonyCommand) -> anyhow::Result<()> {
    match command {
        CeremonyCommand::Init {
            circuit,
            size,
            ptau,
            ptau_blake2b,
            beacon_block,
            folder,
        } => init(
            &circuit,
            size,
            &ptau,
            ptau_blake2b.as_deref(),
            beacon_block,
            &folder,
        ),
        CeremonyCommand::Contribute { name, folder } => contribute(&name, &folder),
        CeremonyCommand::Beacon { rpc, hash, folder } => beacon(rpc, hash, &folder),
        CeremonyCommand::Verify {
            ptau,
            ptau_blake2b,
            folder,
        } => verify(&ptau, ptau_blake2b.as_deref(), &folder).map(|_| ()),
        CeremonyCommand::Finalize {
            ptau,
            ptau_blake2b,
            folder,
            dir,
        } => finalize(&ptau, ptau_blake2b.as_deref(), &folder, &dir),
    }
}

/// sha256 of a file (a phase-1 file of gigabytes, a key), streamed.
fn sha256_file(path: &Path) -> anyhow::Result<String> {
    slaproof_circuits::ptau::digest_file::<Sha256>(path)
        .with_context(|| format!("reading {}", path.display()))
}

/// snarkjs: `SLAPROOF_SNARKJS` (its `cli.cjs` or an executable), the
/// workspace's `circuits/node_modules`, or `snarkjs` on the PATH.
fn snarkjs() -> Command {
    let script = std::env::var_os("SLAPROOF_SNARKJS")
        .map(PathBuf::from)
        .or_else(|| {
            let local = Path::new("circuits/node_modules/snarkjs/build/cli.cjs");
            local.exists().then(|| local.to_owned())
        });
    match script {
        Some(s) if s.extension().is_some_and(|e| e == "cjs" || e == "js") => {
            let mut c = Command::new("node");
            c.arg(s);
            c
        }
        Some(s) => Command::new(s),
        None => Command::new("snarkjs"),
    }
}

/// Runs one snarkjs step in `folder`, its output shown as it runs.
fn snarkjs_step(folder: &Path, args: &[&str]) -> anyhow::Result<()> {
    let status = snarkjs()
        .args(args)
        .current_dir(folder)
        .status()
        .context("running snarkjs: set SLAPROOF_SNARKJS, or run `npm ci --prefix circuits`")?;
    ensure!(
        status.success(),
        "snarkjs {} failed ({status})",
        args.join(" ")
    );
    Ok(())
}

fn read_transcript(folder: &Path) -> anyhow::Result<Transcript> {
    let path = folder.join(TRANSCRIPT);
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "reading {}: run `slaproof ceremony init` first",
            path.display()
        )
    })?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a ceremony transcript", path.display()))
}

fn write_transcript(folder: &Path, t: &Transcript) -> anyhow::Result<()> {
    let path = folder.join(TRANSCRIPT);
    let tmp = folder.join(format!("{TRANSCRIPT}.partial"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(t)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

fn circuit_of(t: &Transcript) -> anyhow::Result<Circuit> {
    Circuit::of_name(&t.circuit).with_context(|| format!("{}: not threshold or daily", t.circuit))
}

/// The next step's key file name.
fn next_zkey(t: &Transcript) -> String {
    format!("{}-{}_{:04}.zkey", t.circuit, t.size, t.steps.len())
}

fn last_zkey(t: &Transcript) -> anyhow::Result<&Hashed> {
    t.steps
        .last()
        .map(|s| &s.zkey)
        .context("the transcript has no step yet")
}

fn record(
    folder: &Path,
    t: &mut Transcript,
    kind: &str,
    name: &str,
    beacon: Option<String>,
    zkey: String,
) -> anyhow::Result<()> {
    let sha256 = sha256_file(&folder.join(&zkey))?;
    println!("{kind} {name}: {zkey}  sha256 {sha256}");
    t.steps.push(Step {
        kind: kind.to_owned(),
        name: name.to_owned(),
        beacon,
        zkey: Hashed { file: zkey, sha256 },
        at: chrono::Utc::now(),
    });
    write_transcript(folder, t)
}

fn init(
    circuit: &str,
    size: usize,
    ptau: &Path,
    pinned: Option<&str>,
    beacon_block: Option<u64>,
    folder: &Path,
) -> anyhow::Result<()> {
    let circuit = Circuit::of_name(circuit)
        .with_context(|| format!("--circuit: {circuit} is not threshold or daily"))?;
    ensure!(
        !folder.join(TRANSCRIPT).exists(),
        "{} already holds a ceremony",
        folder.display()
    );
    let ptau =
        std::fs::canonicalize(ptau).with_context(|| format!("reading {}", ptau.display()))?;
    let phase1 = Phase1::of(&ptau, pinned)?;
    println!("phase 1: {}", phase1.describe());
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let r1cs = slaproof_circuits::r1cs::export(circuit, size)?;
    let r1cs_file = r1cs.file_name();
    std::fs::write(folder.join(&r1cs_file), &r1cs.bytes)
        .with_context(|| format!("writing {r1cs_file}"))?;
    let mut t = Transcript {
        circuit: circuit.name().to_owned(),
        size,
        r1cs: Hashed {
            file: r1cs_file.clone(),
            sha256: r1cs.sha256(),
        },
        ptau_sha256: sha256_file(&ptau)?,
        ptau_blake2b: phase1.blake2b().to_owned(),
        beacon_block,
        steps: Vec::new(),
    };
    println!(
        "{r1cs_file}: {} constraints, sha256 {}",
        r1cs.constraints, t.r1cs.sha256
    );
    let zkey = next_zkey(&t);
    snarkjs_step(
        folder,
        &[
            "groth16",
            "setup",
            &r1cs_file,
            &ptau.to_string_lossy(),
            &zkey,
        ],
    )?;
    record(folder, &mut t, "setup", "", None, zkey)?;
    println!(
        "next: each party runs `slaproof ceremony contribute --name WHO --folder {}`",
        folder.display()
    );
    Ok(())
}

fn contribute(name: &str, folder: &Path) -> anyhow::Result<()> {
    ensure!(!name.trim().is_empty(), "--name: say who contributes");
    let mut t = read_transcript(folder)?;
    ensure!(
        !t.steps.iter().any(|s| s.kind == "beacon"),
        "the ceremony ended with its beacon: no contribution follows it"
    );
    let from = last_zkey(&t)?.file.clone();
    let to = next_zkey(&t);
    // snarkjs hashes this with its own prompt-free entropy; drawn here
    // from the OS and never written.
    let entropy = rand::random::<[u8; 32]>();
    snarkjs_step(
        folder,
        &[
            "zkey",
            "contribute",
            &from,
            &to,
            &format!("--name={name}"),
            &format!("-e={}", hex::encode(entropy)),
        ],
    )?;
    record(folder, &mut t, "contribution", name, None, to)
}

/// The hash of block `n` over JSON-RPC; refuses a block not mined yet.
fn block_hash(rpc: &url::Url, n: u64) -> anyhow::Result<String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber",
        "params": [format!("0x{n:x}"), false],
    });
    let answer: serde_json::Value = super::runtime()?
        .block_on(async {
            reqwest::Client::new()
                .post(rpc.clone())
                .json(&body)
                .send()
                .await?
                .json()
                .await
        })
        .with_context(|| format!("asking {rpc} for block {n}"))?;
    let Some(hash) = answer["result"]["hash"].as_str() else {
        bail!("block {n} is not mined yet on {rpc}: the beacon waits for it");
    };
    Ok(hash.trim_start_matches("0x").to_owned())
}

fn beacon(rpc: Option<url::Url>, hash: Option<String>, folder: &Path) -> anyhow::Result<()> {
    let mut t = read_transcript(folder)?;
    ensure!(
        t.steps.iter().any(|s| s.kind == "contribution"),
        "no party has contributed yet"
    );
    ensure!(
        !t.steps.iter().any(|s| s.kind == "beacon"),
        "the ceremony already has its beacon"
    );
    let hash = match (t.beacon_block, rpc, hash) {
        (Some(block), Some(rpc), None) => block_hash(&rpc, block)?,
        (Some(block), _, _) => {
            bail!("--rpc: the beacon is block {block}'s hash, read from the chain")
        }
        (None, _, Some(hash)) => hash,
        (None, _, None) => {
            bail!("--hash: no beacon block was announced at init, so give the beacon")
        }
    };
    ensure!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "the beacon must be 32 bytes in hex, not {hash:?}"
    );
    let from = last_zkey(&t)?.file.clone();
    let to = next_zkey(&t);
    snarkjs_step(
        folder,
        &["zkey", "beacon", &from, &to, &hash, "10", "-n=beacon"],
    )?;
    record(folder, &mut t, "beacon", "beacon", Some(hash), to)
}

/// A ceremony's folder that passed every check.
pub(super) struct Checked {
    transcript: Transcript,
    /// sha256 of the final key's compressed verifying key.
    pub(super) vk_sha256: String,
    /// Who took part, in order; the beacon last.
    pub(super) steps: Vec<String>,
    /// Whose phase 1 the key rests on.
    pub(super) phase1: Phase1,
    /// What `snarkjs zkey verify` printed.
    snarkjs_said: String,
}

/// Whose phase 1 a ceremony rests on, as found from the file itself.
pub(super) enum Phase1 {
    /// A published public file, known by its blake2b-512.
    Published(Published, String),
    /// Not a published file, but the blake2b-512 the user was given.
    Pinned(String),
    /// Neither: only as good as whoever made it.
    Unknown(String),
}

impl Phase1 {
    /// Hashes `ptau`; refuses it when `pinned` is given and is not its hash.
    fn of(ptau: &Path, pinned: Option<&str>) -> anyhow::Result<Self> {
        let blake2b = slaproof_circuits::ptau::blake2b_file(ptau)
            .with_context(|| format!("reading {}", ptau.display()))?;
        if let Some(pin) = pinned {
            ensure!(
                pin.trim().eq_ignore_ascii_case(&blake2b),
                "{}: blake2b-512 {blake2b} is not the {} given with --ptau-blake2b: another or a \
                 changed phase 1",
                ptau.display(),
                pin.trim()
            );
        }
        Ok(match slaproof_circuits::ptau::published(&blake2b) {
            Some(p) => Self::Published(p, blake2b),
            None if pinned.is_some() => Self::Pinned(blake2b),
            None => Self::Unknown(blake2b),
        })
    }

    fn blake2b(&self) -> &str {
        match self {
            Self::Published(_, h) | Self::Pinned(h) | Self::Unknown(h) => h,
        }
    }

    /// What a verdict may rest on, or why nothing vouches for it.
    pub(super) fn trusted(&self) -> Result<String, String> {
        match self {
            Self::Published(p, _) => Ok(p.describe()),
            Self::Pinned(h) => Ok(format!(
                "the phase 1 with blake2b-512 {h}, as pinned (--ptau-blake2b)"
            )),
            Self::Unknown(h) => Err(format!(
                "the phase 1 (blake2b-512 {h}) is not a published one and was not pinned \
                 (--ptau-blake2b): whoever made it could forge"
            )),
        }
    }

    fn describe(&self) -> String {
        match self.trusted() {
            Ok(said) | Err(said) => said,
        }
    }
}

/// Every check anyone can run (`ceremony verify`, and `slaproof verify
/// --ceremony`): the r1cs rebuilt from this build's source, the phase-1
/// file and every step's key against the transcript, `snarkjs zkey
/// verify` over the newest key, and the key's own record of its steps.
pub(super) fn check(ptau: &Path, pinned: Option<&str>, folder: &Path) -> anyhow::Result<Checked> {
    let t = read_transcript(folder)?;
    let circuit = circuit_of(&t)?;
    let r1cs = slaproof_circuits::r1cs::export(circuit, t.size)?;
    ensure!(
        r1cs.sha256() == t.r1cs.sha256,
        "the r1cs rebuilt from this source ({}) is not the ceremony's ({}): another circuit or version",
        r1cs.sha256(),
        t.r1cs.sha256
    );
    std::fs::write(folder.join(&t.r1cs.file), &r1cs.bytes)?;
    let ptau_sha256 = sha256_file(ptau)?;
    ensure!(
        ptau_sha256 == t.ptau_sha256,
        "{}: sha256 {ptau_sha256} is not the ceremony's phase 1 ({})",
        ptau.display(),
        t.ptau_sha256
    );
    let phase1 = Phase1::of(ptau, pinned)?;
    for step in &t.steps {
        let found = sha256_file(&folder.join(&step.zkey.file))?;
        ensure!(
            found == step.zkey.sha256,
            "{}: sha256 {found} is not the transcript's {}",
            step.zkey.file,
            step.zkey.sha256
        );
    }
    let last = last_zkey(&t)?.file.clone();
    let ptau = std::fs::canonicalize(ptau)?;
    let output = snarkjs()
        .args([
            "zkey",
            "verify",
            &t.r1cs.file,
            &ptau.to_string_lossy(),
            &last,
        ])
        .current_dir(folder)
        .output()
        .context(
            "running snarkjs zkey verify: set SLAPROOF_SNARKJS, or run `npm ci --prefix circuits`",
        )?;
    let snarkjs_said = String::from_utf8_lossy(&output.stdout).into_owned();
    ensure!(
        output.status.success() && snarkjs_said.contains("ZKey Ok!"),
        "snarkjs zkey verify refused {last}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The key's own record of its steps is the transcript's.
    let key = slaproof_circuits::zkey::read(&std::fs::read(folder.join(&last))?, circuit, t.size)?;
    let recorded: Vec<_> = t.steps.iter().skip(1).map(|s| s.name.as_str()).collect();
    let inside: Vec<_> = key.contributions.iter().map(|c| c.name.as_str()).collect();
    ensure!(
        recorded == inside,
        "the key records the steps {inside:?}, the transcript {recorded:?}"
    );
    let steps = inside.iter().map(|s| (*s).to_owned()).collect();
    let vk_sha256 = slaproof_circuits::VerifierKey::of(circuit, t.size, key.pk.vk).sha256()?;
    Ok(Checked {
        transcript: t,
        vk_sha256,
        steps,
        phase1,
        snarkjs_said,
    })
}

fn verify(ptau: &Path, pinned: Option<&str>, folder: &Path) -> anyhow::Result<Transcript> {
    let checked = check(ptau, pinned, folder)?;
    print!("{}", checked.snarkjs_said);
    println!("phase 1: {}", checked.phase1.describe());
    let t = checked.transcript;
    println!(
        "ceremony verified: {} {} with {} steps ({}); final verifying key sha256 {}",
        t.circuit,
        t.size,
        checked.steps.len(),
        checked.steps.join(", "),
        checked.vk_sha256
    );
    Ok(t)
}

fn finalize(ptau: &Path, pinned: Option<&str>, folder: &Path, dir: &Path) -> anyhow::Result<()> {
    let t = verify(ptau, pinned, folder)?;
    ensure!(
        t.steps.last().is_some_and(|s| s.kind == "beacon"),
        "the ceremony has not ended with its beacon: run `slaproof ceremony beacon`"
    );
    let circuit = circuit_of(&t)?;
    let last = last_zkey(&t)?;
    let zkey = std::fs::read(folder.join(&last.file))?;
    let manifest = slaproof_circuits::keys::import_ceremony_keys(
        dir,
        circuit,
        t.size,
        &zkey,
        Some(t.ptau_sha256.clone()),
    )?;
    let beside = dir.join(format!("{}-{}.ceremony.json", t.circuit, t.size));
    std::fs::write(&beside, serde_json::to_vec_pretty(&t)?)
        .with_context(|| format!("writing {}", beside.display()))?;
    println!(
        "{} keys for size {} in {}",
        t.circuit,
        t.size,
        dir.display()
    );
    println!("  {}", manifest.provenance.describe());
    println!(
        "  verifying key  {}  sha256 {}",
        manifest.verifying_key.file, manifest.verifying_key.sha256
    );
    Ok(())
}
