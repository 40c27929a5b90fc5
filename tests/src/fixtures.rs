//! Shared scenarios, written once: an application that trusts the test
//! signing key, a tenant, tokens of any role for it, and calls of the API
//! that check every refusal is a problem document.

use std::net::SocketAddr;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{Value, json};
use slaproof::Config;
use slaproof_api::settings::{KeyAlgorithm, KeySettings};
use slaproof_domain::ids::{CustomerId, TenantId};

/// The RS256 key the test issuer signs with, and its public half.
pub const RS_PRIVATE: &str = include_str!("../../services/api/fixtures/rs256-private.pem");
pub const RS_PUBLIC: &str = include_str!("../../services/api/fixtures/rs256-public.pem");
/// The `kid` the application knows the test key by.
pub const TEST_KID: &str = "test";
/// The operator's own key (ES256): only its tokens carry `operator`.
pub const OPERATOR_PRIVATE: &str = include_str!("../../services/api/fixtures/es256-private.pem");
pub const OPERATOR_PUBLIC: &str = include_str!("../../services/api/fixtures/es256-public.pem");
pub const OPERATOR_KID: &str = "test-operator";

/// Makes the application trust the test issuer's key (issuer `slaproof`,
/// audience `slaproof-api`, the defaults) and the operator's key.
pub fn trust_test_key(config: &mut Config) {
    config.api.keys = vec![
        KeySettings {
            id: TEST_KID.into(),
            algorithm: KeyAlgorithm::RS256,
            public_key_pem: Some(RS_PUBLIC.into()),
            secret: None,
            operator: false,
            tenants: Vec::new(),
        },
        KeySettings {
            id: OPERATOR_KID.into(),
            algorithm: KeyAlgorithm::ES256,
            public_key_pem: Some(OPERATOR_PUBLIC.into()),
            secret: None,
            operator: true,
            tenants: Vec::new(),
        },
    ];
}

/// The claims of a token for `tenant` with `roles`, for `customer`'s user
/// when given, valid for ten minutes.
pub fn claims(tenant: TenantId, roles: &[&str], customer: Option<CustomerId>) -> Value {
    let mut claims = json!({
        "sub": "someone",
        "iss": "slaproof",
        "aud": "slaproof-api",
        "exp": jsonwebtoken::get_current_timestamp() + 600,
        "tenant": tenant.to_string(),
        "roles": roles,
    });
    if let Some(c) = customer {
        claims["customer"] = json!(c.to_string());
    }
    claims
}

/// `claims` signed with an RS256 private key under `kid`.
pub fn sign(claims: &Value, private_pem: &str, kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_rsa_pem(private_pem.as_bytes()).expect("an RSA private key"),
    )
    .expect("the claims sign")
}

/// A token of the test issuer for `tenant` with `roles`: signed with the
/// operator's key when `roles` is the operator's.
pub fn token(tenant: TenantId, roles: &[&str], customer: Option<CustomerId>) -> String {
    if roles == ["operator"] {
        return operator_token(tenant);
    }
    sign(&claims(tenant, roles, customer), RS_PRIVATE, TEST_KID)
}

/// A token of the operator, signed with the operator's key.
pub fn operator_token(tenant: TenantId) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(OPERATOR_KID.into());
    jsonwebtoken::encode(
        &header,
        &claims(tenant, &["operator"], None),
        &EncodingKey::from_ec_pem(OPERATOR_PRIVATE.as_bytes()).expect("an EC private key"),
    )
    .expect("the claims sign")
}

/// Calls the API at `address` as `token`: the status and the JSON body
/// (or the text as a string). Every answer that is not a success must be
/// an RFC 9457 problem document.
pub async fn call(
    http: &reqwest::Client,
    address: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let url = format!("http://{address}{path}");
    let mut request = match method {
        "POST" => http.post(url),
        "PATCH" => http.patch(url),
        "PUT" => http.put(url),
        "DELETE" => http.delete(url),
        _ => http.get(url),
    }
    .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the API answers");
    let status = response.status();
    let is_problem = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .is_some_and(|v| v == "application/problem+json");
    let text = response.text().await.expect("an answer body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if !status.is_success() {
        assert!(
            is_problem,
            "{method} {path}: {status} without a problem document: {body}"
        );
    }
    (status, body)
}

/// Applies an SLA document through `POST /v1/slas` as `token`; panics
/// unless it is accepted.
pub async fn apply_sla(address: SocketAddr, token: &str, document: &str) {
    let (status, body) = call(
        &reqwest::Client::new(),
        address,
        token,
        "POST",
        "/v1/slas",
        Some(json!({ "document": document })),
    )
    .await;
    assert!(status.is_success(), "{status} {body}");
}

/// One evaluator round of `tenant` over everything stored, as the worker
/// would run it two minutes from now (so no settling holds events back);
/// while the platform's own evaluator holds the tenant, again a moment
/// later (for at most 5 s).
pub async fn evaluate_now(db: &slaproof_store::Database, tenant: TenantId) {
    for _ in 0..50 {
        let mut tx = db.tenant_tx(tenant).await.unwrap();
        match slaproof_evaluator::evaluate_tenant_up_to(
            &mut tx,
            &slaproof_evaluator::Settings::default(),
            Some(chrono::Utc::now() + chrono::Duration::minutes(2)),
        )
        .await
        {
            Ok(_) => return tx.commit().await.unwrap(),
            Err(slaproof_evaluator::EvaluatorError::Busy { .. }) => {
                drop(tx);
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(err) => panic!("evaluating: {err}"),
        }
    }
    panic!("the tenant stayed busy for 5 s");
}
