//! Reading raw events for the evaluator, as domain events the objectives classify: the row shape lives with every other query in `slaproof-store` (`event_reads`).

pub(crate) use slaproof_store::event_reads::{EVENT_COLUMNS, EventRow, ReadEvent};
