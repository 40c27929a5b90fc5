//! What the evaluator tells while a period runs and when it closes: a
//! breach is a closed period not met, told once per period and revision at
//! its close; while the period runs the signals (at risk, budget exhausted,
//! degrade level) judge it at its expected volume and belong to it.

use chrono::Duration;
use slaproof_store::evaluations;
use slaproof_tests::scenario::{Request, Scenario, at};

const MONTHLY: &str = r#"
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
"#;

/// One request every `step` from `from` (inclusive) to `to` (exclusive),
/// failed where `failed(i)` says so.
fn every(step: Duration, from: &str, to: &str, failed: impl Fn(i64) -> bool) -> Vec<Request> {
    let (from, to) = (at(from), at(to));
    (0..)
        .map(|i| (i, from + step * i32::try_from(i).unwrap()))
        .take_while(|(_, t)| *t < to)
        .map(|(i, t)| Request::at(t, !failed(i)))
        .collect()
}

#[tokio::test]
async fn a_months_first_failure_is_no_breach_and_the_breach_is_told_once_at_the_close() {
    let s = Scenario::new(MONTHLY, "2026-10-28", "2026-12-02").await;
    // Three days of October at 0.02% failed.
    s.insert(&every(
        Duration::seconds(10),
        "2026-10-29T00:00:00Z",
        "2026-11-01T00:00:00Z",
        |i| i % 5_000 == 0,
    ))
    .await;

    // The month starts with no events: nothing is exhausted (the budget
    // read used to say `exhausted` at every period's start).
    s.run("2026-11-01T00:00:00Z").await;
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slaproof_store::slas::find(&mut tx, "chat-sla", None)
        .await
        .unwrap();
    let latest = evaluations::latest(&mut tx, sla.id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(latest[0].total, 0);
    assert_eq!(latest[0].budget_remaining, 0);
    assert!(!latest[0].exhausted && !latest[0].at_risk);
    assert_eq!(latest[0].degrade_level, 0);
    let (app, admin) = s.app().await;
    let status = app.budget_status(&admin, "chat-sla").await.unwrap();
    assert!(!status.exhausted && !status.at_risk, "{status:?}");
    assert_eq!(status.degrade_level, 0);

    // Its first ten minutes: 600 requests, one failed at 00:05.
    s.insert(&every(
        Duration::seconds(1),
        "2026-11-01T00:00:00Z",
        "2026-11-01T00:10:00Z",
        |i| i == 300,
    ))
    .await;
    let run = s.run("2026-11-01T00:10:00Z").await;
    let e = &run.evaluations[0];
    // So far the month misses 99.9% (1 bad, 0.6 allowed)…
    assert!(!e.budget.met());
    // …but it is expected to hold 2.6 million requests, of which 2,678
    // may fail, and the recent rate projects far fewer.
    let outlook = e.outlook.unwrap();
    assert_eq!(outlook.expected_total, 600 * 30 * 24 * 6);
    assert!(!outlook.at_risk && !outlook.exhausted, "{outlook:?}");
    let told = s.told().await;
    assert!(
        told.iter().all(|(t, _)| !matches!(
            t.as_str(),
            "sla.breached" | "slo.budget_exhausted" | "slo.at_risk"
        )),
        "{told:?}"
    );

    // The month closes (grace 5 minutes) having missed: one breach, with
    // the period and revision it is about.
    let run = s.run("2026-12-01T00:10:00Z").await;
    assert_eq!(run.closed.len(), 1);
    let breaches = s.told_of("sla.breached").await;
    assert_eq!(breaches.len(), 1, "{breaches:?}");
    assert_eq!(breaches[0]["objective"], "availability");
    assert_eq!(breaches[0]["periodStart"], "2026-11-01T00:00:00Z");
    assert_eq!(breaches[0]["periodEnd"], "2026-12-01T00:00:00Z");
    assert_eq!(breaches[0]["revision"], 1);
    assert_eq!(
        (breaches[0]["good"].clone(), breaches[0]["total"].clone()),
        (599.into(), 600.into())
    );
    // Told once.
    s.run("2026-12-01T00:11:00Z").await;
    assert_eq!(s.told_of("sla.breached").await.len(), 1);
    // Read as the API reads it: the closed period, not met.
    let periods = app.sla_periods(&admin, "chat-sla").await.unwrap().periods;
    assert_eq!(periods.len(), 1);
    assert_eq!(periods[0].period_start, at("2026-11-01T00:00:00Z"));
    assert!(!periods[0].met);
    assert_eq!(
        (periods[0].good, periods[0].total, periods[0].revision),
        (599, 600, 1)
    );
}

#[tokio::test]
async fn signals_belong_to_their_period_and_degrade_levels_rise_and_fall() {
    let s = Scenario::new(MONTHLY, "2026-10-28", "2026-12-02").await;
    // November at one good request a minute, then its last hour failing
    // every request (one each 10 s).
    s.insert(&every(
        Duration::minutes(1),
        "2026-11-01T00:00:00Z",
        "2026-11-30T23:00:00Z",
        |_| false,
    ))
    .await;
    s.insert(&every(
        Duration::seconds(10),
        "2026-11-30T23:00:00Z",
        "2026-12-01T00:00:00Z",
        |_| true,
    ))
    .await;
    s.run("2026-11-30T23:30:00Z").await;
    let at_risk = s.told_of("slo.at_risk").await;
    assert_eq!(at_risk.len(), 1, "{at_risk:?}");
    assert_eq!(at_risk[0]["state"], "at_risk");
    assert_eq!(at_risk[0]["periodStart"], "2026-11-01T00:00:00Z");
    let exhausted = s.told_of("slo.budget_exhausted").await;
    assert_eq!(exhausted.len(), 1);
    assert_eq!(exhausted[0]["state"], "exhausted");
    // Every request of the last 5 minutes failed: burn 1,000, full degrade.
    let degrade = s.told_of("slo.degrade_level_changed").await;
    assert_eq!(degrade.len(), 1);
    assert_eq!(
        (degrade[0]["from"].clone(), degrade[0]["to"].clone()),
        (0.into(), 2.into())
    );
    // No breach while the month runs.
    assert!(s.told_of("sla.breached").await.is_empty());

    // December starts healthy. November closes and is breached; December
    // has its own signals: at risk anew (the last three days failed at
    // about 7%), with nothing recovered for November, and the gateway
    // back to normal (its last 5 minutes were clean and December's budget
    // is whole).
    s.insert(&every(
        Duration::seconds(10),
        "2026-12-01T00:00:00Z",
        "2026-12-01T00:20:00Z",
        |_| false,
    ))
    .await;
    s.run("2026-12-01T00:20:00Z").await;
    let breaches = s.told_of("sla.breached").await;
    assert_eq!(breaches.len(), 1);
    assert_eq!(breaches[0]["periodStart"], "2026-11-01T00:00:00Z");
    let at_risk = s.told_of("slo.at_risk").await;
    let states: Vec<_> = at_risk
        .iter()
        .map(|p| {
            (
                p["state"].as_str().unwrap(),
                p["periodStart"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("at_risk", "2026-11-01T00:00:00Z"),
            ("at_risk", "2026-12-01T00:00:00Z")
        ]
    );
    let degrade = s.told_of("slo.degrade_level_changed").await;
    let levels: Vec<_> = degrade
        .iter()
        .map(|p| (p["from"].as_i64().unwrap(), p["to"].as_i64().unwrap()))
        .collect();
    assert_eq!(levels, [(0, 2), (2, 0)]);
}

#[tokio::test]
async fn silence_is_told_as_missing_data_and_its_end_as_recovery() {
    let document = MONTHLY.replace(
        "    ratio: {good: status < 500}\n",
        "    ratio: {good: status < 500}\n  policy:\n    noData: {after: 15m}\n",
    );
    let s = Scenario::new(&document, "2026-11-01", "2026-11-02").await;
    // Requests every 10 s until 10:00, then nothing until 10:30.
    s.insert(&every(
        Duration::seconds(10),
        "2026-11-01T09:00:00Z",
        "2026-11-01T10:00:00Z",
        |_| false,
    ))
    .await;
    s.run("2026-11-01T10:14:00Z").await;
    assert!(s.told_of("sla.no_data").await.is_empty());
    // Fifteen minutes after the last minute with data ended.
    s.run("2026-11-01T10:15:00Z").await;
    let told = s.told_of("sla.no_data").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["state"], "no_data");
    assert_eq!(told[0]["noDataSince"], "2026-11-01T10:00:00Z");
    // Told once.
    s.run("2026-11-01T10:20:00Z").await;
    assert_eq!(s.told_of("sla.no_data").await.len(), 1);
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slaproof_store::slas::find(&mut tx, "chat-sla", None)
        .await
        .unwrap();
    let state = evaluations::data_state(&mut tx, sla.id)
        .await
        .unwrap()
        .unwrap();
    tx.commit().await.unwrap();
    assert!(state.no_data);
    assert_eq!(state.last_event_at, Some(at("2026-11-01T10:00:00Z")));

    s.insert(&every(
        Duration::seconds(10),
        "2026-11-01T10:30:00Z",
        "2026-11-01T10:31:00Z",
        |_| false,
    ))
    .await;
    s.run("2026-11-01T10:31:00Z").await;
    let told = s.told_of("sla.no_data").await;
    assert_eq!(told.len(), 2);
    assert_eq!(told[1]["state"], "recovered");
    assert_eq!(told[1]["lastEventAt"], "2026-11-01T10:31:00Z");
}

#[tokio::test]
async fn hours_without_data_count_as_the_policy_says() {
    let hourly = |policy: &str| {
        format!(
            r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  window: {{calendar: month, timeZone: UTC}}
  objectives:
  - name: good-hours
    target: 99%
    timeSlices:
      sliceLength: 1h
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {{good: status < 500}}
{policy}"#
        )
    };
    // Two good hours, then three hours of silence; 05:00 is still running.
    let traffic = every(
        Duration::minutes(1),
        "2026-11-01T00:00:00Z",
        "2026-11-01T02:00:00Z",
        |_| false,
    );
    let mut tallies = Vec::new();
    for policy in [
        "",
        "  policy:\n    noData: {slices: bad}\n",
        "  policy:\n    noData: {slices: good}\n",
    ] {
        let s = Scenario::new(&hourly(policy), "2026-11-01", "2026-11-02").await;
        s.insert(&traffic).await;
        let run = s.run("2026-11-01T05:30:00Z").await;
        let t = run.evaluations[0].budget.tally;
        tallies.push((t.good, t.total));
    }
    // Ignored (the default): the mean is over the hours with data.
    assert_eq!(tallies, [(2, 2), (2, 5), (5, 5)]);
}

#[tokio::test]
async fn an_emergency_window_over_a_closed_month_is_judged_once_not_every_round() {
    let s = Scenario::new(MONTHLY, "2026-11-01", "2026-12-02").await;
    // Tracked from November's start.
    s.run("2026-11-01T00:00:00Z").await;
    s.insert(&every(
        Duration::minutes(1),
        "2026-11-10T00:00:00Z",
        "2026-11-10T10:00:00Z",
        |i| i % 50 == 0,
    ))
    .await;
    let run = s.run("2026-12-01T00:10:00Z").await;
    assert_eq!(run.closed.len(), 1);
    // Announced now, over November: an emergency window, which changes no
    // number. The next round judges November again (and writes nothing);
    // the rounds after it leave November alone.
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slaproof_store::slas::find(&mut tx, "chat-sla", None)
        .await
        .unwrap();
    slaproof_tests::maintenance::announced(
        &mut tx,
        Some(sla.id),
        at("2026-11-10T00:00:00Z"),
        at("2026-11-10T01:00:00Z"),
        "late notice",
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let judged = |s: &Scenario| {
        let db = s.db.clone();
        let tenant = s.tenant;
        async move {
            let mut tx = db.tenant_tx(tenant).await.unwrap();
            let at: Option<chrono::DateTime<chrono::Utc>> =
                sqlx::query_scalar("SELECT checked_at FROM period_checks")
                    .fetch_optional(&mut *tx)
                    .await
                    .unwrap();
            tx.commit().await.unwrap();
            at
        }
    };
    let before = judged(&s).await;
    assert!(s.run("2026-12-01T00:11:00Z").await.closed.is_empty());
    let after_change = judged(&s).await;
    assert_ne!(before, after_change, "judged again after the change");
    s.run("2026-12-01T00:12:00Z").await;
    s.run("2026-12-01T00:13:00Z").await;
    assert_eq!(judged(&s).await, after_change, "and not again");
}

#[tokio::test]
async fn a_gauges_alerts_look_back_from_before_its_scores_delay() {
    let document = |delay: &str| {
        format!(
            r#"
apiVersion: slaproof/v1
kind: SLA
metadata: {{name: chat-sla}}
spec:
  service: chat
  window: {{calendar: month, timeZone: UTC}}
  objectives:
  - name: quality
    target: 90%
    gauge: {{metric: quality_score, op: gte, value: 0.7}}
{delay}"#
        )
    };
    let mut fired = Vec::new();
    for delay in ["", "  policy:\n    gaugeDelay: 2h\n"] {
        let s = Scenario::new(&document(delay), "2026-11-01", "2026-11-02").await;
        s.run("2026-11-01T00:00:00Z").await;
        // A request a minute from 08:00 to 12:00; every score arrives two
        // hours after its request; from 11:00 to 12:00 all scores are bad.
        let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
        for m in 0..240i64 {
            let occurred = at("2026-11-01T08:00:00Z") + Duration::minutes(m);
            let request = format!("r{m}");
            sqlx::query(
                "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, request_id, status) \
                 VALUES ($1, $2, $3, $2, 'provider', 'chat', 'big', $4, 200)",
            )
            .bind(s.tenant.uuid())
            .bind(occurred)
            .bind(uuid::Uuid::now_v7())
            .bind(&request)
            .execute(&mut *tx)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO gauge_values (tenant_id, metric, service, request_id, value, received_at) \
                 VALUES ($1, 'quality_score', 'chat', $2, $3, $4)",
            )
            .bind(s.tenant.uuid())
            .bind(&request)
            .bind(if m >= 180 { 0.1 } else { 0.9 })
            .bind(occurred + Duration::hours(2))
            .execute(&mut *tx)
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();
        // The bad hour's scores arrive from 13:00 to 13:59.
        let run = s.run("2026-11-01T14:00:00Z").await;
        let quality = &run.evaluations[0];
        fired.push(
            quality
                .alerts
                .iter()
                .any(|a| a.rule.name == "page-1h" && a.fires),
        );
    }
    // Looking back from 14:00 (or, by default, from an hour before) the
    // hours hold no scored request: the page never sees the bad hour.
    // Looking back from two hours before, as the SLA says its scores
    // take, it does.
    assert_eq!(fired, [false, true]);
}

#[tokio::test]
async fn a_rolling_windows_signals_are_told_once_though_its_period_moves() {
    let rolling = MONTHLY.replace("{calendar: month, timeZone: UTC}", "{rolling: 7d}");
    let s = Scenario::new(&rolling, "2026-11-01", "2026-11-02").await;
    s.insert(&every(
        Duration::seconds(10),
        "2026-11-01T10:00:00Z",
        "2026-11-01T12:00:00Z",
        |i| i >= 540,
    ))
    .await;
    for as_of in [
        "2026-11-01T12:00:00Z",
        "2026-11-01T12:01:00Z",
        "2026-11-01T12:02:00Z",
    ] {
        s.run(as_of).await;
    }
    let at_risk = s.told_of("slo.at_risk").await;
    assert_eq!(at_risk.len(), 1, "{at_risk:?}");
    assert_eq!(s.told_of("slo.degrade_level_changed").await.len(), 1);
}

#[tokio::test]
async fn a_new_sla_is_not_missing_data_before_its_wait_has_passed() {
    let today = chrono::Utc::now().date_naive().to_string();
    let s = Scenario::new(MONTHLY, &today, &today).await;
    // Its rollups reach back three days, when nothing was asked of the
    // service: ten minutes after it was applied it is not "missing data".
    let soon = (chrono::Utc::now() + Duration::minutes(10)).to_rfc3339();
    s.run(&soon).await;
    assert!(s.told_of("sla.no_data").await.is_empty());
    let later = (chrono::Utc::now() + Duration::minutes(20)).to_rfc3339();
    s.run(&later).await;
    assert_eq!(s.told_of("sla.no_data").await.len(), 1);
}

#[tokio::test]
async fn light_degrade_counts_evaluated_minutes_not_rounds_that_repeat_one() {
    // Found in review: level 1 (burn ≥ 2.0 for three consecutive
    // evaluations) counted rounds, and rounds repeat the same minute
    // until the watermark moves: three rounds in one minute degraded.
    let s = Scenario::new(MONTHLY, "2026-10-28", "2026-12-02").await;
    s.insert(&every(
        Duration::seconds(10),
        "2026-11-01T00:00:00Z",
        "2026-11-10T11:50:00Z",
        |_| false,
    ))
    .await;
    // One request a second, one in 300 failed: every 5-minute lookback
    // holds one failure in 300, a burn rate of about 3.3 (light, not full).
    s.insert(&every(
        Duration::seconds(1),
        "2026-11-10T11:50:00Z",
        "2026-11-10T12:10:00Z",
        |i| i % 300 == 0,
    ))
    .await;
    let levels = async || -> Vec<(i64, i64)> {
        s.told_of("slo.degrade_level_changed")
            .await
            .iter()
            .map(|p| (p["from"].as_i64().unwrap(), p["to"].as_i64().unwrap()))
            .collect()
    };
    for _ in 0..4 {
        s.run("2026-11-10T12:00:00Z").await;
    }
    assert_eq!(levels().await, [], "one minute evaluated four times");
    s.run("2026-11-10T12:01:00Z").await;
    assert_eq!(levels().await, []);
    s.run("2026-11-10T12:02:00Z").await;
    assert_eq!(levels().await, [(0, 1)], "the third minute evaluated");
}
