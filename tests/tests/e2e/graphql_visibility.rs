//! GraphQL introspection shows each caller the operations it may call: the transparency log's and the evaluation status's fields, like every other, are hidden from a role whose scopes their REST operations refuse.

use std::collections::BTreeSet;

use slaproof_tests::world::{World, world};

/// The fields of `Query` and `Mutation` introspection shows to `token`.
async fn root_fields(w: &World, token: &str) -> BTreeSet<String> {
    let answer = w
        .graphql(
            token,
            "{ q: __type(name: \"Query\") { fields { name } } m: __type(name: \"Mutation\") { fields { name } } }",
        )
        .await;
    assert!(answer["errors"].is_null(), "{answer}");
    ["q", "m"]
        .iter()
        .flat_map(|root| {
            answer["data"][root]["fields"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Which of `fields` `seen` holds, and which it lacks.
fn split<'a>(seen: &BTreeSet<String>, fields: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    fields.iter().partition(|f| seen.contains(**f))
}

const LOG_HEADS: [&str; 2] = ["treeHeads", "treeConsistency"];
const REQUESTS: [&str; 3] = ["requestProof", "requestCheck", "checkRequests"];

#[tokio::test]
async fn introspection_hides_the_log_and_the_evaluation_status_from_callers_they_refuse() {
    let w = world().await;

    // A provider's admin holds every scope: every field is shown.
    let admin = root_fields(&w, &w.token(&["provider_admin"], None)).await;
    let all: Vec<&str> = LOG_HEADS
        .iter()
        .chain(&REQUESTS)
        .chain(&["lastRequestCheck", "evaluationStatus"])
        .copied()
        .collect();
    assert_eq!(split(&admin, &all).1, Vec::<&str>::new(), "{admin:?}");

    // An auditor (attestation:read only) reads the log's heads and its own
    // last check, proves and checks no request, and has no status to read.
    let auditor = root_fields(&w, &w.token(&["auditor"], None)).await;
    assert_eq!(split(&auditor, &LOG_HEADS).1, Vec::<&str>::new());
    assert!(auditor.contains("lastRequestCheck"), "{auditor:?}");
    assert_eq!(split(&auditor, &REQUESTS).0, Vec::<&str>::new());
    assert!(!auditor.contains("evaluationStatus"), "{auditor:?}");

    // An operations viewer (sla:read) sees the status, nothing of the log.
    let viewer = root_fields(&w, &w.token(&["operations_viewer"], None)).await;
    assert!(viewer.contains("evaluationStatus"), "{viewer:?}");
    let log: Vec<&str> = LOG_HEADS
        .iter()
        .chain(&REQUESTS)
        .chain(&["lastRequestCheck"])
        .copied()
        .collect();
    assert_eq!(split(&viewer, &log).0, Vec::<&str>::new(), "{viewer:?}");

    // A customer's admin proves its own requests, but the provider's
    // evaluation status is not its to read (REST answers it 403).
    let customer = root_fields(&w, &w.token(&["customer_admin"], Some(w.acme))).await;
    assert_eq!(split(&customer, &REQUESTS).1, Vec::<&str>::new());
    assert!(!customer.contains("evaluationStatus"), "{customer:?}");
}
