//! Synthetic probes end to end: a real target server on 127.0.0.1 (plain
//! answers and a server-sent event stream with a deliberate delay before
//! the first token), probes defined over REST, run by the application's
//! own runner, and the stored `source = probe` events checked value by
//! value. The outbound policy refuses the same target by default.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_domain::ids::TenantId;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_ingest::probe::{ProbeRunner, Settings as ProbeSettings};
use slaproof_store::probes::{self, ProbeDefinition, ProbeKind};
use slaproof_store::{Database, tenants};
use slaproof_tests::fixtures::{self, trust_test_key};
use slaproof_tests::{TestApp, TestDatabase, spawn_app_with};

/// The delay before `/ok` answers.
const OK_DELAY: Duration = Duration::from_millis(50);
/// The delay before the stream's first token.
const FIRST_TOKEN_DELAY: Duration = Duration::from_millis(250);
/// The delay between the stream's tokens.
const TOKEN_GAP: Duration = Duration::from_millis(20);
const TOKENS: [&str; 4] = ["po", "ng", "!", " ok"];

/// What the target server saw of the completion requests.
#[derive(Debug, Default)]
struct Seen {
    completions: Vec<(HeaderMap, Value)>,
}

/// A provider's endpoint, on 127.0.0.1.
async fn target() -> (SocketAddr, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let recorded = seen.clone();
    let app = axum::Router::new()
        .route(
            "/ok",
            get(|| async {
                tokio::time::sleep(OK_DELAY).await;
                "ok"
            }),
        )
        .route("/teapot", get(|| async { (AxumStatus::IM_A_TEAPOT, "short and stout") }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route(
            "/v1/chat/completions",
            post(move |headers: HeaderMap, body: Bytes| {
                let recorded = recorded.clone();
                async move {
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    recorded.lock().unwrap().completions.push((headers, request));
                    let stream = futures_util::stream::unfold(0usize, |step| async move {
                        let event = match step {
                            0 => {
                                tokio::time::sleep(FIRST_TOKEN_DELAY).await;
                                // A role-only chunk first, as OpenAI sends: no token yet.
                                json!({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
                                    .to_string()
                            }
                            n if n <= TOKENS.len() => {
                                if n > 1 {
                                    tokio::time::sleep(TOKEN_GAP).await;
                                }
                                json!({"choices": [{"delta": {"content": TOKENS[n - 1]}}]})
                                    .to_string()
                            }
                            n if n == TOKENS.len() + 1 => json!({
                                "choices": [],
                                "usage": {"prompt_tokens": 11, "completion_tokens": TOKENS.len(), "total_tokens": 15}
                            })
                            .to_string(),
                            n if n == TOKENS.len() + 2 => "[DONE]".to_owned(),
                            _ => return None,
                        };
                        Some((
                            Ok::<_, std::io::Error>(Bytes::from(format!("data: {event}\n\n"))),
                            step + 1,
                        ))
                    });
                    (
                        [("content-type", "text/event-stream")],
                        Body::from_stream(stream),
                    )
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, seen)
}

/// The application with loopback allowed (or not), one tenant and a
/// provider admin's token.
struct World {
    app: TestApp,
    http: reqwest::Client,
    tenant: TenantId,
}

async fn world(allow_loopback: bool) -> World {
    let app = spawn_app_with(|config| {
        trust_test_key(config);
        config.probes.poll_interval_ms = 100;
        if allow_loopback {
            config.outbound = OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
        }
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    World {
        app,
        http: reqwest::Client::new(),
        tenant,
    }
}

impl World {
    fn token(&self, roles: &[&str]) -> String {
        // A customer's role must name its customer (refused without one).
        let customer = roles
            .contains(&"customer_admin")
            .then(slaproof_domain::ids::CustomerId::new);
        fixtures::token(self.tenant, roles, customer)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.call_as(&self.token(&["provider_admin"]), method, path, body)
            .await
    }

    async fn call_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        fixtures::call(&self.http, self.app.address, token, method, path, body).await
    }

    async fn create(&self, probe: Value) -> Value {
        let (status, body) = self.call("POST", "/v1/probes", Some(probe)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body
    }
}

/// A stored probe event.
#[derive(Debug, Clone, sqlx::FromRow)]
struct ProbeEvent {
    occurred_at: DateTime<Utc>,
    source: String,
    service: String,
    model: Option<String>,
    request_id: Option<String>,
    status: Option<i32>,
    error_class: Option<String>,
    latency_us: Option<i64>,
    ttft_us: Option<i64>,
    tpot_us: Option<i64>,
    input_tokens: Option<i32>,
    output_tokens: Option<i32>,
    streaming: Option<bool>,
}

/// The events of one probe (by its id), oldest first.
async fn events_of(db: &Database, tenant: TenantId, probe: &str) -> Vec<ProbeEvent> {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let rows = sqlx::query_as(
        "SELECT occurred_at, source, service, model, request_id, status, error_class, latency_us, \
                ttft_us, tpot_us, input_tokens, output_tokens, streaming \
         FROM events WHERE request_id LIKE $1 ORDER BY occurred_at",
    )
    .bind(format!("{probe}@%"))
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    rows
}

/// Waits (up to `within`) until the probe has `n` events.
async fn wait_for_events(
    db: &Database,
    tenant: TenantId,
    probe: &str,
    n: usize,
    within: Duration,
) -> Vec<ProbeEvent> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let events = events_of(db, tenant, probe).await;
        if events.len() >= n || tokio::time::Instant::now() > deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap()
}

/// The slot (scheduled unix second) in a probe event's request id.
fn slot(event: &ProbeEvent) -> i64 {
    event
        .request_id
        .as_deref()
        .and_then(|r| r.split_once('@'))
        .and_then(|(_, s)| s.parse().ok())
        .unwrap()
}

#[tokio::test]
async fn an_http_probe_runs_on_its_schedule_and_records_status_and_latency() {
    let (target, _) = target().await;
    let w = world(true).await;
    let probe = w
        .create(json!({
            "name": "health",
            "service": "chat-completions",
            "kind": "http",
            "url": format!("http://{target}/ok"),
            "interval_secs": 10,
        }))
        .await;
    assert_eq!(probe["method"], "GET");
    assert_eq!(probe["expected_status"], 200);
    assert_eq!(probe["enabled"], true);
    let id = probe["id"].as_str().unwrap().to_owned();

    // Due at creation, then at the probe's own slots, every 10 s.
    let events = wait_for_events(&w.app.db, w.tenant, &id, 3, Duration::from_secs(30)).await;
    assert_eq!(events.len(), 3, "{events:?}");
    for event in &events {
        assert_eq!(event.source, "probe");
        assert_eq!(event.service, "chat-completions");
        assert_eq!(event.status, Some(200));
        assert_eq!(event.error_class, None);
        assert_eq!(event.streaming, Some(false));
        assert!(event.latency_us.unwrap() >= micros(OK_DELAY), "{event:?}");
        assert_eq!(event.ttft_us, None);
    }
    // The second run is the probe's first slot after creation (its phase
    // within the interval), then consecutive slots of the schedule, not
    // two runs of one slot.
    assert!(
        (0..=10).contains(&(slot(&events[1]) - slot(&events[0]))),
        "{events:?}"
    );
    assert_eq!(slot(&events[2]) - slot(&events[1]), 10, "{events:?}");
    assert!(events[1].occurred_at > events[0].occurred_at);
    assert!(events[2].occurred_at > events[1].occurred_at);

    let (status, shown) = w.call("GET", "/v1/probes/health", None).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["last_run"]["outcome"], "good");
    assert_eq!(shown["last_run"]["status"], 200);
    assert!(shown["last_run"]["latency_ms"].as_f64().unwrap() >= 50.0);
    let (status, runs) = w
        .call("GET", &format!("/v1/probes/{id}/runs?limit=1"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{runs}");
    assert_eq!(runs["data"].as_array().unwrap().len(), 1);
    assert_eq!(runs["data"][0]["status"], 200);
}

#[tokio::test]
async fn a_wrong_status_is_bad_and_a_timeout_is_an_error() {
    let (target, _) = target().await;
    let w = world(true).await;
    let teapot = w
        .create(json!({
            "name": "teapot",
            "service": "chat-completions",
            "kind": "http",
            "url": format!("http://{target}/teapot"),
            "interval_secs": 3600,
        }))
        .await;
    let slow = w
        .create(json!({
            "name": "slow",
            "service": "chat-completions",
            "kind": "http",
            "url": format!("http://{target}/slow"),
            "interval_secs": 3600,
            "timeout_ms": 300,
        }))
        .await;
    let teapot_id = teapot["id"].as_str().unwrap();
    let slow_id = slow["id"].as_str().unwrap();
    let bad = wait_for_events(&w.app.db, w.tenant, teapot_id, 1, Duration::from_secs(10)).await;
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].status, Some(418));
    assert_eq!(bad[0].error_class.as_deref(), Some("status_mismatch"));

    let timed_out = wait_for_events(&w.app.db, w.tenant, slow_id, 1, Duration::from_secs(10)).await;
    assert_eq!(timed_out.len(), 1);
    assert_eq!(timed_out[0].status, None);
    assert_eq!(timed_out[0].error_class.as_deref(), Some("timeout"));
    // The run waited out its timeout, and no longer than the answer took.
    let latency = timed_out[0].latency_us.unwrap();
    assert!(latency >= 300_000, "{latency}");
    assert!(latency < 5_000_000, "{latency}");

    // https is spoken (rustls): against a plain-HTTP port the handshake
    // fails as a connection error, not as an unsupported scheme.
    let tls = w
        .create(json!({
            "name": "tls",
            "service": "chat-completions",
            "kind": "http",
            "url": format!("https://{target}/ok"),
            "interval_secs": 3600,
        }))
        .await;
    let tls_id = tls["id"].as_str().unwrap();
    let handshake = wait_for_events(&w.app.db, w.tenant, tls_id, 1, Duration::from_secs(10)).await;
    assert_eq!(handshake.len(), 1);
    assert_eq!(handshake[0].status, None);
    assert_eq!(
        handshake[0].error_class.as_deref(),
        Some("connect"),
        "{handshake:?}"
    );

    let (_, shown) = w.call("GET", "/v1/probes/teapot", None).await;
    assert_eq!(shown["last_run"]["outcome"], "bad");
    assert!(
        shown["last_run"]["error"]
            .as_str()
            .unwrap()
            .contains("status_mismatch: answered 418, expected 200"),
        "{shown}"
    );
    let (_, shown) = w.call("GET", "/v1/probes/slow", None).await;
    assert_eq!(shown["last_run"]["outcome"], "error");
    assert!(
        shown["last_run"]["error"]
            .as_str()
            .unwrap()
            .starts_with("timeout"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_streaming_probe_records_time_to_first_token_and_never_shows_its_key() {
    let (target, seen) = target().await;
    let w = world(true).await;
    let probe = w
        .create(json!({
            "name": "chat-eu",
            "service": "chat-completions",
            "model": "llama-3",
            "kind": "streaming_completion",
            "url": format!("http://{target}/v1/chat/completions"),
            "headers": {"Authorization": "Bearer sk-secret-123"},
            "interval_secs": 3600,
        }))
        .await;
    assert_eq!(probe["method"], "POST");
    assert_eq!(probe["header_names"], json!(["authorization"]));
    assert!(!probe.to_string().contains("sk-secret-123"), "{probe}");
    let id = probe["id"].as_str().unwrap();

    let events = wait_for_events(&w.app.db, w.tenant, id, 1, Duration::from_secs(10)).await;
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event.source, "probe");
    assert_eq!(event.model.as_deref(), Some("llama-3"));
    assert_eq!(event.status, Some(200));
    assert_eq!(event.error_class, None, "{event:?}");
    assert_eq!(event.streaming, Some(true));
    let ttft = event.ttft_us.unwrap();
    assert!(ttft >= micros(FIRST_TOKEN_DELAY), "{event:?}");
    let gaps = micros(TOKEN_GAP) * (TOKENS.len() as i64 - 1);
    assert!(event.latency_us.unwrap() >= ttft + gaps, "{event:?}");
    // From the final chunk's usage.
    assert_eq!(event.output_tokens, Some(TOKENS.len() as i32));
    assert_eq!(event.input_tokens, Some(11));
    // Three gaps of 20 ms over three tokens after the first.
    assert!(event.tpot_us.unwrap() >= micros(TOKEN_GAP), "{event:?}");

    // The target got the key and a streaming request for the model.
    let (headers, request) = seen.lock().unwrap().completions[0].clone();
    assert_eq!(headers["authorization"], "Bearer sk-secret-123");
    assert!(
        headers["user-agent"]
            .to_str()
            .unwrap()
            .starts_with("slaproof-probe/")
    );
    assert_eq!(request["stream"], true);
    assert_eq!(request["model"], "llama-3");

    // Neither the list nor the probe answers the key.
    let (_, list) = w.call("GET", "/v1/probes", None).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains("sk-secret-123"));
    let (_, runs) = w.call("GET", "/v1/probes/chat-eu/runs", None).await;
    assert!(
        runs["data"][0]["ttft_ms"].as_f64().unwrap() >= 250.0,
        "{runs}"
    );

    // Issue #31, item 8: nor does the database hold it in the clear (it
    // did, in probes.headers): the value is sealed, the name kept.
    let mut owner = w.app.database.owner_connection().await;
    let stored: String = sqlx::query_scalar("SELECT headers::text FROM probes")
        .fetch_one(&mut owner)
        .await
        .unwrap();
    assert!(!stored.contains("sk-secret-123"), "{stored}");
    assert!(
        stored.contains("\"authorization\": \"sealed:v1:"),
        "{stored}"
    );
    // A probe stored before values were sealed still sends its value, and
    // a re-seal seals it.
    sqlx::query("UPDATE probes SET headers = '{\"authorization\": \"Bearer sk-old-456\"}'")
        .execute(&mut owner)
        .await
        .unwrap();
    let (status, _) = w.call("POST", "/v1/probes/chat-eu/run", None).await;
    assert!(status.is_success(), "{status}");
    let events = wait_for_events(&w.app.db, w.tenant, id, 2, Duration::from_secs(10)).await;
    assert_eq!(events.len(), 2);
    let (headers, _) = seen.lock().unwrap().completions[1].clone();
    assert_eq!(headers["authorization"], "Bearer sk-old-456");
    let app = slaproof_app::App::with_default_policy(w.app.db.clone())
        .await
        .unwrap();
    let done = app.reseal_webhook_secrets().await.unwrap();
    assert_eq!((done.probes, done.probes_resealed), (1, 1));
    let stored: String = sqlx::query_scalar("SELECT headers::text FROM probes")
        .fetch_one(&mut owner)
        .await
        .unwrap();
    assert!(!stored.contains("sk-old-456"), "{stored}");
    let (status, _) = w.call("POST", "/v1/probes/chat-eu/run", None).await;
    assert!(status.is_success(), "{status}");
    let events = wait_for_events(&w.app.db, w.tenant, id, 3, Duration::from_secs(10)).await;
    assert_eq!(events.len(), 3);
    let (headers, _) = seen.lock().unwrap().completions[2].clone();
    assert_eq!(headers["authorization"], "Bearer sk-old-456");
    assert_eq!(
        app.reseal_webhook_secrets().await.unwrap().probes_resealed,
        0
    );
}

#[tokio::test]
async fn the_default_policy_refuses_private_targets_when_saved_and_when_run() {
    let (target, _) = target().await;
    let w = world(false).await;
    for (url, range) in [
        (format!("http://{target}/ok"), "loopback"),
        (format!("http://localhost:{}/ok", target.port()), "loopback"),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "link-local",
        ),
        ("http://10.1.2.3/".to_owned(), "private"),
        ("http://[::ffff:127.0.0.1]/".to_owned(), "loopback"),
    ] {
        let (status, problem) = w
            .call(
                "POST",
                "/v1/probes",
                Some(json!({
                    "name": "inside",
                    "service": "chat-completions",
                    "kind": "http",
                    "url": url,
                })),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {problem}");
        assert_eq!(problem["field"], "url", "{problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.starts_with("url: "), "{detail}");
        assert!(detail.contains(range), "{url}: {detail}");
    }
    let (status, problem) = w
        .call(
            "POST",
            "/v1/probes",
            Some(
                json!({"name": "ftp", "service": "s", "kind": "http", "url": "ftp://example.com/"}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["field"], "url");

    // A probe that got past the save-time check (the policy was tightened
    // since, or DNS changed) is refused at connection time: an error run,
    // and the target never sees the request.
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let stored = probes::create(
        &mut tx,
        &ProbeDefinition {
            name: "rebound".into(),
            service: "chat-completions".into(),
            customer: None,
            model: None,
            kind: ProbeKind::Http,
            method: "GET".into(),
            url: format!("http://localhost:{}/ok", target.port()),
            headers: Default::default(),
            body: None,
            expected_status: 200,
            interval_secs: 3600,
            timeout_ms: 2000,
            enabled: true,
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let events = wait_for_events(
        &w.app.db,
        w.tenant,
        &stored.id.to_string(),
        1,
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].status, None);
    assert_eq!(events[0].error_class.as_deref(), Some("refused_target"));
}

#[tokio::test]
async fn probes_are_managed_with_named_errors_scopes_and_pages() {
    let (target, _) = target().await;
    let w = world(true).await;
    let url = format!("http://{target}/ok");
    let base =
        json!({"service": "chat-completions", "kind": "http", "url": url, "interval_secs": 3600});
    let with = |extra: Value| {
        let mut probe = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            probe[k] = v.clone();
        }
        probe
    };
    for (bad, field) in [
        (with(json!({"name": "Bad Name"})), "name"),
        (
            with(json!({"name": "p", "interval_secs": 5})),
            "interval_secs",
        ),
        (with(json!({"name": "p", "timeout_ms": 50})), "timeout_ms"),
        (
            with(json!({"name": "p", "expected_status": 99})),
            "expected_status",
        ),
        (with(json!({"name": "p", "method": "DELETE"})), "method"),
        (
            with(json!({"name": "p", "headers": {"Host": "evil"}})),
            "headers.Host",
        ),
        (
            with(json!({"name": "p", "kind": "streaming_completion"})),
            "model",
        ),
        (
            with(
                json!({"name": "p", "kind": "streaming_completion", "model": "m", "method": "GET"}),
            ),
            "method",
        ),
    ] {
        let (status, problem) = w.call("POST", "/v1/probes", Some(bad.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {problem}");
        assert_eq!(problem["field"], field, "{bad}: {problem}");
    }

    // Only provider admins manage probes.
    for role in ["customer_admin", "operations_viewer", "auditor"] {
        let (status, problem) = w
            .call_as(&w.token(&[role]), "GET", "/v1/probes", None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{role}");
        assert_eq!(problem["scope"], "probe:manage");
    }

    // Idempotent creation: a retry gets the first answer; the name is taken.
    let key_request = |name: &str| {
        w.http
            .post(format!("http://{}/v1/probes", w.app.address))
            .bearer_auth(w.token(&["provider_admin"]))
            .header("Idempotency-Key", "create-a")
            .json(&with(json!({"name": name, "enabled": false})))
    };
    let first: Value = key_request("a").send().await.unwrap().json().await.unwrap();
    let again = key_request("a").send().await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(first["id"], again["id"]);
    let (status, _) = w
        .call("POST", "/v1/probes", Some(with(json!({"name": "a"}))))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    for name in ["b", "c"] {
        w.create(with(json!({"name": name, "enabled": false})))
            .await;
    }

    // Pages by name.
    let (_, page) = w.call("GET", "/v1/probes?limit=2", None).await;
    let names: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, rest) = w
        .call("GET", &format!("/v1/probes?limit=2&cursor={cursor}"), None)
        .await;
    assert_eq!(rest["data"][0]["name"], "c");
    assert!(rest.get("next_cursor").is_none());

    // A disabled probe is not run on demand; enabled, it is due now.
    let (status, problem) = w.call("POST", "/v1/probes/a/run", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    let (status, patched) = w
        .call(
            "PATCH",
            "/v1/probes/a",
            Some(json!({"enabled": true, "headers": {"x-probe": "1"}, "interval_secs": 600})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["enabled"], true);
    assert_eq!(patched["interval_secs"], 600);
    assert_eq!(patched["header_names"], json!(["x-probe"]));
    let (status, _) = w.call("POST", "/v1/probes/a/run", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let id = first["id"].as_str().unwrap();
    let events = wait_for_events(&w.app.db, w.tenant, id, 1, Duration::from_secs(10)).await;
    assert_eq!(events.len(), 1);
    let (status, problem) = w
        .call(
            "PATCH",
            "/v1/probes/a",
            Some(json!({"url": "http://10.0.0.1/"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["field"], "url");

    // At most 100 probes per tenant.
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    for n in 0..97 {
        probes::create(
            &mut tx,
            &ProbeDefinition {
                name: format!("filler-{n}"),
                service: "chat-completions".into(),
                customer: None,
                model: None,
                kind: ProbeKind::Http,
                method: "GET".into(),
                url: url.clone(),
                headers: Default::default(),
                body: None,
                expected_status: 200,
                interval_secs: 3600,
                timeout_ms: 1000,
                enabled: false,
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let (status, problem) = w
        .call(
            "POST",
            "/v1/probes",
            Some(with(json!({"name": "one-too-many"}))),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("at most 100 probes"),
        "{problem}"
    );

    // Deleted: gone, its runs stay as events. Enabling a disabled probe
    // makes it due at once, and so does the run asked for: when the runner
    // claims the first before the second is asked, the probe runs twice
    // (seen under load). None is lost by the deletion.
    let before = events_of(&w.app.db, w.tenant, id).await.len();
    let (status, _) = w.call("DELETE", &format!("/v1/probes/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = w.call("GET", "/v1/probes/a", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let after = events_of(&w.app.db, w.tenant, id).await.len();
    assert!(
        after >= before && after >= 1,
        "{before} runs before, {after} after"
    );
}

#[tokio::test]
async fn two_runners_never_run_the_same_slot_twice() {
    let (target, _) = target().await;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    const PROBES: usize = 24;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let mut ids = Vec::new();
    for n in 0..PROBES {
        let stored = probes::create(
            &mut tx,
            &ProbeDefinition {
                name: format!("p{n:02}"),
                service: "chat-completions".into(),
                customer: None,
                model: None,
                kind: ProbeKind::Http,
                method: "GET".into(),
                url: format!("http://{target}/ok"),
                headers: Default::default(),
                body: None,
                expected_status: 200,
                interval_secs: 3600,
                timeout_ms: 5000,
                enabled: true,
            },
        )
        .await
        .unwrap();
        ids.push(stored.id);
    }
    tx.commit().await.unwrap();

    // Two runners, each with a pool of its own, as two replicas would be;
    // small batches so that they claim side by side.
    let policy = OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
    let settings = ProbeSettings {
        concurrency: 3,
        ..ProbeSettings::default()
    };
    let one = Arc::new(
        ProbeRunner::new(
            database.service_database().await,
            settings.clone(),
            policy.clone(),
        )
        .unwrap(),
    );
    let two =
        Arc::new(ProbeRunner::new(database.service_database().await, settings, policy).unwrap());
    let (ran_one, ran_two) = tokio::join!(one.run_due(), two.run_due());
    let (ran_one, ran_two) = (ran_one.unwrap(), ran_two.unwrap());
    assert_eq!(ran_one + ran_two, PROBES, "{ran_one} + {ran_two}");
    assert!(
        ran_one > 0 && ran_two > 0,
        "{ran_one} + {ran_two}: both worked"
    );

    for id in &ids {
        let events = events_of(&db, tenant, &id.to_string()).await;
        assert_eq!(events.len(), 1, "{id}: {events:?}");
        assert_eq!(events[0].status, Some(200));
    }
    // Nothing is due any more: the slots moved on, each to the probe's next
    // slot within the interval.
    assert_eq!(one.run_due().await.unwrap(), 0);
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for stored in probes::list(&mut tx, &slaproof_tests::all_rows())
        .await
        .unwrap()
    {
        assert!(stored.next_run_at > Utc::now());
        assert!(stored.next_run_at <= Utc::now() + chrono::Duration::minutes(60));
        assert_eq!(
            stored.last.as_ref().map(|l| l.outcome),
            Some(probes::ProbeOutcome::Good)
        );
    }
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn graphql_manages_probes_through_the_same_rules() {
    let (target, _) = target().await;
    let w = world(true).await;
    let gql = |token: String, query: String, variables: Value| {
        let w = &w;
        async move {
            let (status, body) = w
                .call_as(
                    &token,
                    "POST",
                    "/graphql",
                    Some(json!({"query": query, "variables": variables})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body
        }
    };
    let admin = w.token(&["provider_admin"]);
    let created = gql(
        admin.clone(),
        "mutation($input: ProbeInput!) { createProbe(input: $input) { id name kind method headerNames intervalSecs } }".into(),
        json!({"input": {
            "name": "gql",
            "service": "chat-completions",
            "kind": "HTTP",
            "url": format!("http://{target}/ok"),
            "headers": [{"name": "X-Api-Key", "value": "gql-secret"}],
            "intervalSecs": 3600,
        }}),
    )
    .await;
    let probe = &created["data"]["createProbe"];
    assert_eq!(probe["name"], "gql", "{created}");
    assert_eq!(probe["kind"], "http");
    assert_eq!(probe["method"], "GET");
    assert_eq!(probe["headerNames"], json!(["x-api-key"]));

    // The same field checks as REST, named.
    let refused = gql(
        admin.clone(),
        "mutation($input: ProbeInput!) { createProbe(input: $input) { id } }".into(),
        json!({"input": {"name": "x", "service": "s", "kind": "HTTP", "url": "http://10.0.0.1/"}}),
    )
    .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "INVALID",
        "{refused}"
    );
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("url: "),
        "{refused}"
    );

    let disabled = gql(
        admin.clone(),
        "mutation { updateProbe(probe: \"gql\", input: {enabled: false}) { enabled } }".into(),
        json!({}),
    )
    .await;
    assert_eq!(
        disabled["data"]["updateProbe"]["enabled"], false,
        "{disabled}"
    );
    let listed = gql(
        admin.clone(),
        "{ probes(first: 10) { edges { node { name enabled lastRun { outcome } } } } }".into(),
        json!({}),
    )
    .await;
    assert_eq!(
        listed["data"]["probes"]["edges"][0]["node"]["name"], "gql",
        "{listed}"
    );
    assert!(!listed.to_string().contains("gql-secret"));

    // A customer's admin holds no probe scope.
    let customer = gql(
        w.token(&["customer_admin"]),
        "{ probes { edges { node { name } } } }".into(),
        json!({}),
    )
    .await;
    assert_eq!(
        customer["errors"][0]["extensions"]["scope"], "probe:manage",
        "{customer}"
    );

    let deleted = gql(
        admin,
        "mutation { deleteProbe(probe: \"gql\") }".into(),
        json!({}),
    )
    .await;
    assert_eq!(deleted["data"]["deleteProbe"], true, "{deleted}");
}

#[tokio::test]
async fn an_sla_counts_probe_results_like_any_event() {
    let (target, _) = target().await;
    let w = world(true).await;
    let document = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: probed
spec:
  service: probed-api
  window: {rolling: 1d}
  objectives:
  - name: probed-availability
    target: 99%
    ratio:
      good: status < 500
      total: source == "probe"
  - name: reported-availability
    target: 99%
    ratio:
      good: status < 500
      total: source == "provider"
"#;
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    slaproof_store::slas::apply(
        &mut tx,
        &slaproof_domain::sla::SlaDefinition::from_document(document).unwrap(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let mut ids = Vec::new();
    for (name, path, timeout) in [("up", "ok", 2000), ("down", "slow", 300)] {
        let probe = w
            .create(json!({
                "name": name,
                "service": "probed-api",
                "kind": "http",
                "url": format!("http://{target}/{path}"),
                "interval_secs": 3600,
                "timeout_ms": timeout,
            }))
            .await;
        ids.push(probe["id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        let events = wait_for_events(&w.app.db, w.tenant, id, 1, Duration::from_secs(10)).await;
        assert_eq!(events.len(), 1, "{id}");
    }

    // Evaluated as of a little later, so both runs are behind the watermark.
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let run = slaproof_evaluator::evaluate_tenant_up_to(
        &mut tx,
        &slaproof_evaluator::Settings::default(),
        Some(Utc::now() + chrono::Duration::minutes(2)),
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let tally = |objective: &str| {
        run.evaluations
            .iter()
            .find(|e| e.sla_name == "probed" && e.objective == objective)
            .unwrap_or_else(|| panic!("no evaluation of {objective}: {run:?}"))
            .budget
            .tally
    };
    // The timeout has no status: not good.
    let probed = tally("probed-availability");
    assert_eq!((probed.good, probed.total), (1, 2));
    // Measured by slaproof, not reported by the provider.
    assert_eq!(tally("reported-availability").total, 0);
}

#[tokio::test]
async fn a_probe_for_a_customer_names_it_and_counts_for_that_customers_sla() {
    let (target, _) = target().await;
    let w = world(true).await;
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    slaproof_store::customers::create(&mut tx, "acme-corp", "Acme")
        .await
        .unwrap();
    for document in [
        "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme-probed}\nspec:\n  service: probed-api\n  \
         customer: acme-corp\n  window: {rolling: 1d}\n  objectives:\n  - {name: up, target: 99%, ratio: {good: status < 500}}\n",
        "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: all-probed}\nspec:\n  service: probed-api\n  \
         window: {rolling: 1d}\n  objectives:\n  - {name: up, target: 99%, ratio: {good: status < 500}}\n",
    ] {
        slaproof_store::slas::apply(
            &mut tx,
            &slaproof_domain::sla::SlaDefinition::from_document(document).unwrap(),
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    // A malformed reference is refused by name.
    let (status, problem) = w
        .call(
            "POST",
            "/v1/probes",
            Some(
                json!({"name": "bad", "service": "probed-api", "kind": "http",
                        "url": format!("http://{target}/ok"), "customer": "acme corp"}),
            ),
        )
        .await;
    assert_eq!(
        (status, &problem["field"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("customer")),
        "{problem}"
    );
    // Acme's probe (its credentials in its headers) answers; the
    // provider's own times out.
    let acme = w
        .create(
            json!({"name": "acme-up", "service": "probed-api", "kind": "http",
                       "customer": "acme-corp", "url": format!("http://{target}/ok"),
                       "headers": {"authorization": "Bearer acme-key"},
                       "interval_secs": 3600}),
        )
        .await;
    assert_eq!(acme["customer"], "acme-corp");
    let own = w
        .create(
            json!({"name": "own-down", "service": "probed-api", "kind": "http",
                       "url": format!("http://{target}/slow"), "interval_secs": 3600,
                       "timeout_ms": 300}),
        )
        .await;
    assert!(own.get("customer").is_none(), "{own}");
    for probe in [&acme, &own] {
        let id = probe["id"].as_str().unwrap();
        assert_eq!(
            wait_for_events(&w.app.db, w.tenant, id, 1, Duration::from_secs(10))
                .await
                .len(),
            1
        );
    }
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let named: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT split_part(request_id, '@', 1), customer FROM events ORDER BY customer NULLS LAST",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        named,
        [
            (
                acme["id"].as_str().unwrap().to_owned(),
                Some("acme-corp".to_owned())
            ),
            (own["id"].as_str().unwrap().to_owned(), None),
        ]
    );

    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let run = slaproof_evaluator::evaluate_tenant_up_to(
        &mut tx,
        &slaproof_evaluator::Settings::default(),
        Some(Utc::now() + chrono::Duration::minutes(2)),
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let tally = |sla: &str| {
        let t = run
            .evaluations
            .iter()
            .find(|e| e.sla_name == sla)
            .unwrap_or_else(|| panic!("no evaluation of {sla}"))
            .budget
            .tally;
        (t.good, t.total)
    };
    // Acme's SLA counts its own probe only; the service's counts both.
    assert_eq!(tally("acme-probed"), (1, 1));
    assert_eq!(tally("all-probed"), (1, 2));
}

/// Probes created together run at once (their first run is due at
/// creation), then each on a grid of its own (a phase from its id): their
/// slots spread over the interval instead of firing together for ever, and
/// each slot is still claimed once.
#[tokio::test]
async fn probes_created_together_spread_their_slots_over_the_interval() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    const PROBES: usize = 20;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    for n in 0..PROBES {
        probes::create(
            &mut tx,
            &ProbeDefinition {
                name: format!("p{n:02}"),
                service: "chat-completions".into(),
                customer: None,
                model: None,
                kind: ProbeKind::Http,
                method: "GET".into(),
                url: "https://api.example.com/health".into(),
                headers: Default::default(),
                body: None,
                expected_status: 200,
                interval_secs: 60,
                timeout_ms: 5000,
                enabled: true,
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    let before = Utc::now();
    let first = probes::claim_due(&db, 100, 100, &[]).await.unwrap();
    assert_eq!(first.len(), PROBES, "all due at creation");
    assert!(
        probes::claim_due(&db, 100, 100, &[])
            .await
            .unwrap()
            .is_empty()
    );
    let after = Utc::now();

    let next = |db: Database| async move {
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        let mut next: Vec<(String, DateTime<Utc>)> =
            probes::list(&mut tx, &slaproof_tests::all_rows())
                .await
                .unwrap()
                .into_iter()
                .map(|p| (p.definition.name, p.next_run_at))
                .collect();
        tx.commit().await.unwrap();
        next.sort();
        next
    };
    let slots = next(db.clone()).await;
    for (name, at) in &slots {
        assert!(
            *at > before && *at <= after + chrono::Duration::seconds(60),
            "{name}: {at}"
        );
    }
    // Spread, not one instant: distinct to the millisecond, and over at
    // least half the interval (20 phases drawn from 60 s all falling in
    // one half has odds of about 1 in 25,000).
    let mut millis: Vec<i64> = slots.iter().map(|(_, at)| at.timestamp_millis()).collect();
    millis.sort_unstable();
    let span = millis[PROBES - 1] - millis[0];
    millis.dedup();
    assert!(millis.len() >= PROBES - 2, "{slots:?}");
    assert!(span >= 30_000, "spread over {span} ms only: {slots:?}");

    // An interval later (the slots moved back by 60 s, as if the time had
    // come): each probe's slot is claimed once, and the next one is on the
    // same grid, a whole number of intervals on.
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    sqlx::query("UPDATE probes SET next_run_at = next_run_at - interval '60 seconds'")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let claimed = probes::claim_due(&db, 100, 100, &[]).await.unwrap();
    assert_eq!(claimed.len(), PROBES);
    assert!(
        probes::claim_due(&db, 100, 100, &[])
            .await
            .unwrap()
            .is_empty()
    );
    let moved = next(db.clone()).await;
    for ((name, old), (_, new)) in slots.iter().zip(&moved) {
        let step = (*new - *old).num_milliseconds();
        assert!(step == 0 || step == 60_000, "{name}: {old} -> {new}");
        assert!(
            claimed
                .iter()
                .any(|c| c.scheduled_at == *old - chrono::Duration::seconds(60)),
            "{name}: the slot claimed is the one that was due"
        );
    }
}

/// Issue #11, item 10: a refusal tells the provider the class of address
/// its probe's host resolves to, never the addresses (the operator's
/// internal DNS answers), when the probe is saved and in a run's recorded
/// error; and NAT64's local-use prefix, which the operator's own
/// translator maps to addresses of its choosing, is refused both times.
#[tokio::test]
async fn refusals_name_the_class_of_address_never_the_address() {
    let (target, _) = target().await;
    let w = world(false).await;
    let hidden = ["127.0.0.1", "::1", "[::1]"];
    let create = |url: String| {
        let w = &w;
        async move {
            w.call(
                "POST",
                "/v1/probes",
                Some(json!({"name": "inside", "service": "chat-completions", "kind": "http", "url": url})),
            )
            .await
        }
    };

    // Saved: a name that resolves to loopback is refused by its class.
    let (status, problem) = create(format!("http://localhost:{}/ok", target.port())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("localhost is or resolves to a loopback address"),
        "{detail}"
    );
    for address in hidden {
        assert!(!detail.contains(address), "{detail}");
    }
    // IPv6 that reaches IPv4 inside, or the operator's NAT64.
    for (url, range) in [
        ("http://[64:ff9b:1::a00:1]/", "NAT64 local-use"),
        ("http://[64:ff9b:1::808:808]/", "NAT64 local-use"),
        ("http://[64:ff9b::a00:1]/", "private"),
        ("http://[2002:a00:1::1]/", "private"),
        ("http://[::ffff:a9fe:a9fe]/", "link-local"),
    ] {
        let (status, problem) = create(url.to_owned()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {problem}");
        assert_eq!(problem["field"], "url", "{problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(range), "{url}: {detail}");
    }

    // Run: probes that skipped the save-time check (DNS changed since, or
    // the policy was tightened) are refused at connection time, and the
    // provider reads the class in the run's error, not the address.
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let mut ids = Vec::new();
    for (name, url) in [
        ("rebound", format!("http://localhost:{}/ok", target.port())),
        (
            "nat64",
            format!("http://[64:ff9b:1::a00:1]:{}/ok", target.port()),
        ),
    ] {
        let stored = probes::create(
            &mut tx,
            &ProbeDefinition {
                name: name.into(),
                service: "chat-completions".into(),
                customer: None,
                model: None,
                kind: ProbeKind::Http,
                method: "GET".into(),
                url,
                headers: Default::default(),
                body: None,
                expected_status: 200,
                interval_secs: 3600,
                timeout_ms: 1000,
                enabled: true,
            },
        )
        .await
        .unwrap();
        ids.push(stored.id.to_string());
    }
    tx.commit().await.unwrap();
    for id in &ids {
        let events = wait_for_events(&w.app.db, w.tenant, id, 1, Duration::from_secs(10)).await;
        assert_eq!(events.len(), 1, "{id}");
        assert_eq!(events[0].status, None);
        assert_eq!(
            events[0].error_class.as_deref(),
            Some("refused_target"),
            "{events:?}"
        );
    }
    let (_, rebound) = w.call("GET", "/v1/probes/rebound", None).await;
    let error = rebound["last_run"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("refused_target: localhost is or resolves to a loopback address"),
        "{error}"
    );
    for address in hidden {
        assert!(!error.contains(address), "{error}");
    }
    let (_, nat64) = w.call("GET", "/v1/probes/nat64", None).await;
    let error = nat64["last_run"]["error"].as_str().unwrap();
    assert!(error.contains("NAT64 local-use"), "{error}");
}

/// What the forging endpoint is to write before it answers: the event id
/// the probe's coming run would have had when ids were derived from the
/// probe and its slot, and the run's request id.
#[derive(Debug, Clone)]
struct Forgery {
    old_id: uuid::Uuid,
    request_id: String,
}

/// What the forging endpoint wrote for one run: every microsecond of
/// `[from, to]`, and how many of those events the ingest API stored.
#[derive(Debug, Clone, Copy)]
struct Forged {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    sent: u64,
    stored: u64,
}

/// The moments before a request's arrival the forger covers, one event a
/// microsecond: the run's start is between its measurement's first clock
/// reading and the request's arrival, which on one machine is well within.
const FORGED_WINDOW_US: i64 = 20_000;

/// The event id a probe's run in `slot` had when ids were derived (SHA-256
/// of a label, the probe's id and the slot's microseconds; the first 16
/// bytes as a version-8 UUID), computed by Postgres.
async fn derived_run_id(
    db: &Database,
    tenant: TenantId,
    probe: uuid::Uuid,
    slot: DateTime<Utc>,
) -> uuid::Uuid {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let digest: Vec<u8> = sqlx::query_scalar(
        "SELECT substring(sha256(convert_to('slaproof-probe-run', 'UTF8') || '\\x00'::bytea \
             || uuid_send($1) || int8send($2)) FROM 1 FOR 16)",
    )
    .bind(probe)
    .bind(slot.timestamp_micros())
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    uuid::Builder::from_custom_bytes(digest.try_into().unwrap()).into_uuid()
}

/// A provider's endpoint that forges its probe's result: when the probe's
/// request arrives, it waits for the [`Forgery`] it is to write, writes a
/// good event under that id at every microsecond of the moments before
/// (as the provider, with its ingest key), then answers 500.
async fn forging_target(
    ingest: SocketAddr,
    key: String,
) -> (
    SocketAddr,
    Arc<tokio::sync::watch::Sender<Option<Forgery>>>,
    Arc<Mutex<Vec<Forged>>>,
) {
    let orders = Arc::new(tokio::sync::watch::channel(None::<Forgery>).0);
    let done = Arc::new(Mutex::new(Vec::new()));
    let (handler_orders, handler_done) = (orders.clone(), done.clone());
    let app = axum::Router::new().route(
        "/forged",
        get(move || {
            let (orders, done, key) = (handler_orders.clone(), handler_done.clone(), key.clone());
            async move {
                let to = Utc::now();
                let to = DateTime::from_timestamp_micros(to.timestamp_micros()).unwrap();
                let from = to - chrono::Duration::microseconds(FORGED_WINDOW_US);
                let forgery = {
                    let mut waiting = orders.subscribe();
                    waiting
                        .wait_for(Option::is_some)
                        .await
                        .unwrap()
                        .clone()
                        .unwrap()
                };
                orders.send_replace(None);
                let http = reqwest::Client::new();
                let (mut sent, mut stored) = (0, 0);
                let mut at = from;
                while at <= to {
                    let mut batch = Vec::with_capacity(10_000);
                    while at <= to && batch.len() < 10_000 {
                        batch.push(json!({
                            "id": forgery.old_id.to_string(),
                            "time": at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                            "service": "chat-completions",
                            "request_id": forgery.request_id,
                            "status": 200,
                            "latency_ms": 12,
                            "streaming": false,
                        }));
                        at += chrono::Duration::microseconds(1);
                    }
                    sent += batch.len() as u64;
                    let reply: Value = http
                        .post(format!("http://{ingest}/v1/events"))
                        .bearer_auth(&key)
                        .json(&batch)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    stored += reply["stored"].as_u64().unwrap_or(0);
                }
                done.lock().unwrap().push(Forged {
                    from,
                    to,
                    sent,
                    stored,
                });
                (AxumStatus::INTERNAL_SERVER_ERROR, "down")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, orders, done)
}

/// Issue #11, item 10: a probe's result cannot be forged by the provider
/// it measures. The provider's endpoint, seeing the probe's request come,
/// writes good events (with its ingest key) under the id the run would
/// have had when ids were derived from the probe and its slot, at every
/// microsecond before the request arrived, so that one holds the run's
/// key `(occurred_at, id)`; then it fails the request. The failure is
/// what is stored, as a probe event, and the forged events stay the
/// provider's own.
#[tokio::test]
async fn a_provider_cannot_pre_write_its_probes_result() {
    let w = world(true).await;
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let key = slaproof_store::ingest_keys::create(&mut tx, "gateway")
        .await
        .unwrap()
        .reveal()
        .to_owned();
    tx.commit().await.unwrap();
    let (target, orders, done) = forging_target(w.app.address, key).await;

    let mut probe: Option<(String, uuid::Uuid)> = None;
    let mut last_at: Option<DateTime<Utc>> = None;
    // The run's start is almost always within the window; a run on a
    // loaded machine that is not is run again.
    for attempt in 0..3 {
        let shown = match &probe {
            None => {
                w.create(json!({
                    "name": "forged",
                    "service": "chat-completions",
                    "kind": "http",
                    "url": format!("http://{target}/forged"),
                    "interval_secs": 3600,
                    "timeout_ms": 60_000,
                }))
                .await
            }
            Some(_) => {
                let (status, shown) = w.call("POST", "/v1/probes/forged/run", None).await;
                assert_eq!(status, StatusCode::ACCEPTED, "{shown}");
                shown
            }
        };
        let id = shown["id"].as_str().unwrap().to_owned();
        let uuid = id.parse::<slaproof_domain::ids::ProbeId>().unwrap().uuid();
        probe = Some((id.clone(), uuid));
        // The slot of the coming run, as the API tells the provider.
        let slot: DateTime<Utc> = shown["next_run_at"].as_str().unwrap().parse().unwrap();
        let old_id = derived_run_id(&w.app.db, w.tenant, uuid, slot).await;
        orders.send_replace(Some(Forgery {
            old_id,
            request_id: format!("{id}@{}", slot.timestamp()),
        }));

        // The run, as its summary records it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        let at = loop {
            let (_, shown) = w.call("GET", "/v1/probes/forged", None).await;
            let at = shown["last_run"]["at"]
                .as_str()
                .map(|at| at.parse::<DateTime<Utc>>().unwrap());
            if let Some(at) = at
                && Some(at) != last_at
            {
                break at;
            }
            assert!(tokio::time::Instant::now() < deadline, "no run: {shown}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        last_at = Some(at);
        let forged = *done.lock().unwrap().last().unwrap();
        // The provider did write them all: its ingest key takes any id.
        assert_eq!(forged.stored, forged.sent, "{forged:?}");
        if !(forged.from..=forged.to).contains(&at) {
            eprintln!("attempt {attempt}: the run started at {at}, outside {forged:?}");
            continue;
        }

        // The key the run's event once had is held by the provider's event.
        let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
        let held: (String, Option<i32>) =
            sqlx::query_as("SELECT source, status FROM events WHERE occurred_at = $1 AND id = $2")
                .bind(at)
                .bind(old_id)
                .fetch_one(&mut *tx)
                .await
                .unwrap();
        assert_eq!(held, ("provider".to_owned(), Some(200)));
        // The run itself is stored, as measured: the endpoint failed it.
        let runs: Vec<(uuid::Uuid, Option<i32>, Option<String>)> = sqlx::query_as(
            "SELECT id, status, error_class FROM events \
             WHERE source = 'probe' AND request_id LIKE $1 AND occurred_at = $2",
        )
        .bind(format!("{id}@%"))
        .bind(at)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(runs.len(), 1, "the run's own event is stored: {runs:?}");
        assert_ne!(runs[0].0, old_id);
        assert_eq!(runs[0].1, Some(500));
        assert_eq!(runs[0].2.as_deref(), Some("status_mismatch"));
        let (_, listed) = w.call("GET", "/v1/probes/forged/runs?limit=1", None).await;
        assert_eq!(listed["data"][0]["status"], 500, "{listed}");
        assert_eq!(listed["data"][0]["error_class"], "status_mismatch");
        return;
    }
    panic!("no run started within the forged window in 3 attempts");
}

/// The runner's second wall: a run whose event key is found held by an
/// event it did not write (should its id ever be known) is stored under a
/// fresh id, never dropped; a retried write of the run's own event stores
/// nothing more.
#[tokio::test]
async fn a_run_whose_key_is_taken_is_stored_under_a_fresh_id() {
    use slaproof_store::events::{EventSource, StoredEvent};

    let w = world(true).await;
    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let key = slaproof_store::ingest_keys::create(&mut tx, "gateway")
        .await
        .unwrap()
        .reveal()
        .to_owned();
    tx.commit().await.unwrap();
    let probe = slaproof_domain::ids::ProbeId::new();
    let request_id = format!("{probe}@1700000000");
    let now = Utc::now() - chrono::Duration::seconds(5);
    let at = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap();
    let id = uuid::Uuid::new_v4();

    // The provider takes the key first.
    let reply: Value = w
        .http
        .post(format!("http://{}/v1/events", w.app.address))
        .bearer_auth(&key)
        .json(&json!([{
            "id": id.to_string(),
            "time": at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "service": "chat-completions",
            "request_id": request_id,
            "status": 200,
        }]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["stored"], 1, "{reply}");

    let runner = ProbeRunner::new(
        w.app.db.clone(),
        ProbeSettings::default(),
        OutboundPolicy::strict(),
    )
    .unwrap();
    let run = StoredEvent {
        id: slaproof_domain::ids::EventId::from_uuid(id),
        occurred_at: at,
        source: EventSource::Probe,
        service: "chat-completions".into(),
        customer: None,
        model: None,
        request_id: Some(request_id.clone()),
        status: Some(503),
        error_class: Some("status_mismatch".into()),
        latency_us: Some(1200),
        ttft_us: None,
        tpot_us: None,
        input_tokens: None,
        output_tokens: None,
        streaming: Some(false),
        attributes: json!({}),
    };
    let stored = runner.store_event(w.tenant, run.clone()).await.unwrap();
    assert_ne!(stored.id.uuid(), id);
    // Written again (a retry whose first attempt committed): nothing more.
    let again = runner.store_event(w.tenant, stored.clone()).await.unwrap();
    assert_eq!(again.id, stored.id);

    let mut tx = w.app.db.tenant_tx(w.tenant).await.unwrap();
    let rows: Vec<(uuid::Uuid, String, Option<i32>)> = sqlx::query_as(
        "SELECT id, source, status FROM events WHERE occurred_at = $1 ORDER BY source",
    )
    .bind(at)
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        rows,
        [
            (stored.id.uuid(), "probe".to_owned(), Some(503)),
            (id, "provider".to_owned(), Some(200)),
        ]
    );
}

/// Issue #31, item 5: one tenant's many slow probes took every slot of the
/// runner, and another tenant's probe falling due meanwhile waited for a
/// slot (or, past its slot, was skipped). A tenant now holds at most
/// `tenant_concurrency` of the slots: the other's probe runs on its slot
/// while the slow ones still wait on their target. With
/// `tenant_concurrency` 4 (no share) this test fails: the slow tenant
/// holds all four slots for five seconds.
#[tokio::test]
async fn one_tenants_slow_probes_leave_another_tenants_probe_its_slot() {
    let (target, _) = target().await;
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let slow = tenants::create(&db, "slowco", "Slow Co").await.unwrap().id;
    let other = tenants::create(&db, "other", "Other").await.unwrap().id;
    let define = |name: String, path: &str| ProbeDefinition {
        name,
        service: "chat-completions".into(),
        customer: None,
        model: None,
        kind: ProbeKind::Http,
        method: "GET".into(),
        url: format!("http://{target}{path}"),
        headers: Default::default(),
        body: None,
        expected_status: 200,
        interval_secs: 3600,
        timeout_ms: 10_000,
        enabled: true,
    };
    let mut slow_ids = Vec::new();
    let mut tx = db.tenant_tx(slow).await.unwrap();
    for n in 0..6 {
        let stored = probes::create(&mut tx, &define(format!("slow{n}"), "/slow"))
            .await
            .unwrap();
        slow_ids.push(stored.id.to_string());
    }
    tx.commit().await.unwrap();
    let mut tx = db.tenant_tx(other).await.unwrap();
    let quick = probes::create(&mut tx, &define("quick".into(), "/ok"))
        .await
        .unwrap()
        .id
        .to_string();
    tx.commit().await.unwrap();
    // The slow tenant's probes are due now; the other's falls due in two
    // seconds, when the slow ones hold their slots.
    let mut owner = database.owner_connection().await;
    sqlx::query(
        "UPDATE probes SET next_run_at = CASE WHEN tenant_id = $1 THEN now() - interval '1 minute' \
                                          ELSE now() + interval '2 seconds' END",
    )
    .bind(slow.uuid())
    .execute(&mut owner)
    .await
    .unwrap();

    let settings = ProbeSettings {
        poll_interval_ms: 50,
        concurrency: 4,
        tenant_concurrency: 2,
        ..ProbeSettings::default()
    };
    let runner = Arc::new(
        ProbeRunner::new(
            database.service_database().await,
            settings,
            OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]),
        )
        .unwrap(),
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(runner.run(shutdown.clone()));
    let ran = wait_for_events(&db, other, &quick, 1, Duration::from_secs(20)).await;
    let mut slow_done = 0;
    for id in &slow_ids {
        slow_done += events_of(&db, slow, id).await.len();
    }
    shutdown.cancel();
    running.await.unwrap();
    assert_eq!(ran.len(), 1, "the other tenant's probe ran");
    assert_eq!(ran[0].status, Some(200));
    assert_eq!(
        slow_done, 0,
        "it ran while the slow tenant's first runs still waited on their target"
    );
    let mut slow_ran = 0;
    for id in &slow_ids {
        slow_ran += events_of(&db, slow, id).await.len();
    }
    assert_eq!(
        slow_ran, 2,
        "the slow tenant ran its share, no more, before shutdown"
    );
}
