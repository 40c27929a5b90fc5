//! Lateness is judged per period: an event counts when it arrives before
//! its period closes (the SLA's late grace after the period's end), however
//! long after its minute; what arrives after the close is counted apart.

use slaproof_domain::budget::Tally;
use slaproof_tests::scenario::{Request, Scenario, at};

const MONTHLY_WITH_GRACE: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
  policy:
    lateGrace: 1h
"#;

fn late(occurred: &str, received: &str, good: bool) -> Request {
    Request {
        received_at: at(received),
        ..Request::at(at(occurred), good)
    }
}

#[tokio::test]
async fn an_event_counts_until_its_period_closes_and_the_close_waits_for_the_slas_grace() {
    let s = Scenario::new(MONTHLY_WITH_GRACE, "2026-11-01", "2026-12-02").await;
    // A day of good requests, one a minute.
    let good: Vec<_> = (0..1440)
        .map(|m| {
            Request::at(
                at("2026-11-10T00:00:00Z") + chrono::Duration::minutes(m),
                true,
            )
        })
        .collect();
    s.insert(&good).await;
    s.insert(&[
        // A failed request reported twenty minutes after it happened (a
        // long stream, a slow clock, telemetry held up by an incident):
        // the month is open, so it counts. Judged by its minute, it was
        // dropped.
        late("2026-11-10T10:00:00Z", "2026-11-10T10:20:00Z", false),
        // Reported three weeks later, still before the month closes.
        late("2026-11-10T11:00:00Z", "2026-12-01T00:30:00Z", false),
    ])
    .await;
    let run = s.run("2026-11-20T00:00:00Z").await;
    let e = &run.evaluations[0];
    assert_eq!(
        e.budget.tally,
        Tally {
            good: 1440,
            total: 1441
        }
    );
    assert_eq!(e.late_folded, 1);
    assert_eq!(e.late.total, 0);

    // The month ends at midnight and closes an hour later (the SLA's
    // lateGrace), not five minutes later (the platform's default).
    assert!(s.run("2026-12-01T00:59:00Z").await.closed.is_empty());
    s.insert(&[
        // Received after the close: counted apart, not in the verdict.
        late("2026-11-10T12:00:00Z", "2026-12-01T01:30:00Z", false),
    ])
    .await;
    let run = s.run("2026-12-01T01:00:00Z").await;
    assert_eq!(run.closed.len(), 1);
    let closed = &run.closed[0].evaluation;
    assert_eq!(
        closed.budget.tally,
        Tally {
            good: 1440,
            total: 1442
        }
    );
    assert_eq!(closed.late_folded, 2);
    let run = s.run("2026-12-01T01:31:00Z").await;
    assert!(
        run.closed.is_empty(),
        "a late event does not reopen the month"
    );
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let late_total: i64 = sqlx::query_scalar(
        "SELECT sum(late_total)::int8 FROM evaluator_rollups WHERE objective = 'availability'",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(late_total, 1);

    // The closed month shows it: none late when it was frozen, one now,
    // and that one bad (found in review: events arriving after a close
    // never showed on the closed period).
    let (app, admin) = s.app().await;
    let periods = app.sla_periods(&admin, "chat-sla").await.unwrap();
    let november = periods
        .periods
        .iter()
        .find(|p| p.objective == "availability")
        .unwrap();
    assert_eq!(november.period_start, at("2026-11-01T00:00:00Z"));
    assert_eq!(
        (
            november.late_total,
            november.late_total_now,
            november.late_good_now
        ),
        (0, 1, 0),
        "{november:?}"
    );
}

#[tokio::test]
async fn with_late_corrections_telemetry_after_the_close_corrects_the_month_with_a_new_revision() {
    let document = MONTHLY_WITH_GRACE.replace(
        "    lateGrace: 1h\n",
        "    lateGrace: 1h\n    lateCorrections: true\n",
    );
    let s = Scenario::new(&document, "2026-11-01", "2026-12-31").await;
    s.run("2026-11-01T00:00:00Z").await;
    // 99 good requests and one failed: exactly 99%, met.
    let mut requests: Vec<_> = (0..99)
        .map(|m| {
            Request::at(
                at("2026-11-10T00:00:00Z") + chrono::Duration::minutes(m),
                true,
            )
        })
        .collect();
    requests.push(Request::at(at("2026-11-10T02:00:00Z"), false));
    s.insert(&requests).await;
    let run = s.run("2026-12-01T01:00:00Z").await;
    assert_eq!(run.closed.len(), 1);
    assert!(run.closed[0].evaluation.budget.met());

    // A failed request of November reported on December 3rd, after the
    // close but before December ends: it counts, and corrects November.
    s.insert(&[late("2026-11-10T03:00:00Z", "2026-12-03T00:00:00Z", false)])
        .await;
    let run = s.run("2026-12-03T00:01:00Z").await;
    assert_eq!(run.closed.len(), 1, "{:?}", run.closed);
    let corrected = &run.closed[0];
    assert_eq!(corrected.revision, 2);
    assert_eq!(
        corrected.evaluation.budget.tally,
        Tally {
            good: 99,
            total: 101
        }
    );
    assert!(!corrected.evaluation.budget.met());
    let breaches = s.told_of("sla.breached").await;
    assert_eq!(breaches.len(), 1);
    assert_eq!(breaches[0]["revision"], 2);
    // Nothing new: nothing judged again.
    assert!(s.run("2026-12-03T00:02:00Z").await.closed.is_empty());

    // After December ends, November is final: later telemetry is late.
    s.insert(&[late("2026-11-10T04:00:00Z", "2027-01-01T00:30:00Z", true)])
        .await;
    let run = s.run("2027-01-01T00:31:00Z").await;
    assert!(
        run.closed
            .iter()
            .all(|c| c.evaluation.period.start != at("2026-11-01T00:00:00Z")),
        "{:?}",
        run.closed
    );
}
