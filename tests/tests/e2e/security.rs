//! The attacks a pentester tries first, each refused: replays that skip
//! the scope check or hand a secret out again, operator tokens from a
//! tenant's key, embed tokens reaching past their dashboard or outliving
//! their revocation, and an SLA's history leaking to its next customer.

use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_tests::fixtures;
use slaproof_tests::world::world;

#[tokio::test]
async fn a_replay_checks_scopes_first_and_never_hands_out_a_secret_again() {
    // Found by reading the code: a retry replayed the kept answer before
    // any scope check, and kept answers held the plaintext ingest key (and
    // embed token) for a day. A replay now checks the scope first, and the
    // secret is never kept: the replay answers without it.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let post = |token: &str, path: &str, body: Value| {
        w.http
            .post(format!("http://{}{path}", w.app.address))
            .bearer_auth(token)
            .header("Idempotency-Key", "secret-once")
            .json(&body)
            .send()
    };
    let first = post(&admin, "/v1/ingest-keys", json!({ "name": "ci" }))
        .await
        .unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    assert_eq!(first.headers()["cache-control"], "no-store");
    let first: Value = first.json().await.unwrap();
    let secret = first["key"].as_str().unwrap().to_owned();

    // The same subject, now without the scope (a viewer's token).
    let viewer = w.token(&["operations_viewer"], None);
    let (status, problem) = {
        let answer = post(&viewer, "/v1/ingest-keys", json!({ "name": "ci" }))
            .await
            .unwrap();
        (answer.status(), answer.json::<Value>().await.unwrap())
    };
    assert_eq!(status, StatusCode::FORBIDDEN, "{problem}");
    assert!(!problem.to_string().contains(&secret));

    let again = post(&admin, "/v1/ingest-keys", json!({ "name": "ci" }))
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    assert!(again.get("key").is_none(), "{again}");

    // Nothing kept in the database holds the secret.
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let kept: Vec<String> = sqlx::query_scalar("SELECT response::text FROM api_idempotency_keys")
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(!kept.is_empty());
    assert!(kept.iter().all(|k| !k.contains(&secret)), "{kept:?}");
}

#[tokio::test]
async fn only_the_operators_key_makes_an_operator() {
    // Found by reading the code: the operator role was granted in every
    // domain and no key was tied to it, so a tenant's token claiming
    // `roles: ["operator"]` listed and created tenants.
    let w = world().await;
    let claimed = fixtures::sign(
        &fixtures::claims(w.tenant, &["operator"], None),
        fixtures::RS_PRIVATE,
        fixtures::TEST_KID,
    );
    for (method, path, body) in [
        ("GET", "/v1/tenants", None),
        (
            "POST",
            "/v1/tenants",
            Some(json!({ "name": "forged-ai", "display_name": "Forged AI" })),
        ),
    ] {
        let (status, problem) = w.call(method, path, &claimed, body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains("roles"),
            "{problem}"
        );
    }
    // And the operator's key speaks for the operator only: a tenant role
    // signed with it is refused.
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(fixtures::OPERATOR_KID.into());
    let admin_by_operator_key = jsonwebtoken::encode(
        &header,
        &fixtures::claims(w.tenant, &["provider_admin"], None),
        &jsonwebtoken::EncodingKey::from_ec_pem(fixtures::OPERATOR_PRIVATE.as_bytes()).unwrap(),
    )
    .unwrap();
    let (status, _) = w
        .call("GET", "/v1/customers", &admin_by_operator_key, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The operator's own token works.
    let (status, body) = w
        .call("GET", "/v1/tenants", &w.token(&["operator"], None), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn an_sla_moved_to_another_customer_keeps_its_old_history_from_the_new_one() {
    // Found by reading the code: the check used the SLA's current customer
    // for every version, so the new customer read the old one's versions,
    // series and breaches.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let sla: uuid::Uuid = {
        let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
        let id = slaproof_store::slas::find(&mut tx, "acme-enterprise", None)
            .await
            .unwrap()
            .id
            .uuid();
        tx.commit().await.unwrap();
        id
    };
    // A running evaluation of `version` and a closed period (with the
    // evaluation its close froze, which reads go to through the period).
    let record = async |version: i32, minutes_ago: i64, met: bool| {
        let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
        let at = chrono::Utc::now() - chrono::Duration::minutes(minutes_ago);
        let evaluate = || {
            sqlx::query_scalar::<_, uuid::Uuid>(
            "INSERT INTO evaluations (tenant_id, id, sla_id, version, objective, evaluated_at, as_of, \
                 period_start, period_end, target_ppm, good, total, excluded, late_folded, late_total, met, \
                 compliance_ppm, budget_allowed, budget_consumed, budget_remaining, burn_rate_milli) \
             VALUES ($1, gen_random_uuid(), $2, $3, 'availability', $4, $4, $4 - interval '1 day', $4, \
                 999000, 90, 100, 0, 0, 0, $5, 900000, 1, 10, -9, 9000) RETURNING id",
            )
            .bind(w.tenant.uuid())
            .bind(sla)
            .bind(version)
            .bind(at)
            .bind(met)
        };
        evaluate().fetch_one(&mut *tx).await.unwrap();
        let evaluation = evaluate().fetch_one(&mut *tx).await.unwrap();
        sqlx::query(
            "INSERT INTO period_results (tenant_id, id, sla_id, version, objective, period_start, period_end, \
                 revision, as_of, target_ppm, good, total, excluded, late_total, met, evaluation_id) \
             VALUES ($1, gen_random_uuid(), $2, $3, 'availability', $4 - interval '1 day', $4, \
                 1, $4, 999000, 90, 100, 0, 0, $5, $6)",
        )
        .bind(w.tenant.uuid())
        .bind(sla)
        .bind(version)
        .bind(at)
        .bind(met)
        .bind(evaluation)
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
    };
    // Version 1 is acme-corp's, with a breach, and an alert its traffic
    // set off (a rule of this test's own, which no round rewrites).
    record(1, 600, false).await;
    {
        let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
        sqlx::query(
            "INSERT INTO alert_states (tenant_id, sla_id, objective, rule, firing, changed_at, evaluated_at, \
                 long_burn_milli, short_burn_milli, version) \
             VALUES ($1, $2, 'availability', 'test-rule', true, now(), now(), 777000, 777000, 1)",
        )
        .bind(w.tenant.uuid())
        .bind(sla)
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    // The provider moves the SLA to globex: version 2.
    let moved = slaproof_tests::world::DEMO_SLA.replace("customer: acme-corp", "customer: globex");
    let (status, body) = w
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": moved })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["version"], 2, "{body}");

    let globex = w.token(&["customer_admin"], Some(w.other_customer));
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/versions", &globex, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let versions: Vec<i64> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [2], "{body}");
    let (status, _) = w
        .call("GET", "/v1/slas/acme-enterprise?version=1", &globex, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/breaches", &globex, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["breaches"], json!([]), "{body}");
    let (status, body) = w
        .call("GET", "/v1/slas/acme-enterprise/compliance", &globex, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        !body.to_string().contains("900000"),
        "acme-corp's last verdict shown to globex: {body}"
    );
    // The application's own evaluator runs beside the test and may add a
    // point of its own for version 2 (CI caught one on a round boundary):
    // count only the points this test recorded.
    let recorded = |body: &serde_json::Value| {
        body["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|point| point["compliance_ppm"] == 900000)
            .count()
    };
    // Issue #31, item 3: the alert acme-corp's traffic set off was shown
    // to globex (alert states were kept per SLA, whatever the version).
    let alerts = "/v1/slas/acme-enterprise/alerts";
    let (status, body) = w.call("GET", alerts, &globex, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        !body.to_string().contains("777000"),
        "acme-corp's alert shown to globex: {body}"
    );
    let (_, body) = w.call("GET", alerts, &admin, None).await;
    assert!(body.to_string().contains("777000"), "{body}");
    let series = "/v1/slas/acme-enterprise/compliance/series?objective=availability";
    let (status, body) = w.call("GET", series, &globex, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(recorded(&body), 0, "{body}");

    // Globex's own history shows; the provider still sees both versions'.
    record(2, 5, true).await;
    let (_, body) = w.call("GET", series, &globex, None).await;
    assert_eq!(recorded(&body), 1, "{body}");
    let (_, body) = w.call("GET", series, &admin, None).await;
    assert_eq!(recorded(&body), 2, "{body}");
    let (_, body) = w
        .call("GET", "/v1/slas/acme-enterprise/breaches", &admin, None)
        .await;
    assert_eq!(body["breaches"].as_array().unwrap().len(), 1, "{body}");
    // And acme-corp no longer sees the SLA at all.
    let acme = w.token(&["customer_admin"], Some(w.acme));
    let (status, _) = w
        .call("GET", "/v1/slas/acme-enterprise?version=1", &acme, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_embed_token_reads_its_dashboard_only_and_dies_when_revoked() {
    // Found by reading the code: the `dashboard` claim was never enforced
    // (a token read every SLA of its customer), tokens had no id and could
    // not be revoked, and nothing bound a token to the console framing it.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    // Without credits: acme-corp's fee is acme-enterprise's whole.
    let batch =
        slaproof_tests::world::DEMO_SLA.replace("name: acme-enterprise", "name: acme-batch");
    let batch = batch.split("  credits:").next().unwrap();
    let (status, body) = w
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": batch })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = w
        .call(
            "PUT",
            "/v1/embed-origins",
            &admin,
            Some(
                json!({ "origins": ["https://console.example.com", "https://other.example.com"] }),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let ask = |dashboard: &str, origin: Option<&str>| {
        json!({ "customer": w.acme.to_string(), "dashboard": dashboard,
                "scopes": ["sla:read", "sla:read:uptime"], "origin": origin })
    };

    // A dashboard must be the overview or one of the customer's SLAs.
    for (dashboard, origin) in [
        ("no-such-sla", None),
        ("acme-batch", Some("https://evil.example.com")),
    ] {
        let (status, problem) = w
            .call(
                "POST",
                "/v1/embed-tokens",
                &admin,
                Some(ask(dashboard, origin)),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    }

    let (status, one) = w
        .call(
            "POST",
            "/v1/embed-tokens",
            &admin,
            Some(ask("acme-batch", Some("https://console.example.com"))),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{one}");
    let token = one["token"].as_str().unwrap();
    let (status, list) = w.call("GET", "/v1/slas", token, None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let names: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme-batch"]);
    let (status, _) = w
        .call("GET", "/v1/slas/acme-enterprise/compliance", token, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Framed by its own origin only.
    let answer = w
        .http
        .get(format!("http://{}/v1/slas/acme-batch", w.app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        answer.headers()[reqwest::header::CONTENT_SECURITY_POLICY],
        "frame-ancestors https://console.example.com"
    );

    // The overview reads every SLA of the customer.
    let (_, overview) = w
        .call(
            "POST",
            "/v1/embed-tokens",
            &admin,
            Some(ask("overview", None)),
        )
        .await;
    let (_, list) = w
        .call("GET", "/v1/slas", overview["token"].as_str().unwrap(), None)
        .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 2, "{list}");

    // Revoked, it is refused at once; the other token goes on.
    let id = one["id"].as_str().unwrap();
    let (status, _) = w
        .call("DELETE", &format!("/v1/embed-tokens/{id}"), &admin, None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, problem) = w.call("GET", "/v1/slas/acme-batch", token, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("revoked"));
    let (status, _) = w
        .call("GET", "/v1/slas", overview["token"].as_str().unwrap(), None)
        .await;
    assert_eq!(status, StatusCode::OK);

    // Nothing else may be framed at all.
    let answer = w
        .http
        .get(format!("http://{}/v1/customers", w.app.address))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(
        answer.headers()[reqwest::header::CONTENT_SECURITY_POLICY],
        "frame-ancestors 'none'"
    );
}

#[tokio::test]
async fn replicas_on_one_database_accept_each_others_embed_tokens() {
    // Found by reading the code: with no `embed_secret` configured each
    // process made its own, so replicas refused each other's tokens.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let mut config = slaproof::Config::default();
    config.server.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    fixtures::trust_test_key(&mut config);
    assert!(config.api.embed_secret.is_none());
    let replica = slaproof::Application::build(config, w.app.db.clone(), &[slaproof::Service::Api])
        .await
        .unwrap();
    let replica_address = replica.local_addr();
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(replica.run(stop.clone()));

    let (status, created) = w
        .call(
            "POST",
            "/v1/embed-tokens",
            &admin,
            Some(
                json!({ "customer": w.acme.to_string(), "dashboard": "overview",
                         "scopes": ["sla:read"] }),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, body) = fixtures::call(
        &w.http,
        replica_address,
        created["token"].as_str().unwrap(),
        "GET",
        "/v1/slas",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    stop.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_sla_document_of_aliases_is_refused_before_it_expands() {
    // Found in review: a 41 KB `POST /v1/slas` body, an anchor of 20,000
    // scalars and 500 aliases to it (10⁷ values), took 2.5 s and 260 MB
    // more before its 422. It is refused by its expansion, named.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let scalars: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    let aliases = vec!["*a"; 500].join(", ");
    let document = format!(
        "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {{name: bomb}}\nx: &a [{}]\nspec: [{aliases}]\n",
        scalars.join(",")
    );
    assert!(document.len() < 120_000, "{}", document.len());
    let (status, body) = w
        .call(
            "POST",
            "/v1/slas",
            &admin,
            Some(json!({ "document": document })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "document");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("expands to more than 300000 values"),
        "{body}"
    );
    // The platform answers on.
    let (status, _) = w.call("GET", "/v1/slas", &admin, None).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn extreme_instants_in_a_query_are_refused_by_name_never_a_reset_or_a_500() {
    // Found in review: `?to=+262142-12-31T23:59:30Z` reset the connection
    // (chrono overflow in minute arithmetic) with any token, an embed
    // token's included.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    for extreme in [
        "%2B262142-12-31T23:59:30Z",
        "-262143-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "2200-01-01T00:00:00Z",
    ] {
        for path in [
            format!("/v1/slas/acme-enterprise/dashboard?to={extreme}"),
            format!("/v1/slas/acme-enterprise/dashboard?from={extreme}"),
            format!(
                "/v1/slas/acme-enterprise/compliance/series?objective=availability&to={extreme}"
            ),
            format!("/v1/slas/acme-enterprise/maintenance-windows?to={extreme}"),
            format!("/v1/credits?from={extreme}"),
            format!("/v1/credits/export?to={extreme}"),
            format!("/v1/slas/acme-enterprise/attestations?period_start={extreme}"),
        ] {
            let (status, body) = w.call("GET", &path, &admin, None).await;
            assert!(status.is_client_error(), "{path}: {status} {body}");
            if status == StatusCode::BAD_REQUEST || status == StatusCode::UNPROCESSABLE_ENTITY {
                assert!(
                    body.to_string()
                        .contains("between 1970-01-01 and 2200-01-01"),
                    "{path}: {body}"
                );
            }
        }
    }
    // GraphQL takes the same rule (its RFC 3339 reader refuses signed years).
    let answer = w
        .graphql(
            &admin,
            r#"{ dashboard(sla: "acme-enterprise", to: "9999-12-31T23:59:30Z") { sla } }"#,
        )
        .await;
    assert!(
        answer["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("between 1970-01-01 and 2200-01-01")),
        "{answer}"
    );
    // In range, as before.
    let (status, body) = w
        .call(
            "GET",
            "/v1/slas/acme-enterprise/dashboard?to=2199-12-31T23:00:00Z",
            &admin,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn secret_bearing_answers_are_never_cached_over_rest_or_graphql() {
    // Found in review: webhook create and rotate over REST, and every
    // GraphQL mutation answering a key, token or secret, had no
    // `Cache-Control: no-store`.
    let w = slaproof_tests::world::world_with(|config| {
        config.outbound =
            slaproof_http::outbound::OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
    })
    .await;
    let admin = w.token(&["provider_admin"], None);
    let send = |method: reqwest::Method, path: &str, body: Value| {
        w.http
            .request(method, format!("http://{}{path}", w.app.address))
            .bearer_auth(&admin)
            .json(&body)
            .send()
    };
    let created = send(
        reqwest::Method::POST,
        "/v1/webhook-endpoints",
        json!({ "url": "http://127.0.0.1:9/hook" }),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(created.headers()["cache-control"], "no-store");
    let endpoint: Value = created.json().await.unwrap();
    let rotated = send(
        reqwest::Method::POST,
        &format!(
            "/v1/webhook-endpoints/{}/rotate-secret",
            endpoint["endpoint"]["id"].as_str().unwrap()
        ),
        json!({}),
    )
    .await
    .unwrap();
    assert!(rotated.status().is_success(), "{}", rotated.status());
    assert_eq!(rotated.headers()["cache-control"], "no-store");
    let mutation = send(
        reqwest::Method::POST,
        "/graphql",
        json!({ "query": r#"mutation { createIngestKey(name: "ci") { key } }"# }),
    )
    .await
    .unwrap();
    assert_eq!(mutation.headers()["cache-control"], "no-store");
    let answer: Value = mutation.json().await.unwrap();
    assert!(
        answer["data"]["createIngestKey"]["key"].is_string(),
        "{answer}"
    );
}

#[tokio::test]
async fn bulk_check_reports_are_kept_newest_first_not_forever() {
    // Found in review: each `POST /v1/transparency/checks` stored a report
    // of up to 2–3 MB that was never deleted.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    let acme = w.token(&["customer_admin"], Some(w.acme));
    let body = json!({ "requests": [{ "request_id": "never-sent", "status": 200 }] });
    let check = async |token: &str| -> String {
        let (status, report) = w
            .call("POST", "/v1/transparency/checks", token, Some(body.clone()))
            .await;
        assert!(status.is_success(), "{status} {report}");
        report["id"].as_str().unwrap().to_owned()
    };
    let providers = check(&admin).await;
    let mut ids = Vec::new();
    for _ in 0..22 {
        ids.push(check(&acme).await);
    }
    let read = async |id: &str, token: &str| {
        w.call("GET", &format!("/v1/transparency/checks/{id}"), token, None)
            .await
            .0
    };
    // The newest 20 of the customer's stay; the two oldest are gone.
    assert_eq!(read(&ids[0], &acme).await, StatusCode::NOT_FOUND);
    assert_eq!(read(&ids[1], &acme).await, StatusCode::NOT_FOUND);
    assert_eq!(read(&ids[2], &acme).await, StatusCode::OK);
    assert_eq!(read(&ids[21], &acme).await, StatusCode::OK);
    // The provider's own report is counted apart, and stays.
    assert_eq!(read(&providers, &admin).await, StatusCode::OK);
}

#[tokio::test]
async fn a_cursor_that_decodes_to_nul_is_refused_by_name_on_every_list() {
    // Found in review: a cursor decoding to NUL gave 500 on some lists.
    let w = world().await;
    let admin = w.token(&["provider_admin"], None);
    for list in [
        "/v1/slas",
        "/v1/customers",
        "/v1/credits",
        "/v1/ingest-keys",
        "/v1/probes",
        "/v1/slas/acme-enterprise/audit",
    ] {
        for cursor in ["00", "610062"] {
            let (status, body) = w
                .call("GET", &format!("{list}?cursor={cursor}"), &admin, None)
                .await;
            assert!(status.is_client_error(), "{list}: {status} {body}");
        }
    }
}

#[tokio::test]
async fn latency_percentiles_of_an_sla_moved_to_another_customer_are_the_new_customers_only() {
    // Found in review (hardening II, re-assigned SLAs): the dashboard's
    // percentiles read every version's sketches, so after the SLA moved
    // from acme-corp to globex, globex read the latencies of acme-corp's
    // requests.
    use slaproof_tests::scenario::{Request, Scenario, at};
    const LATENCY: &str = "apiVersion: slaproof/v1\nkind: SLA\nmetadata:\n  name: chat-latency\nspec:\n  service: chat\n  customer: acme-corp\n  window: {calendar: month, timeZone: UTC}\n  objectives:\n  - name: fast\n    target: 99%\n    threshold: {field: latency, op: lte, value: 2s}\n";
    let s = Scenario::new(LATENCY, "2026-11-01", "2026-11-30").await;
    s.customers(&["globex"]).await;
    s.run("2026-11-10T00:00:00Z").await;
    // Ten of acme-corp's requests under version 1.
    let requests: Vec<Request> = (0..10)
        .map(|i| {
            Request::at(
                at("2026-11-10T00:00:00Z") + chrono::Duration::minutes(i),
                true,
            )
        })
        .collect();
    s.insert(&requests).await;
    s.run("2026-11-10T01:00:00Z").await;
    // The provider moves the SLA to globex: version 2.
    s.apply(&LATENCY.replace("customer: acme-corp", "customer: globex"))
        .await;
    s.run("2026-11-10T02:00:00Z").await;

    let (app, admin) = s.app().await;
    let counted = async |caller: &slaproof_app::Caller| -> u64 {
        let view = app
            .sla_dashboard(
                caller,
                "chat-latency",
                Some(at("2026-11-10T00:00:00Z")),
                Some(at("2026-11-10T02:00:00Z")),
                chrono::Duration::hours(1),
            )
            .await
            .unwrap();
        view.percentiles
            .unwrap_or_default()
            .iter()
            .map(|p| p.latency.count)
            .sum()
    };
    // The provider reads every version's; globex none of acme-corp's.
    assert_eq!(counted(&admin).await, 10);
    let globex = s.customer_user(&app, "globex").await;
    assert_eq!(counted(&globex).await, 0);
}

#[tokio::test]
async fn the_audit_trail_of_an_sla_moved_to_another_customer_keeps_the_earlier_customers_records() {
    // Found in review (hardening II, re-assigned SLAs): after the SLA moved
    // from acme-corp to globex, globex read acme-corp's users' subjects and
    // acme-corp's fees on the SLA's audit trail.
    use slaproof_tests::scenario::Scenario;
    const DOC: &str = "apiVersion: slaproof/v1\nkind: SLA\nmetadata:\n  name: chat-audit\nspec:\n  service: chat\n  customer: acme-corp\n  window: {calendar: month, timeZone: UTC}\n  objectives:\n  - name: availability\n    target: 99%\n    ratio: {good: status < 500}\n";
    let s = Scenario::new(DOC, "2026-11-01", "2026-11-30").await;
    s.customers(&["globex"]).await;
    let (app, admin) = s.app().await;
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let acme = slaproof_store::customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap()
        .id;
    tx.commit().await.unwrap();
    // acme-corp's fee (on the trail of its SLAs) and an act of its user.
    app.set_customer_fee(
        &admin,
        "acme-corp",
        slaproof_app::credits::NewFee {
            effective_from: slaproof_tests::scenario::at("2026-01-01T00:00:00Z").into(),
            currency: "EUR".into(),
            amount: "1234.00".into(),
            minor_units: None,
        },
    )
    .await
    .unwrap();
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slaproof_store::slas::find(&mut tx, "chat-audit", None)
        .await
        .unwrap()
        .id;
    slaproof_store::audit::record(
        &mut tx,
        sla,
        "maintenance.accepted",
        &slaproof_store::audit::Actor {
            subject: "alice@acme-corp",
            customer: Some(acme),
        },
        &json!({"window": "mw_x"}),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    // The provider moves the SLA to globex.
    s.apply(&DOC.replace("customer: acme-corp", "customer: globex"))
        .await;

    let trail = async |caller: &slaproof_app::Caller| {
        app.sla_audit(caller, "chat-audit", &slaproof_app::PageRequest::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|r| format!("{} {} {}", r.action, r.actor, r.details))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let provider = trail(&admin).await;
    assert!(
        provider.contains("alice@acme-corp") && provider.contains("123400"),
        "{provider}"
    );
    let globex = s.customer_user(&app, "globex").await;
    let seen = trail(&globex).await;
    assert!(!seen.contains("alice@acme-corp"), "{seen}");
    assert!(
        !seen.contains("123400") && !seen.contains("acme-corp"),
        "{seen}"
    );
}
