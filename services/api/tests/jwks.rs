//! Tokens verified with keys from a JWKS served over real HTTP (axum on
//! 127.0.0.1:0): RS256, ES256 and EdDSA keys, rotation, unknown kids
//! refused without hammering the issuer, and algorithm confusion refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use slaproof_api::auth::{AuthError, Verifier};
use slaproof_api::settings::{KeyAlgorithm, Settings};
use slaproof_domain::ids::TenantId;

const RS_PRIVATE: &str = include_str!("../fixtures/rs256-private.pem");
const RS_PUBLIC: &str = include_str!("../fixtures/rs256-public.pem");
const OTHER_RS_PRIVATE: &str = include_str!("../fixtures/other-rs256-private.pem");
const ES_PRIVATE: &str = include_str!("../fixtures/es256-private.pem");
const ED_PRIVATE: &str = include_str!("../fixtures/eddsa-private.pem");

/// A JWKS endpoint whose set and `Cache-Control` the test changes, and
/// which counts the fetches it answered.
#[derive(Clone)]
struct Issuer {
    set: Arc<Mutex<Value>>,
    cache_control: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

async fn serve_jwks(State(issuer): State<Issuer>) -> impl IntoResponse {
    issuer.fetches.fetch_add(1, Ordering::SeqCst);
    let body = issuer.set.lock().unwrap().to_string();
    let cache = issuer.cache_control.lock().unwrap().clone();
    (
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::CACHE_CONTROL, cache),
        ],
        body,
    )
}

impl Issuer {
    async fn start(set: Value) -> (Self, String) {
        let issuer = Issuer {
            set: Arc::new(Mutex::new(set)),
            cache_control: Arc::new(Mutex::new("public, max-age=600".to_owned())),
            fetches: Arc::new(AtomicUsize::new(0)),
        };
        let app = Router::new()
            .route("/.well-known/jwks.json", axum::routing::get(serve_jwks))
            .with_state(issuer.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/.well-known/jwks.json",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (issuer, url)
    }

    fn publish(&self, set: Value) {
        *self.set.lock().unwrap() = set;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

fn encoding(alg: Algorithm, pem: &str) -> EncodingKey {
    match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()).unwrap(),
        _ => EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    }
}

/// The public JWK of a private fixture key, under `kid`.
fn jwk(kid: &str, alg: Algorithm, pem: &str) -> Value {
    let mut key = Jwk::from_encoding_key(&encoding(alg, pem), alg).unwrap();
    key.common.key_id = Some(kid.to_owned());
    serde_json::to_value(key).unwrap()
}

fn set(keys: Vec<Value>) -> Value {
    json!({ "keys": keys })
}

fn verifier(url: &str, min_refetch_secs: u64) -> Verifier {
    Verifier::new(&Settings {
        jwks_url: Some(url.to_owned()),
        jwks_refresh_secs: 600,
        jwks_min_refetch_secs: min_refetch_secs,
        ..Settings::default()
    })
    .unwrap()
}

fn token(alg: Algorithm, kid: &str, key: &EncodingKey) -> String {
    let now = jsonwebtoken::get_current_timestamp();
    let claims = json!({
        "sub": "user-1", "iss": "slaproof", "aud": "slaproof-api", "exp": now + 600,
        "tenant": TenantId::new().to_string(), "roles": ["provider_admin"],
    });
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

#[tokio::test]
async fn rs256_es256_and_eddsa_keys_of_the_jwks_verify_their_tokens_from_one_fetch() {
    let (issuer, url) = Issuer::start(set(vec![
        jwk("rs-1", Algorithm::RS256, RS_PRIVATE),
        jwk("es-1", Algorithm::ES256, ES_PRIVATE),
        jwk("ed-1", Algorithm::EdDSA, ED_PRIVATE),
    ]))
    .await;
    let v = verifier(&url, 30);
    for (alg, kid, pem) in [
        (Algorithm::RS256, "rs-1", RS_PRIVATE),
        (Algorithm::ES256, "es-1", ES_PRIVATE),
        (Algorithm::EdDSA, "ed-1", ED_PRIVATE),
    ] {
        let principal = v
            .authenticate(&token(alg, kid, &encoding(alg, pem)))
            .await
            .unwrap_or_else(|e| panic!("{alg:?}: {e}"));
        assert_eq!(principal.subject, "user-1");
    }
    // The set is kept while fresh (max-age=600): one fetch for all three.
    assert_eq!(issuer.fetches(), 1);
    // A signature by another key under a published kid is still refused.
    let forged = token(
        Algorithm::RS256,
        "rs-1",
        &encoding(Algorithm::RS256, OTHER_RS_PRIVATE),
    );
    assert_eq!(v.authenticate(&forged).await, Err(AuthError::BadSignature));
}

#[tokio::test]
async fn a_rotated_key_is_accepted_after_a_refetch_and_the_old_one_dropped() {
    let (issuer, url) = Issuer::start(set(vec![jwk("rs-1", Algorithm::RS256, RS_PRIVATE)])).await;
    let v = verifier(&url, 1);
    let old = token(
        Algorithm::RS256,
        "rs-1",
        &encoding(Algorithm::RS256, RS_PRIVATE),
    );
    let new = token(
        Algorithm::RS256,
        "rs-2",
        &encoding(Algorithm::RS256, OTHER_RS_PRIVATE),
    );
    assert!(v.authenticate(&old).await.is_ok());
    assert_eq!(v.authenticate(&new).await, Err(AuthError::UnknownKey));
    // The issuer rotates: rs-2 in, rs-1 out.
    issuer.publish(set(vec![jwk("rs-2", Algorithm::RS256, OTHER_RS_PRIVATE)]));
    // Past the refetch limit, the unknown kid makes the verifier look again.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let before = issuer.fetches();
    assert!(v.authenticate(&new).await.is_ok());
    assert_eq!(issuer.fetches(), before + 1);
    // The set replaced the old one: rs-1 is gone (no refetch allowed yet).
    assert_eq!(v.authenticate(&old).await, Err(AuthError::UnknownKey));
}

#[tokio::test]
async fn unknown_kids_are_refused_without_hammering_the_issuer() {
    let (issuer, url) = Issuer::start(set(vec![jwk("rs-1", Algorithm::RS256, RS_PRIVATE)])).await;
    let v = verifier(&url, 60);
    let rs = encoding(Algorithm::RS256, RS_PRIVATE);
    for i in 0..50 {
        let made_up = token(Algorithm::RS256, &format!("nobody-{i}"), &rs);
        assert_eq!(v.authenticate(&made_up).await, Err(AuthError::UnknownKey));
    }
    // The first unknown kid fetched the set; the next 49 were refused from it.
    assert_eq!(issuer.fetches(), 1);
    assert!(
        v.authenticate(&token(Algorithm::RS256, "rs-1", &rs))
            .await
            .is_ok()
    );
    assert_eq!(issuer.fetches(), 1);
}

#[tokio::test]
async fn a_short_max_age_is_honoured_within_the_configured_bounds() {
    let (issuer, url) = Issuer::start(set(vec![jwk("rs-1", Algorithm::RS256, RS_PRIVATE)])).await;
    *issuer.cache_control.lock().unwrap() = "max-age=1".to_owned();
    let v = verifier(&url, 1);
    let good = token(
        Algorithm::RS256,
        "rs-1",
        &encoding(Algorithm::RS256, RS_PRIVATE),
    );
    assert!(v.authenticate(&good).await.is_ok());
    assert!(v.authenticate(&good).await.is_ok());
    assert_eq!(issuer.fetches(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert!(v.authenticate(&good).await.is_ok());
    assert_eq!(issuer.fetches(), 2, "a stale set is fetched again");
}

#[tokio::test]
async fn algorithm_confusion_is_refused() {
    let rsa_jwk = jwk("rs-1", Algorithm::RS256, RS_PRIVATE);
    // An RSA key that claims ES256, a symmetric key, and an EdDSA key the
    // configuration does not allow below.
    let mut lying = rsa_jwk.clone();
    lying["kid"] = json!("liar");
    lying["alg"] = json!("ES256");
    let oct = json!({ "kty": "oct", "kid": "hs-1", "alg": "HS256", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA" });
    let (_issuer, url) = Issuer::start(set(vec![
        rsa_jwk,
        lying,
        oct,
        jwk("ed-1", Algorithm::EdDSA, ED_PRIVATE),
    ]))
    .await;
    let v = Verifier::new(&Settings {
        jwks_url: Some(url),
        jwks_algorithms: vec![KeyAlgorithm::RS256],
        ..Settings::default()
    })
    .unwrap();
    // HS256 signed with the RSA public key, naming the RSA kid.
    let confused = token(
        Algorithm::HS256,
        "rs-1",
        &EncodingKey::from_secret(RS_PUBLIC.as_bytes()).unwrap(),
    );
    assert_eq!(
        v.authenticate(&confused).await,
        Err(AuthError::WrongAlgorithm)
    );
    // A symmetric key is never taken from a JWKS, whatever its alg says.
    let hs = token(
        Algorithm::HS256,
        "hs-1",
        &EncodingKey::from_secret(b"secret-secret-secret-secret-secret").unwrap(),
    );
    assert_eq!(v.authenticate(&hs).await, Err(AuthError::UnknownKey));
    // An `alg` that is not the key type's leaves the key out.
    let liar = token(
        Algorithm::RS256,
        "liar",
        &encoding(Algorithm::RS256, RS_PRIVATE),
    );
    assert_eq!(v.authenticate(&liar).await, Err(AuthError::UnknownKey));
    // EdDSA is published but not allowed here.
    let ed = token(
        Algorithm::EdDSA,
        "ed-1",
        &encoding(Algorithm::EdDSA, ED_PRIVATE),
    );
    assert_eq!(v.authenticate(&ed).await, Err(AuthError::UnknownKey));
    // The RSA key itself verifies, so the refusals above were the attacks'.
    let good = token(
        Algorithm::RS256,
        "rs-1",
        &encoding(Algorithm::RS256, RS_PRIVATE),
    );
    assert!(v.authenticate(&good).await.is_ok());
}

#[test]
fn hs256_cannot_be_allowed_from_a_jwks() {
    let err = Verifier::new(&Settings {
        jwks_url: Some("https://issuer.example.com/jwks.json".into()),
        jwks_algorithms: vec![KeyAlgorithm::RS256, KeyAlgorithm::HS256],
        ..Settings::default()
    })
    .unwrap_err();
    assert_eq!(err.key, "api.jwks_algorithms");
    let err = Verifier::new(&Settings {
        jwks_url: Some("ftp://issuer.example.com/jwks.json".into()),
        ..Settings::default()
    })
    .unwrap_err();
    assert_eq!(err.key, "api.jwks_url");
}
