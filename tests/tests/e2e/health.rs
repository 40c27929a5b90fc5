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
