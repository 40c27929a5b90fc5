//! `slaproof sla apply` on an SLA that exists: OpenSLO files of one service
//! merge, `--replace` makes the file the whole SLA, and a version that
//! drops objectives needs `--drop-objectives`.

use std::process::Command;

use slaproof_tests::TestDatabase;

use crate::support::{slaproof, text};

/// An SLO of `chat-api` over a rolling 28 days, on `indicator` (an OpenSLO
/// `indicator.spec`).
fn slo(name: &str, indicator: &str, objective: &str) -> String {
    format!(
        "apiVersion: openslo/v1
kind: SLO
metadata:
  name: {name}
spec:
  service: chat-api
  indicator:
    metadata:
      name: {name}-sli
    spec: {indicator}
  timeWindow:
    - duration: 28d
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - {objective}
"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn openslo_files_merge_and_dropping_objectives_needs_the_flag() {
    let database = TestDatabase::create().await;
    let dir = tempfile::tempdir().unwrap();
    let service_url = database.service_url();
    let owner_url = database.owner_url();
    let env = [
        ("SLAPROOF_DATABASE__URL", service_url.as_str()),
        ("SLAPROOF_DATABASE__MIGRATE_URL", owner_url.as_str()),
    ];
    let cli = |args: &[&str]| {
        let out = Command::output(slaproof(dir.path(), &env).args(args)).expect("slaproof runs");
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    assert!(cli(&["migrate"]).0);
    assert!(cli(&["tenant", "create", "acme-ai"]).0);

    let availability = dir.path().join("availability.yaml");
    std::fs::write(
        &availability,
        slo(
            "availability",
            "{ratioMetric: {counter: true, bad: {metricSource: {type: slaproof, spec: {filter: \"status >= 500\"}}}, total: {metricSource: {type: slaproof, spec: {filter: \"source == \\\"provider\\\"\"}}}}}",
            "targetPercent: 99.9",
        ),
    )
    .unwrap();
    let ttft = dir.path().join("ttft.yaml");
    std::fs::write(
        &ttft,
        slo(
            "ttft-p95",
            "{thresholdMetric: {metricSource: {type: slaproof, spec: {field: ttft_ms}}}}",
            "{op: lte, value: 800, target: 0.95}",
        ),
    )
    .unwrap();
    let apply = |file: &std::path::Path, flags: &[&str]| {
        let mut args = vec![
            "sla",
            "apply",
            "--tenant",
            "acme-ai",
            "-f",
            file.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        cli(&args)
    };

    let (ok, out, err) = apply(&availability, &[]);
    assert!(ok && out.contains("created: version 1"), "{out}{err}");
    // The second file adds its objective; the first's stays.
    let (ok, out, err) = apply(&ttft, &[]);
    assert!(ok && out.contains("updated: version 2"), "{out}{err}");
    let (_, exported, _) = cli(&["sla", "export", "--tenant", "acme-ai", "chat-api"]);
    assert!(
        exported.contains("name: availability") && exported.contains("name: ttft-p95"),
        "{exported}"
    );

    // The TTFT file as the whole SLA would drop availability: refused,
    // naming it and the flag.
    let (ok, out, err) = apply(&ttft, &["--replace"]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("\"availability\"") && err.contains("--drop-objectives"),
        "{err}"
    );
    let (ok, out, err) = apply(&ttft, &["--replace", "--drop-objectives"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("updated: version 3") && out.contains("dropped objectives: availability"),
        "{out}"
    );
}
