//! Applying a document to an SLA that exists: what the new version keeps of the one in force, and the objectives it would drop, refused unless the caller confirms.
//!
//! - A native document is the whole SLA: its objectives replace the SLA's.
//! - OpenSLO `SLO`s are often kept one per file, so by default they merge
//!   into the SLA: an objective of the document replaces the SLA's
//!   objective of the same name, the SLA's other objectives are kept. The
//!   SLA's service and window must be the document's (one SLA measures
//!   one service over one window); the display name, description, customer
//!   and policy are the document's where its annotations give them, else
//!   kept. With `replace` the document is the whole SLA, as a native one.
//! - Whatever the format, a version that would drop objectives of the one
//!   in force is refused (409) naming them, unless the caller confirms with
//!   `drop_objectives`; the answer lists what was dropped.

use slaproof_domain::sla::{DocumentFormat, SlaDefinition};
use slaproof_store::slas::StoredSla;

use crate::AppError;

/// An SLA document read and checked, not yet applied (see
/// [`crate::App::read_sla_document`]).
#[derive(Debug, Clone)]
pub struct ReadDocument {
    pub definition: SlaDefinition,
    pub format: DocumentFormat,
}

/// How a document applies to an SLA that exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyOptions {
    /// The document is the whole SLA even when it is OpenSLO (which
    /// otherwise merges its objectives into the SLA's).
    pub replace: bool,
    /// Confirms a version that drops objectives of the one in force.
    pub drop_objectives: bool,
}

/// The version a document makes of an SLA, and the objectives of the
/// version in force it drops.
#[derive(Debug)]
pub(crate) struct NextVersion {
    pub definition: SlaDefinition,
    pub dropped: Vec<String>,
}

/// The version `document` (read from a document in `format`) makes of the
/// SLA whose version in force is `current` (`None`: a new SLA).
pub(crate) fn next_version(
    document: SlaDefinition,
    format: DocumentFormat,
    current: Option<&StoredSla>,
    options: ApplyOptions,
) -> Result<NextVersion, AppError> {
    let Some(current) = current else {
        return Ok(NextVersion {
            definition: document,
            dropped: Vec::new(),
        });
    };
    let definition = match format {
        DocumentFormat::OpenSlo {
            sets_policy,
            sets_scope,
        } if !options.replace => merge(document, &current.definition, sets_policy, sets_scope)?,
        _ => document,
    };
    let dropped: Vec<String> = current
        .definition
        .objectives
        .iter()
        .filter(|o| definition.objective(o.name.as_str()).is_none())
        .map(|o| o.name.as_str().to_owned())
        .collect();
    if !dropped.is_empty() && !options.drop_objectives {
        let names: Vec<String> = dropped.iter().map(|n| format!("{n:?}")).collect();
        return Err(AppError::Conflict(format!(
            "applying this document would drop {} of SLA {:?} (version {} in force): {}. \
             Keep them in the document, or confirm with `drop_objectives: true` \
             (GraphQL `dropObjectives: true`, CLI `--drop-objectives`)",
            if dropped.len() == 1 {
                "an objective"
            } else {
                "objectives"
            },
            current.definition.name.as_str(),
            current.current_version,
            names.join(", "),
        )));
    }
    Ok(NextVersion {
        definition,
        dropped,
    })
}

/// OpenSLO objectives merged into the SLA in force (see the module's notes).
fn merge(
    document: SlaDefinition,
    current: &SlaDefinition,
    sets_policy: bool,
    sets_scope: bool,
) -> Result<SlaDefinition, AppError> {
    let name = current.name.as_str();
    let mut wrong = Vec::new();
    if document.service != current.service {
        wrong.push(format!(
            "spec.service: the SLA {name:?} measures the service {:?}, the document {:?}: \
             SLOs merged into an SLA must measure its service (name another SLA with the \
             annotation slaproof.dev/sla)",
            current.service, document.service
        ));
    }
    if document.window != current.window {
        wrong.push(format!(
            "spec.timeWindow: the SLA {name:?} is measured over {}, the document over {}: \
             SLOs merged into an SLA must use its window",
            current.window, document.window
        ));
    }
    if !wrong.is_empty() {
        return Err(AppError::invalid(
            "document",
            format!(
                "{}; to replace the whole SLA with this document, apply it with `replace: true`",
                wrong.join("; ")
            ),
        ));
    }
    let mut objectives = current.objectives.clone();
    for objective in document.objectives {
        match objectives.iter_mut().find(|o| o.name == objective.name) {
            Some(same) => *same = objective,
            None => objectives.push(objective),
        }
    }
    let merged = SlaDefinition {
        name: current.name.clone(),
        display_name: document
            .display_name
            .or_else(|| current.display_name.clone()),
        description: document.description.or_else(|| current.description.clone()),
        service: current.service.clone(),
        // The scope the document states; else the SLA's, unless the
        // document gives a customer-less SLA its customer (then that
        // customer's requests, as a new document with a customer means).
        scope: if sets_scope || (current.customer.is_none() && document.customer.is_some()) {
            document.scope
        } else {
            current.scope
        },
        customer: document.customer.or_else(|| current.customer.clone()),
        window: current.window,
        objectives,
        policy: if sets_policy {
            document.policy
        } else {
            current.policy.clone()
        },
        credits: document.credits.or_else(|| current.credits.clone()),
        // An SLO without the annotation keeps the SLA's anchoring path (the
        // default cannot be told apart from one left out).
        attestation: if document.attestation == Default::default() {
            current.attestation
        } else {
            document.attestation
        },
    };
    // The rules across objectives (at most 64, unique names) hold for the
    // merged SLA too: read it back as the native document it is stored as.
    serde_json::from_value(merged.to_native_json()).map_err(|e| {
        AppError::invalid(
            "document",
            format!("merged with the objectives of SLA {name:?}: {e}"),
        )
    })
}
