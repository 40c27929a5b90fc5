//! Synthetic probes: endpoints of the provider that slaproof measures
//! itself. Provider admins only; header values (API keys) are taken but
//! never answered, and stored sealed under the platform's key; every URL
//! passes the operator's outbound policy.

use std::collections::BTreeMap;

use chrono::{Duration, Utc};
use slaproof_domain::ids::{ProbeId, TenantId};
use slaproof_store::TenantTx;
use slaproof_store::probes;
pub use slaproof_store::probes::{ProbeDefinition, ProbeKind, ProbeOutcome, ProbeRun, StoredProbe};

use crate::authz::Scope;
use crate::idempotency::Creating;
use crate::webhook_secret::WebhookKey;
use crate::{App, AppError, Caller, Page, PageRequest};
use slaproof_http::outbound::OutboundPolicy;

pub const MIN_INTERVAL_SECS: i32 = 10;
pub const MAX_INTERVAL_SECS: i32 = 86_400;
pub const MIN_TIMEOUT_MS: i32 = 100;
pub const MAX_TIMEOUT_MS: i32 = 120_000;
pub const MAX_HEADERS: usize = 32;
/// Probes one tenant may have: each is load on the platform and on its
/// target, and slaproof must not become a tenant's traffic cannon.
pub const MAX_PROBES_PER_TENANT: i64 = 100;
/// Headers the HTTP client owns: setting them would make the request lie
/// about itself or break framing.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// A probe to define. Absent optional fields take the defaults named.
/// `Debug` shows header names only: their values are credentials for the
/// provider's endpoint.
#[derive(Clone)]
pub struct NewProbe {
    pub name: String,
    pub service: String,
    /// The customer the probe measures for, by reference (its events
    /// name it, so its customer's SLAs count them); `None`: the
    /// provider's own probe.
    pub customer: Option<String>,
    pub model: Option<String>,
    pub kind: ProbeKind,
    /// Default GET for `http`, POST for `streaming_completion`.
    pub method: Option<String>,
    pub url: String,
    pub headers: BTreeMap<String, String>,
    pub body: Option<serde_json::Value>,
    /// Default 200.
    pub expected_status: Option<i32>,
    /// Default 60.
    pub interval_secs: Option<i32>,
    /// Default 10 s, or the interval when shorter.
    pub timeout_ms: Option<i32>,
    /// Default true.
    pub enabled: Option<bool>,
}

/// Changes to a probe; `None` leaves a field as it is. `Some(None)`
/// clears an optional field. `Debug` shows header names only.
#[derive(Clone, Default)]
pub struct ProbePatch {
    pub name: Option<String>,
    pub service: Option<String>,
    pub customer: Option<Option<String>>,
    pub model: Option<Option<String>>,
    pub kind: Option<ProbeKind>,
    pub method: Option<String>,
    pub url: Option<String>,
    /// Replaces every header (values cannot be read back to merge).
    pub headers: Option<BTreeMap<String, String>>,
    pub body: Option<Option<serde_json::Value>>,
    pub expected_status: Option<i32>,
    pub interval_secs: Option<i32>,
    pub timeout_ms: Option<i32>,
    pub enabled: Option<bool>,
}

impl std::fmt::Debug for NewProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewProbe")
            .field("name", &self.name)
            .field("service", &self.service)
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("header_names", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ProbePatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbePatch")
            .field("name", &self.name)
            .field("url", &self.url)
            .field(
                "header_names",
                &self.headers.as_ref().map(|h| h.keys().collect::<Vec<_>>()),
            )
            .finish_non_exhaustive()
    }
}

/// A probe named by its id (`prb_…`) or its name.
fn lookup_key(reference: &str) -> Result<Option<ProbeId>, AppError> {
    if reference.starts_with("prb_") {
        reference.parse().map(Some).map_err(|_| AppError::NotFound {
            what: "probe",
            key: reference.to_owned(),
        })
    } else {
        Ok(None)
    }
}

async fn find(tx: &mut TenantTx, reference: &str) -> Result<StoredProbe, AppError> {
    Ok(match lookup_key(reference)? {
        Some(id) => probes::find(tx, id).await?,
        None => probes::find_by_name(tx, reference).await?,
    })
}

fn check_name(name: &str) -> Result<(), AppError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    // `_` would let a name look like an id; ids start with `prb_`.
    if !first_ok || !rest_ok || name.len() > 63 || name.contains('_') {
        return Err(AppError::invalid(
            "name",
            "must be 1-63 characters of a-z, 0-9, '.' and '-', starting with a letter or digit",
        ));
    }
    Ok(())
}

fn check_text(field: &str, value: &str) -> Result<String, AppError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > 256 {
        return Err(AppError::invalid(field, "must be 1-256 characters"));
    }
    Ok(value.to_owned())
}

fn check_headers(headers: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AppError> {
    use crate::headers::{HeaderProblem, HeaderRules, check};
    const RULES: HeaderRules = HeaderRules {
        max: MAX_HEADERS,
        max_name_bytes: usize::MAX,
        max_value_bytes: 8192,
        reserved: RESERVED_HEADERS,
        reserved_prefix: None,
        trimmed: false,
    };
    let field = |name: &str| format!("headers.{name}");
    check(headers, &RULES).map_err(|problem| match problem {
        HeaderProblem::TooMany => {
            AppError::invalid("headers", format!("at most {MAX_HEADERS} headers"))
        }
        HeaderProblem::BadName(name) => {
            AppError::invalid(field(&name), "is not a valid header name")
        }
        HeaderProblem::Reserved(name) => AppError::invalid(
            field(&name),
            "is set by slaproof's HTTP client and cannot be chosen",
        ),
        HeaderProblem::BadValue(name) => AppError::invalid(
            field(&name),
            "must be at most 8192 visible ASCII characters",
        ),
        HeaderProblem::Twice(name) => {
            AppError::invalid(field(&name), "is given twice (names are case-insensitive)")
        }
    })
}

/// Checks a whole definition (after defaults or a patch were applied).
fn check_definition(definition: &mut ProbeDefinition) -> Result<(), AppError> {
    check_name(&definition.name)?;
    definition.service = check_text("service", &definition.service)?;
    if let Some(model) = &definition.model {
        definition.model = Some(check_text("model", model)?);
    }
    if let Some(customer) = &definition.customer {
        slaproof_domain::sla::check_customer_ref(customer)
            .map_err(|e| AppError::invalid("customer", e.0))?;
    }
    definition.method = definition.method.to_ascii_uppercase();
    let methods: &[&str] = match definition.kind {
        ProbeKind::Http => &["GET", "HEAD", "POST", "PUT", "OPTIONS"],
        ProbeKind::StreamingCompletion => &["POST"],
    };
    if !methods.contains(&definition.method.as_str()) {
        return Err(AppError::invalid(
            "method",
            format!(
                "must be one of {} for a {} probe",
                methods.join(", "),
                definition.kind.as_str()
            ),
        ));
    }
    definition.headers = check_headers(&definition.headers)?;
    match (&definition.kind, &definition.body) {
        (ProbeKind::Http, Some(_)) if matches!(definition.method.as_str(), "GET" | "HEAD") => {
            return Err(AppError::invalid(
                "body",
                "a GET or HEAD request carries no body",
            ));
        }
        (ProbeKind::StreamingCompletion, Some(body)) if !body.is_object() => {
            return Err(AppError::invalid(
                "body",
                "must be a JSON object (the chat completion request)",
            ));
        }
        (ProbeKind::StreamingCompletion, None) if definition.model.is_none() => {
            return Err(AppError::invalid(
                "model",
                "is needed for a streaming_completion probe without a body",
            ));
        }
        _ => {}
    }
    if let Some(body) = &definition.body
        && body.to_string().len() > 64 * 1024
    {
        return Err(AppError::invalid("body", "must be at most 64 KiB"));
    }
    if !(100..=599).contains(&definition.expected_status) {
        return Err(AppError::invalid(
            "expected_status",
            "must be an HTTP status, 100-599",
        ));
    }
    if !(MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(&definition.interval_secs) {
        return Err(AppError::invalid(
            "interval_secs",
            format!("must be between {MIN_INTERVAL_SECS} and {MAX_INTERVAL_SECS}"),
        ));
    }
    let max_timeout = MAX_TIMEOUT_MS.min(definition.interval_secs.saturating_mul(1000));
    if !(MIN_TIMEOUT_MS..=max_timeout).contains(&definition.timeout_ms) {
        return Err(AppError::invalid(
            "timeout_ms",
            format!("must be between {MIN_TIMEOUT_MS} and {max_timeout} (at most the interval)"),
        ));
    }
    Ok(())
}

/// `headers` with every value sealed under `key` for `tenant` (see
/// [`WebhookKey::seal_probe_header`]).
pub(crate) fn seal_all(
    key: &WebhookKey,
    tenant: TenantId,
    headers: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    headers
        .into_iter()
        .map(|(name, value)| {
            let sealed = key.seal_probe_header(tenant, &name, &value);
            (name, sealed)
        })
        .collect()
}

impl App {
    /// A checked probe's headers as stored: every value sealed under the
    /// platform's key (the webhook key), which the probe runner opens.
    async fn seal_probe_headers(
        &self,
        tenant: TenantId,
        headers: BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, AppError> {
        if headers.is_empty() {
            return Ok(headers);
        }
        Ok(seal_all(&self.webhook_key().await?, tenant, headers))
    }
}

/// A new probe's definition with the defaults applied, checked field by
/// field (not yet its URL against the outbound policy, which needs DNS).
/// The CLI defines probes through this too.
pub fn definition_of(new: NewProbe) -> Result<ProbeDefinition, AppError> {
    let interval_secs = new.interval_secs.unwrap_or(60);
    let mut definition = ProbeDefinition {
        name: new.name,
        service: new.service,
        customer: new.customer,
        model: new.model,
        kind: new.kind,
        method: new.method.unwrap_or_else(|| {
            match new.kind {
                ProbeKind::Http => "GET",
                ProbeKind::StreamingCompletion => "POST",
            }
            .to_owned()
        }),
        url: new.url,
        headers: new.headers,
        body: new.body,
        expected_status: new.expected_status.unwrap_or(200),
        interval_secs,
        timeout_ms: new
            .timeout_ms
            .unwrap_or_else(|| 10_000.min(interval_secs.saturating_mul(1000))),
        enabled: new.enabled.unwrap_or(true),
    };
    check_definition(&mut definition)?;
    Ok(definition)
}

/// Refuses a URL `outbound` does not allow, resolving its host now (the
/// runner checks again at each connection); answers it normalised. A
/// refusal names the host and the class of address, never an address the
/// host resolved to (the policy's messages are written so).
pub(crate) async fn check_url(outbound: &OutboundPolicy, url: &str) -> Result<String, AppError> {
    let url = url.trim();
    if url.len() > 2048 {
        return Err(AppError::invalid("url", "must be at most 2048 characters"));
    }
    let parsed = outbound
        .check_target(url)
        .await
        .map_err(|refusal| AppError::invalid("url", refusal.to_string()))?;
    let parsed = parsed.to_string();
    // Normalising (punycode, percent-encoding) can lengthen it.
    if parsed.len() > 2048 {
        return Err(AppError::invalid("url", "must be at most 2048 characters"));
    }
    Ok(parsed)
}

/// A new probe's definition under every rule of its own: its fields and
/// the outbound policy, its host resolved when it was checked
/// ([`App::check_probe`]), before any transaction is open. Only that check
/// makes one, so nothing stores a probe that skipped it.
#[derive(Debug, Clone)]
pub struct CheckedProbe(ProbeDefinition);

impl App {
    /// Creates a probe: the one path for `POST /v1/probes`, GraphQL and
    /// `slaproof probe create`, which differ only in who may call.
    pub async fn create_probe(
        &self,
        caller: &Caller,
        new: NewProbe,
    ) -> Result<StoredProbe, AppError> {
        let checked = self.check_probe(caller, new).await?;
        self.in_tx(caller, async |tx| {
            self.create_probe_in(tx, caller, checked).await
        })
        .await
    }

    /// Checks a new probe under every rule of its own and the outbound
    /// policy, resolving its host: done before the transaction that stores
    /// it opens, so no pooled connection waits on DNS.
    #[tracing::instrument(skip(self, caller, new), fields(tenant = %caller.tenant(), name = %new.name))]
    pub async fn check_probe(
        &self,
        caller: &Caller,
        new: NewProbe,
    ) -> Result<CheckedProbe, AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        let mut definition = definition_of(new)?;
        definition.url = check_url(&self.outbound, &definition.url).await?;
        definition.headers = self
            .seal_probe_headers(caller.tenant(), definition.headers)
            .await?;
        Ok(CheckedProbe(definition))
    }

    /// Stores a checked probe inside a transaction of the caller's tenant
    /// (see [`App::once`]) unless the tenant has [`MAX_PROBES_PER_TENANT`]
    /// already (counted under a per-tenant lock, so concurrent creations
    /// cannot pass the cap).
    #[tracing::instrument(skip(self, tx, caller, probe), fields(tenant = %caller.tenant()))]
    pub async fn create_probe_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        probe: CheckedProbe,
    ) -> Result<StoredProbe, AppError> {
        Creating::PROBE.require(caller)?;
        if probes::count_locked(tx).await? >= MAX_PROBES_PER_TENANT {
            return Err(AppError::Conflict(format!(
                "a tenant may have at most {MAX_PROBES_PER_TENANT} probes; delete one first"
            )));
        }
        Ok(probes::create(tx, &probe.0).await?)
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_probes(
        &self,
        caller: &Caller,
        page: &PageRequest,
    ) -> Result<Page<StoredProbe>, AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        let mut tx = self.tx(caller).await?;
        let keyset = page.keyset()?;
        let rows = probes::list(&mut tx, &keyset).await?;
        tx.commit().await?;
        Ok(Page::of(rows, &keyset, |p| p.definition.name.as_str()))
    }

    /// A probe by id (`prb_…`) or name.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn get_probe(
        &self,
        caller: &Caller,
        reference: &str,
    ) -> Result<StoredProbe, AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        let mut tx = self.tx(caller).await?;
        let probe = find(&mut tx, reference).await?;
        tx.commit().await?;
        Ok(probe)
    }

    #[tracing::instrument(skip(self, caller, patch), fields(tenant = %caller.tenant()))]
    pub async fn update_probe(
        &self,
        caller: &Caller,
        reference: &str,
        patch: ProbePatch,
    ) -> Result<StoredProbe, AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        // The URL is checked (with DNS) before the transaction opens.
        let url = match &patch.url {
            Some(url) => Some(check_url(&self.outbound, url).await?),
            None => None,
        };
        let key = match patch.headers {
            Some(_) => Some(self.webhook_key().await?),
            None => None,
        };
        let mut tx = self.tx(caller).await?;
        let stored = find(&mut tx, reference).await?;
        let mut definition = stored.definition;
        // Kept sealed as stored, out of the checks below (which read
        // values as given), unless the patch replaces them.
        let kept = std::mem::take(&mut definition.headers);
        let kind_changed = patch.kind.is_some_and(|k| k != definition.kind);
        if let Some(name) = patch.name {
            definition.name = name;
        }
        if let Some(service) = patch.service {
            definition.service = service;
        }
        if let Some(model) = patch.model {
            definition.model = model;
        }
        if let Some(customer) = patch.customer {
            definition.customer = customer;
        }
        if let Some(kind) = patch.kind {
            definition.kind = kind;
        }
        match patch.method {
            Some(method) => definition.method = method,
            // A streaming completion is a POST; switching kinds without a
            // method takes the new kind's default.
            None if kind_changed => {
                definition.method = match definition.kind {
                    ProbeKind::Http => "GET",
                    ProbeKind::StreamingCompletion => "POST",
                }
                .to_owned();
            }
            None => {}
        }
        if let Some(url) = url {
            definition.url = url;
        }
        if let Some(headers) = patch.headers {
            definition.headers = headers;
        }
        if let Some(body) = patch.body {
            definition.body = body;
        }
        if let Some(status) = patch.expected_status {
            definition.expected_status = status;
        }
        if let Some(interval) = patch.interval_secs {
            definition.interval_secs = interval;
        }
        if let Some(timeout) = patch.timeout_ms {
            definition.timeout_ms = timeout;
        }
        if let Some(enabled) = patch.enabled {
            definition.enabled = enabled;
        }
        check_definition(&mut definition)?;
        definition.headers = match key {
            Some(key) => seal_all(&key, caller.tenant(), definition.headers),
            None => kept,
        };
        let probe = probes::update(&mut tx, stored.id, &definition).await?;
        tx.commit().await?;
        Ok(probe)
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn delete_probe(&self, caller: &Caller, reference: &str) -> Result<(), AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        let mut tx = self.tx(caller).await?;
        let stored = find(&mut tx, reference).await?;
        probes::delete(&mut tx, stored.id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Makes a probe due now; a runner measures it within a poll.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn run_probe_now(
        &self,
        caller: &Caller,
        reference: &str,
    ) -> Result<StoredProbe, AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        let mut tx = self.tx(caller).await?;
        let stored = find(&mut tx, reference).await?;
        if !stored.definition.enabled {
            return Err(AppError::Conflict(format!(
                "probe {} is disabled; enable it to run it",
                stored.definition.name
            )));
        }
        let probe = probes::run_now(&mut tx, stored.id).await?;
        tx.commit().await?;
        Ok(probe)
    }

    /// The probe's runs of the last `days` days, newest first.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn probe_runs(
        &self,
        caller: &Caller,
        reference: &str,
        limit: Option<u32>,
    ) -> Result<(StoredProbe, Vec<ProbeRun>), AppError> {
        caller.require_provider(Scope::ProbeManage)?;
        // The limit of a list page, by the same rule.
        let limit = PageRequest {
            cursor: None,
            limit,
        }
        .keyset()?
        .limit;
        let mut tx = self.tx(caller).await?;
        let stored = find(&mut tx, reference).await?;
        // Bounded in time so only the recent daily partitions are read.
        let since = Utc::now() - Duration::days(7);
        let runs = probes::runs(&mut tx, stored.id, since, limit).await?;
        tx.commit().await?;
        Ok((stored, runs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_never_reach_a_debug_line() {
        let headers: BTreeMap<String, String> =
            [("Authorization".to_owned(), "Bearer sk-live-1".to_owned())].into();
        let new = NewProbe {
            name: "chat-eu".into(),
            service: "chat-completions".into(),
            customer: None,
            model: None,
            kind: ProbeKind::Http,
            method: None,
            url: "https://api.example.com/health".into(),
            headers: headers.clone(),
            body: None,
            expected_status: None,
            interval_secs: None,
            timeout_ms: None,
            enabled: None,
        };
        let patch = ProbePatch {
            headers: Some(headers),
            ..ProbePatch::default()
        };
        for line in [format!("{new:?}"), format!("{patch:?}")] {
            assert!(line.contains("Authorization"), "{line}");
            assert!(!line.contains("sk-live-1"), "{line}");
        }
    }

    fn definition() -> ProbeDefinition {
        ProbeDefinition {
            name: "chat-eu".into(),
            service: "chat-completions".into(),
            customer: None,
            model: Some("llama-3".into()),
            kind: ProbeKind::StreamingCompletion,
            method: "post".into(),
            url: "https://api.example.com/v1/chat/completions".into(),
            headers: [("Authorization".to_owned(), "Bearer sk-1".to_owned())].into(),
            body: None,
            expected_status: 200,
            interval_secs: 60,
            timeout_ms: 10_000,
            enabled: true,
        }
    }

    fn message_of(err: AppError) -> String {
        match err {
            AppError::Invalid { field, message } => {
                assert_eq!(field, "url");
                message
            }
            other => panic!("not invalid: {other}"),
        }
    }

    #[tokio::test]
    async fn a_refused_name_is_told_by_its_class_not_its_addresses() {
        let strict = OutboundPolicy::strict();
        let message = message_of(check_url(&strict, "http://localhost:9/").await.unwrap_err());
        assert!(
            message.contains("localhost is or resolves to a loopback address"),
            "{message}"
        );
        for address in ["127.0.0.1", "::1"] {
            assert!(!message.contains(address), "{message}");
        }
        // An unresolvable name is told so, without addresses either way.
        let message = message_of(
            check_url(&strict, "http://does-not-exist.invalid/")
                .await
                .unwrap_err(),
        );
        assert!(message.contains("does not resolve"), "{message}");
    }

    #[tokio::test]
    async fn ipv6_ranges_that_reach_inside_are_refused() {
        let strict = OutboundPolicy::strict();
        // (literal, the class named, or None when it may be probed)
        let table: &[(&str, Option<&str>)] = &[
            ("64:ff9b:1::a00:1", Some("NAT64 local-use")),
            ("64:ff9b:1::808:808", Some("NAT64 local-use")),
            ("64:ff9b::a00:1", Some("private")),
            ("64:ff9b::7f00:1", Some("loopback")),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::808:808", None),
            ("::ffff:10.0.0.1", Some("private")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("2002:a00:1::1", Some("private")),
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:808:808::1", None),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("2001::/23")),
            ("5f00::1", Some("reserved")),
            ("3fff::1", Some("documentation")),
            ("2606:4700:4700::1111", None),
        ];
        for (literal, refused) in table {
            let url = format!("http://[{literal}]/");
            let checked = check_url(&strict, &url).await;
            match refused {
                None => assert!(checked.is_ok(), "{url}: {checked:?}"),
                Some(range) => {
                    let message = message_of(checked.unwrap_err());
                    assert!(message.contains(range), "{url}: {message}");
                }
            }
        }
        // The operator may allow the local-use prefix as any other range.
        let allowing = OutboundPolicy::allowing(["64:ff9b:1::/48".parse().unwrap()]);
        assert!(
            check_url(&allowing, "http://[64:ff9b:1::a00:1]/")
                .await
                .is_ok()
        );
        let private = OutboundPolicy {
            allow_private_targets: true,
            allowed_networks: vec![],
        };
        assert!(
            check_url(&private, "http://[64:ff9b:1::a00:1]/")
                .await
                .is_ok()
        );
    }

    fn field_of(err: AppError) -> String {
        match err {
            AppError::Invalid { field, .. } => field,
            other => panic!("not invalid: {other}"),
        }
    }

    #[test]
    fn a_good_definition_is_normalised() {
        let mut d = definition();
        check_definition(&mut d).unwrap();
        assert_eq!(d.method, "POST");
        assert_eq!(d.headers["authorization"], "Bearer sk-1");
    }

    #[test]
    fn each_bad_field_is_named() {
        type Change = Box<dyn Fn(&mut ProbeDefinition)>;
        let cases: Vec<(&str, Change)> = vec![
            ("name", Box::new(|d| d.name = "Chat EU".into())),
            ("name", Box::new(|d| d.name = "prb_x".into())),
            ("service", Box::new(|d| d.service = " ".into())),
            ("method", Box::new(|d| d.method = "GET".into())),
            (
                "headers.Host",
                Box::new(|d| {
                    d.headers.insert("Host".into(), "x".into());
                }),
            ),
            (
                "headers.x-bad",
                Box::new(|d| {
                    d.headers.insert("x-bad".into(), "a\nb".into());
                }),
            ),
            ("body", Box::new(|d| d.body = Some(serde_json::json!([1])))),
            ("expected_status", Box::new(|d| d.expected_status = 700)),
            ("interval_secs", Box::new(|d| d.interval_secs = 5)),
            ("timeout_ms", Box::new(|d| d.timeout_ms = 61_000)),
            (
                "model",
                Box::new(|d| {
                    d.model = None;
                }),
            ),
        ];
        for (field, change) in cases {
            let mut d = definition();
            change(&mut d);
            assert_eq!(field_of(check_definition(&mut d).unwrap_err()), field);
        }
        let mut get_with_body = definition();
        get_with_body.kind = ProbeKind::Http;
        get_with_body.method = "GET".into();
        get_with_body.body = Some(serde_json::json!({}));
        assert_eq!(
            field_of(check_definition(&mut get_with_body).unwrap_err()),
            "body"
        );
    }
}
