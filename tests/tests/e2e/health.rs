//! `/healthz` and `/readyz` over real HTTP against a real database.

use slaproof_tests::spawn_app;
use sqlx::Connection;

#[tokio::test]
async fn liveness_and_readiness_answer_when_the_database_does() {
    let app = spawn_app().await;

    let health = app.client.healthz().await;
    assert_eq!(health.status, 200);
    assert_eq!(health.body["status"], "ok");

    let ready = app.client.readyz().await;
    assert_eq!(ready.status, 200);
    assert_eq!(ready.body["checks"]["database"], "ok");

    app.stop().await.unwrap();
}

#[tokio::test]
async fn readiness_fails_with_a_problem_document_when_the_database_is_gone() {
    let app = spawn_app().await;
    assert_eq!(app.client.readyz().await.status, 200);

    // Take the database away under the running application: no new
    // connections, and the pooled ones are ended.
    let mut admin = sqlx::PgConnection::connect_with(&slaproof_tests::admin_options())
        .await
        .unwrap();
    let name = &app.database.name;
    sqlx::query(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(name)
        .execute(&mut admin)
        .await
        .unwrap();

    let ready = app.client.readyz().await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        ready.content_type.as_deref(),
        Some("application/problem+json")
    );
    assert_eq!(ready.body["status"], 503);
    assert_eq!(ready.body["title"], "Not ready");
    // Liveness does not depend on the database: restarting would not help.
    assert_eq!(app.client.healthz().await.status, 200);

    sqlx::query(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .execute(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        app.client.readyz().await.status,
        200,
        "ready again once the database is back"
    );
    app.stop().await.unwrap();
}

#[tokio::test]
async fn a_client_trickling_its_headers_is_cut_off() {
    // Found by reading the code (issue #11, item 6): axum::serve sets no
    // timer, so a connection that never finished its headers was held for
    // ever. Each request's headers must now arrive within
    // server.header_read_timeout_secs.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = slaproof_tests::spawn_app_with(|config| {
        config.server.header_read_timeout_secs = 1;
    })
    .await;
    let mut stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: slaproof\r\n")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut buffer = [0u8; 1024];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buffer))
        .await
        .expect("the server closes the connection instead of waiting for ever");
    // Closed (0 bytes, or a reset), without an answer to the half request.
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(900));

    // A whole request on a new connection is still answered.
    let mut stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: slaproof\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Sends `head` on a new connection and reads what comes back within
/// `wait` (`None`: nothing came).
async fn answer_within(
    address: std::net::SocketAddr,
    head: &[u8],
    wait: std::time::Duration,
) -> (tokio::net::TcpStream, Option<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(head).await.unwrap();
    let mut buffer = vec![0u8; 4096];
    let read = tokio::time::timeout(wait, stream.read(&mut buffer)).await;
    let text = match read {
        Ok(Ok(n)) => Some(String::from_utf8_lossy(&buffer[..n]).into_owned()),
        Ok(Err(err)) => Some(format!("error: {err}")),
        Err(_) => None,
    };
    (stream, text)
}

#[tokio::test]
async fn an_api_body_slower_than_the_timeout_is_answered_408_and_the_connection_freed() {
    // #31 item 7: the API read bodies with no deadline, so any token
    // holder (an embed token included) could hold a connection and a task
    // for as long as it liked by sending a body a byte at a time. Before
    // the fix this request was never answered.
    let app = slaproof_tests::spawn_app_with(|config| {
        slaproof_tests::fixtures::trust_test_key(config);
        config.api.body_read_timeout_secs = 1;
    })
    .await;
    let head = |token: &str| {
        format!(
            "POST /v1/slas HTTP/1.1\r\nHost: slaproof\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"document\":"
        )
    };
    // Without a valid token too: the body's deadline comes first.
    let (_, refused) = answer_within(
        app.address,
        head("not-a-token").as_bytes(),
        std::time::Duration::from_secs(5),
    )
    .await;
    assert!(
        refused
            .as_deref()
            .is_some_and(|a| a.starts_with("HTTP/1.1 408")),
        "{refused:?}"
    );
    // An authenticated one gets 408 once the second has passed.
    let tenant = slaproof_store::tenants::create(&app.db, "acme", "acme")
        .await
        .unwrap()
        .id;
    let head = head(&slaproof_tests::fixtures::token(
        tenant,
        &["provider_admin"],
        None,
    ));
    let started = std::time::Instant::now();
    let (_, answer) = answer_within(
        app.address,
        head.as_bytes(),
        std::time::Duration::from_secs(10),
    )
    .await;
    let answer = answer.expect("the server answers a body that never arrives");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert!(answer.contains("api.body_read_timeout_secs"), "{answer}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(900));
    app.stop().await.unwrap();
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_until_one_ends() {
    // #31 item 7: no connection cap, so a flood of idle connections each
    // held a task and a socket. With server.max_connections = 2, a third
    // connection is not served while two are open, and is served as soon
    // as one of them ends.
    let app = slaproof_tests::spawn_app_with(|config| {
        config.server.max_connections = 2;
        config.server.header_read_timeout_secs = 30;
    })
    .await;
    let wait = std::time::Duration::from_millis(1500);
    let (first, none) = answer_within(app.address, b"GET /healthz HTTP/1.1\r\n", wait).await;
    assert_eq!(none, None);
    let (_second, none) = answer_within(app.address, b"GET /healthz HTTP/1.1\r\n", wait).await;
    assert_eq!(none, None);
    let whole = b"GET /healthz HTTP/1.1\r\nHost: slaproof\r\nConnection: close\r\n\r\n";
    let (mut third, none) = answer_within(app.address, whole, wait).await;
    assert_eq!(
        none, None,
        "a third connection is not served while two are open"
    );
    drop(first);
    use tokio::io::AsyncReadExt;
    let mut answer = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        third.read_to_string(&mut answer),
    )
    .await
    .expect("served once a connection ended")
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn one_address_holds_at_most_its_share_of_connections() {
    // #31 item 7: the connection cap was per process, so one client
    // address could hold every slot with idle connections and leave
    // nothing to the others. With server.max_connections_per_address = 2,
    // a third connection from 127.0.0.1 is answered 503 at once, while
    // another address (127.0.0.2) is still served, and 127.0.0.1 is again
    // once one of its connections ends.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = slaproof_tests::spawn_app_with(|config| {
        config.server.max_connections = 10;
        config.server.max_connections_per_address = 2;
        config.server.header_read_timeout_secs = 30;
    })
    .await;
    let wait = std::time::Duration::from_millis(1500);
    let (first, none) = answer_within(app.address, b"GET /healthz HTTP/1.1\r\n", wait).await;
    assert_eq!(none, None);
    let (_second, none) = answer_within(app.address, b"GET /healthz HTTP/1.1\r\n", wait).await;
    assert_eq!(none, None);
    let whole = b"GET /healthz HTTP/1.1\r\nHost: slaproof\r\nConnection: close\r\n\r\n";
    let (_, refused) = answer_within(app.address, whole, wait).await;
    let refused = refused.expect("the third connection is answered at once");
    assert!(refused.starts_with("HTTP/1.1 503 "), "{refused}");
    assert!(
        refused.contains("server.max_connections_per_address"),
        "{refused}"
    );

    // Another address is not held up by the first one's connections.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(app.address).await.unwrap();
    other.write_all(whole).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        other.read_to_string(&mut answer),
    )
    .await
    .expect("another address is served")
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // Its share comes back when one of its connections ends.
    drop(first);
    let mut served = None;
    for _ in 0..50 {
        let (mut stream, answer) = answer_within(app.address, whole, wait).await;
        let mut answer = answer.unwrap_or_default();
        if answer.starts_with("HTTP/1.1 200") {
            let _ = stream.read_to_string(&mut answer).await;
            served = Some(answer);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        served.is_some(),
        "127.0.0.1 is served again once a connection ended"
    );
    app.stop().await.unwrap();
}
