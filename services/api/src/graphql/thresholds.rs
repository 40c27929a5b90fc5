//! A customer's own alert thresholds over GraphQL: reading, setting and
//! deleting the lines on an SLA's objectives (never the contract's targets).

use async_graphql::{Context, Object, SimpleObject};

use slaproof_app::Scope;

use super::limits::read_cost;
use super::{family_name, holds, parts, refuse};

fn holds_thresholds(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaWriteThresholds)
}

#[derive(Debug, Default)]
pub(super) struct ThresholdQuery;

#[Object]
impl ThresholdQuery {
    /// A customer's own alert lines on an SLA's objectives (a customer's
    /// user: its own SLA's); needs `sla:write:thresholds`.
    #[graphql(
        visible = "holds_thresholds",
        complexity = "read_cost(child_complexity)"
    )]
    async fn thresholds(
        &self,
        ctx: &Context<'_>,
        sla: String,
    ) -> async_graphql::Result<Vec<Threshold>> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .list_thresholds(caller, &sla)
            .await
            .map_err(refuse)?
            .into_iter()
            .map(Threshold::from)
            .collect())
    }
}

#[derive(Debug, Default)]
pub(super) struct ThresholdMutation;

#[Object]
impl ThresholdMutation {
    /// Sets (creates or replaces) the customer's alert lines on one
    /// objective; at least one line. Never a new SLA version.
    #[graphql(visible = "holds_thresholds")]
    async fn set_threshold(
        &self,
        ctx: &Context<'_>,
        sla: String,
        objective: String,
        compliance_below_ppm: Option<u32>,
        budget_remaining_below_ppm: Option<u32>,
        burn_rate_above_milli: Option<u64>,
    ) -> async_graphql::Result<Threshold> {
        let (app, caller) = parts(ctx)?;
        let new = slaproof_app::thresholds::NewThreshold {
            compliance_below_ppm,
            budget_remaining_below_ppm,
            burn_rate_above_milli,
        };
        Ok(app
            .set_threshold(caller, &sla, &objective, new)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Deletes the customer's alert lines on one objective.
    #[graphql(visible = "holds_thresholds")]
    async fn delete_threshold(
        &self,
        ctx: &Context<'_>,
        sla: String,
        objective: String,
    ) -> async_graphql::Result<bool> {
        let (app, caller) = parts(ctx)?;
        app.delete_threshold(caller, &sla, &objective)
            .await
            .map_err(refuse)?;
        Ok(true)
    }
}

/// A customer's own alert lines on one objective (never the contract).
#[derive(Debug, SimpleObject)]
pub(super) struct Threshold {
    objective: String,
    family: &'static str,
    customer_ref: String,
    compliance_below_ppm: Option<u32>,
    budget_remaining_below_ppm: Option<u32>,
    burn_rate_above_milli: Option<u64>,
    /// The lines the latest evaluation was past: `compliance`, `budget`,
    /// `burn_rate`.
    crossed: Vec<String>,
    /// RFC 3339; null before the first evaluation since the lines were set.
    evaluated_at: Option<String>,
    updated_at: String,
}

impl From<slaproof_app::thresholds::ThresholdView> for Threshold {
    fn from(t: slaproof_app::thresholds::ThresholdView) -> Self {
        Threshold {
            objective: t.objective,
            family: family_name(t.family),
            customer_ref: t.customer_ref,
            compliance_below_ppm: t.compliance_below_ppm,
            budget_remaining_below_ppm: t.budget_remaining_below_ppm,
            burn_rate_above_milli: t.burn_rate_above_milli,
            crossed: t.crossed.into_iter().map(str::to_owned).collect(),
            evaluated_at: t.evaluated_at.map(|t| t.to_rfc3339()),
            updated_at: t.updated_at.to_rfc3339(),
        }
    }
}
