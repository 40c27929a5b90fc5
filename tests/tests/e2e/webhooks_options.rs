//! Webhook endpoint options and upkeep (issue #14): custom headers sent
//! with every delivery, and attempts kept for
//! `webhooks.attempts_retention_days`, then deleted by housekeeping.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use serde_json::json;
use slaproof_app::webhooks::NewWebhookEndpoint;
use slaproof_app::{App, AppError, Caller, Principal};
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::{outbox, tenants};
use slaproof_tests::TestDatabase;
use slaproof_webhooks::{Deliverer, Settings};

type Seen = Arc<Mutex<Vec<HeaderMap>>>;

/// A receiver on 127.0.0.1 answering every request with `status`.
async fn receiver(status: Arc<AtomicU16>) -> String {
    receiver_seeing(status, Seen::default()).await
}

/// A receiver that also keeps the headers of every request.
async fn receiver_seeing(status: Arc<AtomicU16>, seen: Seen) -> String {
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: HeaderMap| {
            let (status, seen) = (status.clone(), seen.clone());
            async move {
                seen.lock().unwrap().push(headers);
                AxumStatus::from_u16(status.load(Ordering::SeqCst)).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/hook")
}

#[tokio::test]
async fn housekeeping_deletes_attempts_past_retention_and_the_finished_deliveries_they_leave() {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let loopback = || OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
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
    let status = Arc::new(AtomicU16::new(200));
    let url = receiver(status.clone()).await;
    app.create_webhook_endpoint(
        &admin,
        NewWebhookEndpoint {
            url,
            event_types: Some(vec!["*".into()]),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let key = app.webhook_key().await.unwrap();
    let deliverer = Deliverer::new(db.clone(), Settings::default(), key, loopback(), "w1").unwrap();
    let fact = |event_type: &'static str| {
        let db = db.clone();
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let id = outbox::enqueue(&mut tx, event_type, &json!({}))
                .await
                .unwrap();
            tx.commit().await.unwrap();
            id.uuid()
        }
    };

    // Delivered long ago, delivered just now, and still pending after a
    // failure long ago.
    let old = fact("sla.breached").await;
    let recent = fact("sla.recovered").await;
    deliverer.round().await.unwrap();
    deliverer.round().await.unwrap();
    status.store(500, Ordering::SeqCst);
    let pending = fact("sla.at_risk").await;
    deliverer.round().await.unwrap();
    deliverer.round().await.unwrap();
    let mut owner = database.owner_connection().await;
    let backdate = |message: uuid::Uuid| {
        sqlx::query(
            "WITH d AS (UPDATE webhook_deliveries SET delivered_at = delivered_at - interval '40 days' \
                        WHERE message_id = $1 RETURNING tenant_id, id) \
             UPDATE webhook_attempts a SET started_at = started_at - interval '40 days' \
             FROM d WHERE a.tenant_id = d.tenant_id AND a.delivery_id = d.id",
        )
        .bind(message)
    };
    backdate(old).execute(&mut owner).await.unwrap();
    backdate(pending).execute(&mut owner).await.unwrap();
    let counts = || {
        sqlx::query_as::<_, (uuid::Uuid, bool, i64)>(
            "SELECT d.message_id, d.delivered_at IS NOT NULL, \
                    (SELECT count(*) FROM webhook_attempts a \
                     WHERE a.tenant_id = d.tenant_id AND a.delivery_id = d.id) \
             FROM webhook_deliveries d",
        )
    };
    let rows = |rows: Vec<(uuid::Uuid, bool, i64)>| {
        rows.into_iter()
            .map(|(message, delivered, attempts)| (message, (delivered, attempts)))
            .collect::<BTreeMap<_, _>>()
    };
    let before = rows(counts().fetch_all(&mut owner).await.unwrap());
    assert_eq!(
        before,
        BTreeMap::from([(old, (true, 1)), (recent, (true, 1)), (pending, (false, 1))])
    );

    // As housekeeping does, under the service role.
    let done = slaproof_app::webhooks::expire_attempts(&db, 30)
        .await
        .unwrap();
    assert_eq!((done.attempts, done.deliveries), (2, 1));
    let after = rows(counts().fetch_all(&mut owner).await.unwrap());
    assert_eq!(
        after,
        BTreeMap::from([(recent, (true, 1)), (pending, (false, 0))]),
        "the recent attempt stays, the pending delivery stays without its old attempt"
    );
    // The attempt log still answers, with what is left.
    let endpoint = app.list_webhook_endpoints(&admin).await.unwrap()[0]
        .id
        .to_string();
    assert_eq!(
        app.webhook_attempts(&admin, &endpoint).await.unwrap().len(),
        1
    );
    // A second round finds nothing more.
    let again = slaproof_app::webhooks::expire_attempts(&db, 30)
        .await
        .unwrap();
    assert_eq!((again.attempts, again.deliveries), (0, 0));
}

/// A database, a tenant, the application layer (loopback allowed) and a
/// provider admin.
async fn world() -> (TestDatabase, slaproof_store::Database, App, Caller) {
    let database = TestDatabase::create().await;
    let db = database.service_database().await;
    let tenant = tenants::create(&db, "provider", "Provider")
        .await
        .unwrap()
        .id;
    let app = App::with_default_policy(db.clone())
        .await
        .unwrap()
        .with_outbound(OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]));
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
    (database, db, app, admin)
}

#[tokio::test]
async fn custom_headers_reach_the_receiver_and_their_values_are_never_answered() {
    let (_database, db, app, admin) = world().await;
    let seen = Seen::default();
    let url = receiver_seeing(Arc::new(AtomicU16::new(200)), seen.clone()).await;
    let with = |headers: &[(&str, &str)]| NewWebhookEndpoint {
        url: url.clone(),
        headers: Some(
            headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..Default::default()
    };

    // Refused, each naming the field and never echoing a value.
    let long = "v".repeat(1025);
    let eleven: Vec<(String, String)> = (0..11).map(|i| (format!("x-h{i}"), "v".into())).collect();
    let eleven: Vec<(&str, &str)> = eleven
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    for bad in [
        vec![("Webhook-Signature", "v1,forged")],
        vec![("content-type", "text/plain")],
        vec![("Host", "elsewhere")],
        vec![("transfer-encoding", "chunked")],
        vec![("bad name", "v")],
        vec![("x-token", "line\r\nbreak")],
        vec![("x-token", long.as_str())],
        eleven.clone(),
    ] {
        match app.create_webhook_endpoint(&admin, with(&bad)).await {
            Err(AppError::Invalid { field, message }) => {
                assert_eq!(field, "headers");
                assert!(
                    !message.contains("forged") && !message.contains("vvvv"),
                    "{message}"
                );
            }
            other => panic!("{bad:?} was not refused: {other:?}"),
        }
    }

    let made = app
        .create_webhook_endpoint(
            &admin,
            with(&[
                ("X-Gateway-Token", "s3cret-token"),
                ("Authorization", "Bearer abc"),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(
        made.endpoint.header_names,
        ["authorization", "x-gateway-token"]
    );
    let listed = format!("{:?}", app.list_webhook_endpoints(&admin).await.unwrap());
    assert!(!listed.contains("s3cret-token"), "{listed}");

    let mut tx = db.tenant_tx(admin.tenant()).await.unwrap();
    outbox::enqueue(&mut tx, "sla.breached", &json!({}))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let key = app.webhook_key().await.unwrap();
    let deliverer = Deliverer::new(
        db.clone(),
        Settings::default(),
        key,
        OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]),
        "w1",
    )
    .unwrap();
    for _ in 0..50 {
        deliverer.round().await.unwrap();
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["x-gateway-token"], "s3cret-token");
    assert_eq!(seen[0]["authorization"], "Bearer abc");
    // The signed headers are the platform's own.
    assert_eq!(seen[0]["content-type"], "application/json");
    assert!(seen[0].contains_key("webhook-signature"));
}

/// Sends one fact to the tenant's endpoints and answers the headers the
/// receiver saw, once it saw them.
async fn deliver_one(
    db: &slaproof_store::Database,
    app: &App,
    admin: &Caller,
    seen: &Seen,
) -> HeaderMap {
    seen.lock().unwrap().clear();
    let mut tx = db.tenant_tx(admin.tenant()).await.unwrap();
    outbox::enqueue(&mut tx, "sla.breached", &json!({}))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let deliverer = Deliverer::new(
        db.clone(),
        Settings::default(),
        app.webhook_key().await.unwrap(),
        OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]),
        "w1",
    )
    .unwrap();
    for _ in 0..50 {
        deliverer.round().await.unwrap();
        if let Some(headers) = seen.lock().unwrap().first() {
            return headers.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing was delivered");
}

/// Where the value `text` is found in the endpoint rows, read by the
/// database's owner: in the clear in any column (`headers` among them),
/// or as bytes in the sealed ones.
async fn stored_in_clear(database: &TestDatabase, text: &str) -> i64 {
    let mut owner = database.owner_connection().await;
    sqlx::query_scalar(
        "SELECT count(*) FROM webhook_endpoints e \
         WHERE row_to_json(e)::text LIKE '%' || $1 || '%' \
            OR position(convert_to($1, 'UTF8') IN coalesce(e.headers_sealed, ''::bytea)) > 0 \
            OR position(convert_to($1, 'UTF8') IN e.secret_sealed) > 0",
    )
    .bind(text)
    .fetch_one(&mut owner)
    .await
    .unwrap()
}

/// Issue #31, item 8: custom header values (a receiver's `Authorization`)
/// were stored in the clear in `webhook_endpoints.headers`, readable by
/// whoever reads the database or a backup. Reproduced first: the row held
/// `s3cret-token`. They are sealed now like the endpoint's secret; a row
/// from before is still delivered and `reseal` seals it.
#[tokio::test]
async fn custom_header_values_are_sealed_at_rest_and_a_reseal_seals_older_rows() {
    let (database, db, app, admin) = world().await;
    let seen = Seen::default();
    let url = receiver_seeing(Arc::new(AtomicU16::new(200)), seen.clone()).await;
    let made = app
        .create_webhook_endpoint(
            &admin,
            NewWebhookEndpoint {
                url,
                headers: Some(BTreeMap::from([(
                    "X-Gateway-Token".to_owned(),
                    "s3cret-token".to_owned(),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored_in_clear(&database, "s3cret-token").await, 0);
    assert_eq!(
        stored_in_clear(&database, "x-gateway-token").await,
        1,
        "the name is kept, for listing"
    );
    let got = deliver_one(&db, &app, &admin, &seen).await;
    assert_eq!(got["x-gateway-token"], "s3cret-token");

    // Changed: sealed again, the old value gone.
    let id = made.endpoint.id.to_string();
    app.update_webhook_endpoint(
        &admin,
        &id,
        slaproof_app::webhooks::WebhookEndpointChange {
            headers: Some(BTreeMap::from([(
                "authorization".to_owned(),
                "Bearer n3w".to_owned(),
            )])),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(stored_in_clear(&database, "Bearer n3w").await, 0);
    let got = deliver_one(&db, &app, &admin, &seen).await;
    assert_eq!(got["authorization"], "Bearer n3w");
    assert!(got.get("x-gateway-token").is_none());

    // A row as written before headers were sealed: still delivered, and
    // sealed by a reseal.
    let mut owner = database.owner_connection().await;
    sqlx::query(
        "UPDATE webhook_endpoints SET headers = '{\"authorization\": \"Bearer 0ld\"}', headers_sealed = NULL",
    )
    .execute(&mut owner)
    .await
    .unwrap();
    assert_eq!(stored_in_clear(&database, "Bearer 0ld").await, 1);
    let got = deliver_one(&db, &app, &admin, &seen).await;
    assert_eq!(got["authorization"], "Bearer 0ld");
    let resealed = app.reseal_webhook_secrets().await.unwrap();
    assert_eq!((resealed.endpoints, resealed.resealed), (1, 1));
    assert_eq!(stored_in_clear(&database, "Bearer 0ld").await, 0);
    let got = deliver_one(&db, &app, &admin, &seen).await;
    assert_eq!(got["authorization"], "Bearer 0ld");
    assert_eq!(
        app.reseal_webhook_secrets().await.unwrap().resealed,
        0,
        "nothing left to seal"
    );
}

/// Found by the webhook bench, which stores its endpoints through the store
/// with no headers: nothing sealed was stored as empty bytes, which do not
/// open, so every delivery to such an endpoint failed. No headers is NULL.
#[tokio::test]
async fn an_endpoint_stored_without_headers_is_delivered_to() {
    let (_database, db, app, admin) = world().await;
    let seen = Seen::default();
    let url = receiver_seeing(Arc::new(AtomicU16::new(200)), seen.clone()).await;
    let key = app.webhook_key().await.unwrap();
    let id = slaproof_domain::ids::WebhookEndpointId::new();
    let mut tx = db.tenant_tx(admin.tenant()).await.unwrap();
    slaproof_store::webhooks::create(
        &mut tx,
        &slaproof_store::webhooks::NewEndpoint {
            id,
            url,
            description: String::new(),
            event_types: vec!["*".to_owned()],
            enabled: true,
            secret_sealed: key.seal(
                admin.tenant(),
                id,
                &slaproof_app::webhooks::SigningSecret::generate(),
            ),
            headers: Default::default(),
            flow: Default::default(),
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let got = deliver_one(&db, &app, &admin, &seen).await;
    assert!(got.contains_key("webhook-signature"));
}
