//! The dashboard read at 32 concurrent clients, over REST and over GraphQL
//! in one run, rounds alternating so that a neighbour's load hits both:
//! dashboards per second, P50 and P99 latency of one dashboard load.
//!
//! The dashboard is the issue's: compliance and budget of each objective
//! of one SLA plus a day of one-minute points (good, total, ratio) each.
//! One tenant, the demo SLA (4 objectives) evaluated from real events,
//! then a day of minute rollups (1,440 per objective, as the evaluator
//! writes them) and chart sketches seeded under it and evaluated again.
//! With them come a day of latency, TTFT and TPOT percentiles.
//!
//! REST: `GET /v1/slas/{name}/dashboard`; GraphQL: `{ dashboard(sla:) { … } }`
//! for the same numbers. Both run the same service call. The whole
//! application is started on a fresh test database
//! (`SLAPROOF_TEST_DATABASE_URL`), the clients in the same process.
//!
//!     cargo run --release -p slaproof-tests --example api-bench -- [clients] [secs] [rounds]

use std::time::{Duration, Instant};

use chrono::Utc;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use slaproof_api::settings::{KeyAlgorithm, KeySettings};
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_store::{Database, customers, events, partitions, slas, tenants};
use slaproof_tests::spawn_app_with;

const RS_PRIVATE: &str = include_str!("../../services/api/fixtures/rs256-private.pem");
const RS_PUBLIC: &str = include_str!("../../services/api/fixtures/rs256-public.pem");
const DEMO_SLA: &str = include_str!("../../services/domain/fixtures/demo-sla.yaml");
const QUERY: &str = r#"{ dashboard(sla: "acme-enterprise") { objectives { objective family compliance { met compliancePpm budgetRemaining burnRateMilli } minutes { minute good total ratioPpm maintenance } } percentiles { minute latency { count p50Us p95Us p99Us } ttft { count p50Us p95Us p99Us } tpot { count p50Us p95Us p99Us } maintenance } } }"#;
/// Minutes of rollups seeded before now: the dashboard's default day.
const SEEDED_MINUTES: i32 = 24 * 60;

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
            operator: false,
            tenants: Vec::new(),
        }];
    })
    .await;
    // One tenant, the demo SLA, a minute of traffic and an evaluation, so
    // that every objective has numbers and the evaluator covers the SLA.
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
                customer: Some("acme-corp".into()),
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
    evaluate(&app.db, tenant).await;
    seed_a_day_of_minutes(&app.db, tenant).await?;

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

    // Both answer the whole day, alike, before anything is timed.
    let rest: Value = http
        .get(format!("{base}/v1/slas/acme-enterprise/dashboard"))
        .bearer_auth(&token)
        .send()
        .await?
        .json()
        .await?;
    let graphql: Value = http
        .post(format!("{base}/graphql"))
        .bearer_auth(&token)
        .json(&json!({ "query": QUERY }))
        .send()
        .await?
        .json()
        .await?;
    let points = |objectives: &Value| -> usize {
        objectives.as_array().map_or(0, |o| {
            o.iter()
                .map(|o| o["minutes"].as_array().map_or(0, Vec::len))
                .sum()
        })
    };
    let (rest_points, graphql_points) = (
        points(&rest["objectives"]),
        points(&graphql["data"]["dashboard"]["objectives"]),
    );
    let percentiles = |dashboard: &Value| dashboard["percentiles"].as_array().map_or(0, Vec::len);
    anyhow::ensure!(
        percentiles(&rest) >= SEEDED_MINUTES as usize - 3
            && percentiles(&rest) == percentiles(&graphql["data"]["dashboard"]),
        "REST answered {} percentile points, GraphQL {}",
        percentiles(&rest),
        percentiles(&graphql["data"]["dashboard"])
    );
    anyhow::ensure!(
        rest_points >= 4 * (SEEDED_MINUTES as usize - 3) && rest_points == graphql_points,
        "REST answered {rest_points} points, GraphQL {graphql_points}: {graphql}"
    );
    println!(
        "one dashboard: {rest_points} minute points; REST {} bytes, GraphQL {} bytes",
        serde_json::to_vec(&rest)?.len(),
        serde_json::to_vec(&graphql)?.len()
    );

    println!("{clients} clients, {secs} s per round, {rounds} rounds each, alternating");
    let mut totals = [
        (Api::Rest, Vec::new(), Vec::new()),
        (Api::Graphql, Vec::new(), Vec::new()),
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
                        Api::Rest => match http
                            .get(format!("{base}/v1/slas/acme-enterprise/dashboard"))
                            .bearer_auth(&token)
                            .send()
                            .await
                        {
                            Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                            Err(_) => false,
                        },
                        Api::Graphql => match http
                            .post(format!("{base}/graphql"))
                            .bearer_auth(&token)
                            .json(&json!({ "query": QUERY }))
                            .send()
                            .await
                        {
                            // Read as bytes like REST's answer, so the
                            // client's cost is alike; a GraphQL error
                            // shows as an `errors` member.
                            Ok(r) => {
                                r.status().is_success()
                                    && r.bytes()
                                        .await
                                        .is_ok_and(|b| !b.windows(9).any(|w| w == b"\"errors\":"))
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
        let rate = latencies.len() as f64 / elapsed.as_secs_f64();
        let slot = &mut totals[usize::from(api == Api::Graphql)];
        slot.1.push(rate);
        slot.2.extend(latencies.iter().copied());
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "round {round}: {api:?} {rate:.0} dashboards/s (load {})",
            load.split_whitespace().next().unwrap_or("?")
        );
    }
    println!("| api | dashboards/s (median of rounds) | P50 ms | P99 ms |");
    println!("|---|---|---|---|");
    let mut medians = Vec::new();
    for (api, mut rates, mut latencies) in totals {
        rates.sort_by(f64::total_cmp);
        latencies.sort();
        let median = rates[rates.len() / 2];
        medians.push(median);
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        println!(
            "| {api:?} | {median:.0} | {:.1} | {:.1} |",
            at(0.50).as_secs_f64() * 1000.0,
            at(0.99).as_secs_f64() * 1000.0
        );
    }
    println!(
        "GraphQL / REST throughput: {:.2}",
        medians[1] / medians[0].max(f64::MIN_POSITIVE)
    );
    app.stop().await?;
    Ok(())
}

/// Evaluates the tenant now; the application's own evaluator may hold the
/// tenant for a moment.
async fn evaluate(db: &Database, tenant: TenantId) {
    for attempt in 0.. {
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        match slaproof_evaluator::evaluate_tenant_up_to(
            &mut tx,
            &slaproof_evaluator::Settings::default(),
            Some(Utc::now() + chrono::Duration::minutes(2)),
        )
        .await
        {
            Ok(_) => {
                tx.commit().await.unwrap();
                return;
            }
            Err(e) if attempt < 100 => {
                let _ = e;
                tx.rollback().await.unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("evaluating: {e}"),
        }
    }
}

/// A day of minute rollups for every objective of the demo SLA, as the
/// evaluator writes them (minute rows and their hourly sums), then one
/// more evaluation so that the compliance numbers include them.
async fn seed_a_day_of_minutes(db: &Database, tenant: TenantId) -> anyhow::Result<()> {
    let mut tx = db.tenant_tx(tenant).await?;
    // Minutes already counted from the real events stay as they are.
    sqlx::query(
        "INSERT INTO evaluator_rollups (tenant_id, sla_id, version, objective, minute, good, total) \
         SELECT c.tenant_id, c.sla_id, c.version, o.objective, m.minute, \
                20 + extract(minute FROM m.minute)::int8 % 7 \
                  - CASE WHEN extract(epoch FROM m.minute)::int8 % 3000 = 0 THEN 3 ELSE 0 END, \
                20 + extract(minute FROM m.minute)::int8 % 7 \
         FROM evaluator_coverage c \
         CROSS JOIN unnest(ARRAY['availability', 'ttft-p95', 'latency-p99', 'minutes-available']) AS o(objective) \
         CROSS JOIN generate_series(date_trunc('minute', now()) - make_interval(mins => $1), \
                                    date_trunc('minute', now()) - interval '3 minutes', interval '1 minute') AS m(minute) \
         WHERE c.tenant_id = $2 \
         ON CONFLICT DO NOTHING",
    )
    .bind(SEEDED_MINUTES)
    .bind(tenant.uuid())
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO evaluator_rollups_hourly \
           (tenant_id, sla_id, version, objective, hour, good, total, late_folded, late_good, late_total) \
         SELECT tenant_id, sla_id, version, objective, date_trunc('hour', minute, 'UTC'), sum(good), sum(total), \
                sum(late_folded), sum(late_good), sum(late_total) \
         FROM evaluator_rollups WHERE tenant_id = $1 \
         GROUP BY tenant_id, sla_id, version, objective, date_trunc('hour', minute, 'UTC') \
         ON CONFLICT (tenant_id, sla_id, version, hour, objective) DO UPDATE \
         SET good = EXCLUDED.good, total = EXCLUDED.total, late_folded = EXCLUDED.late_folded, \
             late_good = EXCLUDED.late_good, late_total = EXCLUDED.late_total",
    )
    .bind(tenant.uuid())
    .execute(&mut *tx)
    .await?;
    // And the chart sketches of those minutes (one distribution of 25
    // events, the same for every minute: the read's cost is in decoding
    // and merging, not in the values).
    let mut minute = slaproof_domain::sketch::Sketches::default();
    for i in 0..25 {
        minute.add(&slaproof_domain::event::EventView {
            latency_us: Some(80_000 + i * 4_000),
            ttft_us: Some(20_000 + i * 1_000),
            tpot_us: Some(8_000 + i * 100),
            ..Default::default()
        });
    }
    let [latency, ttft, tpot] = minute.encode();
    sqlx::query(
        "INSERT INTO evaluator_sketches (tenant_id, sla_id, version, minute, latency, ttft, tpot) \
         SELECT c.tenant_id, c.sla_id, c.version, m.minute, $3, $4, $5 \
         FROM evaluator_coverage c \
         CROSS JOIN generate_series(date_trunc('minute', now()) - make_interval(mins => $1), \
                                    date_trunc('minute', now()) - interval '3 minutes', interval '1 minute') AS m(minute) \
         WHERE c.tenant_id = $2 \
         ON CONFLICT DO NOTHING",
    )
    .bind(SEEDED_MINUTES)
    .bind(tenant.uuid())
    .bind(latency)
    .bind(ttft)
    .bind(tpot)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    evaluate(db, tenant).await;
    Ok(())
}
