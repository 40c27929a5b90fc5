//! Webhooks end to end: a real receiver on 127.0.0.1, facts written to the
//! outbox, delivered signed per Standard Webhooks and checked by the
//! specification's own Python library (`standardwebhooks`, installed by
//! `scripts/test` into target/schemathesis-venv), and by hand from the
//! specification. Retries keep the `webhook-id`, a 410 disables the
//! endpoint, private targets are refused, and two workers never send one
//! attempt twice.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode as AxumStatus};
use axum::response::IntoResponse;
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::Sha256;
use slaproof_app::webhooks::{NewWebhookEndpoint, WebhookKey};
use slaproof_app::{App, AppError, Caller, Principal};
use slaproof_domain::ids::TenantId;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::{Database, outbox, tenants};
use slaproof_tests::TestDatabase;
use slaproof_tests::fixtures::{self, trust_test_key};
use slaproof_webhooks::{Deliverer, Settings};

/// A scripted answer: the status and a `Retry-After`.
type Answer = (u16, Option<&'static str>);

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    id: String,
    timestamp: String,
    signature: String,
    body: Bytes,
}

/// A provider's webhook receiver on 127.0.0.1: answers each request with
/// the next scripted status (200 when the script is empty), after `delay`.
#[derive(Debug, Clone)]
struct Receiver {
    address: SocketAddr,
    seen: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
}

impl Receiver {
    async fn start(delay: Duration) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let (recorded, scripted) = (seen.clone(), script.clone());
        let app = axum::Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, body: Bytes| {
                let (recorded, scripted) = (recorded.clone(), scripted.clone());
                async move {
                    tokio::time::sleep(delay).await;
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned()
                    };
                    recorded.lock().unwrap().push(Received {
                        id: header("webhook-id"),
                        timestamp: header("webhook-timestamp"),
                        signature: header("webhook-signature"),
                        body,
                    });
                    let (status, retry_after) =
                        scripted.lock().unwrap().pop_front().unwrap_or((200, None));
                    let mut response =
                        (AxumStatus::from_u16(status).unwrap(), "received").into_response();
                    if let Some(after) = retry_after {
                        response
                            .headers_mut()
                            .insert("retry-after", HeaderValue::from_static(after));
                    }
                    response
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            address,
            seen,
            script,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/hook", self.address)
    }

    fn answer(&self, status: u16, retry_after: Option<&'static str>) {
        self.script.lock().unwrap().push_back((status, retry_after));
    }

    fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    async fn wait_for(&self, count: usize) -> Vec<Received> {
        for _ in 0..300 {
            if self.seen().len() >= count {
                return self.seen();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the receiver got {} requests, not {count}",
            self.seen().len()
        );
    }
}

fn loopback() -> OutboundPolicy {
    OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()])
}

/// A database, one tenant, the application layer (loopback allowed) and a
/// provider admin of the tenant.
struct World {
    database: TestDatabase,
    db: Database,
    app: App,
    tenant: TenantId,
    admin: Caller,
}

async fn world() -> World {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let app = App::with_default_policy(db.clone())
        .await
        .unwrap()
        .with_outbound(loopback());
    let admin = app
        .caller(Principal {
            subject: "admin@provider".into(),
            tenant,
            roles: vec!["provider_admin".into()],
            customer: None,
            embed: None,
        })
        .await
        .unwrap();
    World {
        database,
        db,
        app,
        tenant,
        admin,
    }
}

impl World {
    /// An endpoint for `types` at `url`; answers its id and secret.
    async fn endpoint(&self, url: &str, types: &[&str]) -> (String, String) {
        let made = self
            .app
            .create_webhook_endpoint(
                &self.admin,
                NewWebhookEndpoint {
                    url: url.to_owned(),
                    event_types: Some(types.iter().map(|t| (*t).to_owned()).collect()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        (made.endpoint.id.to_string(), made.secret)
    }

    async fn fact(&self, event_type: &str, payload: Value) -> String {
        let mut tx = self.db.tenant_tx(self.tenant).await.unwrap();
        let id = outbox::enqueue(&mut tx, event_type, &payload)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        id.to_string()
    }

    async fn deliverer(&self, name: &str, policy: OutboundPolicy, settings: Settings) -> Deliverer {
        let key = self.app.webhook_key().await.unwrap();
        Deliverer::new(self.db.clone(), settings, key, policy, name).unwrap()
    }

    /// Moves every pending delivery's next attempt to now (as the owner:
    /// the schedule's waits are checked, then skipped).
    async fn make_due(&self) {
        sqlx::query(
            "UPDATE webhook_deliveries SET next_attempt_at = now() WHERE delivered_at IS NULL",
        )
        .execute(&mut self.database.owner_connection().await)
        .await
        .unwrap();
    }

    /// (attempts, seconds until the next attempt, delivered, failed) of
    /// every delivery, by message.
    async fn deliveries(&self) -> BTreeMap<String, (i32, f64, bool, bool)> {
        let rows: Vec<(uuid::Uuid, i32, f64, bool, bool)> = sqlx::query_as(
            "SELECT message_id, attempts, extract(epoch FROM next_attempt_at - now())::float8, \
                    delivered_at IS NOT NULL, failed_at IS NOT NULL FROM webhook_deliveries",
        )
        .fetch_all(&mut self.database.owner_connection().await)
        .await
        .unwrap();
        rows.into_iter()
            .map(|(id, attempts, next, delivered, failed)| {
                (
                    slaproof_domain::ids::OutboxMessageId::from_uuid(id).to_string(),
                    (attempts, next, delivered, failed),
                )
            })
            .collect()
    }
}

/// The signature per the specification, computed here by hand: HMAC-SHA256
/// keyed with the base64-decoded part of `whsec_…` over `id.timestamp.body`.
fn verify_by_hand(secret: &str, received: &Received) -> bool {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).unwrap();
    mac.update(format!("{}.{}.", received.id, received.timestamp).as_bytes());
    mac.update(&received.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    received.signature.split(' ').any(|s| s == expected)
}

/// The Python interpreter with `standardwebhooks`, as `scripts/test`
/// installs it; `None` (the test says so loudly) when it is missing
/// outside CI.
fn standardwebhooks_python() -> Option<PathBuf> {
    let python = std::env::var_os("SLAPROOF_STANDARDWEBHOOKS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/schemathesis-venv/bin/python")
        });
    let works = Command::new(&python)
        .args(["-c", "import standardwebhooks"])
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        return Some(python);
    }
    let in_ci = slaproof_tests::chain::in_ci();
    assert!(
        !in_ci,
        "standardwebhooks is missing under CI: scripts/test installs it"
    );
    eprintln!(
        "\n\n!!! standardwebhooks (PyPI) is not installed in {}: the library check is SKIPPED, \
         only the check by hand runs; `scripts/test` installs it !!!\n\n",
        python.display()
    );
    None
}

/// What the official library says of a delivery: `Ok(type)` when it
/// verifies (the parsed body's type), `Err(reason)` when it refuses.
fn verify_with_library(
    python: &PathBuf,
    secret: &str,
    id: &str,
    timestamp: &str,
    signature: &str,
    body: &[u8],
) -> Result<String, String> {
    const SCRIPT: &str = r#"
import sys
from standardwebhooks.webhooks import Webhook
secret, msg_id, timestamp, signature = sys.argv[1:5]
body = sys.stdin.buffer.read()
try:
    parsed = Webhook(secret).verify(body, {
        "webhook-id": msg_id, "webhook-timestamp": timestamp, "webhook-signature": signature})
except Exception as e:
    print(type(e).__name__ + ": " + str(e))
    sys.exit(1)
print(parsed["type"])
"#;
    use std::io::Write;
    let mut child = Command::new(python)
        .args(["-c", SCRIPT, secret, id, timestamp, signature])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

#[tokio::test]
async fn deliveries_verify_with_the_standardwebhooks_library_through_the_running_platform() {
    let receiver = Receiver::start(Duration::ZERO).await;
    let app = slaproof_tests::spawn_app_with(|config| {
        trust_test_key(config);
        config.outbound = loopback();
        config.webhooks.poll_interval_ms = 50;
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let token = fixtures::token(tenant, &["provider_admin"], None);
    let http = reqwest::Client::new();
    let (status, made) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        "/v1/webhook-endpoints",
        Some(json!({"url": receiver.url(), "description": "incidents", "event_types": ["sla.*"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let endpoint = made["endpoint"]["id"].as_str().unwrap().to_owned();
    // The secret is shown once: never in a read.
    let (_, listed) = fixtures::call(
        &http,
        app.address,
        &token,
        "GET",
        "/v1/webhook-endpoints",
        None,
    )
    .await;
    assert_eq!(listed["data"][0]["id"], endpoint.as_str());
    assert!(!listed.to_string().contains(&secret[6..]));

    // A fact the filter takes and one it does not.
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let payload =
        json!({"sla": "sla_x", "period_start": "2026-11-01T00:00:00Z", "compliance_ppm": 998_000});
    let message = outbox::enqueue(&mut tx, "sla.breached", &payload)
        .await
        .unwrap();
    outbox::enqueue(&mut tx, "slo.at_risk", &json!({}))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let got = receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.seen().len(), 1, "slo.at_risk is not under sla.*");
    let delivery = &got[0];
    assert_eq!(delivery.id, message.to_string());
    let body: Value = serde_json::from_slice(&delivery.body).unwrap();
    assert_eq!(body["type"], "sla.breached");
    assert_eq!(body["data"], payload);
    assert!(DateTime::parse_from_rfc3339(body["timestamp"].as_str().unwrap()).is_ok());
    let sent_at: i64 = delivery.timestamp.parse().unwrap();
    assert!((Utc::now().timestamp() - sent_at).abs() < 60);
    assert!(delivery.signature.starts_with("v1,"));
    assert!(verify_by_hand(&secret, delivery));

    if let Some(python) = standardwebhooks_python() {
        let check = |id: &str, timestamp: &str, signature: &str, body: &[u8]| {
            verify_with_library(&python, &secret, id, timestamp, signature, body)
        };
        assert_eq!(
            check(
                &delivery.id,
                &delivery.timestamp,
                &delivery.signature,
                &delivery.body
            ),
            Ok("sla.breached".to_owned())
        );
        // A tampered body, another id, another secret's signature: refused.
        let mut tampered = delivery.body.to_vec();
        let at = tampered.iter().position(|b| *b == b'9').unwrap();
        tampered[at] = b'1';
        let refused = check(
            &delivery.id,
            &delivery.timestamp,
            &delivery.signature,
            &tampered,
        );
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("WebhookVerificationError")),
            "{refused:?}"
        );
        assert!(
            check(
                "msg_other",
                &delivery.timestamp,
                &delivery.signature,
                &delivery.body
            )
            .is_err()
        );
        // A stale timestamp, correctly signed, is refused for its age.
        let stale = (Utc::now().timestamp() - 600).to_string();
        let key = STANDARD.decode(&secret[6..]).unwrap();
        let resigned = slaproof_webhooks::signature::sign(
            &key,
            &delivery.id,
            stale.parse().unwrap(),
            &delivery.body,
        );
        let refused = check(&delivery.id, &stale, &resigned, &delivery.body);
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("too old")),
            "{refused:?}"
        );
    }
    // By hand too: a tampered body does not verify.
    let mut tampered = delivery.clone();
    tampered.body = Bytes::from(delivery.body.iter().rev().copied().collect::<Vec<u8>>());
    assert!(!verify_by_hand(&secret, &tampered));

    // The attempt is logged and readable over REST.
    let (status, attempts) = fixtures::call(
        &http,
        app.address,
        &token,
        "GET",
        &format!("/v1/webhook-endpoints/{endpoint}/attempts"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{attempts}");
    assert_eq!(attempts["data"][0]["message_id"], message.to_string());
    assert_eq!(attempts["data"][0]["status"], 200);
    assert_eq!(attempts["data"][0]["attempt"], 1);
    assert_eq!(attempts["data"][0]["response_excerpt"], "received");

    // Rotation answers a new secret; disabling and deleting work.
    let (status, rotated) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        &format!("/v1/webhook-endpoints/{endpoint}/rotate-secret"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_ne!(rotated["secret"], secret.as_str());
    let (_, disabled) = fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        &format!("/v1/webhook-endpoints/{endpoint}/disable"),
        None,
    )
    .await;
    assert_eq!(disabled["enabled"], false);
    let (status, _) = fixtures::call(
        &http,
        app.address,
        &token,
        "DELETE",
        &format!("/v1/webhook-endpoints/{endpoint}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = fixtures::call(
        &http,
        app.address,
        &token,
        "GET",
        &format!("/v1/webhook-endpoints/{endpoint}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A customer's user holds no webhook scope.
    let viewer = fixtures::token(tenant, &["operations_viewer"], None);
    let (status, problem) = fixtures::call(
        &http,
        app.address,
        &viewer,
        "GET",
        "/v1/webhook-endpoints",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(problem["scope"], "webhook:read");
    // GraphQL has every operation, over the same rules.
    let gql = async |query: &str, variables: Value| {
        let (status, body) = fixtures::call(
            &http,
            app.address,
            &token,
            "POST",
            "/graphql",
            Some(json!({"query": query, "variables": variables})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    };
    let created = gql(
        "mutation($input: WebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret endpoint { id url eventTypes enabled } } }",
        json!({"input": {"url": receiver.url(), "eventTypes": ["slo.*", "sla.breached"]}}),
    )
    .await;
    let made = &created["data"]["createWebhookEndpoint"];
    assert!(
        made["secret"].as_str().unwrap().starts_with("whsec_"),
        "{created}"
    );
    assert_eq!(
        made["endpoint"]["eventTypes"],
        json!(["sla.breached", "slo.*"])
    );
    let id = made["endpoint"]["id"].as_str().unwrap().to_owned();
    let refused = gql(
        "mutation($input: WebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret } }",
        json!({"input": {"url": "http://10.0.0.1/", "eventTypes": ["*"]}}),
    )
    .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "INVALID",
        "{refused}"
    );
    let listed = gql("{ webhookEndpoints { id enabled } }", json!({})).await;
    assert_eq!(
        listed["data"]["webhookEndpoints"][0]["id"],
        id.as_str(),
        "{listed}"
    );
    let disabled = gql(
        "mutation($id: String!) { setWebhookEndpointEnabled(id: $id, enabled: false) { enabled disabledReason } }",
        json!({"id": id}),
    )
    .await;
    assert_eq!(
        disabled["data"]["setWebhookEndpointEnabled"]["enabled"], false,
        "{disabled}"
    );
    let rotated = gql(
        "mutation($id: String!) { rotateWebhookSecret(id: $id) { secret } }",
        json!({"id": id}),
    )
    .await;
    assert_ne!(
        rotated["data"]["rotateWebhookSecret"]["secret"],
        made["secret"]
    );
    let attempts = gql(
        "query($id: String!) { webhookAttempts(endpointId: $id) { attempt status } webhookEndpoint(id: $id) { url } }",
        json!({"id": id}),
    )
    .await;
    assert_eq!(attempts["data"]["webhookAttempts"], json!([]), "{attempts}");
    let deleted = gql(
        "mutation($id: String!) { deleteWebhookEndpoint(id: $id) }",
        json!({"id": id}),
    )
    .await;
    assert_eq!(deleted["data"]["deleteWebhookEndpoint"], true, "{deleted}");
    app.stop().await.unwrap();
}

#[tokio::test]
async fn a_receiver_that_fails_then_recovers_gets_the_same_webhook_id_on_the_schedule() {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    let (_, secret) = world.endpoint(&receiver.url(), &["*"]).await;
    let message = world
        .fact("slo.burn_rate_alert", json!({"firing": true}))
        .await;
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;

    // Busy, come back in two minutes: Retry-After wins over the 5 s step.
    receiver.answer(503, Some("120"));
    deliverer.round().await.unwrap();
    let (attempts, next, delivered, _) = world.deliveries().await[&message];
    assert_eq!((attempts, delivered), (1, false));
    assert!((115.0..=125.0).contains(&next), "{next}");
    // Then a plain failure: the schedule's third step, 5 min ±10%.
    receiver.answer(500, None);
    world.make_due().await;
    deliverer.round().await.unwrap();
    let (attempts, next, delivered, _) = world.deliveries().await[&message];
    assert_eq!((attempts, delivered), (2, false));
    assert!((265.0..=335.0).contains(&next), "{next}");
    // Then it recovers.
    world.make_due().await;
    deliverer.round().await.unwrap();
    let (attempts, _, delivered, failed) = world.deliveries().await[&message];
    assert_eq!((attempts, delivered, failed), (3, true, false));

    let seen = receiver.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|r| r.id == message),
        "same webhook-id on every attempt"
    );
    assert!(seen.iter().all(|r| verify_by_hand(&secret, r)));
    let log = world
        .app
        .webhook_attempts(
            &world.admin,
            &world
                .app
                .list_webhook_endpoints(&world.admin)
                .await
                .unwrap()[0]
                .id
                .to_string(),
        )
        .await
        .unwrap();
    let statuses: Vec<Option<i32>> = log.iter().rev().map(|a| a.status).collect();
    assert_eq!(statuses, [Some(503), Some(500), Some(200)]);
    // Nothing more to send.
    assert_eq!(deliverer.round().await.unwrap(), 0);
}

#[tokio::test]
async fn a_410_disables_the_endpoint() {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    let (endpoint, _) = world.endpoint(&receiver.url(), &["sla.*"]).await;
    let message = world.fact("sla.period_closed", json!({})).await;
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;
    receiver.answer(410, None);
    deliverer.round().await.unwrap();
    let read = world
        .app
        .get_webhook_endpoint(&world.admin, &endpoint)
        .await
        .unwrap();
    assert!(!read.enabled);
    assert!(read.disabled_reason.unwrap().contains("410"));
    let (attempts, _, delivered, failed) = world.deliveries().await[&message];
    assert_eq!((attempts, delivered, failed), (1, false, true));
    // It is told as a fact, for the tenant's other endpoints.
    let told: Vec<Value> =
        sqlx::query_scalar("SELECT payload FROM outbox WHERE event_type = 'endpoint.disabled'")
            .fetch_all(&mut world.database.owner_connection().await)
            .await
            .unwrap();
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["endpoint"], endpoint.as_str());
    assert_eq!(told[0]["message"], message.as_str());
    // Later facts are not delivered to it.
    world.fact("sla.breached", json!({})).await;
    deliverer.round().await.unwrap();
    world.make_due().await;
    deliverer.round().await.unwrap();
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test]
async fn private_targets_are_refused_when_saved_and_when_connecting() {
    let world = world().await;
    let strict = world.app.clone().with_outbound(OutboundPolicy::strict());
    for url in [
        "http://127.0.0.1/hook",
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        // A name that resolves to loopback.
        "http://localhost:9/hook",
    ] {
        let refused = strict
            .create_webhook_endpoint(
                &world.admin,
                NewWebhookEndpoint {
                    url: url.to_owned(),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, AppError::Invalid { field, .. } if field == "url"),
            "{url}: {refused:?}"
        );
    }
    // Event-type filters are checked too.
    let bad = world
        .app
        .create_webhook_endpoint(
            &world.admin,
            NewWebhookEndpoint {
                url: "https://hooks.example.com/".into(),
                event_types: Some(vec!["sla.b*".into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&bad, AppError::Invalid { field, .. } if field == "event_types[0]"),
        "{bad:?}"
    );

    // Saved while loopback was allowed, refused by a worker whose policy
    // no longer allows it: at connect time, by its resolver, for a name.
    let receiver = Receiver::start(Duration::ZERO).await;
    let by_name = format!("http://localhost:{}/hook", receiver.address.port());
    world.endpoint(&by_name, &["*"]).await;
    world.endpoint(&receiver.url(), &["*"]).await;
    let message = world.fact("sla.breached", json!({})).await;
    let strict_worker = world
        .deliverer("strict", OutboundPolicy::strict(), Settings::default())
        .await;
    strict_worker.round().await.unwrap();
    assert!(receiver.seen().is_empty(), "nothing reached the receiver");
    let errors: Vec<Option<String>> = sqlx::query_scalar("SELECT error FROM webhook_attempts")
        .fetch_all(&mut world.database.owner_connection().await)
        .await
        .unwrap();
    assert_eq!(errors.len(), 2);
    let mut errors: Vec<String> = errors.into_iter().map(Option::unwrap).collect();
    errors.sort();
    // The host as the tenant named it, never the address a name resolved to.
    assert!(
        errors[0].starts_with("refused: 127.0.0.1 is or resolves to a loopback address"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("refused: localhost is or resolves to a loopback address"),
        "{errors:?}"
    );
    assert!(!errors[1].contains("127.0.0.1"), "{errors:?}");
    // Refusals are retried on the schedule (the operator may allow it).
    let (attempts, next, delivered, failed) =
        world.deliveries().await.into_values().next().unwrap();
    assert_eq!((attempts, delivered, failed), (1, false, false));
    assert!(next > 3.0, "{next}");
    let _ = message;
}

#[tokio::test]
async fn two_workers_never_send_one_attempt_twice() {
    const FACTS: usize = 40;
    let world = world().await;
    let receiver = Receiver::start(Duration::from_millis(20)).await;
    let (_, secret) = world.endpoint(&receiver.url(), &["*"]).await;
    let mut messages = Vec::new();
    for n in 0..FACTS {
        messages.push(world.fact("sla.threshold_crossed", json!({"n": n})).await);
    }
    let settings = Settings {
        batch: 4,
        concurrency: 4,
        ..Settings::default()
    };
    let one = world.deliverer("one", loopback(), settings.clone()).await;
    let two = world.deliverer("two", loopback(), settings).await;
    let work = |deliverer: Deliverer| async move {
        let mut idle = 0;
        while idle < 3 {
            if deliverer.round().await.unwrap() == 0 {
                idle += 1;
            } else {
                idle = 0;
            }
        }
    };
    tokio::join!(work(one), work(two));

    let seen = receiver.seen();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for received in &seen {
        *counts.entry(received.id.as_str()).or_default() += 1;
        assert!(verify_by_hand(&secret, received));
    }
    assert_eq!(counts.len(), FACTS, "every message delivered");
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    let deliveries = world.deliveries().await;
    assert!(
        deliveries.values().all(|d| d.0 == 1 && d.2),
        "{deliveries:?}"
    );
    // One attempt each, every one answered 200.
    let (attempts, good): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE status = 200 AND error IS NULL) FROM webhook_attempts",
    )
    .fetch_one(&mut world.database.owner_connection().await)
    .await
    .unwrap();
    assert_eq!((attempts, good), (FACTS as i64, FACTS as i64));
    for message in messages {
        assert_eq!(counts[message.as_str()], 1);
    }
}

#[tokio::test]
async fn a_worker_that_dies_mid_delivery_leaves_it_to_another() {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    world.endpoint(&receiver.url(), &["maintenance.*"]).await;
    let message = world.fact("maintenance.scheduled", json!({})).await;
    slaproof_webhooks::relay_outbox(&world.db, "dead", 10, Duration::from_secs(60))
        .await
        .unwrap();
    // Claimed, then the worker dies before sending: its lease runs out.
    let limits = slaproof_store::webhooks::ClaimLimits {
        batch: 10,
        per_endpoint: 8,
        per_tenant: 8,
    };
    let claimed =
        slaproof_store::webhooks::claim(&world.db, "dead", Duration::from_millis(500), limits)
            .await
            .unwrap();
    assert_eq!(claimed.len(), 1);
    let deliverer = world
        .deliverer("alive", loopback(), Settings::default())
        .await;
    assert_eq!(
        deliverer.deliver_due().await.unwrap(),
        0,
        "leased to the dead worker"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    deliverer.round().await.unwrap();
    let seen = receiver.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].id, message);
    let (attempts, _, delivered, _) = world.deliveries().await[&message];
    assert_eq!((attempts, delivered), (2, true));
    // The dead worker's late record does not overwrite the live one's.
    let mut tx = world.db.tenant_tx(world.tenant).await.unwrap();
    let late = slaproof_store::webhooks::record_attempts(
        &mut tx,
        "dead",
        &[slaproof_store::webhooks::AttemptRecord {
            delivery: claimed[0].id,
            attempt: 1,
            outcome: slaproof_store::webhooks::Attempt {
                started_at: Utc::now(),
                duration_ms: 1,
                status: Some(500),
                response_excerpt: None,
                error: None,
            },
            next: slaproof_store::webhooks::Next::Failed,
        }],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(late.is_empty());
    assert!(world.deliveries().await[&message].2);
}

#[tokio::test]
async fn a_sealed_secret_is_bound_to_the_key_the_operator_configured() {
    let world = world().await;
    let configured = WebhookKey::from_bytes(&[42; 32]).unwrap();
    let app = world.app.clone().with_webhook_key(configured.clone());
    let receiver = Receiver::start(Duration::ZERO).await;
    let made = app
        .create_webhook_endpoint(
            &world.admin,
            NewWebhookEndpoint {
                url: receiver.url(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Stored sealed: the secret's bytes are not in the row.
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT secret_sealed FROM webhook_endpoints")
        .fetch_one(&mut world.database.owner_connection().await)
        .await
        .unwrap();
    let clear = STANDARD.decode(&made.secret[6..]).unwrap();
    assert!(!sealed.windows(clear.len()).any(|w| w == clear.as_slice()));
    let message = world.fact("sla.no_data", json!({})).await;
    // A worker with another key cannot sign; one with the configured key can.
    let wrong = world
        .deliverer("wrong", loopback(), Settings::default())
        .await;
    wrong.round().await.unwrap();
    assert!(receiver.seen().is_empty());
    let right = Deliverer::new(
        world.db.clone(),
        Settings::default(),
        configured,
        loopback(),
        "right",
    )
    .unwrap();
    world.make_due().await;
    right.round().await.unwrap();
    let seen = receiver.wait_for(1).await;
    assert_eq!(seen[0].id, message);
    assert!(verify_by_hand(&made.secret, &seen[0]));
}

#[tokio::test]
async fn across_a_secret_rotation_deliveries_verify_with_the_old_and_the_new_secret() {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    let (endpoint, old) = world.endpoint(&receiver.url(), &["*"]).await;
    let rotated = world
        .app
        .rotate_webhook_secret(&world.admin, &endpoint)
        .await
        .unwrap();
    let new = rotated.secret;
    assert_ne!(new, old);
    let overlap = rotated.endpoint.previous_secret_expires_at.unwrap() - Utc::now();
    assert!(overlap > chrono::Duration::hours(23), "{overlap}");
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;
    world
        .fact("sla.period_closed", json!({"revision": 1}))
        .await;
    deliverer.round().await.unwrap();
    let during = receiver.wait_for(1).await.remove(0);
    assert_eq!(
        during.signature.split(' ').count(),
        2,
        "{}",
        during.signature
    );
    assert!(verify_by_hand(&new, &during) && verify_by_hand(&old, &during));

    // The overlap over: the new secret alone signs.
    sqlx::query(
        "UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second'",
    )
    .execute(&mut world.database.owner_connection().await)
    .await
    .unwrap();
    world
        .fact("sla.period_closed", json!({"revision": 2}))
        .await;
    deliverer.round().await.unwrap();
    let after = receiver.wait_for(2).await.remove(1);
    assert_eq!(after.signature.split(' ').count(), 1);
    assert!(verify_by_hand(&new, &after) && !verify_by_hand(&old, &after));

    if let Some(python) = standardwebhooks_python() {
        let library = |secret: &str, r: &Received| {
            verify_with_library(&python, secret, &r.id, &r.timestamp, &r.signature, &r.body)
        };
        assert_eq!(library(&old, &during), Ok("sla.period_closed".to_owned()));
        assert_eq!(library(&new, &during), Ok("sla.period_closed".to_owned()));
        assert_eq!(library(&new, &after), Ok("sla.period_closed".to_owned()));
        assert!(library(&old, &after).is_err());
    }
}

#[tokio::test]
async fn redirects_are_not_followed_and_answers_are_read_up_to_the_cap() {
    let world = world().await;
    let followed = Arc::new(Mutex::new(0usize));
    let counted = followed.clone();
    let app = axum::Router::new()
        .route(
            "/moved",
            post(|| async { (AxumStatus::FOUND, [("location", "/elsewhere")], "") }),
        )
        .route(
            "/elsewhere",
            post(move || {
                let counted = counted.clone();
                async move {
                    *counted.lock().unwrap() += 1;
                    "followed"
                }
            }),
        )
        .route("/chatty", post(|| async { "é".repeat(4 * 1024 * 1024) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    world
        .endpoint(&format!("http://{address}/moved"), &["*"])
        .await;
    world
        .endpoint(&format!("http://{address}/chatty"), &["*"])
        .await;
    world.fact("sla.breached", json!({})).await;
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;
    deliverer.round().await.unwrap();
    assert_eq!(
        *followed.lock().unwrap(),
        0,
        "the redirect was not followed"
    );
    let attempts: Vec<(Option<i32>, Option<String>)> =
        sqlx::query_as("SELECT status, response_excerpt FROM webhook_attempts ORDER BY status")
            .fetch_all(&mut world.database.owner_connection().await)
            .await
            .unwrap();
    assert_eq!(attempts.len(), 2);
    // The 4 MiB answer delivered it; a KiB of it is kept, cut at a character.
    assert_eq!(attempts[0].0, Some(200));
    let excerpt = attempts[0].1.as_deref().unwrap();
    assert!(excerpt.len() <= 1024 && excerpt.len() > 1000 && excerpt.chars().all(|c| c == 'é'));
    // The 302 is a failure, retried on the schedule.
    assert_eq!(attempts[1].0, Some(302));
    // (Both deliveries are of one message: read them by row.)
    let pending: Vec<(f64, bool)> = sqlx::query_as(
        "SELECT extract(epoch FROM next_attempt_at - now())::float8, failed_at IS NOT NULL \
         FROM webhook_deliveries WHERE delivered_at IS NULL",
    )
    .fetch_all(&mut world.database.owner_connection().await)
    .await
    .unwrap();
    assert_eq!(pending.len(), 1);
    assert!(pending[0].0 > 3.0 && !pending[0].1, "{pending:?}");
}

#[tokio::test]
async fn recovery_redelivers_what_a_dead_receiver_and_a_disabled_endpoint_missed_with_the_original_ids()
 {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    let (endpoint, secret) = world.endpoint(&receiver.url(), &["sla.*"]).await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    let first = world.fact("sla.breached", json!({"n": 1})).await;
    let second = world.fact("sla.recovered", json!({"n": 2})).await;
    world.fact("slo.at_risk", json!({})).await;
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;

    // The receiver is down through every attempt of the schedule.
    for _ in 0..16 {
        receiver.answer(500, None);
    }
    for _ in 0..8 {
        deliverer.round().await.unwrap();
        world.make_due().await;
    }
    let deliveries = world.deliveries().await;
    assert_eq!(deliveries.len(), 2, "slo.at_risk is not under sla.*");
    assert!(
        deliveries
            .values()
            .all(|&(n, _, ok, failed)| (n, ok, failed) == (8, false, true))
    );
    assert_eq!(receiver.seen().len(), 16);
    // Then the endpoint is disabled while a third fact is written: it gets
    // no delivery at all.
    world
        .app
        .set_webhook_endpoint_enabled(&world.admin, &endpoint, false)
        .await
        .unwrap();
    let third = world.fact("sla.at_risk", json!({"n": 3})).await;
    deliverer.round().await.unwrap();
    assert_eq!(world.deliveries().await.len(), 2);
    world
        .app
        .set_webhook_endpoint_enabled(&world.admin, &endpoint, true)
        .await
        .unwrap();

    // Recovery since before the first: each of the three once more.
    let replay = world
        .app
        .recover_webhook_messages(&world.admin, &endpoint, since)
        .await
        .unwrap();
    assert_eq!((replay.queued, replay.next_since), (3, None));
    // Asked twice while they are pending: nothing more is queued.
    let again = world
        .app
        .recover_webhook_messages(&world.admin, &endpoint, since)
        .await
        .unwrap();
    assert_eq!(again.queued, 0);
    deliverer.round().await.unwrap();
    let redelivered: Vec<Received> = receiver.seen()[16..].to_vec();
    let mut ids: Vec<&str> = redelivered.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = [first.as_str(), second.as_str(), third.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected, "the original webhook-ids, each once");
    assert!(redelivered.iter().all(|r| verify_by_hand(&secret, r)));
    assert_eq!(deliverer.round().await.unwrap(), 0, "nothing more to send");
    // A time after every message recovers nothing.
    let later = world
        .app
        .recover_webhook_messages(&world.admin, &endpoint, Utc::now())
        .await
        .unwrap();
    assert_eq!(later.queued, 0);
}

#[tokio::test]
async fn resend_delivers_one_message_again_with_its_webhook_id() {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    let (endpoint, _) = world.endpoint(&receiver.url(), &["sla.*"]).await;
    let message = world.fact("sla.breached", json!({})).await;
    let other = world.fact("slo.at_risk", json!({})).await;
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;
    deliverer.round().await.unwrap();
    assert_eq!(receiver.seen().len(), 1);

    let replay = world
        .app
        .resend_webhook_message(&world.admin, &endpoint, &message)
        .await
        .unwrap();
    assert_eq!(replay.queued, 1);
    deliverer.round().await.unwrap();
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].id.as_str(), seen[1].id.as_str()),
        (message.as_str(), message.as_str())
    );
    // A type the filter does not take, a message that is not there.
    let refused = world
        .app
        .resend_webhook_message(&world.admin, &endpoint, &other)
        .await
        .unwrap_err();
    assert!(matches!(refused, AppError::Invalid { .. }), "{refused:?}");
    let missing = world
        .app
        .resend_webhook_message(
            &world.admin,
            &endpoint,
            "msg_0192f0c1a2b37c8d9e0f112233445566",
        )
        .await
        .unwrap_err();
    assert!(matches!(missing, AppError::NotFound { .. }), "{missing:?}");
}

#[tokio::test]
async fn resend_and_recover_through_the_api() {
    let receiver = Receiver::start(Duration::ZERO).await;
    let app = slaproof_tests::spawn_app_with(|config| {
        trust_test_key(config);
        config.outbound = loopback();
        config.webhooks.poll_interval_ms = 50;
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let token = fixtures::token(tenant, &["provider_admin"], None);
    let http = reqwest::Client::new();
    let call = |method: &'static str, path: String, body: Option<Value>| {
        let (http, token) = (http.clone(), token.clone());
        async move { fixtures::call(&http, app.address, &token, method, &path, body).await }
    };
    let (status, made) = call(
        "POST",
        "/v1/webhook-endpoints".into(),
        Some(json!({"url": receiver.url()})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let endpoint = made["endpoint"]["id"].as_str().unwrap().to_owned();
    let since = Utc::now() - chrono::Duration::seconds(1);
    let mut tx = app.db.tenant_tx(tenant).await.unwrap();
    let message = outbox::enqueue(&mut tx, "sla.breached", &json!({}))
        .await
        .unwrap()
        .to_string();
    tx.commit().await.unwrap();
    receiver.wait_for(1).await;

    let (status, queued) = call(
        "POST",
        format!("/v1/webhook-endpoints/{endpoint}/messages/{message}/resend"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    assert_eq!(queued["queued"], 1);
    assert_eq!(receiver.wait_for(2).await[1].id, message);

    let (status, queued) = call(
        "POST",
        format!("/v1/webhook-endpoints/{endpoint}/recover"),
        Some(json!({"since": since.to_rfc3339()})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    assert_eq!(queued["queued"], 1);
    assert_eq!(receiver.wait_for(3).await[2].id, message);

    // The same over GraphQL, and a test-send.
    let graphql = |query: String| call("POST", "/graphql".into(), Some(json!({"query": query})));
    let (_, answer) = graphql(format!(
        r#"mutation {{ resendWebhookMessage(endpointId: "{endpoint}", messageId: "{message}") {{ queued }} }}"#
    ))
    .await;
    assert_eq!(
        answer["data"]["resendWebhookMessage"]["queued"], 1,
        "{answer}"
    );
    assert_eq!(receiver.wait_for(4).await[3].id, message);
    let (_, answer) = graphql(format!(
        r#"mutation {{ recoverWebhookMessages(endpointId: "{endpoint}", since: "{}") {{ queued nextSince }} }}"#,
        since.to_rfc3339()
    ))
    .await;
    assert_eq!(
        answer["data"]["recoverWebhookMessages"]["queued"], 1,
        "{answer}"
    );
    assert_eq!(receiver.wait_for(5).await[4].id, message);
    let (_, answer) = graphql(format!(
        r#"mutation {{ testWebhookEndpoint(id: "{endpoint}") {{ messageId delivered attempt {{ status eventType }} }} }}"#
    ))
    .await;
    let sent = &answer["data"]["testWebhookEndpoint"];
    assert_eq!(sent["delivered"], true, "{answer}");
    assert_eq!(sent["attempt"]["eventType"], "webhook.test");
    assert_eq!(
        receiver.wait_for(6).await[5].id,
        sent["messageId"].as_str().unwrap()
    );

    let (status, _) = call(
        "POST",
        format!("/v1/webhook-endpoints/{endpoint}/recover"),
        Some(json!({"since": "yesterday"})),
    )
    .await;
    assert!(status.is_client_error(), "{status}");
    let (status, _) = call(
        "POST",
        format!(
            "/v1/webhook-endpoints/{endpoint}/messages/msg_0192f0c1a2b37c8d9e0f112233445566/resend"
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A reader may not replay.
    let reader = fixtures::token(tenant, &["operations_viewer"], None);
    let (status, _) = fixtures::call(
        &http,
        app.address,
        &reader,
        "POST",
        format!("/v1/webhook-endpoints/{endpoint}/recover").as_str(),
        Some(json!({"since": since.to_rfc3339()})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_test_send_goes_through_the_worker_and_answers_the_attempt() {
    let receiver = Receiver::start(Duration::ZERO).await;
    let bystander = Receiver::start(Duration::ZERO).await;
    let app = slaproof_tests::spawn_app_with(|config| {
        trust_test_key(config);
        config.outbound = loopback();
        config.webhooks.poll_interval_ms = 50;
    })
    .await;
    let tenant = tenants::create(&app.db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let token = fixtures::token(tenant, &["provider_admin"], None);
    let http = reqwest::Client::new();
    let create = |url: String| {
        let (http, token) = (http.clone(), token.clone());
        async move {
            let (status, made) = fixtures::call(
                &http,
                app.address,
                &token,
                "POST",
                "/v1/webhook-endpoints",
                Some(json!({"url": url, "event_types": ["sla.breached"]})),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{made}");
            (
                made["endpoint"]["id"].as_str().unwrap().to_owned(),
                made["secret"].as_str().unwrap().to_owned(),
            )
        }
    };
    let (endpoint, secret) = create(receiver.url()).await;
    create(bystander.url()).await;
    let path = format!("/v1/webhook-endpoints/{endpoint}/test");

    // Sent whatever the filter, signed like any delivery, only to it.
    let (status, sent) = fixtures::call(&http, app.address, &token, "POST", &path, None).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["delivered"], true, "{sent}");
    assert_eq!(sent["attempt"]["status"], 200);
    assert_eq!(sent["attempt"]["event_type"], "webhook.test");
    let got = receiver.seen();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, sent["message_id"].as_str().unwrap());
    assert!(verify_by_hand(&secret, &got[0]));
    let body: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["type"], "webhook.test");
    assert_eq!(body["data"]["endpoint"], endpoint.as_str());

    // A failing receiver: the answer says so, and the log keeps it.
    receiver.answer(500, None);
    let (status, sent) = fixtures::call(&http, app.address, &token, "POST", &path, None).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["delivered"], false);
    assert_eq!(sent["attempt"]["status"], 500);
    let (_, log) = fixtures::call(
        &http,
        app.address,
        &token,
        "GET",
        &format!("/v1/webhook-endpoints/{endpoint}/attempts"),
        None,
    )
    .await;
    let statuses: Vec<&Value> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["status"])
        .collect();
    assert_eq!(statuses, [&json!(500), &json!(200)]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        bystander.seen().is_empty(),
        "a test goes to its endpoint only"
    );

    // Not to a disabled endpoint.
    fixtures::call(
        &http,
        app.address,
        &token,
        "POST",
        &format!("/v1/webhook-endpoints/{endpoint}/disable"),
        None,
    )
    .await;
    let (status, _) = fixtures::call(&http, app.address, &token, "POST", &path, None).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_endpoint_failing_for_longer_than_the_setting_is_disabled_and_told_of() {
    let world = world().await;
    let receiver = Receiver::start(Duration::ZERO).await;
    let (endpoint, _) = world.endpoint(&receiver.url(), &["sla.*"]).await;
    let settings = Settings {
        disable_after_failing_secs: 1,
        ..Settings::default()
    };
    let deliverer = world.deliverer("w1", loopback(), settings).await;
    let enabled = async || {
        world
            .app
            .get_webhook_endpoint(&world.admin, &endpoint)
            .await
            .unwrap()
    };

    // A failure, then a success more than the setting later: the run of
    // failures ends, the endpoint stays.
    world.fact("sla.breached", json!({"n": 1})).await;
    receiver.answer(500, None);
    deliverer.round().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    world.make_due().await;
    deliverer.round().await.unwrap();
    assert!(enabled().await.enabled);

    // Failures only, the first more than the setting before the last.
    let message = world.fact("sla.breached", json!({"n": 2})).await;
    receiver.answer(500, None);
    receiver.answer(503, None);
    deliverer.round().await.unwrap();
    assert!(enabled().await.enabled, "failing for less than the setting");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    world.make_due().await;
    deliverer.round().await.unwrap();
    let read = enabled().await;
    assert!(!read.enabled);
    assert!(
        read.disabled_reason
            .as_deref()
            .unwrap()
            .starts_with("every attempt failed since"),
        "{read:?}"
    );
    let told: Vec<Value> =
        sqlx::query_scalar("SELECT payload FROM outbox WHERE event_type = 'endpoint.disabled'")
            .fetch_all(&mut world.database.owner_connection().await)
            .await
            .unwrap();
    assert_eq!(told.len(), 1, "told once");
    assert_eq!(told[0]["reason"], "failing");
    assert_eq!(told[0]["endpoint"], endpoint.as_str());
    assert_eq!(told[0]["message"], message.as_str());
    assert!(told[0]["failing_since"].is_string());
    // Enabled again, it starts afresh: one failure does not disable it.
    world
        .app
        .set_webhook_endpoint_enabled(&world.admin, &endpoint, true)
        .await
        .unwrap();
    receiver.answer(500, None);
    world.make_due().await;
    deliverer.round().await.unwrap();
    assert!(enabled().await.enabled);
    assert_eq!(receiver.seen().len(), 5);
}

#[tokio::test]
async fn a_secret_in_an_endpoints_url_never_reaches_the_attempt_error_or_the_logs() {
    // #31 item 8: a failed request's error was reqwest's text, which names
    // the whole URL ("error sending request for url (…?token=…)"); it was
    // stored as the attempt's error and logged with it.
    let world = world().await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{closed}/hook?token=s3cr3t-in-the-url");
    world.endpoint(&url, &["sla.*"]).await;
    world.fact("sla.period_closed", json!({})).await;
    let deliverer = world.deliverer("w1", loopback(), Settings::default()).await;
    deliverer.round().await.unwrap();
    let errors: Vec<Option<String>> = sqlx::query_scalar("SELECT error FROM webhook_attempts")
        .fetch_all(&mut world.database.owner_connection().await)
        .await
        .unwrap();
    assert_eq!(errors.len(), 1);
    let error = errors[0].clone().unwrap();
    assert!(error.starts_with("request failed"), "{error}");
    assert!(
        !error.contains("s3cr3t") && !error.contains("token="),
        "{error}"
    );
}
