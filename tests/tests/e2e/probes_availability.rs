//! A probe that got no answer (it timed out, or nothing listened) is a
//! failure under an availability objective written either way: `good:
//! status < 500` and `bad: status >= 500` (the OpenSLO habit) agree.

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use chrono::Utc;
use reqwest::StatusCode;
use serde_json::json;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::tenants;
use slaproof_tests::fixtures::{self, trust_test_key};
use slaproof_tests::spawn_app_with;

/// A provider's endpoint on 127.0.0.1: `/ok` answers, `/slow` does not in time.
async fn target() -> SocketAddr {
    let app = axum::Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// An address nothing listens on: a port bound, then let go.
async fn nobody() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: probed
spec:
  service: probed-api
  window: {rolling: 1d}
  objectives:
  - name: good-filter
    target: 99%
    ratio:
      good: status < 500
      total: source == "probe"
  - name: bad-filter
    target: 99%
    ratio:
      bad: status >= 500
      total: source == "probe"
  - name: timeouts-forgiven
    target: 99%
    ratio:
      good: status < 500 or error_class == "timeout"
      total: source == "probe"
"#;

#[tokio::test]
async fn a_probe_without_an_answer_is_bad_under_a_bad_filter_too() {
    let target = target().await;
    let refused = nobody().await;
    let app = spawn_app_with(|config| {
        trust_test_key(config);
        config.probes.poll_interval_ms = 100;
        config.outbound = OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let http = reqwest::Client::new();
    let admin = fixtures::token(tenant, &["provider_admin"], None);
    let (status, body) = fixtures::call(
        &http,
        app.address,
        &admin,
        "POST",
        "/v1/slas",
        Some(json!({ "document": SLA })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let probes = [
        ("up", format!("http://{target}/ok"), 2000),
        ("timed-out", format!("http://{target}/slow"), 300),
        ("refused", format!("http://{refused}/ok"), 2000),
    ];
    for (name, url, timeout) in &probes {
        let (status, body) = fixtures::call(
            &http,
            app.address,
            &admin,
            "POST",
            "/v1/probes",
            Some(json!({
                "name": name,
                "service": "probed-api",
                "kind": "http",
                "url": url,
                "interval_secs": 3600,
                "timeout_ms": timeout,
            })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // Wait for the three runs.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let classes: Vec<(Option<i32>, Option<String>)> = loop {
        let mut tx = app.db.tenant_tx(tenant).await.unwrap();
        let rows = sqlx::query_as("SELECT status, error_class FROM events WHERE source = 'probe'")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        if rows.len() >= probes.len() || tokio::time::Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(classes.len(), 3, "{classes:?}");
    let mut seen: Vec<_> = classes
        .iter()
        .map(|(s, c)| (s.is_some(), c.clone().unwrap_or_default()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (false, "connect".to_owned()),
            (false, "timeout".to_owned()),
            (true, String::new())
        ]
    );

    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let run = slaproof_evaluator::evaluate_tenant_up_to(
        &mut tx,
        &slaproof_evaluator::Settings::default(),
        Some(Utc::now() + chrono::Duration::minutes(2)),
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let tally = |objective: &str| {
        let t = run
            .evaluations
            .iter()
            .find(|e| e.objective == objective)
            .unwrap_or_else(|| panic!("no evaluation of {objective}: {run:?}"))
            .budget
            .tally;
        (t.good, t.total)
    };
    // One answered, two without an answer: bad whichever way it is written.
    assert_eq!(tally("good-filter"), (1, 3));
    assert_eq!(tally("bad-filter"), (1, 3));
    // A `good:` filter may still forgive what it names.
    assert_eq!(tally("timeouts-forgiven"), (2, 3));
}
