//! The Prometheus listener over real HTTP: every route behind the
//! configured bearer token (#31 item 6: `/metrics/slo` named every tenant's
//! SLAs and customers to anyone who reached it), and at most
//! `telemetry.slo_series_per_tenant` objectives of one tenant per scrape.

use chrono::{Duration, Utc};
use slaproof::{Application, Config, Service};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::{slas, tenants};
use slaproof_tests::TestDatabase;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "prometheus-scrapes-here";

fn sla(name: &str) -> SlaDefinition {
    SlaDefinition::from_document(&format!(
        "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {{name: {name}}}\nspec:\n  service: chat\n  \
         window: {{calendar: month, timeZone: UTC}}\n  objectives:\n  - {{name: availability, target: 99%, ratio: {{good: status < 500}}}}\n"
    ))
    .unwrap()
}

async fn scrape(address: std::net::SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(format!("http://{address}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn every_metrics_route_needs_the_token_and_one_tenant_is_capped() {
    let database = TestDatabase::create().await;
    let mut config = Config::default();
    config.server.listen = ([127, 0, 0, 1], 0).into();
    config.telemetry.metrics_listen = Some(([127, 0, 0, 1], 0).into());
    config.telemetry.metrics_token =
        Some(serde_json::from_value(serde_json::json!(TOKEN)).unwrap());
    config.telemetry.slo_series_per_tenant = 2;
    let db = slaproof::app::open_database(&config, &database.owner, &database.service, false)
        .await
        .unwrap();
    // Three SLAs, each evaluated once.
    let tenant = tenants::create(&db, "acme", "acme").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for name in ["a-chat", "b-chat", "c-chat"] {
        slas::apply(&mut tx, &sla(name)).await.unwrap();
    }
    tx.commit().await.unwrap();
    let today = Utc::now().date_naive();
    slaproof_store::partitions::ensure(
        &db,
        today - chrono::Days::new(1),
        today + chrono::Days::new(1),
    )
    .await
    .unwrap();
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slaproof_evaluator::evaluate_tenant_up_to(
        &mut tx,
        &slaproof_evaluator::Settings::default(),
        Some(Utc::now() + Duration::minutes(1)),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let app = Application::build(config, db.clone(), &[Service::Api])
        .await
        .unwrap();
    let metrics = app.metrics_addr().unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run(shutdown.clone()));

    for path in ["/metrics", "/metrics/slo"] {
        for token in [None, Some("prometheus-scrapes-here!"), Some("")] {
            let (status, body) = scrape(metrics, path, token).await;
            assert_eq!(status, 401, "{path} with {token:?}: {body}");
            assert!(
                body.contains("telemetry.metrics_token") && !body.contains("a-chat"),
                "{body}"
            );
        }
    }
    let (status, _) = scrape(metrics, "/metrics", Some(TOKEN)).await;
    assert_eq!(status, 200);
    let (status, body) = scrape(metrics, "/metrics/slo", Some(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("sla=\"a-chat\"") && body.contains("sla=\"b-chat\""),
        "{body}"
    );
    assert!(
        !body.contains("sla=\"c-chat\""),
        "only the first two: {body}"
    );
    assert!(
        body.contains("slaproof_slo_series_truncated{tenant=\"acme\"} 1"),
        "{body}"
    );

    shutdown.cancel();
    server.await.unwrap().unwrap();
}
