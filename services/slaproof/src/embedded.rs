//! The private Postgres cluster `slaproof up` runs when no database is
//! configured: made with the system's `initdb`, run as a child process, and
//! stopped with slaproof.
//!
//! Postgres refuses to run as root, and this is how CI and many containers
//! run us; then the cluster runs as an unprivileged system user
//! (`embedded.run_as`, `postgres` by default) over a directory it owns. The
//! child gets its own process group, so a Ctrl-C in the terminal reaches
//! slaproof alone and slaproof stops the cluster after its services; and it
//! is told to stop if slaproof dies (`PR_SET_PDEATHSIG`), so even a killed
//! slaproof leaves no Postgres behind.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, User};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgConnectOptions;

use crate::config::EmbeddedConfig;

/// The cluster's superuser: owns the schema and runs migrations.
const OWNER: &str = "slaproof";
/// The services' login role: a member of `slaproof_service`, behind RLS.
const SERVICE: &str = "slaproof_app";
const DATABASE: &str = "slaproof";
const STATE_FILE: &str = "embedded.json";
const LOG_FILE: &str = "postgres.log";

/// Why the embedded cluster could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EmbeddedError {
    #[error(
        "no database is configured and no PostgreSQL server binaries (initdb, postgres) were found \
         on PATH or in {searched}.\n\
         Either install them (Debian/Ubuntu: `apt-get install postgresql`; Fedora: \
         `dnf install postgresql-server`; macOS: `brew install postgresql@16`) or point \
         SLAPROOF_EMBEDDED__BIN_DIR at their folder, or use an existing database with \
         SLAPROOF_DATABASE__URL=postgres://…"
    )]
    BinariesNotFound { searched: String },
    #[error(
        "slaproof runs as root and Postgres refuses to; the cluster runs as the system user \
         {user:?}, which does not exist. Create it (`useradd --system {user}`) or set \
         SLAPROOF_EMBEDDED__RUN_AS to another unprivileged user"
    )]
    NoRunAsUser { user: String },
    #[error(
        "the system user {user:?} that runs Postgres cannot enter {dir}; choose an \
         embedded.data_dir it can reach (e.g. SLAPROOF_EMBEDDED__DATA_DIR=/var/tmp/slaproof) or \
         allow it with `chmod o+x {dir}`"
    )]
    Unreachable { user: String, dir: PathBuf },
    #[error(
        "a Postgres (pid {pid}) started by an earlier `slaproof up` still runs on {dir}; stop it \
         (`kill -INT {pid}`) or that `slaproof up`, then start again"
    )]
    AlreadyRunning { pid: i32, dir: PathBuf },
    #[error(
        "no database is configured and no embedded database is running in {dir}; start \
         `slaproof up` (in another terminal) or set SLAPROOF_DATABASE__URL"
    )]
    NotRunning { dir: PathBuf },
    #[error("{step} failed: {detail}")]
    Step { step: String, detail: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> EmbeddedError {
    let context = context.into();
    move |source| EmbeddedError::Io { context, source }
}

/// What is kept between starts: generated passwords, and while running, the
/// port, so that CLI commands in another terminal find the cluster.
#[derive(Serialize, Deserialize)]
struct State {
    owner_password: String,
    service_password: String,
    port: Option<u16>,
    pid: Option<i32>,
}

/// The PostgreSQL server binaries to use.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub initdb: PathBuf,
    pub postgres: PathBuf,
}

impl Binaries {
    /// `bin_dir` when given, else PATH, else the usual install folders
    /// (newest version first).
    pub(crate) fn find(bin_dir: Option<&Path>) -> Result<Self, EmbeddedError> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = bin_dir {
            candidates.push(dir.to_owned());
        } else {
            if let Some(path) = std::env::var_os("PATH") {
                candidates.extend(std::env::split_paths(&path));
            }
            for pattern_root in ["/usr/lib/postgresql", "/usr/local/opt", "/opt/homebrew/opt"] {
                let mut versions: Vec<PathBuf> = fs::read_dir(pattern_root)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            pattern_root == "/usr/lib/postgresql" || n.starts_with("postgresql")
                        })
                    })
                    .collect();
                // Newest first: "16" sorts after "15", "postgresql@17" after "@16".
                versions.sort_by_key(|p| {
                    let name = p
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default()
                        .to_owned();
                    let digits: String = name.chars().filter(char::is_ascii_digit).collect();
                    std::cmp::Reverse(digits.parse::<u32>().unwrap_or(0))
                });
                candidates.extend(versions.into_iter().map(|p| p.join("bin")));
            }
            for version in (12..=20).rev() {
                candidates.push(PathBuf::from(format!("/usr/pgsql-{version}/bin")));
            }
            candidates.push(PathBuf::from("/usr/local/pgsql/bin"));
            candidates.push(PathBuf::from(
                "/Applications/Postgres.app/Contents/Versions/latest/bin",
            ));
        }
        for dir in &candidates {
            let initdb = dir.join("initdb");
            let postgres = dir.join("postgres");
            if is_executable(&initdb) && is_executable(&postgres) {
                return Ok(Self { initdb, postgres });
            }
        }
        Err(EmbeddedError::BinariesNotFound {
            searched: if bin_dir.is_some() {
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                "/usr/lib/postgresql/*/bin, /usr/pgsql-*/bin, /usr/local/pgsql/bin, Homebrew and Postgres.app"
                    .to_owned()
            },
        })
    }
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The unprivileged user the cluster runs as, when we are root.
#[derive(Debug, Clone)]
struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
}

fn run_as(config: &EmbeddedConfig) -> Result<Option<RunAs>, EmbeddedError> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let user = User::from_name(&config.run_as)
        .ok()
        .flatten()
        .ok_or_else(|| EmbeddedError::NoRunAsUser {
            user: config.run_as.clone(),
        })?;
    Ok(Some(RunAs {
        name: user.name,
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    }))
}

/// A running embedded cluster. Stop it with [`EmbeddedPostgres::stop`];
/// dropping it stops it too. `Debug` leaves out the connection options and
/// the password (they would reach logs).
pub(crate) struct EmbeddedPostgres {
    child: Option<Child>,
    data_dir: PathBuf,
    cluster_dir: PathBuf,
    port: u16,
    owner: PgConnectOptions,
    service: PgConnectOptions,
    service_password: String,
    version: String,
}

impl std::fmt::Debug for EmbeddedPostgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedPostgres")
            .field("data_dir", &self.data_dir)
            .field("port", &self.port)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl EmbeddedPostgres {
    /// Creates the cluster on first use, starts it and waits until it
    /// accepts connections. Call it from the main thread, before any async
    /// runtime starts: the parent-death signal is tied to the thread that
    /// spawns the child, and first-time set-up runs a runtime of its own.
    pub(crate) fn start(config: &EmbeddedConfig) -> Result<Self, EmbeddedError> {
        let binaries = Binaries::find(config.bin_dir.as_deref())?;
        let run_as = run_as(config)?;
        fs::create_dir_all(&config.data_dir)
            .map_err(io(format!("creating {}", config.data_dir.display())))?;
        let data_dir = config
            .data_dir
            .canonicalize()
            .map_err(io(format!("resolving {}", config.data_dir.display())))?;
        let cluster_dir = data_dir.join("postgres");
        if let Some(user) = &run_as {
            check_reachable(user, &data_dir)?;
            // The data dir holds generated passwords: only we read it, but
            // the cluster's user must pass through it.
            fs::set_permissions(&data_dir, fs::Permissions::from_mode(0o711))
                .map_err(io(format!("securing {}", data_dir.display())))?;
        } else {
            fs::set_permissions(&data_dir, fs::Permissions::from_mode(0o700))
                .map_err(io(format!("securing {}", data_dir.display())))?;
        }

        let state_path = data_dir.join(STATE_FILE);
        let mut state = match fs::read(&state_path) {
            Ok(bytes) => {
                serde_json::from_slice::<State>(&bytes).map_err(|e| EmbeddedError::Step {
                    step: format!("reading {}", state_path.display()),
                    detail: e.to_string(),
                })?
            }
            Err(_) => State {
                owner_password: password(),
                service_password: password(),
                port: None,
                pid: None,
            },
        };

        if let Some(pid) = live_postmaster(&cluster_dir) {
            return Err(EmbeddedError::AlreadyRunning {
                pid,
                dir: cluster_dir,
            });
        }

        let fresh = !cluster_dir.join("PG_VERSION").exists();
        if fresh {
            init_cluster(
                &binaries,
                run_as.as_ref(),
                &data_dir,
                &cluster_dir,
                &state.owner_password,
            )?;
        }
        let version = fs::read_to_string(cluster_dir.join("PG_VERSION"))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default();

        let port = if config.port == 0 {
            free_port()?
        } else {
            config.port
        };
        let log_path = data_dir.join(LOG_FILE);
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io(format!("opening {}", log_path.display())))?;
        let log_err = log.try_clone().map_err(io("duplicating the log handle"))?;

        let mut command = Command::new(&binaries.postgres);
        command
            .arg("-D")
            .arg(&cluster_dir)
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            // The socket goes inside the cluster folder: /var/run/postgresql
            // may not exist or not be ours.
            .arg("-c")
            .arg(format!("unix_socket_directories={}", cluster_dir.display()))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        if let Some(user) = &run_as {
            command.uid(user.uid).gid(user.gid);
        }
        stop_with_parent(&mut command);
        let child = command
            .spawn()
            .map_err(io(format!("starting {}", binaries.postgres.display())))?;

        let options = |user: &str, password: &str| {
            PgConnectOptions::new()
                .host("127.0.0.1")
                .port(port)
                .username(user)
                .password(password)
        };
        let mut embedded = Self {
            child: Some(child),
            data_dir: data_dir.clone(),
            cluster_dir,
            port,
            owner: options(OWNER, &state.owner_password).database(DATABASE),
            service: options(SERVICE, &state.service_password).database(DATABASE),
            service_password: state.service_password.clone(),
            version,
        };
        embedded.wait_until_accepting(&log_path)?;
        if fresh {
            embedded.create_database(&state.owner_password)?;
        }

        state.port = Some(port);
        state.pid = embedded.child.as_ref().map(|c| c.id() as i32);
        write_private(
            &state_path,
            &serde_json::to_vec_pretty(&state).unwrap_or_default(),
        )?;
        Ok(embedded)
    }

    /// Connection options of a cluster that a `slaproof up` started in
    /// `data_dir`, for CLI commands run beside it.
    pub(crate) fn discover(config: &EmbeddedConfig) -> Result<Connections, EmbeddedError> {
        let not_running = || EmbeddedError::NotRunning {
            dir: config.data_dir.clone(),
        };
        let data_dir = config.data_dir.canonicalize().map_err(|_| not_running())?;
        let state: State = fs::read(data_dir.join(STATE_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(not_running)?;
        let port = state.port.ok_or_else(not_running)?;
        if live_postmaster(&data_dir.join("postgres")).is_none() {
            return Err(not_running());
        }
        let options = |user: &str, password: &str| {
            PgConnectOptions::new()
                .host("127.0.0.1")
                .port(port)
                .username(user)
                .password(password)
                .database(DATABASE)
        };
        Ok(Connections {
            owner: options(OWNER, &state.owner_password),
            service: options(SERVICE, &state.service_password),
        })
    }

    fn wait_until_accepting(&mut self, log_path: &Path) -> Result<(), EmbeddedError> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(EmbeddedError::Step {
                    step: "starting the embedded Postgres".to_owned(),
                    detail: format!(
                        "it exited with {status}; its log says:\n{}",
                        tail(log_path, 15)
                    ),
                });
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && self.cluster_dir.join("postmaster.pid").exists()
                && postmaster_ready(&self.cluster_dir)
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(EmbeddedError::Step {
                    step: "starting the embedded Postgres".to_owned(),
                    detail: format!(
                        "not ready after 60 s; its log says:\n{}",
                        tail(log_path, 15)
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn create_database(&self, owner_password: &str) -> Result<(), EmbeddedError> {
        // `postgres --single` would need the server stopped; psql may not be
        // installed. A one-off tokio runtime on this thread keeps start-up
        // synchronous for the caller.
        let admin = PgConnectOptions::new()
            .host("127.0.0.1")
            .port(self.port)
            .username(OWNER)
            .password(owner_password)
            .database("postgres");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io("starting a runtime"))?;
        runtime
            .block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect_with(&admin).await?;
                sqlx::query(&format!("CREATE DATABASE {DATABASE}"))
                    .execute(&mut conn)
                    .await?;
                conn.close().await
            })
            .map_err(|e| EmbeddedError::Step {
                step: "creating the embedded database".to_owned(),
                detail: e.to_string(),
            })
    }

    /// Creates the services' login role once the migrations have made
    /// `slaproof_service`. Idempotent.
    pub(crate) async fn provision_service_role(&self) -> Result<(), EmbeddedError> {
        use sqlx::Connection;
        let step = |e: sqlx::Error| EmbeddedError::Step {
            step: "creating the service role".to_owned(),
            detail: e.to_string(),
        };
        let mut conn = sqlx::PgConnection::connect_with(&self.owner)
            .await
            .map_err(step)?;
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)")
                .bind(SERVICE)
                .fetch_one(&mut conn)
                .await
                .map_err(step)?;
        if !exists {
            let password = &self.service_password;
            sqlx::query(&format!(
                "CREATE ROLE {SERVICE} LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE slaproof_service PASSWORD '{}'",
                password.replace('\'', "''")
            ))
            .execute(&mut conn)
            .await
            .map_err(step)?;
        }
        conn.close().await.map_err(step)
    }

    /// Both connections.
    pub(crate) fn connections(&self) -> Connections {
        Connections {
            owner: self.owner.clone(),
            service: self.service.clone(),
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn cluster_dir(&self) -> &Path {
        &self.cluster_dir
    }

    /// The server's major version, e.g. `15`.
    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    /// Stops the cluster with a fast shutdown (open sessions are ended,
    /// committed work is safe) and waits for it to exit.
    pub(crate) fn stop(mut self) -> Result<(), EmbeddedError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), EmbeddedError> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = Pid::from_raw(child.id() as i32);
        let _ = kill(pid, Signal::SIGINT);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    // Immediate shutdown: crash-safe, replays WAL on next start.
                    let _ = kill(pid, Signal::SIGQUIT);
                    let _ = child.wait();
                    break;
                }
            }
        }
        let state_path = self.data_dir.join(STATE_FILE);
        if let Some(mut state) = fs::read(&state_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<State>(&b).ok())
        {
            state.port = None;
            state.pid = None;
            write_private(
                &state_path,
                &serde_json::to_vec_pretty(&state).unwrap_or_default(),
            )?;
        }
        Ok(())
    }
}

impl Drop for EmbeddedPostgres {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Where to connect, as the owner (migrations) and as the services.
#[derive(Debug, Clone)]
pub(crate) struct Connections {
    pub owner: PgConnectOptions,
    pub service: PgConnectOptions,
}

fn init_cluster(
    binaries: &Binaries,
    run_as: Option<&RunAs>,
    data_dir: &Path,
    cluster_dir: &Path,
    owner_password: &str,
) -> Result<(), EmbeddedError> {
    fs::create_dir_all(cluster_dir).map_err(io(format!("creating {}", cluster_dir.display())))?;
    let pwfile = data_dir.join("initdb.pw");
    write_private(&pwfile, owner_password.as_bytes())?;
    if let Some(user) = run_as {
        for path in [cluster_dir, pwfile.as_path()] {
            nix::unistd::chown(
                path,
                Some(nix::unistd::Uid::from_raw(user.uid)),
                Some(nix::unistd::Gid::from_raw(user.gid)),
            )
            .map_err(|e| EmbeddedError::Step {
                step: format!("handing {} to {}", path.display(), user.name),
                detail: e.to_string(),
            })?;
        }
    }
    fs::set_permissions(cluster_dir, fs::Permissions::from_mode(0o700))
        .map_err(io(format!("securing {}", cluster_dir.display())))?;
    let mut command = Command::new(&binaries.initdb);
    command
        .arg("-D")
        .arg(cluster_dir)
        .args([
            "-U",
            OWNER,
            "-E",
            "UTF8",
            "--locale=C",
            "--auth=scram-sha-256",
        ])
        .arg(format!("--pwfile={}", pwfile.display()))
        .stdin(Stdio::null());
    if let Some(user) = run_as {
        command.uid(user.uid).gid(user.gid);
    }
    let output = command
        .output()
        .map_err(io(format!("running {}", binaries.initdb.display())));
    let _ = fs::remove_file(&pwfile);
    let output = output?;
    if !output.status.success() {
        // A half-made cluster would make the next start fail differently.
        let _ = fs::remove_dir_all(cluster_dir);
        return Err(EmbeddedError::Step {
            step: "initdb".to_owned(),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

/// Every folder from the root to `dir` must be enterable by `user`.
fn check_reachable(user: &RunAs, dir: &Path) -> Result<(), EmbeddedError> {
    for ancestor in dir.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let Ok(meta) = fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.mode();
        let enterable = mode & 0o001 != 0
            || (meta.uid() == user.uid && mode & 0o100 != 0)
            || (meta.gid() == user.gid && mode & 0o010 != 0);
        // The data dir itself we make enterable below; its parents we leave
        // as the user set them.
        if !enterable && ancestor != dir {
            return Err(EmbeddedError::Unreachable {
                user: user.name.clone(),
                dir: ancestor.to_owned(),
            });
        }
    }
    Ok(())
}

/// The pid of a postmaster that still runs on `cluster_dir`, if any.
fn live_postmaster(cluster_dir: &Path) -> Option<i32> {
    let text = fs::read_to_string(cluster_dir.join("postmaster.pid")).ok()?;
    let pid: i32 = text.lines().next()?.trim().parse().ok()?;
    // Signal 0 checks existence; EPERM means it exists but is not ours.
    match kill(Pid::from_raw(pid), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => Some(pid),
        Err(_) => None,
    }
}

/// Whether the postmaster says it is ready (line 8 of postmaster.pid).
fn postmaster_ready(cluster_dir: &Path) -> bool {
    fs::read_to_string(cluster_dir.join("postmaster.pid"))
        .ok()
        .and_then(|t| t.lines().nth(7).map(|l| l.trim() == "ready"))
        .unwrap_or(false)
}

fn free_port() -> Result<u16, EmbeddedError> {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(io("finding a free port"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(io("finding a free port"))
}

fn password() -> String {
    let bytes: [u8; 24] = rand::rng().random();
    hex::encode(bytes)
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), EmbeddedError> {
    let tmp = path.with_extension("tmp");
    let mut file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io(format!("writing {}", tmp.display())))?;
    file.write_all(bytes)
        .map_err(io(format!("writing {}", tmp.display())))?;
    file.sync_all()
        .map_err(io(format!("writing {}", tmp.display())))?;
    fs::rename(&tmp, path).map_err(io(format!("writing {}", path.display())))
}

fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[allow(unsafe_code)]
fn stop_with_parent(command: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only
    // calls prctl, which is async-signal-safe. std applies uid/gid before
    // pre_exec closures, and a credential change clears the parent-death
    // signal, so it must be set here, after them.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGINT).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binaries_say_what_to_install_and_what_to_set() {
        let empty = tempfile::tempdir().unwrap();
        let err = Binaries::find(Some(empty.path())).unwrap_err().to_string();
        assert!(err.contains("apt-get install postgresql"), "{err}");
        assert!(err.contains("SLAPROOF_EMBEDDED__BIN_DIR"), "{err}");
        assert!(err.contains("SLAPROOF_DATABASE__URL"), "{err}");
        assert!(err.contains(&empty.path().display().to_string()), "{err}");
    }

    #[test]
    fn a_stale_pid_file_is_not_a_running_postmaster() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(live_postmaster(dir.path()), None);
        // A pid far above pid_max belongs to no process.
        fs::write(dir.path().join("postmaster.pid"), "99999999\n").unwrap();
        assert_eq!(live_postmaster(dir.path()), None);
        fs::write(
            dir.path().join("postmaster.pid"),
            format!("{}\n", std::process::id()),
        )
        .unwrap();
        assert_eq!(live_postmaster(dir.path()), Some(std::process::id() as i32));
    }
}
