//! The workspace's npm tools that `slaproof up` installs on its first start, as `scripts/test` does: the pages' build tools (`frontend/`) and the local chain's (`contracts/`: anvil and solc), so that a fresh clone's first command anchors on a chain of its own.

use std::path::Path;

/// The copy of `package-lock.json` an install leaves in `node_modules`,
/// which `scripts/test` compares to skip installing again.
const STAMP: &str = "node_modules/.slaproof-installed-lock.json";

/// `npm ci` in `dir` (registry only, no audit), saying what it does;
/// whether it succeeded. Blocking: call it off the runtime.
pub(crate) fn ci(dir: &Path, what: &str) -> bool {
    eprintln!("installing {what} in {} (npm ci)…", dir.display());
    let installed = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    if installed {
        // Best effort: without the stamp scripts/test installs once more.
        let _ = std::fs::copy(dir.join("package-lock.json"), dir.join(STAMP));
    }
    installed
}

/// `npm run <script>` in `dir`; whether it succeeded. Blocking.
pub(crate) fn run(dir: &Path, script: &str) -> bool {
    std::process::Command::new("npm")
        .args(["run", script])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_clones_contracts_folder_gets_anvil() {
        // #34: `slaproof up` on a fresh clone said "no anvil found:
        // anchoring is off" until one ran `npm ci --prefix contracts` by
        // hand. The install `up` now runs, on a copy of the workspace's
        // contracts manifest, yields the anvil binary it then starts.
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = tempfile::tempdir().unwrap();
        let contracts = root.path().join("contracts");
        std::fs::create_dir(&contracts).unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(workspace.join("contracts").join(file), contracts.join(file)).unwrap();
        }
        // (An anvil on the PATH is found too; none under the copy yet.)
        let before = slaproof_chain::anvil::binary(root.path());
        assert!(before.is_none_or(|p| !p.starts_with(root.path())));
        assert!(ci(&contracts, "the local chain's tools"), "npm ci failed");
        let anvil = slaproof_chain::anvil::binary(root.path()).expect("anvil installed");
        assert!(anvil.starts_with(root.path()), "{}", anvil.display());
        assert!(contracts.join(STAMP).is_file());
    }
}
