//! The scratch database and the server under test, and one shape measured
//! on a fresh server: its answers and its peak resident memory.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::args::Args;
use crate::bodies::{Shape, now_rfc3339};
use slaproof_store::scratch::Scratch;

/// The ingest process under test, at its default settings.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    async fn start(args: &Args, scratch: &Scratch) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let address = format!("127.0.0.1:{port}");
        let child = Command::new(&args.slaproof)
            .args(["serve", "ingest"])
            // No slaproof.toml from the working folder.
            .current_dir(std::env::temp_dir())
            .env("SLAPROOF_DATABASE__URL", scratch.service_url())
            .env("SLAPROOF_DATABASE__MIGRATE_ON_START", "false")
            .env("SLAPROOF_SERVER__LISTEN", &address)
            .env("SLAPROOF_LOG__LEVEL", "error")
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {}: {e}", args.slaproof.display()))?;
        let server = Self { child, address };
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(r) = client
                .get(format!("http://{}/readyz", server.address))
                .send()
                .await
                && r.status().is_success()
            {
                return Ok(server);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("the ingest server did not become ready")
    }

    fn status_kib(pid: u32, field: &str) -> Option<u64> {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one shape did to a fresh server.
pub(crate) struct Measured {
    pub(crate) statuses: Vec<(u16, usize)>,
    pub(crate) largest_answer: usize,
    pub(crate) idle_kib: u64,
    pub(crate) peak_kib: u64,
    pub(crate) killed: bool,
    pub(crate) secs: f64,
}

pub(crate) async fn measure(
    args: &Args,
    scratch: &Scratch,
    keys: &[String],
    shape: &Shape,
) -> anyhow::Result<Measured> {
    let mut server = Server::start(args, scratch).await?;
    let pid = server.child.id();
    let client = reqwest::Client::new();
    // One small valid request first, so the idle figure includes a warm
    // pool and a used gate.
    let warm = client
        .post(format!("http://{}/v1/events", server.address))
        .bearer_auth(&keys[0])
        .json(&serde_json::json!([{"time": now_rfc3339(), "service": "warm"}]))
        .send()
        .await?;
    anyhow::ensure!(warm.status().is_success(), "warm-up: {}", warm.status());
    let idle_kib = Server::status_kib(pid, "VmHWM:").unwrap_or(0);

    let killed = Arc::new(AtomicBool::new(false));
    let sampled_peak = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (killed, sampled_peak, stop) = (
            Arc::clone(&killed),
            Arc::clone(&sampled_peak),
            Arc::clone(&stop),
        );
        let kill_kib = args.kill_mib * 1024;
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Some(rss) = Server::status_kib(pid, "VmRSS:") {
                    sampled_peak.fetch_max(rss, Ordering::Relaxed);
                    if rss > kill_kib {
                        killed.store(true, Ordering::Relaxed);
                        let _ = nix_kill(pid);
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };

    let concurrency = slaproof_ingest::Settings::default().max_in_flight;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..concurrency {
        let mut request = client
            .post(format!("http://{}{}", server.address, shape.path))
            .bearer_auth(&keys[i % keys.len()])
            .header("content-type", shape.content_type)
            .timeout(Duration::from_secs(600))
            .body(shape.body.clone());
        if shape.gzip {
            request = request.header("content-encoding", "gzip");
        }
        tasks.spawn(async move {
            match request.send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let len = response.bytes().await.map_or(0, |b| b.len());
                    (status, len)
                }
                Err(_) => (0, 0),
            }
        });
    }
    let mut statuses: Vec<(u16, usize)> = Vec::new();
    let mut largest_answer = 0;
    while let Some(done) = tasks.join_next().await {
        let (status, len) = done.unwrap_or((0, 0));
        largest_answer = largest_answer.max(len);
        match statuses.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => statuses.push((status, 1)),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    statuses.sort_unstable();
    let killed = killed.load(Ordering::Relaxed);
    let peak_kib = if killed {
        sampled_peak.load(Ordering::Relaxed)
    } else {
        Server::status_kib(pid, "VmHWM:")
            .unwrap_or(0)
            .max(sampled_peak.load(Ordering::Relaxed))
    };
    let _ = server.child.kill();
    let _ = server.child.wait();
    Ok(Measured {
        statuses,
        largest_answer,
        idle_kib,
        peak_kib,
        killed,
        secs,
    })
}

/// SIGKILL through `kill(1)`: this crate forbids unsafe code and has no
/// signal crate; the child handle is owned by the measuring task.
fn nix_kill(pid: u32) -> std::io::Result<()> {
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .map(|_| ())
}
