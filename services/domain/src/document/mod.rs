//! Reading SLA documents (native `slaproof/v1` YAML or JSON, OpenSLO v1 YAML) and writing them back.

mod attestation;
mod credit;
pub(crate) mod error;
mod native;
mod numbers;
mod openslo;
mod policy;
mod tree;
mod yaml11;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::sla::{DocumentFormat, SlaDefinition};
use error::DefinitionError;

/// The longest document accepted (1 MiB): an SLA is a page, not a data set.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// The most values (scalars, lists and maps) a document may expand to,
/// counting each use of a YAML alias again: a 1 MiB document of short
/// scalars written out holds fewer, and an alias bomb (a list of a
/// thousand aliases of a list of a thousand scalars) is stopped after this
/// many values instead of expanding to a million, or billions.
pub(crate) const MAX_DOCUMENT_VALUES: usize = 300_000;

mod budget;

/// Parses the YAML (or JSON) documents in `text`, skipping empty ones and
/// flattening top-level lists of objects (as OpenSLO examples use).
fn load(text: &str) -> Result<Vec<Value>, DefinitionError> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(DefinitionError::single(
            "",
            format!(
                "document must be at most {MAX_DOCUMENT_BYTES} bytes, got {}",
                text.len()
            ),
        ));
    }
    let mut docs = Vec::new();
    let budget = budget::Budget::new(MAX_DOCUMENT_VALUES);
    for (i, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        match budget.load(de) {
            Ok(Value::Null) => {}
            Ok(Value::Array(items)) => docs.extend(items),
            Ok(v) => docs.push(v),
            Err(e) => {
                let at = if i == 0 {
                    String::new()
                } else {
                    format!("document {}: ", i + 1)
                };
                return Err(DefinitionError::single(
                    "",
                    format!("{at}not valid YAML or JSON: {e}"),
                ));
            }
        }
    }
    if docs.is_empty() {
        return Err(DefinitionError::single(
            "",
            "document is empty: expected an SLA (apiVersion: slaproof/v1) or OpenSLO SLO and SLI documents (apiVersion: openslo/v1)",
        ));
    }
    Ok(docs)
}

fn api_version(doc: &Value) -> Option<&str> {
    doc.get("apiVersion").and_then(Value::as_str)
}

impl SlaDefinition {
    /// Reads an SLA from a document: the native format (`apiVersion:
    /// slaproof/v1`, `kind: SLA`, YAML or JSON) or OpenSLO v1 (`SLO` and
    /// `SLI` documents, YAML, several separated by `---`).
    ///
    /// On error, every problem found is reported with the path of its field
    /// and the rule that failed.
    pub fn from_document(text: &str) -> Result<Self, DefinitionError> {
        Self::read_document(text).map(|(sla, _)| sla)
    }

    /// [`SlaDefinition::from_document`], also telling which format the
    /// document was in: a native document is a whole SLA, OpenSLO `SLO`s
    /// may be only some of its objectives.
    pub fn read_document(text: &str) -> Result<(Self, DocumentFormat), DefinitionError> {
        let docs = load(text)?;
        let versions: Vec<Option<&str>> = docs.iter().map(api_version).collect();
        if versions.iter().all(|v| *v == Some(openslo::API_VERSION)) {
            let sets_policy = openslo::sets_policy(&docs);
            let sets_scope = openslo::sets_scope(&docs);
            return openslo::read(&docs).map(|sla| {
                (
                    sla,
                    DocumentFormat::OpenSlo {
                        sets_policy,
                        sets_scope,
                    },
                )
            });
        }
        if let [doc] = docs.as_slice() {
            return match api_version(doc) {
                Some(native::API_VERSION) => native::read(doc, native::Origin::Provider)
                    .map(|sla| (sla, DocumentFormat::Native)),
                Some(other) => Err(DefinitionError::single(
                    "apiVersion",
                    format!(
                        "must be \"{}\" or \"{}\", got {other:?}",
                        native::API_VERSION,
                        openslo::API_VERSION
                    ),
                )),
                None => Err(DefinitionError::single(
                    "apiVersion",
                    format!(
                        "is required: \"{}\" for the native format, \"{}\" for OpenSLO",
                        native::API_VERSION,
                        openslo::API_VERSION
                    ),
                )),
            };
        }
        let problems = versions
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != Some(openslo::API_VERSION))
            .map(|(i, v)| error::DocumentProblem {
                path: format!("documents[{i}].apiVersion"),
                rule: match v {
                    Some(native::API_VERSION) => "a native SLA must be the only document; several documents are read as OpenSLO (apiVersion: openslo/v1)".to_owned(),
                    Some(other) => format!("must be \"{}\" when several documents are given, got {other:?}", openslo::API_VERSION),
                    None => format!("is required: \"{}\"", openslo::API_VERSION),
                },
            })
            .collect();
        Err(DefinitionError { problems })
    }

    /// The native document as YAML; reading it back gives an equal SLA.
    pub fn to_native_yaml(&self) -> String {
        // Serializing plain structs of strings and numbers cannot fail.
        yaml11::quote_for_yaml11(
            &serde_yaml_ng::to_string(&native::write(self)).unwrap_or_default(),
        )
    }

    /// The native document as a JSON value (what the store keeps as jsonb).
    pub fn to_native_json(&self) -> Value {
        serde_json::to_value(native::write(self)).unwrap_or(Value::Null)
    }

    /// OpenSLO v1 documents: per objective, an `SLI` and an `SLO` referring
    /// to it, separated by `---`. Reading them back gives an equal SLA.
    pub fn to_openslo_yaml(&self) -> String {
        openslo::write(self)
            .iter()
            .map(|doc| yaml11::quote_for_yaml11(&serde_yaml_ng::to_string(doc).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("---\n")
    }
}

impl Serialize for SlaDefinition {
    /// The native document.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        native::write(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for SlaDefinition {
    /// The native document as the store keeps it, validated: invalid ones
    /// are refused with every problem. A version stored before scopes
    /// existed reads as `scope: service`, the meaning it was judged under.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        native::read(&value, native::Origin::Stored).map_err(serde::de::Error::custom)
    }
}
