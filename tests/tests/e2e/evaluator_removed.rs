//! Objectives a new SLA version removes: their firing burn-rate alerts and
//! in-period signals are resolved at the next round, told once with the
//! reason, instead of firing forever.

use chrono::{Days, Duration, Utc};
use serde_json::Value;
use slaproof_domain::minute::floor_minute;
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::slas;
use slaproof_tests::scenario::{Request, Scenario};

const TWO_OBJECTIVES: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  window: {rolling: 7d}
  objectives:
  - name: availability
    target: 99%
    ratio: {good: status < 500}
  - name: served
    target: 99%
    ratio: {good: status < 500}
"#;

/// The `slo.burn_rate_alert` messages about `objective`.
fn alerts_of<'a>(told: &'a [Value], objective: &str) -> Vec<&'a Value> {
    told.iter()
        .filter(|p| p["objective"] == objective)
        .collect()
}

#[tokio::test]
async fn alerts_of_a_removed_objective_are_resolved_once() {
    // A version takes effect when it is applied (at once, for a rolling
    // window): the rounds run around the real clock.
    let now = floor_minute(Utc::now());
    let today = now.date_naive();
    let s = Scenario::new(
        TWO_OBJECTIVES,
        &(today - Days::new(1)).to_string(),
        &(today + Days::new(1)).to_string(),
    )
    .await;
    let round = |at: chrono::DateTime<Utc>| at.to_rfc3339();
    // An hour of failures: every page rule fires for both objectives.
    let start = now - Duration::hours(2);
    let failing: Vec<Request> = (0..120)
        .map(|i| Request::at(start + Duration::seconds(30 * i), false))
        .collect();
    s.insert(&failing).await;
    s.run(&round(start + Duration::hours(1))).await;
    let told = s.told_of("slo.burn_rate_alert").await;
    let fired = alerts_of(&told, "served");
    assert!(!fired.is_empty(), "{told:?}");
    assert!(fired.iter().all(|p| p["state"] == "firing"), "{fired:?}");
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let (at_risk,): (bool,) =
        sqlx::query_as("SELECT at_risk FROM objective_signals WHERE objective = 'served'")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    assert!(at_risk);
    tx.commit().await.unwrap();

    // Version 2 keeps availability only.
    let v2 = TWO_OBJECTIVES
        .split("  - name: served")
        .next()
        .unwrap()
        .to_owned();
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    slas::apply(&mut tx, &SlaDefinition::from_document(&v2).unwrap())
        .await
        .unwrap();
    tx.commit().await.unwrap();

    // After the apply, by the clock: the setup may have crossed a minute,
    // and a round before the apply would still be version 1's.
    let applied = floor_minute(Utc::now());
    s.run(&round(applied + Duration::minutes(1))).await;
    let told = s.told_of("slo.burn_rate_alert").await;
    let resolved: Vec<&Value> = alerts_of(&told, "served")
        .into_iter()
        .filter(|p| p["state"] == "resolved")
        .collect();
    // Each rule that fired is resolved, once, saying why.
    assert_eq!(resolved.len(), fired.len(), "{told:?}");
    for p in &resolved {
        assert_eq!(p["reason"], "objective removed", "{p}");
        assert_eq!(p["version"], 2, "{p}");
        assert_eq!(p["slaName"], "chat-sla", "{p}");
    }
    let mut rules: Vec<&str> = resolved
        .iter()
        .map(|p| p["rule"].as_str().unwrap())
        .collect();
    rules.sort_unstable();
    let mut fired_rules: Vec<&str> = fired.iter().map(|p| p["rule"].as_str().unwrap()).collect();
    fired_rules.sort_unstable();
    assert_eq!(rules, fired_rules);
    // The objective still there is judged on its events, as before.
    assert!(
        alerts_of(&told, "availability")
            .iter()
            .all(|p| p.get("reason").is_none()),
        "{told:?}"
    );
    // Its in-period signals are cleared, and the recovery told.
    let recovered = s.told_of("slo.at_risk").await;
    let recovered: Vec<&Value> = recovered
        .iter()
        .filter(|p| p["objective"] == "served" && p["state"] == "recovered")
        .collect();
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["reason"], "objective removed");

    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let firing: Vec<(String, bool)> =
        sqlx::query_as("SELECT rule, firing FROM alert_states WHERE objective = 'served'")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    assert!(
        !firing.is_empty() && firing.iter().all(|(_, f)| !f),
        "{firing:?}"
    );
    let (at_risk, exhausted, level): (bool, bool, i16) = sqlx::query_as(
        "SELECT at_risk, exhausted, degrade_level FROM objective_signals WHERE objective = 'served'",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    assert_eq!((at_risk, exhausted, level), (false, false, 0));
    tx.commit().await.unwrap();

    // Told once: later rounds say nothing more about it.
    let before = s.told().await.len();
    s.run(&round(applied + Duration::minutes(2))).await;
    let after = s.told().await;
    assert!(
        after[before..]
            .iter()
            .all(|(_, p)| p["objective"] != "served"),
        "{:?}",
        &after[before..]
    );
}
