//! A new SLA learns the events received before it was first seen in
//! bounded chunks, one a round, and is judged only once it knows them all:
//! no round's transaction reads a whole year of history.

use chrono::Duration;
use slaproof_domain::budget::Tally;
use slaproof_domain::sla::SlaDefinition;
use slaproof_tests::scenario::{Request, Scenario, at, settings};

const FIRST: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata: {name: first}
spec:
  service: chat
  window: {calendar: month, timeZone: UTC}
  objectives:
  - {name: availability, target: 99%, ratio: {good: status < 500}}
"#;

#[tokio::test]
async fn a_new_sla_learns_its_history_a_chunk_a_round_and_is_judged_once_it_knows_it_all() {
    let s = Scenario::new(FIRST, "2026-11-01", "2026-11-10").await;
    // 250 requests on the 9th, 5 of them failed, all rolled up for the
    // first SLA before the second exists.
    let requests: Vec<_> = (0..250)
        .map(|i| {
            Request::at(
                at("2026-11-09T00:00:00Z") + Duration::minutes(i),
                i % 50 != 0,
            )
        })
        .collect();
    s.insert(&requests).await;
    s.run("2026-11-09T12:00:00Z").await;

    let second = FIRST.replace("name: first", "name: second");
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    slaproof_store::slas::apply(&mut tx, &SlaDefinition::from_document(&second).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();

    // 100 events a round: the second SLA is learning for two rounds, and
    // judged in the third, with all 250.
    let small = slaproof_evaluator::Settings {
        backfill_events_per_round: 100,
        ..settings()
    };
    let judged = |run: &slaproof_evaluator::TenantRun| {
        run.evaluations
            .iter()
            .find(|e| e.sla_name == "second")
            .map(|e| e.budget.tally)
    };
    for minute in ["12:01", "12:02"] {
        let run = s
            .run_with(&format!("2026-11-09T{minute}:00Z"), &small)
            .await;
        assert_eq!(judged(&run), None, "still learning at {minute}");
        // The first SLA goes on being judged meanwhile.
        assert!(run.evaluations.iter().any(|e| e.sla_name == "first"));
    }
    let run = s.run_with("2026-11-09T12:03:00Z", &small).await;
    assert_eq!(
        judged(&run),
        Some(Tally {
            good: 245,
            total: 250
        })
    );
    // And each event once: the next round agrees.
    let run = s.run_with("2026-11-09T12:04:00Z", &small).await;
    assert_eq!(
        judged(&run),
        Some(Tally {
            good: 245,
            total: 250
        })
    );
}
