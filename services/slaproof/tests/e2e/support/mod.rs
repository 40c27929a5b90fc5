//! What the binary's end-to-end tests share: a clean `slaproof` command,
//! a `slaproof up` started and read up to its banner, and stopping it (also
//! when an assertion fails, so no private Postgres outlives a test).

#![allow(dead_code)] // each test binary uses its own part of it

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_slaproof");

/// A command with a clean slaproof environment (no `SLAPROOF_*` or
/// `OTEL_*` of the developer's), run in `dir` so that no `slaproof.toml`
/// of theirs is picked up.
pub(crate) fn slaproof(dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(dir).stdin(Stdio::null());
    for (key, _) in std::env::vars() {
        if key.starts_with("SLAPROOF_") || key.starts_with("OTEL_") {
            command.env_remove(key);
        }
    }
    command.env("NO_COLOR", "1").env("RUST_LOG", "warn");
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

/// GET `path` of `url` with a bearer token; the status and the body
/// (`null` when it is not JSON).
pub(crate) async fn get_with(url: &str, path: &str, token: &str) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .get(format!("{url}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A directory the unprivileged Postgres user can enter (tempdirs are 0700).
pub(crate) fn shared_tempdir(prefix: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A running `slaproof up` and what it printed on start. Dropping it stops
/// it.
pub(crate) struct Up {
    pub child: Child,
    pub banner: String,
    pub url: String,
    /// What it prints after the banner, line by line.
    pub later: mpsc::Receiver<String>,
}

/// Starts `command` (a `slaproof up` with its environment set) and waits
/// for its banner, at most 180 s.
pub(crate) fn start(mut command: Command) -> Up {
    // A history costs a first start a minute of writing and the services
    // minutes of work: only the test that follows it asks for one.
    if !command
        .get_envs()
        .any(|(key, _)| key == "SLAPROOF_DEMO__HISTORY_RATE")
    {
        command.env("SLAPROOF_DEMO__HISTORY_RATE", "0");
    }
    let mut child = command
        .arg("up")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting slaproof up");
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut banner = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok(line) => {
                banner.push_str(&line);
                banner.push('\n');
                if line.starts_with("Stop with Ctrl-C") {
                    break;
                }
            }
            Err(_) => {
                let _ = child.kill();
                panic!("slaproof up did not come up; it printed:\n{banner}");
            }
        }
    }
    let url = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("HTTP"))
        .and_then(|l| l.split_whitespace().next())
        .expect("the banner names the HTTP address")
        .to_owned();
    Up {
        child,
        banner,
        url,
        later: received,
    }
}

impl Up {
    /// The demo ingest key the banner shows.
    pub(crate) fn ingest_key(&self) -> String {
        self.banner
            .lines()
            .find_map(|l| l.trim().strip_prefix("Ingest key"))
            .map(|k| k.trim().to_owned())
            .expect("the banner shows the demo ingest key")
    }

    /// Waits up to `within` for a line after the banner containing
    /// `needle`; returns it and the lines after it up to the next empty one.
    pub(crate) fn wait_for(&self, needle: &str, within: Duration) -> Option<Vec<String>> {
        let deadline = Instant::now() + within;
        let mut found: Option<Vec<String>> = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.later.recv_timeout(left).ok()?;
            match &mut found {
                None if line.contains(needle) => found = Some(vec![line]),
                None => {}
                Some(_) if line.trim().is_empty() => return found,
                Some(lines) => lines.push(line),
            }
        }
    }

    /// Sends SIGTERM; the exit status, or `None` (and a kill) after 60 s.
    pub(crate) fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }

    /// Stops it and asserts a clean exit.
    pub(crate) fn terminate(mut self) {
        match self.stop() {
            Some(status) => assert!(
                status.success(),
                "slaproof up exited with {status} after SIGTERM"
            ),
            None => panic!("slaproof up did not exit within 60 s of SIGTERM"),
        }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}
