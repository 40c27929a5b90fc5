//! What one GraphQL query may ask and spend, so that no query costs more
//! than a handful of REST calls, whoever sends it (a customer's user and
//! an embed token included):
//!
//! - before validation, its shape: at most [`MAX_ROOT_FIELDS`] root fields
//!   (an alias is a field) and [`MAX_FIELDS`] fields in all, fragments
//!   counted where they are spread, so that a fragment that spreads another
//!   twice, nested, is refused before anything walks it;
//! - at validation, its depth (`api.graphql_max_depth`) and its cost
//!   (`api.graphql_max_complexity`), in points: a field is 1 point plus its
//!   selection; a field that reads through the application (a database
//!   transaction) 10 points plus its selection; a page of a connection
//!   10 points and its selection once per item it may hold (`first`, 50
//!   when absent, at most 200); a list the API does not page and that grows
//!   with the SLA's history (versions, breaches, maintenance windows) 10
//!   points and its selection 50 times, as a default page. Lists fixed by
//!   the SLA's document (objectives and what is answered per objective, at
//!   most 64) or by the bounded range of one read (minutes, percentiles,
//!   series points) count their selection once: the read that answers them
//!   is already counted, and their items read nothing of their own;
//! - while it runs: at most [`MAX_APP_READS`] reads through the application
//!   and [`TIME_BUDGET`] in all, after which it is cancelled.
//!
//! No object type leads back to itself (`Sla.versions` answers
//! `SlaVersion`, which reads nothing and has no SLAs; the GraphQL limit
//! tests check the whole schema), so no list can nest a list of its own
//! kind and the cost above bounds the work. Each refusal is a GraphQL error
//! whose message names the limit, with `extensions.code` `LIMIT_EXCEEDED`,
//! `extensions.limit` (`root_fields`, `fields`, `depth`, `complexity`,
//! `app_reads`, `time`) and `extensions.max`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest, NextRequest, NextValidation,
};
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{
    ErrorExtensionValues, ErrorExtensions, Request, Response, ServerError, ServerResult,
    ValidationResult,
};

use slaproof_app::page::{DEFAULT_PAGE, MAX_PAGE};

/// Root fields one operation may select, each alias counted.
pub(crate) const MAX_ROOT_FIELDS: usize = 10;
/// Fields one operation may select in all, each fragment counted as many
/// times as it is spread.
pub(crate) const MAX_FIELDS: usize = 1_000;
/// Directives one field may carry (`@skip` and `@include` are two).
pub(super) const MAX_DIRECTIVES: usize = 4;
/// Reads through the application (each a database transaction) one query
/// may make. Each read costs at least 10 points, so under the default cost
/// limit only a query of bare reads comes near it; it holds the line when
/// the cost limit is raised.
pub(crate) const MAX_APP_READS: usize = 40;
/// How long one query may take, parsing to answer; then it is cancelled
/// (a mutation already committed stays).
pub(crate) const TIME_BUDGET: Duration = Duration::from_secs(10);

/// Points a field costs for reading through the application.
const READ: usize = 10;
/// Items a list the API does not page is counted as holding.
const UNPAGED_ITEMS: usize = DEFAULT_PAGE as usize;
/// Levels of selections and fragment spreads walked before a query is
/// refused as nested too deep (the depth limit proper is checked later).
const MAX_NESTING: usize = 256;

/// The cost of a field that reads through the application.
pub(super) fn read_cost(selection: usize) -> usize {
    READ.saturating_add(selection)
}

/// The cost of a connection's page: the read, and the selection once per
/// item the page may hold.
pub(super) fn page_cost(first: Option<i32>, selection: usize) -> usize {
    let items = match first {
        None => DEFAULT_PAGE as usize,
        Some(n) => usize::try_from(n).unwrap_or(1).clamp(1, MAX_PAGE as usize),
    };
    read_cost(items.saturating_mul(selection))
}

/// The cost of a list read whole, which grows with the SLA's history.
pub(super) fn unpaged_cost(selection: usize) -> usize {
    read_cost(UNPAGED_ITEMS.saturating_mul(selection))
}

/// The limits of one query; the extension that holds a query to them.
#[derive(Debug, Clone, Copy)]
pub(super) struct QueryLimits {
    pub(super) max_depth: usize,
    pub(super) max_complexity: usize,
    pub(super) max_root_fields: usize,
    pub(super) max_fields: usize,
    pub(super) max_app_reads: usize,
    pub(super) time_budget: Duration,
}

impl ExtensionFactory for QueryLimits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(*self)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for QueryLimits {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        match tokio::time::timeout(self.time_budget, next.run(ctx)).await {
            Ok(response) => response,
            Err(_) => {
                tracing::warn!(
                    budget_ms = self.time_budget.as_millis() as u64,
                    "GraphQL query cancelled at its time budget"
                );
                Response::from_errors(vec![exceeded(
                    "time",
                    self.time_budget.as_secs_f64(),
                    format!(
                        "Query took longer than its time budget of {} s and was \
                         cancelled; ask for less in one query",
                        self.time_budget.as_secs_f64()
                    ),
                )])
            }
        }
    }

    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        let shape = Shape::of(request.parsed_query()?, self.max_depth)?;
        if shape.root_fields > self.max_root_fields {
            return Err(exceeded(
                "root_fields",
                self.max_root_fields,
                format!(
                    "Query selects {} root fields, more than the limit of {} \
                     (each alias counts); split it into several queries",
                    shape.root_fields, self.max_root_fields
                ),
            ));
        }
        if shape.fields > self.max_fields {
            return Err(exceeded(
                "fields",
                self.max_fields,
                format!(
                    "Query selects {} fields, more than the limit of {} (each \
                     fragment counts every time it is spread)",
                    shape.fields, self.max_fields
                ),
            ));
        }
        let request = request.data(ReadBudget::new(self.max_app_reads));
        next.run(ctx, request).await
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let result = next.run(ctx).await.map_err(|errors| {
            errors
                .into_iter()
                .map(|e| self.explain_depth(e))
                .collect::<Vec<_>>()
        })?;
        if result.complexity > self.max_complexity {
            return Err(vec![exceeded(
                "complexity",
                self.max_complexity,
                format!(
                    "Query is too complex: its complexity is {} points, more than \
                     the limit of {} (api.graphql_max_complexity). A list counts \
                     its selection once per item it may hold (a connection's \
                     `first`, {DEFAULT_PAGE} when absent) and a read of the \
                     application {READ} points; ask for smaller pages or fewer \
                     fields",
                    result.complexity, self.max_complexity
                ),
            )]);
        }
        Ok(result)
    }
}

impl QueryLimits {
    /// async-graphql's depth refusal, with the limit named.
    fn explain_depth(&self, error: ServerError) -> ServerError {
        if error.message.starts_with("Query is nested too deep") {
            too_deep(self.max_depth)
        } else {
            error
        }
    }
}

fn too_deep(max_depth: usize) -> ServerError {
    exceeded(
        "depth",
        max_depth,
        format!(
            "Query is nested too deep: more than {max_depth} levels \
             (api.graphql_max_depth)"
        ),
    )
}

/// A refusal naming `limit` and its value.
fn exceeded(limit: &str, max: impl Into<async_graphql::Value>, message: String) -> ServerError {
    let mut error = ServerError::new(message, None);
    let mut extensions = ErrorExtensionValues::default();
    extensions.set("code", "LIMIT_EXCEEDED");
    extensions.set("limit", limit);
    extensions.set("max", max);
    error.extensions = Some(extensions);
    error
}

/// The reads through the application a query has left; each resolver that
/// calls the application spends one first (`super::parts`).
#[derive(Debug)]
pub(super) struct ReadBudget {
    left: AtomicUsize,
    max: usize,
}

impl ReadBudget {
    fn new(max: usize) -> Self {
        Self {
            left: AtomicUsize::new(max),
            max,
        }
    }

    /// Spends one read, or refuses the field when none is left.
    pub(super) fn spend(&self) -> async_graphql::Result<()> {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| {
                let max = self.max;
                async_graphql::Error::new(format!(
                    "Query reads through the application more than {max} times, \
                     the limit for one query; split it into several queries"
                ))
                .extend_with(|_, e| {
                    e.set("code", "LIMIT_EXCEEDED");
                    e.set("limit", "app_reads");
                    e.set("max", max);
                })
            })
    }
}

/// How many fields a document selects: at the root of its largest
/// operation, and in all.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Shape {
    root_fields: usize,
    fields: usize,
}

impl Shape {
    /// The shape of `doc`'s largest operation. Each fragment is counted
    /// once and its count reused wherever it is spread, so a document whose
    /// fragments multiply is measured in the time it takes to read it.
    fn of(doc: &ExecutableDocument, max_depth: usize) -> ServerResult<Shape> {
        let mut counter = Counter {
            doc,
            fragments: HashMap::new(),
            max_depth,
        };
        let mut largest = Shape::default();
        for (_, operation) in doc.operations.iter() {
            let shape = counter.selection_set(&operation.node.selection_set.node, 0)?;
            largest.root_fields = largest.root_fields.max(shape.root_fields);
            largest.fields = largest.fields.max(shape.fields);
        }
        Ok(largest)
    }
}

struct Counter<'a> {
    doc: &'a ExecutableDocument,
    /// Each fragment's shape once counted; `None` while it is being
    /// counted (a cycle, which validation refuses, counts nothing).
    fragments: HashMap<&'a str, Option<Shape>>,
    max_depth: usize,
}

impl<'a> Counter<'a> {
    /// `root_fields` here are the fields at this level of the selection.
    fn selection_set(&mut self, set: &'a SelectionSet, nesting: usize) -> ServerResult<Shape> {
        if nesting > MAX_NESTING {
            return Err(too_deep(self.max_depth));
        }
        let mut shape = Shape::default();
        for selection in &set.items {
            let inner = match &selection.node {
                Selection::Field(field) => {
                    let below = self.selection_set(&field.node.selection_set.node, nesting + 1)?;
                    Shape {
                        root_fields: 1,
                        fields: below.fields.saturating_add(1),
                    }
                }
                Selection::InlineFragment(fragment) => {
                    self.selection_set(&fragment.node.selection_set.node, nesting + 1)?
                }
                Selection::FragmentSpread(spread) => {
                    self.fragment(spread.node.fragment_name.node.as_str(), nesting + 1)?
                }
            };
            shape.root_fields = shape.root_fields.saturating_add(inner.root_fields);
            shape.fields = shape.fields.saturating_add(inner.fields);
        }
        Ok(shape)
    }

    fn fragment(&mut self, name: &'a str, nesting: usize) -> ServerResult<Shape> {
        match self.fragments.get(name) {
            Some(Some(shape)) => return Ok(*shape),
            Some(None) => return Ok(Shape::default()),
            None => {}
        }
        // An unknown fragment is validation's to refuse.
        let Some(definition) = self.doc.fragments.get(name) else {
            return Ok(Shape::default());
        };
        self.fragments.insert(name, None);
        let shape = self.selection_set(&definition.node.selection_set.node, nesting)?;
        self.fragments.insert(name, Some(shape));
        Ok(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema};

    fn shape(query: &str) -> Shape {
        let doc = async_graphql::parser::parse_query(query).unwrap();
        Shape::of(&doc, 10).unwrap()
    }

    #[test]
    fn aliases_inline_fragments_and_spreads_count_at_the_root() {
        assert_eq!(
            shape("{ a b: a ... on Query { c } ...F } fragment F on Query { d e { f } }"),
            Shape {
                root_fields: 5,
                fields: 6
            }
        );
    }

    #[test]
    fn a_fragment_counts_every_time_it_is_spread_without_being_walked_again() {
        // 2^40 fields when expanded: counted at once, not walked.
        let mut query = String::from("{ ...F0 }");
        for i in 0..40 {
            query.push_str(&format!(
                " fragment F{i} on Query {{ ...F{} ...F{} }}",
                i + 1,
                i + 1
            ));
        }
        query.push_str(" fragment F40 on Query { a }");
        assert_eq!(shape(&query).fields, 1 << 40);
    }

    #[test]
    fn a_fragment_cycle_counts_nothing_more() {
        assert_eq!(
            shape("{ ...A } fragment A on Query { a ...B } fragment B on Query { b ...A }").fields,
            2
        );
    }

    #[test]
    fn a_page_costs_its_selection_per_item() {
        assert_eq!(page_cost(None, 3), 10 + 50 * 3);
        assert_eq!(page_cost(Some(2), 3), 10 + 2 * 3);
        assert_eq!(page_cost(Some(10_000), 1), 10 + 200);
        assert_eq!(page_cost(Some(-5), 1), 10 + 1);
        assert_eq!(unpaged_cost(2), 10 + 50 * 2);
    }

    struct Slow;

    #[Object]
    impl Slow {
        async fn slow(&self) -> i32 {
            tokio::time::sleep(Duration::from_secs(5)).await;
            1
        }
        async fn quick(&self) -> i32 {
            1
        }
    }

    fn slow_schema(time_budget: Duration) -> Schema<Slow, EmptyMutation, EmptySubscription> {
        Schema::build(Slow, EmptyMutation, EmptySubscription)
            .extension(QueryLimits {
                max_depth: 10,
                max_complexity: 500,
                max_root_fields: 3,
                max_fields: 100,
                max_app_reads: 1,
                time_budget,
            })
            .finish()
    }

    #[tokio::test]
    async fn a_query_past_its_time_budget_is_cancelled_with_the_limit_named() {
        let schema = slow_schema(Duration::from_millis(50));
        let started = std::time::Instant::now();
        let answer = schema.execute("{ slow }").await;
        assert!(started.elapsed() < Duration::from_secs(2));
        let error = &answer.errors[0];
        assert!(error.message.contains("time budget"), "{error:?}");
        let extensions = error.extensions.as_ref().unwrap();
        assert_eq!(
            extensions.get("limit"),
            Some(&async_graphql::Value::from("time"))
        );
        assert_eq!(schema.execute("{ quick }").await.errors, []);
    }

    #[tokio::test]
    async fn root_fields_past_the_limit_are_refused_before_validation() {
        let schema = slow_schema(Duration::from_secs(1));
        // Unknown fields: refused for their number before validation
        // could name them.
        let answer = schema.execute("{ a: nope b: nope c: nope d: nope }").await;
        assert_eq!(answer.errors.len(), 1, "{:?}", answer.errors);
        assert!(
            answer.errors[0].message.contains("4 root fields"),
            "{:?}",
            answer.errors
        );
        assert_eq!(
            schema
                .execute("{ a: quick b: quick c: quick }")
                .await
                .errors,
            []
        );
    }

    #[tokio::test]
    async fn complexity_past_the_limit_is_refused_naming_the_limit() {
        let schema = Schema::build(Slow, EmptyMutation, EmptySubscription)
            .extension(QueryLimits {
                max_depth: 10,
                max_complexity: 2,
                max_root_fields: 10,
                max_fields: 100,
                max_app_reads: 1,
                time_budget: Duration::from_secs(1),
            })
            .finish();
        let answer = schema.execute("{ a: quick b: quick c: quick }").await;
        assert!(
            answer.errors[0].message.contains("complexity is 3 points")
                && answer.errors[0].message.contains("limit of 2"),
            "{:?}",
            answer.errors
        );
    }

    #[test]
    fn the_read_budget_refuses_past_its_last_read() {
        let budget = ReadBudget::new(2);
        assert!(budget.spend().is_ok() && budget.spend().is_ok());
        let refused = budget.spend().unwrap_err();
        assert!(refused.message.contains("more than 2 times"), "{refused:?}");
        assert!(budget.spend().is_err());
    }
}
