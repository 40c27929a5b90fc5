//! snarkjs, the verifier and ceremony tool the ecosystem trusts, run from `circuits/node_modules` by the tests that check our keys and proofs against it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// snarkjs as installed by `npm ci --prefix circuits`.
pub(crate) fn snarkjs() -> Option<PathBuf> {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/snarkjs/build/cli.cjs");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    (node && cli.exists()).then_some(cli)
}

pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Runs `snarkjs ARGS` in `dir`; whether it succeeded, and what it printed.
pub(crate) fn run(cli: &Path, dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("node")
        .arg(cli)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run node");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

pub(crate) fn snarkjs_verify(cli: &Path, dir: &Path) -> (bool, String) {
    let files = ["verification_key.json", "public.json", "proof.json"];
    let (ok, text) = run(cli, dir, &[&["groth16", "verify"][..], &files[..]].concat());
    (ok && text.contains("OK!"), text)
}
