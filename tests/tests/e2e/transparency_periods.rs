//! A period proven over its days, each measured and anchored as the month
//! went: the evaluator measures every day past its grace, the attestation
//! worker commits the measurements and anchors them with the next
//! transparency-log head on a real anvil, a late event revises its day
//! (a new revision, anchored later), the close waits for its last days'
//! anchors, the proof opens the anchored days, and the auditor's checks
//! follow it to them on chain. A bundle whose days are not the anchored
//! ones, or do not tile the period, fails. In a dispute the provider opens
//! the days and the auditor recounts each from the exported log.

use std::sync::Arc;

use chrono::{Duration as Span, NaiveDate};
use slaproof::cli::dispute_checks;
use slaproof_app::transparency::TransparencySettings;
use slaproof_attestation::audit::{Pins, Report, audit};
use slaproof_attestation::daily::DayAnchor;
use slaproof_attestation::opening::{Openings, open_days};
use slaproof_attestation::verifiers::register_missing;
use slaproof_attestation::worker::{Prover, Worker};
use slaproof_chain::{Chain, Deployment};
use slaproof_circuits::{Circuit, CircuitKeys};
use slaproof_domain::window::Period;
use slaproof_store::attestations::{self, Attestation};
use slaproof_tests::scenario::{Request, Scenario, at};

use crate::attestation::{
    anchored_worker, anvil_binary, attestations_of, chain_on, daily_sla, keys_64, provable, solc_js,
};
use crate::attestation_paths::{sla_on, until_anchored};

/// The daily circuit's 32-day keys, made once per test binary.
fn daily_keys() -> CircuitKeys {
    static KEYS: std::sync::OnceLock<CircuitKeys> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| CircuitKeys::setup_of(Circuit::Daily, 32).expect("a setup"))
        .clone()
}

/// The anchoring worker with both circuits' keys: the 64-slot threshold
/// keys and the 32-day daily keys.
async fn daily_worker(s: &Scenario, chain: &Arc<Chain>, deployment: &Deployment) -> Worker {
    Worker {
        prover: Prover::new(vec![keys_64(), daily_keys()], 1),
        ..anchored_worker(s, chain, deployment).await
    }
}

/// A request a minute for `minutes` from `from`, those in `bad` answered 500.
fn requests(from: &str, minutes: i64, bad: std::ops::Range<i64>) -> Vec<Request> {
    (0..minutes)
        .map(|i| {
            let occurred_at = at(from) + Span::minutes(i);
            Request {
                occurred_at,
                received_at: occurred_at,
                status: if bad.contains(&i) { 500 } else { 200 },
            }
        })
        .collect()
}

async fn build_log(s: &Scenario, now: &str) -> usize {
    let (app, _) = s.app().await;
    let settings = TransparencySettings {
        lookback_days: 40,
        ..TransparencySettings::default()
    };
    app.build_transparency_logs(&settings, at(now))
        .await
        .unwrap()
        .len()
}

async fn count(s: &Scenario, sql: &str) -> i64 {
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let n: i64 = sqlx::query_scalar(sql).fetch_one(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    n
}

async fn attest_jobs_due_now(s: &Scenario) {
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    sqlx::query("UPDATE jobs SET run_at = now() WHERE tenant_id = $1 AND kind = 'attest'")
        .bind(s.tenant.uuid())
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_month_is_proven_over_its_days_anchored_as_it_went() {
    let Some(binary) = anvil_binary() else {
        return;
    };
    let s = Scenario::new(&daily_sla(), "2026-11-01", "2026-12-02").await;
    s.run("2026-11-01T00:00:00Z").await;
    let node = slaproof_chain::anvil::Anvil::start(&binary, 0, None).expect("anvil starts");
    let (chain, deployment) = chain_on(&node, 30).await;
    let w = daily_worker(&s, &chain, &deployment).await;

    // Mid-month: the 10th and 11th had traffic (12 errors on the 11th).
    s.insert(&requests("2026-11-10T00:00:00Z", 2880, 1500..1512))
        .await;
    let run = s.run("2026-11-12T02:00:00Z").await;
    // Eleven days (the 1st to the 11th) of three provable objectives; the
    // quality score's threshold is not provable and not measured.
    assert_eq!(run.days_measured, 33);
    assert_eq!(s.run("2026-11-12T02:10:00Z").await.days_measured, 0);
    assert_eq!(build_log(&s, "2026-11-12T03:00:00Z").await, 2);
    assert_eq!(w.anchor_logs_due().await.unwrap(), 2);
    // The first day's anchor carries every measurement so far.
    assert_eq!(
        count(
            &s,
            "SELECT count(*) FROM transparency_commitments WHERE log_day = '2026-11-10'"
        )
        .await,
        33
    );

    // A late error of the 10th, received on the 20th, and the month's end.
    s.insert(&[Request {
        occurred_at: at("2026-11-10T05:00:30Z"),
        received_at: at("2026-11-20T09:00:00Z"),
        status: 500,
    }])
    .await;
    s.insert(&requests("2026-11-25T00:00:00Z", 1440, 0..0))
        .await;
    let run = s.run("2026-12-01T01:00:00Z").await;
    // The 12th to the 30th, and the 10th again: a new revision of its
    // availability and latency (one more request); its good minutes are
    // unchanged (the hour stays above its 95%).
    assert_eq!(run.days_measured, 19 * 3 + 2, "{:?}", run.days_measured);
    assert_eq!(
        count(
            &s,
            "SELECT count(*) FROM transparency_measurements WHERE revision = 2"
        )
        .await,
        2
    );

    // The close asks for proofs; their last days are not anchored yet, so
    // the worker waits for them rather than commit the month now.
    let rows = provable(attestations_of(&s).await);
    assert_eq!(rows.len(), 3);
    w.work_due().await.unwrap();
    for row in provable(attestations_of(&s).await) {
        assert_eq!(row.status, "pending", "{row:?}");
        assert!(
            row.reason
                .as_deref()
                .unwrap_or_default()
                .contains("waiting for the period's daily commitments to be anchored"),
            "{row:?}"
        );
    }

    // The rest of the month is logged and anchored; the proofs follow.
    assert_eq!(build_log(&s, "2026-12-01T02:00:00Z").await, 19);
    attest_jobs_due_now(&s).await;
    w.work_due().await.unwrap();
    let rows = provable(attestations_of(&s).await);
    for row in &rows {
        assert_eq!(row.status, "anchored", "{row:?}");
        assert_eq!(row.circuit, "daily");
        assert_eq!(row.slots, Some(32));
        let days: Vec<DayAnchor> = serde_json::from_value(row.days.clone().unwrap()).unwrap();
        assert_eq!(days.len(), 30);
        assert_eq!(days[0].log_day, "2026-11-10");
        // The 10th's revision after the late error, anchored later.
        let tenth = &days[9];
        let expected = if row.objective == "good-minutes" {
            1
        } else {
            2
        };
        assert_eq!(tenth.revision, expected, "{}", row.objective);
        if expected == 2 {
            assert_ne!(tenth.log_day, "2026-11-10");
        }
    }
    // availability: 2,880 + 1,440 + 1 requests, 13 errors: 4,308 / 4,321.
    let availability = rows.iter().find(|r| r.objective == "availability").unwrap();
    assert_eq!(availability.quota_ppm, Some(996_991));

    // The auditor follows each proof to its days, offline and on chain.
    let pins = Pins {
        vk_sha256: None,
        eas: Some(deployment.eas),
        attester: Some(chain.address()),
        chain_id: Some(chain.chain_id()),
        ceremony: None,
    };
    let mut bundles = Vec::new();
    for row in &rows {
        let (dir, report) = crate::attestation_paths::audited(&s, row, &node, &pins).await;
        assert!(report.failed().is_empty(), "{}", report.render());
        let text = report.render();
        println!("{}: {text}", row.objective);
        assert!(text.contains("aggregate of 30 daily commitments"), "{text}");
        assert!(text.contains("30 days in"), "{text}");
        // November replayed in December: every day anchored after the
        // month, so not shown fixed before the outcome, and said so.
        assert!(
            report.not_checked_names().contains(&"days in time")
                && text.contains("30 of 30 days anchored after the period ended"),
            "{text}"
        );
        bundles.push(dir);
    }

    // A bundle whose days are not the anchored ones fails the auditor.
    let row = rows.iter().find(|r| r.objective == "availability").unwrap();
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let bundle = attestations::bundle(&mut tx, row.id)
        .await
        .unwrap()
        .unwrap();
    tx.commit().await.unwrap();
    let tampered = |change: &dyn Fn(&mut serde_json::Value)| {
        let dir = tempfile::tempdir().unwrap();
        slaproof_attestation::export::write(&bundle, dir.path()).unwrap();
        let path = dir.path().join("statement.json");
        let mut file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        change(&mut file);
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        dir
    };
    type Change<'a> = &'a dyn Fn(&mut serde_json::Value);
    let cases: [(&str, Change<'_>); 4] = [
        (
            // another commitment for the 11th (its errors dropped)
            "is anchored as member",
            &|f| f["days"][10]["commitment"] = "12345".into(),
        ),
        (
            // the 10th's first revision, before the late error
            "is anchored as member",
            &|f| f["days"][9]["revision"] = 1.into(),
        ),
        (
            // a day left out
            "do not tile the period",
            &|f| {
                f["days"].as_array_mut().unwrap().remove(12);
            },
        ),
        (
            // a root that is not the day's anchor
            "does not prove into root",
            &|f| f["days"][3]["root"] = format!("0x{}", "ab".repeat(32)).into(),
        ),
    ];
    for (expected, change) in cases {
        let dir = tampered(change);
        let report = audit(dir.path(), None, &pins).await;
        assert!(
            report.failed().contains(&"daily commitments"),
            "{}",
            report.render()
        );
        assert!(report.render().contains(expected), "{}", report.render());
    }

    // A summary stating more than the proof (found in review: the CLI and
    // the page showed it as the claim): the claim shown is rebuilt from the
    // checked fields, and the summary fails.
    let lying = tampered(&|f| {
        let told = f["summary"].as_str().unwrap().to_owned();
        let (_, rest) = told.split_once("% ").unwrap();
        f["summary"] = format!("At least 99.99% {rest}").into();
    });
    let report = audit(lying.path(), None, &pins).await;
    assert_eq!(report.failed(), ["summary"], "{}", report.render());

    let text = report.render();
    assert!(
        text.contains("the claim hashes to the context input (At least 99.6991% of"),
        "{text}"
    );
    assert!(
        text.contains("the bundle's summary says \"At least 99.99%"),
        "{text}"
    );

    // A day whose anchor entry names a look-alike EAS (found in review: the
    // day's time was read from whatever contract the bundle named): the day
    // anchors are read from the period's EAS only, and the day fails.
    let look_alike = tampered(&|f| {
        f["days"][5]["eas"] = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into();
    });
    let report = audit(look_alike.path(), Some(node.url()), &pins).await;
    assert_eq!(report.failed(), ["day anchors"], "{}", report.render());
    assert!(
        report.render().contains(
            "names EAS 0x70997970C51812dc3A010C7d01b50e0d17dc79C8, the period's anchor is on"
        ),
        "{}",
        report.render()
    );

    disputed(&s, &rows, &bundles).await;
}

/// A dispute over the month: the provider opens each proof's days, the
/// auditor checks the openings against the anchored commitments and
/// recounts every day from the exported log days, with nothing else; an
/// opening, a log day or the terms that do not hold are named.
async fn disputed(s: &Scenario, rows: &[Attestation], bundles: &[tempfile::TempDir]) {
    let (app, admin) = s.app().await;
    let files = tempfile::tempdir().unwrap();
    let export = |day: NaiveDate| {
        let app = &app;
        let admin = &admin;
        let path = files.path().join(format!("log-{day}.json"));
        async move {
            match app.export_log_day(admin, day).await {
                Ok(export) => {
                    std::fs::write(&path, serde_json::to_string(&export).unwrap()).unwrap();
                    Some((path, export.head.verifier_key))
                }
                Err(slaproof_app::AppError::NotFound { .. }) => None,
                Err(err) => panic!("{err}"),
            }
        }
    };
    let mut log_days = Vec::new();
    let mut key = String::new();
    let first: NaiveDate = "2026-11-01".parse().unwrap();
    for day in first.iter_days().take(30) {
        if let Some((path, verifier_key)) = export(day).await {
            log_days.push(path);
            key = verifier_key;
        }
    }
    // The log began on the 10th, the first day with events.
    assert_eq!(log_days.len(), 21);
    let grace = slaproof_tests::scenario::settings().grace();
    let mut availability = None;
    for (row, bundle) in rows.iter().zip(bundles) {
        let openings = open_days(&s.db, s.tenant, row.id, grace).await.unwrap();
        let path = files
            .path()
            .join(format!("openings-{}.json", row.objective));
        std::fs::write(&path, serde_json::to_string(&openings).unwrap()).unwrap();
        let mut report = Report::default();
        dispute_checks(&mut report, bundle.path(), &path, &log_days, Some(&key));
        let text = report.render();
        println!("{}: {text}", row.objective);
        assert!(report.failed().is_empty(), "{text}");
        assert!(report.not_checked_names().is_empty(), "{text}");
        assert!(
            text.contains("30 days recounted from 4321 logged events of 21 log days"),
            "{text}"
        );
        // Hour slices: the 72 hours with requests (the default no-data
        // policy leaves the others out), the 11th's 01h bad.
        if row.objective == "good-minutes" {
            assert!(text.contains("71 good and 1 bad, as opened"), "{text}");
        }
        if row.objective == "availability" {
            assert!(text.contains("4308 good and 13 bad, as opened"), "{text}");
            availability = Some((bundle.path(), openings));
        }
    }
    let (bundle, openings) = availability.unwrap();
    let check = |openings: &Openings, log_days: &[std::path::PathBuf]| {
        let path = files.path().join("openings-changed.json");
        std::fs::write(&path, serde_json::to_string(openings).unwrap()).unwrap();
        let mut report = Report::default();
        dispute_checks(&mut report, bundle, &path, log_days, Some(&key));
        report
    };

    // A proof claiming more than the anchored days hold, as one made with
    // the setup's toxic waste would (found in review: the dispute summed
    // the opened counts and never compared them with the claim): its
    // statement says 99.9%, the opened days 4308 of 4321 (99.6991%).
    let forged = tempfile::tempdir().unwrap();
    for file in std::fs::read_dir(bundle).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), forged.path().join(file.file_name())).unwrap();
    }
    let statement_path = forged.path().join("statement.json");
    let mut statement: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&statement_path).unwrap()).unwrap();
    assert_eq!(statement["quota_ppm"], 996_991);
    statement["quota_ppm"] = 999_000.into();
    std::fs::write(&statement_path, statement.to_string()).unwrap();
    let path = files.path().join("openings-forged.json");
    std::fs::write(&path, serde_json::to_string(&openings).unwrap()).unwrap();
    let mut report = Report::default();
    dispute_checks(&mut report, forged.path(), &path, &log_days, Some(&key));
    assert_eq!(report.failed(), ["day openings"], "{}", report.render());
    assert!(
        report
            .render()
            .contains("4308 good of 4321 (99.6991%), less than the 99.9000% the proof claims"),
        "{}",
        report.render()
    );

    // Weights other than the committed ones do not open the commitment.
    let mut more = openings.clone();
    more.days[10].good += 1;
    let report = check(&more, &log_days);
    assert_eq!(report.failed(), ["day openings"], "{}", report.render());
    assert!(
        report
            .render()
            .contains("do not make the anchored commitment")
    );

    // Terms that do not reproduce the committed weights from the logged
    // events: a maintenance window over the 11th's errors, never agreed.
    let mut excused = openings.clone();
    excused.maintenance = vec![Period {
        start: at("2026-11-11T01:00:00Z"),
        end: at("2026-11-11T01:15:00Z"),
    }];
    let report = check(&excused, &log_days);
    assert_eq!(report.failed(), ["day recount"], "{}", report.render());
    assert!(
        report
            .render()
            .contains("the log's events count 1425 good and 0 bad, the commitment opens to 1428 good and 12 bad"),
        "{}",
        report.render()
    );

    // A log day left out cannot be recounted.
    let without: Vec<_> = log_days
        .iter()
        .filter(|p| !p.ends_with("log-2026-11-15.json"))
        .cloned()
        .collect();
    let report = check(&openings, &without);
    assert_eq!(
        report.not_checked_names(),
        ["day recount"],
        "{}",
        report.render()
    );
    assert!(
        report
            .render()
            .contains("the log days 2026-11-15 are not given")
    );

    // An event removed, and one altered, after the 11th was anchored: its
    // export no longer rebuilds the signed head, and the recount says so.
    s.owner_sql("DELETE FROM events WHERE occurred_at = '2026-11-11T01:00:00Z'")
        .await;
    export("2026-11-11".parse().unwrap()).await.unwrap();
    let report = check(&openings, &log_days);
    assert_eq!(report.failed(), ["day recount"], "{}", report.render());
    assert!(report.render().contains("its event is no longer stored"));
    s.owner_sql("UPDATE events SET status = 200 WHERE occurred_at = '2026-11-11T01:01:00Z'")
        .await;
    export("2026-11-11".parse().unwrap()).await.unwrap();
    let report = check(&openings, &log_days);
    assert!(
        report.render().contains("does not rebuild its signed head"),
        "{}",
        report.render()
    );
}

/// The verified path with the daily circuit: the daily key's verifier is
/// generated, compiled, deployed and registered like the threshold
/// circuit's, and the resolver verifies each month's proof over its
/// anchored days on chain before it is attested.
#[tokio::test(flavor = "multi_thread")]
async fn a_month_over_its_days_is_verified_on_chain_on_the_verified_path() {
    let Some(binary) = anvil_binary() else {
        return;
    };
    let Some(solc) = solc_js() else {
        return;
    };
    // Proven over its days or not at all: no waiver.
    let daily = sla_on("verified").replace(", circuit: threshold", "");
    let s = Scenario::new(&daily, "2026-11-01", "2026-12-02").await;
    s.run("2026-11-01T00:00:00Z").await;
    let node = slaproof_chain::anvil::Anvil::start(&binary, 0, None).expect("anvil starts");
    let (chain, deployment) = chain_on(&node, 30).await;
    let w = daily_worker(&s, &chain, &deployment).await;
    s.insert(&requests("2026-11-10T00:00:00Z", 2880, 1500..1512))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    assert_eq!(build_log(&s, "2026-12-01T02:00:00Z").await, 21);
    assert_eq!(w.anchor_logs_due().await.unwrap(), 21);

    let keys = vec![(32, daily_keys().verifier().clone())];
    let done = register_missing(&chain, &deployment, &keys, &solc)
        .await
        .unwrap();
    assert!(done.len() == 1 && done[0].new, "{done:?}");
    attest_jobs_due_now(&s).await;
    let rows = until_anchored(&s, &w, 120).await;
    assert_eq!(rows.len(), 3);
    let pins = Pins {
        vk_sha256: rows[0].vk_sha256.clone(),
        eas: Some(deployment.eas),
        attester: Some(chain.address()),
        chain_id: Some(chain.chain_id()),
        ceremony: None,
    };
    for row in &rows {
        assert_eq!(row.circuit, "daily", "{row:?}");
        assert_eq!(row.anchor.as_ref().unwrap()["path"], "verified");
        let (_dir, report) = crate::attestation_paths::audited(&s, row, &node, &pins).await;
        let text = report.render();
        assert!(report.failed().is_empty(), "{text}");
        assert!(text.contains("aggregate of 30 daily commitments"), "{text}");
    }
}
