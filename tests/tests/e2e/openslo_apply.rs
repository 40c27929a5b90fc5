//! Applying documents to an SLA that exists: OpenSLO files of one service,
//! one SLO per file, each keep their objective; a document that would drop
//! objectives (native, or an OpenSLO `replace`) is refused naming them
//! unless the caller confirms, and the answer lists what it dropped.

use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_tests::world::{DEMO_SLA, World, world};

/// An availability SLO of `chat-api` over a rolling 28 days.
fn availability(target_percent: &str) -> String {
    format!(
        r#"
apiVersion: openslo/v1
kind: SLO
metadata:
  name: availability
spec:
  service: chat-api
  indicator:
    metadata:
      name: chat-errors
    spec:
      ratioMetric:
        counter: true
        bad:
          metricSource:
            type: slaproof
            spec:
              filter: status >= 500
        total:
          metricSource:
            type: slaproof
            spec:
              filter: source == "provider"
  timeWindow:
    - duration: 28d
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - targetPercent: {target_percent}
"#
    )
}

/// A time-to-first-token SLO of `chat-api` over a rolling `window`.
fn ttft(window: &str) -> String {
    format!(
        r#"
apiVersion: openslo/v1
kind: SLO
metadata:
  name: ttft-p95
spec:
  service: chat-api
  indicator:
    metadata:
      name: chat-ttft
    spec:
      thresholdMetric:
        metricSource:
          type: slaproof
          spec:
            field: ttft_ms
  timeWindow:
    - duration: {window}
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - op: lte
      value: 800
      target: 0.95
"#
    )
}

async fn apply(w: &World, body: Value) -> (StatusCode, Value) {
    let admin = w.token(&["provider_admin"], None);
    w.call("POST", "/v1/slas", &admin, Some(body)).await
}

/// The objectives of the SLA in force, by name, with their targets.
async fn objectives(w: &World, sla: &str) -> (i64, Vec<(String, u64)>) {
    let admin = w.token(&["provider_admin"], None);
    let (status, body) = w
        .call("GET", &format!("/v1/slas/{sla}"), &admin, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let objectives = body["objectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap().to_owned(),
                o["target_ppm"].as_u64().unwrap(),
            )
        })
        .collect();
    (body["version"].as_i64().unwrap(), objectives)
}

fn named(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, t)| ((*n).to_owned(), *t)).collect()
}

#[tokio::test]
async fn openslo_files_of_one_service_each_keep_their_objective() {
    let w = world().await;
    let (status, body) = apply(&w, json!({ "document": availability("99.9") })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["name"], "chat-api");
    assert_eq!(body["dropped"], json!([]));

    // The TTFT file adds its objective; availability stays.
    let (status, body) = apply(&w, json!({ "document": ttft("28d") })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["outcome"].as_str(), body["version"].as_i64()),
        (Some("updated"), Some(2))
    );
    assert_eq!(body["dropped"], json!([]));
    assert_eq!(
        objectives(&w, "chat-api").await,
        (
            2,
            named(&[("availability", 999_000), ("ttft-p95", 950_000)])
        )
    );

    // The availability file again, with a new target: it replaces its own
    // objective only.
    let (status, body) = apply(&w, json!({ "document": availability("99.5") })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["version"], 3);
    assert_eq!(
        objectives(&w, "chat-api").await,
        (
            3,
            named(&[("availability", 995_000), ("ttft-p95", 950_000)])
        )
    );
    // And once more unchanged: nothing new.
    let (status, body) = apply(&w, json!({ "document": availability("99.5") })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["outcome"].as_str(), body["version"].as_i64()),
        (Some("unchanged"), Some(3))
    );
}

#[tokio::test]
async fn replacing_with_an_openslo_file_that_drops_objectives_needs_confirming() {
    let w = world().await;
    for document in [availability("99.9"), ttft("28d")] {
        let (status, body) = apply(&w, json!({ "document": document })).await;
        assert!(status.is_success(), "{body}");
    }
    let (status, body) = apply(&w, json!({ "document": ttft("28d"), "replace": true })).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("\"availability\""), "{detail}");
    assert!(detail.contains("drop_objectives"), "{detail}");
    assert_eq!(objectives(&w, "chat-api").await.0, 2);

    let (status, body) = apply(
        &w,
        json!({ "document": ttft("28d"), "replace": true, "drop_objectives": true }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dropped"], json!(["availability"]));
    assert_eq!(
        objectives(&w, "chat-api").await,
        (3, named(&[("ttft-p95", 950_000)]))
    );
}

#[tokio::test]
async fn a_native_document_that_drops_an_objective_is_refused_unless_confirmed() {
    let w = world().await;
    // The demo SLA without its last objective (minutes-available).
    let cut = DEMO_SLA
        .find("  - name: minutes-available")
        .expect("the demo SLA's last objective");
    let fewer = &DEMO_SLA[..cut];
    let (status, body) = apply(&w, json!({ "document": fewer })).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("\"minutes-available\""),
        "{body}"
    );
    assert_eq!(objectives(&w, "acme-enterprise").await.1.len(), 4);

    let (status, body) = apply(&w, json!({ "document": fewer, "drop_objectives": true })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dropped"], json!(["minutes-available"]));
    assert_eq!(objectives(&w, "acme-enterprise").await.1.len(), 3);
}

#[tokio::test]
async fn a_merged_slo_must_keep_the_slas_window_and_service() {
    let w = world().await;
    let (status, body) = apply(&w, json!({ "document": availability("99.9") })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = apply(&w, json!({ "document": ttft("7d") })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("rolling 28d") && detail.contains("rolling 7d"),
        "{detail}"
    );
    // The SLA named after another service: the annotation names it.
    let other = ttft("28d")
        .replace("service: chat-api", "service: embeddings")
        .replace(
            "  name: ttft-p95\n",
            "  name: ttft-p95\n  annotations:\n    slaproof.dev/sla: chat-api\n",
        );
    let (status, body) = apply(&w, json!({ "document": other })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("\"chat-api\"") && detail.contains("\"embeddings\""),
        "{detail}"
    );
    // Replacing the whole SLA may change its window.
    let (status, body) = apply(
        &w,
        json!({ "document": ttft("7d"), "replace": true, "drop_objectives": true }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dropped"], json!(["availability"]));
}

#[tokio::test]
async fn a_merged_slo_keeps_what_the_file_does_not_say_of_the_sla() {
    let w = world().await;
    let native = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-api
  displayName: Chat API for Acme
spec:
  service: chat-api
  customer: acme-corp
  scope: service
  window: {rolling: 28d}
  policy:
    lateGrace: 2h
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
"#;
    let (status, body) = apply(&w, json!({ "document": native })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = apply(&w, json!({ "document": ttft("28d") })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let admin = w.token(&["provider_admin"], None);
    let (status, sla) = w.call("GET", "/v1/slas/chat-api", &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{sla}");
    assert_eq!(
        (&sla["display_name"], &sla["customer_ref"], &sla["version"]),
        (&json!("Chat API for Acme"), &json!("acme-corp"), &json!(2)),
        "{sla}"
    );
    let (status, exported) = w
        .call("GET", "/v1/slas/chat-api/export", &admin, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{exported}");
    let exported = exported.as_str().unwrap();
    assert!(exported.contains("lateGrace: 2h"), "{exported}");
    // Nor does a file that names the customer but no scope widen or
    // narrow whose requests count: the SLA's scope stays.
    assert!(exported.contains("scope: service"), "{exported}");
    let with_customer = ttft("28d").replace(
        "  name: ttft-p95\n",
        "  name: ttft-p95\n  annotations:\n    slaproof.dev/customer: acme-corp\n",
    );
    let (status, body) = apply(&w, json!({ "document": with_customer })).await;
    assert!(status.is_success(), "{status} {body}");
    let (_, exported) = w
        .call("GET", "/v1/slas/chat-api/export", &admin, None)
        .await;
    assert!(
        exported.as_str().unwrap().contains("scope: service"),
        "{exported}"
    );
    // A file that states the scope sets it.
    let scoped = ttft("28d").replace(
        "  name: ttft-p95\n",
        "  name: ttft-p95\n  annotations:\n    slaproof.dev/customer: acme-corp\n    slaproof.dev/scope: customer\n",
    );
    let (status, body) = apply(&w, json!({ "document": scoped })).await;
    assert!(status.is_success(), "{status} {body}");
    let (_, exported) = w
        .call("GET", "/v1/slas/chat-api/export", &admin, None)
        .await;
    assert!(
        exported.as_str().unwrap().contains("scope: customer"),
        "{exported}"
    );
    // The file's policy annotation, when it has one, is the SLA's.
    let with_policy = ttft("28d").replace(
        "  name: ttft-p95\n",
        "  name: ttft-p95\n  annotations:\n    slaproof.dev/policy: '{\"lateGrace\": \"30m\"}'\n",
    );
    let (status, body) = apply(&w, json!({ "document": with_policy })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, exported) = w
        .call("GET", "/v1/slas/chat-api/export", &admin, None)
        .await;
    assert!(
        exported.as_str().unwrap().contains("lateGrace: 30m"),
        "{exported}"
    );
}

#[tokio::test]
async fn graphql_applies_with_the_same_rules() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let gql = async |variables: Value| {
        let (status, body) = w
            .call(
                "POST",
                "/graphql",
                &admin,
                Some(json!({
                    "query": "mutation($document: String!, $replace: Boolean, $drop: Boolean) { \
                        applySla(document: $document, replace: $replace, dropObjectives: $drop) \
                        { name version outcome dropped } }",
                    "variables": variables,
                })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    };
    gql(json!({ "document": availability("99.9") })).await;
    let merged = gql(json!({ "document": ttft("28d") })).await;
    assert_eq!(
        merged["data"]["applySla"],
        json!({"name": "chat-api", "version": 2, "outcome": "updated", "dropped": []}),
        "{merged}"
    );
    let refused = gql(json!({ "document": ttft("28d"), "replace": true })).await;
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("\"availability\""), "{refused}");
    let replaced = gql(json!({ "document": ttft("28d"), "replace": true, "drop": true })).await;
    assert_eq!(
        replaced["data"]["applySla"]["dropped"],
        json!(["availability"]),
        "{replaced}"
    );
}

#[tokio::test]
async fn a_new_version_says_when_it_takes_effect() {
    let s = slaproof_tests::scenario::Scenario::new(
        r#"
apiVersion: slaproof/v1
kind: SLA
metadata: {name: chat-sla}
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - {name: availability, target: 99%, ratio: {good: status < 500}}
"#,
        "2026-12-01",
        "2026-12-01",
    )
    .await;
    let (app, admin) = s.app().await;
    let lowered = r#"
apiVersion: slaproof/v1
kind: SLA
metadata: {name: chat-sla}
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - {name: availability, target: 95%, ratio: {good: status < 500}}
"#;
    let applied = app
        .apply_sla(&admin, lowered, Default::default())
        .await
        .unwrap();
    assert_eq!(applied.version, 2);
    // Applied this month, it takes effect when the month ends.
    let now = chrono::Utc::now();
    let next_month = slaproof_domain::window::TimeWindow::Calendar {
        unit: slaproof_domain::window::CalendarUnit::Month,
        time_zone: "UTC".parse().unwrap(),
    }
    .period_containing(now)
    .end;
    assert_eq!(applied.takes_effect_at, Some(next_month));
}
