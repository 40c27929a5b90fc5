//! The webhook event catalogue against what the platform really writes: stories that make the evaluator, maintenance, the compensation worker and the webhook worker write their facts, every outbox payload validated against the JSON Schema the API serves for its type (with Python's `jsonschema`), and no type written without a catalogue entry.
//!
//! The schemas are fetched over HTTP from a running application, as a
//! receiver would fetch them, so what is checked is what is served. The
//! payloads come from the real code paths: hand-written payloads would
//! only check the schemas against themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use axum::http::StatusCode as AxumStatus;
use axum::routing::post;
use chrono::{Days, Duration, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_app::Principal;
use slaproof_app::credits::NewFee;
use slaproof_app::maintenance::NewWindow;
use slaproof_domain::minute::floor_minute;
use slaproof_domain::sla::SlaDefinition;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::thresholds::{self, Lines};
use slaproof_store::{Database, customers, slas, tenants};
use slaproof_tests::fixtures::{self, trust_test_key};
use slaproof_tests::scenario::{Request, Scenario, at};

/// Written facts: (type, data).
type Told = Vec<(String, Value)>;

/// A month under an SLA with a composite (availability weighs 3), the
/// customer's own lines and a no-data policy: what a provider runs.
const MONTHLY: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    weight: 3
    ratio: {good: status < 500}
  - name: latency
    target: 99%
    threshold: {field: latency, op: lte, value: 800ms}
  policy:
    noData: {after: 15m}
"#;

/// Two objectives over a rolling week, one of which a second version
/// drops: its open alerts and signals are resolved with a reason instead
/// of a summary (the other shape of those types).
const ROLLING: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-rolling
spec:
  service: chat
  customer: acme-corp
  window: {rolling: 7d}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
  - name: served
    target: 99%
    ratio: {good: status < 500}
"#;

/// One request every `step` over `[from, to)`, failed when `bad`.
fn every(step: Duration, from: &str, to: &str, bad: bool) -> Vec<Request> {
    let (from, to) = (at(from), at(to));
    (0..)
        .map(|i| from + step * i)
        .take_while(|t| *t < to)
        .map(|t| Request::at(t, !bad))
        .collect()
}

/// November: a healthy month whose last hour fails (alerts, at risk,
/// budget exhausted, degrade, the customer's lines crossed); its close
/// (closed, breached, composite); December's first minutes (recoveries),
/// a silence (no data) and its end; an emergency window over the failing
/// hour accepted by the customer (the breach withdrawn), and a planned
/// window announced then cancelled.
async fn a_month_that_breaches() -> Told {
    let s = Scenario::new(MONTHLY, "2026-10-31", "2026-12-02").await;
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap().id;
    let customer = customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .expect("the scenario's customer")
        .id;
    let lines = Lines {
        compliance_below_ppm: Some(999_500),
        budget_remaining_below_ppm: Some(500_000),
        burn_rate_above_milli: Some(2_000),
    };
    thresholds::set(&mut tx, sla, customer, "availability", lines)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let minute = Duration::minutes(1);
    let ten_s = Duration::seconds(10);
    s.insert(&every(
        minute,
        "2026-11-01T00:00:00Z",
        "2026-11-30T23:00:00Z",
        false,
    ))
    .await;
    s.insert(&every(
        ten_s,
        "2026-11-30T23:00:00Z",
        "2026-12-01T00:00:00Z",
        true,
    ))
    .await;
    s.run("2026-11-30T23:30:00Z").await;
    s.insert(&every(
        ten_s,
        "2026-12-01T00:00:00Z",
        "2026-12-01T00:20:00Z",
        false,
    ))
    .await;
    // November closes (5 minutes' grace), breached.
    s.run("2026-12-01T00:20:00Z").await;
    // Twenty minutes of silence, then data again.
    s.run("2026-12-01T00:40:00Z").await;
    s.insert(&every(
        ten_s,
        "2026-12-01T00:40:00Z",
        "2026-12-01T00:45:00Z",
        false,
    ))
    .await;
    s.run("2026-12-01T00:45:00Z").await;

    // Announced now, after it happened: an emergency window, excluded once
    // the customer accepts it, which withdraws November's breach.
    let (app, provider) = s.app().await;
    let window = app
        .create_window(
            &provider,
            NewWindow {
                sla: Some("chat-sla".to_owned()),
                starts_at: at("2026-11-30T23:00:00Z"),
                ends_at: at("2026-12-01T00:00:00Z"),
                description: "failover gone wrong".to_owned(),
            },
        )
        .await
        .unwrap();
    let acme = app
        .caller(Principal {
            subject: "cto@acme".to_owned(),
            tenant: s.tenant,
            roles: vec!["customer_admin".to_owned()],
            customer: Some(customer),
            embed: None,
        })
        .await
        .unwrap();
    app.accept_window(&acme, "chat-sla", window.window.id)
        .await
        .unwrap();
    s.run("2026-12-01T00:46:00Z").await;

    // A tenant-wide window well ahead, then cancelled.
    let ahead = floor_minute(Utc::now()) + Duration::days(10);
    let planned = app
        .create_window(
            &provider,
            NewWindow {
                sla: None,
                starts_at: ahead,
                ends_at: ahead + Duration::hours(1),
                description: "database upgrade".to_owned(),
            },
        )
        .await
        .unwrap();
    app.cancel_window(&provider, planned.window.id)
        .await
        .unwrap();
    s.told().await
}

/// A month credited by a tiered policy (10% of the fee below 99.9%,
/// corrected by late data): see [`a_month_credited`].
const CREDITED: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-credited
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  policy:
    lateGrace: 1h
    lateCorrections: true
  credits:
    currency: EUR
    capPercentOfFee: 30
    tiered:
    - objective: availability
      tiers:
      - {below: "99.9", percent: "10"}
      - {below: "99", percent: "25"}
"#;

/// November breached under [`CREDITED`]: its credit is not computed at
/// first (no fee on file), then issued once the fee is recorded and the
/// provider asks again, then corrected by failures reported late.
/// November closed and attested on a real anvil: `attestation.anchored`
/// for the provable objectives, `attestation.failed` for the quality score
/// (`tests/tests/e2e/attestation.rs` tells the story in full).
async fn a_month_attested() -> Told {
    use crate::attestation::{anvil_binary, chain_on, closed_november, worker};
    let s = closed_november().await;
    let Some(binary) = anvil_binary() else {
        return s.told().await;
    };
    let node = slaproof_chain::anvil::Anvil::start(&binary, 0, None).expect("anvil starts");
    let (chain, deployment) = chain_on(&node, 30).await;
    let w = worker(
        &s,
        Some(slaproof_attestation::worker::Anchoring { chain, deployment }),
    )
    .await;
    w.work_due().await.unwrap();
    node.stop();
    s.told().await
}

async fn a_month_credited() -> Told {
    let s = Scenario::new(CREDITED, "2026-11-01", "2026-12-31").await;
    let (app, provider) = s.app().await;
    let compensate = async || {
        slaproof_compensation::work_due(
            &s.db,
            &slaproof_compensation::Settings::default(),
            "webhook-events",
        )
        .await
        .unwrap()
    };
    // The SLA is seen from the month's start: the month is its to judge.
    s.run("2026-11-01T00:00:00Z").await;
    let november: Vec<Request> = (0..1000)
        .map(|i| Request::at(at("2026-11-10T00:00:00Z") + Duration::minutes(i), i >= 5))
        .collect();
    s.insert(&november).await;
    s.run("2026-12-01T02:00:00Z").await;
    compensate().await;
    app.set_customer_fee(
        &provider,
        "acme-corp",
        NewFee {
            effective_from: at("2026-01-01T00:00:00Z").into(),
            currency: "EUR".to_owned(),
            amount: "1000.00".to_owned(),
            minor_units: None,
        },
    )
    .await
    .unwrap();
    app.recompute_credit(&provider, "chat-credited", at("2026-11-01T00:00:00Z"))
        .await
        .unwrap();
    compensate().await;
    let late: Vec<Request> = (0..10)
        .map(|i| Request {
            occurred_at: at("2026-11-20T00:00:00Z") + Duration::minutes(i),
            received_at: at("2026-12-03T00:00:00Z"),
            status: 500,
        })
        .collect();
    s.insert(&late).await;
    s.run("2026-12-03T00:01:00Z").await;
    compensate().await;
    s.told().await
}

/// An hour of failures under [`ROLLING`] (by the clock: a version takes
/// effect when applied), then a version without `served`.
async fn an_objective_removed() -> Told {
    let now = floor_minute(Utc::now());
    let today = now.date_naive();
    let s = Scenario::new(
        ROLLING,
        &(today - Days::new(1)).to_string(),
        &(today + Days::new(1)).to_string(),
    )
    .await;
    let start = now - Duration::hours(2);
    let failing: Vec<Request> = (0..120)
        .map(|i| Request::at(start + Duration::seconds(30 * i), false))
        .collect();
    s.insert(&failing).await;
    s.run(&(start + Duration::hours(1)).to_rfc3339()).await;
    let v2 = ROLLING.split("  - name: served").next().unwrap();
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(v2).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let applied = floor_minute(Utc::now());
    s.run(&(applied + Duration::minutes(1)).to_rfc3339()).await;
    s.told().await
}

/// A receiver on 127.0.0.1 answering 410 Gone to everything.
async fn gone_receiver() -> (SocketAddr, Arc<Mutex<usize>>) {
    let hits = Arc::new(Mutex::new(0));
    let counted = hits.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap() += 1;
                AxumStatus::GONE
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, hits)
}

/// Everything in the outbox of `db`, every tenant, in order.
async fn outbox_of(db: &Database, tenant: slaproof_domain::ids::TenantId) -> Told {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rows = sqlx::query_as("SELECT event_type, payload FROM outbox ORDER BY seq")
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    rows
}

/// The Python interpreter with `jsonschema`: `SLAPROOF_JSONSCHEMA_PYTHON`,
/// else the venv `scripts/test` makes (schemathesis depends on
/// `jsonschema`), else the system's `python3`. `None` (said loudly) when
/// none has it outside CI; under CI that fails the test.
fn jsonschema_python() -> Option<PathBuf> {
    let venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/schemathesis-venv/bin/python");
    let candidates = std::env::var_os("SLAPROOF_JSONSCHEMA_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([venv, PathBuf::from("python3")]);
    for python in candidates {
        let works = Command::new(&python)
            .args(["-c", "from jsonschema import Draft202012Validator"])
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            return Some(python);
        }
    }
    let in_ci = slaproof_tests::chain::in_ci();
    assert!(
        !in_ci,
        "jsonschema (PyPI) is missing under CI: install it into target/schemathesis-venv"
    );
    eprintln!(
        "\n\n!!! jsonschema (PyPI) is not installed: the payloads are NOT validated against \
         their schemas; `pip install jsonschema` into target/schemathesis-venv !!!\n\n"
    );
    None
}

/// Validates each fact against its type's schema (draft 2020-12, formats
/// checked where the library can) and each schema's own examples; answers
/// the failures, one line each.
fn validate(python: &PathBuf, schemas: &BTreeMap<String, Value>, told: &Told) -> Vec<String> {
    const SCRIPT: &str = r#"
import json, os, sys
from jsonschema import Draft202012Validator
folder = sys.argv[1]
schemas = {}
for name in os.listdir(os.path.join(folder, "schemas")):
    with open(os.path.join(folder, "schemas", name)) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    schemas[name[:-len(".json")]] = Draft202012Validator(
        schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
failures = 0
def check(kind, data, where):
    global failures
    for error in schemas[kind].iter_errors(data):
        failures += 1
        print(f"{kind} ({where}) at /{'/'.join(map(str, error.absolute_path))}: {error.message}"[:600])
for kind, validator in sorted(schemas.items()):
    for example in validator.schema.get("examples", []):
        check(kind, example, "its example")
with open(os.path.join(folder, "told.jsonl")) as f:
    for n, line in enumerate(f):
        fact = json.loads(line)
        check(fact["type"], fact["data"], f"fact {n}")
sys.exit(1 if failures else 0)
"#;
    let folder =
        std::env::temp_dir().join(format!("slaproof-webhook-events-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(folder.join("schemas")).unwrap();
    for (name, schema) in schemas {
        std::fs::write(
            folder.join("schemas").join(format!("{name}.json")),
            schema.to_string(),
        )
        .unwrap();
    }
    let lines: String = told
        .iter()
        .map(|(kind, data)| format!("{}\n", json!({"type": kind, "data": data})))
        .collect();
    std::fs::write(folder.join("told.jsonl"), lines).unwrap();
    let out = Command::new(python)
        .args(["-c", SCRIPT])
        .arg(&folder)
        .output()
        .expect("python runs");
    let _ = std::fs::remove_dir_all(&folder);
    let printed = String::from_utf8_lossy(&out.stdout);
    let mut failures: Vec<String> = printed.lines().map(str::to_owned).collect();
    if !out.status.success() && failures.is_empty() {
        failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    failures
}

#[tokio::test]
async fn every_fact_the_platform_writes_validates_against_the_schema_served_for_its_type() {
    // The running platform: it serves the catalogue, and its webhook
    // worker writes the webhook facts (a test-send to a receiver that
    // answers 410 disables the endpoint).
    let (receiver, hits) = gone_receiver().await;
    let app = slaproof_tests::spawn_app_with(|config| {
        trust_test_key(config);
        config.outbound = OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
        config.webhooks.poll_interval_ms = 50;
    })
    .await;
    let http = reqwest::Client::new();

    // The catalogue needs no token.
    let listed = app.client.get("/v1/webhook-event-types").await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    let catalogue = listed.body["data"].as_array().unwrap().clone();
    let mut schemas = BTreeMap::new();
    for entry in &catalogue {
        let name = entry["type"].as_str().unwrap().to_owned();
        assert_eq!(entry["version"], 1, "{entry}");
        assert!(entry["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(entry["example"].is_object(), "{entry}");
        let response = http
            .get(format!(
                "http://{}/v1/webhook-event-types/{name}",
                app.address
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        assert_eq!(
            response.headers()[reqwest::header::CONTENT_TYPE],
            "application/schema+json"
        );
        let schema: Value = response.json().await.unwrap();
        assert_eq!(schema["title"], name.as_str());
        assert_eq!(schema["examples"][0], entry["example"], "{name}");
        schemas.insert(name, schema);
    }
    let reserved: BTreeSet<&str> = catalogue
        .iter()
        .filter(|e| e["reserved"] == true)
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(reserved.is_empty(), "{reserved:?}");
    // An unknown type: a problem document.
    let unknown = app.client.get("/v1/webhook-event-types/sla.nope").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.content_type.as_deref(),
        Some("application/problem+json")
    );
    assert_eq!(unknown.body["status"], 404);
    assert!(
        unknown.body["detail"]
            .as_str()
            .unwrap()
            .contains("sla.nope")
    );

    // The webhook facts, through REST and the worker.
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let token = fixtures::token(tenant, &["provider_admin"], None);
    // Over GraphQL, the same catalogue and schemas (with a token).
    let (status, answer) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        "/graphql",
        Some(json!({"query": r#"{ webhookEventTypes
            schema: webhookEventTypeSchema(type: "credit.corrected") }"#})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["data"]["webhookEventTypes"], json!(catalogue));
    assert_eq!(answer["data"]["schema"], schemas["credit.corrected"]);
    let (_, answer) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        "/graphql",
        Some(json!({"query": r#"{ webhookEventTypeSchema(type: "sla.nope") }"#})),
    )
    .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "NOT_FOUND",
        "{answer}"
    );
    let (status, made) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        "/v1/webhook-endpoints",
        Some(json!({"url": format!("http://{receiver}/hook"), "description": "retired"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let endpoint = made["endpoint"]["id"].as_str().unwrap().to_owned();
    let (status, tested) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        &format!("/v1/webhook-endpoints/{endpoint}/test"),
        None,
    )
    .await;
    assert!(status.is_success(), "{status} {tested}");
    let mut platform = Vec::new();
    for _ in 0..200 {
        platform = outbox_of(&app.db, tenant).await;
        if platform.iter().any(|(t, _)| t == "endpoint.disabled") {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    assert!(*hits.lock().unwrap() >= 1, "the receiver was never called");

    let mut told = platform;
    told.extend(a_month_that_breaches().await);
    told.extend(an_objective_removed().await);
    told.extend(a_month_credited().await);
    told.extend(a_month_attested().await);

    // Every type written has a catalogue entry, and is not a reserved one.
    let written: BTreeSet<&str> = told.iter().map(|(t, _)| t.as_str()).collect();
    let missing: Vec<&&str> = written
        .iter()
        .filter(|t| !schemas.contains_key(**t))
        .collect();
    assert!(
        missing.is_empty(),
        "written without a catalogue entry: {missing:?}"
    );
    assert!(written.is_disjoint(&reserved), "{written:?}");
    // What the stories must have made, so that the check means something.
    let expected = BTreeSet::from([
        "attestation.anchored",
        "attestation.failed",
        "credit.corrected",
        "credit.issued",
        "credit.not_computed",
        "endpoint.disabled",
        "maintenance.accepted",
        "maintenance.cancelled",
        "maintenance.scheduled",
        "sla.breach_withdrawn",
        "sla.breached",
        "sla.no_data",
        "sla.period_closed",
        "sla.threshold_crossed",
        "sla.threshold_recovered",
        "slo.at_risk",
        "slo.budget_exhausted",
        "slo.burn_rate_alert",
        "slo.degrade_level_changed",
        "webhook.test",
    ]);
    let mut expected = expected;
    if crate::attestation::anvil_binary().is_none() {
        expected.remove("attestation.anchored");
    }
    let not_made: Vec<&&str> = expected.difference(&written).collect();
    assert!(
        not_made.is_empty(),
        "the stories did not write {not_made:?}"
    );
    // Both shapes of the shared types: evaluated, and resolved because an
    // objective was removed; and the composite's period facts.
    for kind in [
        "slo.burn_rate_alert",
        "slo.at_risk",
        "slo.budget_exhausted",
        "slo.degrade_level_changed",
    ] {
        assert!(
            told.iter()
                .any(|(t, p)| t == kind && p["reason"] == "objective removed"),
            "{kind} without its removed shape"
        );
    }
    assert!(
        told.iter()
            .any(|(t, p)| t == "sla.breached" && p["composite"] == true),
        "no composite breach"
    );
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (t, _) in &told {
        *counts.entry(t.as_str()).or_default() += 1;
    }
    eprintln!("facts written, by type: {counts:?}");

    if let Some(python) = jsonschema_python() {
        let failures = validate(&python, &schemas, &told);
        assert!(
            failures.is_empty(),
            "{} payloads (or examples) do not validate:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    app.stop().await.unwrap();
}
