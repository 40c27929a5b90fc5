//! The dashboard read at 32 concurrent clients, over REST and over GraphQL
//! in one run, rounds alternating so that a neighbour's load hits both:
//! dashboards per second and P99 latency of one dashboard load.
//!
//! REST: `GET /v1/slas/{name}/compliance` then `GET …/budget-status`.
//! GraphQL: one query for the same numbers.
//!
//!     cargo run -p slaproof-tests --example api-bench -- [clients] [secs] [rounds]

use std::time::{Duration, Instant};

use chrono::Utc;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use slaproof_api::settings::{KeyAlgorithm, KeySettings};
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_store::{customers, events, partitions, slas, tenants};
use slaproof_tests::spawn_app_with;

const RS_PRIVATE: &str = include_str!("../../services/api/fixtures/rs256-private.pem");
const RS_PUBLIC: &str = include_str!("../../services/api/fixtures/rs256-public.pem");
const DEMO_SLA: &str = include_str!("../../services/domain/fixtures/demo-sla.yaml");
const QUERY: &str = r#"{ sla(name: "acme-enterprise") { name compliance { objective family met compliancePpm budgetRemaining burnRateMilli } } }"#;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    Rest,
    Graphql,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let clients: usize = args.first().map(|a| a.parse()).transpose()?.unwrap_or(32);
    let secs: u64 = args.get(1).map(|a| a.parse()).transpose()?.unwrap_or(5);
    let rounds: usize = args.get(2).map(|a| a.parse()).transpose()?.unwrap_or(3);

    let app = spawn_app_with(|config| {
        config.database.max_connections = 40;
        config.api.keys = vec![KeySettings {
            id: "bench".into(),
            algorithm: KeyAlgorithm::RS256,
            public_key_pem: Some(RS_PUBLIC.into()),
            secret: None,
        }];
    })
    .await;
    // One tenant, the demo SLA, a minute of traffic and an evaluation, so
    // that every objective has numbers.
    let tenant = tenants::create(&app.db, "bench", "Bench").await?.id;
    let today = Utc::now().date_naive();
    partitions::ensure(&app.db, today, today).await?;
    let mut tx = app.db.tenant_tx(tenant).await?;
    customers::create(&mut tx, "acme-corp", "Acme").await?;
    slas::apply(&mut tx, &SlaDefinition::from_document(DEMO_SLA)?).await?;
    for i in 0..200 {
        events::insert(
            &mut tx,
            &StoredEvent {
                id: Default::default(),
                occurred_at: Utc::now() - chrono::Duration::seconds(90),
                source: EventSource::Provider,
                service: "chat-completions".into(),
                model: Some("llama-3".into()),
                request_id: Some(format!("bench-{i}")),
                status: Some(if i % 50 == 0 { 503 } else { 200 }),
                error_class: None,
                latency_us: Some(100_000 + i * 1_000),
                ttft_us: Some(30_000),
                tpot_us: Some(9_000),
                input_tokens: Some(100),
                output_tokens: Some(20),
                streaming: Some(true),
                attributes: json!({}),
            },
        )
        .await?;
    }
    tx.commit().await?;
    // The application's own evaluator may hold the tenant for a moment.
    for attempt in 0.. {
        let mut tx = app.db.tenant_tx(tenant).await.unwrap();
        match slaproof_evaluator::evaluate_tenant_up_to(
            &mut tx,
            &slaproof_evaluator::Settings::default(),
            Some(chrono::Utc::now() + chrono::Duration::minutes(2)),
        )
        .await
        {
            Ok(_) => {
                tx.commit().await.unwrap();
                break;
            }
            Err(e) if attempt < 100 => {
                let _ = e;
                tx.rollback().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("evaluating: {e}"),
        }
    }

    let claims = json!({
        "sub": "bench", "iss": "slaproof", "aud": "slaproof-api",
        "exp": jsonwebtoken::get_current_timestamp() + 3600,
        "tenant": tenant.to_string(), "roles": ["provider_admin"],
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("bench".into());
    let token = jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(RS_PRIVATE.as_bytes())?,
    )?;
    let base = format!("http://{}", app.address);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()?;

    println!("{clients} clients, {secs} s per round, {rounds} rounds each, alternating");
    let mut totals = [
        (Api::Rest, 0usize, Vec::new()),
        (Api::Graphql, 0usize, Vec::new()),
    ];
    for round in 0..rounds * 2 {
        let api = if round % 2 == 0 {
            Api::Rest
        } else {
            Api::Graphql
        };
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let (http, base, token) = (http.clone(), base.clone(), token.clone());
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    let ok = match api {
                        Api::Rest => {
                            let a = http
                                .get(format!("{base}/v1/slas/acme-enterprise/compliance"))
                                .bearer_auth(&token)
                                .send()
                                .await;
                            let b = http
                                .get(format!("{base}/v1/slas/acme-enterprise/budget-status"))
                                .bearer_auth(&token)
                                .send()
                                .await;
                            match (a, b) {
                                (Ok(a), Ok(b)) => {
                                    a.status().is_success()
                                        && b.status().is_success()
                                        && a.bytes().await.is_ok()
                                        && b.bytes().await.is_ok()
                                }
                                _ => false,
                            }
                        }
                        Api::Graphql => match http
                            .post(format!("{base}/graphql"))
                            .bearer_auth(&token)
                            .json(&json!({ "query": QUERY }))
                            .send()
                            .await
                        {
                            Ok(r) => {
                                r.status().is_success()
                                    && r.json::<serde_json::Value>()
                                        .await
                                        .is_ok_and(|v| v["errors"].is_null())
                            }
                            Err(_) => false,
                        },
                    };
                    if !ok {
                        return Err(anyhow::anyhow!("{api:?} dashboard failed"));
                    }
                    latencies.push(started.elapsed());
                }
                Ok(latencies)
            }));
        }
        let started = Instant::now();
        let mut latencies = Vec::new();
        for task in tasks {
            latencies.extend(task.await??);
        }
        let elapsed = started.elapsed();
        let slot = &mut totals[usize::from(api == Api::Graphql)];
        slot.1 += latencies.len();
        slot.2.extend(latencies.iter().copied());
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "round {round}: {api:?} {:.0} dashboards/s (load {})",
            latencies.len() as f64 / elapsed.as_secs_f64(),
            load.split_whitespace().next().unwrap_or("?")
        );
    }
    println!("| api | dashboards/s | P50 ms | P99 ms |");
    println!("|---|---|---|---|");
    for (api, count, mut latencies) in totals {
        latencies.sort();
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        println!(
            "| {api:?} | {:.0} | {:.1} | {:.1} |",
            count as f64 / (secs * rounds as u64) as f64,
            at(0.50).as_secs_f64() * 1000.0,
            at(0.99).as_secs_f64() * 1000.0
        );
    }
    app.stop().await?;
    Ok(())
}
