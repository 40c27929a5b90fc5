//! OpenSLO v1 `SLO` and `SLI` documents: import into an SLA and export from one.
//!
//! How OpenSLO maps onto an SLA:
//!
//! - Every `SLO` document in the input becomes objectives of **one** SLA;
//!   they must all name the same `spec.service` and the same `timeWindow`
//!   (one SLA is measured over one window). Each objective of an SLO
//!   becomes one objective, named by its `name` if it has one (an
//!   extension), else by the SLO's `metadata.name` when the SLO has a single
//!   objective, else `<slo name>-<n>` counting from 1.
//! - The SLA's own name, display name, description and customer come from
//!   the annotations `slaproof.dev/sla`, `slaproof.dev/sla-display-name`,
//!   `slaproof.dev/sla-description` and `slaproof.dev/customer` on the SLOs;
//!   without `slaproof.dev/sla` the SLA is named after the service. The
//!   SLA's policy (lateness, maintenance, degrade, no data) is the
//!   annotation `slaproof.dev/policy`, a JSON object shaped like the native
//!   `spec.policy`; its credit policy is the annotation
//!   `slaproof.dev/credits`, a JSON object shaped like the native
//!   `spec.credits`; where its proofs are anchored is the annotation
//!   `slaproof.dev/attestation`, a JSON object shaped like the native
//!   `spec.attestation` (`{"anchor": "batched"}`). Other labels and
//!   annotations are ignored.
//! - SLIs are inline (`indicator`, on the SLO or on an objective) or
//!   referenced by name (`indicatorRef`) to `SLI` documents in the input.
//! - We measure our own events, so a metric source must be
//!   `type: slaproof` with `spec: {filter: "..."}` for ratio metrics,
//!   `spec: {field: latency_ms, filter: "..."}` for threshold metrics on an
//!   event field (threshold `value` in the field's unit: milliseconds for
//!   latencies), or `spec: {gauge: quality_score}` for gauges. Anything else
//!   is refused with a message naming the path.
//! - `Service` documents are accepted and ignored; `alertPolicies` are
//!   ignored (slaproof raises burn-rate alerts itself); other kinds are refused.
//!
//! Export writes, per objective, an `SLI` named `<objective>-sli` and an
//! `SLO` named after the objective referring to it, carrying the SLA in
//! annotations, so that importing the export gives an equal SLA.

mod export;
mod import;
mod indicator;

use serde_json::Value;

use super::error::Problems;
use super::tree::{Obj, join};
use crate::sla;

pub(crate) use export::write;
pub(crate) use import::read;

pub(crate) const API_VERSION: &str = "openslo/v1";
const METRIC_SOURCE_TYPE: &str = "slaproof";
const ANNOTATION_SLA: &str = "slaproof.dev/sla";
const ANNOTATION_DISPLAY_NAME: &str = "slaproof.dev/sla-display-name";
const ANNOTATION_DESCRIPTION: &str = "slaproof.dev/sla-description";
const ANNOTATION_CUSTOMER: &str = "slaproof.dev/customer";
/// Whose requests the SLA is judged on: `customer` or `service` (the
/// native `spec.scope`).
const ANNOTATION_SCOPE: &str = "slaproof.dev/scope";
/// The SLA's policy as a JSON object of the native `spec.policy` shape.
const ANNOTATION_POLICY: &str = "slaproof.dev/policy";
/// The SLA's credit policy as a JSON object of the native `spec.credits` shape.
const ANNOTATION_CREDITS: &str = "slaproof.dev/credits";
/// Where the SLA's proofs are anchored, a JSON object of the native `spec.attestation` shape.
const ANNOTATION_ATTESTATION: &str = "slaproof.dev/attestation";

/// Whether an `SLO` among `docs` carries the SLA's policy annotation.
pub(crate) fn sets_policy(docs: &[Value]) -> bool {
    docs.iter().any(|doc| {
        doc.get("kind").and_then(Value::as_str) == Some("SLO")
            && doc
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(ANNOTATION_POLICY))
                .is_some()
    })
}

/// Whether an `SLO` among `docs` says whose requests the SLA is judged on
/// (the scope annotation).
pub(crate) fn sets_scope(docs: &[Value]) -> bool {
    docs.iter().any(|doc| {
        doc.get("kind").and_then(Value::as_str) == Some("SLO")
            && doc
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(ANNOTATION_SCOPE))
                .is_some()
    })
}

/// The `metadata` of an SLO or SLI document, as far as slaproof reads it.
struct Metadata<'a> {
    name: Option<&'a str>,
    display_name: Option<String>,
    annotations: Vec<(String, &'a str, String)>,
}

/// Reads and checks a document's `metadata`, keeping the `slaproof.dev/` annotations.
fn read_metadata<'a>(meta: &Obj<'a>, p: &mut Problems) -> Metadata<'a> {
    let name = meta.req_str("name", p);
    if let Some(n) = name
        && let Err(e) = crate::objective::check_slug(n)
    {
        p.push(&meta.path_of("name"), e.0);
    }
    let display_name = meta.opt_text("displayName", sla::MAX_DISPLAY_NAME, p);
    let mut annotations = Vec::new();
    if let Some(node) = meta.get("annotations")
        && let Some(map) = node.object(&[], true, p)
    {
        for (key, value) in map.map() {
            if key.starts_with("slaproof.dev/") {
                let path = join(&node.path, key);
                match value {
                    Value::String(s) => annotations.push((key.clone(), s.as_str(), path)),
                    _ => p.push(&path, "must be text"),
                }
            }
        }
    }
    Metadata {
        name,
        display_name,
        annotations,
    }
}
