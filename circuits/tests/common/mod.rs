//! What the circuit tests share: a claim and its context.

use slaproof_circuits::{Claim, ContextHash};

/// A 30-day claim about `objective` starting at `period_start`.
pub(crate) fn claim(objective: &'static str, period_start: i64) -> Claim<'static> {
    Claim {
        tenant: "ten_1",
        sla: "sla_1",
        sla_version: 1,
        objective,
        field: "latency",
        unit: "us",
        operator: "<=",
        threshold: 50,
        period_start,
        period_end: period_start + 30 * 86_400,
        revision: 1,
    }
}

/// The context of a November 2026 claim about `objective`.
pub(crate) fn context_of(objective: &'static str) -> ContextHash {
    ContextHash::of(&claim(objective, 1_793_491_200))
}
