//! The provider's view of its customers through the real HTTP API: customers
//! ranked by their SLAs' bad requests this period, and an objective's bad
//! events broken down by model, attribute or customer (on a service-wide
//! SLA), equal to what the evaluator counted; a customer's token refused
//! both the ranking and any breakdown by customer; bad asks refused by name.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Value, json};
use slaproof_store::{customers, ingest_keys, tenants};
use slaproof_tests::{TestApp, fixtures, spawn_app_with};

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

async fn call(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (reqwest::StatusCode, Value) {
    fixtures::call(
        &reqwest::Client::new(),
        app.address,
        token,
        method,
        path,
        body,
    )
    .await
}

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: {NAME}
spec:
  service: chat
{CUSTOMER}
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
"#;

async fn apply(app: &TestApp, admin: &str, name: &str, customer: &str) {
    let document = SLA.replace("{NAME}", name).replace("{CUSTOMER}", customer);
    fixtures::apply_sla(app.address, admin, &document).await;
}

/// (value, bad, total) of an attribution answer.
fn contributions(body: &Value) -> Vec<(Option<String>, u64, u64)> {
    body["contributions"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|c| {
            (
                c["value"].as_str().map(str::to_owned),
                c["bad"].as_u64().unwrap(),
                c["total"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_provider_sees_its_customers_ranked_and_where_bad_events_came_from() {
    let app = spawn_app_with(fixtures::trust_test_key).await;
    let tenant = tenants::create(&app.db, "acme", "acme").await.unwrap().id;
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "test").await.unwrap();
    let mut ids = Vec::new();
    for (reference, name) in [
        ("acme-corp", "Acme Corp"),
        ("globex", "Globex"),
        ("initech", "Initech"),
    ] {
        ids.push(
            customers::create(&mut tx, reference, name)
                .await
                .unwrap()
                .id,
        );
    }
    tx.commit().await.unwrap();
    let admin = fixtures::token(tenant, &["provider_admin"], None);
    apply(&app, &admin, "acme-sla", "  customer: acme-corp").await;
    apply(&app, &admin, "globex-sla", "  customer: globex").await;
    apply(&app, &admin, "initech-sla", "  customer: initech").await;
    // A public promise over every request of the service, nobody's.
    apply(&app, &admin, "public", "  scope: service").await;

    // acme-corp: 15 requests, 5 bad (4 of 10 on `big` in pool 1, 1 of 5 on
    // `small` in pool 2); globex: 6, 3 bad; initech: 4, none bad; and 2
    // bad requests naming no customer.
    let ago = Utc::now() - Duration::minutes(5);
    let mut events = Vec::new();
    let mut push = |customer: Option<&str>, model: &str, pool: u32, bad: bool| {
        let mut e = json!({
            "time": rfc3339(ago + Duration::seconds(events.len() as i64)),
            "service": "chat",
            "model": model,
            "request_id": format!("r{}", events.len()),
            "status": if bad { 503 } else { 200 },
            "latency_ms": 120,
            "attributes": {"pool": pool},
        });
        if let Some(c) = customer {
            e["customer"] = c.into();
        }
        events.push(e);
    };
    for i in 0..10 {
        push(Some("acme-corp"), "big", 1, i < 4);
    }
    for i in 0..5 {
        push(Some("acme-corp"), "small", 2, i < 1);
    }
    for i in 0..6 {
        push(Some("globex"), "big", 1, i < 3);
    }
    for _ in 0..4 {
        push(Some("initech"), "small", 2, false);
    }
    push(None, "big", 1, true);
    push(None, "big", 1, true);
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/events", app.address))
        .bearer_auth(key.reveal())
        .json(&events)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    fixtures::evaluate_now(&app.db, tenant).await;

    // The ranking: most bad requests first, the SLA without a customer
    // left out, names beside references.
    let (status, ranking) = call(&app, &admin, "GET", "/v1/customers/ranking", None).await;
    assert_eq!(status, 200, "{ranking}");
    let rows: Vec<(&str, &str, i64, i64, i64)> = ranking["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["customer"].as_str().unwrap(),
                r["name"].as_str().unwrap(),
                r["bad_events"].as_i64().unwrap(),
                r["requests"].as_i64().unwrap(),
                r["objectives_missed"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("acme-corp", "Acme Corp", 5, 15, 1),
            ("globex", "Globex", 3, 6, 1),
            ("initech", "Initech", 0, 4, 0),
        ],
        "{ranking}"
    );
    assert_eq!(ranking["customers"], 3);
    let worst = &ranking["ranking"][1]["worst"];
    // globex: 50% bad against 1% allowed spends the budget 50 times.
    assert_eq!(
        (
            worst["sla"].as_str(),
            worst["compliance_ppm"].as_i64(),
            worst["budget_remaining_ppm"].as_i64()
        ),
        (Some("globex-sla"), Some(500_000), Some(-49_000_000)),
        "{ranking}"
    );
    let (_, top) = call(&app, &admin, "GET", "/v1/customers/ranking?limit=1", None).await;
    assert_eq!(top["ranking"].as_array().unwrap().len(), 1);
    assert_eq!(top["customers"], 3);

    // acme-corp's bad events by model and by pool, equal to what the
    // evaluator counted for the SLA.
    let from = rfc3339(ago - Duration::minutes(1));
    let by = |sla: &str, by: &str| {
        format!("/v1/slas/{sla}/attribution?objective=availability&by={by}&from={from}")
    };
    let (status, by_model) = call(&app, &admin, "GET", &by("acme-sla", "model"), None).await;
    assert_eq!(status, 200, "{by_model}");
    assert_eq!(
        contributions(&by_model),
        [(Some("big".into()), 4, 10), (Some("small".into()), 1, 5)]
    );
    assert_eq!(
        (&by_model["bad"], &by_model["total"], &by_model["scope"]),
        (&json!(5), &json!(15), &json!("customer"))
    );
    let (_, compliance) = call(&app, &admin, "GET", "/v1/slas/acme-sla/compliance", None).await;
    let numbers = &compliance["objectives"][0]["numbers"];
    assert_eq!(
        (numbers["good"].as_u64(), numbers["total"].as_u64()),
        (Some(10), Some(15)),
        "{compliance}"
    );
    let (_, by_pool) = call(&app, &admin, "GET", &by("acme-sla", "attr.pool"), None).await;
    assert_eq!(
        contributions(&by_pool),
        [(Some("1".into()), 4, 10), (Some("2".into()), 1, 5)]
    );

    // On the service-wide SLA, which customers' requests went bad.
    let (status, by_customer) = call(&app, &admin, "GET", &by("public", "customer"), None).await;
    assert_eq!(status, 200, "{by_customer}");
    assert_eq!(
        contributions(&by_customer),
        [
            (Some("acme-corp".into()), 5, 15),
            (Some("globex".into()), 3, 6),
            (None, 2, 2),
            (Some("initech".into()), 0, 4),
        ]
    );
    assert_eq!(
        (&by_customer["scope"], &by_customer["values"]),
        (&json!("service"), &json!(4))
    );

    // A customer's token: its own breakdown by model, never by customer,
    // and no ranking.
    let acme = fixtures::token(tenant, &["customer_admin"], Some(ids[0]));
    let (status, own) = call(&app, &acme, "GET", &by("acme-sla", "model"), None).await;
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["total"], 15);
    let (status, refused) = call(&app, &acme, "GET", &by("acme-sla", "customer"), None).await;
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("by=customer"),
        "{refused}"
    );
    let (status, _) = call(&app, &acme, "GET", &by("globex-sla", "model"), None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&app, &acme, "GET", "/v1/customers/ranking", None).await;
    assert_eq!(status, 403);

    // Bad asks, each refused by name.
    for (path, field) in [
        (by("acme-sla", "region"), "by"),
        (
            format!(
                "/v1/slas/acme-sla/attribution?objective=availability&by=model&from={}",
                rfc3339(Utc::now() - Duration::hours(25))
            ),
            "from",
        ),
        (format!("{}&limit=0", by("acme-sla", "model")), "limit"),
        ("/v1/customers/ranking?limit=501".to_owned(), "limit"),
        ("/v1/slas/acme-sla/attribution?by=model".to_owned(), "query"),
    ] {
        let (status, problem) = call(&app, &admin, "GET", &path, None).await;
        assert_eq!(
            (status.as_u16(), problem["field"].as_str()),
            (422, Some(field)),
            "{path}: {problem}"
        );
    }
    let (status, _) = call(
        &app,
        &admin,
        "GET",
        "/v1/slas/acme-sla/attribution?objective=latency&by=model",
        None,
    )
    .await;
    assert_eq!(status, 404);

    // GraphQL answers the same.
    let query = format!(
        r#"{{ customerRanking(limit: 2) {{ customers ranking {{ customer badEvents worst {{ sla }} }} }}
             attribution(sla: "public", objective: "availability", by: "customer", from: "{from}", limit: 1) {{
               bad total contributions {{ value bad total }} }} }}"#
    );
    let (status, answer) = call(
        &app,
        &admin,
        "POST",
        "/graphql",
        Some(json!({ "query": query })),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["data"],
        json!({
            "customerRanking": {"customers": 3, "ranking": [
                {"customer": "acme-corp", "badEvents": 5, "worst": {"sla": "acme-sla"}},
                {"customer": "globex", "badEvents": 3, "worst": {"sla": "globex-sla"}},
            ]},
            "attribution": {"bad": 10, "total": 27, "contributions": [
                {"value": "acme-corp", "bad": 5, "total": 15},
            ]},
        }),
        "{answer}"
    );
}
