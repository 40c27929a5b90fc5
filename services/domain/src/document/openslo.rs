//! OpenSLO v1 `SLO` and `SLI` documents: import into an SLA and export from one.

use serde_json::Value;

use super::error::DefinitionError;
use crate::sla::SlaDefinition;

pub(crate) const API_VERSION: &str = "openslo/v1";

pub(crate) fn read(_docs: &[Value]) -> Result<SlaDefinition, DefinitionError> {
    Err(DefinitionError::single(
        "",
        "OpenSLO import is not available yet",
    ))
}

pub(crate) fn write(_sla: &SlaDefinition) -> Vec<Value> {
    Vec::new()
}
