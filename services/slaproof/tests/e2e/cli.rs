//! The `slaproof` binary end to end: `up` with its private Postgres, and the
//! operator commands against a real database.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use slaproof_tests::TestDatabase;

use crate::support;

use crate::support::{Up, get_with, shared_tempdir, slaproof, text};

fn run(command: &mut Command) -> Output {
    command.output().expect("running slaproof")
}

/// Pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if text(&cmdline).replace('\0', " ").contains(needle) {
            found.push(pid);
        }
    }
    found
}

fn start_up(dir: &Path, data_dir: &Path) -> Up {
    let mut command = slaproof(dir, &[("SLAPROOF_SERVER__LISTEN", "127.0.0.1:0")]);
    command.env("SLAPROOF_EMBEDDED__DATA_DIR", data_dir);
    support::start(command)
}

/// The demo API token printed on the banner line that starts with `who`.
fn token_of(banner: &str, who: &str) -> String {
    banner
        .lines()
        .find(|l| l.trim().starts_with(who))
        .and_then(|l| l.split_whitespace().last())
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("the banner shows a {who} token:\n{banner}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn up_runs_on_a_private_postgres_and_leaves_no_process_behind() {
    let dir = shared_tempdir("slaproof-up-");
    let data_dir: PathBuf = dir.path().join("data");

    let up = start_up(dir.path(), &data_dir);
    assert!(up.banner.contains("private Postgres"), "{}", up.banner);
    assert!(
        up.banner.contains("(created now)"),
        "first start creates the demo:\n{}",
        up.banner
    );
    let key = up.ingest_key();
    assert!(key.starts_with("spk_"), "{key}");

    let ready = reqwest::get(format!("{}/readyz", up.url)).await.unwrap();
    assert_eq!(ready.status(), 200);

    // The API is usable at once with the printed tokens: the provider's
    // admin sees the demo customer, the customer's admin its dashboard,
    // nobody without a token anything.
    let provider = token_of(&up.banner, "provider admin");
    let customer = token_of(&up.banner, "acme-corp customer admin");
    let (status, customers) = get_with(&up.url, "/v1/customers", &provider).await;
    assert_eq!(status, 200, "{customers}");
    assert_eq!(customers["data"][0]["external_ref"], "acme-corp");
    let (status, dashboard) =
        get_with(&up.url, "/v1/slas/acme-enterprise/dashboard", &customer).await;
    assert_eq!(status, 200, "{dashboard}");
    assert_eq!(dashboard["sla"], "acme-enterprise");
    let (status, _) = get_with(&up.url, "/v1/customers", &customer).await;
    assert_eq!(status, 403, "a customer's admin manages no customers");
    let anonymous = reqwest::get(format!("{}/v1/customers", up.url))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    let cluster = data_dir.join("postgres");
    let cluster_text = cluster.display().to_string();
    assert!(
        !processes_mentioning(&cluster_text).is_empty(),
        "the private Postgres runs"
    );

    // Commands in another terminal find the running cluster by themselves.
    let export = run(slaproof(dir.path(), &[])
        .env("SLAPROOF_EMBEDDED__DATA_DIR", &data_dir)
        .args(["sla", "export", "--tenant", "demo", "acme-enterprise"]));
    assert!(export.status.success(), "{}", text(&export.stderr));
    assert!(
        text(&export.stdout).contains("apiVersion: slaproof/v1"),
        "{}",
        text(&export.stdout)
    );

    // With no chain configured, anvil runs with slaproof deployed on it,
    // and `slaproof chain status` beside it finds it all there.
    let chain_dir = data_dir.join("chain").display().to_string();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let with_anvil = slaproof_chain::anvil::binary(&root).is_some();
    assert!(
        with_anvil || !slaproof_tests::chain::in_ci(),
        "anvil is missing under CI: npm ci --prefix contracts"
    );
    let eas_line = up
        .banner
        .lines()
        .find(|l| l.contains("EAS 0x"))
        .map(str::to_owned);
    if with_anvil {
        assert!(up.banner.contains("anvil (local"), "{}", up.banner);
        assert!(eas_line.is_some(), "{}", up.banner);
        assert!(!processes_mentioning(&chain_dir).is_empty(), "anvil runs");
        let status = run(slaproof(dir.path(), &[])
            .env("SLAPROOF_EMBEDDED__DATA_DIR", &data_dir)
            .args(["chain", "status"]));
        assert!(status.status.success(), "{}", text(&status.stderr));
        let shown = text(&status.stdout);
        for expected in [
            "EAS",
            "SlaproofResolver",
            "AttesterResolver",
            "verified",
            "complete",
        ] {
            assert!(shown.contains(expected), "{shown}");
        }
        assert!(
            !shown.contains("NO CODE") && !shown.contains("NOT"),
            "{shown}"
        );
    }

    up.terminate();
    assert!(
        processes_mentioning(&cluster_text).is_empty(),
        "a Postgres process of ours outlived slaproof up"
    );
    assert!(
        processes_mentioning(&chain_dir).is_empty(),
        "an anvil of ours outlived slaproof up"
    );

    // A second start reuses the cluster and the demo, and shows the same key;
    // anvil comes back from its state with the same deployment.
    let up = start_up(dir.path(), &data_dir);
    assert!(!up.banner.contains("(created now)"), "{}", up.banner);
    assert_eq!(
        up.banner
            .lines()
            .find(|l| l.contains("EAS 0x"))
            .map(str::to_owned),
        eas_line,
        "{}",
        up.banner
    );
    assert_eq!(up.ingest_key(), key);
    // The demo key is kept: tokens printed by the first start still work.
    assert_eq!(get_with(&up.url, "/v1/customers", &provider).await.0, 200);
    assert_eq!(
        reqwest::get(format!("{}/readyz", up.url))
            .await
            .unwrap()
            .status(),
        200
    );
    up.terminate();
    assert!(processes_mentioning(&cluster_text).is_empty());
    assert!(processes_mentioning(&chain_dir).is_empty());

    // With nothing running, commands say what to do.
    let orphan = run(slaproof(dir.path(), &[])
        .env("SLAPROOF_EMBEDDED__DATA_DIR", &data_dir)
        .args(["tenant", "list"]));
    assert!(!orphan.status.success());
    assert!(
        text(&orphan.stderr).contains("start `slaproof up`"),
        "{}",
        text(&orphan.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_commands_manage_tenants_and_slas_and_refuse_invalid_documents() {
    let database = TestDatabase::create().await;
    let dir = tempfile::tempdir().unwrap();
    let service_url = database.service_url();
    let owner_url = database.owner_url();
    let env = [
        ("SLAPROOF_DATABASE__URL", service_url.as_str()),
        ("SLAPROOF_DATABASE__MIGRATE_URL", owner_url.as_str()),
    ];
    let cli = |args: &[&str]| run(slaproof(dir.path(), &env).args(args));

    let migrated = cli(&["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));

    let created = cli(&["tenant", "create", "acme-ai", "--display-name", "Acme AI"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let out = text(&created.stdout);
    assert!(out.contains("created tenant acme-ai (ten_"), "{out}");
    assert!(out.contains("ingest key (shown once"), "{out}");

    let duplicate = cli(&["tenant", "create", "acme-ai"]);
    assert!(!duplicate.status.success());
    assert!(text(&duplicate.stderr).contains("a tenant with this name exists already"));

    assert!(
        cli(&["customer", "create", "--tenant", "acme-ai", "acme-corp"])
            .status
            .success()
    );

    let sla_file = dir.path().join("sla.yaml");
    std::fs::write(&sla_file, slaproof::demo::SLA_DOCUMENT).unwrap();
    let sla_path = sla_file.to_str().unwrap();
    let applied = cli(&["sla", "apply", "--tenant", "acme-ai", "-f", sla_path]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    assert!(
        text(&applied.stdout).contains("created: version 1"),
        "{}",
        text(&applied.stdout)
    );
    let again = cli(&["sla", "apply", "--tenant", "acme-ai", "-f", sla_path]);
    assert!(
        text(&again.stdout).contains("unchanged: version 1"),
        "{}",
        text(&again.stdout)
    );

    // Export as OpenSLO and apply that: the same SLA, so no new version.
    let openslo = cli(&[
        "sla",
        "export",
        "--tenant",
        "acme-ai",
        "acme-enterprise",
        "--format",
        "openslo",
    ]);
    assert!(openslo.status.success(), "{}", text(&openslo.stderr));
    assert!(text(&openslo.stdout).contains("apiVersion: openslo/v1"));
    let openslo_file = dir.path().join("openslo.yaml");
    std::fs::write(&openslo_file, &openslo.stdout).unwrap();
    let round_trip = cli(&[
        "sla",
        "apply",
        "--tenant",
        "acme-ai",
        "-f",
        openslo_file.to_str().unwrap(),
    ]);
    assert!(
        text(&round_trip.stdout).contains("unchanged: version 1"),
        "{}{}",
        text(&round_trip.stdout),
        text(&round_trip.stderr)
    );

    // An invalid document names the field and the rule, exits non-zero, and
    // writes nothing.
    let invalid = slaproof::demo::SLA_DOCUMENT
        .replace("target: 99.9%", "target: 100.5%")
        .replace("name: acme-enterprise", "name: acme-broken");
    let invalid_file = dir.path().join("invalid.yaml");
    std::fs::write(&invalid_file, invalid).unwrap();
    let refused = cli(&[
        "sla",
        "apply",
        "--tenant",
        "acme-ai",
        "-f",
        invalid_file.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(err.contains("spec.objectives[0].target"), "{err}");
    assert!(err.contains("must be below 100"), "{err}");
    let listed = cli(&["sla", "list", "--tenant", "acme-ai"]);
    let list = text(&listed.stdout);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains("acme-enterprise\tv1\tacme-corp"), "{list}");

    // Keys: listed by prefix, revocable.
    let key = cli(&[
        "ingest-key",
        "create",
        "--tenant",
        "acme-ai",
        "--name",
        "gateway",
    ]);
    let prefix = text(&key.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("spk_"))
        .unwrap()
        .to_owned();
    let revoked = cli(&["ingest-key", "revoke", "--tenant", "acme-ai", &prefix]);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let keys = text(&cli(&["ingest-key", "list", "--tenant", "acme-ai"]).stdout);
    assert!(
        keys.lines()
            .any(|l| l.contains(&prefix) && l.contains("revoked")),
        "{keys}"
    );

    // An unknown tenant is named.
    let unknown = cli(&["sla", "list", "--tenant", "nobody"]);
    assert!(
        text(&unknown.stderr).contains("tenant \"nobody\" not found"),
        "{}",
        text(&unknown.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn probe_commands_define_list_and_delete_probes_within_the_outbound_policy() {
    let database = TestDatabase::create().await;
    let dir = tempfile::tempdir().unwrap();
    let service_url = database.service_url();
    let owner_url = database.owner_url();
    let strict = [
        ("SLAPROOF_DATABASE__URL", service_url.as_str()),
        ("SLAPROOF_DATABASE__MIGRATE_URL", owner_url.as_str()),
    ];
    let open = [
        strict[0],
        strict[1],
        ("SLAPROOF_OUTBOUND__ALLOW_PRIVATE_TARGETS", "true"),
    ];
    assert!(
        run(slaproof(dir.path(), &strict).args(["tenant", "create", "acme-ai"]))
            .status
            .success()
    );
    let create = [
        "probe",
        "create",
        "--tenant",
        "acme-ai",
        "health",
        "--url",
        "http://localhost:9/health",
        "--service",
        "chat-completions",
        "--header",
        "Authorization: Bearer sk-cli-secret",
        "--interval-secs",
        "30",
    ];
    // Loopback is refused by default, naming the field and the range.
    let refused = run(slaproof(dir.path(), &strict).args(create));
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(err.contains("url: localhost is or resolves to"), "{err}");
    assert!(err.contains("loopback"), "{err}");
    // Bad fields are named like the API names them.
    let bad = run(slaproof(dir.path(), &open).args([
        "probe",
        "create",
        "--tenant",
        "acme-ai",
        "p",
        "--url",
        "http://localhost:9/",
        "--service",
        "s",
        "--interval-secs",
        "5",
    ]));
    assert!(
        text(&bad.stderr).contains("interval_secs"),
        "{}",
        text(&bad.stderr)
    );

    let created = run(slaproof(dir.path(), &open).args(create));
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert!(
        text(&created.stdout).contains("created probe health (prb_"),
        "{}",
        text(&created.stdout)
    );
    let listed = text(
        &run(slaproof(dir.path(), &strict).args(["probe", "list", "--tenant", "acme-ai"])).stdout,
    );
    assert!(
        listed.contains("\thealth\thttp\tGET http://localhost:9/health\tevery 30 s\tenabled"),
        "{listed}"
    );
    assert!(!listed.contains("sk-cli-secret"), "{listed}");
    let deleted =
        run(slaproof(dir.path(), &strict)
            .args(["probe", "delete", "--tenant", "acme-ai", "health"]));
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    let listed = text(
        &run(slaproof(dir.path(), &strict).args(["probe", "list", "--tenant", "acme-ai"])).stdout,
    );
    assert!(listed.is_empty(), "{listed}");
}

#[test]
fn configuration_errors_name_the_key_and_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(slaproof(dir.path(), &[("SLAPROOF_EVENTS__RETENTION_DAYS", "0")]).arg("migrate"));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("events.retention_days: must be between 1 and 3650, got 0"),
        "{err}"
    );

    let out = run(slaproof(dir.path(), &[]).args(["--config", "missing.toml", "migrate"]));
    assert!(
        text(&out.stderr).contains("missing.toml does not exist"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_command_has_help() {
    use clap::CommandFactory;
    let root = slaproof::cli::Cli::command();
    root.clone().debug_assert();
    fn walk(command: &clap::Command, path: Vec<String>, seen: &mut Vec<Vec<String>>) {
        seen.push(path.clone());
        for sub in command.get_subcommands() {
            let mut next = path.clone();
            next.push(sub.get_name().to_owned());
            walk(sub, next, seen);
        }
    }
    let mut paths = Vec::new();
    walk(&root, Vec::new(), &mut paths);
    assert!(paths.len() > 15, "{paths:?}");
    let dir = tempfile::tempdir().unwrap();
    for path in paths {
        let out = run(slaproof(dir.path(), &[]).args(&path).arg("--help"));
        let help = text(&out.stdout);
        assert!(
            out.status.success(),
            "{path:?} --help failed: {}",
            text(&out.stderr)
        );
        assert!(help.contains("Usage:"), "{path:?}: {help}");
    }
}

#[test]
fn keys_generate_writes_hashed_keys_with_progress_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let keys_arg = keys.to_str().unwrap();
    let out =
        run(slaproof(dir.path(), &[])
            .args(["keys", "generate", "--slots", "64", "--dir", keys_arg]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let progress = text(&out.stderr);
    for stage in [
        "counting constraints",
        "Groth16 setup over 8189 constraints",
        "writing the proving key",
        "done",
    ] {
        assert!(progress.contains(stage), "no {stage:?} in:\n{progress}");
    }
    let printed = text(&out.stdout);
    assert!(
        printed.contains("keys for 64 slots (8189 constraints)"),
        "{printed}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(keys.join("threshold-64.manifest.json")).unwrap())
            .unwrap();
    let vk_hash = manifest["verifying_key"]["sha256"].as_str().unwrap();
    assert!(printed.contains(vk_hash), "{printed}");

    let again =
        run(slaproof(dir.path(), &[])
            .args(["keys", "generate", "--slots", "64", "--dir", keys_arg]));
    assert!(
        !again.status.success(),
        "existing keys must not be regenerated silently"
    );
    let manifest_after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(keys.join("threshold-64.manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest, manifest_after);
}

#[test]
fn chain_deploy_and_status_run_against_a_configured_chain_and_never_print_the_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(binary) = slaproof_chain::anvil::binary(&root) else {
        assert!(
            !slaproof_tests::chain::in_ci(),
            "anvil is missing under CI: npm ci --prefix contracts"
        );
        eprintln!("\n!!! SKIPPED: no anvil; npm ci --prefix contracts !!!\n");
        return;
    };
    let node = slaproof_chain::anvil::Anvil::start(&binary, 0, None).expect("anvil starts");
    let dir = shared_tempdir("slaproof-chain-");
    let key_file = dir.path().join("attester.key");
    std::fs::write(&key_file, slaproof_chain::anvil::DEV_KEY).unwrap();
    let record = dir.path().join("deployment.json");
    let env = [
        ("SLAPROOF_CHAIN__RPC_URL", node.url().as_str()),
        ("SLAPROOF_CHAIN__KEY_FILE", key_file.to_str().unwrap()),
        ("SLAPROOF_CHAIN__DEPLOYMENT_FILE", record.to_str().unwrap()),
    ];
    let secret = &slaproof_chain::anvil::DEV_KEY[2..];

    // Before a deployment, status names what is missing.
    let status = run(slaproof(dir.path(), &env).args(["chain", "status"]));
    assert!(!status.status.success());
    assert!(
        text(&status.stderr).contains("deployment.json"),
        "{}",
        text(&status.stderr)
    );

    let deploy = run(slaproof(dir.path(), &env).args(["chain", "deploy"]));
    assert!(deploy.status.success(), "{}", text(&deploy.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&deploy.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(printed, written);
    assert_eq!(written["chain_id"], 31337);

    let status = run(slaproof(dir.path(), &env).args(["chain", "status", "--json"]));
    assert!(status.status.success(), "{}", text(&status.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(shown["attester_authorised"], true, "{shown}");
    assert_eq!(shown["schemas"].as_array().unwrap().len(), 3, "{shown}");
    assert!(
        shown["contracts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["has_code"] == true),
        "{shown}"
    );

    // The verified path's verifiers: refused without proving keys (and
    // saying so), then generated, compiled, deployed and registered once.
    let keys = dir.path().join("keys");
    let mut env_keys = env.to_vec();
    env_keys.push(("SLAPROOF_ATTESTATION__KEY_DIR", keys.to_str().unwrap()));
    let refused = run(slaproof(dir.path(), &env_keys).args(["chain", "register-verifiers"]));
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("slaproof keys generate --slots 64"),
        "{}",
        text(&refused.stderr)
    );
    let generated = run(slaproof(dir.path(), &env).args([
        "keys",
        "generate",
        "--slots",
        "64",
        "--dir",
        keys.to_str().unwrap(),
    ]));
    assert!(generated.status.success(), "{}", text(&generated.stderr));
    let registered = run(slaproof(dir.path(), &env_keys).args(["chain", "register-verifiers"]));
    assert!(registered.status.success(), "{}", text(&registered.stderr));
    assert!(
        text(&registered.stdout).contains("deployed and registered"),
        "{}",
        text(&registered.stdout)
    );
    let again = run(slaproof(dir.path(), &env_keys).args(["chain", "register-verifiers"]));
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).contains("already registered"),
        "{}",
        text(&again.stdout)
    );
    for output in [&deploy, &status, &registered] {
        assert!(!text(&output.stdout).contains(secret));
        assert!(!text(&output.stderr).contains(secret));
    }

    // A key in the wrong form is refused without being echoed.
    std::fs::write(&key_file, "0xnot-a-key-but-a-secret").unwrap();
    let refused = run(slaproof(dir.path(), &env).args(["chain", "status"]));
    assert!(!refused.status.success());
    let said = text(&refused.stderr);
    assert!(said.contains("not a 32-byte hex private key"), "{said}");
    assert!(!said.contains("not-a-key"), "{said}");
    node.stop();
}
