//! A local chain: anvil (npm `@foundry-rs/anvil`), started for `slaproof up`
//! and the tests, stopped when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use secrecy::SecretString;
use url::Url;

/// anvil's first development account's private key. Public knowledge (anvil
/// prints it on start): only ever used against a local anvil.
pub const DEV_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// The development key as a secret, for [`crate::Settings::local`].
pub fn dev_key() -> SecretString {
    SecretString::from(DEV_KEY)
}

/// The development key's address: the attester of a chain `up` runs.
pub fn dev_address() -> alloy::primitives::Address {
    DEV_KEY
        .parse::<alloy::signers::local::PrivateKeySigner>()
        .expect("anvil's first development key is a key")
        .address()
}

/// The anvil binary: from `contracts/node_modules` under `root` (the
/// per-platform package npm installs, or the `dist/` its install script
/// downloads), else `anvil` on the `PATH`. Run directly rather than through
/// the package's node wrapper, so that killing the child stops the node.
pub fn binary(root: &Path) -> Option<PathBuf> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "win32",
        _ => return None,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        _ => return None,
    };
    let exe = if os == "win32" { "anvil.exe" } else { "anvil" };
    let scope = root.join("contracts/node_modules/@foundry-rs");
    let installed = [
        scope.join(format!("anvil-{os}-{arch}/bin/{exe}")),
        scope.join(format!("anvil/dist/{exe}")),
    ];
    let on_path = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(exe))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    installed.into_iter().chain(on_path).find(|p| p.is_file())
}

/// A running anvil, killed when dropped.
#[derive(Debug)]
pub struct Anvil {
    child: Child,
    url: Url,
}

impl Anvil {
    /// Starts anvil on 127.0.0.1 at `port` (0: the kernel picks one, read
    /// back from anvil's `Listening on` line, so no other process can take
    /// it in between). With `state`, the chain is loaded from that file if
    /// it exists and written back on exit, so a restarted `slaproof up`
    /// finds its deployment again. The hardfork is pinned so that gas
    /// figures do not move with anvil's default: Osaka, Ethereum mainnet's
    /// since December 2025.
    pub fn start(binary: &Path, port: u16, state: Option<&Path>) -> std::io::Result<Anvil> {
        let mut command = Command::new(binary);
        command
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--hardfork", "osaka"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(state) = state {
            command.arg("--state").arg(state);
        }
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().expect("anvil's stdout is piped");
        let (tx, rx) = mpsc::channel();
        // anvil logs every request; the reader keeps draining its stdout so
        // that a full pipe never blocks the node.
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let text = String::from_utf8_lossy(&line);
                if let Some(addr) = text.trim().strip_prefix("Listening on ") {
                    let _ = tx.send(addr.to_owned());
                }
                line.clear();
            }
        });
        let listening = rx.recv_timeout(Duration::from_secs(30));
        let mut anvil = Anvil {
            child,
            url: Url::parse("http://127.0.0.1/").expect("a valid URL"),
        };
        let addr = listening.map_err(|_| {
            std::io::Error::other("anvil did not print `Listening on <addr>` within 30 s")
        })?;
        anvil.url = Url::parse(&format!("http://{addr}"))
            .map_err(|e| std::io::Error::other(format!("anvil's address {addr}: {e}")))?;
        Ok(anvil)
    }

    /// The node's JSON-RPC URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Stops the node, letting it write its state file first.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        #[cfg(unix)]
        {
            // SIGTERM, so that anvil dumps `--state` before it exits.
            let pid = self.child.id().to_string();
            let asked = Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .is_ok_and(|s| s.success());
            if asked {
                for _ in 0..100 {
                    if matches!(self.child.try_wait(), Ok(Some(_))) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.terminate();
        }
    }
}
