//! Verifier contracts for the verified path: one per verifying key,
//! generated from the key, compiled with the pinned solc-js
//! (`contracts/compile.mjs`), deployed, and registered with slaproof's
//! resolver under the key's hash. Keys are made per deployment, so their
//! verifiers cannot ship precompiled.

use std::path::{Path, PathBuf};
use std::process::Command;

use alloy::primitives::{Address, Bytes};
use slaproof_chain::{Chain, Deployment, deploy};
use slaproof_circuits::VerifierKey;
use slaproof_circuits::export::solidity_verifier;

use crate::bundle::hex_word;
use crate::error::AttestationError;

/// What became of one key's verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub slots: usize,
    pub vk_sha256: String,
    pub verifier: Address,
    /// Deployed and registered now (`false`: it was already).
    pub new: bool,
}

/// Compiles a generated verifier's source to creation bytecode.
pub trait Compiler: Send + Sync {
    fn compile(&self, source: &str) -> Result<Bytes, AttestationError>;
}

/// npm `solc` through `contracts/compile.mjs`, run with node.
#[derive(Debug, Clone)]
pub struct SolcJs {
    /// The workspace's `contracts/` folder, with `node_modules` installed.
    pub contracts_dir: PathBuf,
}

impl SolcJs {
    /// The compiler in `contracts_dir` when node and its solc are installed.
    pub fn find(contracts_dir: &Path) -> Option<SolcJs> {
        let node = Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        let solc = contracts_dir.join("node_modules/solc/soljson.js").is_file();
        (node && solc).then(|| SolcJs {
            contracts_dir: contracts_dir.to_owned(),
        })
    }
}

impl Compiler for SolcJs {
    fn compile(&self, source: &str) -> Result<Bytes, AttestationError> {
        let dir = tempfile::tempdir().map_err(|e| AttestationError::io(Path::new("tmp"), e))?;
        let file = dir.path().join("Verifier.sol");
        std::fs::write(&file, source).map_err(|e| AttestationError::io(&file, e))?;
        let out = dir.path().join("out");
        let run = Command::new("node")
            .arg(self.contracts_dir.join("compile.mjs"))
            .arg("--out")
            .arg(&out)
            .arg(&file)
            .output()
            .map_err(|e| AttestationError::io(Path::new("node"), e))?;
        if !run.status.success() {
            return Err(AttestationError::Invalid(format!(
                "solc refused the generated verifier: {}",
                String::from_utf8_lossy(&run.stderr)
            )));
        }
        let path = out.join("Verifier.json");
        let artifact: serde_json::Value = std::fs::read(&path)
            .map_err(|e| AttestationError::io(&path, e))
            .and_then(|b| {
                serde_json::from_slice(&b)
                    .map_err(|e| AttestationError::Invalid(format!("{}: {e}", path.display())))
            })?;
        artifact["bytecode"]
            .as_str()
            .and_then(|hex| hex.parse::<Bytes>().ok())
            .filter(|code| !code.is_empty())
            .ok_or_else(|| AttestationError::Invalid(format!("{} has no bytecode", path.display())))
    }
}

/// Deploys and registers the verifier of each key the resolver has none
/// for (the chain client's account must own the resolver); leaves the
/// others as they are.
pub async fn register_missing(
    chain: &Chain,
    deployment: &Deployment,
    keys: &[(usize, VerifierKey)],
    compiler: &dyn Compiler,
) -> Result<Vec<Registered>, AttestationError> {
    let mut done = Vec::new();
    for (slots, key) in keys {
        let vk_sha256 = key.sha256()?;
        let vk_hash = hex_word(&vk_sha256)?;
        if let Some(verifier) = deploy::registered_verifier(chain, deployment, vk_hash).await? {
            done.push(Registered {
                slots: *slots,
                vk_sha256,
                verifier,
                new: false,
            });
            continue;
        }
        let source = solidity_verifier(key.verifying_key())?;
        let code = compiler.compile(&source)?;
        let (verifier, _) = chain.deploy(code, "deploying a verifier contract").await?;
        deploy::register_verifier(chain, deployment, vk_hash, verifier).await?;
        tracing::info!(slots, %vk_sha256, %verifier, "registered the verifier of a key");
        done.push(Registered {
            slots: *slots,
            vk_sha256,
            verifier,
            new: true,
        });
    }
    Ok(done)
}
