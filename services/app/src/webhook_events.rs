//! The webhook event catalogue: every fact type slaproof writes to the outbox (and those it reserves), each with a versioned JSON Schema of its `data` and an example.
//!
//! The schemas live beside this module, one file per type and version
//! (`webhook_events/<type>.v<version>.json`), compiled in with
//! `include_str!`, so the catalogue served is the one reviewed in the
//! repository and cannot differ between instances. Each file is a draft
//! 2020-12 schema carrying its own `description` and `examples` (the
//! listing reads them from there rather than restating them here); what
//! several types share (an objective's evaluation summary, a frozen
//! period result, a maintenance window, a credit entry and its
//! computation) is written once in `webhook_events/shared.v1.json` and
//! referenced as `#/$defs/…`. Each schema is served with those
//! definitions bundled into its own `$defs`, so it stands alone.
//!
//! The catalogue is the same for every tenant and says nothing about any
//! of them, so reading it needs no credentials: receivers and code
//! generators fetch it before they hold a token, as Svix publishes its
//! own. A version changes only when a payload loses or changes a field;
//! added fields keep the version (`additionalProperties: true`).

use std::sync::LazyLock;

use serde::Serialize;

use crate::AppError;

/// One event type of the catalogue.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EventType {
    /// The type as it appears in a delivery's `type`, e.g. `sla.breached`.
    #[serde(rename = "type")]
    pub name: &'static str,
    /// The version of its payload schema.
    pub version: u32,
    /// One line saying when it is written.
    pub description: String,
    /// Named so that endpoints may filter on it, but not written yet: its
    /// payload is not fixed.
    pub reserved: bool,
    /// A `data` as written (the schema's first example).
    #[schema(value_type = Object)]
    pub example: serde_json::Value,
    /// The JSON Schema (draft 2020-12) of `data`.
    #[serde(skip)]
    pub schema: serde_json::Value,
}

/// (type, version, reserved, schema text): the source of the catalogue.
/// Grouped as the facts are: a period's close, in-period signals, customer
/// lines, missing data, maintenance, webhooks themselves, credits, reserved.
const SOURCES: &[(&str, u32, bool, &str)] = &[
    (
        "sla.period_closed",
        1,
        false,
        include_str!("webhook_events/sla.period_closed.v1.json"),
    ),
    (
        "sla.breached",
        1,
        false,
        include_str!("webhook_events/sla.breached.v1.json"),
    ),
    (
        "sla.breach_withdrawn",
        1,
        false,
        include_str!("webhook_events/sla.breach_withdrawn.v1.json"),
    ),
    (
        "slo.at_risk",
        1,
        false,
        include_str!("webhook_events/slo.at_risk.v1.json"),
    ),
    (
        "slo.budget_exhausted",
        1,
        false,
        include_str!("webhook_events/slo.budget_exhausted.v1.json"),
    ),
    (
        "slo.degrade_level_changed",
        1,
        false,
        include_str!("webhook_events/slo.degrade_level_changed.v1.json"),
    ),
    (
        "slo.burn_rate_alert",
        1,
        false,
        include_str!("webhook_events/slo.burn_rate_alert.v1.json"),
    ),
    (
        "sla.threshold_crossed",
        1,
        false,
        include_str!("webhook_events/sla.threshold_crossed.v1.json"),
    ),
    (
        "sla.threshold_recovered",
        1,
        false,
        include_str!("webhook_events/sla.threshold_recovered.v1.json"),
    ),
    (
        "sla.no_data",
        1,
        false,
        include_str!("webhook_events/sla.no_data.v1.json"),
    ),
    (
        "maintenance.scheduled",
        1,
        false,
        include_str!("webhook_events/maintenance.scheduled.v1.json"),
    ),
    (
        "maintenance.cancelled",
        1,
        false,
        include_str!("webhook_events/maintenance.cancelled.v1.json"),
    ),
    (
        "maintenance.accepted",
        1,
        false,
        include_str!("webhook_events/maintenance.accepted.v1.json"),
    ),
    (
        "endpoint.disabled",
        1,
        false,
        include_str!("webhook_events/endpoint.disabled.v1.json"),
    ),
    (
        "webhook.test",
        1,
        false,
        include_str!("webhook_events/webhook.test.v1.json"),
    ),
    (
        "credit.issued",
        1,
        false,
        include_str!("webhook_events/credit.issued.v1.json"),
    ),
    (
        "credit.corrected",
        1,
        false,
        include_str!("webhook_events/credit.corrected.v1.json"),
    ),
    (
        "credit.not_computed",
        1,
        false,
        include_str!("webhook_events/credit.not_computed.v1.json"),
    ),
    (
        "attestation.anchored",
        1,
        false,
        include_str!("webhook_events/attestation.anchored.v1.json"),
    ),
    (
        "attestation.failed",
        1,
        false,
        include_str!("webhook_events/attestation.failed.v1.json"),
    ),
];

/// The definitions the schemas share (`#/$defs/…`).
const SHARED: &str = include_str!("webhook_events/shared.v1.json");

/// `schema` with the shared definitions in its `$defs` (its own win).
fn bundled(mut schema: serde_json::Value) -> serde_json::Value {
    let shared: serde_json::Value = serde_json::from_str(SHARED).unwrap_or_default();
    let Some(object) = schema.as_object_mut() else {
        return schema;
    };
    let defs = object
        .entry("$defs")
        .or_insert_with(|| serde_json::json!({}));
    if let (Some(defs), Some(shared)) = (defs.as_object_mut(), shared["$defs"].as_object()) {
        for (name, definition) in shared {
            defs.entry(name.clone())
                .or_insert_with(|| definition.clone());
        }
    }
    schema
}

/// Parsed once; the files are compiled in and checked by the tests below,
/// so a file that does not parse is a build that cannot pass, and here it
/// leaves an empty schema rather than taking the process down.
static CATALOGUE: LazyLock<Vec<EventType>> = LazyLock::new(|| {
    SOURCES
        .iter()
        .map(|&(name, version, reserved, text)| {
            let schema = bundled(serde_json::from_str(text).unwrap_or(serde_json::Value::Null));
            EventType {
                name,
                version,
                description: schema["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                reserved,
                example: schema["examples"][0].clone(),
                schema,
            }
        })
        .collect()
});

/// Every event type, written and reserved, in the catalogue's order.
pub fn catalogue() -> &'static [EventType] {
    &CATALOGUE
}

/// The event type named `name` (e.g. `sla.breached`).
pub fn event_type(name: &str) -> Result<&'static EventType, AppError> {
    catalogue()
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| AppError::NotFound {
            what: "webhook event type",
            key: name.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_is_a_draft_2020_12_object_schema_with_its_own_title_and_an_example() {
        for (name, version, _, text) in SOURCES {
            let schema: serde_json::Value = serde_json::from_str(text).expect(name);
            assert_eq!(
                schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name}"
            );
            assert_eq!(schema["title"], *name);
            assert_eq!(
                schema["$id"],
                format!("urn:slaproof:webhook-event:{name}:v{version}")
            );
            assert!(
                !schema["description"]
                    .as_str()
                    .unwrap_or_default()
                    .is_empty(),
                "{name}"
            );
            assert!(schema["examples"][0].is_object(), "{name}");
        }
    }

    /// Every `$ref` of a served schema points into its own `$defs`.
    #[test]
    fn every_reference_resolves_within_the_served_schema() {
        fn refs<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(r) = map.get("$ref").and_then(|r| r.as_str()) {
                        out.push(r);
                    }
                    map.values().for_each(|v| refs(v, out));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        for t in catalogue() {
            let mut found = Vec::new();
            refs(&t.schema, &mut found);
            for r in found {
                let name = r.strip_prefix("#/$defs/").expect(r);
                assert!(t.schema["$defs"].get(name).is_some(), "{}: {r}", t.name);
            }
        }
    }

    #[test]
    fn types_are_unique_and_found_by_name() {
        let mut names: Vec<&str> = catalogue().iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SOURCES.len());
        assert_eq!(event_type("sla.breached").unwrap().version, 1);
        assert!(matches!(
            event_type("sla.nope"),
            Err(AppError::NotFound { .. })
        ));
    }

    #[test]
    fn only_the_types_not_written_yet_are_reserved() {
        let reserved: Vec<&str> = catalogue()
            .iter()
            .filter(|t| t.reserved)
            .map(|t| t.name)
            .collect();
        assert!(reserved.is_empty(), "{reserved:?}");
    }

    /// Every required field of a written type's example is present: a
    /// cheap check here, the full validation is the end-to-end test's
    /// (`tests/tests/e2e/webhook_events.rs`, with Python's `jsonschema`).
    #[test]
    fn examples_carry_the_required_fields_of_one_branch() {
        /// The sets of required fields a value may satisfy: a `$ref` is
        /// followed, `allOf` parts add up, `anyOf` branches are choices.
        fn required_sets(schema: &serde_json::Value, root: &serde_json::Value) -> Vec<Vec<String>> {
            if let Some(r) = schema["$ref"].as_str() {
                let name = r.trim_start_matches("#/$defs/");
                return required_sets(&root["$defs"][name], root);
            }
            let own: Vec<String> = schema["required"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|f| f.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let mut sets = vec![own];
            for part in schema["allOf"].as_array().into_iter().flatten() {
                let parts = required_sets(part, root);
                sets = sets
                    .iter()
                    .flat_map(|set| parts.iter().map(move |p| [set.clone(), p.clone()].concat()))
                    .collect();
            }
            if let Some(branches) = schema["anyOf"].as_array() {
                let choices: Vec<Vec<String>> = branches
                    .iter()
                    .flat_map(|b| required_sets(b, root))
                    .collect();
                sets = sets
                    .iter()
                    .flat_map(|set| {
                        choices
                            .iter()
                            .map(move |c| [set.clone(), c.clone()].concat())
                    })
                    .collect();
            }
            sets
        }
        for t in catalogue().iter().filter(|t| !t.reserved) {
            let branches = required_sets(&t.schema, &t.schema);
            let satisfied = branches.iter().any(|required| {
                !required.is_empty() && required.iter().all(|f| t.example.get(f).is_some())
            });
            assert!(satisfied, "{}: {}", t.name, t.example);
        }
    }
}
