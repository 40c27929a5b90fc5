//! The auditor's recount agrees with the evaluator: on generated traffic
//! (failures with and without an answer, a model filter, latencies either
//! side of the threshold, events arriving on time, late, after the close
//! and after the watermark) with a maintenance window that cuts minutes
//! and slices without data judged bad, every daily measurement the
//! evaluator records — from its rollups — is what
//! `transparency::recount` makes of the same days' logged leaves, day by
//! day and objective by objective.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use slaproof_app::transparency::TransparencySettings;
use slaproof_domain::ids::SlaId;
use slaproof_domain::transparency::Leaf;
use slaproof_domain::transparency::recount::{DayRules, recount_day};
use slaproof_domain::window::Period;
use slaproof_store::{maintenance, slas};
use slaproof_tests::scenario::{Scenario, at, settings};

const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: recounted
spec:
  service: chat
  window: {calendar: month, timeZone: Europe/Berlin}
  policy:
    noData: {after: 30m, slices: bad}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {bad: status >= 500}
  - name: big-model
    target: 99%
    ratio: {good: status < 500, total: model == "big"}
  - name: latency
    target: 99%
    threshold: {field: latency, op: lte, value: 800ms}
  - name: good-hours
    target: 99%
    timeSlices:
      sliceLength: 1h
      budgeting: Timeslices
      sliceTarget: 90%
      ratio: {good: status < 500}
  - name: mean-hours
    target: 99%
    timeSlices:
      sliceLength: 30m
      budgeting: RatioTimeslices
      ratio: {good: status < 500}
"#;

/// A small deterministic generator: the cases are reproducible by seed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// One generated request: occurred, received, status (none with an error
/// class: no answer), latency, model.
type Generated = (
    DateTime<Utc>,
    DateTime<Utc>,
    Option<i32>,
    Option<i64>,
    &'static str,
);

fn traffic(seed: u64, count: usize) -> Vec<Generated> {
    let mut r = Lcg(seed);
    let from = at("2026-11-09T20:00:00Z");
    (0..count)
        .map(|_| {
            // Three days and a half, in bursts: some hours stay empty.
            let hour = r.next(84) as i64;
            let occurred = from + Duration::hours(hour) + Duration::seconds(r.next(3_600) as i64);
            let received = match r.next(20) {
                // Late within the period, late past its close, past the
                // watermark the days are measured at.
                0..=1 => occurred + Duration::hours(1 + r.next(200) as i64),
                2 => at("2026-12-01T00:00:00Z") + Duration::minutes(r.next(55) as i64),
                3 => at("2026-12-01T01:00:00Z") + Duration::minutes(r.next(30) as i64),
                _ => occurred + Duration::seconds(r.next(90) as i64),
            };
            let status = match r.next(10) {
                0 => Some(503),
                1 => None,
                2 => Some(429),
                _ => Some(200),
            };
            let latency = (r.next(8) != 0).then(|| r.next(1_600_000) as i64);
            let model = if r.next(3) == 0 { "big" } else { "small" };
            (occurred, received, status, latency, model)
        })
        .collect()
}

async fn insert(s: &Scenario, events: &[Generated]) {
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    for (occurred, received, status, latency, model) in events {
        sqlx::query(
            "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, \
                 status, error_class, latency_us) \
             VALUES ($1, $2, $3, $4, 'provider', 'chat', $5, $6, $7, $8)",
        )
        .bind(s.tenant.uuid())
        .bind(occurred)
        .bind(uuid::Uuid::now_v7())
        .bind(received)
        .bind(model)
        .bind(status)
        .bind(status.is_none().then_some("timeout"))
        .bind(latency)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

/// Each stored measurement (latest revision): objective, day, good, bad,
/// counted_to.
type Row = (
    String,
    DateTime<Utc>,
    DateTime<Utc>,
    i64,
    i64,
    DateTime<Utc>,
);

#[tokio::test]
async fn every_daily_measurement_is_what_the_log_recounts() {
    for seed in [1u64, 7, 42] {
        // Tracked from the Berlin month's start, so November is whole.
        let s = Scenario::new(SLA, "2026-10-31", "2026-12-02").await;
        s.run("2026-10-31T23:00:00Z").await;
        // An agreed window cutting minutes at both ends; another over a
        // whole evening's hours.
        let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
        let sla = slas::find(&mut tx, "recounted", None).await.unwrap().id;
        for (start, end) in [
            ("2026-11-10T10:00:30Z", "2026-11-10T11:37:15Z"),
            ("2026-11-11T18:00:00Z", "2026-11-11T21:00:00Z"),
        ] {
            slaproof_tests::maintenance::agreed(&mut tx, sla, at(start), at(end), "upgrade")
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        let events = traffic(seed, 900);
        insert(&s, &events).await;
        s.run("2026-12-01T01:00:00Z").await;

        let (app, admin) = s.app().await;
        let built = app
            .build_transparency_logs(
                &TransparencySettings {
                    lookback_days: 40,
                    ..TransparencySettings::default()
                },
                at("2026-12-01T03:00:00Z"),
            )
            .await
            .unwrap();
        assert!(!built.is_empty());
        let mut leaves: Vec<Leaf> = Vec::new();
        let first: NaiveDate = "2026-11-01".parse().unwrap();
        for day in first.iter_days().take(31) {
            match app.export_log_day(&admin, day).await {
                Ok(export) => leaves.extend(
                    export
                        .leaves
                        .iter()
                        .flatten()
                        .map(|b| Leaf::parse(b.as_bytes()).unwrap()),
                ),
                Err(slaproof_app::AppError::NotFound { .. }) => {}
                Err(err) => panic!("{err}"),
            }
        }
        // Every event received before the build is logged.
        let logged = events
            .iter()
            .filter(|e| e.1 < at("2026-12-01T02:00:00Z"))
            .count();
        assert_eq!(leaves.len(), logged, "seed {seed}");

        let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
        let sla: uuid::Uuid = sqlx::query_scalar("SELECT id FROM slas")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        let sla = SlaId::from_uuid(sla);
        let definition = slas::find_version(&mut tx, sla, 1)
            .await
            .unwrap()
            .definition;
        let windows = maintenance::periods(
            &mut tx,
            sla,
            &definition,
            at("2026-10-31T23:00:00Z"),
            at("2026-11-30T23:00:00Z"),
        )
        .await
        .unwrap();
        assert_eq!(windows.len(), 2);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT DISTINCT ON (objective, day_start) objective, day_start, day_end, good, bad, \
                 counted_to FROM transparency_measurements ORDER BY objective, day_start, revision DESC",
        )
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        // Five objectives, November's 30 Berlin days.
        assert_eq!(rows.len(), 5 * 30, "seed {seed}");
        let mut counted = 0;
        for (objective, start, end, good, bad, counted_to) in rows {
            let rules = DayRules {
                definition: &definition,
                maintenance: &windows,
                default_grace: settings().grace(),
                counted_to,
            };
            let o = definition.objective(&objective).unwrap();
            let t = recount_day(&rules, o, Period { start, end }, &leaves).unwrap();
            assert_eq!(
                (t.good as i64, (t.total - t.good) as i64),
                (good, bad),
                "seed {seed}: {objective} on the day from {start}"
            );
            counted += good + bad;
        }
        assert!(counted > 0);
    }
}
