//! Customer traffic through the real HTTP API: each way an event names its
//! customer (the native JSON and NDJSON `customer` field; OTLP's
//! `slaproof.customer` on a span or its resource, or the attribute the
//! tenant names instead, such as `enduser.id`), a malformed reference
//! refused by name, a reference not registered yet stored and counted for
//! the provider in `evaluation-status`, then judged with its history once
//! registered; and two customers on one service seeing, on their
//! dashboards, their own requests only.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Value, json};
use slaproof_domain::ids::TenantId;
use slaproof_store::{Database, customers, ingest_keys, tenants};
use slaproof_tests::{TestApp, fixtures, spawn_app, spawn_app_with};

async fn tenant_with_key(db: &Database, name: &str) -> (TenantId, String) {
    let tenant = tenants::create(db, name, name).await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let key = ingest_keys::create(&mut tx, "test").await.unwrap();
    tx.commit().await.unwrap();
    (tenant, key.reveal().to_owned())
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn event(request_id: &str, customer: Option<&str>, status: u16, ago: Duration) -> Value {
    let mut e = json!({
        "time": rfc3339(Utc::now() - ago),
        "service": "chat",
        "request_id": request_id,
        "status": status,
        "latency_ms": 120,
    });
    if let Some(c) = customer {
        e["customer"] = c.into();
    }
    e
}

async fn post(
    app: &TestApp,
    key: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("http://{}{path}", app.address))
        .bearer_auth(key)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A call to the API as `token`.
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

/// The customer each stored request names, by request id.
async fn customers_of(db: &Database, tenant: TenantId) -> Vec<(String, Option<String>)> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rows = sqlx::query_as("SELECT request_id, customer FROM events ORDER BY request_id")
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    rows
}

#[tokio::test]
async fn each_way_of_naming_a_customer_is_stored_and_a_malformed_reference_is_refused_by_name() {
    let app = spawn_app().await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let minute = Duration::minutes(1);

    let (status, body) = post(
        &app,
        &key,
        "/v1/events",
        "application/json",
        serde_json::to_vec(&json!([
            event("json-named", Some("acme-corp"), 200, minute),
            event("json-unnamed", None, 200, minute),
        ]))
        .unwrap(),
    )
    .await;
    assert_eq!((status, &body["stored"]), (200, &json!(2)), "{body}");
    let ndjson = format!(
        "{}\n",
        event("ndjson-named", Some("globex:eu-1"), 200, minute)
    );
    let (status, body) = post(
        &app,
        &key,
        "/v1/events",
        "application/x-ndjson",
        ndjson.into_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // OTLP/JSON: the resource names initech; one span names acme-corp
    // itself (the span's own wins), the other inherits the resource's.
    let start = (Utc::now() - minute).timestamp_nanos_opt().unwrap();
    let span = |id: &str, request: &str, customer: Option<&str>| {
        let mut attributes = vec![
            json!({"key": "gen_ai.request.model", "value": {"stringValue": "llama-3"}}),
            json!({"key": "gen_ai.response.id", "value": {"stringValue": request}}),
            json!({"key": "http.response.status_code", "value": {"intValue": "200"}}),
        ];
        if let Some(c) = customer {
            attributes.push(json!({"key": "slaproof.customer", "value": {"stringValue": c}}));
        }
        json!({
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": id,
            "name": "chat llama-3",
            "kind": 2,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": (start + 300_000_000).to_string(),
            "attributes": attributes,
        })
    };
    let export = json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "chat"}},
            {"key": "slaproof.customer", "value": {"stringValue": "initech"}}
        ]},
        "scopeSpans": [{"spans": [
            span("eee19b7ec3c1b174", "otlp-span", Some("acme-corp")),
            span("eee19b7ec3c1b175", "otlp-resource", None)
        ]}]
    }]});
    let (status, body) = post(
        &app,
        &key,
        "/v1/traces",
        "application/json",
        serde_json::to_vec(&export).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    assert_eq!(
        customers_of(&app.db, tenant).await,
        [
            ("json-named".to_owned(), Some("acme-corp".to_owned())),
            ("json-unnamed".to_owned(), None),
            ("ndjson-named".to_owned(), Some("globex:eu-1".to_owned())),
            ("otlp-resource".to_owned(), Some("initech".to_owned())),
            ("otlp-span".to_owned(), Some("acme-corp".to_owned())),
        ]
    );

    // A reference the store could never match is refused, by name; the
    // rest of the batch is kept.
    let (status, body) = post(
        &app,
        &key,
        "/v1/events",
        "application/json",
        serde_json::to_vec(&json!([
            event("bad-ref", Some("acme corp"), 200, minute),
            event("good-ref", Some("acme-corp"), 200, minute),
        ]))
        .unwrap(),
    )
    .await;
    assert_eq!(status, 207, "{body}");
    assert_eq!(body["errors"][0]["field"], "customer", "{body}");
    assert!(
        body["errors"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("1 to 128 characters"),
        "{body}"
    );
    assert_eq!(customers_of(&app.db, tenant).await.len(), 6);
}

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: {NAME}
spec:
  service: chat
  customer: {CUSTOMER}
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

/// The dashboard's availability figures: (good, total) over the period.
async fn availability(app: &TestApp, token: &str, sla: &str) -> (i64, i64) {
    let (status, body) = call(
        app,
        token,
        "GET",
        &format!("/v1/slas/{sla}/compliance"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let objective = body["objectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["objective"] == "availability")
        .unwrap()
        .clone();
    (
        objective["numbers"]["good"].as_i64().unwrap(),
        objective["numbers"]["total"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn an_unknown_reference_is_counted_for_the_provider_and_judged_with_its_history_once_registered()
 {
    let app = spawn_app_with(fixtures::trust_test_key).await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let admin = fixtures::token(tenant, &["provider_admin"], None);
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let acme = customers::create(&mut tx, "acme-corp", "Acme")
        .await
        .unwrap()
        .id;
    let globex = customers::create(&mut tx, "globex", "Globex")
        .await
        .unwrap()
        .id;
    tx.commit().await.unwrap();
    apply(&app, &admin, "acme-sla", "acme-corp").await;
    apply(&app, &admin, "globex-sla", "globex").await;

    // On one service: acme-corp 6 requests (1 failing), globex 4 (2
    // failing), newco (not registered) 5 (all good), 3 naming no one.
    let ago = Duration::minutes(3);
    let mut events = Vec::new();
    for i in 0..6 {
        events.push(event(
            &format!("a{i}"),
            Some("acme-corp"),
            if i == 0 { 503 } else { 200 },
            ago,
        ));
    }
    for i in 0..4 {
        events.push(event(
            &format!("g{i}"),
            Some("globex"),
            if i < 2 { 500 } else { 200 },
            ago,
        ));
    }
    for i in 0..5 {
        events.push(event(&format!("n{i}"), Some("newco"), 200, ago));
    }
    for i in 0..3 {
        events.push(event(&format!("x{i}"), None, 503, ago));
    }
    let (status, body) = post(
        &app,
        &key,
        "/v1/events",
        "application/json",
        serde_json::to_vec(&events).unwrap(),
    )
    .await;
    assert_eq!((status, &body["stored"]), (200, &json!(18)), "{body}");
    fixtures::evaluate_now(&app.db, tenant).await;

    // Each customer sees its own requests only: through its own token and
    // through the provider's.
    let acme_token = fixtures::token(tenant, &["customer_admin"], Some(acme));
    let globex_token = fixtures::token(tenant, &["customer_admin"], Some(globex));
    assert_eq!(availability(&app, &acme_token, "acme-sla").await, (5, 6));
    assert_eq!(
        availability(&app, &globex_token, "globex-sla").await,
        (2, 4)
    );
    assert_eq!(availability(&app, &admin, "globex-sla").await, (2, 4));
    // And not the other's SLA at all.
    let (status, _) = call(
        &app,
        &globex_token,
        "GET",
        "/v1/slas/acme-sla/compliance",
        None,
    )
    .await;
    assert_eq!(status, 404);
    // The dashboard says whose requests it shows.
    let (_, dashboard) = call(
        &app,
        &acme_token,
        "GET",
        "/v1/slas/acme-sla/dashboard",
        None,
    )
    .await;
    assert_eq!(dashboard["scope"], "customer", "{dashboard}");

    // The provider is told of newco's 5 requests.
    let (status, report) = call(&app, &admin, "GET", "/v1/evaluation-status", None).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["unknown_customer_count"], 1, "{report}");
    assert_eq!(report["unknown_customers"][0]["customer"], "newco");
    assert_eq!(report["unknown_customers"][0]["events"], 5);
    // A customer may not read it (it names other customers).
    let (status, _) = call(&app, &acme_token, "GET", "/v1/evaluation-status", None).await;
    assert_eq!(status, 403);
    // GraphQL answers the same body, and refuses the customer alike.
    let query = Some(json!({"query": "{ evaluationStatus }"}));
    let (status, answer) = call(&app, &admin, "POST", "/graphql", query.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let over_graphql = &answer["data"]["evaluationStatus"];
    assert_eq!(
        (
            &over_graphql["unknown_customer_count"],
            &over_graphql["unknown_customers"]
        ),
        (
            &report["unknown_customer_count"],
            &report["unknown_customers"]
        ),
        "{answer}"
    );
    let (_, answer) = call(&app, &acme_token, "POST", "/graphql", query).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{answer}"
    );

    // Registered, with an SLA: its earlier requests count, none lost.
    let (status, body) = call(
        &app,
        &admin,
        "POST",
        "/v1/customers",
        Some(json!({"external_ref": "newco", "name": "NewCo"})),
    )
    .await;
    assert!(status.is_success(), "{status} {body}");
    apply(&app, &admin, "newco-sla", "newco").await;
    fixtures::evaluate_now(&app.db, tenant).await;
    assert_eq!(availability(&app, &admin, "newco-sla").await, (5, 5));
    let (_, report) = call(&app, &admin, "GET", "/v1/evaluation-status", None).await;
    assert_eq!(report["unknown_customer_count"], 0, "{report}");
}

#[tokio::test]
async fn a_tenant_names_the_otlp_attribute_its_customers_are_named_by() {
    // #29: an attribute the tenant configures, `enduser.id` or `user.id`
    // accepted where the tenant says so; `slaproof.customer` by default.
    let app = spawn_app_with(|c| {
        fixtures::trust_test_key(c);
        c.ingest.key_cache_secs = 0;
    })
    .await;
    let (tenant, key) = tenant_with_key(&app.db, "acme").await;
    let admin = fixtures::token(tenant, &["provider_admin"], None);
    let start = (Utc::now() - Duration::minutes(1))
        .timestamp_nanos_opt()
        .unwrap();
    let span = |id: &str, request: &str, attribute: Value| {
        json!({
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": id,
            "name": "chat llama-3",
            "kind": 2,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": (start + 300_000_000).to_string(),
            "attributes": [
                {"key": "gen_ai.request.model", "value": {"stringValue": "llama-3"}},
                {"key": "gen_ai.response.id", "value": {"stringValue": request}},
                attribute,
            ],
        })
    };
    let send = async |spans: Vec<Value>| {
        let export = json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "chat"}}]},
            "scopeSpans": [{"spans": spans}]
        }]});
        let (status, body) = post(
            &app,
            &key,
            "/v1/traces",
            "application/json",
            serde_json::to_vec(&export).unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    };
    let enduser = |v: Value| json!({"key": "enduser.id", "value": v});

    let (status, settings) = call(&app, &admin, "GET", "/v1/ingest-settings", None).await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(settings["otlp_customer_attribute"], "slaproof.customer");
    // By default `enduser.id` names nobody.
    send(vec![span(
        "eee19b7ec3c1b170",
        "before",
        enduser(json!({"stringValue": "globex"})),
    )])
    .await;

    let (status, refused) = call(
        &app,
        &admin,
        "PUT",
        "/v1/ingest-settings",
        Some(json!({"otlp_customer_attribute": "end user"})),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["field"], "otlp_customer_attribute");
    let viewer = fixtures::token(tenant, &["operations_viewer"], None);
    let (status, _) = call(
        &app,
        &viewer,
        "PUT",
        "/v1/ingest-settings",
        Some(json!({"otlp_customer_attribute": "user.id"})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, set) = call(
        &app,
        &admin,
        "PUT",
        "/v1/ingest-settings",
        Some(json!({"otlp_customer_attribute": "enduser.id"})),
    )
    .await;
    assert_eq!(status, 200, "{set}");
    send(vec![
        span(
            "eee19b7ec3c1b171",
            "after",
            enduser(json!({"stringValue": "globex"})),
        ),
        span(
            "eee19b7ec3c1b172",
            "numeric",
            enduser(json!({"intValue": "42"})),
        ),
        span(
            "eee19b7ec3c1b173",
            "default-key",
            json!({"key": "slaproof.customer", "value": {"stringValue": "acme-corp"}}),
        ),
    ])
    .await;
    assert_eq!(
        customers_of(&app.db, tenant).await,
        [
            ("after".to_owned(), Some("globex".to_owned())),
            ("before".to_owned(), None),
            ("default-key".to_owned(), None),
            ("numeric".to_owned(), Some("42".to_owned())),
        ]
    );
    // GraphQL reads the same setting.
    let (status, answer) = call(
        &app,
        &admin,
        "POST",
        "/graphql",
        Some(json!({"query": "{ ingestSettings { otlpCustomerAttribute } }"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["data"]["ingestSettings"]["otlpCustomerAttribute"], "enduser.id",
        "{answer}"
    );
}
