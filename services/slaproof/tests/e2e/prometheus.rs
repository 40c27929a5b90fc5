//! The Prometheus endpoints end to end: `slaproof up` with
//! `telemetry.metrics_listen`, real events evaluated, and both expositions
//! read with the Prometheus project's own Python parser (prometheus-client,
//! installed by `scripts/test`). A process of its own: the meter provider
//! is process-wide.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, Up, shared_tempdir, slaproof};

/// One sample as the parser read it: name, labels, value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: serde_json::Map<String, Value>,
    value: f64,
}

/// The venv's Python with prometheus-client; `None` (said loudly) when it
/// is missing outside CI.
fn parser_python() -> Option<PathBuf> {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/schemathesis-venv/bin/python");
    let works = Command::new(&python)
        .args(["-c", "import prometheus_client.parser"])
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        return Some(python);
    }
    let in_ci = slaproof_tests::chain::in_ci();
    assert!(
        !in_ci,
        "prometheus-client is missing under CI: scripts/test installs it"
    );
    eprintln!(
        "\n\n!!! prometheus-client (PyPI) is not installed in {}: the exposition is checked \
         by hand only; `scripts/test` installs it !!!\n\n",
        python.display()
    );
    None
}

const PARSE: &str = "import sys, json\n\
from prometheus_client.parser import text_string_to_metric_families\n\
print(json.dumps([[s.name, s.labels, s.value] for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]))\n";

/// The samples of an exposition, read by prometheus-client's parser (which
/// refuses malformed text), or by hand when it is missing.
fn parse(python: Option<&PathBuf>, text: &str) -> Vec<Sample> {
    let Some(python) = python else {
        return parse_by_hand(text);
    };
    let mut child = Command::new(python)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "prometheus-client refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<(String, serde_json::Map<String, Value>, f64)> =
        serde_json::from_slice(&output.stdout).unwrap();
    rows.into_iter()
        .map(|(name, labels, value)| Sample {
            name,
            labels,
            value,
        })
        .collect()
}

/// `name{a="b",…} value` lines, for runs without the parser.
fn parse_by_hand(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|l| !l.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap();
                    (k.to_owned(), Value::from(v.trim_matches('"')))
                })
                .collect();
            Sample {
                name: name.to_owned(),
                labels,
                value: value.parse().unwrap(),
            }
        })
        .collect()
}

/// The value of the demo SLA's `objective` in the series `name`.
fn slo_value(samples: &[Sample], name: &str, objective: &str) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.get("tenant") == Some(&json!("demo"))
                && s.labels.get("sla") == Some(&json!("acme-enterprise"))
                && s.labels.get("objective") == Some(&json!(objective))
        })
        .map(|s| s.value)
}

fn start_up(dir: &std::path::Path) -> (Up, String) {
    let mut command = slaproof(
        dir,
        &[
            ("RUST_LOG", "warn"),
            ("SLAPROOF_SERVER__LISTEN", "127.0.0.1:0"),
            ("SLAPROOF_TELEMETRY__METRICS_LISTEN", "127.0.0.1:0"),
            ("SLAPROOF_EVALUATOR__INTERVAL_SECS", "1"),
            ("SLAPROOF_EMBEDDED__ANVIL", "false"),
        ],
    );
    command.env("SLAPROOF_EMBEDDED__DATA_DIR", dir.join("data"));
    let up = support::start(command);
    let metrics = up
        .banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("Prometheus"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|l| l.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("the banner names the Prometheus address:\n{}", up.banner))
        .to_owned();
    (up, metrics)
}

#[tokio::test(flavor = "multi_thread")]
async fn up_serves_operator_metrics_and_every_slo_for_prometheus() {
    let python = parser_python();
    let dir = shared_tempdir("slaproof-prometheus-");
    let (up, metrics) = start_up(dir.path());
    let (url, key) = (up.url.clone(), up.ingest_key());
    let http = reqwest::Client::new();

    // Five successes and one provider failure, half a minute ago.
    let at = chrono::Utc::now() - chrono::Duration::seconds(30);
    let events: Vec<Value> = (0..6)
        .map(|i| {
            json!({
                "time": at.to_rfc3339(),
                "service": "chat-completions",
                // The demo SLA's customer, whose requests it counts.
                "customer": "acme-corp",
                "request_id": format!("prom-{i}"),
                "status": if i == 0 { 503 } else { 200 },
                "latency_ms": 400.0
            })
        })
        .collect();
    let response = http
        .post(format!("{url}/v1/events"))
        .bearer_auth(&key)
        .json(&events)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // One event refused.
    let invalid =
        json!([{"time": at.to_rfc3339(), "service": "chat-completions", "latency_ms": -5}]);
    let response = http
        .post(format!("{url}/v1/events"))
        .bearer_auth(&key)
        .json(&invalid)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);

    // The metrics are not on the public listener.
    for path in ["/metrics", "/metrics/slo"] {
        let status = http
            .get(format!("{url}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 404, "{path} on the public listener");
    }

    // The SLO series, once the minute is evaluated.
    let deadline = Instant::now() + Duration::from_secs(150);
    let samples = loop {
        let response = http
            .get(format!("{metrics}/metrics/slo"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            content_type.starts_with("text/plain; version=0.0.4"),
            "{content_type}"
        );
        let text = response.text().await.unwrap();
        let samples = parse(python.as_ref(), &text);
        if slo_value(&samples, "slaproof_slo_counted_events", "availability") == Some(6.0) {
            break samples;
        }
        assert!(
            Instant::now() < deadline,
            "the six events were not counted in /metrics/slo within 150 s:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let mut seen: std::collections::HashSet<String> =
        samples.iter().map(|s| s.name.clone()).collect();
    let value =
        |name| slo_value(&samples, name, "availability").unwrap_or_else(|| panic!("{name}"));
    assert_eq!(value("slo:objective:ratio"), 0.999);
    assert!((value("slo:error_budget:ratio") - 0.001).abs() < 1e-12);
    assert_eq!(value("slaproof_slo_good_events"), 5.0);
    assert!((value("slaproof_slo_compliance_ratio") - 5.0 / 6.0).abs() < 1e-12);
    assert!((value("pyrra_availability") - 5.0 / 6.0).abs() < 1e-12);
    // One bad in six against a 0.1% allowance: 166⅔ times the budget.
    let burn = (1.0 / 6.0) / 0.001;
    assert!((value("slo:period_burn_rate:ratio") - burn).abs() < 1e-6);
    assert!((value("slo:period_error_budget_remaining:ratio") - (1.0 - burn)).abs() < 1e-6);
    assert_eq!(value("slaproof_slo_met"), 0.0);
    assert!(
        value("slo:current_burn_rate:ratio") > 1.0,
        "the last hour burns"
    );
    let days = value("slo:time_period:days");
    assert!(
        (28.0..=31.0).contains(&days),
        "a calendar month, got {days}"
    );
    assert_eq!(value("sloth_slo_info"), 1.0);
    // The demo tenant's queues: its evaluation job at least.
    let queues: Vec<&str> = samples
        .iter()
        .filter(|s| {
            s.name == "slaproof_queue_waiting" && s.labels.get("tenant") == Some(&json!("demo"))
        })
        .filter_map(|s| s.labels.get("queue").and_then(Value::as_str))
        .collect();
    for queue in ["outbox", "webhook_deliveries", "attestations"] {
        assert!(queues.contains(&queue), "{queue} missing from {queues:?}");
    }
    assert!(queues.iter().any(|q| q.starts_with("jobs:")), "{queues:?}");
    // Every objective of the demo SLA is there.
    for objective in [
        "availability",
        "ttft-p95",
        "latency-p99",
        "minutes-available",
    ] {
        assert!(
            slo_value(&samples, "slo:objective:ratio", objective).is_some(),
            "{objective} has no series"
        );
    }

    // The process's own metrics: ingest, HTTP and the evaluator.
    let text = http
        .get(format!("{metrics}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let samples = parse(python.as_ref(), &text);
    let total = |name: &str| -> f64 {
        samples
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.value)
            .sum()
    };
    assert_eq!(
        total("slaproof_ingest_events_accepted_total"),
        6.0,
        "{text}"
    );
    assert!(
        total("slaproof_evaluator_tenants_evaluated_total") >= 1.0,
        "{text}"
    );
    assert!(
        samples
            .iter()
            .any(|s| s.name == "http_server_request_duration_seconds_count"
                && s.labels.get("http_route") == Some(&json!("/v1/events"))),
        "{text}"
    );
    seen.extend(samples.iter().map(|s| s.name.clone()));
    up.terminate();

    // Every series the shipped dashboard and rules query exists.
    for (source, expr) in shipped_queries() {
        for name in metric_names(&expr) {
            assert!(
                seen.contains(&name) || SEEN_ONLY_WHEN_SOMETHING_HAPPENS.contains(&name.as_str()),
                "{source} queries {name}, which slaproof does not serve: {expr}"
            );
        }
    }
}

/// Series that exist only once what they count happens: a probe runs, an
/// evaluation fails.
const SEEN_ONLY_WHEN_SOMETHING_HAPPENS: &[&str] = &[
    "slaproof_probes_runs_total",
    "slaproof_evaluator_failures_total",
    "slaproof_evaluator_sla_failures_total",
    "slaproof_ingest_histogram_points_refused_total",
    "slaproof_ingest_histogram_points_stored_total",
    "slaproof_ingest_gauges_accepted_total",
    "slaproof_ingest_gauges_refused_total",
    "slaproof_ingest_batches_refused_total",
    "slaproof_queue_oldest_seconds",
    // Prometheus's own, per target.
    "up",
];

/// The PromQL of the Grafana dashboard and of the Prometheus rule files in
/// `deploy/`, with where each is from; recording rules' own names count as
/// served.
fn shipped_queries() -> Vec<(String, String)> {
    let deploy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    let mut queries = Vec::new();
    fn exprs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr", Value::String(expr)) => out.push(expr.clone()),
                        _ => exprs(value, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| exprs(v, out)),
            _ => {}
        }
    }
    for (folder, ext) in [("grafana", "json"), ("prometheus", "yml")] {
        let Ok(entries) = std::fs::read_dir(deploy.join(folder)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some(ext) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let value: Value = if ext == "json" {
                serde_json::from_str(&text).unwrap()
            } else {
                serde_yaml_ng::from_str(&text).unwrap()
            };
            let mut found = Vec::new();
            exprs(&value, &mut found);
            queries.extend(found.into_iter().map(|e| (path.display().to_string(), e)));
        }
    }
    assert!(
        queries.iter().any(|(source, _)| source.ends_with(".json")),
        "no dashboard queries found in {}",
        deploy.display()
    );
    queries
}

/// The metric names a PromQL expression reads: identifiers outside label
/// matchers and not called as functions, slaproof's and the SLO families.
fn metric_names(expr: &str) -> Vec<String> {
    let mut outside = String::new();
    let mut depth = 0;
    for c in expr.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => outside.push(c),
            _ => {}
        }
    }
    outside
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|t| {
            [
                "slo:",
                "slaproof_",
                "http_server_",
                "pyrra_",
                "sloth_slo_info",
            ]
            .iter()
            .any(|p| t.starts_with(p))
                || *t == "up"
        })
        .map(str::to_owned)
        .collect()
}
