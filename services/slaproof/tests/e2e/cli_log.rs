//! `slaproof log` end to end: the provider builds the due day, proves a
//! request and exports the day; anyone checks the proof and audits the
//! day offline with the published verifier key alone, and a tampered file
//! is refused by name.

use std::process::{Command, Output};

use chrono::{Days, Duration, Utc};
use slaproof_store::{partitions, tenants};
use slaproof_tests::TestDatabase;

use crate::support::{slaproof, text};

fn run(command: &mut Command) -> Output {
    command.output().expect("running slaproof")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_provider_proves_and_exports_and_anyone_checks_offline() {
    let database = TestDatabase::create().await;
    let dir = tempfile::tempdir().unwrap();
    let (service_url, owner_url) = (database.service_url(), database.owner_url());
    let env = [
        ("SLAPROOF_DATABASE__URL", service_url.as_str()),
        ("SLAPROOF_DATABASE__MIGRATE_URL", owner_url.as_str()),
    ];
    let cli = |args: &[&str]| run(slaproof(dir.path(), &env).args(args));
    let ok = |out: Output| {
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    ok(cli(&["migrate"]));
    ok(cli(&["tenant", "create", "acme-ai"]));

    // Three requests the day before yesterday, as ingest stores them.
    let db = database.service_database().await;
    let today = Utc::now().date_naive();
    let day = today - Days::new(2);
    partitions::ensure(&db, day, today).await.unwrap();
    let tenant = tenants::resolve(&db, "acme-ai").await.unwrap();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let noon = day.and_hms_opt(12, 0, 0).unwrap().and_utc();
    for (i, status) in [200, 503, 200].into_iter().enumerate() {
        sqlx::query(
            "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, request_id, status, latency_us) \
             VALUES ($1, $2, gen_random_uuid(), $2, 'provider', 'chat', $3, $4, 250000)",
        )
        .bind(tenant.uuid())
        .bind(noon + Duration::minutes(i as i64))
        .bind(format!("r{i}"))
        .bind(status)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    let built = ok(cli(&["log", "build"]));
    assert!(
        built.contains(&format!("{day}\t3 leaves (0 late)\tsize 3")),
        "{built}"
    );

    // The proof, checked offline with nothing but the verifier key.
    let proof = ok(cli(&["log", "prove", "--tenant", "acme-ai", "r1"]));
    let json: serde_json::Value = serde_json::from_str(&proof).unwrap();
    let key = json["head"]["verifier_key"].as_str().unwrap().to_owned();
    let file = dir.path().join("proof.json");
    std::fs::write(&file, &proof).unwrap();
    let path = file.to_str().unwrap();
    // Without a chain to look the head up on, the path checks but the
    // verdict is not green: exit code 3, until the auditor accepts it.
    let offline = cli(&["log", "verify-proof", path, "--verifier-key", &key]);
    assert_eq!(offline.status.code(), Some(3), "{}", text(&offline.stdout));
    assert!(
        text(&offline.stdout).contains("NOT CHECKED  anchor")
            && text(&offline.stdout).contains("UNVERIFIED"),
        "{}",
        text(&offline.stdout)
    );
    let checked = ok(cli(&[
        "log",
        "verify-proof",
        path,
        "--verifier-key",
        &key,
        "--expect-status",
        "503",
        "--allow-unpinned",
        "anchor",
    ]));
    assert!(checked.starts_with("ok: r1 (evt_"), "{checked}");
    assert!(
        checked.contains("VERIFIED, with checks the auditor waived: anchor"),
        "{checked}"
    );
    let wrong = cli(&[
        "log",
        "verify-proof",
        path,
        "--verifier-key",
        &key,
        "--expect-status",
        "200",
    ]);
    assert!(!wrong.status.success());
    assert!(
        text(&wrong.stderr).contains("records status Some(503)"),
        "{}",
        text(&wrong.stderr)
    );
    // A leaf edited in the file no longer hashes to its path.
    std::fs::write(
        &file,
        proof.replace("\\\"status\\\":503", "\\\"status\\\":200"),
    )
    .unwrap();
    let tampered = cli(&["log", "verify-proof", path, "--verifier-key", &key]);
    assert!(!tampered.status.success());
    assert!(
        text(&tampered.stderr).contains("not to the leaf_hash given"),
        "{}",
        text(&tampered.stderr)
    );

    // The day's export audits offline; an edited leaf is named.
    let export = ok(cli(&[
        "log",
        "export",
        "--tenant",
        "acme-ai",
        &day.to_string(),
    ]));
    let file = dir.path().join("day.json");
    std::fs::write(&file, &export).unwrap();
    let path = file.to_str().unwrap();
    let audited = ok(cli(&["log", "audit", path, "--verifier-key", &key]));
    assert!(
        audited.contains("rebuilds its signed head from 3 leaves (0 late)"),
        "{audited}"
    );
    std::fs::write(
        &file,
        export.replace("\\\"status\\\":503", "\\\"status\\\":502"),
    )
    .unwrap();
    let refused = cli(&["log", "audit", path, "--verifier-key", &key]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("not the signed head's"),
        "{}",
        text(&refused.stderr)
    );

    // The provider's check of a client-side log.
    let log = dir.path().join("client.json");
    std::fs::write(
        &log,
        r#"{"requests": [{"request_id": "r0", "status": 200, "latency_ms": 251}, {"request_id": "r9"}]}"#,
    )
    .unwrap();
    let report = ok(cli(&[
        "log",
        "check",
        "--tenant",
        "acme-ai",
        log.to_str().unwrap(),
    ]));
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(
        (&report["counts"]["included"], &report["counts"]["missing"]),
        (&serde_json::json!(1), &serde_json::json!(1))
    );

    // A dispute's openings are of an attestation proven over its days; the
    // auditor's recount needs the openings its log days are checked against.
    let missing = cli(&[
        "log",
        "open-days",
        "--tenant",
        "acme-ai",
        "00000000-0000-0000-0000-000000000001",
    ]);
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("no attestation 00000000-0000-0000-0000-000000000001"),
        "{}",
        text(&missing.stderr)
    );
    let unopened = cli(&["verify", "--dir", ".", "--log-day", path]);
    assert!(!unopened.status.success());
    assert!(
        text(&unopened.stderr).contains("--openings"),
        "{}",
        text(&unopened.stderr)
    );
}
