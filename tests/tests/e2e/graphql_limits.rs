//! GraphQL's limits over real HTTP (issue #11, "GraphQL fan-out"): no type
//! leads back to a list of its own kind, a query's cost counts the items
//! its lists may hold, its root fields and fields are bounded, and so are
//! the reads it makes; the dashboard and console queries still answer.
//!
//! The time budget (10 s) is a constant the tests cannot shorten; its unit
//! test is in `services/api/src/graphql/limits.rs`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use slaproof_tests::world::{World, world, world_with};

/// The provider's admin and the customer's own user (what an embedded
/// dashboard holds), as GraphQL callers of [`World`].
trait Callers {
    fn admin(&self) -> String;
    fn customer(&self) -> String;
}

impl Callers for World {
    fn admin(&self) -> String {
        self.token(&["provider_admin"], None)
    }

    fn customer(&self) -> String {
        self.token(&["customer_admin"], Some(self.acme))
    }
}

fn messages(answer: &Value) -> Vec<String> {
    answer["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The `extensions.limit` of each of the answer's errors.
fn limits(answer: &Value) -> Vec<String> {
    answer["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| e["extensions"]["limit"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `field` nested `times` deep around `inner`.
fn nested(field: &str, times: usize, inner: &str) -> String {
    format!(
        "{}{inner}{}",
        format!("{field} {{ ").repeat(times),
        " }".repeat(times)
    )
}

#[tokio::test]
async fn versions_are_sla_versions_which_cannot_nest_versions() {
    let w = world().await;
    // The issue's query: `versions` seven deep. The old schema answered it
    // (each version an `Sla` with `versions` again); now it does not
    // validate, before anything runs.
    let old = format!(
        r#"{{ sla(name: "acme-enterprise") {{ {} }} }}"#,
        nested("versions", 7, "version")
    );
    let answer = w.graphql(&w.customer(), &old).await;
    assert!(answer["data"].is_null(), "{answer}");
    assert!(
        messages(&answer)
            .iter()
            .any(|m| m.contains(r#"Unknown field "versions" on type "SlaVersion""#)),
        "{answer}"
    );

    // A version is its promise as applied: service, customer, objectives.
    let answer = w
        .graphql(
            &w.customer(),
            r#"{ sla(name: "acme-enterprise") { versions { __typename version service customerRef objectives { name targetPpm } } } }"#,
        )
        .await;
    assert!(answer["errors"].is_null(), "{answer}");
    let versions = answer["data"]["sla"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{answer}");
    assert_eq!(versions[0]["__typename"], "SlaVersion");
    assert_eq!(versions[0]["customerRef"], "acme-corp");
    assert_eq!(versions[0]["objectives"].as_array().unwrap().len(), 4);
}

/// The object types of the schema and, for each, the object types its
/// fields answer (lists and non-null unwrapped), as introspection shows
/// them to `token`; introspection's own types left out.
async fn object_graph(w: &World, token: &str) -> BTreeMap<String, BTreeSet<String>> {
    let answer = w
        .graphql(
            token,
            "{ __schema { types { name kind fields { type { name kind ofType { name kind ofType { name kind ofType { name kind } } } } } } } }",
        )
        .await;
    assert!(answer["errors"].is_null(), "{answer}");
    fn named(mut ty: &Value) -> Option<&str> {
        while ty["name"].is_null() {
            ty = &ty["ofType"];
            if ty.is_null() {
                return None;
            }
        }
        (ty["kind"] == "OBJECT").then(|| ty["name"].as_str().unwrap())
    }
    let mut graph = BTreeMap::new();
    for ty in answer["data"]["__schema"]["types"].as_array().unwrap() {
        let name = ty["name"].as_str().unwrap();
        if ty["kind"] != "OBJECT" || name.starts_with("__") {
            continue;
        }
        let targets = ty["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| named(&f["type"]))
            .filter(|t| !t.starts_with("__"))
            .map(str::to_owned)
            .collect();
        graph.insert(name.to_owned(), targets);
    }
    graph
}

/// A path of types from `from` back to itself, if there is one.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_owned()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        for next in graph.get(last).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[tokio::test]
async fn no_type_of_the_schema_leads_back_to_itself() {
    let w = world().await;
    // The operator sees the tenant fields too, the provider the rest; the
    // old schema had Sla -> versions -> Sla.
    let provider = object_graph(&w, &w.admin()).await;
    assert!(provider.contains_key("SlaVersion"), "{provider:?}");
    let operator = object_graph(&w, &w.token(&["operator"], None)).await;
    for graph in [provider, operator] {
        for ty in graph.keys() {
            assert_eq!(cycle_from(&graph, ty), None, "{graph:?}");
        }
    }
}

#[tokio::test]
async fn a_query_whose_lists_cost_more_than_the_limit_is_refused_before_it_runs() {
    let w = world().await;
    let admin = w.admin();
    // 200 items × 7 fields and a read: 1,410 points, and 11 for the
    // missing SLA, over the default 500, where the old count (one per
    // field) made it 10. The missing SLA would answer NOT_FOUND if anything
    // ran.
    let page = "edges { cursor node { id name currentVersion customerRef } }";
    let big = format!(
        r#"{{ slas(first: 200) {{ {page} }} missing: sla(name: "no-such-sla") {{ name }} }}"#
    );
    let answer = w.graphql(&admin, &big).await;
    assert!(answer["data"].is_null(), "{answer}");
    assert_eq!(limits(&answer), ["complexity"], "{answer}");
    let message = &messages(&answer)[0];
    assert!(
        message.contains("complexity is 1421 points") && message.contains("limit of 500"),
        "{message}"
    );
    assert_eq!(answer["errors"][0]["extensions"]["code"], "LIMIT_EXCEEDED");

    // The same selection on a page of 50 (the default) costs 371: it runs.
    let small = format!(r#"{{ slas {{ {page} }} missing: sla(name: "no-such-sla") {{ name }} }}"#);
    let answer = w.graphql(&admin, &small).await;
    assert_eq!(
        answer["data"]["slas"]["edges"][0]["node"]["name"], "acme-enterprise",
        "{answer}"
    );
    assert_eq!(answer["errors"][0]["extensions"]["code"], "NOT_FOUND");

    // Lists read whole count as a page of 50 each: 10 + 310 + 310 points
    // (the old count: 15).
    let answer = w
        .graphql(
            &admin,
            r#"{ sla(name: "acme-enterprise") { breaches { objective periodStart periodEnd revision targetPpm compliancePpm } maintenanceWindows { id sla startsAt endsAt description cancelledAt } } }"#,
        )
        .await;
    assert_eq!(limits(&answer), ["complexity"], "{answer}");
    assert!(
        messages(&answer)[0].contains("complexity is 630 points"),
        "{answer}"
    );
}

#[tokio::test]
async fn more_than_ten_root_fields_are_refused_aliases_and_fragments_included() {
    let w = world().await;
    let token = w.customer();
    let aliased = |n: usize| -> String {
        (0..n)
            .map(|i| format!(r#"s{i}: sla(name: "acme-enterprise") {{ name }}"#))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The old schema answered any number (each root field cost 2 points).
    let answer = w.graphql(&token, &format!("{{ {} }}", aliased(11))).await;
    assert!(answer["data"].is_null(), "{answer}");
    assert_eq!(limits(&answer), ["root_fields"], "{answer}");
    assert!(
        messages(&answer)[0].contains("11 root fields, more than the limit of 10"),
        "{answer}"
    );
    let spread = format!(
        "{{ s10: slas {{ edges {{ cursor }} }} ...Ten }} fragment Ten on Query {{ {} }}",
        aliased(10)
    );
    let answer = w.graphql(&token, &spread).await;
    assert_eq!(limits(&answer), ["root_fields"], "{answer}");

    let answer = w.graphql(&token, &format!("{{ {} }}", aliased(10))).await;
    assert!(answer["errors"].is_null(), "{answer}");
    assert_eq!(answer["data"]["s9"]["name"], "acme-enterprise");
}

#[tokio::test]
async fn fragments_that_multiply_are_refused_by_their_field_count() {
    let w = world().await;
    // Twelve fragments each spreading the next twice: 4,097 fields. The old
    // schema walked every one of them (and refused the query only as "too
    // complex"); now it is measured without being walked.
    let mut bomb = String::from(r#"{ sla(name: "acme-enterprise") { ...F0 } }"#);
    for i in 0..12 {
        bomb.push_str(&format!(
            " fragment F{i} on Sla {{ ...F{next} ...F{next} }}",
            next = i + 1
        ));
    }
    bomb.push_str(" fragment F12 on Sla { name }");
    let answer = w.graphql(&w.customer(), &bomb).await;
    assert_eq!(limits(&answer), ["fields"], "{answer}");
    assert!(
        messages(&answer)[0].contains("4097 fields, more than the limit of 1000"),
        "{answer}"
    );

    // Depth (12 here): refused naming the setting.
    let deep = format!(
        "{{ __schema {{ types {{ fields {{ type {{ {} }} }} }} }} }}",
        nested("ofType", 7, "name")
    );
    let answer = w.graphql(&w.customer(), &deep).await;
    assert_eq!(limits(&answer), ["depth"], "{answer}");
    assert!(
        messages(&answer)[0].contains("nested too deep: more than 10 levels"),
        "{answer}"
    );
}

#[tokio::test]
async fn reads_past_the_budget_are_refused_when_the_cost_limit_is_raised() {
    // Each read costs at least 10 points, so under the default cost limit
    // only bare reads come near 40; a deployment that raises the cost
    // limit still has the read budget.
    let w = world_with(|config| config.api.graphql_max_complexity = 100_000).await;
    let reads = (0..45)
        .map(|i| format!("c{i}: compliance {{ objective }}"))
        .collect::<Vec<_>>()
        .join(" ");
    let answer = w
        .graphql(
            &w.customer(),
            &format!(r#"{{ sla(name: "acme-enterprise") {{ {reads} }} }}"#),
        )
        .await;
    // `sla` and 45 `compliance`: 46 reads, 6 past the 40 the old code
    // never counted.
    let refused = limits(&answer);
    assert_eq!(refused.len(), 6, "{answer}");
    assert!(refused.iter().all(|l| l == "app_reads"), "{answer}");
    assert!(
        messages(&answer)[0].contains("more than 40 times"),
        "{answer}"
    );
}

#[tokio::test]
async fn the_dashboard_and_console_queries_still_answer() {
    let w = world().await;
    // What the embedded dashboard asks (the benchmark's query).
    let dashboard = r#"{ dashboard(sla: "acme-enterprise") { objectives { objective family compliance { met compliancePpm budgetRemaining burnRateMilli } minutes { minute good total ratioPpm maintenance } } percentiles { minute latency { count p50Us p95Us p99Us } ttft { count p50Us p95Us p99Us } tpot { count p50Us p95Us p99Us } maintenance } } }"#;
    let answer = w.graphql(&w.customer(), dashboard).await;
    assert!(answer["errors"].is_null(), "{answer}");
    assert_eq!(
        answer["data"]["dashboard"]["objectives"]
            .as_array()
            .unwrap()
            .len(),
        4
    );

    // A provider console's page of one SLA and a short list: nearly every
    // read there is, 481 points. Versions answer `SlaVersion`, which the
    // old schema did not have (so this test fails on it); the rest guards
    // the new limits against being too tight.
    let console = r#"{
        slas(first: 10) { edges { node { name currentVersion customerRef } } pageInfo { hasNextPage endCursor } }
        sla(name: "acme-enterprise") {
            id name displayName service customerRef version currentVersion
            objectives { name displayName family kind targetPpm definition }
            compliance { objective family met compliancePpm budgetRemaining burnRateMilli }
            budgetStatus { exhausted objectives { objective budgetRemaining burnRateMilli exhausted } }
            alerts { objective rule firing changedAt }
            breaches { objective periodStart compliancePpm }
            versions { __typename version }
            export
            dashboard { objectives { objective minutes { minute good total } } }
        }
        customers(first: 5) { edges { node { externalRef } } }
    }"#;
    let answer = w.graphql(&w.admin(), console).await;
    assert!(answer["errors"].is_null(), "{answer}");
    assert_eq!(
        answer["data"]["sla"]["versions"][0]["__typename"],
        "SlaVersion"
    );
    assert_eq!(
        answer["data"]["customers"]["edges"][0]["node"]["externalRef"],
        "acme-corp"
    );
}
