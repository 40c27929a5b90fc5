//! Service credits over GraphQL: the same operations as `/v1/credits`, `/v1/slas/{name}/credits/…` and `/v1/customers/{ref}/fees`.

use async_graphql::connection::Connection;
use async_graphql::{Context, InputObject, Json, Object, SimpleObject};
use slaproof_app::Scope;
use slaproof_app::credits::{
    CreditQuery as LedgerQuery, CreditStatement as StatementView, CustomerFee, NewFee,
};
use slaproof_app::fee_corrections::{FeeCorrectionView, NewFeeCorrection};
use slaproof_domain::credit::FeeStart;

use super::limits::{page_cost, read_cost, unpaged_cost};
use super::{holds, holds_credits, instant, paged, parts, refuse};

fn holds_fees(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::CustomerRead)
}

#[derive(Debug, Default)]
pub(super) struct CreditQuery;

#[Object]
impl CreditQuery {
    /// The credit ledger in the order written (a customer's user: its
    /// own): issued credits and corrections.
    #[graphql(
        visible = "holds_credits",
        complexity = "page_cost(first, child_complexity)"
    )]
    #[allow(clippy::too_many_arguments)]
    async fn credits(
        &self,
        ctx: &Context<'_>,
        customer_ref: Option<String>,
        sla: Option<String>,
        #[graphql(desc = "Periods starting at or after this instant (RFC 3339)")] from: Option<
            String,
        >,
        #[graphql(desc = "Periods starting before this instant (RFC 3339)")] to: Option<String>,
        after: Option<String>,
        first: Option<i32>,
    ) -> async_graphql::Result<Connection<String, Credit>> {
        let query = LedgerQuery {
            customer_ref,
            sla,
            from: instant("from", from)?,
            to: instant("to", to)?,
        };
        paged(
            ctx,
            (first, after),
            async |app, caller, page| {
                Ok(app
                    .list_credits(caller, &query, page)
                    .await?
                    .map(Credit::from))
            },
            |c| &c.id,
            |c| c,
        )
        .await
    }

    /// One ledger entry (`cred_…`).
    #[graphql(visible = "holds_credits", complexity = "read_cost(child_complexity)")]
    async fn credit(&self, ctx: &Context<'_>, id: String) -> async_graphql::Result<Credit> {
        let (app, caller) = parts(ctx)?;
        Ok(app.get_credit(caller, &id).await.map_err(refuse)?.into())
    }

    /// The credit statement of an SLA's period: every entry and the total.
    #[graphql(
        visible = "holds_credits",
        complexity = "unpaged_cost(child_complexity)"
    )]
    async fn credit_statement(
        &self,
        ctx: &Context<'_>,
        sla: String,
        #[graphql(desc = "The period's start (RFC 3339)")] period_start: String,
    ) -> async_graphql::Result<CreditStatement> {
        let start = instant("periodStart", Some(period_start))?.unwrap_or_default();
        let (app, caller) = parts(ctx)?;
        Ok(app
            .credit_statement(caller, &sla, start)
            .await
            .map_err(refuse)?
            .into())
    }

    /// A customer's fees per SLA period, oldest first.
    #[graphql(visible = "holds_fees", complexity = "unpaged_cost(child_complexity)")]
    async fn customer_fees(
        &self,
        ctx: &Context<'_>,
        customer_ref: String,
    ) -> async_graphql::Result<Vec<Fee>> {
        let (app, caller) = parts(ctx)?;
        let fees = app
            .customer_fees(caller, &customer_ref)
            .await
            .map_err(refuse)?;
        Ok(fees.into_iter().map(Fee::from).collect())
    }
}

/// A fee to record.
#[derive(Debug, InputObject)]
struct CustomerFeeInput {
    /// A date (`2026-01-01`: each SLA's periods starting on or after it,
    /// read in the SLA's time zone) or an RFC 3339 instant.
    effective_from: String,
    /// ISO 4217 (`EUR`).
    currency: String,
    /// Decimal text in the currency's unit (`1200.00`).
    amount: String,
    /// The minor-unit exponent, required for a code slaproof does not know.
    minor_units: Option<u8>,
}

/// The fee a credited period is to be computed on, and why.
#[derive(Debug, InputObject)]
struct FeeCorrectionInput {
    /// ISO 4217 (`EUR`): the SLA's credit currency.
    currency: String,
    /// Decimal text in the currency's unit (`1200.00`).
    amount: String,
    /// The minor-unit exponent, required for a code slaproof does not know.
    minor_units: Option<u8>,
    /// Why the fee on file was wrong for the period (read by the customer).
    reason: String,
}

#[derive(Debug, Default)]
pub(super) struct CreditMutation;

#[Object]
impl CreditMutation {
    /// Records what a customer pays per SLA period from an instant on; a
    /// later price is a new fee.
    async fn set_customer_fee(
        &self,
        ctx: &Context<'_>,
        customer_ref: String,
        input: CustomerFeeInput,
    ) -> async_graphql::Result<Fee> {
        let effective_from = FeeStart::parse(&input.effective_from)
            .map_err(|e| refuse(slaproof_app::AppError::invalid("effectiveFrom", e)))?;
        let (app, caller) = parts(ctx)?;
        let fee = app
            .set_customer_fee(
                caller,
                &customer_ref,
                NewFee {
                    effective_from,
                    currency: input.currency,
                    amount: input.amount,
                    minor_units: input.minor_units,
                },
            )
            .await
            .map_err(refuse)?;
        Ok(fee.into())
    }

    /// Corrects the fee a credited period was computed on, with the
    /// reason the customer reads on its statement; the period's credit is
    /// computed again on it. Refused for a period not credited on a fee or
    /// past its settlement horizon.
    async fn correct_credited_fee(
        &self,
        ctx: &Context<'_>,
        sla: String,
        period_start: String,
        input: FeeCorrectionInput,
    ) -> async_graphql::Result<FeeCorrection> {
        let start = instant("periodStart", Some(period_start))?.unwrap_or_default();
        let (app, caller) = parts(ctx)?;
        let corrected = app
            .correct_credited_fee(
                caller,
                &sla,
                start,
                NewFeeCorrection {
                    currency: input.currency,
                    amount: input.amount,
                    minor_units: input.minor_units,
                    reason: input.reason,
                },
            )
            .await
            .map_err(refuse)?;
        Ok(corrected.into())
    }

    /// Asks for a closed period's credit to be computed again from the
    /// results and fee in force; true once queued.
    async fn recompute_credit(
        &self,
        ctx: &Context<'_>,
        sla: String,
        period_start: String,
    ) -> async_graphql::Result<bool> {
        let start = instant("periodStart", Some(period_start))?.unwrap_or_default();
        let (app, caller) = parts(ctx)?;
        app.recompute_credit(caller, &sla, start)
            .await
            .map_err(refuse)?;
        Ok(true)
    }
}

/// A ledger entry.
#[derive(Debug, SimpleObject)]
struct Credit {
    /// `cred_…`.
    id: String,
    /// `issued` or `corrected`.
    kind: String,
    sla: String,
    customer_ref: String,
    /// RFC 3339.
    period_start: String,
    period_end: String,
    /// The SLA version whose policy applied.
    version: i32,
    revision: i32,
    /// The entry this one corrects (`cred_…`).
    corrects: Option<String>,
    currency: String,
    /// What this entry adds, decimal text (negative when a correction
    /// lowers the credit).
    amount: String,
    amount_minor: i64,
    /// The period's credit after this entry.
    total: String,
    total_minor: i64,
    /// The formula, its inputs and every step.
    computation: Json<serde_json::Value>,
    /// The frozen results it was computed from.
    results: Json<serde_json::Value>,
    /// The attestations of the results it was computed from.
    attestations: Vec<CreditAttestation>,
    created_at: String,
}

/// The attestation of one result a credit was computed from.
#[derive(Debug, Clone, SimpleObject)]
pub(crate) struct CreditAttestation {
    objective: String,
    revision: i32,
    id: String,
    /// `pending`, `proven`, `anchored` or `not_provable`.
    status: String,
    statement_id: Option<String>,
}

impl From<slaproof_app::credits::Credit> for Credit {
    fn from(c: slaproof_app::credits::Credit) -> Self {
        Self {
            id: c.id.to_string(),
            kind: c.kind,
            sla: c.sla,
            customer_ref: c.customer_ref,
            period_start: c.period_start.to_rfc3339(),
            period_end: c.period_end.to_rfc3339(),
            version: c.version,
            revision: c.revision,
            corrects: c.corrects.map(|x| x.to_string()),
            currency: c.currency,
            amount: c.amount,
            amount_minor: c.amount_minor,
            total: c.total,
            total_minor: c.total_minor,
            computation: Json(c.computation),
            results: Json(c.results),
            attestations: c
                .attestations
                .into_iter()
                .map(|a| CreditAttestation {
                    objective: a.objective,
                    revision: a.revision,
                    id: a.id,
                    status: a.status,
                    statement_id: a.statement_id,
                })
                .collect(),
            created_at: c.created_at.to_rfc3339(),
        }
    }
}

/// A customer's statement for one SLA period.
#[derive(Debug, SimpleObject)]
struct CreditStatement {
    sla: String,
    customer_ref: String,
    customer_name: String,
    period_start: String,
    period_end: String,
    currency: String,
    /// What the period's credit comes to after every entry.
    total: String,
    total_minor: i64,
    /// Every entry of the period, oldest first.
    entries: Vec<Credit>,
}

impl From<StatementView> for CreditStatement {
    fn from(s: StatementView) -> Self {
        Self {
            sla: s.sla,
            customer_ref: s.customer_ref,
            customer_name: s.customer_name,
            period_start: s.period_start.to_rfc3339(),
            period_end: s.period_end.to_rfc3339(),
            currency: s.currency,
            total: s.total,
            total_minor: s.total_minor,
            entries: s.entries.into_iter().map(Credit::from).collect(),
        }
    }
}

/// A customer's fee per SLA period.
#[derive(Debug, SimpleObject)]
#[graphql(name = "CustomerFee")]
struct Fee {
    /// From when it applies (RFC 3339); for a fee from a date, that date's
    /// midnight UTC.
    effective_from: String,
    /// The date it applies from in each SLA's time zone, when recorded as
    /// a date.
    effective_on: Option<String>,
    currency: String,
    /// Decimal text in the currency's unit.
    amount: String,
    amount_minor: i64,
    created_at: String,
    created_by: String,
}

impl From<CustomerFee> for Fee {
    fn from(f: CustomerFee) -> Self {
        Self {
            effective_from: f.effective_from.to_rfc3339(),
            effective_on: f.effective_on.map(|d| d.to_string()),
            currency: f.currency,
            amount: f.amount,
            amount_minor: f.amount_minor,
            created_at: f.created_at.to_rfc3339(),
            created_by: f.created_by,
        }
    }
}

/// A credited period's fee, corrected.
#[derive(Debug, SimpleObject)]
struct FeeCorrection {
    sla: String,
    customer_ref: String,
    period_start: String,
    period_end: String,
    currency: String,
    /// The fee the period is credited on from now on, decimal text.
    amount: String,
    amount_minor: i64,
    /// The fee it had been credited on.
    was_amount: String,
    was_amount_minor: i64,
    reason: String,
    corrected_by: String,
    corrected_at: String,
    /// The credit is computed again; a correcting entry follows when the
    /// amount changes.
    recompute_queued: bool,
}

impl From<FeeCorrectionView> for FeeCorrection {
    fn from(c: FeeCorrectionView) -> Self {
        Self {
            sla: c.sla,
            customer_ref: c.customer_ref,
            period_start: c.period_start.to_rfc3339(),
            period_end: c.period_end.to_rfc3339(),
            currency: c.currency,
            amount: c.amount,
            amount_minor: c.amount_minor,
            was_amount: c.was_amount,
            was_amount_minor: c.was_amount_minor,
            reason: c.reason,
            corrected_by: c.corrected_by,
            corrected_at: c.corrected_at.to_rfc3339(),
            recompute_queued: c.recompute_queued,
        }
    }
}
