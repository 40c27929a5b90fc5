//! The API over real HTTP: token attacks refused, tenants and customers
//! walled off, and every role × sensitive field answered as the policy says.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_api::settings::{KeyAlgorithm, KeySettings};
use slaproof_store::tenants;
use slaproof_tests::fixtures::{RS_PRIVATE, RS_PUBLIC, sign};
use slaproof_tests::spawn_app_with;
use slaproof_tests::world::{DEMO_SLA, World, world};

const OTHER_RS_PRIVATE: &str =
    include_str!("../../../services/api/fixtures/other-rs256-private.pem");

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

#[tokio::test]
async fn token_attacks_are_refused_with_401() {
    let w = world().await;
    let good = w.claims(&["provider_admin"], None);
    let b64 = |bytes: &[u8]| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    };
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT","kid":"test"}"#),
        b64(good.to_string().as_bytes())
    );
    let confused = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("test".into());
        jsonwebtoken::encode(
            &header,
            &good,
            &EncodingKey::from_secret(RS_PUBLIC.as_bytes()).unwrap(),
        )
        .unwrap()
    };
    let mut expired = good.clone();
    expired["exp"] = json!(now() - 3600);
    let mut early = good.clone();
    early["nbf"] = json!(now() + 3600);
    let mut issuer = good.clone();
    issuer["iss"] = json!("evil");
    let mut audience = good.clone();
    audience["aud"] = json!("other");
    let attacks = [
        ("alg none", none),
        ("HS256 with the RSA public key", confused),
        ("wrong key", sign(&good, OTHER_RS_PRIVATE, "test")),
        ("unknown kid", sign(&good, RS_PRIVATE, "other")),
        ("expired", sign(&expired, RS_PRIVATE, "test")),
        ("not yet valid", sign(&early, RS_PRIVATE, "test")),
        ("wrong issuer", sign(&issuer, RS_PRIVATE, "test")),
        ("wrong audience", sign(&audience, RS_PRIVATE, "test")),
        ("garbage", "not.a.token".to_owned()),
    ];
    for (name, token) in attacks {
        let (status, body) = w.call("GET", "/v1/slas", &token, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {body}");
        assert_eq!(body["status"], 401, "{name}");
    }
    let response = w
        .http
        .get(format!("http://{}/v1/slas", w.app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(
        response
            .headers()
            .contains_key(reqwest::header::WWW_AUTHENTICATE)
    );
    // The good token passes, so the refusals above were the attacks'.
    let (status, _) = w
        .call("GET", "/v1/slas", &sign(&good, RS_PRIVATE, "test"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn another_tenant_and_another_customer_see_nothing() {
    let w = world().await;
    let intruder = tenants::create(&w.app.db, "intruder", "Intruder")
        .await
        .unwrap()
        .id;
    let mut claims = w.claims(&["provider_admin"], None);
    claims["tenant"] = json!(intruder.to_string());
    let token = sign(&claims, RS_PRIVATE, "test");
    let (status, body) = w.call("GET", "/v1/slas", &token, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"], json!([]));
    for path in [
        "/v1/slas/acme-enterprise".to_owned(),
        "/v1/slas/acme-enterprise/compliance".to_owned(),
        "/v1/slas/acme-enterprise/dashboard".to_owned(),
        "/v1/slas/acme-enterprise/export".to_owned(),
        format!("/v1/customers/{}", w.acme),
    ] {
        let (status, body) = w.call("GET", &path, &token, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!body.to_string().contains("Acme"), "{path} leaks: {body}");
    }

    // A customer's user sees its own SLA and not another customer's.
    let globex = w.token(&["customer_admin"], Some(w.other_customer));
    let (status, body) = w.call("GET", "/v1/slas", &globex, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"], json!([]));
    let (status, _) = w
        .call("GET", "/v1/slas/acme-enterprise", &globex, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let acme = w.token(&["customer_admin"], Some(w.acme));
    let (status, body) = w.call("GET", "/v1/slas", &acme, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"][0]["name"], "acme-enterprise");
    // Provider resources are not a customer's, whatever its roles say.
    let sneaky = w.token(&["provider_admin"], Some(w.acme));
    let (status, body) = w.call("GET", "/v1/customers", &sneaky, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
}

/// What a role may do with each sensitive field of the demo SLA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Allowed,
    Refused,
}
use Cell::{Allowed, Refused};

#[tokio::test]
async fn every_role_and_sensitive_field_is_answered_as_the_policy_says() {
    let w = world().await;
    // Fields, in the order of each row below.
    let fields = [
        "uptime target (sla:read:uptime)",
        "latency target (sla:read:latency)",
        "uptime compliance (sla:read:uptime)",
        "latency compliance (sla:read:latency)",
        "export (sla:export)",
        "versions (sla:read:history)",
        "apply document (sla:write)",
        "customers (customer:read)",
        "change a contract target (sla:write, provider only)",
        "uptime minutes on the dashboard (sla:read:uptime + sla:read:history)",
        "latency minutes on the dashboard (sla:read:latency + sla:read:history)",
    ];
    let matrix: [(&str, bool, [Cell; 11]); 4] = [
        ("provider_admin", false, [Allowed; 11]),
        (
            "customer_admin",
            true,
            [
                Allowed, Allowed, Allowed, Allowed, Allowed, Allowed, Refused, Refused, Refused,
                Allowed, Allowed,
            ],
        ),
        (
            "operations_viewer",
            false,
            [
                Allowed, Allowed, Allowed, Allowed, Refused, Refused, Refused, Refused, Refused,
                Refused, Refused,
            ],
        ),
        ("auditor", false, [Refused; 11]),
    ];
    for (role, is_customer, row) in matrix {
        let token = w.token(&[role], is_customer.then_some(w.acme));
        let sla = w
            .call("GET", "/v1/slas/acme-enterprise", &token, None)
            .await;
        let compliance = w
            .call("GET", "/v1/slas/acme-enterprise/compliance", &token, None)
            .await;
        let dashboard = w
            .call("GET", "/v1/slas/acme-enterprise/dashboard", &token, None)
            .await;
        let objective = |answer: &(StatusCode, Value), name: &str, field: &str| -> Cell {
            if answer.0 != StatusCode::OK {
                return Refused;
            }
            let objective = answer.1["objectives"]
                .as_array()
                .and_then(|o| {
                    o.iter()
                        .find(|o| o["name"] == name || o["objective"] == name)
                })
                .cloned()
                .unwrap_or(Value::Null);
            let redacted = answer.1["redacted"].as_array().is_some_and(|r| {
                r.iter().any(|r| {
                    r["field"]
                        .as_str()
                        .is_some_and(|f| f.contains(&format!("[{name}].{field}")))
                })
            });
            match (objective.get(field).is_some(), redacted) {
                (true, false) => Allowed,
                (false, true) => Refused,
                other => panic!(
                    "{role} {name}.{field}: shown and redacted disagree: {other:?} in {}",
                    answer.1
                ),
            }
        };
        let status = |s: StatusCode| if s.is_success() { Allowed } else { Refused };
        let export = w
            .call(
                "GET",
                "/v1/slas/acme-enterprise/export?format=openslo",
                &token,
                None,
            )
            .await
            .0;
        let versions = w
            .call("GET", "/v1/slas/acme-enterprise/versions", &token, None)
            .await
            .0;
        let apply = w
            .call(
                "POST",
                "/v1/slas",
                &token,
                Some(json!({ "document": DEMO_SLA })),
            )
            .await
            .0;
        let customers = w.call("GET", "/v1/customers", &token, None).await.0;
        let target = w
            .call(
                "PUT",
                "/v1/slas/acme-enterprise/objectives/availability/target",
                &token,
                Some(json!({ "target_ppm": 995000 })),
            )
            .await;
        for s in [export, versions, apply, customers, target.0] {
            assert!(s.is_success() || s == StatusCode::FORBIDDEN, "{role}: {s}");
        }
        // The contract is the provider's: a customer's admin, who holds
        // sla:write:thresholds for its own alert lines, is refused naming
        // the scope it would need.
        if target.0 == StatusCode::FORBIDDEN {
            assert_eq!(target.1["scope"], "sla:write", "{role}: {}", target.1);
        }
        let got = [
            objective(&sla, "availability", "target_ppm"),
            objective(&sla, "latency-p99", "target_ppm"),
            objective(&compliance, "availability", "numbers"),
            objective(&compliance, "latency-p99", "numbers"),
            status(export),
            status(versions),
            status(apply),
            status(customers),
            status(target.0),
            objective(&dashboard, "availability", "minutes"),
            objective(&dashboard, "latency-p99", "minutes"),
        ];
        for ((field, expected), got) in fields.iter().zip(row).zip(got) {
            assert_eq!(got, expected, "{role} × {field}");
        }
    }
}

#[tokio::test]
async fn forbidden_answers_name_the_missing_scope() {
    let w = world().await;
    let viewer = w.token(&["operations_viewer"], None);
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/export", &viewer, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["scope"], "sla:export");
    assert_eq!(body["type"], "https://slaproof.dev/problems/missing-scope");
}

#[tokio::test]
async fn customers_and_slas_round_trip_with_pages_and_exports() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    for i in 0..3 {
        let (status, body) = w
            .call(
                "POST",
                "/v1/customers",
                &admin,
                Some(json!({ "external_ref": format!("c-{i}"), "name": format!("C {i}") })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(body["id"].as_str().unwrap().starts_with("cus_"));
    }
    let (status, body) = w
        .call(
            "POST",
            "/v1/customers",
            &admin,
            Some(json!({ "external_ref": "c-0", "name": "again" })),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = w
        .call(
            "POST",
            "/v1/customers",
            &admin,
            Some(json!({ "external_ref": "bad ref!", "name": "x" })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // 5 customers (acme, globex, c-0..2), two at a time; pages are cut in
    // SQL after the cursor's key, so customers added while paging neither
    // repeat nor hide one: one before the cursor is not seen, one after is.
    let mut cursor: Option<String> = None;
    let mut refs = Vec::new();
    loop {
        if refs.len() == 2 {
            for late in ["a-late", "zz-late"] {
                let (status, body) = w
                    .call(
                        "POST",
                        "/v1/customers",
                        &admin,
                        Some(json!({ "external_ref": late, "name": late })),
                    )
                    .await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
            }
        }
        let path = match &cursor {
            Some(c) => format!("/v1/customers?limit=2&cursor={c}"),
            None => "/v1/customers?limit=2".to_owned(),
        };
        let (status, body) = w.call("GET", &path, &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        refs.extend(
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["external_ref"].as_str().unwrap().to_owned()),
        );
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        refs,
        ["acme-corp", "c-0", "c-1", "c-2", "globex", "zz-late"]
    );

    // Applying the same document again changes nothing; its OpenSLO export
    // applies as the same definition.
    let (status, body) = w
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": DEMO_SLA })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["outcome"], "unchanged");
    let (status, openslo) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/export?format=openslo",
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let openslo = openslo.as_str().unwrap().to_owned();
    assert!(openslo.contains("openslo/v1"), "{openslo}");
    let (status, body) = w
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": openslo })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/versions", &admin, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!body["data"].as_array().unwrap().is_empty());

    let (status, body) = w
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": "kind: nonsense" })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/export?format=pdf",
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = w.call("GET", "/v1/slas?limit=0", &admin, None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn an_idempotency_key_creates_once_and_replays_the_answer() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let post = |key: &'static str, body: Value| {
        w.http
            .post(format!("http://{}/v1/customers", w.app.address))
            .bearer_auth(&admin)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
    };
    let first = post(
        "k-1",
        json!({ "external_ref": "initech", "name": "Initech" }),
    )
    .await
    .unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(!first.headers().contains_key("idempotent-replayed"));
    let first: Value = first.json().await.unwrap();
    let again = post(
        "k-1",
        json!({ "external_ref": "initech", "name": "Initech" }),
    )
    .await
    .unwrap();
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);

    // The same key with another request is a client bug.
    let other = post("k-1", json!({ "external_ref": "hooli", "name": "Hooli" }))
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // A failed request frees its key for the corrected retry.
    let bad = post("k-2", json!({ "external_ref": "bad ref", "name": "x" }))
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let bad = post("k-2", json!({ "external_ref": "bad ref", "name": "x" }))
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let (status, body) = w.call("GET", "/v1/customers", &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    let initech = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["external_ref"] == "initech")
        .count();
    assert_eq!(initech, 1);
}

#[tokio::test]
async fn a_customer_role_without_its_customer_is_refused_everywhere() {
    // Found as a new user would: a customer_admin token without the
    // `customer` claim listed every customer's SLAs of the tenant and could
    // change other customers' alert thresholds. It is refused outright.
    let w = world().await;
    let unconfined = w.token(&["customer_admin"], None);
    for (method, path, body) in [
        ("GET", "/v1/slas", None),
        ("GET", "/v1/slas/acme-enterprise", None),
        ("GET", "/v1/slas/acme-enterprise/thresholds", None),
        (
            "POST",
            "/graphql",
            Some(json!({ "query": "{ slas { edges { node { name } } } }" })),
        ),
        (
            "PUT",
            "/v1/slas/acme-enterprise/thresholds/availability",
            Some(json!({ "compliance_below_ppm": 999_000 })),
        ),
    ] {
        let (status, problem) = w.call(method, path, &unconfined, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains("customer"),
            "{problem}"
        );
    }
    // The same role naming its customer sees its own SLA.
    let confined = w.token(&["customer_admin"], Some(w.acme));
    let (status, body) = w.call("GET", "/v1/slas", &confined, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"][0]["name"], "acme-enterprise");
}

#[tokio::test]
async fn concurrent_retries_of_one_key_create_once_and_all_get_its_answer() {
    // The claim, the work and the answer commit in one transaction: a
    // retry arriving while the first request runs waits for it and
    // replays its answer (before, it was refused with 409 "still running",
    // and a crash between the work and the answer made the work twice).
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let body = json!({ "external_ref": "umbrella", "name": "Umbrella" });
    let answers = futures_util::future::join_all((0..6).map(|_| {
        w.http
            .post(format!("http://{}/v1/customers", w.app.address))
            .bearer_auth(&admin)
            .header("Idempotency-Key", "same-key")
            .json(&body)
            .send()
    }))
    .await;
    let mut ids = std::collections::BTreeSet::new();
    let mut fresh = 0;
    for answer in answers {
        let answer = answer.unwrap();
        assert_eq!(answer.status(), StatusCode::CREATED);
        if !answer.headers().contains_key("idempotent-replayed") {
            fresh += 1;
        }
        let out: Value = answer.json().await.unwrap();
        ids.insert(out["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(fresh, 1, "exactly one request did the work");
    assert_eq!(ids.len(), 1, "every answer names the one customer: {ids:?}");
}

#[tokio::test]
async fn ingest_keys_show_their_secret_once_and_revoke() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let (status, created) = w
        .call(
            "POST",
            "/v1/ingest-keys",
            &admin,
            Some(json!({ "name": "gateway" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let secret = created["key"].as_str().unwrap().to_owned();
    let prefix = created["prefix"].as_str().unwrap().to_owned();
    assert!(secret.starts_with(&prefix));
    let (status, listed) = w.call("GET", "/v1/ingest-keys", &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !listed.to_string().contains(&secret),
        "the secret is shown once only"
    );
    assert_eq!(listed["data"][0]["prefix"], prefix.as_str());
    let (status, revoked) = w
        .call(
            "DELETE",
            &format!("/v1/ingest-keys/{}", created["id"].as_str().unwrap()),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{revoked}");
    assert!(revoked["revoked_at"].is_string());
    let (status, _) = w
        .call("DELETE", "/v1/ingest-keys/spk_nothing", &admin, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let viewer = w.token(&["operations_viewer"], None);
    let (status, body) = w.call("GET", "/v1/ingest-keys", &viewer, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["scope"], "ingest_key:manage");
}

#[tokio::test]
async fn maintenance_windows_are_planned_listed_and_cancelled() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let start = chrono::Utc::now() + chrono::Duration::hours(1);
    let window = json!({
        "sla": "acme-enterprise",
        "starts_at": start,
        "ends_at": start + chrono::Duration::hours(2),
        "description": "database upgrade",
    });
    let (status, created) = w
        .call("POST", "/v1/maintenance-windows", &admin, Some(window))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["id"].as_str().unwrap().starts_with("mw_"));
    // An hour ahead is less than the SLA's notice (72h): an emergency.
    assert_eq!(created["status"], "emergency", "{created}");
    assert_eq!(created["created_by"], "someone", "{created}");
    let backwards = json!({ "starts_at": start, "ends_at": start - chrono::Duration::hours(1), "description": "x" });
    let (status, body) = w
        .call("POST", "/v1/maintenance-windows", &admin, Some(backwards))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["field"], "ends_at");

    // The customer sees the windows of its own SLA.
    let acme = w.token(&["customer_admin"], Some(w.acme));
    let (status, listed) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/maintenance-windows",
            &acme,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["data"][0]["description"], "database upgrade");
    let (status, _) = w
        .call(
            "POST",
            &format!(
                "/v1/maintenance-windows/{}/cancel",
                created["id"].as_str().unwrap()
            ),
            &acme,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, cancelled) = w
        .call(
            "POST",
            &format!(
                "/v1/maintenance-windows/{}/cancel",
                created["id"].as_str().unwrap()
            ),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(cancelled["cancelled_at"].is_string());
    assert_eq!(cancelled["cancelled_by"], "someone", "{cancelled}");
    let (_, listed) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/maintenance-windows",
            &acme,
            None,
        )
        .await;
    assert_eq!(listed["data"], json!([]));
}

#[tokio::test]
async fn the_served_openapi_document_is_the_committed_one() {
    let w = world().await;
    let served = w
        .http
        .get(format!("http://{}/openapi.json", w.app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    let served = served.text().await.unwrap();
    let committed = include_str!("../../../docs/openapi.json");
    assert_eq!(served, committed);
}

/// The scopes named by a GraphQL answer's errors.
fn refused_scopes(answer: &Value) -> Vec<String> {
    answer["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| e["extensions"]["scope"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn every_role_and_sensitive_field_is_answered_alike_over_graphql() {
    let w = world().await;
    // (field, query, scope that refuses it)
    let fields = [
        (
            "uptime target",
            r#"{ sla(name: "acme-enterprise") { objectives { name family targetPpm } } }"#,
            "sla:read:uptime",
        ),
        (
            "latency target",
            r#"{ sla(name: "acme-enterprise") { objectives { name family targetPpm } } }"#,
            "sla:read:latency",
        ),
        (
            "export",
            r#"{ sla(name: "acme-enterprise") { export } }"#,
            "sla:export",
        ),
        (
            "versions",
            r#"{ sla(name: "acme-enterprise") { versions { version } } }"#,
            "sla:read:history",
        ),
        (
            "customers",
            "{ customers { edges { node { externalRef } } } }",
            "customer:read",
        ),
        (
            "change a target",
            r#"mutation { changeTarget(sla: "acme-enterprise", objective: "availability", targetPpm: 995000) }"#,
            "sla:write",
        ),
    ];
    let matrix: [(&str, bool, [Cell; 6]); 4] = [
        ("provider_admin", false, [Allowed; 6]),
        (
            "customer_admin",
            true,
            [Allowed, Allowed, Allowed, Allowed, Refused, Refused],
        ),
        (
            "operations_viewer",
            false,
            [Allowed, Allowed, Refused, Refused, Refused, Refused],
        ),
        ("auditor", false, [Refused; 6]),
    ];
    for (role, is_customer, row) in matrix {
        let token = w.token(&[role], is_customer.then_some(w.acme));
        for ((field, query, scope), expected) in fields.iter().zip(row) {
            let answer = w.graphql(&token, query).await;
            let refused = refused_scopes(&answer);
            // The auditor lacks sla:read, so it is refused before any field.
            let got = if refused.iter().any(|s| s == scope || s == "sla:read") {
                Refused
            } else {
                assert!(answer["errors"].is_null(), "{role} {field}: {answer}");
                Allowed
            };
            assert_eq!(got, expected, "{role} × {field} over GraphQL: {answer}");
        }
    }
}

#[tokio::test]
async fn graphql_hides_unheld_fields_from_introspection_and_limits_depth() {
    let w = world().await;
    let fields_of = |answer: &Value| -> Vec<String> {
        answer["data"]["__type"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let query = r#"{ __type(name: "Sla") { fields { name } } }"#;
    let admin = fields_of(&w.graphql(&w.token(&["provider_admin"], None), query).await);
    assert!(
        admin.contains(&"export".to_owned()) && admin.contains(&"versions".to_owned()),
        "{admin:?}"
    );
    let viewer = fields_of(
        &w.graphql(&w.token(&["operations_viewer"], None), query)
            .await,
    );
    assert!(
        !viewer.contains(&"export".to_owned()) && !viewer.contains(&"versions".to_owned()),
        "{viewer:?}"
    );
    assert!(viewer.contains(&"objectives".to_owned()));

    let deep = format!(
        r#"{{ sla(name: "acme-enterprise") {{ {} name {} }} }}"#,
        "versions { ".repeat(12),
        "}".repeat(12)
    );
    let answer = w.graphql(&w.token(&["provider_admin"], None), &deep).await;
    assert!(
        answer["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nested too deep"),
        "{answer}"
    );
}

#[tokio::test]
async fn introspection_can_be_turned_off() {
    let app = spawn_app_with(|config| {
        config.api.graphql_introspection = false;
        config.api.keys = vec![KeySettings {
            id: "test".into(),
            algorithm: KeyAlgorithm::RS256,
            public_key_pem: Some(RS_PUBLIC.into()),
            secret: None,
            operator: false,
            tenants: Vec::new(),
        }];
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let claims = json!({
        "sub": "someone", "iss": "slaproof", "aud": "slaproof-api", "exp": now() + 600,
        "tenant": tenant.to_string(), "roles": ["provider_admin"],
    });
    let answer: Value = reqwest::Client::new()
        .post(format!("http://{}/graphql", app.address))
        .bearer_auth(sign(&claims, RS_PRIVATE, "test"))
        .json(&json!({ "query": "{ __schema { types { name } } }" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // async-graphql answers a disabled introspection with nothing.
    assert!(answer["data"]["__schema"].is_null(), "{answer}");
    assert!(answer.to_string().len() < 100, "{answer}");
}

#[tokio::test]
async fn budget_status_is_cacheable_and_revalidates_with_its_etag() {
    let w = world().await;
    let token = w.token(&["operations_viewer"], None);
    let url = format!(
        "http://{}/v1/slas/acme-enterprise/budget-status",
        w.app.address
    );
    let first = w.http.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let etag = first.headers()[reqwest::header::ETAG]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        first.headers()[reqwest::header::CACHE_CONTROL],
        "private, max-age=10"
    );
    let body: Value = first.json().await.unwrap();
    assert_eq!(body["exhausted"], false);
    assert_eq!(body["objectives"].as_array().unwrap().len(), 4, "{body}");
    let again = w
        .http
        .get(&url)
        .bearer_auth(&token)
        .header(reqwest::header::IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()[reqwest::header::ETAG], etag.as_str());
    let (status, body) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/budget-status",
            &w.token(&["auditor"], None),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["scope"], "sla:read");
}

#[tokio::test]
async fn embed_tokens_are_short_read_only_and_framed_by_the_tenants_origins() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let (status, body) = w
        .call(
            "PUT",
            "/v1/embed-origins",
            &admin,
            Some(json!({ "origins": ["https://console.example.com"] })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = w
        .call(
            "PUT",
            "/v1/embed-origins",
            &admin,
            Some(json!({ "origins": ["https://x.example.com; script-src *"] })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    let ask = |scopes: Value, ttl: u32| json!({ "customer": w.acme.to_string(), "dashboard": "overview", "scopes": scopes, "ttl_secs": ttl });
    let (status, created) = w
        .call(
            "POST",
            "/v1/embed-tokens",
            &admin,
            Some(ask(json!(["sla:read", "sla:read:uptime"]), 600)),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    for (scopes, ttl) in [
        (json!(["sla:read"]), 7200),
        (json!(["sla:write"]), 600),
        (json!(["nonsense"]), 600),
    ] {
        let (status, body) = w
            .call("POST", "/v1/embed-tokens", &admin, Some(ask(scopes, ttl)))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    }
    // Not for a customer's users, and never more than the issuer holds.
    let (status, _) = w
        .call(
            "POST",
            "/v1/embed-tokens",
            &w.token(&["customer_admin"], Some(w.acme)),
            Some(ask(json!(["sla:read"]), 600)),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let embed = created["token"].as_str().unwrap().to_owned();
    let response = w
        .http
        .get(format!("http://{}/v1/slas/acme-enterprise", w.app.address))
        .bearer_auth(&embed)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[reqwest::header::CONTENT_SECURITY_POLICY],
        "frame-ancestors https://console.example.com"
    );
    let sla: Value = response.json().await.unwrap();
    let target = |name: &str| {
        sla["objectives"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap()["target_ppm"]
            .clone()
    };
    assert_eq!(target("availability"), 999_000);
    assert!(
        target("latency-p99").is_null(),
        "latency is not in the token's scopes: {sla}"
    );
    // A user's token gets no CSP; an embed token reaches nothing else.
    let (status, _) = w.call("GET", "/v1/customers", &embed, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = w
        .call("GET", "/v1/slas/acme-enterprise/export", &embed, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A character in the middle of the signature: the last one may carry
    // only base64 padding bits, which a decoder ignores.
    let at = embed.len() - 10;
    let mut forged = embed.clone();
    let flipped = if &embed[at..=at] == "A" { "B" } else { "A" };
    forged.replace_range(at..=at, flipped);
    let (status, _) = w.call("GET", "/v1/slas", &forged, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn compliance_series_alerts_and_breaches_come_from_the_evaluators_records() {
    use slaproof_store::events::{EventSource, StoredEvent};
    let w = world().await;
    let today = chrono::Utc::now().date_naive();
    slaproof_store::partitions::ensure(&w.app.db, today, today)
        .await
        .unwrap();
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    for i in 0..20 {
        slaproof_store::events::insert(
            &mut tx,
            &StoredEvent {
                id: Default::default(),
                occurred_at: chrono::Utc::now() - chrono::Duration::seconds(90),
                source: EventSource::Provider,
                service: "chat-completions".into(),
                customer: Some("acme-corp".into()),
                model: None,
                request_id: Some(format!("r-{i}")),
                status: Some(200),
                error_class: None,
                latency_us: Some(100_000),
                ttft_us: Some(30_000),
                tpot_us: Some(9_000),
                input_tokens: Some(100),
                output_tokens: Some(20),
                streaming: Some(true),
                attributes: json!({}),
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    // The application's own evaluator may hold the tenant for a moment.
    for attempt in 0.. {
        let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
        match slaproof_evaluator::evaluate_tenant_up_to(
            &mut tx,
            &slaproof_evaluator::Settings::default(),
            Some(chrono::Utc::now() + chrono::Duration::minutes(2)),
        )
        .await
        {
            Ok(_) => {
                tx.commit().await.unwrap();
                break;
            }
            Err(e) if attempt < 100 => {
                let _ = e;
                tx.rollback().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("evaluating: {e}"),
        }
    }

    let series = "/v1/slas/acme-enterprise/compliance/series?objective=availability";
    let acme = w.token(&["customer_admin"], Some(w.acme));
    let (status, body) = w.call("GET", series, &acme, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!body["points"].as_array().unwrap().is_empty(), "{body}");
    assert!(body["points"][0]["budget_remaining"].is_i64());
    let viewer = w.token(&["operations_viewer"], None);
    let (status, body) = w.call("GET", series, &viewer, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["scope"], "sla:read:history");
    let (status, _) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/compliance/series?objective=nope",
            &acme,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/alerts", &acme, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["alerts"].is_array());
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/alerts", &viewer, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["scope"], "alert:read");
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/breaches", &acme, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["breaches"], json!([]));
}

#[tokio::test]
async fn tenants_are_for_operators_only() {
    let w = world().await;
    let operator = w.token(&["operator"], None);
    let (status, created) = w
        .call(
            "POST",
            "/v1/tenants",
            &operator,
            Some(json!({ "name": "globex-ai", "display_name": "Globex AI" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["id"].as_str().unwrap().starts_with("ten_"));
    let (status, body) = w
        .call(
            "POST",
            "/v1/tenants",
            &operator,
            Some(json!({ "name": "Not Valid!", "display_name": "x" })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, listed) = w.call("GET", "/v1/tenants", &operator, None).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"globex-ai") && names.contains(&"provider"),
        "{names:?}"
    );
    // A provider admin runs its own tenant, not the others.
    let (status, body) = w
        .call(
            "GET",
            "/v1/tenants",
            &w.token(&["provider_admin"], None),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["scope"], "tenant:admin");
}

#[tokio::test]
async fn graphql_reads_budget_status_alerts_and_breaches_through_the_same_rules() {
    let w = world().await;
    let query = r#"{ sla(name: "acme-enterprise") { budgetStatus { exhausted objectives { objective } } alerts { rule } breaches { objective } } }"#;
    let answer = w
        .graphql(&w.token(&["customer_admin"], Some(w.acme)), query)
        .await;
    assert!(answer["errors"].is_null(), "{answer}");
    assert_eq!(answer["data"]["sla"]["budgetStatus"]["exhausted"], false);
    assert_eq!(
        answer["data"]["sla"]["budgetStatus"]["objectives"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let answer = w
        .graphql(&w.token(&["operations_viewer"], None), query)
        .await;
    assert_eq!(refused_scopes(&answer), ["alert:read"], "{answer}");
    let answer = w
        .graphql(
            &w.token(&["provider_admin"], None),
            r#"mutation { createCustomer(externalRef: "initech", name: "Initech") { id } }"#,
        )
        .await;
    assert!(
        answer["data"]["createCustomer"]["id"]
            .as_str()
            .unwrap()
            .starts_with("cus_"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_key_left_pending_by_a_dead_request_is_taken_over_after_a_while() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    for (key, age_secs) in [("stuck-old", 600), ("stuck-new", 1)] {
        // The fingerprint of the very request sent below.
        let body = serde_json::to_vec(&json!({ "external_ref": key, "name": key })).unwrap();
        let fingerprint = slaproof_app::idempotency::fingerprint("POST /v1/customers", &body);
        sqlx::query(
            "INSERT INTO api_idempotency_keys (tenant_id, subject, key, fingerprint, created_at) \
             VALUES ($1, 'someone', $2, $4, now() - make_interval(secs => $3))",
        )
        .bind(w.tenant.uuid())
        .bind(key)
        .bind(f64::from(age_secs))
        .bind(fingerprint)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let post = |key: &'static str| {
        w.http
            .post(format!("http://{}/v1/customers", w.app.address))
            .bearer_auth(&admin)
            .header("Idempotency-Key", key)
            .json(&json!({ "external_ref": key, "name": key }))
            .send()
    };
    assert_eq!(
        post("stuck-old").await.unwrap().status(),
        StatusCode::CREATED
    );
    assert_eq!(
        post("stuck-new").await.unwrap().status(),
        StatusCode::CONFLICT
    );
}

#[tokio::test]
async fn nul_characters_are_refused_before_they_reach_postgres() {
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let start = chrono::Utc::now();
    let (status, body) = w
        .call(
            "POST",
            "/v1/maintenance-windows",
            &admin,
            Some(json!({ "description": "a\u{0}b", "starts_at": start, "ends_at": start + chrono::Duration::minutes(1) })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    for path in [
        "/v1/slas/%00",
        "/v1/slas/acme-enterprise/compliance/series?objective=%00",
        "/v1/ingest-keys/%00",
    ] {
        let method = if path.starts_with("/v1/ingest-keys") {
            "DELETE"
        } else {
            "GET"
        };
        let (status, body) = w.call(method, path, &admin, None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
    }
}

/// Runs the evaluator over the tenant now (the application's own may hold
/// the tenant for a moment).
async fn evaluate_now(w: &World) {
    for attempt in 0.. {
        let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
        match slaproof_evaluator::evaluate_tenant_up_to(
            &mut tx,
            &slaproof_evaluator::Settings::default(),
            Some(chrono::Utc::now() + chrono::Duration::minutes(2)),
        )
        .await
        {
            Ok(_) => {
                tx.commit().await.unwrap();
                return;
            }
            Err(e) if attempt < 100 => {
                let _ = e;
                tx.rollback().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("evaluating: {e}"),
        }
    }
}

/// `count` events at `at`, the first `bad` of them failing with 503.
async fn send_events(w: &World, at: chrono::DateTime<chrono::Utc>, count: usize, bad: usize) {
    use slaproof_store::events::{EventSource, StoredEvent};
    let day = at.date_naive();
    slaproof_store::partitions::ensure(&w.app.db, day, day)
        .await
        .unwrap();
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    for i in 0..count {
        slaproof_store::events::insert(
            &mut tx,
            &StoredEvent {
                id: Default::default(),
                occurred_at: at,
                source: EventSource::Provider,
                service: "chat-completions".into(),
                customer: Some("acme-corp".into()),
                model: None,
                request_id: Some(format!("r-{}-{i}", at.timestamp())),
                status: Some(if i < bad { 503 } else { 200 }),
                error_class: None,
                latency_us: Some(100_000),
                ttft_us: Some(30_000),
                tpot_us: Some(9_000),
                input_tokens: Some(100),
                output_tokens: Some(20),
                streaming: Some(true),
                attributes: json!({}),
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

fn objective_of<'a>(dashboard: &'a Value, name: &str) -> &'a Value {
    dashboard["objectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["objective"] == name)
        .unwrap_or_else(|| panic!("{name} not in {dashboard}"))
}

#[tokio::test]
async fn the_dashboard_answers_compliance_and_minutes_by_scope_over_rest_and_graphql() {
    use slaproof_domain::minute::floor_minute;
    let w = world().await;
    let now = chrono::Utc::now();
    // A minute with one failure in twenty, and an earlier minute wholly in
    // maintenance (both within the evaluator's grace, so both count).
    let (busy, planned) = (
        now - chrono::Duration::seconds(90),
        now - chrono::Duration::seconds(200),
    );
    send_events(&w, busy, 20, 1).await;
    send_events(&w, planned, 10, 10).await;
    let admin = w.token(&["provider_admin"], None);
    let (status, body) = w
        .call(
            "POST",
            "/v1/maintenance-windows",
            &admin,
            Some(json!({
                "sla": "acme-enterprise",
                "starts_at": floor_minute(planned),
                "ends_at": floor_minute(planned) + chrono::Duration::minutes(1),
                "description": "failover drill",
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Declared once it had started, the window is an emergency: it is
    // excluded because the customer accepts it.
    assert_eq!(body["status"], "emergency", "{body}");
    let (status, accepted) = w
        .call(
            "POST",
            &format!(
                "/v1/slas/acme-enterprise/maintenance-windows/{}/accept",
                body["id"].as_str().unwrap()
            ),
            &w.token(&["customer_admin"], Some(w.acme)),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{accepted}");
    evaluate_now(&w).await;

    let path = "/v1/slas/acme-enterprise/dashboard";
    let (status, dashboard) = w.call("GET", path, &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{dashboard}");
    assert_eq!(dashboard["redacted"], json!([]), "{dashboard}");
    assert_eq!(dashboard["objectives"].as_array().unwrap().len(), 4);
    let availability = objective_of(&dashboard, "availability");
    let minutes = availability["minutes"].as_array().unwrap();
    let point = |at: chrono::DateTime<chrono::Utc>| {
        minutes
            .iter()
            .find(|p| {
                p["minute"]
                    .as_str()
                    .unwrap()
                    .parse::<chrono::DateTime<chrono::Utc>>()
                    == Ok(floor_minute(at))
            })
            .unwrap_or_else(|| panic!("no point at {at} in {minutes:?}"))
            .clone()
    };
    let busy_point = point(busy);
    assert_eq!(
        (
            &busy_point["good"],
            &busy_point["total"],
            &busy_point["ratio_ppm"]
        ),
        (&json!(19), &json!(20), &json!(950_000)),
        "{busy_point}"
    );
    assert!(busy_point.get("maintenance").is_none(), "{busy_point}");
    let planned_point = point(planned);
    assert_eq!(planned_point["maintenance"], "whole", "{planned_point}");
    assert_eq!(planned_point["good"], 0);
    // The verdict leaves the maintenance minute out: 19 of 20.
    assert_eq!(availability["numbers"]["good"], 19, "{availability}");
    assert_eq!(availability["numbers"]["total"], 20, "{availability}");
    assert!(availability["numbers"]["budget_remaining"].is_i64());
    assert_eq!(
        dashboard["maintenance"][0]["starts_at"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap(),
        floor_minute(planned)
    );
    // Latency minutes count the same events under the latency objective.
    let latency = objective_of(&dashboard, "latency-p99");
    assert_eq!(latency["minutes"].as_array().unwrap().len(), 2, "{latency}");
    // The percentiles come from the chart sketches: every event took 100 ms
    // (TTFT 30 ms), and the sketch answers within 1%.
    let percentiles = dashboard["percentiles"].as_array().unwrap();
    assert_eq!(percentiles.len(), 2, "{dashboard}");
    let busy_percentiles = percentiles
        .iter()
        .find(|p| p["minute"] == busy_point["minute"])
        .unwrap();
    assert_eq!(busy_percentiles["latency"]["count"], 20);
    for (measure, micros) in [("latency", 100_000.0), ("ttft", 30_000.0)] {
        let p99 = busy_percentiles[measure]["p99_us"].as_f64().unwrap();
        assert!(
            (p99 - micros).abs() <= micros * 0.01,
            "{measure} p99 {p99} in {busy_percentiles}"
        );
    }
    assert!(busy_percentiles.get("maintenance").is_none());
    let planned_percentiles = percentiles
        .iter()
        .find(|p| p["minute"] == planned_point["minute"])
        .unwrap();
    assert_eq!(planned_percentiles["maintenance"], "whole");

    // A viewer without history sees the numbers, not the minutes, and is told why.
    let (status, viewed) = w
        .call("GET", path, &w.token(&["operations_viewer"], None), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{viewed}");
    assert!(objective_of(&viewed, "availability")["numbers"].is_object());
    assert!(
        objective_of(&viewed, "availability")
            .get("minutes")
            .is_none()
    );
    assert!(viewed.get("maintenance").is_none());
    let redacted = viewed["redacted"].as_array().unwrap();
    assert!(redacted.contains(
        &json!({ "field": "objectives[availability].minutes", "scope": "sla:read:history" })
    ));
    assert!(redacted.contains(&json!({ "field": "maintenance", "scope": "maintenance:read" })));
    assert!(redacted.contains(&json!({ "field": "percentiles", "scope": "sla:read:history" })));
    assert!(viewed.get("percentiles").is_none());

    // An embed token for uptime sees neither the latency numbers nor minutes.
    let (status, created) = w
        .call(
            "POST",
            "/v1/embed-tokens",
            &admin,
            Some(
                json!({ "customer": w.acme.to_string(), "dashboard": "overview",
                "scopes": ["sla:read", "sla:read:uptime", "sla:read:history"], "ttl_secs": 600 }),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, embedded) = w
        .call("GET", path, created["token"].as_str().unwrap(), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{embedded}");
    assert!(objective_of(&embedded, "availability")["minutes"].is_array());
    let latency = objective_of(&embedded, "latency-p99");
    assert!(latency.get("minutes").is_none() && latency.get("numbers").is_none());
    assert!(embedded["redacted"].as_array().unwrap().contains(
        &json!({ "field": "objectives[latency-p99].minutes", "scope": "sla:read:latency" })
    ));
    assert!(
        embedded["redacted"]
            .as_array()
            .unwrap()
            .contains(&json!({ "field": "percentiles", "scope": "sla:read:latency" }))
    );

    // Another customer's user: not found; the own customer: everything.
    let (status, _) = w
        .call(
            "GET",
            path,
            &w.token(&["customer_admin"], Some(w.other_customer)),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let acme = w.token(&["customer_admin"], Some(w.acme));
    let (status, own) = w.call("GET", path, &acme, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        objective_of(&own, "availability")["minutes"],
        availability["minutes"]
    );

    // Ranges: bounded, ordered, minutes outside left out.
    let (status, body) = w
        .call(
            "GET",
            &format!(
                "{path}?from={}",
                (now - chrono::Duration::days(3)).format("%Y-%m-%dT%H:%M:%SZ")
            ),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "from");
    let (status, narrow) = w
        .call(
            "GET",
            &format!(
                "{path}?from={}&to={}",
                floor_minute(busy).format("%Y-%m-%dT%H:%M:%SZ"),
                (floor_minute(busy) + chrono::Duration::minutes(1)).format("%Y-%m-%dT%H:%M:%SZ")
            ),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{narrow}");
    assert_eq!(
        objective_of(&narrow, "availability")["minutes"],
        json!([busy_point])
    );

    // GraphQL answers the same numbers through the same call.
    let query = r#"{ dashboard(sla: "acme-enterprise") { objectives { objective compliance { compliancePpm budgetRemaining } minutes { minute good total ratioPpm maintenance } } percentiles { minute latency { count p99Us } } maintenance { startsAt } } }"#;
    let answer = w.graphql(&admin, query).await;
    assert!(answer["errors"].is_null(), "{answer}");
    let graphql = &answer["data"]["dashboard"];
    let over_graphql = objective_of(graphql, "availability");
    assert_eq!(
        over_graphql["minutes"].as_array().unwrap().len(),
        minutes.len()
    );
    assert_eq!(
        over_graphql["compliance"]["compliancePpm"],
        availability["numbers"]["compliance_ppm"]
    );
    assert!(
        over_graphql["minutes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["good"] == 19 && p["total"] == 20 && p["ratioPpm"] == 950_000)
    );
    let over_graphql_percentiles = graphql["percentiles"].as_array().unwrap();
    assert_eq!(over_graphql_percentiles.len(), 2, "{graphql}");
    assert!(
        over_graphql_percentiles
            .iter()
            .any(|p| p["minute"] == busy_point["minute"]
                && p["latency"]["p99Us"] == busy_percentiles["latency"]["p99_us"]),
        "{graphql}"
    );
    let answer = w
        .graphql(&w.token(&["operations_viewer"], None), query)
        .await;
    let refused = refused_scopes(&answer);
    assert!(
        refused.contains(&"sla:read:history".to_owned())
            && refused.contains(&"maintenance:read".to_owned()),
        "{answer}"
    );
    let answer = w
        .graphql(
            &admin,
            r#"{ sla(name: "acme-enterprise") { dashboard(from: "yesterday") { sla } } }"#,
        )
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "INVALID",
        "{answer}"
    );
}

#[tokio::test]
async fn graphql_mutations_for_windows_keys_and_embed_tokens_follow_the_rest_rules() {
    let w = world().await;
    let start = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let end = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let create_window = format!(
        r#"mutation {{ createMaintenanceWindow(sla: "acme-enterprise", startsAt: "{start}", endsAt: "{end}", description: "upgrade") {{ id }} }}"#
    );
    let create_embed = format!(
        r#"mutation {{ createEmbedToken(customer: "{}", dashboard: "overview", scopes: ["sla:read"], ttlSecs: 600) {{ token }} }}"#,
        w.acme
    );
    // (operation, query, scope that refuses it)
    let operations = [
        ("plan a window", create_window.clone(), "maintenance:write"),
        (
            "list windows",
            r#"{ sla(name: "acme-enterprise") { maintenanceWindows { id } } }"#.to_owned(),
            "maintenance:read",
        ),
        (
            "create an ingest key",
            r#"mutation { createIngestKey(name: "gw") { key } }"#.to_owned(),
            "ingest_key:manage",
        ),
        (
            "list ingest keys",
            "{ ingestKeys { edges { node { prefix } } } }".to_owned(),
            "ingest_key:manage",
        ),
        ("sign an embed token", create_embed, "embed_token:create"),
        (
            "read embed origins",
            "{ embedOrigins }".to_owned(),
            "embed_token:create",
        ),
    ];
    let matrix: [(&str, bool, [Cell; 6]); 4] = [
        ("provider_admin", false, [Allowed; 6]),
        (
            "customer_admin",
            true,
            [Refused, Allowed, Refused, Refused, Refused, Refused],
        ),
        ("operations_viewer", false, [Refused; 6]),
        ("auditor", false, [Refused; 6]),
    ];
    for (role, is_customer, row) in matrix {
        let token = w.token(&[role], is_customer.then_some(w.acme));
        for ((operation, query, scope), expected) in operations.iter().zip(row) {
            let answer = w.graphql(&token, query).await;
            let refused = refused_scopes(&answer);
            let got = if refused.iter().any(|s| s == scope || s == "sla:read") {
                Refused
            } else {
                assert!(answer["errors"].is_null(), "{role} {operation}: {answer}");
                Allowed
            };
            assert_eq!(got, expected, "{role} × {operation} over GraphQL: {answer}");
        }
    }

    // What they do is what REST does.
    let admin = w.token(&["provider_admin"], None);
    let answer = w
        .graphql(
            &admin,
            r#"mutation { createIngestKey(name: "eu gateway") { key ingestKey { id prefix name revokedAt } } }"#,
        )
        .await;
    let created = &answer["data"]["createIngestKey"];
    let secret = created["key"].as_str().unwrap();
    let prefix = created["ingestKey"]["prefix"].as_str().unwrap();
    assert!(secret.starts_with(prefix), "{answer}");
    assert!(created["ingestKey"]["revokedAt"].is_null());
    let (_, listed) = w.call("GET", "/v1/ingest-keys", &admin, None).await;
    assert!(listed.to_string().contains(prefix) && !listed.to_string().contains(secret));
    let listed = w
        .graphql(&admin, "{ ingestKeys { edges { node { prefix } } } }")
        .await;
    assert!(
        !listed.to_string().contains(secret),
        "the secret is shown once"
    );
    let revoked = w
        .graphql(
            &admin,
            &format!(r#"mutation {{ revokeIngestKey(id: "{prefix}") {{ revokedAt }} }}"#),
        )
        .await;
    assert!(
        revoked["data"]["revokeIngestKey"]["revokedAt"].is_string(),
        "{revoked}"
    );

    let planned = w.graphql(&admin, &create_window).await;
    let id = planned["data"]["createMaintenanceWindow"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, listed) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/maintenance-windows",
            &admin,
            None,
        )
        .await;
    assert!(listed.to_string().contains(&id), "{listed}");
    let cancelled = w
        .graphql(
            &admin,
            &format!(r#"mutation {{ cancelMaintenanceWindow(id: "{id}") {{ cancelledAt }} }}"#),
        )
        .await;
    assert!(
        cancelled["data"]["cancelMaintenanceWindow"]["cancelledAt"].is_string(),
        "{cancelled}"
    );
    let backwards = w
        .graphql(
            &admin,
            &format!(
                r#"mutation {{ createMaintenanceWindow(startsAt: "{end}", endsAt: "{start}", description: "x") {{ id }} }}"#
            ),
        )
        .await;
    assert_eq!(backwards["errors"][0]["extensions"]["code"], "INVALID");
    assert!(
        backwards["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("ends_at")
    );

    let origins = w
        .graphql(
            &admin,
            r#"mutation { setEmbedOrigins(origins: ["https://console.example.com"]) }"#,
        )
        .await;
    assert_eq!(
        origins["data"]["setEmbedOrigins"],
        json!(["https://console.example.com"])
    );
    let signed = w
        .graphql(
            &admin,
            &format!(
                r#"mutation {{ createEmbedToken(customer: "{}", dashboard: "overview", scopes: ["sla:read", "sla:read:uptime"], ttlSecs: 600) {{ token scopes }} }}"#,
                w.acme
            ),
        )
        .await;
    let embed = signed["data"]["createEmbedToken"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("{signed}"));
    let response = w
        .http
        .get(format!("http://{}/v1/slas/acme-enterprise", w.app.address))
        .bearer_auth(embed)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[reqwest::header::CONTENT_SECURITY_POLICY],
        "frame-ancestors https://console.example.com"
    );
    // Never more than the issuer holds, never a write scope.
    let greedy = w
        .graphql(
            &admin,
            &format!(
                r#"mutation {{ createEmbedToken(customer: "{}", dashboard: "overview", scopes: ["sla:write"]) {{ token }} }}"#,
                w.acme
            ),
        )
        .await;
    assert_eq!(
        greedy["errors"][0]["extensions"]["code"], "INVALID",
        "{greedy}"
    );

    let operator = w.token(&["operator"], None);
    let tenant = w
        .graphql(
            &operator,
            r#"mutation { createTenant(name: "initech-ai", displayName: "Initech AI") { id name } }"#,
        )
        .await;
    assert!(
        tenant["data"]["createTenant"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{tenant}"))
            .starts_with("ten_")
    );
    let refused = w
        .graphql(&admin, "{ tenants { edges { node { name } } } }")
        .await;
    assert_eq!(refused_scopes(&refused), ["tenant:admin"], "{refused}");
    let customer = w
        .graphql(
            &admin,
            &format!(r#"{{ customer(id: "{}") {{ externalRef }} }}"#, w.acme),
        )
        .await;
    assert_eq!(customer["data"]["customer"]["externalRef"], "acme-corp");
}

#[tokio::test]
async fn housekeeping_deletes_idempotency_keys_past_their_day() {
    // A database without a running application: the application's own
    // housekeeping, run at start, would race the expiry measured here.
    let database = slaproof_tests::TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for (key, age_secs) in [("old", 25 * 3600), ("recent", 3600), ("new", 1)] {
        sqlx::query(
            "INSERT INTO api_idempotency_keys (tenant_id, subject, key, fingerprint, status, response, created_at) \
             VALUES ($1, 'someone', $2, '\\x00', 201, '{}', now() - make_interval(secs => $3))",
        )
        .bind(tenant.uuid())
        .bind(key)
        .bind(f64::from(age_secs))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let deleted = slaproof_app::idempotency::expire_keys(&db).await.unwrap();
    assert_eq!(deleted, 1);
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let mut left: Vec<String> = sqlx::query_scalar("SELECT key FROM api_idempotency_keys")
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    left.sort();
    assert_eq!(left, ["new", "recent"]);
}

/// A JWKS endpoint on 127.0.0.1:0 answering `set` to every request (plain
/// HTTP/1.1 over tokio, which is all an issuer's endpoint is to slaproof).
async fn serve_jwks(set: Value) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let body = set.to_string();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncache-control: max-age=300\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn tokens_signed_by_a_jwks_key_are_accepted_end_to_end() {
    let rs = EncodingKey::from_rsa_pem(RS_PRIVATE.as_bytes()).unwrap();
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&rs, Algorithm::RS256).unwrap();
    jwk.common.key_id = Some("idp-2026".into());
    let url = serve_jwks(json!({ "keys": [jwk] })).await;
    // No configured keys at all: the JWKS is the only source.
    let app = spawn_app_with(|config| {
        config.api.jwks_url = Some(url);
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let claims = json!({
        "sub": "someone", "iss": "slaproof", "aud": "slaproof-api", "exp": now() + 600,
        "tenant": tenant.to_string(), "roles": ["provider_admin"],
    });
    let http = reqwest::Client::new();
    let get = |token: String| {
        http.get(format!("http://{}/v1/slas", app.address))
            .bearer_auth(token)
            .send()
    };
    let response = get(sign(&claims, RS_PRIVATE, "idp-2026")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = http
        .post(format!("http://{}/graphql", app.address))
        .bearer_auth(sign(&claims, RS_PRIVATE, "idp-2026"))
        .json(&json!({ "query": "{ slas { edges { node { name } } } }" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer["errors"].is_null(), "{answer}");
    // Another kid, another key under the same kid, HS256 with the public key.
    let confused = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("idp-2026".into());
        jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_secret(RS_PUBLIC.as_bytes()).unwrap(),
        )
        .unwrap()
    };
    for (name, token) in [
        ("unknown kid", sign(&claims, RS_PRIVATE, "idp-2027")),
        ("wrong key", sign(&claims, OTHER_RS_PRIVATE, "idp-2026")),
        ("HS256 with the public key", confused),
    ] {
        let response = get(token).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{name}");
    }
}

#[tokio::test]
async fn customer_thresholds_follow_the_role_matrix_and_never_touch_the_contract() {
    let w = world().await;
    let path = "/v1/slas/acme-enterprise/thresholds";
    let line = "/v1/slas/acme-enterprise/thresholds/availability";
    let lines = json!({ "compliance_below_ppm": 999_500, "burn_rate_above_milli": 2_000 });
    // (role, customer, allowed)
    let matrix = [
        ("provider_admin", None, true),
        ("customer_admin", Some(w.acme), true),
        ("operations_viewer", None, false),
        ("auditor", None, false),
    ];
    for (role, customer, allowed) in matrix {
        let token = w.token(&[role], customer);
        let set = w.call("PUT", line, &token, Some(lines.clone())).await;
        let list = w.call("GET", path, &token, None).await;
        let delete = w.call("DELETE", line, &token, None).await;
        if allowed {
            assert_eq!(set.0, StatusCode::OK, "{role}: {}", set.1);
            assert_eq!(set.1["objective"], "availability");
            assert_eq!(set.1["customer_ref"], "acme-corp");
            assert_eq!(set.1["compliance_below_ppm"], 999_500);
            assert_eq!(set.1["burn_rate_above_milli"], 2_000);
            assert!(set.1.get("budget_remaining_below_ppm").is_none());
            assert_eq!(set.1["crossed"], json!([]));
            assert_eq!(list.0, StatusCode::OK, "{role}: {}", list.1);
            assert_eq!(list.1["data"].as_array().unwrap().len(), 1, "{}", list.1);
            assert_eq!(list.1["data"][0]["compliance_below_ppm"], 999_500);
            assert_eq!(delete.0, StatusCode::NO_CONTENT, "{role}");
            // Deleted: a second delete finds nothing, the list is empty.
            let again = w.call("DELETE", line, &token, None).await;
            assert_eq!(again.0, StatusCode::NOT_FOUND, "{role}: {}", again.1);
            let (_, empty) = w.call("GET", path, &token, None).await;
            assert_eq!(empty["data"], json!([]));
        } else {
            for (op, answer) in [("set", &set), ("list", &list), ("delete", &delete)] {
                assert_eq!(answer.0, StatusCode::FORBIDDEN, "{role} {op}: {}", answer.1);
                assert_eq!(answer.1["scope"], "sla:write:thresholds", "{role} {op}");
            }
        }
    }

    // Another customer's admin: the SLA does not exist for it.
    let globex = w.token(&["customer_admin"], Some(w.other_customer));
    for (method, p) in [("PUT", line), ("GET", path), ("DELETE", line)] {
        let body = (method == "PUT").then(|| lines.clone());
        let (status, answer) = w.call(method, p, &globex, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {p}: {answer}");
    }

    // Bad lines are refused naming the field and the reason.
    let acme = w.token(&["customer_admin"], Some(w.acme));
    for (body, field) in [
        (json!({ "compliance_below_ppm": 0 }), "compliance_below_ppm"),
        (
            json!({ "budget_remaining_below_ppm": 1_000_001 }),
            "budget_remaining_below_ppm",
        ),
        (
            json!({ "burn_rate_above_milli": 0 }),
            "burn_rate_above_milli",
        ),
        (json!({}), "compliance_below_ppm"),
        (json!({ "target_ppm": 1_000_000 }), "body"),
    ] {
        let (status, answer) = w.call("PUT", line, &acme, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["field"], field, "{body}: {answer}");
    }
    let (status, answer) = w
        .call(
            "PUT",
            "/v1/slas/acme-enterprise/thresholds/no-such-objective",
            &acme,
            Some(lines.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");

    // A customer's line never makes a new version of the contract, and the
    // customer still cannot change the target itself.
    let (status, _) = w.call("PUT", line, &acme, Some(lines.clone())).await;
    assert_eq!(status, StatusCode::OK);
    let (_, sla) = w.call("GET", "/v1/slas/acme-enterprise", &acme, None).await;
    assert_eq!(sla["current_version"], 1, "{sla}");
    let (status, refused) = w
        .call(
            "PUT",
            "/v1/slas/acme-enterprise/objectives/availability/target",
            &acme,
            Some(json!({ "target_ppm": 999_999 })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["scope"], "sla:write");

    // The dashboard carries the line for the chart; null where none is set.
    let (status, dashboard) = w
        .call("GET", "/v1/slas/acme-enterprise/dashboard", &acme, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{dashboard}");
    let availability = objective_of(&dashboard, "availability");
    assert_eq!(availability["thresholds"]["compliance_below_ppm"], 999_500);
    assert!(objective_of(&dashboard, "latency-p99")["thresholds"].is_null());

    // GraphQL: the same calls, the same rules.
    let set = r#"mutation { setThreshold(sla: "acme-enterprise", objective: "availability", budgetRemainingBelowPpm: 250000) { objective budgetRemainingBelowPpm complianceBelowPpm crossed } }"#;
    let read = r#"{ thresholds(sla: "acme-enterprise") { objective budgetRemainingBelowPpm } }"#;
    let delete =
        r#"mutation { deleteThreshold(sla: "acme-enterprise", objective: "availability") }"#;
    for (role, customer, allowed) in matrix {
        let token = w.token(&[role], customer);
        let answers = [
            w.graphql(&token, set).await,
            w.graphql(&token, read).await,
            w.graphql(&token, delete).await,
        ];
        for answer in &answers {
            if allowed {
                assert!(answer["errors"].is_null(), "{role}: {answer}");
            } else {
                assert_eq!(
                    refused_scopes(answer),
                    ["sla:write:thresholds"],
                    "{role}: {answer}"
                );
            }
        }
        if allowed {
            let line = &answers[0]["data"]["setThreshold"];
            assert_eq!(line["budgetRemainingBelowPpm"], 250_000, "{role}");
            assert!(line["complianceBelowPpm"].is_null(), "replaced: {line}");
            assert_eq!(
                answers[1]["data"]["thresholds"][0]["objective"],
                "availability"
            );
            assert_eq!(answers[2]["data"]["deleteThreshold"], true);
        }
    }
    let answer = w.graphql(&globex, read).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "NOT_FOUND",
        "{answer}"
    );
    let answer = w
        .graphql(
            &acme,
            r#"mutation { setThreshold(sla: "acme-enterprise", objective: "availability", burnRateAboveMilli: 0) { objective } }"#,
        )
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "INVALID",
        "{answer}"
    );
    assert!(
        answer["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("burn_rate_above_milli:"),
        "{answer}"
    );

    // Hidden from the introspection of callers without the scope.
    let fields = |answer: Value| -> Vec<String> {
        answer["data"]["__type"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let mutations = r#"{ __type(name: "Mutation") { fields { name } } }"#;
    let viewer = w.token(&["operations_viewer"], None);
    assert!(fields(w.graphql(&acme, mutations).await).contains(&"setThreshold".to_owned()));
    assert!(!fields(w.graphql(&viewer, mutations).await).contains(&"setThreshold".to_owned()));
}
