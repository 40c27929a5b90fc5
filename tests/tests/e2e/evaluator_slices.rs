//! Time slices against a real database: slices follow the local days (and
//! the local hours) of the SLA's time zone, not the Unix epoch, so a Berlin
//! month of one-day slices has one slice per local day, a DST day is one
//! slice, and hours in Kolkata start at half past the UTC hour.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use slaproof_domain::budget::Tally;
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_evaluator::{ObjectiveEvaluation, Settings, evaluate_tenant_up_to};
use slaproof_store::{Database, partitions, slas, tenants};
use slaproof_tests::TestDatabase;

/// Good slices of `length` in a calendar month in `zone`: a slice is good
/// when 95% of its requests succeed.
fn slices_sla(zone: &str, length: &str) -> String {
    format!(
        r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: slices
spec:
  service: chat
  window: {{calendar: month, timeZone: {zone}}}
  objectives:
  - name: good-slices
    target: 90%
    timeSlices:
      sliceLength: {length}
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {{good: status < 500}}
"#
    )
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn settings() -> Settings {
    Settings {
        grace_secs: 300,
        settle_secs: 0,
        ..Settings::default()
    }
}

/// Inserts one `chat` event per `(occurred_at, good)`, received when it
/// occurred.
async fn insert_events(db: &Database, tenant: TenantId, events: &[(DateTime<Utc>, bool)]) {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let occurred: Vec<_> = events.iter().map(|e| e.0).collect();
    let ids: Vec<_> = events.iter().map(|_| uuid::Uuid::now_v7()).collect();
    let status: Vec<i32> = events.iter().map(|e| if e.1 { 200 } else { 503 }).collect();
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, status, latency_us) \
         SELECT $1, o, i, o, 'provider', 'chat', 'big', st, 1 \
         FROM UNNEST($2::timestamptz[], $3::uuid[], $4::int4[]) AS t(o, i, st)",
    )
    .bind(tenant.uuid())
    .bind(&occurred)
    .bind(&ids)
    .bind(&status)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// A database with a tenant under `document`, partitions for `[from, to]`.
async fn tenant_with_sla(
    database: &TestDatabase,
    document: &str,
    from: &str,
    to: &str,
) -> (Database, TenantId) {
    let db = database.service_database().await;
    let (from, to): (NaiveDate, NaiveDate) = (from.parse().unwrap(), to.parse().unwrap());
    partitions::ensure(&db, from, to).await.unwrap();
    let tenant = tenants::create(&db, "acme", "acme").await.unwrap().id;
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(document).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    (db, tenant)
}

/// Moves the watermark to `as_of` and returns the time-slice objective's
/// evaluation.
async fn evaluate(db: &Database, tenant: TenantId, as_of: &str) -> ObjectiveEvaluation {
    let mut tx = db.tenant_tx(tenant).await.unwrap();
    let run = evaluate_tenant_up_to(&mut tx, &settings(), Some(at(as_of)))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(run.failed_slas.is_empty(), "{:?}", run.failed_slas);
    let mut e = run.evaluations;
    assert_eq!(e.len(), 1);
    e.remove(0)
}

#[tokio::test]
async fn a_berlin_month_of_day_slices_has_one_slice_per_local_day() {
    let database = TestDatabase::create().await;
    let (db, tenant) = tenant_with_sla(
        &database,
        &slices_sla("Europe/Berlin", "1d"),
        "2026-10-31",
        "2026-11-30",
    )
    .await;
    // November 1 in Berlin began at 23:00 UTC on October 31. Its only
    // request failed, at 00:30 local time; every later day has a good one
    // at 00:30 (23:30 UTC the day before) and one at noon (11:00 UTC).
    let mut events = vec![(at("2026-10-31T23:30:00Z"), false)];
    for day in 2..=30 {
        let midnight = at("2026-10-31T23:00:00Z") + Duration::days(day - 1);
        events.push((midnight + Duration::minutes(30), true));
        events.push((midnight + Duration::hours(12), true));
    }
    insert_events(&db, tenant, &events).await;
    let e = evaluate(&db, tenant, "2026-11-30T12:00:00Z").await;
    assert_eq!(e.period.start, at("2026-10-31T23:00:00Z"));
    // 30 local days, of which the first was bad. Slices aligned to UTC days
    // would count 31: the one-hour stretch of October 31 UTC (bad) and
    // November 1 UTC (good, holding only 00:30 of the local 2nd).
    assert_eq!(
        e.budget.tally,
        Tally {
            good: 29,
            total: 30
        }
    );
    assert!(e.budget.met(), "29 of 30 days is 96.7%");
}

#[tokio::test]
async fn a_dst_day_is_one_slice_of_25_hours() {
    let database = TestDatabase::create().await;
    let (db, tenant) = tenant_with_sla(
        &database,
        &slices_sla("Europe/Berlin", "1d"),
        "2026-09-30",
        "2026-10-31",
    )
    .await;
    // October 2026 in Berlin: from 22:00 UTC on September 30 (CEST) to
    // 23:00 UTC on October 31 (CET); October 25 is 25 hours long. One good
    // request ten minutes into every hour, except that two of the 25 hours
    // of October 25 fail: 23 of 25 (92%) makes the day bad.
    let start = at("2026-09-30T22:00:00Z");
    let as_of = at("2026-10-31T22:00:00Z");
    let bad = [at("2026-10-25T21:10:00Z"), at("2026-10-24T22:10:00Z")];
    let mut events = Vec::new();
    let mut hour = start;
    while hour < as_of {
        let occurred_at = hour + Duration::minutes(10);
        events.push((occurred_at, !bad.contains(&occurred_at)));
        hour += Duration::hours(1);
    }
    insert_events(&db, tenant, &events).await;
    let e = evaluate(&db, tenant, "2026-10-31T22:00:00Z").await;
    assert_eq!(e.period.start, start);
    // 31 local days (the last still running), one of them bad. Aligned to
    // UTC days there would be 32 (two hours of September 30 among them),
    // all good: the failures fall on two UTC days, each 23 of 24 (95.8%).
    assert_eq!(
        e.budget.tally,
        Tally {
            good: 30,
            total: 31
        }
    );
}

#[tokio::test]
async fn hour_slices_in_kolkata_start_at_half_past_the_utc_hour() {
    let database = TestDatabase::create().await;
    let (db, tenant) = tenant_with_sla(
        &database,
        &slices_sla("Asia/Kolkata", "1h"),
        "2026-10-31",
        "2026-11-30",
    )
    .await;
    // Local hours are [09:30, 10:30) and [10:30, 11:30) UTC.
    insert_events(
        &db,
        tenant,
        &[
            (at("2026-11-10T10:20:00Z"), true),
            (at("2026-11-10T10:40:00Z"), false),
            (at("2026-11-10T10:50:00Z"), true),
        ],
    )
    .await;
    let e = evaluate(&db, tenant, "2026-11-10T12:00:00Z").await;
    // [09:30, 10:30): 1 of 1 good; [10:30, 11:30): 1 of 2, bad. The UTC
    // hour [10:00, 11:00) would have been one bad slice (2 of 3).
    assert_eq!(e.budget.tally, Tally { good: 1, total: 2 });
}
