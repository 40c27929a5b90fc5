//! `slaproof up`'s first start gives the demo a history: a newcomer meets a
//! closed month within minutes, acme-corp's missed with a credit, its proof
//! anchored on up's own anvil, and the printed `slaproof verify` command
//! passes every check against that chain.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::{self, get_with, shared_tempdir, slaproof, text};

/// The value after `label` on the line of `lines` that starts with it.
fn after<'a>(lines: &'a [String], label: &str) -> &'a str {
    lines
        .iter()
        .find_map(|l| l.trim().strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {label} line in {lines:#?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn up_gives_the_demo_a_closed_month_with_its_credit_its_anchored_proof_and_a_passing_verify()
{
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if slaproof_chain::anvil::binary(&root).is_none() {
        assert!(
            !slaproof_tests::chain::in_ci(),
            "anvil is missing under CI: npm ci --prefix contracts"
        );
        eprintln!("skipped: no anvil (npm ci --prefix contracts)");
        return;
    }
    let dir = shared_tempdir("slaproof-history-");
    let data_dir: PathBuf = dir.path().join("data");
    let mut command = slaproof(
        dir.path(),
        &[
            ("SLAPROOF_SERVER__LISTEN", "127.0.0.1:0"),
            // A fifth of the default rate: the same story, quicker to write.
            ("SLAPROOF_DEMO__HISTORY_RATE", "0.02"),
        ],
    );
    command.env("SLAPROOF_EMBEDDED__DATA_DIR", &data_dir);
    let up = support::start(command);
    assert!(
        up.banner
            .contains("written at this first start as if received live"),
        "{}",
        up.banner
    );

    let ready = up
        .wait_for("History     ready", Duration::from_secs(900))
        .unwrap_or_else(|| panic!("no anchored proof of the history's month:\n{}", up.banner));
    println!("{}", ready.join("\n"));

    // The credit: a tenth of acme-corp's 10,000.00 EUR for availability.
    let credit = after(&ready, "credit");
    assert!(credit.starts_with("1000.00 EUR"), "{credit}");

    // The printed `slaproof verify`, with every pin, passes.
    let verify = after(&ready, "verify");
    let (env, command) = verify.split_once(' ').unwrap();
    let token = env.strip_prefix("SLAPROOF_TOKEN=").unwrap();
    let args: Vec<&str> = command
        .split_once(" -- ")
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    assert!(
        args.contains(&"--eas") && args.contains(&"--attester"),
        "{verify}"
    );
    let output = slaproof(dir.path(), &[("SLAPROOF_TOKEN", token)])
        .args(&args)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("anchor"), "{stdout}");
    // The history's days were anchored at this start, after the month: the
    // verdict says so, accepted by name, every other check passed.
    assert!(
        stdout.contains("WAIVED       days in time")
            && stdout.contains("VERIFIED, with checks the auditor waived: key setup, days in time"),
        "{stdout}"
    );

    // Each customer's month on its own requests: acme-corp's availability
    // missed, every objective of the others met, and only acme-corp owed.
    let banner: Vec<String> = up.banner.lines().map(str::to_owned).collect();
    let provider = after(&banner, "provider admin").to_owned();
    let closed = |periods: &serde_json::Value| periods["periods"].as_array().unwrap().clone();
    let (status, acme) = get_with(&up.url, "/v1/slas/acme-enterprise/periods", &provider).await;
    assert_eq!(status, 200, "{acme}");
    let availability = closed(&acme)
        .into_iter()
        .find(|p| p["objective"] == "availability")
        .unwrap_or_else(|| panic!("{acme}"));
    assert_eq!(availability["met"], false, "{availability}");
    for sla in ["globex-standard", "initech-pro", "chat-public"] {
        let (status, periods) =
            get_with(&up.url, &format!("/v1/slas/{sla}/periods"), &provider).await;
        assert_eq!(status, 200, "{periods}");
        let periods = closed(&periods);
        assert!(!periods.is_empty(), "{sla} has a closed month");
        for p in periods {
            assert_eq!(p["met"], true, "{sla}: {p}");
        }
    }
    let (status, credits) = get_with(&up.url, "/v1/credits", &provider).await;
    assert_eq!(status, 200, "{credits}");
    let owed: Vec<(&str, i64)> = credits["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["sla"].as_str().unwrap(),
                c["amount_minor"].as_i64().unwrap(),
            )
        })
        .filter(|(_, minor)| *minor != 0)
        .collect();
    assert_eq!(owed, [("acme-enterprise", 100_000)], "{credits}");

    up.terminate();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_history_written_late_in_a_month_measures_every_day_of_the_closed_month() {
    // Found when the date moved on: the history's evaluator ran one round
    // at its end, and a round measures the last five weeks of days only.
    // Written on the 27th, the closed month's first 22 days were never
    // measured, so its proof fell back to the threshold circuit and
    // `slaproof verify` said UNVERIFIED (daily commitments not checked).
    // The test above runs on today's date; this one pins a late one.
    let database = slaproof_tests::TestDatabase::create().await;
    let db = database.service_database().await;
    let dir = tempfile::tempdir().unwrap();
    let demo = slaproof::demo::ensure(&db, dir.path()).await.unwrap();
    let mut config = slaproof::Config::default();
    // A fifth of the default rate, as above: every day still has traffic.
    config.demo.history_rate = 0.02;
    let now: chrono::DateTime<chrono::Utc> = "2026-11-27T12:00:00Z".parse().unwrap();
    let written = slaproof::demo::history::ensure(&db, &config, demo.tenant, now)
        .await
        .unwrap()
        .expect("the demo's history is written");
    let closed = written.plan.closed;
    let mut tx = db.tenant_tx(demo.tenant).await.unwrap();
    let sla = slaproof_store::slas::find(&mut tx, "acme-enterprise", None)
        .await
        .unwrap();
    let measured = slaproof_store::measurements::days_of(
        &mut tx,
        sla.id,
        sla.version,
        "availability",
        closed.start,
        closed.end,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    // October in Berlin: 31 local days, the first from 30 September 22:00 UTC.
    assert_eq!(closed.start.to_rfc3339(), "2026-09-30T22:00:00+00:00");
    let starts: Vec<_> = measured.iter().map(|d| d.measurement.day_start).collect();
    assert_eq!(starts.len(), 31, "measured days: {starts:?}");
    assert_eq!(starts[0], closed.start);
}
