//! Changing an endpoint, and the rules its settings share with creating
//! one: description, customer filter and rate limit.

use std::collections::BTreeMap;

use slaproof_domain::ids::CustomerId;
use slaproof_store::{TenantTx, customers, webhooks};

use super::{WebhookEndpoint, event_types_of, headers_of, parse_id, seal_headers};
use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// The highest rate limit an endpoint may ask for, attempts per second.
pub const MAX_RATE_LIMIT_PER_SEC: i32 = 10_000;

/// What to change on an endpoint: a field left `None` stays as it is; for
/// the nullable ones, `Some(None)` clears it. `Debug` leaves the header
/// values out.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct WebhookEndpointChange {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    /// Replaces every custom header (an empty map removes them all).
    pub headers: Option<BTreeMap<String, String>>,
    pub customer_ref: Option<Option<String>>,
    pub rate_limit_per_sec: Option<Option<i32>>,
    pub ordered: Option<bool>,
    pub enabled: Option<bool>,
}

impl std::fmt::Debug for WebhookEndpointChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpointChange")
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field(
                "header_names",
                &self.headers.as_ref().map(|h| h.keys().collect::<Vec<_>>()),
            )
            .field("customer_ref", &self.customer_ref)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .field("ordered", &self.ordered)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

/// A description as kept: trimmed, at most 1,000 characters.
pub(super) fn description_of(given: String) -> Result<String, AppError> {
    let description = given.trim().to_owned();
    if description.chars().count() > 1000 {
        return Err(AppError::invalid(
            "description",
            "must be at most 1000 characters",
        ));
    }
    Ok(description)
}

/// A rate limit within 1..=[`MAX_RATE_LIMIT_PER_SEC`].
pub(super) fn rate_limit_of(given: Option<i32>) -> Result<Option<i32>, AppError> {
    match given {
        Some(n) if !(1..=MAX_RATE_LIMIT_PER_SEC).contains(&n) => Err(AppError::invalid(
            "rate_limit_per_sec",
            format!("must be between 1 and {MAX_RATE_LIMIT_PER_SEC} attempts per second, got {n}"),
        )),
        other => Ok(other),
    }
}

/// The tenant's customer with this external reference.
pub(super) async fn customer_of(tx: &mut TenantTx, given: &str) -> Result<CustomerId, AppError> {
    match customers::find_by_ref(tx, given.trim()).await? {
        Some(customer) => Ok(customer.id),
        None => Err(AppError::invalid(
            "customer_ref",
            format!("the tenant has no customer {:?}", given.trim()),
        )),
    }
}

impl App {
    /// Changes an endpoint's settings in one transaction: what is given is
    /// checked as at creation, what is left out stays. Its secret changes
    /// only by rotation. A changed URL, filter or limit applies to the
    /// next claim, deliveries already written included.
    #[tracing::instrument(skip(self, caller, change), fields(tenant = %caller.tenant()))]
    pub async fn update_webhook_endpoint(
        &self,
        caller: &Caller,
        id: &str,
        change: WebhookEndpointChange,
    ) -> Result<WebhookEndpoint, AppError> {
        caller.require_provider(Scope::WebhookWrite)?;
        let id = parse_id(id)?;
        let description = change.description.map(description_of).transpose()?;
        let event_types = match change.event_types {
            Some(types) => Some(event_types_of(Some(types))?),
            None => None,
        };
        let headers = change.headers.map(headers_of).transpose()?;
        let headers = match headers {
            Some(headers) => {
                let key = self.webhook_key().await?;
                Some(seal_headers(&key, caller.tenant(), id, &headers))
            }
            None => None,
        };
        let rate_limit_per_sec = match change.rate_limit_per_sec {
            Some(limit) => Some(rate_limit_of(limit)?),
            None => None,
        };
        // Before any transaction: resolving the host can take seconds.
        let url = match &change.url {
            Some(url) => Some(crate::probes::check_url(&self.outbound, url).await?),
            None => None,
        };
        let reason = format!("disabled by {}", caller.principal.subject);
        self.in_tx(caller, async |tx| {
            let customer = match &change.customer_ref {
                Some(Some(r)) => Some(Some(customer_of(tx, r).await?)),
                Some(None) => Some(None),
                None => None,
            };
            let wanted = webhooks::EndpointChange {
                url,
                description,
                event_types,
                headers,
                customer,
                rate_limit_per_sec,
                ordered: change.ordered,
            };
            let mut stored = webhooks::update(tx, id, &wanted).await?;
            if let Some(enabled) = change.enabled
                && enabled != stored.enabled
            {
                stored = webhooks::set_enabled(tx, id, enabled, Some(&reason)).await?;
            }
            Ok(stored.into())
        })
        .await
    }
}
