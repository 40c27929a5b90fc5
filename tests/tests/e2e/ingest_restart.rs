//! A fault test: Postgres is restarted, twice, while a client keeps sending
//! and retrying; afterwards every acknowledged event is stored exactly once.
//!
//! The test needs a server of its own to restart, not the shared one: it
//! starts a private cluster in a temporary folder with `initdb` / `pg_ctl`
//! (found as `scripts/test` finds them; run as the `postgres` user when the
//! test runs as root) and stops it at the end, also when the test fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use slaproof_domain::ids::TenantId;
use slaproof_ingest::loadgen::{LoadPlan, run};
use slaproof_store::{Database, ingest_keys, tenants};
use slaproof_tests::{TestDatabase, spawn_app_on};
use sqlx::postgres::PgConnectOptions;

/// The folder holding `initdb` and `pg_ctl`: on the `PATH`, else the
/// newest `/usr/lib/postgresql/*/bin`, else `/usr/local/pgsql/bin`.
fn pg_bin_dir() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    if let Some(dir) = on_path {
        return dir;
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| {
            dirs.filter_map(|d| d.ok())
                .map(|d| d.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    versions.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    versions
        .into_iter()
        .rev()
        .chain([PathBuf::from("/usr/local/pgsql/bin")])
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        .expect("PostgreSQL server binaries (initdb, pg_ctl) are needed for the restart test")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A Postgres cluster of the test's own, stopped and deleted when dropped.
struct PrivateCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl PrivateCluster {
    fn start() -> Self {
        let bin = pg_bin_dir();
        // Under /tmp: every folder on the way must be enterable by postgres.
        let dir = std::env::temp_dir().join(format!(
            "slaproof-restart-pg-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir(&dir).unwrap();
        let as_postgres = is_root();
        if as_postgres {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            assert!(
                Command::new("chown")
                    .arg("postgres")
                    .arg(&dir)
                    .status()
                    .unwrap()
                    .success(),
                "chown postgres {}",
                dir.display()
            );
        }
        // A free port now; taken by the cluster a moment later.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self {
            bin,
            dir,
            port,
            as_postgres,
        };
        cluster.run(
            "initdb",
            &["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"],
        );
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=100",
            cluster.dir.display()
        );
        let log = cluster.dir.join("log");
        cluster.run(
            "pg_ctl",
            &["-w", "-l", log.to_str().unwrap(), "-o", &options, "start"],
        );
        cluster
    }

    /// A server program on the cluster's folder, as postgres if root.
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        cmd.arg("-D").arg(&self.dir).args(args);
        cmd
    }

    /// Runs a server program and checks it succeeded. `pg_ctl` starts the
    /// server, which would inherit captured output pipes and hold them open
    /// forever: its output goes nowhere, the server's to the log.
    fn run(&self, program: &str, args: &[&str]) {
        let mut cmd = self.command(program, args);
        if program == "pg_ctl" {
            let status = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
            assert!(
                status.success(),
                "{cmd:?} failed; see {}",
                self.dir.join("log").display()
            );
            return;
        }
        let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A fast shutdown (every session is ended, in-flight transactions roll
    /// back, committed ones are on disk) and a start with the same options.
    fn restart(&self) {
        self.run("pg_ctl", &["-w", "-m", "fast", "restart"]);
    }

    fn admin(&self) -> PgConnectOptions {
        PgConnectOptions::new()
            .host("127.0.0.1")
            .port(self.port)
            .username("postgres")
            .database("postgres")
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let stopped = self
            .command("pg_ctl", &["-w", "-m", "immediate", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            eprintln!(
                "warning: could not stop the private cluster in {}",
                self.dir.display()
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn tenant_with_key(db: &Database, name: &str) -> (TenantId, String) {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "test").await.unwrap();
    tx.commit().await.unwrap();
    (tenant, key.reveal().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_restarted_while_sending_every_acknowledged_event_is_stored_once() {
    let cluster = tokio::task::spawn_blocking(PrivateCluster::start)
        .await
        .unwrap();
    let cluster = std::sync::Arc::new(cluster);
    let database = TestDatabase::create_on(cluster.admin()).await;
    let app = spawn_app_on(database, |_| {}).await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;

    // About eight seconds of traffic at 1,000 events a second, in batches
    // of 50 on four connections; Postgres restarts at 2 s and at 5 s.
    const EVENTS: u64 = 8_000;
    let load = tokio::spawn(run(LoadPlan {
        url: format!("http://{}", app.address),
        key,
        rate: Some(1_000.0),
        duration: Some(Duration::from_secs(60)),
        events: Some(EVENTS),
        batch: 50,
        connections: 4,
        incident: None,
        diurnal: false,
        customers: std::sync::Arc::new(slaproof_ingest::loadgen::Customers::demo()),
    }));
    let mut restarts = 0;
    let mut restarted_at = Vec::new();
    for wait in [2, 3] {
        tokio::time::sleep(Duration::from_secs(wait)).await;
        assert!(
            !load.is_finished(),
            "the client finished before restart {}",
            restarts + 1
        );
        let cluster = cluster.clone();
        let before = chrono::Utc::now();
        tokio::task::spawn_blocking(move || cluster.restart())
            .await
            .unwrap();
        restarted_at.push((before, chrono::Utc::now()));
        restarts += 1;
    }
    let report = tokio::time::timeout(Duration::from_secs(120), load)
        .await
        .expect("the client finishes within two minutes")
        .unwrap()
        .unwrap();

    eprintln!("{report:?}");
    assert_eq!(restarts, 2);
    // A restart either fails the batches in flight (503, retried: the
    // report's `throttled`) or, when short, is waited out by the pool's
    // reconnects; either way traffic must have been stored on both sides
    // of both restarts for the test to have tested anything.
    assert_eq!(report.acknowledged, EVENTS, "{report:?}");
    assert_eq!(report.rejected, 0, "{report:?}");
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let (rows, distinct): (i64, i64) =
        sqlx::query_as("SELECT count(*), count(DISTINCT request_id) FROM events")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    for (i, (before, after)) in restarted_at.iter().enumerate() {
        let (earlier, later): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE received_at < $1), count(*) FILTER (WHERE received_at > $2) FROM events",
        )
        .bind(before)
        .bind(after)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        assert!(
            earlier > 0 && later > 0,
            "restart {} fell outside the traffic: {earlier} events stored before it, {later} after ({report:?}, cluster in {})",
            i + 1,
            cluster.dir().display()
        );
    }
    tx.commit().await.unwrap();
    assert_eq!(
        (rows, distinct),
        (EVENTS as i64, EVENTS as i64),
        "each acknowledged event exactly once"
    );
    app.stop().await.unwrap();
}
