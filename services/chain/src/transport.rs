//! JSON-RPC over the workspace's reqwest, as an alloy transport.
//!
//! alloy's own HTTP transport would bring reqwest 0.13 and a second TLS stack
//! into a tree that already has reqwest 0.12 with rustls; this is the whole
//! of what it does for us: POST the packet, read the body, map failures to
//! alloy's error kinds so that its retry predicates still work.

use std::task;
use std::time::Duration;

use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportErrorKind, TransportFut};
use tower::Service;
use url::Url;

/// One RPC endpoint; cheap to clone (the client is shared).
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    url: Url,
}

impl Http {
    /// A transport to `url`, each request bounded by `timeout`.
    pub(crate) fn new(url: Url, timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            // An RPC endpoint that redirects is misconfigured; never follow
            // a signed transaction somewhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { client, url })
    }

    async fn post(self, request: RequestPacket) -> Result<ResponsePacket, TransportError> {
        let response = self
            .client
            .post(self.url)
            .json(&request)
            .send()
            .await
            // reqwest prints the URL, whose path may hold the provider's
            // API key: never let it into an error or a log.
            .map_err(|e| TransportErrorKind::custom(e.without_url()))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_secs);
        let body = response.bytes().await.map_err(TransportErrorKind::custom)?;
        if !status.is_success() {
            return Err(TransportErrorKind::http_error_with_retry_after(
                status.as_u16(),
                String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned(),
                retry_after,
            ));
        }
        serde_json::from_slice(&body)
            .map_err(|err| TransportError::deser_err(err, String::from_utf8_lossy(&body)))
    }
}

impl Service<RequestPacket> for Http {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _: &mut task::Context<'_>) -> task::Poll<Result<(), Self::Error>> {
        task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: RequestPacket) -> Self::Future {
        Box::pin(self.clone().post(request))
    }
}
