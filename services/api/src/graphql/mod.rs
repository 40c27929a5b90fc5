//! GraphQL over the application layer: resolvers map shapes and call in, so
//! every rule is the REST one. A field the caller lacks the scope for is
//! refused with an error naming the scope (`extensions.scope`), and fields
//! guarded by a fixed scope are hidden from that caller's introspection.
//!
//! One module per resource, as in `rest`: each holds its part of the root
//! `Query` and `Mutation` (merged here) and the types it answers; `limits`
//! holds what one query may ask and spend, and what each field costs.

mod attestations;
mod attribution;
mod audit;
mod compliance;
mod credits;
mod customers;
mod dashboard;
mod embed;
mod evaluation_status;
mod ingest_keys;
pub(crate) mod limits;
mod maintenance;
mod probes;
mod slas;
mod tenants;
mod thresholds;
mod transparency;
mod webhook_events;
mod webhooks;

use async_graphql::{Context, EmptySubscription, ErrorExtensions, MergedObject, Schema};
use chrono::{DateTime, Utc};

use slaproof_app::Scope;
use slaproof_app::slas::Family;
use slaproof_app::{App, AppError, Caller, PageRequest};

pub(crate) type ApiSchema = Schema<Query, Mutation, EmptySubscription>;

/// Limits on what one query may ask, so that a query cannot cost more
/// than a page of REST calls; the rest of them are `limits`' constants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_depth: usize,
    pub max_complexity: usize,
    pub max_root_fields: usize,
    pub max_fields: usize,
    pub max_app_reads: usize,
    pub time_budget: std::time::Duration,
    pub introspection: bool,
}

/// The schema with its limits; the caller is added to each request.
pub(crate) fn schema(app: App, configured: Limits) -> ApiSchema {
    // The cost is checked by `QueryLimits` after validation (so that its
    // refusal can name the limit), not by async-graphql's own check.
    let builder = Schema::build(Query::default(), Mutation::default(), EmptySubscription)
        .data(app)
        .limit_depth(configured.max_depth)
        .limit_directives(limits::MAX_DIRECTIVES)
        .extension(limits::QueryLimits {
            max_depth: configured.max_depth,
            max_complexity: configured.max_complexity,
            max_root_fields: configured.max_root_fields,
            max_fields: configured.max_fields,
            max_app_reads: configured.max_app_reads,
            time_budget: configured.time_budget,
        });
    if configured.introspection {
        builder.finish()
    } else {
        builder.disable_introspection().finish()
    }
}

// Every query, resource by resource. Not a doc comment: that would become
// the type's description in the schema.
#[derive(Debug, Default, MergedObject)]
pub struct Query(
    slas::SlaQuery,
    dashboard::DashboardQuery,
    customers::CustomerQuery,
    ingest_keys::IngestKeyQuery,
    embed::EmbedQuery,
    tenants::TenantQuery,
    probes::ProbeQuery,
    thresholds::ThresholdQuery,
    webhooks::WebhookQuery,
    credits::CreditQuery,
    attestations::AttestationQuery,
    transparency::TransparencyQuery,
    evaluation_status::EvaluationStatusQuery,
    webhook_events::WebhookEventQuery,
    attribution::AttributionQuery,
);

// Every mutation, resource by resource (no description, as above).
#[derive(Debug, Default, MergedObject)]
pub struct Mutation(
    slas::SlaMutation,
    customers::CustomerMutation,
    maintenance::MaintenanceMutation,
    ingest_keys::IngestKeyMutation,
    embed::EmbedMutation,
    tenants::TenantMutation,
    probes::ProbeMutation,
    thresholds::ThresholdMutation,
    webhooks::WebhookMutation,
    credits::CreditMutation,
    transparency::TransparencyMutation,
);

/// An application error as a GraphQL error: the message, a `code`, and the
/// missing `scope` when that is why.
fn refuse(err: AppError) -> async_graphql::Error {
    let code = match &err {
        AppError::MissingScope(_) | AppError::Forbidden(_) => "FORBIDDEN",
        AppError::Unauthenticated(_) => "UNAUTHENTICATED",
        AppError::NotFound { .. } => "NOT_FOUND",
        AppError::Conflict(_) => "CONFLICT",
        AppError::Invalid { .. } => "INVALID",
        AppError::Internal(source) => {
            tracing::error!(error = %source, "internal error");
            "INTERNAL"
        }
    };
    let message = match &err {
        AppError::Internal(_) => "internal error".to_owned(),
        other => other.to_string(),
    };
    async_graphql::Error::new(message).extend_with(|_, e| {
        e.set("code", code);
        if let AppError::MissingScope(scope) = &err {
            e.set("scope", scope.as_str());
        }
    })
}

/// The application and the caller, for a resolver about to call the
/// application: the call is spent from the query's read budget first.
fn parts<'a>(ctx: &'a Context<'_>) -> async_graphql::Result<(&'a App, &'a Caller)> {
    if let Some(budget) = ctx.data_opt::<limits::ReadBudget>() {
        budget.spend()?;
    }
    Ok((ctx.data::<App>()?, ctx.data::<Caller>()?))
}

/// Whether the caller of this request holds `scope`: decides what its
/// introspection shows.
fn holds(ctx: &Context<'_>, scope: Scope) -> bool {
    ctx.data_opt::<Caller>().is_some_and(|c| c.has(scope))
}

fn holds_history(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaReadHistory)
}

fn holds_a_metric(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaReadUptime) || holds(ctx, Scope::SlaReadLatency)
}

fn holds_maintenance(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::MaintenanceRead)
}

fn holds_credits(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaReadCredits)
}

fn holds_audit(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaReadAudit)
}

fn page(first: Option<i32>, after: Option<String>) -> async_graphql::Result<PageRequest> {
    let limit = first
        .map(u32::try_from)
        .transpose()
        .map_err(|_| refuse(AppError::invalid("first", "must not be negative")))?;
    Ok(PageRequest {
        cursor: after,
        limit,
    })
}

/// One page of a list as a Relay connection: `list` asks the application
/// layer for the page `first` and `after` name.
async fn paged<T, U: async_graphql::OutputType>(
    ctx: &Context<'_>,
    (first, after): (Option<i32>, Option<String>),
    list: impl AsyncFnOnce(&App, &Caller, &PageRequest) -> Result<slaproof_app::Page<T>, AppError>,
    key: impl Fn(&T) -> &String,
    node: impl Fn(T) -> U,
) -> async_graphql::Result<async_graphql::connection::Connection<String, U>> {
    let (app, caller) = parts(ctx)?;
    let page = list(app, caller, &page(first, after)?)
        .await
        .map_err(refuse)?;
    // Each edge's cursor is the REST page's own (`cursor_of` its key), so
    // both APIs page alike.
    let mut connection =
        async_graphql::connection::Connection::new(false, page.next_cursor.is_some());
    for item in page.items {
        let cursor = slaproof_app::page::cursor_of(key(&item));
        connection
            .edges
            .push(async_graphql::connection::Edge::new(cursor, node(item)));
    }
    Ok(connection)
}

fn family_name(family: Family) -> &'static str {
    match family {
        Family::Uptime => "uptime",
        Family::Latency => "latency",
    }
}

fn instant(field: &str, text: Option<String>) -> async_graphql::Result<Option<DateTime<Utc>>> {
    text.map(|t| {
        DateTime::parse_from_rfc3339(&t)
            .map_err(|e| format!("not RFC 3339: {e}"))
            .and_then(|t| slaproof_domain::minute::check_instant(t.with_timezone(&Utc)))
            .map_err(|rule| refuse(AppError::invalid(field, rule)))
    })
    .transpose()
}
