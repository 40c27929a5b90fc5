//! Service credits end to end: requests stored, the evaluator closing the
//! month, the compensation worker computing the credit into the ledger, and
//! the provider and the customer reading it. Amounts are computed by hand
//! in each test's comment.

use chrono::Duration;
use serde_json::Value;
use slaproof_app::credits::{CreditQuery, NewFee, credits_csv};
use slaproof_app::fee_corrections::NewFeeCorrection;
use slaproof_app::{App, Caller, PageRequest, Principal};
use slaproof_compensation::{Credited, Settings, credit_period, work_due};
use slaproof_store::{customers, slas};
use slaproof_tests::scenario::{Request, Scenario, at};

/// Two objectives, each with its own tier table; the credit is capped at
/// 30% of the fee. `{POLICY}` is spliced into the spec.
const TIERED: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
  - name: no-client-errors
    target: 99%
    ratio: {good: status < 400}
{POLICY}  credits:
    currency: EUR
    capPercentOfFee: 30
    tiered:
    - objective: availability
      tiers:
      - {below: "99.9", percent: "10"}
      - {below: "99", percent: "25"}
      - {below: "95", percent: "100"}
    - objective: no-client-errors
      tiers:
      - {below: "99", percent: "10"}
"#;

fn tiered(policy: &str) -> String {
    TIERED.replace("{POLICY}", policy)
}

/// `n` requests in November, one a minute from the 10th, with `status(i)`.
fn november(n: i64, status: impl Fn(i64) -> i32) -> Vec<Request> {
    (0..n)
        .map(|i| {
            let occurred_at = at("2026-11-10T00:00:00Z") + Duration::minutes(i);
            Request {
                occurred_at,
                received_at: occurred_at,
                status: status(i),
            }
        })
        .collect()
}

async fn fee(app: &App, admin: &Caller, amount: &str) {
    app.set_customer_fee(
        admin,
        "acme-corp",
        NewFee {
            effective_from: at("2026-01-01T00:00:00Z").into(),
            currency: "EUR".into(),
            amount: amount.into(),
            minor_units: None,
        },
    )
    .await
    .unwrap();
}

async fn compensate(s: &Scenario) -> usize {
    work_due(&s.db, &Settings::default(), "compensation-test")
        .await
        .unwrap()
}

async fn ledger(app: &App, caller: &Caller) -> Vec<slaproof_app::credits::Credit> {
    app.list_credits(caller, &CreditQuery::default(), &PageRequest::default())
        .await
        .unwrap()
        .items
}

/// November closed and credited under `tiered(policy)` at a fee of
/// 1,000.00: 1,000 requests, 5 failed (99.5% < 99.9: 10% = 100.00).
async fn credited_november(policy: &str) -> (Scenario, App, Caller) {
    let s = Scenario::new(&tiered(policy), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    compensate(&s).await;
    (s, app, admin)
}

async fn customer_user(s: &Scenario, app: &App, reference: &str) -> Caller {
    s.customer_user(app, reference).await
}

#[tokio::test]
async fn a_month_breached_on_two_objectives_is_credited_by_both_tables_under_the_cap() {
    let s = Scenario::new(&tiered(""), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    // The SLA is seen from the month's start: the month is its to judge.
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    // 1000 requests: 20 answered 500 and 5 answered 404.
    // availability: 980/1000 = 98.0% < 99 → 25% of 1000.00 = 250.00;
    // no-client-errors: 975/1000 = 97.5% < 99 → 10% = 100.00;
    // the tables add up to 350.00, capped at 30% of the fee: 300.00.
    s.insert(&november(1000, |i| match i {
        0..20 => 500,
        20..25 => 404,
        _ => 200,
    }))
    .await;
    s.run("2026-12-01T01:00:00Z").await;
    assert_eq!(compensate(&s).await, 1);

    let credits = ledger(&app, &admin).await;
    assert_eq!(credits.len(), 1, "{credits:?}");
    let credit = &credits[0];
    assert_eq!(
        (
            credit.kind.as_str(),
            credit.total.as_str(),
            credit.amount_minor
        ),
        ("issued", "300.00", 30_000)
    );
    assert_eq!(credit.currency, "EUR");
    assert_eq!(credit.period_start, at("2026-11-01T00:00:00Z"));
    let steps = &credit.computation["computation"];
    assert_eq!(steps["raw"], "350", "{steps}");
    assert_eq!(steps["caps"][0]["limit"]["minor"], 30_000, "{steps}");
    assert_eq!(
        credit.results.as_array().unwrap().len(),
        2,
        "linked to both frozen results"
    );
    // ... and to the attestations of those results (pending: no prover
    // runs here), one per objective.
    let mut attested: Vec<(&str, &str)> = credit
        .attestations
        .iter()
        .map(|a| (a.objective.as_str(), a.status.as_str()))
        .collect();
    attested.sort_unstable();
    assert_eq!(
        attested,
        [("availability", "pending"), ("no-client-errors", "pending")]
    );

    let told = s.told_of("credit.issued").await;
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["total"], "300.00");
    assert_eq!(told[0]["customerRef"], "acme-corp");
    assert_eq!(told[0]["credit"], credit.id.to_string());

    // Nothing new: asking again changes nothing.
    app.recompute_credit(&admin, "chat-sla", at("2026-11-01T00:00:00Z"))
        .await
        .unwrap();
    assert_eq!(compensate(&s).await, 1);
    assert_eq!(ledger(&app, &admin).await.len(), 1);

    // The dashboard shows the period's credit to whoever holds
    // sla:read:credits, and says it is left out to whoever does not.
    let dashboard = app
        .sla_dashboard(&admin, "chat-sla", None, None, chrono::Duration::minutes(1))
        .await
        .unwrap();
    let shown = dashboard.credits.expect("the provider admin reads credits");
    assert_eq!(shown.len(), 1);
    assert_eq!(
        (shown[0].total.as_str(), shown[0].corrections),
        ("300.00", 0)
    );
    let viewer = app
        .caller(Principal {
            subject: "ops@provider".into(),
            tenant: s.tenant,
            roles: vec!["operations_viewer".into()],
            customer: None,
            embed: None,
        })
        .await
        .unwrap();
    let dashboard = app
        .sla_dashboard(
            &viewer,
            "chat-sla",
            None,
            None,
            chrono::Duration::minutes(1),
        )
        .await
        .unwrap();
    assert!(dashboard.credits.is_none());
    assert!(dashboard.redacted.iter().any(|r| r.field == "credits"));

    // The statement and the CSV export carry the same numbers.
    let statement = app
        .credit_statement(&admin, "chat-sla", at("2026-11-01T00:00:00Z"))
        .await
        .unwrap();
    assert_eq!(statement.total, "300.00");
    assert_eq!(statement.customer_ref, "acme-corp");
    let csv = credits_csv(&credits);
    let line = csv.lines().nth(1).unwrap();
    assert!(
        line.contains(",issued,chat-sla,acme-corp,")
            && line.contains(",EUR,300.00,30000,300.00,30000,"),
        "{line}"
    );
}

#[tokio::test]
async fn late_data_that_changes_the_result_adds_a_correcting_entry_referencing_the_original() {
    let s = Scenario::new(
        &tiered("  policy:\n    lateGrace: 1h\n    lateCorrections: true\n"),
        "2026-11-01",
        "2026-12-31",
    )
    .await;
    let (app, admin) = s.app().await;
    // The SLA is seen from the month's start: the month is its to judge.
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    // 1000 requests, 5 failed: 99.5% < 99.9 → 10% = 100.00.
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T02:00:00Z").await;
    compensate(&s).await;
    let first = ledger(&app, &admin).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].total, "100.00");

    // Ten failures of November reported on December 3rd: 985/1010 =
    // 97.52% for both objectives. availability < 99 → 25% = 250.00;
    // no-client-errors (missed now too) < 99 → 10% = 100.00; 350.00
    // capped at 300.00: the correction adds 200.00.
    let late: Vec<Request> = (0..10)
        .map(|i| Request {
            occurred_at: at("2026-11-20T00:00:00Z") + Duration::minutes(i),
            received_at: at("2026-12-03T00:00:00Z"),
            status: 500,
        })
        .collect();
    s.insert(&late).await;
    s.run("2026-12-03T00:01:00Z").await;
    compensate(&s).await;
    let both = ledger(&app, &admin).await;
    assert_eq!(both.len(), 2, "{both:?}");
    let correction = &both[1];
    assert_eq!(correction.kind, "corrected");
    assert_eq!(correction.corrects, Some(first[0].id));
    assert_eq!(correction.revision, 2);
    assert_eq!(
        (correction.amount.as_str(), correction.total.as_str()),
        ("200.00", "300.00")
    );
    let told = s.told_of("credit.corrected").await;
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["corrects"], first[0].id.to_string());
    assert_eq!(told[0]["amount"], "200.00");
    // The balance of the period is its last total.
    let balance: i64 = both.iter().map(|c| c.amount_minor).sum();
    assert_eq!(balance, 30_000);
}

#[tokio::test]
async fn two_workers_computing_one_period_at_once_record_one_credit() {
    let s = Scenario::new(&tiered(""), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    // The SLA is seen from the month's start: the month is its to judge.
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap().id;
    tx.commit().await.unwrap();
    let november = at("2026-11-01T00:00:00Z");

    // A worker that dies between computing and recording: its
    // transaction never commits, and leaves nothing.
    let mut dying = s.db.tenant_tx(s.tenant).await.unwrap();
    assert!(matches!(
        credit_period(&mut dying, sla, november).await.unwrap(),
        Credited::Recorded(_)
    ));
    drop(dying);
    assert!(ledger(&app, &admin).await.is_empty());

    // Two at once: the second waits on the first's entry, then fails on
    // the ledger's unique key; retried, it finds the credit unchanged.
    let (mut one, mut two) = (
        s.db.tenant_tx(s.tenant).await.unwrap(),
        s.db.tenant_tx(s.tenant).await.unwrap(),
    );
    let first = credit_period(&mut one, sla, november).await.unwrap();
    let second = tokio::spawn(async move {
        let outcome = credit_period(&mut two, sla, november).await;
        (outcome.is_ok(), two.commit().await.is_ok())
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    one.commit().await.unwrap();
    let (second_ok, _) = second.await.unwrap();
    assert!(matches!(first, Credited::Recorded(_)));
    assert!(!second_ok, "the second entry is refused by the unique key");
    let mut retry = s.db.tenant_tx(s.tenant).await.unwrap();
    assert!(matches!(
        credit_period(&mut retry, sla, november).await.unwrap(),
        Credited::Unchanged(_)
    ));
    retry.commit().await.unwrap();

    // And the workers: two draining the same job at once record nothing
    // more (one claims it, the other finds none).
    let settings = Settings::default();
    let (a, b) = tokio::join!(
        work_due(&s.db, &settings, "w1"),
        work_due(&s.db, &settings, "w2")
    );
    assert_eq!(a.unwrap() + b.unwrap(), 1);
    let credits = ledger(&app, &admin).await;
    assert_eq!(credits.len(), 1);
    assert_eq!(credits[0].total, "100.00");
}

#[tokio::test]
async fn an_impact_credit_across_midnight_in_berlin_is_one_incident_priced_by_its_requests() {
    let document = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: Europe/Berlin}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
  credits:
    currency: EUR
    cap: "100000.00"
    impact:
      levels: {availability: L3}
"#;
    let s = Scenario::new(document, "2026-10-31", "2026-12-02").await;
    let (app, admin) = s.app().await;
    // The SLA is seen from the month's start (in Berlin).
    s.run("2026-10-31T23:00:00Z").await;
    // Two requests a minute on November 14th from 23:00 to 01:00 Berlin
    // (22:00-00:00 UTC); every one failed from 23:50 to 00:10 Berlin
    // (22:50-23:10 UTC): one incident of 20 minutes across local midnight,
    // 40 requests, QPS 40/1200; the credit is 1200 s x 1/30 QPS x 6.0
    // (L3) x 0.80 EUR = 40 x 6.0 x 0.80 = 192.00 EUR.
    let start = at("2026-11-14T22:00:00Z");
    let requests: Vec<Request> = (0..240)
        .map(|i| {
            let occurred_at = start + Duration::seconds(i * 30);
            let minute = i / 2;
            Request {
                occurred_at,
                received_at: occurred_at,
                status: if (50..70).contains(&minute) { 500 } else { 200 },
            }
        })
        .collect();
    s.insert(&requests).await;
    // November in Berlin ends at 2026-11-30T23:00Z.
    s.run("2026-12-01T00:00:00Z").await;
    compensate(&s).await;
    let credits = ledger(&app, &admin).await;
    assert_eq!(credits.len(), 1, "{credits:?}");
    assert_eq!(credits[0].total, "192.00");
    assert_eq!(credits[0].period_start, at("2026-10-31T23:00:00Z"));
    let incidents = &credits[0].computation["computation"]["incidents"];
    assert_eq!(incidents.as_array().unwrap().len(), 1, "{incidents}");
    assert_eq!(incidents[0]["start"], "2026-11-14T22:50:00Z");
    assert_eq!(incidents[0]["end"], "2026-11-14T23:10:00Z");
    assert_eq!(incidents[0]["requests"], 40);
    assert_eq!(incidents[0]["duration_seconds"], "1200");
}

#[tokio::test]
async fn a_customer_reads_its_own_credits_only_and_a_missing_fee_is_told_not_zeroed() {
    let s = Scenario::new(&tiered(""), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    // The SLA is seen from the month's start: the month is its to judge.
    s.run("2026-11-01T00:00:00Z").await;
    app.create_customer(
        &admin,
        slaproof_app::customers::NewCustomer {
            external_ref: "beta-inc".into(),
            name: "Beta".into(),
        },
    )
    .await
    .unwrap();
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    // No fee on file: the tiered credit cannot be computed, and says so.
    compensate(&s).await;
    assert!(ledger(&app, &admin).await.is_empty());
    let blocked: Vec<Value> = s.told_of("credit.not_computed").await;
    assert_eq!(blocked.len(), 1);
    assert!(
        blocked[0]["reason"]
            .as_str()
            .unwrap()
            .contains("no fee on file"),
        "{blocked:?}"
    );
    // The fee recorded, the provider asks again.
    fee(&app, &admin, "1000.00").await;
    app.recompute_credit(&admin, "chat-sla", at("2026-11-01T00:00:00Z"))
        .await
        .unwrap();
    compensate(&s).await;
    let credits = ledger(&app, &admin).await;
    assert_eq!(credits.len(), 1);

    let acme = customer_user(&s, &app, "acme-corp").await;
    let beta = customer_user(&s, &app, "beta-inc").await;
    assert_eq!(ledger(&app, &acme).await.len(), 1);
    assert!(ledger(&app, &beta).await.is_empty());
    let id = credits[0].id.to_string();
    assert!(app.get_credit(&acme, &id).await.is_ok());
    assert!(matches!(
        app.get_credit(&beta, &id).await,
        Err(slaproof_app::AppError::NotFound { .. })
    ));
    let asked_for_other = app
        .list_credits(
            &beta,
            &CreditQuery {
                customer_ref: Some("acme-corp".into()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert!(asked_for_other.items.is_empty());
    // The fee is the provider's contract data, not the customer's to set.
    assert!(
        app.set_customer_fee(
            &acme,
            "acme-corp",
            NewFee {
                effective_from: at("2026-12-01T00:00:00Z").into(),
                currency: "EUR".into(),
                amount: "1.00".into(),
                minor_units: None,
            },
        )
        .await
        .is_err()
    );
    // Bad fees are refused by name.
    for (currency, amount, field) in [("EURO", "1.00", "currency"), ("EUR", "1.001", "amount")] {
        let refused = app
            .set_customer_fee(
                &admin,
                "acme-corp",
                NewFee {
                    effective_from: at("2027-01-01T00:00:00Z").into(),
                    currency: currency.into(),
                    amount: amount.into(),
                    minor_units: None,
                },
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, slaproof_app::AppError::Invalid { field: f, .. } if f == field),
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn the_ledger_refuses_updates_and_deletes() {
    let s = Scenario::new(&tiered(""), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    // The SLA is seen from the month's start: the month is its to judge.
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    compensate(&s).await;
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let refused = sqlx::query("UPDATE credit_entries SET total_minor = 0")
        .execute(&mut *tx)
        .await;
    assert!(refused.is_err(), "an update is refused");
    drop(tx);
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    assert!(
        sqlx::query("DELETE FROM credit_entries")
            .execute(&mut *tx)
            .await
            .is_err()
    );
}

/// An impact SLA of acme-corp's at 99.9%, L4, named `name`, with the
/// incident terms `terms` (spliced under `impact:`).
fn impact_terms(name: &str, terms: &str) -> String {
    format!(
        r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: {name}
spec:
  service: chat
  customer: acme-corp
  window: {{calendar: month, timeZone: UTC}}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {{good: status < 500}}
  credits:
    currency: EUR
    cap: "100000.00"
    impact:
      levels: {{availability: L4}}
{terms}"#
    )
}

/// Each SLA's credit total, by name; SLAs owed nothing are absent.
async fn totals(app: &App, admin: &Caller) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = ledger(app, admin)
        .await
        .into_iter()
        .map(|c| (c.sla, c.total))
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn bad_minutes_inside_a_met_month_owe_no_impact_credit_unless_the_contract_says_always() {
    // Found in review: impact credits were owed for any minute below the
    // period's target, whether or not the period was met. Ten requests a
    // minute for 1,200 minutes, one failing in each of eleven minutes 100
    // minutes apart: 11,989 of 12,000 good, a met month; each of those
    // minutes (90%) is below 99.9%.
    let s = Scenario::new(&impact_terms("chat-sla", ""), "2026-11-01", "2026-12-02").await;
    // The same requests, under the same objective, by other terms.
    for (name, terms) in [
        ("chat-always", "      owedWhen: always\n"),
        (
            "chat-floor",
            "      owedWhen: always\n      incidents: {availability: {minRequests: 11}}\n",
        ),
        (
            "chat-long",
            "      owedWhen: always\n      incidents: {availability: {minMinutes: 2}}\n",
        ),
        (
            "chat-mild",
            "      owedWhen: always\n      incidents: {availability: {minuteBelow: 85}}\n",
        ),
    ] {
        s.apply(&impact_terms(name, terms)).await;
    }
    let (app, admin) = s.app().await;
    s.run("2026-11-01T00:00:00Z").await;
    let start = at("2026-11-10T00:00:00Z");
    let requests: Vec<Request> = (0..12_000)
        .map(|i| {
            let minute = i / 10;
            let failed = minute % 100 == 0 && minute > 0 && i % 10 == 0;
            Request::at(start + Duration::seconds(i * 6), !failed)
        })
        .collect();
    assert_eq!(requests.iter().filter(|r| r.status >= 500).count(), 11);
    s.insert(&requests).await;
    s.run("2026-12-01T00:10:00Z").await;
    compensate(&s).await;
    // 11 failed of 12,000 (minutes 100 … 1100 each lose one): 99.908%, met.
    // Only `always` pays: 11 incidents × 10 requests × 15.0 (L4) × 0.80 EUR
    // = 1,320.00 EUR. The default owes nothing in a met month; a floor of
    // 11 requests a minute, a shortest incident of two minutes, or a minute
    // threshold of 85% each leave no incident at all.
    assert_eq!(
        totals(&app, &admin).await,
        vec![("chat-always".to_owned(), "1320.00".to_owned())]
    );
    let credit = ledger(&app, &admin).await.remove(0);
    let incidents = credit.computation["computation"]["incidents"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(incidents.len(), 11, "{incidents:?}");
    assert_eq!(incidents[0]["start"], "2026-11-10T01:40:00Z");
    assert_eq!(incidents[0]["requests"], 10);
}

#[tokio::test]
async fn a_missed_month_owes_its_incidents_and_a_met_one_says_why_not() {
    // The default terms, a month missed: the incidents are owed.
    let s = Scenario::new(&impact_terms("chat-sla", ""), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    s.run("2026-11-01T00:00:00Z").await;
    let start = at("2026-11-10T00:00:00Z");
    // 600 requests over an hour, minutes 20–29 all failed: 500 of 600
    // good, missed. One incident of 10 minutes, 100 requests:
    // 100 × 15.0 × 0.80 = 1,200.00 EUR.
    let requests: Vec<Request> = (0..600)
        .map(|i| Request::at(start + Duration::seconds(i * 6), !(200..300).contains(&i)))
        .collect();
    s.insert(&requests).await;
    s.run("2026-12-01T00:10:00Z").await;
    compensate(&s).await;
    assert_eq!(
        totals(&app, &admin).await,
        vec![("chat-sla".to_owned(), "1200.00".to_owned())]
    );
}

#[tokio::test]
async fn a_time_slice_objective_is_in_incident_only_below_its_slice_target() {
    // Found in review: incident minutes of a time-slice objective were
    // judged against the share of good slices (99.5%) instead of the slice
    // target (95%), so a slice that met its target could pay.
    let document = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-slices
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: good-minutes
    target: 99.5%
    timeSlices:
      sliceLength: 1m
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {good: status < 500}
  credits:
    currency: EUR
    cap: "100000.00"
    impact:
      levels: {good-minutes: L2}
      owedWhen: always
"#;
    let s = Scenario::new(document, "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    s.run("2026-11-01T00:00:00Z").await;
    // 20 requests a minute for an hour: minutes 10–19 lose one (95%, a
    // good slice), minutes 30–34 lose two (90%, bad slices).
    let start = at("2026-11-10T00:00:00Z");
    let requests: Vec<Request> = (0..1_200)
        .map(|i| {
            let (minute, nth) = (i / 20, i % 20);
            let failed =
                ((10..20).contains(&minute) && nth == 0) || ((30..35).contains(&minute) && nth < 2);
            Request::at(start + Duration::seconds(i * 3), !failed)
        })
        .collect();
    s.insert(&requests).await;
    s.run("2026-12-01T00:10:00Z").await;
    compensate(&s).await;
    // One incident, 00:30–00:35 on the 10th: 100 requests × 2.5 (L2) ×
    // 0.80 EUR = 200.00 EUR. The ten 95% minutes are good slices and no
    // incident.
    let credits = ledger(&app, &admin).await;
    assert_eq!(credits.len(), 1, "{credits:?}");
    assert_eq!(credits[0].total, "200.00");
    let incidents = &credits[0].computation["computation"]["incidents"];
    assert_eq!(incidents.as_array().unwrap().len(), 1, "{incidents}");
    assert_eq!(incidents[0]["start"], "2026-11-10T00:30:00Z");
    assert_eq!(incidents[0]["end"], "2026-11-10T00:35:00Z");
}

#[tokio::test]
async fn a_fee_never_reaches_back_into_a_credited_period_and_is_on_the_audit_trail() {
    // Found in review: a back-dated fee rewrote months already credited
    // at the next recompute or re-close, and fee changes were not on the
    // audit trail.
    let (s, app, admin) = credited_november("").await;
    assert_eq!(ledger(&app, &admin).await[0].total, "100.00");

    // A price from mid-November is refused, by the period it would rewrite.
    let back_dated = app
        .set_customer_fee(
            &admin,
            "acme-corp",
            NewFee {
                effective_from: at("2026-11-15T00:00:00Z").into(),
                currency: "EUR".into(),
                amount: "2000.00".into(),
                minor_units: None,
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&back_dated, slaproof_app::AppError::Conflict(m)
            if m.contains("2026-11-01T00:00:00+00:00 to 2026-12-01T00:00:00+00:00 was credited already")),
        "{back_dated:?}"
    );
    // From the next period on, it is recorded, and told on the SLA's trail.
    app.set_customer_fee(
        &admin,
        "acme-corp",
        NewFee {
            effective_from: at("2026-12-01T00:00:00Z").into(),
            currency: "EUR".into(),
            amount: "2000.00".into(),
            minor_units: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        app.customer_fees(&admin, "acme-corp").await.unwrap().len(),
        2
    );
    let trail = app
        .sla_audit(&admin, "chat-sla", &PageRequest::default())
        .await
        .unwrap()
        .items;
    let recorded: Vec<_> = trail
        .iter()
        .filter(|r| r.action == "fee.recorded")
        .collect();
    assert_eq!(recorded.len(), 2, "both fees: {trail:?}");
    assert_eq!(recorded[1].details["amount_minor"], 200_000);
    assert_eq!(recorded[1].actor, admin.principal.subject);

    // A back-dated fee already on file (written before this rule) does not
    // move the credited period either: a recompute keeps the fee it was
    // credited on.
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let customer = customers::find_by_ref(&mut tx, "acme-corp")
        .await
        .unwrap()
        .unwrap()
        .id;
    slaproof_store::credits::add_fee(
        &mut tx,
        &slaproof_store::credits::Fee {
            customer,
            effective_from: at("2026-10-01T00:00:00Z"),
            effective_on: None,
            currency: "EUR".into(),
            minor_units: 2,
            amount_minor: 500_000,
            created_at: chrono::Utc::now(),
            created_by: "legacy".into(),
        },
    )
    .await
    .unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap().id;
    let again = credit_period(&mut tx, sla, at("2026-11-01T00:00:00Z"))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(again, Credited::Unchanged(_)), "{again:?}");
    assert_eq!(ledger(&app, &admin).await.len(), 1);
}

#[tokio::test]
async fn a_final_periods_fee_is_not_corrected() {
    // #30 finality: past its settlement horizon a credited period's fee,
    // like its verdict, no longer moves (the contract says 1 day here).
    let (s, app, admin) = credited_november("  policy:\n    settlement: 1d\n").await;
    let err = app
        .correct_credited_fee(
            &admin,
            "chat-sla",
            at("2026-11-01T00:00:00Z"),
            NewFeeCorrection {
                currency: "EUR".into(),
                amount: "1200.00".into(),
                minor_units: None,
                reason: "Amendment 2 raised the fee".into(),
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, slaproof_app::AppError::Conflict(m)
            if m.contains("final since 2026-12-02T00:00:00+00:00") && m.contains("1d")),
        "{err:?}"
    );
    assert_eq!(ledger(&app, &admin).await.len(), 1);
    assert_eq!(compensate(&s).await, 0, "nothing was asked again");
}

#[tokio::test]
async fn a_month_judged_under_one_customers_version_is_credited_to_that_customer_after_the_sla_moves()
 {
    // Found in review (hardening II, re-assigned SLAs): the credit took the
    // SLA's current customer, so a month judged under acme-corp's version
    // was booked to globex, at globex's fee, and readable by globex.
    let s = Scenario::new(&tiered(""), "2026-11-01", "2026-12-02").await;
    s.customers(&["globex"]).await;
    let (app, admin) = s.app().await;
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    app.set_customer_fee(
        &admin,
        "globex",
        NewFee {
            effective_from: at("2026-01-01T00:00:00Z").into(),
            currency: "EUR".into(),
            amount: "9000.00".into(),
            minor_units: None,
        },
    )
    .await
    .unwrap();
    // November under version 1, acme-corp's: 98.0% on both objectives,
    // 25% + 10% of the fee, capped at 30%.
    s.insert(&november(1000, |i| if i < 20 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    // The provider moves the SLA to globex before the credit is computed.
    s.apply(&tiered("").replace("customer: acme-corp", "customer: globex"))
        .await;
    assert_eq!(compensate(&s).await, 1);

    let credits = ledger(&app, &admin).await;
    assert_eq!(credits.len(), 1, "{credits:?}");
    assert_eq!(credits[0].version, 1);
    assert_eq!(credits[0].customer_ref, "acme-corp");
    // 30% of acme-corp's 1,000.00, not of globex's 9,000.00 (2,700.00).
    assert_eq!(credits[0].amount, "300.00");
    let globex = customer_user(&s, &app, "globex").await;
    assert!(ledger(&app, &globex).await.is_empty());
    let acme = customer_user(&s, &app, "acme-corp").await;
    assert_eq!(ledger(&app, &acme).await.len(), 1);
}

/// The tiered SLA as `name`, crediting on `share` of the customer's fee
/// (`None`: the whole fee, by default).
fn sharing(name: &str, share: Option<&str>) -> String {
    let share = share.map_or(String::new(), |s| format!("\n    feeShare: {s}"));
    tiered("")
        .replace("name: chat-sla", &format!("name: {name}"))
        .replace(
            "capPercentOfFee: 30",
            &format!("capPercentOfFee: 30{share}"),
        )
}

#[tokio::test]
async fn two_slas_of_one_customer_split_its_fee_and_never_credit_on_more_than_the_whole() {
    // Found in review: one customer fee was used whole by each of its
    // SLAs, so two SLAs could credit twice the fee (before this, the
    // second SLA below applied at 100% and each credited 100.00 of a
    // 1,000.00 fee).
    let s = Scenario::new(&sharing("chat-sla", Some("50")), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    let refused = |share: Option<&'static str>| {
        let app = &app;
        let admin = &admin;
        async move {
            match app
                .apply_sla(admin, &sharing("chat-sla-2", share), Default::default())
                .await
            {
                Err(slaproof_app::AppError::Invalid { field, message }) => (field, message),
                other => panic!("feeShare {share:?} was not refused: {other:?}"),
            }
        }
    };
    let (field, message) = refused(None).await;
    assert_eq!(field, "spec.credits.feeShare");
    assert!(
        message.contains("chat-sla (50%)") && message.contains("150% of one fee"),
        "{message}"
    );
    let (_, message) = refused(Some("60")).await;
    assert!(message.contains("at most 50% here"), "{message}");
    app.apply_sla(
        &admin,
        &sharing("chat-sla-2", Some("50")),
        Default::default(),
    )
    .await
    .unwrap();
    // Raising the first SLA's share now would take the second's part.
    let raised = app
        .apply_sla(&admin, &sharing("chat-sla", Some("60")), Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&raised, slaproof_app::AppError::Invalid { message, .. } if message.contains("chat-sla-2 (50%)")),
        "{raised:?}"
    );

    // A missed month on both: each credits 10% of its half of 1,000.00.
    s.run("2026-11-01T00:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    compensate(&s).await;
    let credits = ledger(&app, &admin).await;
    let mut totals: Vec<_> = credits.iter().map(|c| c.total.as_str()).collect();
    totals.sort_unstable();
    assert_eq!(totals, ["50.00", "50.00"], "{credits:?}");
    // The statement shows the whole fee and the SLA's share of it.
    let computation = &credits[0].computation["computation"];
    assert_eq!(computation["fee"]["minor"], 100_000, "{computation}");
    assert_eq!(computation["fee_share"], "50", "{computation}");
}

#[tokio::test]
async fn a_share_lowered_for_next_month_still_counts_this_month() {
    // Found in review: the fee-share check read each other SLA's newest
    // version. Lowering chat-sla's share from 50% to 20% takes effect only
    // with the next period; until then chat-sla credits 50%, so a second
    // SLA at 80% would credit 130% of this month's fee.
    let s = Scenario::new(&sharing("chat-sla", Some("50")), "2026-11-01", "2026-12-02").await;
    let (app, admin) = s.app().await;
    let lowered = app
        .apply_sla(&admin, &sharing("chat-sla", Some("20")), Default::default())
        .await
        .unwrap();
    assert!(
        lowered.takes_effect_at.is_some(),
        "the lower share waits for the next period: {lowered:?}"
    );
    let refused = app
        .apply_sla(
            &admin,
            &sharing("chat-sla-2", Some("80")),
            Default::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, slaproof_app::AppError::Invalid { field, message }
            if field == "spec.credits.feeShare"
                && message.contains("chat-sla (50%)")
                && message.contains("at most 50% here")),
        "{refused:?}"
    );
    // At 50% it fits beside the 50% in force now (and the 20% to come).
    app.apply_sla(
        &admin,
        &sharing("chat-sla-2", Some("50")),
        Default::default(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_fee_from_a_date_starts_with_the_slas_own_local_month() {
    // Found in review: a fee's start was compared in UTC with periods in
    // the SLA's zone, so a November price from midnight UTC missed
    // Berlin's November (which starts at 23:00 UTC on 31 October) and
    // November was credited on October's price.
    let berlin = tiered("").replace("timeZone: UTC", "timeZone: Europe/Berlin");
    let s = Scenario::new(&berlin, "2026-10-31", "2026-12-02").await;
    let (app, admin) = s.app().await;
    s.run("2026-10-31T23:00:00Z").await;
    fee(&app, &admin, "1000.00").await;
    let record = |from: &str, amount: &str| {
        let (app, admin) = (&app, &admin);
        let from = slaproof_domain::credit::FeeStart::parse(from).unwrap();
        let amount = amount.to_owned();
        async move {
            app.set_customer_fee(
                admin,
                "acme-corp",
                NewFee {
                    effective_from: from,
                    currency: "EUR".into(),
                    amount,
                    minor_units: None,
                },
            )
            .await
        }
    };
    let price = record("2026-11-01", "2000.00").await.unwrap();
    assert_eq!(
        price.effective_on.map(|d| d.to_string()).as_deref(),
        Some("2026-11-01")
    );
    s.insert(&november(1000, |i| if i < 5 { 500 } else { 200 }))
        .await;
    s.run("2026-12-01T01:00:00Z").await;
    compensate(&s).await;
    // 10% of November's 2,000.00, not of October's 1,000.00.
    assert_eq!(ledger(&app, &admin).await[0].total, "200.00");

    // Berlin's November is credited: a price from the 30th reaches back
    // into it, one from 1 December (Berlin's midnight) does not.
    let refused = record("2026-11-30", "3000.00").await.unwrap_err();
    assert!(
        matches!(&refused, slaproof_app::AppError::Conflict(m)
            if m.contains("up to 2026-12-01") && m.contains("from 2026-12-01 or later")),
        "{refused:?}"
    );
    record("2026-12-01", "3000.00").await.unwrap();
    let fees = app.customer_fees(&admin, "acme-corp").await.unwrap();
    assert_eq!(fees.len(), 3);
}
