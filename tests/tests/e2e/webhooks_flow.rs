//! Webhook flow control end to end, against a real receiver on 127.0.0.1:
//! an endpoint's customer filter (facts the evaluator wrote about two
//! customers' SLAs), strict ordering across a retry, bounded concurrency
//! per endpoint across two workers, a rate limit, changing an endpoint, and
//! one tenant's hanging receivers leaving another tenant's webhooks be.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use chrono::Duration as Span;
use serde_json::{Value, json};
use slaproof_app::webhooks::{NewWebhookEndpoint, WebhookEndpointChange};
use slaproof_app::{App, AppError, Caller, Principal};
use slaproof_domain::sla::SlaDefinition;
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::{customers, outbox, slas, tenants};
use slaproof_tests::scenario::{Request, Scenario, at};
use slaproof_webhooks::{Deliverer, Settings};
use tokio_util::sync::CancellationToken;

const ACME: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: acme-sla
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
"#;

/// A receiver that answers 503 (`Retry-After: 1`) to its first `failing`
/// requests, then 200 after `delay`, and keeps the `webhook-id`s, arrival
/// instants and the most requests it held at once.
#[derive(Clone)]
struct Receiver {
    url: String,
    ids: Arc<Mutex<Vec<(String, Instant)>>>,
    peak: Arc<AtomicUsize>,
}

impl Receiver {
    async fn start(delay: Duration, failing: usize) -> Self {
        let ids = Arc::new(Mutex::new(Vec::new()));
        let peak = Arc::new(AtomicUsize::new(0));
        let (seen, most) = (ids.clone(), peak.clone());
        let holding = Arc::new(AtomicUsize::new(0));
        let app = axum::Router::new().route(
            "/hook",
            post(move |headers: HeaderMap| {
                let (seen, most, holding) = (seen.clone(), most.clone(), holding.clone());
                async move {
                    let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    holding.fetch_sub(1, Ordering::SeqCst);
                    let id = headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    let mut seen = seen.lock().unwrap();
                    seen.push((id, Instant::now()));
                    if seen.len() <= failing {
                        let mut answer = (StatusCode::SERVICE_UNAVAILABLE, "later").into_response();
                        answer
                            .headers_mut()
                            .insert("retry-after", HeaderValue::from_static("1"));
                        answer
                    } else {
                        (StatusCode::OK, "ok").into_response()
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, ids, peak }
    }

    fn ids(&self) -> Vec<String> {
        self.ids
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn arrivals(&self) -> Vec<Instant> {
        self.ids.lock().unwrap().iter().map(|(_, at)| *at).collect()
    }
}

fn loopback() -> OutboundPolicy {
    OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()])
}

struct Flow {
    scenario: Scenario,
    app: App,
    admin: Caller,
}

async fn flow() -> Flow {
    let scenario = Scenario::new(ACME, "2026-11-01", "2026-12-02").await;
    let (app, admin) = scenario.app().await;
    let app = app.with_outbound(loopback());
    Flow {
        scenario,
        app,
        admin,
    }
}

impl Flow {
    async fn endpoint(&self, new: NewWebhookEndpoint) -> Result<String, AppError> {
        Ok(self
            .app
            .create_webhook_endpoint(&self.admin, new)
            .await?
            .endpoint
            .id
            .to_string())
    }

    async fn deliverer(&self, settings: Settings, name: &str) -> Deliverer {
        let key = self.app.webhook_key().await.unwrap();
        Deliverer::new(self.scenario.db.clone(), settings, key, loopback(), name).unwrap()
    }

    async fn fact(&self, event_type: &str, payload: Value) -> String {
        let mut tx = self
            .scenario
            .db
            .tenant_tx(self.scenario.tenant)
            .await
            .unwrap();
        let id = outbox::enqueue(&mut tx, event_type, &payload)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        id.to_string()
    }

    /// The ids of every message of the tenant's outbox, in the order
    /// written, with its type and payload.
    async fn messages(&self) -> Vec<(String, String, Value)> {
        let mut tx = self
            .scenario
            .db
            .tenant_tx(self.scenario.tenant)
            .await
            .unwrap();
        let rows: Vec<(uuid::Uuid, String, Value)> =
            sqlx::query_as("SELECT id, event_type, payload FROM outbox ORDER BY seq")
                .fetch_all(&mut *tx)
                .await
                .unwrap();
        tx.commit().await.unwrap();
        rows.into_iter()
            .map(|(id, t, p)| {
                let id = slaproof_domain::ids::OutboxMessageId::from_uuid(id).to_string();
                (id, t, p)
            })
            .collect()
    }
}

/// Runs `deliverer`'s rounds until `receiver` has `count` requests.
async fn deliver_until(deliverer: &Deliverer, receiver: &Receiver, count: usize) {
    for _ in 0..400 {
        deliverer.round().await.unwrap();
        if receiver.ids().len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "the receiver got {} requests, not {count}",
        receiver.ids().len()
    );
}

#[tokio::test]
async fn an_endpoint_with_a_customer_receives_only_the_facts_about_that_customer() {
    let f = flow().await;
    // A second customer, with an SLA over the same service.
    let mut tx = f.scenario.db.tenant_tx(f.scenario.tenant).await.unwrap();
    customers::create(&mut tx, "beta-inc", "Beta Inc")
        .await
        .unwrap();
    let beta = ACME
        .replace("acme-sla", "beta-sla")
        .replace("acme-corp", "beta-inc");
    slas::apply(&mut tx, &SlaDefinition::from_document(&beta).unwrap())
        .await
        .unwrap();
    let acme_sla = slas::find(&mut tx, "acme-sla", None).await.unwrap();
    let acme = customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap();
    tx.commit().await.unwrap();

    let unknown = f
        .endpoint(NewWebhookEndpoint {
            url: "http://127.0.0.1:9/hook".into(),
            customer_ref: Some("nobody".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("customer_ref") && unknown.to_string().contains("nobody"),
        "{unknown}"
    );

    let receiver = Receiver::start(Duration::ZERO, 0).await;
    let all = Receiver::start(Duration::ZERO, 0).await;
    f.endpoint(NewWebhookEndpoint {
        url: receiver.url.clone(),
        customer_ref: Some("acme-corp".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    f.endpoint(NewWebhookEndpoint {
        url: all.url.clone(),
        ..Default::default()
    })
    .await
    .unwrap();

    // November with 1% of requests failing: both SLAs breached, told by
    // the evaluator for each customer's SLA.
    let start = at("2026-11-01T00:00:00Z");
    let requests: Vec<Request> = (0..1000)
        .map(|i| Request::at(start + Span::minutes(i * 40), i % 100 != 0))
        .collect();
    // Each customer's own requests, which its SLA is judged on.
    f.scenario.insert(&requests).await;
    f.scenario.insert_of(Some("beta-inc"), &requests).await;
    f.scenario.run("2026-12-01T01:00:00Z").await;
    // A customer's own alert line names the customer; a maintenance
    // window names its SLAs; a fact about no customer names neither.
    f.fact(
        "sla.threshold_crossed",
        json!({"customer": acme.id.to_string()}),
    )
    .await;
    f.fact(
        "maintenance.scheduled",
        json!({"window": "mw_x", "sla": null, "slas": [{"sla": acme_sla.id.to_string()}]}),
    )
    .await;
    f.fact("endpoint.disabled", json!({"endpoint": "ep_x"}))
        .await;

    let messages = f.messages().await;
    let slas_told: Vec<&str> = messages
        .iter()
        .filter_map(|(_, _, p)| p["slaName"].as_str())
        .collect();
    assert!(
        slas_told.contains(&"acme-sla") && slas_told.contains(&"beta-sla"),
        "the evaluator told of both SLAs: {slas_told:?}"
    );
    let about_acme: Vec<String> = messages
        .iter()
        .filter(|(_, t, p)| {
            p["slaName"] == "acme-sla"
                || t == "sla.threshold_crossed"
                || t == "maintenance.scheduled"
        })
        .map(|(id, _, _)| id.clone())
        .collect();

    let deliverer = f.deliverer(Settings::default(), "w1").await;
    deliver_until(&deliverer, &all, messages.len()).await;
    deliver_until(&deliverer, &receiver, about_acme.len()).await;
    let mut got = receiver.ids();
    got.sort();
    let mut want = about_acme.clone();
    want.sort();
    assert_eq!(got, want, "the filtered endpoint got exactly acme's facts");

    // A recovery honours the filter too.
    let id = f
        .app
        .list_webhook_endpoints(&f.admin)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.customer_ref.is_some())
        .unwrap()
        .id
        .to_string();
    let replay = f
        .app
        .recover_webhook_messages(&f.admin, &id, start)
        .await
        .unwrap();
    assert_eq!(replay.queued, about_acme.len() as u64);
}

#[tokio::test]
async fn an_ordered_endpoint_gets_one_message_at_a_time_in_the_order_written() {
    let f = flow().await;
    // The first attempt fails (503, retry after 1 s): the later messages
    // wait for it rather than overtake it.
    let receiver = Receiver::start(Duration::ZERO, 1).await;
    f.endpoint(NewWebhookEndpoint {
        url: receiver.url.clone(),
        ordered: Some(true),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut written = Vec::new();
    for i in 0..4 {
        written.push(f.fact("sla.breached", json!({"n": i})).await);
    }
    let settings = Settings {
        endpoint_concurrency: 8,
        ..Settings::default()
    };
    let (one, two) = (
        f.deliverer(settings.clone(), "w1").await,
        f.deliverer(settings, "w2").await,
    );
    for _ in 0..400 {
        let (a, b) = tokio::join!(one.round(), two.round());
        a.unwrap();
        b.unwrap();
        if receiver.ids().len() >= 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut want = vec![written[0].clone()];
    want.extend(written.iter().cloned());
    assert_eq!(
        receiver.ids(),
        want,
        "the retry of the first, then the rest in order"
    );
    assert_eq!(receiver.peak.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_endpoint_never_holds_more_deliveries_than_the_limit_across_workers() {
    let f = flow().await;
    let receiver = Receiver::start(Duration::from_millis(150), 0).await;
    f.endpoint(NewWebhookEndpoint {
        url: receiver.url.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..12 {
        f.fact("sla.breached", json!({"n": i})).await;
    }
    let settings = Settings {
        endpoint_concurrency: 3,
        ..Settings::default()
    };
    let (one, two) = (
        f.deliverer(settings.clone(), "w1").await,
        f.deliverer(settings, "w2").await,
    );
    let work = |d: Deliverer, r: Receiver| async move {
        for _ in 0..400 {
            d.round().await.unwrap();
            if r.ids().len() >= 12 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::join!(work(one, receiver.clone()), work(two, receiver.clone()));
    assert_eq!(receiver.ids().len(), 12, "every message delivered once");
    assert_eq!(
        receiver.peak.load(Ordering::SeqCst),
        3,
        "at most 3 in flight at once, and the workers used them"
    );
}

#[tokio::test]
async fn a_rate_limited_endpoint_gets_at_most_its_rate_per_second() {
    let f = flow().await;
    let receiver = Receiver::start(Duration::ZERO, 0).await;
    f.endpoint(NewWebhookEndpoint {
        url: receiver.url.clone(),
        rate_limit_per_sec: Some(3),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..9 {
        f.fact("sla.breached", json!({"n": i})).await;
    }
    let deliverer = f.deliverer(Settings::default(), "w1").await;
    deliver_until(&deliverer, &receiver, 9).await;
    let arrivals = receiver.arrivals();
    // Any four attempts span a window boundary: at least a second apart
    // (less a margin for when each request arrived after its claim).
    for four in arrivals.windows(4) {
        let span = four[3] - four[0];
        assert!(
            span >= Duration::from_millis(900),
            "4 attempts within {span:?}"
        );
    }
}

#[tokio::test]
async fn an_endpoint_changes_in_place_and_refuses_bad_settings_by_name() {
    let f = flow().await;
    let id = f
        .endpoint(NewWebhookEndpoint {
            url: "http://127.0.0.1:9/a".into(),
            customer_ref: Some("acme-corp".into()),
            rate_limit_per_sec: Some(5),
            ..Default::default()
        })
        .await
        .unwrap();
    let changed = f
        .app
        .update_webhook_endpoint(
            &f.admin,
            &id,
            WebhookEndpointChange {
                url: Some("http://127.0.0.1:9/b".into()),
                event_types: Some(vec!["sla.*".into()]),
                customer_ref: Some(None),
                ordered: Some(true),
                enabled: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.url, "http://127.0.0.1:9/b");
    assert_eq!(changed.event_types, vec!["sla.*".to_owned()]);
    assert_eq!(changed.customer_ref, None, "null clears the filter");
    assert_eq!(changed.rate_limit_per_sec, Some(5), "left out: kept");
    assert!(changed.ordered && !changed.enabled);
    assert!(changed.disabled_reason.is_some());

    for (change, field) in [
        (
            WebhookEndpointChange {
                rate_limit_per_sec: Some(Some(0)),
                ..Default::default()
            },
            "rate_limit_per_sec",
        ),
        (
            WebhookEndpointChange {
                event_types: Some(vec!["SLA".into()]),
                ..Default::default()
            },
            "event_types[0]",
        ),
        (
            WebhookEndpointChange {
                customer_ref: Some(Some("nobody".into())),
                ..Default::default()
            },
            "customer_ref",
        ),
        (
            WebhookEndpointChange {
                url: Some("http://10.0.0.1/hook".into()),
                ..Default::default()
            },
            "url",
        ),
    ] {
        let refused = f
            .app
            .update_webhook_endpoint(&f.admin, &id, change)
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, AppError::Invalid { field: f, .. } if f == field),
            "{field}: {refused:?}"
        );
    }
    let kept = f.app.get_webhook_endpoint(&f.admin, &id).await.unwrap();
    assert_eq!(kept, changed, "a refused change changes nothing");
}

#[tokio::test]
async fn a_new_webhook_key_opens_the_old_ones_secrets_and_a_reseal_lets_the_old_key_go() {
    use slaproof_app::webhooks::WebhookKey;
    let f = flow().await;
    let receiver = Receiver::start(Duration::ZERO, 0).await;
    let key = |b: u8| WebhookKey::from_bytes(&[b; 32]).unwrap();
    // One endpoint sealed under the platform-made key (no key configured),
    // one under the operator's first key A.
    f.endpoint(NewWebhookEndpoint {
        url: receiver.url.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    let under_a = f.app.clone().with_webhook_key(key(0xA));
    under_a
        .create_webhook_endpoint(
            &f.admin,
            NewWebhookEndpoint {
                url: receiver.url.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let deliver_with = async |app: &App, name: &str| {
        let key = app.webhook_key().await.unwrap();
        Deliverer::new(
            f.scenario.db.clone(),
            Settings::default(),
            key,
            loopback(),
            name,
        )
        .unwrap()
    };

    // Rotated to B, with A kept as a previous key: both endpoints deliver.
    let rotated = f
        .app
        .clone()
        .with_webhook_key(key(0xB).with_previous([key(0xA)]));
    f.fact("sla.breached", json!({"n": 1})).await;
    deliver_until(&deliver_with(&rotated, "w1").await, &receiver, 2).await;

    let done = rotated.reseal_webhook_secrets().await.unwrap();
    assert_eq!((done.endpoints, done.resealed, done.unopenable), (2, 2, 0));
    let again = rotated.reseal_webhook_secrets().await.unwrap();
    assert_eq!(again.resealed, 0, "a second re-seal has nothing to do");

    // B alone now opens both; a key that never sealed them opens neither.
    let b_alone = f.app.clone().with_webhook_key(key(0xB));
    f.fact("sla.breached", json!({"n": 2})).await;
    deliver_until(&deliver_with(&b_alone, "w2").await, &receiver, 4).await;
    let stranger = f.app.clone().with_webhook_key(key(0xC));
    let lost = stranger.reseal_webhook_secrets().await.unwrap();
    assert_eq!(lost.unopenable, 2, "{lost:?}");
}

#[tokio::test]
async fn facts_about_an_sla_moved_to_another_customer_go_to_the_customer_they_were_about() {
    // Found in review (hardening II, re-assigned SLAs): the customer filter
    // resolved a fact's SLA to the SLA's customer at fan-out, and a fact
    // naming a customer went to the SLA's current customer as well. After
    // acme-sla moved to beta-inc, beta-inc's endpoint got acme-corp's facts
    // (and a recovery would have replayed acme-corp's history to it).
    let f = flow().await;
    f.scenario.customers(&["beta-inc"]).await;
    let mut tx = f.scenario.db.tenant_tx(f.scenario.tenant).await.unwrap();
    let sla = slas::find(&mut tx, "acme-sla", None).await.unwrap().id;
    let acme = customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap()
        .id;
    tx.commit().await.unwrap();
    let (acme_hook, beta_hook, all) = (
        Receiver::start(Duration::ZERO, 0).await,
        Receiver::start(Duration::ZERO, 0).await,
        Receiver::start(Duration::ZERO, 0).await,
    );
    for (receiver, customer) in [
        (&acme_hook, Some("acme-corp")),
        (&beta_hook, Some("beta-inc")),
        (&all, None),
    ] {
        f.endpoint(NewWebhookEndpoint {
            url: receiver.url.clone(),
            customer_ref: customer.map(str::to_owned),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    // Two facts of version 1, acme-corp's: one names the SLA's version, one
    // (a credit) the customer too.
    let breach = f
        .fact(
            "sla.breached",
            json!({"sla": sla.to_string(), "version": 1}),
        )
        .await;
    let credit = f
        .fact(
            "credit.issued",
            json!({"sla": sla.to_string(), "version": 1, "customer": acme.to_string()}),
        )
        .await;
    // The provider moves the SLA to beta-inc before they are fanned out;
    // a fact of version 2 is beta-inc's.
    f.scenario
        .apply(&ACME.replace("customer: acme-corp", "customer: beta-inc"))
        .await;
    let after = f
        .fact(
            "sla.breached",
            json!({"sla": sla.to_string(), "version": 2}),
        )
        .await;

    let deliverer = f.deliverer(Settings::default(), "w1").await;
    deliver_until(&deliverer, &all, 3).await;
    for _ in 0..5 {
        deliverer.round().await.unwrap();
    }
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    assert_eq!(sorted(acme_hook.ids()), sorted(vec![breach, credit]));
    assert_eq!(beta_hook.ids(), [after]);
}

/// Issue #31, item 5: one tenant with slow receivers and a backlog filled
/// every slot of every worker, and another tenant's webhooks waited behind
/// it (a round claimed a batch and waited for all of it). The worker now
/// claims as slots free up, and acme may hold 2 of its 4 slots: globex's
/// fact goes out while acme's first deliveries still hang on their
/// receiver. With `tenant_concurrency` 4 (no share) this test fails: acme
/// holds all four slots and globex's delivery waits for the first of them
/// to answer.
#[tokio::test]
async fn a_tenant_whose_receivers_hang_does_not_hold_another_tenants_webhooks() {
    let f = flow().await;
    let hanging = Receiver::start(Duration::from_secs(5), 0).await;
    f.endpoint(NewWebhookEndpoint {
        url: hanging.url.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..30 {
        f.fact("sla.breached", json!({"n": i})).await;
    }
    let db = &f.scenario.db;
    let globex = tenants::create(db, "globex", "Globex").await.unwrap().id;
    let globex_admin = f
        .app
        .caller(Principal::provider_admin(globex))
        .await
        .unwrap();
    let quick = Receiver::start(Duration::ZERO, 0).await;
    f.app
        .create_webhook_endpoint(
            &globex_admin,
            NewWebhookEndpoint {
                url: quick.url.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let settings = Settings {
        concurrency: 4,
        tenant_concurrency: 2,
        poll_interval_ms: 50,
        ..Settings::default()
    };
    let deliverer = f.deliverer(settings, "w").await;
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn({
        let (deliverer, shutdown) = (deliverer.clone(), shutdown.clone());
        async move { deliverer.serve(&shutdown).await }
    });
    // Acme's receiver holds its share before globex has anything to say.
    for _ in 0..200 {
        if hanging.peak.load(Ordering::SeqCst) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut tx = db.tenant_tx(globex).await.unwrap();
    outbox::enqueue(&mut tx, "sla.breached", &json!({"who": "globex"}))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    for _ in 0..400 {
        if !quick.ids().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    shutdown.cancel();
    worker.await.unwrap();
    let sent = quick.arrivals();
    assert_eq!(sent.len(), 1, "globex's fact was delivered");
    let answered_before = hanging.arrivals().iter().filter(|a| **a < sent[0]).count();
    assert_eq!(
        answered_before, 0,
        "globex's webhook went out before any of acme's hanging deliveries was answered"
    );
    assert_eq!(
        hanging.peak.load(Ordering::SeqCst),
        2,
        "acme held its share of the slots, no more"
    );
    // On shutdown the worker recorded what it had in flight.
    let mut tx = db.tenant_tx(f.scenario.tenant).await.unwrap();
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_attempts")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        attempts as usize,
        hanging.ids().len(),
        "every request acme's receiver answered is recorded"
    );
}
