#![doc = include_str!("../README.md")]
//! slaproof's SLA model and math: definitions, SLIs, windows, maintenance and
//! OpenSLO import and export. Pure: no I/O, no clock reads, no database.

pub mod anchoring;
pub mod attribution;
pub mod budget;
pub mod burn;
pub mod composite;
pub mod credit;
mod decimal;
mod document;
pub mod event;
pub mod filter;
pub mod ids;
pub mod label;
pub mod maintenance;
pub mod minute;
pub mod objective;
pub mod period_vector;
pub mod policy;
pub mod provable;
pub mod quantity;
pub mod risk;
pub mod settings;
pub mod sketch;
pub mod sla;
pub mod slice_grid;
pub mod slices;
pub mod transparency;
pub mod versions;
pub mod window;

pub use budget::{ErrorBudget, Tally};
pub use burn::{AlertSeverity, AlertTransition, BurnRate, BurnRateAlertRule, time_to_exhaustion};
pub use composite::{CompositeResult, ObjectiveCounts};
pub use credit::{CreditComputation, CreditInputs, CreditPolicy, Currency, Money};
pub use document::error::{DefinitionError, DocumentProblem};
pub use event::{EventFields, EventSource, EventView};
pub use filter::{EventFilter, FilterError};
pub use maintenance::{MaintenanceWindow, MaintenanceWindowError};
pub use objective::{
    BudgetingMethod, EventVerdict, GaugeName, GaugeSli, MeasuredField, Objective, ObjectiveName,
    RatioCount, RatioSli, Sli, SliceBudgeting, SliceIndicator, ThresholdOp, ThresholdSli,
    ThresholdValue, TimeSlicesSli,
};
pub use policy::{
    DegradePolicy, MaintenancePolicy, NoDataPolicy, NoDataSlices, ScheduleSlot, SlaPolicy,
};
pub use quantity::{CompositeWeight, Micros, QuantityError, SliceTarget, Span, TargetPpm};
pub use sla::{SlaDefinition, SlaName, SlaScope};
pub use window::{CalendarUnit, Period, TimeWindow};
