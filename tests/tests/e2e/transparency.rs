//! The transparency log end to end: days built once past their grace, a
//! late event in a later day's batch, consistency between the days' heads;
//! a customer's inclusion proof through the real HTTP API, checked offline
//! as the CLI checks it, and refused for another customer's request (on
//! the same service too: the lookup is by the customer each leaf commits
//! to, and a customer's check reports what was logged for it that it did
//! not send); and a
//! provider who alters, removes or inserts an event after its day was
//! logged caught by the customer's proof, the customer's bulk check and the
//! auditor's recomputation from the exported day.

use std::net::SocketAddr;

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_app::transparency::TransparencySettings;
use slaproof_app::transparency::audit::audit_day;
use slaproof_domain::event::EventSource;
use slaproof_domain::ids::{CustomerId, EventId};
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::transparency::{hash_from_hex, tree};
use slaproof_store::events::StoredEvent;
use slaproof_store::{customers, slas};
use slaproof_tests::fixtures::{self, trust_test_key};
use slaproof_tests::scenario::{Scenario, at};
use tokio_util::sync::CancellationToken;

const ACME: &str = r#"
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
    target: 99%
    ratio: {good: status < 500}
"#;

const BETA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: search-sla
spec:
  service: search
  customer: beta-inc
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
"#;

/// A request to `service`, for the customer whose SLA is on it.
fn event(service: &str, request_id: &str, at: &str, status: i32, latency_ms: i64) -> StoredEvent {
    let customer = if service == "search" {
        "beta-inc"
    } else {
        "acme-corp"
    };
    event_of(Some(customer), service, request_id, at, status, latency_ms)
}

/// A request to `service` that served `customer`.
fn event_of(
    customer: Option<&str>,
    service: &str,
    request_id: &str,
    at: &str,
    status: i32,
    latency_ms: i64,
) -> StoredEvent {
    StoredEvent {
        id: EventId::new(),
        occurred_at: at.parse().unwrap(),
        source: EventSource::Provider,
        service: service.into(),
        customer: customer.map(str::to_owned),
        model: Some("big".into()),
        request_id: Some(request_id.into()),
        status: Some(status),
        error_class: None,
        latency_us: Some(latency_ms * 1000),
        ttft_us: None,
        tpot_us: None,
        input_tokens: Some(10),
        output_tokens: Some(20),
        streaming: Some(false),
        attributes: json!({}),
    }
}

struct Platform {
    s: Scenario,
    address: SocketAddr,
    http: reqwest::Client,
    acme: CustomerId,
    beta: CustomerId,
    stop: CancellationToken,
}

impl Platform {
    async fn start() -> Self {
        let s = Scenario::new(ACME, "2026-11-01", "2026-11-30").await;
        let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
        let acme = customers::find_by_ref(&mut tx, "acme-corp")
            .await
            .unwrap()
            .unwrap()
            .id;
        let beta = customers::create(&mut tx, "beta-inc", "Beta Inc")
            .await
            .unwrap()
            .id;
        slas::apply(&mut tx, &SlaDefinition::from_document(BETA).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut config = slaproof::Config::default();
        config.server.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        trust_test_key(&mut config);
        let api = slaproof::Application::build(config, s.db.clone(), &[slaproof::Service::Api])
            .await
            .unwrap();
        let address = api.local_addr();
        let stop = CancellationToken::new();
        tokio::spawn(api.run(stop.clone()));
        Self {
            s,
            address,
            http: reqwest::Client::new(),
            acme,
            beta,
            stop,
        }
    }

    async fn store(&self, events: &[(StoredEvent, &str)]) {
        let events: Vec<(StoredEvent, DateTime<Utc>)> = events
            .iter()
            .map(|(e, received)| (e.clone(), at(received)))
            .collect();
        self.s.insert_events(&events).await;
    }

    async fn build(&self, now: &str) -> Vec<(String, u64, u64)> {
        let (app, _) = self.s.app().await;
        app.build_transparency_logs(&TransparencySettings::default(), at(now))
            .await
            .unwrap()
            .into_iter()
            .map(|d| (d.day.to_string(), d.leaves, d.late))
            .collect()
    }

    async fn call(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        fixtures::call(&self.http, self.address, token, method, path, body).await
    }

    /// A GraphQL request's `data`, or the code of its first error.
    async fn graphql(&self, token: &str, query: &str, variables: Value) -> Result<Value, String> {
        let (status, body) = self
            .call(
                token,
                "POST",
                "/graphql",
                Some(json!({"query": query, "variables": variables})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        match body["errors"].get(0) {
            Some(e) => Err(e["extensions"]["code"].as_str().unwrap_or("?").to_owned()),
            None => Ok(body["data"].clone()),
        }
    }

    /// A proof through the API, and whether it checks offline under the
    /// verifier key the heads listing publishes.
    async fn proof(&self, token: &str, request_id: &str) -> (StatusCode, Value) {
        self.call(
            token,
            "GET",
            &format!("/v1/transparency/requests/{request_id}"),
            None,
        )
        .await
    }

    async fn owner_sql(&self, sql: &str) {
        self.s.owner_sql(sql).await;
    }
}

impl Drop for Platform {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[tokio::test]
async fn days_are_logged_whole_and_customers_prove_their_own_requests() {
    let p = Platform::start().await;
    let day1: Vec<(StoredEvent, &str)> = (0..10)
        .map(|i| {
            (
                event(
                    "chat",
                    &format!("acme-{i}"),
                    &format!("2026-11-10T0{i}:00:00Z"),
                    if i == 2 { 503 } else { 200 },
                    250,
                ),
                "2026-11-10T12:00:00Z",
            )
        })
        .chain([(
            event("search", "beta-1", "2026-11-10T11:00:00Z", 200, 80),
            "2026-11-10T12:00:00Z",
        )])
        .collect();
    p.store(&day1).await;

    // Not before the day's grace (an hour) has passed; then the day whole.
    assert!(p.build("2026-11-11T00:30:00Z").await.is_empty());
    assert_eq!(
        p.build("2026-11-11T02:00:00Z").await,
        [("2026-11-10".to_owned(), 11, 0)]
    );
    assert!(
        p.build("2026-11-11T03:00:00Z").await.is_empty(),
        "built once"
    );

    // A late event of the 10th and two of the 11th: the 11th's batch, the
    // late one marked.
    p.store(&[
        (
            event("chat", "acme-late", "2026-11-10T23:59:00Z", 200, 300),
            "2026-11-11T05:00:00Z",
        ),
        (
            event("chat", "acme-11a", "2026-11-11T08:00:00Z", 200, 100),
            "2026-11-11T08:00:01Z",
        ),
        (
            event("chat", "acme-11b", "2026-11-11T09:00:00Z", 200, 100),
            "2026-11-11T09:00:01Z",
        ),
    ])
    .await;
    assert_eq!(
        p.build("2026-11-12T01:30:00Z").await,
        [("2026-11-11".to_owned(), 3, 1)]
    );

    let admin = fixtures::token(p.s.tenant, &["provider_admin"], None);
    let acme = fixtures::token(p.s.tenant, &["customer_admin"], Some(p.acme));
    let beta = fixtures::token(p.s.tenant, &["customer_admin"], Some(p.beta));
    let auditor = fixtures::token(p.s.tenant, &["auditor"], None);

    // The heads, signed, and the 11th's extends the 10th's.
    let (status, heads) = p
        .call(
            &auditor,
            "GET",
            "/v1/transparency/heads?from=2026-11-01&to=2026-11-30",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{heads}");
    let heads = heads["data"].as_array().unwrap().clone();
    assert_eq!(heads.len(), 2);
    assert_eq!(
        (
            &heads[0]["size"],
            &heads[1]["size"],
            &heads[1]["late_entries"]
        ),
        (&json!(11), &json!(14), &json!(1))
    );
    let key = heads[0]["verifier_key"].as_str().unwrap().to_owned();
    assert!(
        key.starts_with(&format!("slaproof.localhost/log/{}+", p.s.tenant)),
        "{key}"
    );
    let (status, consistency) = p
        .call(
            &auditor,
            "GET",
            "/v1/transparency/consistency?from=2026-11-10&to=2026-11-11",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{consistency}");
    let hashes = |v: &Value| -> Vec<_> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| hash_from_hex("proof", h.as_str().unwrap()).unwrap())
            .collect()
    };
    let root = |h: &Value| hash_from_hex("root", h["root"].as_str().unwrap()).unwrap();
    tree::verify_consistency(
        &hashes(&consistency["proof"]),
        11,
        root(&heads[0]),
        14,
        root(&heads[1]),
    )
    .unwrap();
    // An auditor cannot prove requests; a customer cannot list other days'
    // exports (every customer's requests are in them).
    assert_eq!(p.proof(&auditor, "acme-1").await.0, StatusCode::FORBIDDEN);

    // The customer proves its own request, and the proof checks offline
    // under the published key alone.
    let (status, proof) = p.proof(&acme, "acme-1").await;
    assert_eq!(status, StatusCode::OK, "{proof}");
    assert_eq!(
        (&proof["status"], &proof["log_day"], &proof["leaf_index"]),
        (&json!("logged"), &json!("2026-11-10"), &json!(1))
    );
    let leaf = slaproof::cli::verify_proof(&proof, &key).unwrap();
    assert_eq!(
        (leaf.status, leaf.latency_us, leaf.late),
        (Some(200), Some(250_000), false)
    );
    assert!(
        slaproof::cli::verify_proof(
            &proof,
            heads[0]["verifier_key"]
                .as_str()
                .unwrap()
                .replace("log/", "log/x")
                .as_str()
        )
        .is_err()
    );
    let (_, late) = p.proof(&acme, "acme-late").await;
    assert_eq!(
        (
            &late["log_day"],
            slaproof::cli::verify_proof(&late, &key).unwrap().late
        ),
        (&json!("2026-11-11"), true)
    );
    // Against the 10th's head too (the one anchored that day).
    let (status, on_day) = p
        .call(
            &acme,
            "GET",
            "/v1/transparency/requests/acme-1?day=2026-11-10",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{on_day}");
    assert_eq!(on_day["head"]["size"], 11);
    slaproof::cli::verify_proof(&on_day, &key).unwrap();

    // Another customer's request is not found, whoever asks but its own
    // customer and the provider.
    let (status, problem) = p.proof(&acme, "beta-1").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{problem}");
    assert_eq!(p.proof(&beta, "beta-1").await.0, StatusCode::OK);
    assert_eq!(p.proof(&beta, "acme-1").await.0, StatusCode::NOT_FOUND);
    assert_eq!(p.proof(&admin, "beta-1").await.0, StatusCode::OK);

    // The provider now alters one logged event, removes another, and
    // inserts one into the 10th after that day was logged.
    p.owner_sql("UPDATE events SET latency_us = 90000 WHERE request_id = 'acme-3'")
        .await;
    p.owner_sql("DELETE FROM events WHERE request_id = 'acme-4'")
        .await;
    p.store(&[(
        event("chat", "acme-forged", "2026-11-10T10:30:00Z", 200, 90),
        "2026-11-12T06:00:00Z",
    )])
    .await;

    // The customer's proof of the altered request fails offline, and the
    // API says so; the removed one is gone; the inserted one is not in the
    // 10th's log (it can only enter a later day's batch, marked late).
    let (status, altered) = p.proof(&acme, "acme-3").await;
    assert_eq!(
        (status, &altered["status"]),
        (StatusCode::OK, &json!("altered"))
    );
    let refused = slaproof::cli::verify_proof(&altered, &key).unwrap_err();
    assert!(
        format!("{refused:#}").contains("the audit path does not lead"),
        "{refused:#}"
    );
    assert_eq!(p.proof(&acme, "acme-4").await.0, StatusCode::NOT_FOUND);
    let (_, forged) = p.proof(&acme, "acme-forged").await;
    assert_eq!(forged["status"], "not_logged");
    assert_eq!(
        p.build("2026-11-13T01:30:00Z").await,
        [("2026-11-12".to_owned(), 1, 1)]
    );
    let (_, forged) = p.proof(&acme, "acme-forged").await;
    assert_eq!(
        (
            &forged["log_day"],
            slaproof::cli::verify_proof(&forged, &key).unwrap().late
        ),
        (&json!("2026-11-12"), true)
    );

    // The customer's bulk check of its own client-side log.
    let (status, report) = p
        .call(
            &acme,
            "POST",
            "/v1/transparency/checks",
            Some(json!({"requests": [
                {"request_id": "acme-1", "status": 200, "latency_ms": 262.0},
                {"request_id": "acme-2", "status": 200, "latency_ms": 250.0},
                {"request_id": "acme-3", "status": 200, "latency_ms": 251.0},
                {"request_id": "acme-4", "status": 200},
                {"request_id": "acme-never", "status": 200},
                {"request_id": "beta-1", "status": 200},
                {"request_id": "acme-5", "latency_ms": 900.0}
            ]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{report}");
    let findings: Vec<(&str, &str)> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["request_id"].as_str().unwrap(),
                i["finding"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        findings,
        [
            ("acme-1", "included"),
            ("acme-2", "disagreeing"),
            ("acme-3", "altered"),
            ("acme-4", "missing"),
            ("acme-never", "missing"),
            ("beta-1", "missing"),
            ("acme-5", "disagreeing"),
        ]
    );
    assert_eq!(
        report["items"][1]["differences"],
        json!([{"field": "status", "observed": "200", "recorded": "503"}])
    );
    assert_eq!(report["items"][6]["differences"][0]["field"], "latency_ms");
    let (status, latest) = p
        .call(&acme, "GET", "/v1/transparency/checks/latest", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            &latest["check"]["id"],
            &latest["check"]["counts"]["missing"]
        ),
        (&report["id"], &json!(3))
    );
    let id = report["id"].as_str().unwrap();
    assert_eq!(
        p.call(&acme, "GET", &format!("/v1/transparency/checks/{id}"), None)
            .await
            .1,
        report
    );
    assert_eq!(
        p.call(&beta, "GET", &format!("/v1/transparency/checks/{id}"), None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        p.call(&beta, "GET", "/v1/transparency/checks/latest", None)
            .await
            .1,
        json!({"check": null})
    );
    // The same reads over GraphQL answer the REST bodies, confined alike.
    let data = p
        .graphql(
            &acme,
            "query($id: String!) { requestCheck(id: $id) lastRequestCheck }",
            json!({"id": id}),
        )
        .await
        .unwrap();
    assert_eq!(data["requestCheck"], report);
    assert_eq!(data["lastRequestCheck"], latest["check"]);
    assert_eq!(
        p.graphql(
            &beta,
            "query($id: String!) { requestCheck(id: $id) }",
            json!({"id": id})
        )
        .await,
        Err("NOT_FOUND".to_owned())
    );
    let rest_heads = p
        .call(
            &auditor,
            "GET",
            "/v1/transparency/heads?from=2026-11-01&to=2026-11-30",
            None,
        )
        .await
        .1;
    let rest_consistency = p
        .call(
            &auditor,
            "GET",
            "/v1/transparency/consistency?from=2026-11-10&to=2026-11-11",
            None,
        )
        .await
        .1;
    let data = p
        .graphql(
            &auditor,
            r#"{ treeHeads(from: "2026-11-01", to: "2026-11-30")
                 treeConsistency(from: "2026-11-10", to: "2026-11-11") }"#,
            json!({}),
        )
        .await
        .unwrap();
    assert_eq!(data["treeHeads"], rest_heads["data"]);
    assert_eq!(data["treeConsistency"], rest_consistency);
    assert_eq!(
        p.graphql(
            &auditor,
            r#"{ treeHeads(from: "November", to: "2026-11-30") }"#,
            json!({})
        )
        .await,
        Err("INVALID".to_owned())
    );
    let data = p
        .graphql(&acme, r#"{ requestProof(requestId: "acme-1") }"#, json!({}))
        .await
        .unwrap();
    assert_eq!(data["requestProof"], p.proof(&acme, "acme-1").await.1);
    assert_eq!(
        p.graphql(&beta, r#"{ requestProof(requestId: "acme-1") }"#, json!({}))
            .await,
        Err("NOT_FOUND".to_owned())
    );
    let data = p
        .graphql(
            &acme,
            "mutation($input: JSON!) { checkRequests(input: $input) }",
            json!({"input": {"requests": [
                {"request_id": "acme-1", "status": 200, "latency_ms": 262.0}
            ]}}),
        )
        .await
        .unwrap();
    assert_eq!(data["checkRequests"]["items"][0]["finding"], "included");

    // Bad input is named.
    let (status, problem) = p
        .call(
            &acme,
            "POST",
            "/v1/transparency/checks",
            Some(json!({"requests": [{"request_id": ""}]})),
        )
        .await;
    assert_eq!(
        (status, &problem["field"]),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!("requests[0].request_id")
        )
    );

    // The auditor's recomputation from the exported files: the 11th holds,
    // the 10th does not (an altered and a removed leaf), and each is named.
    let (app, provider) = p.s.app().await;
    let eleventh = app
        .export_log_day(&provider, "2026-11-11".parse().unwrap())
        .await
        .unwrap();
    let audit = audit_day(&eleventh, &key);
    assert!(audit.problems.is_empty(), "{:?}", audit.problems);
    assert_eq!((audit.leaves, audit.late), (3, 1));
    let tenth = app
        .export_log_day(&provider, "2026-11-10".parse().unwrap())
        .await
        .unwrap();
    let audit = audit_day(&tenth, &key);
    assert!(
        audit
            .problems
            .iter()
            .any(|p| p.contains("leaf 4: its event is no longer stored")),
        "{:?}",
        audit.problems
    );
    assert!(
        audit
            .problems
            .iter()
            .any(|p| p.contains("rebuild the root")),
        "{:?}",
        audit.problems
    );
    // The export round-trips through its file form, and a signature under
    // another key is refused.
    let file: slaproof_app::transparency::audit::DayExport =
        serde_json::from_str(&serde_json::to_string(&eleventh).unwrap()).unwrap();
    assert!(audit_day(&file, &key).problems.is_empty());
    assert!(
        !audit_day(&file, &key.replace("log/", "log/x"))
            .problems
            .is_empty()
    );
    // A customer's user cannot export a day: it holds every customer's requests.
    let customer = app
        .caller(slaproof_app::Principal {
            subject: "acme".into(),
            tenant: p.s.tenant,
            roles: vec!["customer_admin".into()],
            customer: Some(p.acme),
            embed: None,
        })
        .await
        .unwrap();
    assert!(
        app.export_log_day(&customer, "2026-11-11".parse().unwrap())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn the_log_is_append_only_even_for_its_owner_role() {
    let p = Platform::start().await;
    p.store(&[(
        event("chat", "acme-1", "2026-11-10T01:00:00Z", 200, 250),
        "2026-11-10T01:00:01Z",
    )])
    .await;
    assert_eq!(p.build("2026-11-11T02:00:00Z").await.len(), 1);
    let mut owner = p.s.owner().await;
    for sql in [
        "UPDATE transparency_entries SET leaf_index = 7",
        "DELETE FROM transparency_heads",
        "UPDATE transparency_hashes SET hashes = decode(repeat('00', 32), 'hex')",
    ] {
        let err = sqlx::query(sql).execute(&mut owner).await.unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_built_day_is_anchored_on_chain_and_a_customer_checks_the_anchor() {
    use crate::attestation::{anchored_worker, anchors_under, anvil_binary, chain_on, worker};
    let Some(binary) = anvil_binary() else {
        return;
    };
    let p = Platform::start().await;
    p.store(&[
        (
            event("chat", "acme-1", "2026-11-10T01:00:00Z", 200, 250),
            "2026-11-10T01:00:01Z",
        ),
        (
            event("chat", "acme-2", "2026-11-11T01:00:00Z", 503, 900),
            "2026-11-11T01:00:01Z",
        ),
    ])
    .await;
    assert_eq!(p.build("2026-11-12T02:00:00Z").await.len(), 2);

    // Without a chain the days wait, due: a worker with no chain leaves
    // them to one that has it, at once (it used to claim them and put them
    // off for ten minutes, so `up` anchored its first days late). With a
    // chain each is anchored once.
    let idle = worker(&p.s, None).await;
    assert_eq!(idle.anchor_logs_due().await.unwrap(), 0);
    let acme = fixtures::token(p.s.tenant, &["customer_admin"], Some(p.acme));
    let (_, proof) = p.proof(&acme, "acme-2").await;
    assert!(proof["head"].get("anchor").is_none(), "{proof}");
    let node = slaproof_chain::anvil::Anvil::start(&binary, 0, None).expect("anvil starts");
    let (chain, deployment) = chain_on(&node, 30).await;
    let w = anchored_worker(&p.s, &chain, &deployment).await;
    assert_eq!(w.work_due().await.unwrap(), 2);
    assert_eq!(w.work_due().await.unwrap(), 0, "anchored once");
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.batch_root).await,
        2
    );

    // The customer's proof now carries the anchor, which checks on chain
    // against the signed head, with the customer's own RPC.
    let (status, proof) = p.proof(&acme, "acme-2").await;
    assert_eq!(status, StatusCode::OK, "{proof}");
    let key = proof["head"]["verifier_key"].as_str().unwrap().to_owned();
    slaproof::cli::verify_proof(&proof, &key).unwrap();
    let found = slaproof::cli::check_anchor(&proof, &key, node.url().clone())
        .await
        .unwrap();
    assert_eq!(
        Some(found.uid.to_string().as_str()),
        proof["head"]["anchor"]["uid"].as_str()
    );
    // Fail closed (found in review: the EAS address and attestation in the
    // provider's JSON were trusted): pinned, every check passes; unpinned,
    // each pin is said to be not checked; a look-alike EAS pinned against
    // the proof's is not read at all.
    let anchor_report = |pins: slaproof_attestation::audit::Pins| {
        let (proof, key, url) = (proof.clone(), key.clone(), node.url().clone());
        async move {
            let mut report = slaproof_attestation::audit::Report::default();
            slaproof::cli::check_anchor_into(&mut report, &proof, &key, url, &pins).await;
            report
        }
    };
    let pinned = slaproof_attestation::audit::Pins {
        vk_sha256: None,
        eas: Some(deployment.eas),
        attester: Some(chain.address()),
        chain_id: Some(chain.chain_id()),
        ceremony: None,
    };
    let report = anchor_report(pinned.clone()).await;
    assert_eq!(
        report.verdict(&[]),
        slaproof_attestation::audit::Verdict::Verified { waived: vec![] },
        "{}",
        report.render()
    );
    let report = anchor_report(Default::default()).await;
    assert!(report.failed().is_empty(), "{}", report.render());
    assert_eq!(
        report.not_checked_names(),
        ["chain pinned", "eas pinned", "attester pinned"],
        "{}",
        report.render()
    );
    let look_alike = slaproof_attestation::audit::Pins {
        eas: Some(
            "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
                .parse()
                .unwrap(),
        ),
        ..pinned
    };
    let report = anchor_report(look_alike).await;
    assert_eq!(
        report.failed(),
        ["eas pinned", "anchor"],
        "{}",
        report.render()
    );
    // What a day costs on chain (docs/BENCHMARKS.md quotes it).
    {
        use alloy::providers::Provider;
        let tx: alloy::primitives::B256 = proof["head"]["anchor"]["transaction"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let receipt = chain
            .provider()
            .get_transaction_receipt(tx)
            .await
            .unwrap()
            .unwrap();
        println!("gas to anchor one log day: {}", receipt.gas_used);
        assert!(receipt.gas_used < 400_000, "{}", receipt.gas_used);
    }
    // The 10th's head, anchored too, is not the 11th's: a proof pointed at
    // another day's anchor is refused.
    let (_, on_tenth) = p
        .call(
            &acme,
            "GET",
            "/v1/transparency/requests/acme-1?day=2026-11-10",
            None,
        )
        .await;
    let mut swapped = proof.clone();
    swapped["head"]["anchor"] = on_tenth["head"]["anchor"].clone();
    let refused = slaproof::cli::check_anchor(&swapped, &key, node.url().clone())
        .await
        .unwrap_err();
    assert!(
        format!("{refused:#}").contains("does not anchor this head"),
        "{refused:#}"
    );
}

#[tokio::test]
async fn on_a_shared_service_a_customer_proves_and_checks_only_requests_that_served_it() {
    let p = Platform::start().await;
    // Three requests to `chat` in one day: acme-corp's, beta-inc's (whose
    // SLA is on `search`, but whose request this is all the same), and
    // one that names no customer.
    p.store(&[
        (
            event_of(
                Some("acme-corp"),
                "chat",
                "shared-a",
                "2026-11-10T01:00:00Z",
                200,
                100,
            ),
            "2026-11-10T01:00:01Z",
        ),
        (
            event_of(
                Some("beta-inc"),
                "chat",
                "shared-b",
                "2026-11-10T02:00:00Z",
                200,
                100,
            ),
            "2026-11-10T02:00:01Z",
        ),
        (
            event_of(
                None,
                "chat",
                "shared-none",
                "2026-11-10T03:00:00Z",
                200,
                100,
            ),
            "2026-11-10T03:00:01Z",
        ),
        // Good traffic the provider invented for acme-corp: acme never
        // sent it, and it would lift acme's availability.
        (
            event_of(
                Some("acme-corp"),
                "chat",
                "padding-1",
                "2026-11-10T04:00:00Z",
                200,
                90,
            ),
            "2026-11-10T04:00:01Z",
        ),
        (
            event_of(
                Some("acme-corp"),
                "chat",
                "padding-2",
                "2026-11-10T05:00:00Z",
                200,
                90,
            ),
            "2026-11-10T05:00:01Z",
        ),
    ])
    .await;
    assert_eq!(
        p.build("2026-11-11T02:00:00Z").await,
        [("2026-11-10".to_owned(), 5, 0)]
    );
    let admin = fixtures::token(p.s.tenant, &["provider_admin"], None);
    let acme = fixtures::token(p.s.tenant, &["customer_admin"], Some(p.acme));
    let beta = fixtures::token(p.s.tenant, &["customer_admin"], Some(p.beta));

    // Each customer proves its own request, and its leaf commits to it.
    let (status, own) = p.proof(&beta, "shared-b").await;
    assert_eq!(status, StatusCode::OK, "{own}");
    assert!(
        own["leaf"]
            .as_str()
            .unwrap()
            .contains(r#""customer":"beta-inc""#),
        "{own}"
    );
    assert_eq!(p.proof(&acme, "shared-a").await.0, StatusCode::OK);
    // Not the other's, though both are on `chat`, nor one that served no
    // customer; the provider proves all three.
    assert_eq!(p.proof(&acme, "shared-b").await.0, StatusCode::NOT_FOUND);
    assert_eq!(p.proof(&beta, "shared-a").await.0, StatusCode::NOT_FOUND);
    assert_eq!(p.proof(&acme, "shared-none").await.0, StatusCode::NOT_FOUND);
    for id in ["shared-a", "shared-b", "shared-none"] {
        assert_eq!(p.proof(&admin, id).await.0, StatusCode::OK, "{id}");
    }
    // A leaf without a customer keeps the bytes it always had.
    let (_, none) = p.proof(&admin, "shared-none").await;
    assert!(
        !none["leaf"].as_str().unwrap().contains("customer"),
        "{none}"
    );

    // In a bulk check, another customer's request is missing for acme.
    let (status, report) = p
        .call(
            &acme,
            "POST",
            "/v1/transparency/checks",
            Some(json!({"requests": [
                {"request_id": "shared-a", "status": 200},
                {"request_id": "shared-b", "status": 200}
            ]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{report}");
    let findings: Vec<&str> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["finding"].as_str().unwrap())
        .collect();
    assert_eq!(findings, ["included", "missing"]);
    assert!(report.get("unclaimed").is_none(), "not asked: {report}");

    // Acme's records are complete for the 10th: what was logged for it
    // there that it did not send is reported, by day, with its leaves.
    let covers = json!({"from": "2026-11-10T00:00:00Z", "to": "2026-11-11T00:00:00Z"});
    let (status, report) = p
        .call(
            &acme,
            "POST",
            "/v1/transparency/checks",
            Some(
                json!({"requests": [{"request_id": "shared-a", "status": 200}], "covers": covers}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{report}");
    let unclaimed = &report["unclaimed"];
    assert_eq!(unclaimed["count"], 2, "{report}");
    assert_eq!(
        unclaimed["by_day"],
        json!([{"day": "2026-11-10", "count": 2}])
    );
    let listed: Vec<&str> = unclaimed["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["padding-1", "padding-2"]);
    assert_eq!(unclaimed["first"][0]["log_day"], "2026-11-10");
    // Kept with the report.
    let id = report["id"].as_str().unwrap();
    assert_eq!(
        p.call(&acme, "GET", &format!("/v1/transparency/checks/{id}"), None)
            .await
            .1["unclaimed"],
        *unclaimed
    );
    // Beta's records claim its one request: nothing unclaimed.
    let (_, report) = p
        .call(
            &beta,
            "POST",
            "/v1/transparency/checks",
            Some(json!({"requests": [{"request_id": "shared-b"}], "covers": covers})),
        )
        .await;
    assert_eq!(report["unclaimed"]["count"], 0, "{report}");
    // A provider has no records of its own to cover; a span is bounded.
    let too_long = json!({"from": "2026-10-01T00:00:00Z", "to": "2026-11-11T00:00:00Z"});
    for (token, covers) in [(&admin, &covers), (&acme, &too_long)] {
        let (status, problem) = p
            .call(
                token,
                "POST",
                "/v1/transparency/checks",
                Some(json!({"requests": [{"request_id": "shared-a"}], "covers": covers})),
            )
            .await;
        assert_eq!(
            (status, &problem["field"]),
            (StatusCode::UNPROCESSABLE_ENTITY, &json!("covers")),
            "{problem}"
        );
    }

    // The provider re-attributes logged events afterwards: acme's failing
    // request to no customer, one padding request to beta. Acme still
    // finds both through the customer the log kept: its own is `altered`
    // (its leaf no longer matches), the padding still unclaimed.
    p.owner_sql("UPDATE events SET customer = NULL WHERE request_id = 'shared-a'")
        .await;
    p.owner_sql("UPDATE events SET customer = 'beta-inc' WHERE request_id = 'padding-1'")
        .await;
    let (status, moved) = p.proof(&acme, "shared-a").await;
    assert_eq!(
        (status, &moved["status"]),
        (StatusCode::OK, &json!("altered")),
        "{moved}"
    );
    let (_, report) = p
        .call(
            &acme,
            "POST",
            "/v1/transparency/checks",
            Some(json!({"requests": [{"request_id": "shared-a"}], "covers": covers})),
        )
        .await;
    assert_eq!(report["unclaimed"]["count"], 2, "{report}");
    assert_eq!(report["items"][0]["finding"], "altered", "{report}");
}
