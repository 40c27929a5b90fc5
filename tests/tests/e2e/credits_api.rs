//! Credits through the real HTTP server: the ledger listed and exported (CSV and JSON), one credit, a period's statement (JSON and the printable page), fees recorded and refused, a recomputation asked for, each caller seeing what its token allows; and the same over GraphQL.
//!
//! The month is closed by the evaluator and credited by the compensation
//! worker, driven round by round on the database an API-only server reads,
//! so that nothing runs on the wall clock behind the test's back.

use std::net::SocketAddr;

use chrono::{DateTime, Datelike, Duration, Months, TimeZone, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof_domain::ids::CustomerId;
use slaproof_store::customers;
use slaproof_tests::fixtures::{self, trust_test_key};
use slaproof_tests::scenario::{Request, Scenario, at};
use tokio_util::sync::CancellationToken;

/// One objective with a tier table: 10% of the fee below 99.9%, capped at
/// 30% of the fee.
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
  credits:
    currency: EUR
    capPercentOfFee: 30
    tiered:
    - objective: availability
      tiers:
      - {below: "99.9", percent: "10"}
      - {below: "99", percent: "25"}
"#;

/// November's start in a path: RFC 3339, URL-encoded.
const NOVEMBER: &str = "2026-11-01T00%3A00%3A00Z";

/// A tenant whose November closed breached (1000 requests, 5 failed:
/// 99.5%), an API server over its database, and a second customer.
struct Platform {
    s: Scenario,
    address: SocketAddr,
    http: reqwest::Client,
    acme: CustomerId,
    beta: CustomerId,
    stop: CancellationToken,
}

impl Platform {
    async fn start() -> Self {
        Self::for_month(at("2026-11-01T00:00:00Z")).await
    }

    /// The same, with the closed month starting at `month` (a UTC month's
    /// first midnight): the requests from its 10th, the close an hour
    /// after it ends.
    async fn for_month(month: DateTime<Utc>) -> Self {
        let end = month.checked_add_months(Months::new(1)).unwrap();
        let s = Scenario::new(
            TIERED,
            &month.date_naive().to_string(),
            &(end + Duration::days(1)).date_naive().to_string(),
        )
        .await;
        let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
        let acme = customers::find_by_ref(&mut tx, "acme-corp")
            .await
            .unwrap()
            .unwrap()
            .id;
        let beta = customers::create(&mut tx, "beta-inc", "Beta <Inc> & Co")
            .await
            .unwrap()
            .id;
        tx.commit().await.unwrap();
        // The SLA is seen from the month's start: the month is its to judge.
        s.run(&month.to_rfc3339()).await;
        let requests: Vec<Request> = (0..1000)
            .map(|i| Request::at(month + Duration::days(9) + Duration::minutes(i), i >= 5))
            .collect();
        s.insert(&requests).await;
        s.run(&(end + Duration::hours(1)).to_rfc3339()).await;

        let mut config = slaproof::Config::default();
        config.server.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        trust_test_key(&mut config);
        let api = slaproof::Application::build(config, s.db.clone(), &[slaproof::Service::Api])
            .await
            .unwrap();
        let address = api.local_addr();
        let stop = CancellationToken::new();
        tokio::spawn(api.run(stop.clone()));
        Self {
            s,
            address,
            http: reqwest::Client::new(),
            acme,
            beta,
            stop,
        }
    }

    fn token(&self, roles: &[&str], customer: Option<CustomerId>) -> String {
        fixtures::token(self.s.tenant, roles, customer)
    }

    async fn call(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        fixtures::call(&self.http, self.address, token, method, path, body).await
    }

    /// A GET answered as text, with its content type.
    async fn text(
        &self,
        token: &str,
        path: &str,
    ) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let response = self
            .http
            .get(format!("http://{}{path}", self.address))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, response.text().await.unwrap())
    }

    async fn graphql(&self, token: &str, query: &str) -> Value {
        let (status, body) = self
            .call(token, "POST", "/graphql", Some(json!({ "query": query })))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// The credit total of the statement of the period starting at
    /// `period` (RFC 3339, URL-encoded), as the provider reads it.
    async fn statement_total(&self, token: &str, period: &str) -> Value {
        let (status, statement) = self
            .call(
                token,
                "GET",
                &format!("/v1/slas/chat-sla/credits/{period}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{statement}");
        statement["total"].clone()
    }

    /// Runs the compensation worker until no credit job is due.
    async fn compensate(&self) {
        let settings = slaproof_compensation::Settings::default();
        while slaproof_compensation::work_due(&self.s.db, &settings, "credits-api")
            .await
            .unwrap()
            > 0
        {}
    }
}

impl Drop for Platform {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn fee(effective_from: &str, currency: &str, amount: &str) -> Value {
    json!({"effective_from": effective_from, "currency": currency, "amount": amount})
}

#[tokio::test]
async fn the_ledger_statements_and_fees_through_rest() {
    let p = Platform::start().await;
    let admin = p.token(&["provider_admin"], None);

    // Fees: refused by name, recorded, refused again at the same instant.
    let fees = "/v1/customers/acme-corp/fees";
    for (body, field) in [
        (fee("2026-01-01T00:00:00Z", "EURO", "1000.00"), "currency"),
        (fee("2026-01-01T00:00:00Z", "EUR", "1000.001"), "amount"),
        (fee("2026-01-01T00:00:00Z", "EUR", "-1.00"), "amount"),
        (json!({"currency": "EUR", "amount": "1.00"}), "body"),
    ] {
        let (status, problem) = p.call(&admin, "POST", fees, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["field"], field, "{problem}");
    }
    let (status, recorded) = p
        .call(
            &admin,
            "POST",
            fees,
            Some(fee("2026-01-01T00:00:00Z", "EUR", "1000.00")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{recorded}");
    assert_eq!(
        (
            &recorded["amount"],
            &recorded["amount_minor"],
            &recorded["currency"]
        ),
        (&json!("1000.00"), &json!(100_000), &json!("EUR"))
    );
    let (status, again) = p
        .call(
            &admin,
            "POST",
            fees,
            Some(fee("2026-01-01T00:00:00Z", "EUR", "1200.00")),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    let (status, listed) = p.call(&admin, "GET", fees, None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    let (status, _) = p
        .call(&admin, "GET", "/v1/customers/nobody/fees", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Recomputed with the fee on file: 10% of 1000.00 = 100.00.
    let (status, queued) = p
        .call(
            &admin,
            "POST",
            &format!("/v1/slas/chat-sla/credits/{NOVEMBER}/recompute"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    for (start, field) in [
        ("yesterday", "period_start"),
        ("2026-10-01T00%3A00%3A00Z", "period_start"),
    ] {
        let (status, problem) = p
            .call(
                &admin,
                "POST",
                &format!("/v1/slas/chat-sla/credits/{start}/recompute"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["field"], field);
    }
    p.compensate().await;

    // The ledger.
    let (status, page) = p.call(&admin, "GET", "/v1/credits", None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let credits = page["data"].as_array().unwrap();
    assert_eq!(credits.len(), 1, "{page}");
    assert!(page.get("next_cursor").is_none(), "{page}");
    let credit = &credits[0];
    assert_eq!(
        (&credit["kind"], &credit["total"], &credit["amount_minor"]),
        (&json!("issued"), &json!("100.00"), &json!(10_000))
    );
    assert_eq!(credit["customer_ref"], "acme-corp");
    assert_eq!(credit["period_start"], "2026-11-01T00:00:00Z");
    assert_eq!(credit["computation"]["computation"]["raw"], "100");
    let id = credit["id"].as_str().unwrap().to_owned();
    for filtered in [
        "/v1/credits?customer_ref=acme-corp&sla=chat-sla&from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z",
        "/v1/credits?limit=1",
    ] {
        let (status, page) = p.call(&admin, "GET", filtered, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(page["data"].as_array().unwrap().len(), 1, "{filtered}");
    }
    for other in [
        "/v1/credits?customer_ref=beta-inc",
        "/v1/credits?sla=nope",
        "/v1/credits?from=2026-12-01T00:00:00Z",
    ] {
        let (status, page) = p.call(&admin, "GET", other, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(page["data"].as_array().unwrap().is_empty(), "{other}");
    }
    // Bad query values are problems naming what is wrong, never a 500.
    for (bad, field) in [
        ("/v1/credits?from=last-week", "query"),
        ("/v1/credits?limit=0", "limit"),
        ("/v1/credits?limit=many", "query"),
        ("/v1/credits?cursor=zz", "cursor"),
        ("/v1/credits/export?format=xml", "format"),
        ("/v1/credits/export?to=soon", "query"),
    ] {
        let (status, problem) = p.call(&admin, "GET", bad, None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {problem}");
        assert_eq!(problem["field"], field, "{bad}: {problem}");
    }

    // One credit.
    let (status, one) = p
        .call(&admin, "GET", &format!("/v1/credits/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(&one, credit);
    let (status, _) = p.call(&admin, "GET", "/v1/credits/cred_nope", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The export: CSV by default, JSON when asked.
    let (status, headers, csv) = p.text(&admin, "/v1/credits/export").await;
    assert_eq!(status, StatusCode::OK, "{csv}");
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"credits.csv\""
    );
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("id,kind,sla,customer_ref,period_start,period_end,"),
        "{csv}"
    );
    let line = lines.next().unwrap();
    assert!(
        line.starts_with(&format!("{id},issued,chat-sla,acme-corp,"))
            && line.contains(",EUR,100.00,10000,100.00,10000,"),
        "{line}"
    );
    assert!(lines.next().is_none(), "{csv}");
    let (status, exported) = p
        .call(
            &admin,
            "GET",
            "/v1/credits/export?format=json&sla=chat-sla",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{exported}");
    assert_eq!(exported, json!([credit]));

    // The statement, as JSON and as a page to print.
    let statement_path = format!("/v1/slas/chat-sla/credits/{NOVEMBER}");
    let (status, statement) = p.call(&admin, "GET", &statement_path, None).await;
    assert_eq!(status, StatusCode::OK, "{statement}");
    assert_eq!(statement["total"], "100.00");
    assert_eq!(statement["customer_ref"], "acme-corp");
    assert_eq!(statement["entries"][0]["id"], id.as_str());
    let (status, headers, page) = p
        .text(&admin, &format!("{statement_path}?format=html"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    for shown in [
        "<style>",
        "chat-sla",
        "Acme Corp (acme-corp)",
        "availability",
        "99.5%",
        "sum over tier tables of fee",
        "cap_percent_of_fee (30% of the fee)",
        "half-even",
        "1000.00 EUR",
        "Credit owed for the period: 100.00 EUR",
        &id,
    ] {
        assert!(page.contains(shown), "{shown} is not on the page:\n{page}");
    }
    assert!(!page.contains("<script"), "{page}");
    // The same instant written another way names the same period.
    let (status, same) = p
        .call(
            &admin,
            "GET",
            "/v1/slas/chat-sla/credits/2026-11-01T01%3A00%3A00%2B01%3A00",
            None,
        )
        .await;
    assert_eq!((status, &same), (StatusCode::OK, &statement));
    for (bad, status_wanted) in [
        (
            format!("{statement_path}?format=pdf"),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "/v1/slas/chat-sla/credits/november".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "/v1/slas/chat-sla/credits/2026-10-01T00%3A00%3A00Z".to_owned(),
            StatusCode::NOT_FOUND,
        ),
        (
            format!("/v1/slas/nope/credits/{NOVEMBER}"),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (status, problem) = p.call(&admin, "GET", &bad, None).await;
        assert_eq!(status, status_wanted, "{bad}: {problem}");
    }

    // A customer's users: each its own only, and no fee of theirs to set.
    let acme = p.token(&["customer_admin"], Some(p.acme));
    let beta = p.token(&["customer_admin"], Some(p.beta));
    let (status, own) = p.call(&acme, "GET", "/v1/credits", None).await;
    assert_eq!(status, StatusCode::OK, "{own}");
    assert_eq!(own["data"].as_array().unwrap().len(), 1);
    let (status, statement) = p.call(&acme, "GET", &statement_path, None).await;
    assert_eq!(status, StatusCode::OK, "{statement}");
    let (status, others) = p
        .call(&beta, "GET", "/v1/credits?customer_ref=acme-corp", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{others}");
    assert!(others["data"].as_array().unwrap().is_empty(), "{others}");
    for path in [format!("/v1/credits/{id}"), statement_path.clone()] {
        let (status, problem) = p.call(&beta, "GET", &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {problem}");
    }
    let (status, _, csv) = p.text(&beta, "/v1/credits/export").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(csv.lines().count(), 1, "only the header: {csv}");
    let (status, refused) = p
        .call(
            &acme,
            "POST",
            fees,
            Some(fee("2027-01-01T00:00:00Z", "EUR", "1.00")),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");

    // A token without the credits scope.
    let viewer = p.token(&["operations_viewer"], None);
    for path in [
        "/v1/credits".to_owned(),
        "/v1/credits/export".to_owned(),
        format!("/v1/credits/{id}"),
        statement_path.clone(),
    ] {
        let (status, problem) = p.call(&viewer, "GET", &path, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {problem}");
        assert_eq!(problem["scope"], "sla:read:credits", "{path}");
    }
}

#[tokio::test]
async fn credits_and_fees_through_graphql() {
    let p = Platform::start().await;
    let admin = p.token(&["provider_admin"], None);

    let answer = p
        .graphql(
            &admin,
            r#"mutation { setCustomerFee(customerRef: "acme-corp", input: {effectiveFrom: "2026-01-01T00:00:00Z", currency: "EUR", amount: "1000.00"}) { effectiveFrom currency amount amountMinor createdBy } }"#,
        )
        .await;
    let set = &answer["data"]["setCustomerFee"];
    assert_eq!(set["amount"], "1000.00", "{answer}");
    assert_eq!(set["amountMinor"], 100_000);
    let refused = p
        .graphql(
            &admin,
            r#"mutation { setCustomerFee(customerRef: "acme-corp", input: {effectiveFrom: "2027-01-01T00:00:00Z", currency: "EURO", amount: "1.00"}) { amount } }"#,
        )
        .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "INVALID",
        "{refused}"
    );
    let answer = p
        .graphql(
            &admin,
            r#"mutation { recomputeCredit(sla: "chat-sla", periodStart: "2026-11-01T00:00:00Z") }"#,
        )
        .await;
    assert_eq!(answer["data"]["recomputeCredit"], true, "{answer}");
    p.compensate().await;

    let answer = p
        .graphql(
            &admin,
            r#"{
                credits(sla: "chat-sla", from: "2026-11-01T00:00:00Z", first: 10) {
                    edges { cursor node { id kind customerRef periodStart currency amount total totalMinor computation results } }
                    pageInfo { hasNextPage }
                }
                creditStatement(sla: "chat-sla", periodStart: "2026-11-01T00:00:00Z") { customerRef total entries { id } }
                customerFees(customerRef: "acme-corp") { amount currency }
            }"#,
        )
        .await;
    let data = &answer["data"];
    let edges = data["credits"]["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "{answer}");
    let node = &edges[0]["node"];
    assert_eq!(
        (&node["kind"], &node["total"], &node["totalMinor"]),
        (&json!("issued"), &json!("100.00"), &json!(10_000))
    );
    assert_eq!(node["computation"]["computation"]["kind"], "tiered");
    assert_eq!(data["credits"]["pageInfo"]["hasNextPage"], false);
    assert_eq!(data["creditStatement"]["total"], "100.00");
    assert_eq!(data["creditStatement"]["entries"][0]["id"], node["id"]);
    assert_eq!(data["customerFees"][0]["amount"], "1000.00");
    let id = node["id"].as_str().unwrap();
    let one = p
        .graphql(
            &admin,
            &format!(r#"{{ credit(id: "{id}") {{ id total }} }}"#),
        )
        .await;
    assert_eq!(one["data"]["credit"]["total"], "100.00", "{one}");
    let bad = p
        .graphql(
            &admin,
            r#"{ credits(from: "last week") { edges { cursor } } }"#,
        )
        .await;
    assert_eq!(bad["errors"][0]["extensions"]["code"], "INVALID", "{bad}");

    // A customer's user sees its own; another customer's sees none.
    let acme = p.token(&["customer_admin"], Some(p.acme));
    let beta = p.token(&["customer_admin"], Some(p.beta));
    let query = r#"{ credits { edges { node { id } } } }"#;
    let own = p.graphql(&acme, query).await;
    assert_eq!(
        own["data"]["credits"]["edges"].as_array().unwrap().len(),
        1,
        "{own}"
    );
    let none = p.graphql(&beta, query).await;
    assert!(
        none["data"]["credits"]["edges"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{none}"
    );

    // Without the scope: refused naming it, and hidden from introspection.
    let viewer = p.token(&["operations_viewer"], None);
    let refused = p.graphql(&viewer, query).await;
    assert_eq!(
        refused["errors"][0]["extensions"]["scope"], "sla:read:credits",
        "{refused}"
    );
    let fields = |answer: &Value| -> Vec<String> {
        answer["data"]["__schema"]["queryType"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let introspect = r#"{ __schema { queryType { fields { name } } } }"#;
    let shown = fields(&p.graphql(&admin, introspect).await);
    for field in ["credits", "credit", "creditStatement", "customerFees"] {
        assert!(
            shown.iter().any(|f| f == field),
            "{field} not shown: {shown:?}"
        );
    }
    let hidden = fields(&p.graphql(&viewer, introspect).await);
    assert!(
        !hidden
            .iter()
            .any(|f| f == "credits" || f == "creditStatement"),
        "{hidden:?}"
    );
}

#[tokio::test]
async fn a_one_sla_embed_token_reads_that_slas_credits_only_and_overview_is_no_sla_name() {
    // Found in review: `get_credit` ignored a one-SLA embed token's
    // restriction, and an SLA named `overview` widened such a token.
    let p = Platform::start().await;
    let admin = p.token(&["provider_admin"], None);
    let fee =
        json!({ "effective_from": "2026-01-01T00:00:00Z", "currency": "EUR", "amount": "1000.00" });
    let (status, body) = p
        .call(&admin, "POST", "/v1/customers/acme-corp/fees", Some(fee))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    p.compensate().await;
    let (_, listed) = p.call(&admin, "GET", "/v1/credits", None).await;
    let id = listed["data"][0]["id"].as_str().unwrap().to_owned();
    // Credited on nothing: the customer's fee is chat-sla's whole.
    let other = TIERED.replace("name: chat-sla", "name: chat-two");
    let other = other.split("  credits:").next().unwrap();
    let (status, body) = p
        .call(
            &admin,
            "POST",
            "/v1/slas",
            Some(json!({ "document": other })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, issued) = p
        .call(
            &admin,
            "POST",
            "/v1/embed-tokens",
            Some(json!({
                "customer": p.acme.to_string(),
                "dashboard": "chat-two",
                "scopes": ["sla:read", "sla:read:credits"],
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let embed = issued["token"].as_str().unwrap().to_owned();
    // chat-sla's credit is not chat-two's.
    let (status, body) = p
        .call(&embed, "GET", &format!("/v1/credits/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = p.call(&embed, "GET", "/v1/credits", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!([]), "{body}");
    // The customer's own user still reads it.
    let user = p.token(&["customer_admin"], Some(p.acme));
    let (status, _) = p
        .call(&user, "GET", &format!("/v1/credits/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    // No SLA may be called `overview`.
    let overview = TIERED.replace("name: chat-sla", "name: overview");
    let (status, body) = p
        .call(
            &admin,
            "POST",
            "/v1/slas",
            Some(json!({ "document": overview })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "metadata.name", "{body}");
}

#[tokio::test]
async fn a_credited_periods_fee_is_corrected_only_by_an_audited_act_with_a_reason() {
    // Found in review (#30, fees with history): once a period was credited,
    // a wrong fee could not be corrected at all (a back-dated fee is
    // refused, a recompute keeps the credited fee), and nothing said who
    // changed a price or why.
    // Last month, whatever the date: a correction is taken only before the
    // period's settlement horizon (45 days after it ends, by default).
    let now = Utc::now();
    let this_month = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .unwrap();
    let month = this_month.checked_sub_months(Months::new(1)).unwrap();
    let p = Platform::for_month(month).await;
    let start = month.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let period = start.replace(':', "%3A");
    let admin = p.token(&["provider_admin"], None);
    let correction = format!("/v1/slas/chat-sla/credits/{period}/fee-correction");
    let body = |currency: &str, amount: &str, reason: &str| json!({"currency": currency, "amount": amount, "reason": reason});
    let reason = "Amendment 2 of 3 November raised the monthly fee to 1,200.00";
    // Nothing credited yet (no fee on file): there is no credited fee to
    // correct, and the answer says what to do instead.
    let (status, problem) = p
        .call(
            &admin,
            "POST",
            &correction,
            Some(body("EUR", "1200.00", reason)),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("was not credited on a fee"),
        "{problem}"
    );
    let fees = "/v1/customers/acme-corp/fees";
    let (status, _) = p
        .call(
            &admin,
            "POST",
            fees,
            Some(fee("2026-01-01T00:00:00Z", "EUR", "1000.00")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let recompute = format!("/v1/slas/chat-sla/credits/{period}/recompute");
    let (status, _) = p.call(&admin, "POST", &recompute, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    p.compensate().await;
    // 10% of 1000.00.
    assert_eq!(p.statement_total(&admin, &period).await, "100.00");

    // The fee was 1,200.00 from that month: a fee recorded now cannot say it.
    let (status, problem) = p
        .call(&admin, "POST", fees, Some(fee(&start, "EUR", "1200.00")))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");

    // Only the provider's admin, and only with what the act needs.
    let customer = p.token(&["customer_admin"], Some(p.acme));
    let (status, problem) = p
        .call(
            &customer,
            "POST",
            &correction,
            Some(body("EUR", "1200.00", reason)),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{problem}");
    for (bad, field) in [
        (body("EUR", "1200.00", "  "), "reason"),
        (body("EUR", "1200.00", &"x".repeat(1001)), "reason"),
        (body("USD", "1200.00", reason), "currency"),
        (body("EUR", "1200.001", reason), "amount"),
        (body("EUR", "-5.00", reason), "amount"),
        (json!({"currency": "EUR", "amount": "1200.00"}), "body"),
    ] {
        let (status, problem) = p.call(&admin, "POST", &correction, Some(bad)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["field"], field, "{problem}");
    }
    let (status, problem) = p
        .call(
            &admin,
            "POST",
            &format!(
                "/v1/slas/chat-sla/credits/{}/fee-correction",
                period.replace("T00%3A00%3A00", "T00%3A00%3A01")
            ),
            Some(body("EUR", "1200.00", reason)),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["field"], "period_start", "{problem}");

    // The act: recorded with who, the fee before, and the reason.
    let (status, corrected) = p
        .call(
            &admin,
            "POST",
            &correction,
            Some(body("EUR", "1200.00", reason)),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{corrected}");
    assert_eq!(
        (
            &corrected["amount"],
            &corrected["was_amount"],
            &corrected["customer_ref"],
            &corrected["reason"],
            &corrected["recompute_queued"],
        ),
        (
            &json!("1200.00"),
            &json!("1000.00"),
            &json!("acme-corp"),
            &json!(reason),
            &json!(true)
        ),
        "{corrected}"
    );
    p.compensate().await;

    // The ledger corrects by the difference: 10% of 1,200.00 = 120.00.
    let (_, page) = p.call(&admin, "GET", "/v1/credits", None).await;
    let entries = page["data"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{page}");
    assert_eq!(
        (
            &entries[1]["kind"],
            &entries[1]["amount"],
            &entries[1]["total"]
        ),
        (&json!("corrected"), &json!("20.00"), &json!("120.00"))
    );
    let note = &entries[1]["computation"]["fee_correction"];
    assert_eq!(note["reason"], reason, "{page}");
    assert_eq!(note["was"]["minor"], 100_000, "{page}");
    assert!(
        entries[0]["computation"].get("fee_correction").is_none(),
        "the issued entry was computed before any correction: {page}"
    );

    // The customer reads why on its statement, and who did it on the trail.
    let (status, headers, page) = p
        .text(
            &customer,
            &format!("/v1/slas/chat-sla/credits/{period}?format=html"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        page.contains("Fee corrected")
            && page.contains("from 1000.00 EUR")
            && page.contains(reason),
        "{page}"
    );
    let (status, trail) = p
        .call(&customer, "GET", "/v1/slas/chat-sla/audit", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{trail}");
    let acts: Vec<&Value> = trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "fee.corrected")
        .collect();
    assert_eq!(acts.len(), 1, "{trail}");
    assert_eq!(acts[0]["details"]["was_amount_minor"], 100_000);
    assert_eq!(acts[0]["details"]["amount_minor"], 120_000);
    assert_eq!(acts[0]["details"]["reason"], reason);
    assert_eq!(acts[0]["actor"], corrected["corrected_by"]);

    // The same act over GraphQL, corrected again: 10% of 1,100.00.
    let answer = p
        .graphql(
            &admin,
            &format!(
                r#"mutation {{ correctCreditedFee(sla: "chat-sla", periodStart: "{start}",
                input: {{currency: "EUR", amount: "1100.00", reason: "Amendment 2 was signed at 1,100.00"}})
                {{ amount wasAmount correctedBy recomputeQueued }} }}"#
            ),
        )
        .await;
    assert_eq!(
        answer["data"]["correctCreditedFee"]["wasAmount"], "1200.00",
        "{answer}"
    );
    p.compensate().await;
    assert_eq!(p.statement_total(&admin, &period).await, "110.00");
}
