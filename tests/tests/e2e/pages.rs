//! The embedded customer dashboard in a real browser: November's requests
//! stored and the month closed, the platform served, embed tokens of two
//! scopes minted through the API, and `frontend/tests/embed.test.mjs` run in
//! Debian's chromium through playwright-core against known data (what is
//! shown, what is never requested, the uptime bar and the latency chart of
//! 11 November, axe-core, light and dark on a desktop and a phone). The
//! screenshots are kept in `target/screenshots/`.
//!
//! Needs the built pages and the browser (`scripts/test` builds and
//! installs them); skipped loudly without them, a failure under CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::StatusCode;
use slaproof_tests::fixtures::{call, token, trust_test_key};

fn frontend() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .join("frontend")
}

/// The browser and the built pages, or `None` after a loud message.
fn tools() -> Option<PathBuf> {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let built = frontend().join("dist/index.html").is_file();
    let modules = frontend().join("node_modules/playwright-core").is_dir();
    match chromium {
        Some(path) if built && modules => Some(path),
        _ => {
            assert!(
                !slaproof_tests::chain::in_ci(),
                "chromium, the built pages or playwright-core are missing under CI: scripts/test installs them"
            );
            eprintln!(
                "\n!!! SKIPPED: needs Debian's chromium, `npm ci --prefix frontend` and `npm run build --prefix frontend` (scripts/test does both) !!!\n"
            );
            None
        }
    }
}

/// The scenario's customer `acme-corp`.
async fn acme_corp(s: &slaproof_tests::scenario::Scenario) -> slaproof_domain::ids::CustomerId {
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let id = slaproof_store::customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap()
        .id;
    tx.commit().await.unwrap();
    id
}

/// The customer's check of its own request log, for the dashboard's
/// panel: one request logged as it saw it, one the provider never reported.
async fn checked_request_log(
    s: &slaproof_tests::scenario::Scenario,
    customer: slaproof_domain::ids::CustomerId,
) {
    use slaproof_app::transparency::requests::{CheckRequestsIn, ObservedRequest};
    let event = slaproof_store::events::StoredEvent {
        id: slaproof_domain::ids::EventId::new(),
        occurred_at: slaproof_tests::scenario::at("2026-11-30T10:00:00Z"),
        source: slaproof_domain::event::EventSource::Provider,
        service: "chat".into(),
        customer: Some("acme-corp".into()),
        model: None,
        request_id: Some("acme-r1".into()),
        status: Some(200),
        error_class: None,
        latency_us: Some(1000),
        ttft_us: None,
        tpot_us: None,
        input_tokens: None,
        output_tokens: None,
        streaming: None,
        attributes: serde_json::json!({}),
    };
    let received = event.occurred_at;
    s.insert_events(&[(event, received)]).await;
    let (app, _) = s.app().await;
    app.build_transparency_logs(
        &Default::default(),
        slaproof_tests::scenario::at("2026-12-02T00:00:00Z"),
    )
    .await
    .unwrap();
    let user = app
        .caller(slaproof_app::Principal {
            subject: "acme-user".into(),
            tenant: s.tenant,
            roles: vec!["customer_admin".into()],
            customer: Some(customer),
            embed: None,
        })
        .await
        .unwrap();
    let observed = |id: &str, latency_ms| ObservedRequest {
        request_id: id.into(),
        status: Some(200),
        latency_ms,
    };
    let report = app
        .check_requests(
            &user,
            CheckRequestsIn {
                requests: vec![observed("acme-r1", Some(1.0)), observed("acme-ghost", None)],
                tolerance: None,
                covers: None,
            },
        )
        .await
        .unwrap();
    assert_eq!((report.counts.included, report.counts.missing), (1, 1));
}

/// An embed token for `customer`'s SLA chat-sla with `scopes`, minted
/// through the API by a provider admin.
async fn embed_token(
    app: &slaproof_tests::TestApp,
    tenant: slaproof_domain::ids::TenantId,
    customer: slaproof_domain::ids::CustomerId,
    scopes: &[&str],
) -> String {
    let (status, minted) = call(
        &reqwest::Client::new(),
        app.address,
        &token(tenant, &["provider_admin"], None),
        "POST",
        "/v1/embed-tokens",
        Some(serde_json::json!({
            "customer": customer.to_string(),
            "dashboard": "chat-sla",
            "scopes": scopes,
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{minted}");
    minted["token"].as_str().unwrap().to_owned()
}

/// Runs `frontend/tests/<script>` in node against `app` with `vars` (and
/// the browser and the screenshot folder, `target/screenshots/`), printing
/// what it said; panics naming the failed checks.
fn browse(script: &str, app: &slaproof_tests::TestApp, chromium: &Path, vars: &[(&str, String)]) {
    let run = Command::new("node")
        .arg(frontend().join("tests").join(script))
        .current_dir(frontend())
        .env("BASE_URL", format!("http://{}", app.address))
        .env("CHROMIUM", chromium)
        .env("SHOTS", shots())
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("node runs the browser test");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    println!("{said}");
    assert!(run.status.success(), "{script} failed:\n{said}");
}

/// Where the screenshots are kept.
fn shots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .join("target/screenshots")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_dashboard_shows_what_each_token_allows_and_requests_nothing_else() {
    let Some(chromium) = tools() else {
        return;
    };
    // A 12-second request, on time, alone in its minute (02:00 on the 12th,
    // the minute after November's other traffic ends): a latency axis up to
    // 12,000 ms, which was labelled in clipped milliseconds.
    let slow = slaproof_store::events::StoredEvent {
        id: Default::default(),
        occurred_at: slaproof_tests::scenario::at("2026-11-12T02:00:30Z"),
        source: slaproof_store::events::EventSource::Provider,
        service: "chat".into(),
        customer: Some("acme-corp".into()),
        model: Some("big".into()),
        request_id: None,
        status: Some(200),
        error_class: None,
        latency_us: Some(12_000_000),
        ttft_us: None,
        tpot_us: None,
        input_tokens: None,
        output_tokens: None,
        streaming: None,
        attributes: serde_json::json!({}),
    };
    let s = crate::attestation::closed_november_with(&[(
        slow,
        slaproof_tests::scenario::at("2026-11-12T02:00:31Z"),
    )])
    .await;
    // A November failure that arrived after the month's close: shown on
    // the closed period, not counted in it (#30, finality).
    s.insert(&[slaproof_tests::scenario::Request {
        occurred_at: slaproof_tests::scenario::at("2026-11-20T10:00:00Z"),
        received_at: slaproof_tests::scenario::at("2026-12-01T01:30:00Z"),
        status: 500,
    }])
    .await;
    s.run("2026-12-01T02:00:00Z").await;
    let customer = acme_corp(&s).await;
    checked_request_log(&s, customer).await;
    let (app, tenant) = s.serve(trust_test_key).await;
    let http = reqwest::Client::new();
    let provider = token(tenant, &["provider_admin"], None);
    let (status, origins) = call(
        &http,
        app.address,
        &provider,
        "PUT",
        "/v1/embed-origins",
        Some(serde_json::json!({"origins": ["https://console.acme.example"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{origins}");
    let mint = async |scopes: &[&str]| embed_token(&app, tenant, customer, scopes).await;
    let full = mint(&[
        "sla:read",
        "sla:read:uptime",
        "sla:read:latency",
        "sla:read:credits",
        "sla:read:history",
        "maintenance:read",
        "attestation:read",
        "alert:read",
    ])
    .await;
    let narrow = mint(&["sla:read", "sla:read:uptime"]).await;

    // The page is answered to the token with a policy that lets only the
    // tenant's origin frame it and loads nothing from elsewhere; never cached.
    let page = http
        .get(format!("http://{}/embed/?token={full}", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("frame-ancestors https://console.acme.example")
            && csp.contains("script-src 'self'")
            && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(page.headers()["cache-control"], "no-store");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    let html = page.text().await.unwrap();
    let asset = html
        .split('"')
        .find(|s| s.starts_with("/embed/assets/") && s.ends_with(".js"))
        .expect("the page loads its script from /embed/assets")
        .to_owned();
    let script = http
        .get(format!("http://{}{asset}", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(
        script.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let missing = http
        .get(format!(
            "http://{}/embed/assets/..%2Fsecret.js",
            app.address
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    browse(
        "embed.test.mjs",
        &app,
        &chromium,
        &[
            ("TOKEN_FULL", full),
            ("TOKEN_NARROW", narrow),
            (
                "RANGE",
                "from=2026-11-11T00:00:00Z&to=2026-11-12T00:00:00Z".into(),
            ),
        ],
    );
    assert!(shots().join("dashboard-dark-phone.png").is_file());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_auditors_page_checks_a_proof_and_its_anchor_in_the_browser_and_names_a_tampered_one() {
    use slaproof_chain::anvil::Anvil;
    let Some(chromium) = tools() else {
        return;
    };
    let Some(anvil) = crate::attestation::anvil_binary() else {
        return;
    };
    // November proven and anchored (hash-only) on a real anvil.
    let s = crate::attestation::closed_november().await;
    let node = Anvil::start(&anvil, 0, None).expect("anvil starts");
    let (chain, deployment) = crate::attestation::chain_on(&node, 30).await;
    let w = crate::attestation::anchored_worker(&s, &chain, &deployment).await;
    assert_eq!(w.work_due().await.unwrap(), 3);
    drop(w);
    let row = crate::attestation::provable(crate::attestation::attestations_of(&s).await)
        .into_iter()
        .find(|r| r.objective == "availability")
        .unwrap();
    assert_eq!(row.status, "anchored");
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let bundle = slaproof_store::attestations::bundle(&mut tx, row.id)
        .await
        .unwrap()
        .unwrap();
    tx.commit().await.unwrap();
    let valid = tempfile::tempdir().unwrap();
    slaproof_attestation::export::write(&bundle, valid.path()).unwrap();
    let tampered = tempfile::tempdir().unwrap();
    slaproof_attestation::export::write(&bundle, tampered.path()).unwrap();
    let public = tampered.path().join("public.json");
    let mut inputs: Vec<String> = serde_json::from_slice(&std::fs::read(&public).unwrap()).unwrap();
    inputs[0] = "12345".into();
    std::fs::write(&public, serde_json::to_vec(&inputs).unwrap()).unwrap();

    // Another key (IC[0] replaced by IC[1]): its hash is not the anchored one.
    let other_key = tempfile::tempdir().unwrap();
    slaproof_attestation::export::write(&bundle, other_key.path()).unwrap();
    let key_file = other_key.path().join("verification_key.json");
    let mut key: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&key_file).unwrap()).unwrap();
    key["IC"][0] = key["IC"][1].clone();
    std::fs::write(&key_file, serde_json::to_vec(&key).unwrap()).unwrap();

    // A key with γ = δ, which verifies a forged proof of any inputs.
    let gamma_is_delta = tempfile::tempdir().unwrap();
    slaproof_attestation::export::write(&bundle, gamma_is_delta.path()).unwrap();
    let key_file = gamma_is_delta.path().join("verification_key.json");
    let mut key: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&key_file).unwrap()).unwrap();
    key["vk_delta_2"] = key["vk_gamma_2"].clone();
    std::fs::write(&key_file, serde_json::to_vec(&key).unwrap()).unwrap();

    // A summary that states more than the proof: the page headlines the
    // claim rebuilt from the checked fields, and fails the summary.
    let lying = tempfile::tempdir().unwrap();
    slaproof_attestation::export::write(&bundle, lying.path()).unwrap();
    let statement_file = lying.path().join("statement.json");
    let mut statement: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&statement_file).unwrap()).unwrap();
    let told = statement["summary"].as_str().unwrap().to_owned();
    let (_, rest) = told.split_once("% ").unwrap();
    statement["summary"] = format!("At least 99.99% {rest}").into();
    std::fs::write(&statement_file, serde_json::to_vec(&statement).unwrap()).unwrap();

    // The customer's dashboard links each anchored proof to this page.
    let customer = acme_corp(&s).await;
    let (app, tenant) = s.serve(trust_test_key).await;
    let auditor = token(tenant, &["auditor"], None);
    let embed = embed_token(&app, tenant, customer, &["sla:read", "attestation:read"]).await;
    let page = reqwest::get(format!("http://{}/audit/", app.address))
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("frame-ancestors 'none'") && !csp.contains("'unsafe-"),
        "{csp}"
    );

    browse(
        "audit.test.mjs",
        &app,
        &chromium,
        &[
            ("RPC", node.url().to_string()),
            ("BUNDLE", valid.path().display().to_string()),
            ("TAMPERED", tampered.path().display().to_string()),
            ("OTHER_KEY", other_key.path().display().to_string()),
            (
                "GAMMA_IS_DELTA",
                gamma_is_delta.path().display().to_string(),
            ),
            ("LYING", lying.path().display().to_string()),
            ("PROVEN", told),
            ("ATTESTATION", row.id.to_string()),
            ("TOKEN", auditor),
            ("EMBED_TOKEN", embed),
            ("ATTESTER", chain.address().to_string()),
            ("CHAIN_ID", chain.chain_id().to_string()),
            ("EAS", deployment.eas.to_string()),
            ("VK_SHA256", row.vk_sha256.clone().unwrap()),
        ],
    );
    node.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_providers_console_applies_an_sla_shows_its_problems_in_place_and_makes_embed_snippets()
{
    let Some(chromium) = tools() else {
        return;
    };
    let s = crate::attestation::closed_november().await;
    let (app, tenant) = s.serve(trust_test_key).await;
    let provider = token(tenant, &["provider_admin"], None);
    let (status, origins) = call(
        &reqwest::Client::new(),
        app.address,
        &provider,
        "PUT",
        "/v1/embed-origins",
        Some(serde_json::json!({"origins": ["https://console.acme.example"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{origins}");
    let page = reqwest::get(format!("http://{}/console/", app.address))
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self';"),
        "{csp}"
    );
    browse("console.test.mjs", &app, &chromium, &[("TOKEN", provider)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_dashboard_shows_the_periods_days_and_switches_to_the_period_by_keyboard() {
    use chrono::{Datelike, Duration as Span, TimeZone, Utc};
    use slaproof_tests::scenario::{Request, Scenario};
    let Some(chromium) = tools() else {
        return;
    };
    // The current month (the SLA's window is UTC months): a request a
    // minute from its start, for a day at most and never past now.
    let now = Utc::now();
    let start = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .unwrap();
    let next = if now.month() == 12 {
        Utc.with_ymd_and_hms(now.year() + 1, 1, 1, 0, 0, 0)
    } else {
        Utc.with_ymd_and_hms(now.year(), now.month() + 1, 1, 0, 0, 0)
    }
    .unwrap();
    let minutes = ((now - start).num_minutes() - 1).clamp(0, 1440);
    let requests: Vec<Request> = (0..minutes)
        .map(|i| {
            let occurred_at = start + Span::minutes(i);
            Request {
                occurred_at,
                received_at: occurred_at,
                status: if (60..72).contains(&i) { 500 } else { 200 },
            }
        })
        .collect();
    let day = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%d").to_string();
    let s = Scenario::new(
        crate::attestation::SLA,
        &day(start - Span::days(1)),
        &day(next + Span::days(1)),
    )
    .await;
    s.run(&start.to_rfc3339()).await;
    s.insert(&requests).await;
    s.run(&now.to_rfc3339()).await;
    let customer = acme_corp(&s).await;
    let (app, tenant) = s.serve(trust_test_key).await;
    let embed = embed_token(
        &app,
        tenant,
        customer,
        &[
            "sla:read",
            "sla:read:uptime",
            "sla:read:latency",
            "sla:read:history",
        ],
    )
    .await;
    browse(
        "embed-period.test.mjs",
        &app,
        &chromium,
        &[
            ("TOKEN", embed),
            ("DAYS", (next - start).num_days().to_string()),
            ("TOTAL", minutes.to_string()),
        ],
    );
}
