//! Authentication: bearer JWTs checked against configured keys and the
//! issuer's JWKS, turned into a [`Principal`] once per request by a layer
//! ([`request`]) so that no handler parses a token.

use std::collections::HashMap;

use axum::http::{HeaderMap, header};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};
use slaproof_domain::ids::{CustomerId, TenantId};

use secrecy::ExposeSecret;

use crate::problem::ApiProblem;

pub mod jwks;
pub mod request;

use crate::settings::{EMBED_KEY_ID, Settings, SettingsError};
use slaproof_app::{
    EMBED_AUDIENCE, EmbedClaims, EmbedGrant, EmbedSigner, Principal, Scope, ScopeSet,
};

struct EmbedKey {
    encoding: jsonwebtoken::EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    issuer: String,
}

impl std::fmt::Debug for EmbedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("EmbedKey")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// The claims slaproof reads from a token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// The tenant (`ten_…`): the casbin domain of every check.
    pub tenant: String,
    #[serde(default)]
    pub roles: Vec<String>,
    /// The customer (`cus_…`) a customer's user acts for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer: Option<String>,
}

/// Why a token was refused. The messages are safe to show: they say what
/// is wrong with the token, never anything about the keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token")]
    Missing,
    #[error("malformed token")]
    Malformed,
    #[error("token names an unknown key")]
    UnknownKey,
    #[error("token algorithm is not the one its key is pinned to")]
    WrongAlgorithm,
    #[error("token signature is invalid")]
    BadSignature,
    #[error("token has expired")]
    Expired,
    #[error("token is not valid yet")]
    NotYetValid,
    #[error("token issuer is not accepted")]
    WrongIssuer,
    #[error("token audience is not accepted")]
    WrongAudience,
    #[error("token claim {0} is invalid")]
    BadClaim(&'static str),
    #[error("the key that signed the token may not sign tokens for its tenant")]
    TenantNotAllowed,
}

/// A refused token as answered: 401 with the reason.
impl From<AuthError> for ApiProblem {
    fn from(err: AuthError) -> Self {
        ApiProblem(
            slaproof_http::Problem::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "Unauthenticated",
            )
            .with_detail(err.to_string()),
        )
    }
}

/// A key pinned to one algorithm, with the checks every token it
/// verifies must pass.
#[derive(Debug)]
pub struct VerifyingKey {
    algorithm: Algorithm,
    key: DecodingKey,
    validation: Validation,
    /// Signs operator tokens, and only those (see `KeySettings::operator`).
    operator: bool,
    /// The tenants it may sign tokens for; `None`: any.
    tenants: Option<std::sync::Arc<std::collections::HashSet<TenantId>>>,
}

/// The role only an operator key's tokens carry.
pub const OPERATOR_ROLE: &str = "operator";

impl VerifyingKey {
    pub(crate) fn new(algorithm: Algorithm, key: DecodingKey, settings: &Settings) -> Self {
        let mut validation = Validation::new(algorithm);
        validation.algorithms = vec![algorithm];
        validation.leeway = settings.leeway_secs;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[&settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        Self {
            algorithm,
            key,
            validation,
            operator: false,
            tenants: None,
        }
    }

    /// This key as one that signs tokens of `tenants` only (`None`: any).
    pub(crate) fn bound_to(
        mut self,
        tenants: Option<std::sync::Arc<std::collections::HashSet<TenantId>>>,
    ) -> Self {
        self.tenants = tenants;
        self
    }

    /// This key as one that signs operator tokens only.
    pub(crate) fn for_operator(mut self) -> Self {
        self.operator = true;
        self
    }
}

/// Checks tokens against the configured keys and, when one is
/// configured, the issuer's JWKS.
#[derive(Debug)]
pub struct Verifier {
    keys: HashMap<String, VerifyingKey>,
    jwks: Option<jwks::Jwks>,
    embed: EmbedKey,
}

impl Verifier {
    pub fn new(settings: &Settings) -> Result<Self, SettingsError> {
        settings.validate()?;
        let mut keys = HashMap::new();
        for k in &settings.keys {
            let key = VerifyingKey::new(k.algorithm.jwt(), k.decoding_key()?, settings).bound_to(
                crate::settings::tenant_ids("api.keys.tenants", &k.tenants)?
                    .map(std::sync::Arc::new),
            );
            keys.insert(
                k.id.clone(),
                if k.operator { key.for_operator() } else { key },
            );
        }
        let jwks = jwks::Jwks::from_settings(settings)?;
        let secret: Vec<u8> = match &settings.embed_secret {
            Some(s) => s.expose_secret().as_bytes().to_vec(),
            None => rand::random::<[u8; 32]>().to_vec(),
        };
        let embed_error = |e: jsonwebtoken::errors::Error| SettingsError {
            key: "api.embed_secret",
            rule: e.to_string(),
        };
        let mut validation = Validation::new(Algorithm::HS256);
        validation.algorithms = vec![Algorithm::HS256];
        validation.leeway = settings.leeway_secs;
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[EMBED_AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub", "jti"]);
        let embed = EmbedKey {
            encoding: jsonwebtoken::EncodingKey::from_secret(&secret).map_err(embed_error)?,
            decoding: DecodingKey::from_secret(&secret).map_err(embed_error)?,
            validation,
            issuer: settings.issuer.clone(),
        };
        Ok(Self { keys, jwks, embed })
    }

    fn verify_embed(&self, token: &str) -> Result<Principal, AuthError> {
        let data = jsonwebtoken::decode::<EmbedClaims>(
            token,
            &self.embed.decoding,
            &self.embed.validation,
        )
        .map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => AuthError::Expired,
            ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
            ErrorKind::InvalidAudience => AuthError::WrongAudience,
            ErrorKind::InvalidAlgorithm => AuthError::WrongAlgorithm,
            ErrorKind::InvalidSignature => AuthError::BadSignature,
            _ => AuthError::Malformed,
        })?;
        let c = data.claims;
        let tenant: TenantId = c
            .tenant
            .parse()
            .map_err(|_| AuthError::BadClaim("tenant"))?;
        let customer: CustomerId = c
            .customer
            .parse()
            .map_err(|_| AuthError::BadClaim("customer"))?;
        let scopes = c
            .scopes
            .iter()
            .map(|s| Scope::parse(s).ok_or(AuthError::BadClaim("scopes")))
            .collect::<Result<ScopeSet, _>>()?;
        let token_id: uuid::Uuid = c.jti.parse().map_err(|_| AuthError::BadClaim("jti"))?;
        Ok(Principal {
            subject: c.sub,
            tenant,
            roles: Vec::new(),
            customer: Some(customer),
            embed: Some(EmbedGrant {
                token_id,
                dashboard: c.dashboard,
                scopes,
                origin: c.origin,
            }),
        })
    }

    /// Checks a compact JWS against the configured keys and, for a `kid`
    /// none of them has, the issuer's JWKS.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        match self.verify(token) {
            Err(AuthError::UnknownKey) => {}
            other => return other,
        }
        let Some(jwks) = &self.jwks else {
            return Err(AuthError::UnknownKey);
        };
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        let kid = header.kid.as_deref().ok_or(AuthError::UnknownKey)?;
        let key = jwks.key(kid).await?;
        check(token, header.alg, &key)
    }

    /// Checks a compact JWS against the configured keys only (no fetch).
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        // `alg: none` and unknown algorithms fail here: the header's
        // algorithm must be one jsonwebtoken knows, and none is not.
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        if header.kid.as_deref() == Some(EMBED_KEY_ID) {
            if header.alg != Algorithm::HS256 {
                return Err(AuthError::WrongAlgorithm);
            }
            return self.verify_embed(token);
        }
        let key = match &header.kid {
            Some(kid) => self.keys.get(kid),
            None if self.keys.len() == 1 => self.keys.values().next(),
            None => None,
        }
        .ok_or(AuthError::UnknownKey)?;
        check(token, header.alg, key)
    }
}

/// Checks a token with the key its header named: the header's algorithm
/// must be the key's, then signature, time, issuer, audience and claims.
fn check(token: &str, alg: Algorithm, key: &VerifyingKey) -> Result<Principal, AuthError> {
    if alg != key.algorithm {
        return Err(AuthError::WrongAlgorithm);
    }
    let data =
        jsonwebtoken::decode::<Claims>(token, &key.key, &key.validation).map_err(|e| {
            match e.kind() {
                ErrorKind::ExpiredSignature => AuthError::Expired,
                ErrorKind::ImmatureSignature => AuthError::NotYetValid,
                ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
                ErrorKind::InvalidAudience => AuthError::WrongAudience,
                ErrorKind::InvalidAlgorithm => AuthError::WrongAlgorithm,
                ErrorKind::InvalidSignature => AuthError::BadSignature,
                ErrorKind::MissingRequiredClaim(_) => AuthError::BadClaim("exp/iss/aud/sub"),
                _ => AuthError::Malformed,
            }
        })?;
    let claims = data.claims;
    let tenant: TenantId = claims
        .tenant
        .parse()
        .map_err(|_| AuthError::BadClaim("tenant"))?;
    if key
        .tenants
        .as_ref()
        .is_some_and(|allowed| !allowed.contains(&tenant))
    {
        return Err(AuthError::TenantNotAllowed);
    }
    let customer = claims
        .customer
        .as_deref()
        .map(str::parse::<CustomerId>)
        .transpose()
        .map_err(|_| AuthError::BadClaim("customer"))?;
    if claims.sub.is_empty() || claims.sub.len() > 256 {
        return Err(AuthError::BadClaim("sub"));
    }
    if claims.roles.len() > 32 || claims.roles.iter().any(|r| r.is_empty() || r.len() > 64) {
        return Err(AuthError::BadClaim("roles"));
    }
    // The operator role comes from an operator key and nowhere else, and
    // an operator key speaks for the operator only.
    let operator = claims.roles.iter().any(|r| r == OPERATOR_ROLE);
    if operator != key.operator || (key.operator && (claims.roles.len() != 1 || customer.is_some()))
    {
        return Err(AuthError::BadClaim("roles"));
    }
    Ok(Principal {
        subject: claims.sub,
        tenant,
        roles: claims.roles,
        customer,
        embed: None,
    })
}

impl EmbedSigner for Verifier {
    fn issuer(&self) -> &str {
        &self.embed.issuer
    }

    fn sign(
        &self,
        claims: &EmbedClaims,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
        header.kid = Some(EMBED_KEY_ID.to_owned());
        Ok(jsonwebtoken::encode(&header, claims, &self.embed.encoding)?)
    }
}

/// The bearer token of a request's headers, if it carries one.
pub fn bearer(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(AuthError::Missing)?
        .to_str()
        .map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok(token.trim())
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use jsonwebtoken::{EncodingKey, Header};

    use super::*;
    use crate::settings::{KeyAlgorithm, KeySettings};

    const RS_PRIVATE: &str = include_str!("../fixtures/rs256-private.pem");
    const RS_PUBLIC: &str = include_str!("../fixtures/rs256-public.pem");
    const ES_PRIVATE: &str = include_str!("../fixtures/es256-private.pem");
    const ES_PUBLIC: &str = include_str!("../fixtures/es256-public.pem");
    const ED_PRIVATE: &str = include_str!("../fixtures/eddsa-private.pem");
    const ED_PUBLIC: &str = include_str!("../fixtures/eddsa-public.pem");
    const OTHER_RS_PRIVATE: &str = include_str!("../fixtures/other-rs256-private.pem");
    const SECRET: &str = "an-hs256-secret-of-at-least-32-bytes!";

    fn key(
        id: &str,
        algorithm: KeyAlgorithm,
        pem: Option<&str>,
        secret: Option<&str>,
    ) -> KeySettings {
        KeySettings {
            id: id.to_owned(),
            algorithm,
            public_key_pem: pem.map(str::to_owned),
            secret: secret.map(|s| s.to_owned().into()),
            operator: false,
            tenants: Vec::new(),
        }
    }

    fn verifier(with_hs: bool) -> Verifier {
        let mut keys = vec![
            key("rs", KeyAlgorithm::RS256, Some(RS_PUBLIC), None),
            key("es", KeyAlgorithm::ES256, Some(ES_PUBLIC), None),
            key("ed", KeyAlgorithm::EdDSA, Some(ED_PUBLIC), None),
        ];
        if with_hs {
            keys.push(key("hs", KeyAlgorithm::HS256, None, Some(SECRET)));
        }
        Verifier::new(&Settings {
            keys,
            ..Settings::default()
        })
        .unwrap()
    }

    fn claims() -> Claims {
        let now = jsonwebtoken::get_current_timestamp();
        Claims {
            sub: "user-1".into(),
            iss: "slaproof".into(),
            aud: "slaproof-api".into(),
            exp: now + 600,
            nbf: Some(now - 10),
            tenant: TenantId::new().to_string(),
            roles: vec!["provider_admin".into()],
            customer: None,
        }
    }

    fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Claims) -> String {
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, key).unwrap()
    }

    fn rs() -> EncodingKey {
        EncodingKey::from_rsa_pem(RS_PRIVATE.as_bytes()).unwrap()
    }

    #[test]
    fn each_configured_algorithm_verifies_its_own_tokens() {
        let v = verifier(true);
        let c = claims();
        let es = EncodingKey::from_ec_pem(ES_PRIVATE.as_bytes()).unwrap();
        let ed = EncodingKey::from_ed_pem(ED_PRIVATE.as_bytes()).unwrap();
        let hs = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
        for token in [
            sign(Algorithm::RS256, "rs", &rs(), &c),
            sign(Algorithm::ES256, "es", &es, &c),
            sign(Algorithm::EdDSA, "ed", &ed, &c),
            sign(Algorithm::HS256, "hs", &hs, &c),
        ] {
            let p = v.verify(&token).unwrap();
            assert_eq!(p.subject, "user-1");
            assert_eq!(p.tenant.to_string(), c.tenant);
        }
    }

    #[test]
    fn a_key_bound_to_tenants_signs_for_those_only() {
        // #31 item 8: any trusted key signed tokens for any `tenant`, so
        // one provider's identity provider could speak for another tenant.
        let mine = TenantId::new();
        let mut bound = key("rs", KeyAlgorithm::RS256, Some(RS_PUBLIC), None);
        bound.tenants = vec![mine.to_string()];
        let v = Verifier::new(&Settings {
            keys: vec![bound],
            ..Settings::default()
        })
        .unwrap();
        let mut c = claims();
        c.tenant = mine.to_string();
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c))
                .unwrap()
                .tenant,
            mine
        );
        c.tenant = TenantId::new().to_string();
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c)),
            Err(AuthError::TenantNotAllowed)
        );
        // An unbound key still signs for any tenant.
        assert!(
            verifier(false)
                .verify(&sign(Algorithm::RS256, "rs", &rs(), &c))
                .is_ok()
        );
        // Bad bindings are named.
        let mut wrong = key("rs", KeyAlgorithm::RS256, Some(RS_PUBLIC), None);
        wrong.tenants = vec!["acme".into()];
        let err = Verifier::new(&Settings {
            keys: vec![wrong],
            ..Settings::default()
        })
        .unwrap_err();
        assert_eq!(err.key, "api.keys.tenants");
        let mut operator = key("op", KeyAlgorithm::RS256, Some(RS_PUBLIC), None);
        operator.operator = true;
        operator.tenants = vec![mine.to_string()];
        let err = Verifier::new(&Settings {
            keys: vec![operator],
            ..Settings::default()
        })
        .unwrap_err();
        assert_eq!(err.key, "api.keys.tenants");
        let err = Settings {
            jwks_tenants: vec!["nope".into()],
            ..Settings::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(err.key, "api.jwks_tenants");
    }

    #[test]
    fn alg_none_is_refused() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT","kid":"rs"}"#);
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims()).unwrap());
        for token in [format!("{header}.{body}."), format!("{header}.{body}")] {
            assert_eq!(verifier(false).verify(&token), Err(AuthError::Malformed));
        }
    }

    #[test]
    fn hs256_signed_with_the_rsa_public_key_is_refused() {
        // The classic confusion: the attacker knows the public key and signs
        // HS256 with its PEM as the secret, naming the RSA key.
        let forged = sign(
            Algorithm::HS256,
            "rs",
            &EncodingKey::from_secret(RS_PUBLIC.as_bytes()).unwrap(),
            &claims(),
        );
        assert_eq!(
            verifier(true).verify(&forged),
            Err(AuthError::WrongAlgorithm)
        );
        // And HS256 is not accepted at all when no secret is configured.
        let hs = sign(
            Algorithm::HS256,
            "hs",
            &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
            &claims(),
        );
        assert_eq!(verifier(false).verify(&hs), Err(AuthError::UnknownKey));
    }

    #[test]
    fn wrong_key_and_tampering_are_refused() {
        let other = EncodingKey::from_rsa_pem(OTHER_RS_PRIVATE.as_bytes()).unwrap();
        let token = sign(Algorithm::RS256, "rs", &other, &claims());
        assert_eq!(verifier(false).verify(&token), Err(AuthError::BadSignature));
        let token = sign(Algorithm::RS256, "nobody", &rs(), &claims());
        assert_eq!(verifier(false).verify(&token), Err(AuthError::UnknownKey));
        // The payload of one token under the signature of another.
        let good = sign(Algorithm::RS256, "rs", &rs(), &claims());
        let mut evil = claims();
        evil.roles = vec!["provider_admin".into(), "root".into()];
        let evil = sign(Algorithm::RS256, "rs", &other, &evil);
        let parts: Vec<&str> = good.split('.').collect();
        let evil_parts: Vec<&str> = evil.split('.').collect();
        let spliced = format!("{}.{}.{}", parts[0], evil_parts[1], parts[2]);
        assert_eq!(
            verifier(false).verify(&spliced),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn time_issuer_and_audience_are_checked() {
        let v = verifier(false);
        let now = jsonwebtoken::get_current_timestamp();
        let mut c = claims();
        c.exp = now - 120;
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c)),
            Err(AuthError::Expired)
        );
        let mut c = claims();
        c.nbf = Some(now + 3600);
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c)),
            Err(AuthError::NotYetValid)
        );
        let mut c = claims();
        c.iss = "someone-else".into();
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c)),
            Err(AuthError::WrongIssuer)
        );
        let mut c = claims();
        c.aud = "another-api".into();
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c)),
            Err(AuthError::WrongAudience)
        );
        let mut c = claims();
        c.tenant = "cus_00000000000000000000000000000000".into();
        assert_eq!(
            v.verify(&sign(Algorithm::RS256, "rs", &rs(), &c)),
            Err(AuthError::BadClaim("tenant"))
        );
    }

    #[test]
    fn a_token_without_kid_needs_exactly_one_key() {
        let token = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims(), &rs()).unwrap();
        assert_eq!(verifier(false).verify(&token), Err(AuthError::UnknownKey));
        let single = Verifier::new(&Settings {
            keys: vec![key("rs", KeyAlgorithm::RS256, Some(RS_PUBLIC), None)],
            ..Settings::default()
        })
        .unwrap();
        assert!(single.verify(&token).is_ok());
    }

    #[test]
    fn a_key_is_checked_against_its_algorithm_at_start() {
        let err = Verifier::new(&Settings {
            keys: vec![key("x", KeyAlgorithm::ES256, Some(RS_PUBLIC), None)],
            ..Settings::default()
        })
        .unwrap_err();
        assert_eq!(err.key, "api.keys.public_key_pem");
        let err = Verifier::new(&Settings {
            keys: vec![key("x", KeyAlgorithm::RS256, Some(RS_PUBLIC), Some(SECRET))],
            ..Settings::default()
        })
        .unwrap_err();
        assert_eq!(err.key, "api.keys.public_key_pem");
    }
}
