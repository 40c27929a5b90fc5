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
