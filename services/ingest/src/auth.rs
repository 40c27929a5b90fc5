//! Ingest-key authentication: `Authorization: Bearer spk_…` names the
//! tenant every event of the request is written for. The body never names
//! a tenant, so no key can write another tenant's data.

use axum::http::{HeaderMap, header};
use slaproof_store::{Database, ingest_keys};

use crate::problem::IngestProblem;

pub(crate) use slaproof_store::ingest_keys::Authenticated;

/// The bearer token of a request, if it carries one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The tenant and key a request speaks for, or the 401 (or 503 when the
/// database cannot say) to answer.
#[tracing::instrument(skip_all)]
pub(crate) async fn authenticate(
    db: &Database,
    headers: &HeaderMap,
    retry_after_secs: u64,
) -> Result<Authenticated, IngestProblem> {
    let Some(token) = bearer(headers) else {
        return Err(IngestProblem::unauthorized());
    };
    match ingest_keys::authenticate(db, token).await {
        Ok(Some(who)) => Ok(who),
        Ok(None) => Err(IngestProblem::unauthorized()),
        Err(err) => {
            tracing::warn!(error = %err, "cannot check an ingest key");
            Err(IngestProblem::unavailable(retry_after_secs))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bearer_tokens_are_read() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer spk_x".parse().unwrap());
        assert_eq!(bearer(&headers), Some("spk_x"));
        headers.insert(header::AUTHORIZATION, "bearer  spk_y ".parse().unwrap());
        assert_eq!(bearer(&headers), Some("spk_y"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }
}
