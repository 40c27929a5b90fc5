//! slaproof behind pgbouncer in transaction mode (Debian's package, which
//! `scripts/test` installs): two replicas share three server connections,
//! so consecutive transactions of one tenant land on connections another
//! tenant used a moment before. Every tenant setting is transaction-local
//! (`SET LOCAL`), every advisory lock a transaction's, every statement runs
//! in an explicit transaction, and no statement name is reused
//! (`database.statement_cache_capacity = 0`, with pgbouncer deallocating
//! after each transaction: what pgbouncer before 1.21 needs), so each
//! tenant's events are stored and counted exactly, under its own
//! row-level security.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Value, json};
use slaproof::Config;
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::scratch::{SERVICE_PASSWORD, SERVICE_ROLE};
use slaproof_store::{Database, evaluations, ingest_keys, partitions, slas, tenants};
use slaproof_tests::{TestDatabase, spawn_replica_via};
use sqlx::postgres::PgConnectOptions;

use crate::replicas::SLA;

/// Server connections pgbouncer keeps for the database.
const POOL: i64 = 3;

/// Debian's pgbouncer, or `None` (said loudly) outside CI.
fn pgbouncer_binary() -> Option<PathBuf> {
    let found = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        let in_ci = slaproof_tests::chain::in_ci();
        assert!(
            !in_ci,
            "pgbouncer is missing under CI: scripts/test installs it"
        );
        eprintln!(
            "\n\n!!! pgbouncer is not installed: the pooler test is SKIPPED \
             (apt-get install pgbouncer; scripts/test does) !!!\n\n"
        );
    }
    found
}

/// A pgbouncer in transaction mode in front of the test database; killed
/// when dropped.
struct Pgbouncer {
    child: Child,
    address: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Pgbouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_pgbouncer(binary: &Path, database: &TestDatabase) -> Pgbouncer {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let upstream = &database.service;
    let ini = format!(
        "[databases]\n\
         {name} = host={host} port={upstream_port} dbname={name}\n\
         [pgbouncer]\n\
         listen_addr = 127.0.0.1\n\
         listen_port = {port}\n\
         unix_socket_dir =\n\
         auth_type = trust\n\
         auth_file = {dir}/users.txt\n\
         pool_mode = transaction\n\
         default_pool_size = {POOL}\n\
         max_client_conn = 100\n\
         ignore_startup_parameters = extra_float_digits\n\
         server_reset_query = DEALLOCATE ALL\n\
         server_reset_query_always = 1\n",
        name = database.name,
        host = upstream.get_host(),
        upstream_port = upstream.get_port(),
        dir = dir.path().display(),
    );
    std::fs::write(dir.path().join("pgbouncer.ini"), ini).unwrap();
    // Trust here (loopback, a test's own pooler); the server still checks
    // the role's password, which pgbouncer passes on.
    std::fs::write(
        dir.path().join("users.txt"),
        format!("\"{SERVICE_ROLE}\" \"{SERVICE_PASSWORD}\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = Command::new(binary);
    // pgbouncer refuses to run as root.
    use std::os::unix::fs::MetadataExt as _;
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        command.args(["-u", "postgres"]);
    }
    let child = command
        .arg(dir.path().join("pgbouncer.ini"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting pgbouncer");
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(address).is_err() {
        assert!(
            Instant::now() < deadline,
            "pgbouncer did not listen on {address}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Pgbouncer {
        child,
        address,
        _dir: dir,
    }
}

async fn tenant(db: &Database, name: &str) -> (TenantId, String) {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(SLA).unwrap())
        .await
        .unwrap();
    let key = ingest_keys::create(&mut tx, "pooled").await.unwrap();
    tx.commit().await.unwrap();
    (tenant, key.reveal().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_behind_pgbouncer_in_transaction_mode_keep_tenants_apart() {
    let Some(binary) = pgbouncer_binary() else {
        return;
    };
    let database = TestDatabase::create().await;
    let pooler = start_pgbouncer(&binary, &database);
    let through_pooler = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(pooler.address.port())
        .username(SERVICE_ROLE)
        .password(SERVICE_PASSWORD)
        .database(&database.name);

    let settings = |config: &mut Config| {
        config.database.statement_cache_capacity = 0;
        config.database.max_connections = 8;
        config.evaluator.interval_secs = 1;
        config.evaluator.settle_secs = 0;
    };
    let a = spawn_replica_via(&database, &through_pooler, settings).await;
    let b = spawn_replica_via(&database, &through_pooler, settings).await;
    let db = a.db.clone();
    let today = Utc::now().date_naive();
    partitions::ensure(
        &db,
        today - chrono::Days::new(1),
        today + chrono::Days::new(1),
    )
    .await
    .unwrap();
    // Different numbers per tenant, so that a count seen by the wrong
    // tenant would show.
    let sent = [
        (tenant(&db, "acme").await, 60usize, 3usize),
        (tenant(&db, "globex").await, 90, 9),
    ];

    let http = reqwest::Client::new();
    let at = Utc::now() - chrono::Duration::seconds(90);
    // Both tenants at once, each through both replicas in turn.
    let sends = sent.iter().map(|((_, key), total, bad)| {
        let (a, b, http) = (&a, &b, &http);
        async move {
            for chunk in 0..total / 10 {
                let batch: Vec<Value> = (0..10)
                    .map(|i| {
                        let r = chunk * 10 + i;
                        json!({
                            "time": at.to_rfc3339(),
                            "service": "chat-completions",
                            "request_id": format!("r{r}"),
                            "status": if r < *bad { 500 } else { 200 },
                            "latency_ms": 100.0
                        })
                    })
                    .collect();
                let replica = if chunk % 2 == 0 { a } else { b };
                let status = http
                    .post(format!("http://{}/v1/events", replica.address))
                    .bearer_auth(key)
                    .json(&batch)
                    .send()
                    .await
                    .unwrap()
                    .status();
                assert_eq!(status.as_u16(), 200);
            }
        }
    });
    futures_util::future::join_all(sends).await;

    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut counted = Vec::new();
        for ((tenant, _), _, _) in &sent {
            let mut tx = db.tenant_tx(*tenant).await.unwrap();
            let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap();
            let latest = evaluations::latest(&mut tx, sla.id).await.unwrap();
            tx.commit().await.unwrap();
            counted.push(latest.first().map(|e| (e.good, e.total)));
        }
        let expected: Vec<_> = sent
            .iter()
            .map(|(_, total, bad)| Some(((total - bad) as i64, *total as i64)))
            .collect();
        if counted == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "within 120 s each tenant's own counts: {counted:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // The two replicas (16 client connections) were served by at most
    // POOL server connections.
    let mut owner = database.owner_connection().await;
    let servers: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND usename = $2",
    )
    .bind(&database.name)
    .bind(SERVICE_ROLE)
    .fetch_one(&mut owner)
    .await
    .unwrap();
    assert!(servers <= POOL, "{servers} server connections");
    a.stop().await.unwrap();
    b.stop().await.unwrap();
}
