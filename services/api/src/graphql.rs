//! GraphQL over the application layer: resolvers map shapes and call in, so
//! every rule is the REST one. A field the caller lacks the scope for is
//! refused with an error naming the scope (`extensions.scope`), and fields
//! guarded by a fixed scope are hidden from that caller's introspection.

use async_graphql::connection::{Connection, Edge};
use async_graphql::{
    Context, EmptySubscription, ErrorExtensions, Json, Object, Schema, SimpleObject,
};
use chrono::{DateTime, Utc};

use slaproof_app::Scope;
use slaproof_app::compliance::{ComplianceNumbers, ComplianceView};
use slaproof_app::dashboard::{DashboardView, MinuteMaintenance};
use slaproof_app::slas::{ExportFormat, Family, ObjectiveView, SlaSummaryView, SlaView};
use slaproof_app::{App, AppError, Caller, PageRequest};

pub type ApiSchema = Schema<Query, Mutation, EmptySubscription>;

/// Limits on what one query may ask, so that a query cannot cost more
/// than a page of REST calls.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_depth: usize,
    pub max_complexity: usize,
    pub introspection: bool,
}

/// The schema with its limits; the caller is added to each request.
pub fn schema(app: App, limits: Limits) -> ApiSchema {
    let builder = Schema::build(Query, Mutation, EmptySubscription)
        .data(app)
        .limit_depth(limits.max_depth)
        .limit_complexity(limits.max_complexity);
    if limits.introspection {
        builder.finish()
    } else {
        builder.disable_introspection().finish()
    }
}

/// An application error as a GraphQL error: the message, a `code`, and the
/// missing `scope` when that is why.
fn refuse(err: AppError) -> async_graphql::Error {
    let code = match &err {
        AppError::MissingScope(_) => "FORBIDDEN",
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

fn parts<'a>(ctx: &'a Context<'_>) -> async_graphql::Result<(&'a App, &'a Caller)> {
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

fn holds_export(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaExport)
}

fn holds_customers(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::CustomerRead)
}

fn holds_thresholds(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaWriteThresholds)
}

fn holds_a_metric(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::SlaReadUptime) || holds(ctx, Scope::SlaReadLatency)
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

#[derive(Debug)]
pub struct Query;

#[Object]
impl Query {
    /// SLAs the caller may see, by name (a customer's user: its own).
    async fn slas(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, SlaSummary>> {
        let (app, caller) = parts(ctx)?;
        let page = app
            .list_slas(caller, &page(first, after)?)
            .await
            .map_err(refuse)?;
        let mut connection = Connection::new(false, page.next_cursor.is_some());
        for item in page.items {
            connection
                .edges
                .push(Edge::new(hex_cursor(&item.name), SlaSummary(item)));
        }
        Ok(connection)
    }

    /// One SLA, the version in force unless `version` is given.
    async fn sla(
        &self,
        ctx: &Context<'_>,
        name: String,
        version: Option<i32>,
    ) -> async_graphql::Result<Sla> {
        let (app, caller) = parts(ctx)?;
        let view = app.get_sla(caller, &name, version).await.map_err(refuse)?;
        Ok(Sla(view))
    }

    /// An SLA's dashboard in one read: compliance, budgets and the minutes
    /// of `[from, to)` (RFC 3339; default the last day, at most two days).
    async fn dashboard(
        &self,
        ctx: &Context<'_>,
        sla: String,
        from: Option<String>,
        to: Option<String>,
    ) -> async_graphql::Result<Dashboard> {
        dashboard(ctx, &sla, from, to).await
    }

    /// The provider's customers.
    #[graphql(visible = "holds_customers")]
    async fn customers(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Customer>> {
        let (app, caller) = parts(ctx)?;
        let page = app
            .list_customers(caller, &page(first, after)?)
            .await
            .map_err(refuse)?;
        let mut connection = Connection::new(false, page.next_cursor.is_some());
        for c in page.items {
            connection.edges.push(Edge::new(
                hex_cursor(&c.external_ref),
                Customer {
                    id: c.id.to_string(),
                    external_ref: c.external_ref,
                    name: c.name,
                },
            ));
        }
        Ok(connection)
    }

    /// One customer of the tenant (`cus_…`).
    #[graphql(visible = "holds_customers")]
    async fn customer(&self, ctx: &Context<'_>, id: String) -> async_graphql::Result<Customer> {
        let (app, caller) = parts(ctx)?;
        // An id that does not parse cannot name a customer: not found,
        // as over REST.
        let id = id.parse().map_err(|_| {
            refuse(AppError::NotFound {
                what: "customer",
                key: id.clone(),
            })
        })?;
        let c = app.get_customer(caller, id).await.map_err(refuse)?;
        Ok(Customer {
            id: c.id.to_string(),
            external_ref: c.external_ref,
            name: c.name,
        })
    }

    /// The tenant's ingest keys, by prefix; never their secrets.
    #[graphql(visible = "holds_ingest_keys")]
    async fn ingest_keys(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, IngestKey>> {
        let (app, caller) = parts(ctx)?;
        let page = app
            .list_ingest_keys(caller, &page(first, after)?)
            .await
            .map_err(refuse)?;
        let mut connection = Connection::new(false, page.next_cursor.is_some());
        for k in page.items {
            connection
                .edges
                .push(Edge::new(hex_cursor(&k.prefix), IngestKey::from(k)));
        }
        Ok(connection)
    }

    /// The origins allowed to frame the tenant's embedded dashboards.
    #[graphql(visible = "holds_embed")]
    async fn embed_origins(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<String>> {
        let (app, caller) = parts(ctx)?;
        app.embed_origins(caller).await.map_err(refuse)
    }

    /// Every tenant (slaproof's operators only).
    #[graphql(visible = "holds_tenants")]
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Tenant>> {
        let (app, caller) = parts(ctx)?;
        let page = app
            .list_tenants(caller, &page(first, after)?)
            .await
            .map_err(refuse)?;
        let mut connection = Connection::new(false, page.next_cursor.is_some());
        for t in page.items {
            connection
                .edges
                .push(Edge::new(hex_cursor(&t.name), Tenant::from(t)));
        }
        Ok(connection)
    }

    // --- synthetic probes (see the Probe types at the end) -----------------

    /// The tenant's synthetic probes, by name.
    #[graphql(visible = "holds_probes")]
    async fn probes(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Probe>> {
        let (app, caller) = parts(ctx)?;
        let page = app
            .list_probes(caller, &page(first, after)?)
            .await
            .map_err(refuse)?;
        let mut connection = Connection::new(false, page.next_cursor.is_some());
        for p in page.items {
            connection
                .edges
                .push(Edge::new(hex_cursor(&p.definition.name), Probe::from(p)));
        }
        Ok(connection)
    }

    /// One probe, by id (`prb_…`) or name.
    #[graphql(visible = "holds_probes")]
    async fn probe(&self, ctx: &Context<'_>, probe: String) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        Ok(app.get_probe(caller, &probe).await.map_err(refuse)?.into())
    }

    // --- end of synthetic probes -------------------------------------------

    // --- customer thresholds (see the Threshold type at the end) ----------

    /// A customer's own alert lines on an SLA's objectives (a customer's
    /// user: its own SLA's); needs `sla:write:thresholds`.
    #[graphql(visible = "holds_thresholds")]
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

    // --- end of customer thresholds -----------------------------------------
}

/// Cursors are those of the REST pages, so both APIs page alike.
fn hex_cursor(key: &str) -> String {
    hex::encode(key)
}

#[derive(Debug)]
pub struct Mutation;

#[Object]
impl Mutation {
    /// Creates an SLA or a new version from a native or OpenSLO document;
    /// answers `created`, `updated` or `unchanged`.
    async fn apply_sla(
        &self,
        ctx: &Context<'_>,
        document: String,
    ) -> async_graphql::Result<String> {
        let (app, caller) = parts(ctx)?;
        let applied = app.apply_sla(caller, &document).await.map_err(refuse)?;
        Ok(applied.outcome.to_owned())
    }

    /// Creates a customer of the tenant.
    async fn create_customer(
        &self,
        ctx: &Context<'_>,
        external_ref: String,
        name: String,
    ) -> async_graphql::Result<Customer> {
        let (app, caller) = parts(ctx)?;
        let c = app
            .create_customer(
                caller,
                slaproof_app::customers::NewCustomer { external_ref, name },
            )
            .await
            .map_err(refuse)?;
        Ok(Customer {
            id: c.id.to_string(),
            external_ref: c.external_ref,
            name: c.name,
        })
    }

    /// Changes one objective's target as a new version; answers `updated`
    /// or `unchanged`.
    async fn change_target(
        &self,
        ctx: &Context<'_>,
        sla: String,
        objective: String,
        target_ppm: u32,
    ) -> async_graphql::Result<String> {
        let (app, caller) = parts(ctx)?;
        let applied = app
            .change_target(caller, &sla, &objective, target_ppm)
            .await
            .map_err(refuse)?;
        Ok(applied.outcome.to_owned())
    }

    /// Plans a maintenance window for one SLA (by name) or, without
    /// `sla`, every SLA of the tenant; times in RFC 3339.
    async fn create_maintenance_window(
        &self,
        ctx: &Context<'_>,
        sla: Option<String>,
        starts_at: String,
        ends_at: String,
        description: String,
    ) -> async_graphql::Result<MaintenanceWindow> {
        let (app, caller) = parts(ctx)?;
        let window = slaproof_app::maintenance::NewWindow {
            sla,
            starts_at: required_instant("startsAt", starts_at)?,
            ends_at: required_instant("endsAt", ends_at)?,
            description,
        };
        let created = app.create_window(caller, window).await.map_err(refuse)?;
        Ok(created.into())
    }

    /// Cancels a maintenance window (`mw_…`); it stays on record.
    async fn cancel_maintenance_window(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<MaintenanceWindow> {
        let (app, caller) = parts(ctx)?;
        let id = id.parse().map_err(|_| {
            refuse(AppError::NotFound {
                what: "maintenance window",
                key: id.clone(),
            })
        })?;
        let cancelled = app.cancel_window(caller, id).await.map_err(refuse)?;
        Ok(cancelled.into())
    }

    /// Creates an ingest key; `key` is its secret, shown this once.
    async fn create_ingest_key(
        &self,
        ctx: &Context<'_>,
        name: String,
    ) -> async_graphql::Result<CreatedIngestKey> {
        let (app, caller) = parts(ctx)?;
        let created = app.create_ingest_key(caller, &name).await.map_err(refuse)?;
        Ok(CreatedIngestKey {
            ingest_key: created.key.into(),
            key: created.secret,
        })
    }

    /// Revokes an ingest key by id or prefix.
    async fn revoke_ingest_key(
        &self,
        ctx: &Context<'_>,
        id: String,
    ) -> async_graphql::Result<IngestKey> {
        let (app, caller) = parts(ctx)?;
        let key = app.revoke_ingest_key(caller, &id).await.map_err(refuse)?;
        Ok(key.into())
    }

    /// Signs an embed token for one customer's dashboard: read scopes the
    /// caller holds, 60-3600 seconds (900 by default).
    async fn create_embed_token(
        &self,
        ctx: &Context<'_>,
        customer: String,
        dashboard: String,
        scopes: Vec<String>,
        ttl_secs: Option<u32>,
    ) -> async_graphql::Result<EmbedToken> {
        let (app, caller) = parts(ctx)?;
        let customer = customer.parse().map_err(|_| {
            refuse(AppError::invalid(
                "customer",
                "is not a customer id (cus_…)",
            ))
        })?;
        let token = app
            .create_embed_token(
                caller,
                slaproof_app::embed::EmbedRequest {
                    customer,
                    dashboard,
                    scopes,
                    ttl_secs,
                },
            )
            .await
            .map_err(refuse)?;
        Ok(EmbedToken {
            token: token.token,
            expires_at: token.expires_at.to_rfc3339(),
            scopes: token.scopes.into_iter().map(str::to_owned).collect(),
        })
    }

    /// Replaces the origins allowed to frame embedded dashboards.
    async fn set_embed_origins(
        &self,
        ctx: &Context<'_>,
        origins: Vec<String>,
    ) -> async_graphql::Result<Vec<String>> {
        let (app, caller) = parts(ctx)?;
        app.set_embed_origins(caller, origins).await.map_err(refuse)
    }

    /// Creates a tenant (slaproof's operators only).
    async fn create_tenant(
        &self,
        ctx: &Context<'_>,
        name: String,
        display_name: String,
    ) -> async_graphql::Result<Tenant> {
        let (app, caller) = parts(ctx)?;
        let tenant = app
            .create_tenant(caller, &name, &display_name)
            .await
            .map_err(refuse)?;
        Ok(tenant.into())
    }

    // --- synthetic probes (see the Probe types at the end) -----------------

    /// Defines a probe; its first run is due at once.
    #[graphql(visible = "holds_probes")]
    async fn create_probe(
        &self,
        ctx: &Context<'_>,
        input: ProbeInput,
    ) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        let new = slaproof_app::probes::NewProbe {
            name: input.name,
            service: input.service,
            model: input.model,
            kind: input.kind.into(),
            method: input.method,
            url: input.url,
            headers: headers_of(input.headers)?,
            body: input.body.map(|b| b.0),
            expected_status: input.expected_status,
            interval_secs: input.interval_secs,
            timeout_ms: input.timeout_ms,
            enabled: input.enabled,
        };
        Ok(app.create_probe(caller, new).await.map_err(refuse)?.into())
    }

    /// Changes a probe (by id or name): given fields only; `headers`
    /// replaces every header.
    #[graphql(visible = "holds_probes")]
    async fn update_probe(
        &self,
        ctx: &Context<'_>,
        probe: String,
        input: ProbePatchInput,
    ) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        let patch = slaproof_app::probes::ProbePatch {
            name: input.name,
            service: input.service,
            model: match input.model {
                async_graphql::MaybeUndefined::Undefined => None,
                async_graphql::MaybeUndefined::Null => Some(None),
                async_graphql::MaybeUndefined::Value(m) => Some(Some(m)),
            },
            kind: input.kind.map(Into::into),
            method: input.method,
            url: input.url,
            headers: input.headers.map(headers_of).transpose()?,
            body: match input.body {
                async_graphql::MaybeUndefined::Undefined => None,
                async_graphql::MaybeUndefined::Null => Some(None),
                async_graphql::MaybeUndefined::Value(b) => Some(Some(b.0)),
            },
            expected_status: input.expected_status,
            interval_secs: input.interval_secs,
            timeout_ms: input.timeout_ms,
            enabled: input.enabled,
        };
        Ok(app
            .update_probe(caller, &probe, patch)
            .await
            .map_err(refuse)?
            .into())
    }

    /// Deletes a probe (by id or name); its recorded runs stay.
    #[graphql(visible = "holds_probes")]
    async fn delete_probe(&self, ctx: &Context<'_>, probe: String) -> async_graphql::Result<bool> {
        let (app, caller) = parts(ctx)?;
        app.delete_probe(caller, &probe).await.map_err(refuse)?;
        Ok(true)
    }

    /// Makes a probe due now; a runner measures it within a poll.
    #[graphql(visible = "holds_probes")]
    async fn run_probe(&self, ctx: &Context<'_>, probe: String) -> async_graphql::Result<Probe> {
        let (app, caller) = parts(ctx)?;
        Ok(app
            .run_probe_now(caller, &probe)
            .await
            .map_err(refuse)?
            .into())
    }

    // --- end of synthetic probes -------------------------------------------

    // --- customer thresholds (see the Threshold type at the end) ----------

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

    // --- end of customer thresholds -----------------------------------------
}

#[derive(Debug, SimpleObject)]
pub struct BudgetStatus {
    /// True when an objective the caller may read has no budget left.
    pub exhausted: bool,
    pub objectives: Vec<ObjectiveBudget>,
}

#[derive(Debug, SimpleObject)]
pub struct ObjectiveBudget {
    pub objective: String,
    pub budget_remaining: Option<i64>,
    pub burn_rate_milli: Option<i64>,
    pub exhausted: bool,
}

#[derive(Debug, SimpleObject)]
pub struct Alert {
    pub objective: String,
    pub rule: String,
    pub firing: bool,
    /// RFC 3339.
    pub changed_at: String,
    pub long_burn_milli: i64,
    pub short_burn_milli: i64,
}

#[derive(Debug, SimpleObject)]
pub struct Breach {
    pub objective: String,
    pub period_start: String,
    pub period_end: String,
    pub revision: i32,
    pub target_ppm: i32,
    pub compliance_ppm: Option<i32>,
}

#[derive(Debug, SimpleObject)]
pub struct SeriesPoint {
    /// RFC 3339.
    pub evaluated_at: String,
    pub met: bool,
    pub compliance_ppm: Option<i32>,
    pub budget_remaining: i64,
    pub burn_rate_milli: i64,
}

#[derive(Debug, SimpleObject)]
pub struct Customer {
    pub id: String,
    pub external_ref: String,
    pub name: String,
}

#[derive(Debug)]
pub struct SlaSummary(SlaSummaryView);

#[Object]
impl SlaSummary {
    async fn id(&self) -> String {
        self.0.id.to_string()
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn current_version(&self) -> i32 {
        self.0.current_version
    }
    async fn customer_ref(&self) -> Option<&str> {
        self.0.customer_ref.as_deref()
    }
}

#[derive(Debug)]
pub struct Sla(SlaView);

#[Object]
impl Sla {
    async fn id(&self) -> String {
        self.0.id.to_string()
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn display_name(&self) -> Option<&str> {
        self.0.display_name.as_deref()
    }
    async fn service(&self) -> &str {
        &self.0.service
    }
    async fn customer_ref(&self) -> Option<&str> {
        self.0.customer_ref.as_deref()
    }
    async fn version(&self) -> i32 {
        self.0.version
    }
    async fn current_version(&self) -> i32 {
        self.0.current_version
    }
    async fn objectives(&self) -> Vec<Objective> {
        self.0.objectives.iter().cloned().map(Objective).collect()
    }

    /// Compliance and error budgets now, per objective.
    async fn compliance(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Vec<ObjectiveCompliance>> {
        let (app, caller) = parts(ctx)?;
        let view: ComplianceView = app
            .sla_compliance(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(view
            .objectives
            .into_iter()
            .map(|o| ObjectiveCompliance {
                objective: o.objective,
                family: o.family,
                numbers: o.numbers,
            })
            .collect())
    }

    /// Remaining budget and burn per objective, as gateways read it.
    async fn budget_status(&self, ctx: &Context<'_>) -> async_graphql::Result<BudgetStatus> {
        let (app, caller) = parts(ctx)?;
        let view = app
            .budget_status(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(BudgetStatus {
            exhausted: view.exhausted,
            objectives: view
                .objectives
                .into_iter()
                .map(|o| ObjectiveBudget {
                    objective: o.objective,
                    budget_remaining: o.budget_remaining,
                    burn_rate_milli: o.burn_rate_milli,
                    exhausted: o.exhausted,
                })
                .collect(),
        })
    }

    /// Burn-rate alerts, of the objectives the caller may read.
    async fn alerts(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Alert>> {
        let (app, caller) = parts(ctx)?;
        let view = app.sla_alerts(caller, &self.0.name).await.map_err(refuse)?;
        Ok(view
            .alerts
            .into_iter()
            .map(|a| Alert {
                objective: a.objective,
                rule: a.rule,
                firing: a.firing,
                changed_at: a.changed_at.to_rfc3339(),
                long_burn_milli: a.long_burn_milli,
                short_burn_milli: a.short_burn_milli,
            })
            .collect())
    }

    /// Closed periods not met, of the objectives the caller may read.
    async fn breaches(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Breach>> {
        let (app, caller) = parts(ctx)?;
        let view = app
            .sla_breaches(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(view
            .breaches
            .into_iter()
            .map(|b| Breach {
                objective: b.objective,
                period_start: b.period_start.to_rfc3339(),
                period_end: b.period_end.to_rfc3339(),
                revision: b.revision,
                target_ppm: b.target_ppm,
                compliance_ppm: b.compliance_ppm,
            })
            .collect())
    }

    /// One objective's budget over the last `hours` (default 24, at most
    /// 2000 points).
    #[graphql(visible = "holds_history")]
    async fn series(
        &self,
        ctx: &Context<'_>,
        objective: String,
        hours: Option<i32>,
    ) -> async_graphql::Result<Vec<SeriesPoint>> {
        let (app, caller) = parts(ctx)?;
        let hours = hours.unwrap_or(24);
        if !(1..=24 * 400).contains(&hours) {
            return Err(refuse(AppError::invalid(
                "hours",
                "must be between 1 and 9600",
            )));
        }
        let to = chrono::Utc::now();
        let view = app
            .compliance_series(
                caller,
                &self.0.name,
                &objective,
                to - chrono::Duration::hours(i64::from(hours)),
                to,
            )
            .await
            .map_err(refuse)?;
        Ok(view
            .points
            .into_iter()
            .map(|p| SeriesPoint {
                evaluated_at: p.evaluated_at.to_rfc3339(),
                met: p.met,
                compliance_ppm: p.compliance_ppm,
                budget_remaining: p.budget_remaining,
                burn_rate_milli: p.burn_rate_milli,
            })
            .collect())
    }

    /// Compliance, budgets and the minutes of `[from, to)` (RFC 3339;
    /// default the last day, at most two days), as `dashboard` answers.
    async fn dashboard(
        &self,
        ctx: &Context<'_>,
        from: Option<String>,
        to: Option<String>,
    ) -> async_graphql::Result<Dashboard> {
        dashboard(ctx, &self.0.name, from, to).await
    }

    /// Maintenance windows (the SLA's and the tenant-wide ones) overlapping
    /// `[from, to)`, RFC 3339; by default the last 30 days and the next 90.
    #[graphql(visible = "holds_maintenance")]
    async fn maintenance_windows(
        &self,
        ctx: &Context<'_>,
        from: Option<String>,
        to: Option<String>,
    ) -> async_graphql::Result<Vec<MaintenanceWindow>> {
        let (app, caller) = parts(ctx)?;
        let now = Utc::now();
        let from = instant("from", from)?.unwrap_or(now - chrono::Duration::days(30));
        let to = instant("to", to)?.unwrap_or(now + chrono::Duration::days(90));
        let windows = app
            .sla_windows(caller, &self.0.name, from, to)
            .await
            .map_err(refuse)?;
        Ok(windows.into_iter().map(Into::into).collect())
    }

    /// Every version, newest first.
    #[graphql(visible = "holds_history")]
    async fn versions(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Sla>> {
        let (app, caller) = parts(ctx)?;
        let versions = app
            .sla_versions(caller, &self.0.name)
            .await
            .map_err(refuse)?;
        Ok(versions.into_iter().map(Sla).collect())
    }

    /// The document, `native` or `openslo` YAML.
    #[graphql(visible = "holds_export")]
    async fn export(
        &self,
        ctx: &Context<'_>,
        openslo: Option<bool>,
    ) -> async_graphql::Result<String> {
        let (app, caller) = parts(ctx)?;
        let format = if openslo.unwrap_or(false) {
            ExportFormat::OpenSlo
        } else {
            ExportFormat::Native
        };
        app.export_sla(caller, &self.0.name, None, format)
            .await
            .map_err(refuse)
    }
}

#[derive(Debug)]
pub struct Objective(ObjectiveView);

fn family_name(family: Family) -> &'static str {
    match family {
        Family::Uptime => "uptime",
        Family::Latency => "latency",
    }
}

#[Object]
impl Objective {
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn display_name(&self) -> Option<&str> {
        self.0.display_name.as_deref()
    }
    /// `uptime` or `latency`: which scope reads this objective's numbers.
    async fn family(&self) -> &'static str {
        family_name(self.0.family)
    }
    async fn kind(&self) -> &'static str {
        self.0.kind
    }
    /// Needs the scope of the objective's family.
    #[graphql(visible = "holds_a_metric")]
    async fn target_ppm(&self) -> async_graphql::Result<u32> {
        self.0
            .target_ppm
            .ok_or_else(|| refuse(AppError::MissingScope(self.0.family.scope())))
    }
    /// The objective as in the native document; needs the family's scope.
    #[graphql(visible = "holds_a_metric")]
    async fn definition(&self) -> async_graphql::Result<Json<serde_json::Value>> {
        self.0
            .definition
            .clone()
            .map(Json)
            .ok_or_else(|| refuse(AppError::MissingScope(self.0.family.scope())))
    }
}

#[derive(Debug)]
pub struct ObjectiveCompliance {
    objective: String,
    family: Family,
    numbers: Option<Option<ComplianceNumbers>>,
}

#[Object]
impl ObjectiveCompliance {
    async fn objective(&self) -> &str {
        &self.objective
    }
    async fn family(&self) -> &'static str {
        family_name(self.family)
    }
    /// `null` before the first evaluation; needs the family's scope.
    #[graphql(visible = "holds_a_metric")]
    async fn met(&self) -> async_graphql::Result<Option<bool>> {
        Ok(self.numbers()?.map(|n| n.met))
    }
    #[graphql(visible = "holds_a_metric")]
    async fn compliance_ppm(&self) -> async_graphql::Result<Option<i32>> {
        Ok(self.numbers()?.and_then(|n| n.compliance_ppm))
    }
    #[graphql(visible = "holds_a_metric")]
    async fn budget_remaining(&self) -> async_graphql::Result<Option<i64>> {
        Ok(self.numbers()?.map(|n| n.budget_remaining))
    }
    #[graphql(visible = "holds_a_metric")]
    async fn burn_rate_milli(&self) -> async_graphql::Result<Option<i64>> {
        Ok(self.numbers()?.map(|n| n.burn_rate_milli))
    }
}

impl ObjectiveCompliance {
    fn numbers(&self) -> async_graphql::Result<Option<&ComplianceNumbers>> {
        match &self.numbers {
            Some(n) => Ok(n.as_ref()),
            None => Err(refuse(AppError::MissingScope(self.family.scope()))),
        }
    }
}

fn instant(field: &str, text: Option<String>) -> async_graphql::Result<Option<DateTime<Utc>>> {
    text.map(|t| {
        DateTime::parse_from_rfc3339(&t)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| refuse(AppError::invalid(field, format!("not RFC 3339: {e}"))))
    })
    .transpose()
}

async fn dashboard(
    ctx: &Context<'_>,
    sla: &str,
    from: Option<String>,
    to: Option<String>,
) -> async_graphql::Result<Dashboard> {
    let (app, caller) = parts(ctx)?;
    let (from, to) = (instant("from", from)?, instant("to", to)?);
    let view = app
        .sla_dashboard(caller, sla, from, to)
        .await
        .map_err(refuse)?;
    Ok(Dashboard(view))
}

fn holds_maintenance(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::MaintenanceRead)
}

/// An SLA's dashboard; fields the caller lacks the scope for are refused
/// naming it, as everywhere.
#[derive(Debug)]
pub struct Dashboard(DashboardView);

#[Object]
impl Dashboard {
    async fn sla(&self) -> &str {
        &self.0.sla
    }
    async fn version(&self) -> i32 {
        self.0.version
    }
    /// RFC 3339, a whole minute.
    async fn from(&self) -> String {
        self.0.from.to_rfc3339()
    }
    /// RFC 3339, a whole minute; the minutes are `[from, to)`.
    async fn to(&self) -> String {
        self.0.to.to_rfc3339()
    }
    async fn objectives(&self) -> Vec<DashboardObjective> {
        self.0
            .objectives
            .iter()
            .map(|o| {
                let minutes_scope = self
                    .0
                    .redacted
                    .iter()
                    .find(|r| r.field == format!("objectives[{}].minutes", o.objective))
                    .and_then(|r| Scope::parse(r.scope))
                    .unwrap_or(Scope::SlaReadHistory);
                DashboardObjective {
                    compliance: ObjectiveCompliance {
                        objective: o.objective.clone(),
                        family: o.family,
                        numbers: o.numbers.clone(),
                    },
                    minutes: o.minutes.clone(),
                    minutes_scope,
                    thresholds: o.thresholds.clone(),
                }
            })
            .collect()
    }
    /// Latency, TTFT and TPOT percentiles per minute with events (within
    /// 1%); needs `sla:read:latency` and `sla:read:history`.
    #[graphql(visible = "holds_history")]
    async fn percentiles(&self) -> async_graphql::Result<Vec<PercentilePoint>> {
        let points = self.0.percentiles.as_ref().ok_or_else(|| {
            let scope = self
                .0
                .redacted
                .iter()
                .find(|r| r.field == "percentiles")
                .and_then(|r| Scope::parse(r.scope))
                .unwrap_or(Scope::SlaReadLatency);
            refuse(AppError::MissingScope(scope))
        })?;
        let measure = |p: &slaproof_app::dashboard::Percentiles| Percentiles {
            count: p.count,
            p50_us: p.p50_us,
            p95_us: p.p95_us,
            p99_us: p.p99_us,
        };
        Ok(points
            .iter()
            .map(|p| PercentilePoint {
                minute: minute_text(p.minute),
                latency: measure(&p.latency),
                ttft: measure(&p.ttft),
                tpot: measure(&p.tpot),
                maintenance: p.maintenance.map(maintenance_name),
            })
            .collect())
    }

    /// Maintenance overlapping the range; needs `maintenance:read`.
    #[graphql(visible = "holds_maintenance")]
    async fn maintenance(&self) -> async_graphql::Result<Vec<MaintenanceSpan>> {
        let spans = self
            .0
            .maintenance
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(Scope::MaintenanceRead)))?;
        Ok(spans
            .iter()
            .map(|s| MaintenanceSpan {
                starts_at: s.starts_at.to_rfc3339(),
                ends_at: s.ends_at.to_rfc3339(),
            })
            .collect())
    }
}

#[derive(Debug, SimpleObject)]
pub struct MaintenanceSpan {
    pub starts_at: String,
    pub ends_at: String,
}

#[derive(Debug)]
pub struct DashboardObjective {
    compliance: ObjectiveCompliance,
    minutes: Option<Vec<slaproof_app::dashboard::MinutePoint>>,
    minutes_scope: Scope,
    thresholds: Option<Option<slaproof_app::thresholds::ThresholdView>>,
}

#[Object]
impl DashboardObjective {
    async fn objective(&self) -> &str {
        &self.compliance.objective
    }
    async fn family(&self) -> &'static str {
        family_name(self.compliance.family)
    }
    /// The latest evaluation, as `Sla.compliance` answers it.
    async fn compliance(&self) -> &ObjectiveCompliance {
        &self.compliance
    }
    /// The customer's own alert lines on this objective, for the chart to
    /// draw (null when none are set); needs the family's scope.
    #[graphql(visible = "holds_a_metric")]
    async fn thresholds(&self) -> async_graphql::Result<Option<Threshold>> {
        let lines = self
            .thresholds
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(self.compliance.family.scope())))?;
        Ok(lines.clone().map(Threshold::from))
    }

    /// One point per minute that counted events, oldest first; needs the
    /// family's scope and `sla:read:history`.
    #[graphql(visible = "holds_history")]
    async fn minutes(&self) -> async_graphql::Result<Vec<MinutePoint>> {
        let points = self
            .minutes
            .as_ref()
            .ok_or_else(|| refuse(AppError::MissingScope(self.minutes_scope)))?;
        Ok(points
            .iter()
            .map(|p| MinutePoint {
                minute: minute_text(p.minute),
                good: p.good,
                total: p.total,
                ratio_ppm: p.ratio_ppm,
                maintenance: p.maintenance.map(maintenance_name),
            })
            .collect())
    }
}

/// A minute as REST writes it (`2026-11-30T12:34:00Z`).
fn minute_text(minute: DateTime<Utc>) -> String {
    minute.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn maintenance_name(m: MinuteMaintenance) -> &'static str {
    match m {
        MinuteMaintenance::Whole => "whole",
        MinuteMaintenance::Part => "part",
    }
}

#[derive(Debug, SimpleObject)]
pub struct PercentilePoint {
    /// RFC 3339.
    pub minute: String,
    pub latency: Percentiles,
    pub ttft: Percentiles,
    pub tpot: Percentiles,
    /// `whole` or `part` when the minute overlaps maintenance.
    pub maintenance: Option<&'static str>,
}

/// Microseconds, within 1%; null when no event carried the measure.
#[derive(Debug, SimpleObject)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: Option<u64>,
    pub p95_us: Option<u64>,
    pub p99_us: Option<u64>,
}

#[derive(Debug, SimpleObject)]
pub struct MinutePoint {
    /// RFC 3339.
    pub minute: String,
    pub good: i64,
    pub total: i64,
    pub ratio_ppm: Option<u32>,
    /// `whole` or `part` when the minute overlaps maintenance.
    pub maintenance: Option<&'static str>,
}

fn required_instant(field: &str, text: String) -> async_graphql::Result<DateTime<Utc>> {
    Ok(instant(field, Some(text))?.unwrap_or_else(Utc::now))
}

fn holds_ingest_keys(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::IngestKeyManage)
}

fn holds_embed(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::EmbedTokenCreate)
}

fn holds_tenants(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::TenantAdmin)
}

#[derive(Debug, SimpleObject)]
pub struct MaintenanceWindow {
    /// `mw_…`.
    pub id: String,
    /// `sla_…`; absent for a tenant-wide window.
    pub sla: Option<String>,
    /// RFC 3339.
    pub starts_at: String,
    pub ends_at: String,
    pub description: String,
    pub cancelled_at: Option<String>,
}

impl From<slaproof_app::maintenance::StoredMaintenanceWindow> for MaintenanceWindow {
    fn from(w: slaproof_app::maintenance::StoredMaintenanceWindow) -> Self {
        Self {
            id: w.id.to_string(),
            sla: w.sla.map(|s| s.to_string()),
            starts_at: w.starts_at.to_rfc3339(),
            ends_at: w.ends_at.to_rfc3339(),
            description: w.description,
            cancelled_at: w.cancelled_at.map(|t| t.to_rfc3339()),
        }
    }
}

#[derive(Debug, SimpleObject)]
pub struct IngestKey {
    /// `key_…`.
    pub id: String,
    /// The key's public part, enough to tell keys apart in logs.
    pub prefix: String,
    pub name: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

impl From<slaproof_app::ingest_keys::IngestKey> for IngestKey {
    fn from(k: slaproof_app::ingest_keys::IngestKey) -> Self {
        Self {
            id: k.id.to_string(),
            prefix: k.prefix,
            name: k.name,
            created_at: k.created_at.to_rfc3339(),
            revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// A key just created: `key` is its secret, shown this once.
#[derive(Debug, SimpleObject)]
pub struct CreatedIngestKey {
    pub ingest_key: IngestKey,
    pub key: String,
}

#[derive(Debug, SimpleObject)]
pub struct EmbedToken {
    pub token: String,
    /// RFC 3339.
    pub expires_at: String,
    pub scopes: Vec<String>,
}

#[derive(Debug, SimpleObject)]
pub struct Tenant {
    /// `ten_…`.
    pub id: String,
    pub name: String,
    pub display_name: String,
    pub created_at: String,
}

impl From<slaproof_app::tenants::Tenant> for Tenant {
    fn from(t: slaproof_app::tenants::Tenant) -> Self {
        Self {
            id: t.id.to_string(),
            name: t.name,
            display_name: t.display_name,
            created_at: t.created_at.to_rfc3339(),
        }
    }
}

// ---------------------------------------------------------------------------
// Synthetic probes: the types of the probe queries and mutations above.
// ---------------------------------------------------------------------------

fn holds_probes(ctx: &Context<'_>) -> bool {
    holds(ctx, Scope::ProbeManage)
}

/// What a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, async_graphql::Enum)]
pub enum ProbeKindGql {
    /// One request; good when it answers the expected status.
    Http,
    /// An OpenAI-style chat completion with `stream: true`.
    StreamingCompletion,
}

impl From<ProbeKindGql> for slaproof_app::probes::ProbeKind {
    fn from(k: ProbeKindGql) -> Self {
        match k {
            ProbeKindGql::Http => Self::Http,
            ProbeKindGql::StreamingCompletion => Self::StreamingCompletion,
        }
    }
}

/// A request header of a probe.
#[derive(Debug, Clone, async_graphql::InputObject)]
pub struct ProbeHeaderInput {
    pub name: String,
    /// Stored, never answered.
    pub value: String,
}

fn headers_of(
    headers: Vec<ProbeHeaderInput>,
) -> async_graphql::Result<std::collections::BTreeMap<String, String>> {
    let mut map = std::collections::BTreeMap::new();
    for h in headers {
        if map.insert(h.name.clone(), h.value).is_some() {
            return Err(refuse(AppError::invalid(
                format!("headers.{}", h.name),
                "is given twice",
            )));
        }
    }
    Ok(map)
}

/// A probe to define; the fields and defaults of `POST /v1/probes`.
#[derive(Debug, async_graphql::InputObject)]
pub struct ProbeInput {
    pub name: String,
    pub service: String,
    pub model: Option<String>,
    pub kind: ProbeKindGql,
    pub method: Option<String>,
    pub url: String,
    #[graphql(default)]
    pub headers: Vec<ProbeHeaderInput>,
    pub body: Option<Json<serde_json::Value>>,
    pub expected_status: Option<i32>,
    pub interval_secs: Option<i32>,
    pub timeout_ms: Option<i32>,
    pub enabled: Option<bool>,
}

/// Changes to a probe: omitted fields stay; `null` clears `model`/`body`.
#[derive(Debug, async_graphql::InputObject)]
pub struct ProbePatchInput {
    pub name: Option<String>,
    pub service: Option<String>,
    pub model: async_graphql::MaybeUndefined<String>,
    pub kind: Option<ProbeKindGql>,
    pub method: Option<String>,
    pub url: Option<String>,
    pub headers: Option<Vec<ProbeHeaderInput>>,
    pub body: async_graphql::MaybeUndefined<Json<serde_json::Value>>,
    pub expected_status: Option<i32>,
    pub interval_secs: Option<i32>,
    pub timeout_ms: Option<i32>,
    pub enabled: Option<bool>,
}

/// The last run of a probe.
#[derive(Debug, SimpleObject)]
pub struct ProbeLastRun {
    /// RFC 3339.
    pub at: String,
    /// `good`, `bad` or `error`.
    pub outcome: &'static str,
    pub status: Option<i32>,
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
}

/// A synthetic probe; header values are never answered.
#[derive(Debug, SimpleObject)]
pub struct Probe {
    /// `prb_…`.
    pub id: String,
    pub name: String,
    pub service: String,
    pub model: Option<String>,
    /// `http` or `streaming_completion`.
    pub kind: &'static str,
    pub method: String,
    pub url: String,
    pub header_names: Vec<String>,
    pub body: Option<Json<serde_json::Value>>,
    pub expected_status: i32,
    pub interval_secs: i32,
    pub timeout_ms: i32,
    pub enabled: bool,
    /// RFC 3339.
    pub next_run_at: String,
    pub last_run: Option<ProbeLastRun>,
}

impl From<slaproof_app::probes::StoredProbe> for Probe {
    fn from(p: slaproof_app::probes::StoredProbe) -> Self {
        let d = p.definition;
        Self {
            id: p.id.to_string(),
            name: d.name,
            service: d.service,
            model: d.model,
            kind: d.kind.as_str(),
            method: d.method,
            url: d.url,
            header_names: d.headers.into_keys().collect(),
            body: d.body.map(Json),
            expected_status: d.expected_status,
            interval_secs: d.interval_secs,
            timeout_ms: d.timeout_ms,
            enabled: d.enabled,
            next_run_at: p.next_run_at.to_rfc3339(),
            last_run: p.last.map(|l| ProbeLastRun {
                at: l.at.to_rfc3339(),
                outcome: l.outcome.as_str(),
                status: l.status,
                error: l.error,
                latency_ms: l.latency_us.map(|us| us as f64 / 1000.0),
            }),
        }
    }
}

/// A customer's own alert lines on one objective (never the contract).
#[derive(Debug, SimpleObject)]
pub struct Threshold {
    pub objective: String,
    pub family: &'static str,
    pub customer_ref: String,
    pub compliance_below_ppm: Option<u32>,
    pub budget_remaining_below_ppm: Option<u32>,
    pub burn_rate_above_milli: Option<u64>,
    /// The lines the latest evaluation was past: `compliance`, `budget`,
    /// `burn_rate`.
    pub crossed: Vec<String>,
    /// RFC 3339; null before the first evaluation since the lines were set.
    pub evaluated_at: Option<String>,
    pub updated_at: String,
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
