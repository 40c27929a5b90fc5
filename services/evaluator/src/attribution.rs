//! Attribution: which values of a dimension (model, status, customer, an event attribute such as region) contributed the most bad events to an objective over a stretch, computed on demand from the raw events.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use futures_util::TryStreamExt;
use slaproof_domain::objective::EventVerdict;
use slaproof_store::{TenantTx, maintenance};

use crate::error::{Doing, EvaluatorError};
use crate::events::{EVENT_COLUMNS, EventRow, ReadEvent};
use crate::tracked::TrackedSla;
use slaproof_domain::window::in_any;

/// What to break bad events down by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dimension {
    Model,
    Status,
    ErrorClass,
    Source,
    Streaming,
    /// The customer the request served (its reference): on a service-wide
    /// SLA, which customers' requests went bad. The provider's to see.
    Customer,
    /// A free attribute of the event (`attr.region`), numeric or text.
    Attr(String),
}

impl Dimension {
    /// Reads `model`, `status`, `error_class`, `source`, `streaming`,
    /// `customer` or `attr.<name>` (`<name>`: letters, digits, `_`, `-`, `.`, at most 64).
    pub fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "model" => Self::Model,
            "status" => Self::Status,
            "error_class" => Self::ErrorClass,
            "source" => Self::Source,
            "streaming" => Self::Streaming,
            "customer" => Self::Customer,
            _ => match text.strip_prefix("attr.") {
                Some(name)
                    if !name.is_empty()
                        && name.len() <= 64
                        && name.bytes().all(|b| {
                            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
                        }) =>
                {
                    Self::Attr(name.to_owned())
                }
                _ => {
                    return Err(format!(
                        "must be one of model, status, error_class, source, streaming, customer or attr.<name>, got {text:?}"
                    ));
                }
            },
        })
    }

    /// The SQL expression giving the dimension's value as text; attribute
    /// names are bound as `$5`, never spliced.
    fn expression(&self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Status => "status::text",
            Self::ErrorClass => "error_class",
            Self::Source => "source",
            Self::Streaming => "streaming::text",
            Self::Customer => "customer",
            Self::Attr(_) => "attributes ->> $5::text",
        }
    }
}

/// One value of a dimension and the counted events that carried it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Contribution {
    /// `None`: events without the dimension.
    pub value: Option<String>,
    pub bad: u64,
    pub total: u64,
}

#[derive(sqlx::FromRow)]
struct Row {
    #[sqlx(flatten)]
    event: EventRow,
    dimension: Option<String>,
}

/// The values of `dimension` with the most bad events of `objective` among
/// events that occurred in `[from, to)` and were received before `as_of`,
/// counted as the verdict counts them (maintenance and late events left
/// out), most bad events first; at most `limit`.
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name))]
#[allow(clippy::too_many_arguments)]
pub async fn attribute(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    objective: &str,
    dimension: &Dimension,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: DateTime<Utc>,
    grace: Duration,
    limit: usize,
) -> Result<Vec<Contribution>, EvaluatorError> {
    let Some(objective) = sla.definition.objective(objective) else {
        return Err(EvaluatorError::Corrupt {
            what: "objective name",
            reason: format!("SLA {} has no objective {objective:?}", sla.name),
        });
    };
    let windows = maintenance::periods(tx, sla.id, &sla.definition, from, to).await?;
    let attr = match dimension {
        Dimension::Attr(name) => name.clone(),
        _ => String::new(),
    };
    // $5 appears in every query, so Postgres always knows its type.
    let sql = format!(
        "SELECT {EVENT_COLUMNS}, {} AS dimension FROM events WHERE tenant_id = $1 AND occurred_at >= $2 \
         AND occurred_at < $3 AND received_at < $4 AND ($5::text IS NOT NULL)",
        dimension.expression()
    );
    let mut rows = sqlx::query_as::<_, Row>(&sql)
        .bind(tx.tenant().uuid())
        .bind(from)
        .bind(to)
        .bind(as_of)
        .bind(&attr)
        .fetch(&mut **tx);
    let mut by_value: HashMap<Option<String>, (u64, u64)> = HashMap::new();
    while let Some(row) = rows.try_next().await.doing("reading events to attribute")? {
        let event = ReadEvent::from(row.event);
        if !sla.scopes(&event)
            || in_any(&windows, event.occurred_at)
            || !sla
                .arrival(event.occurred_at, event.received_at, grace)
                .counts()
        {
            continue;
        }
        let verdict = objective.classify(&event.fields);
        if verdict == EventVerdict::NotCounted {
            continue;
        }
        let entry = by_value.entry(row.dimension).or_default();
        entry.0 += u64::from(verdict == EventVerdict::Bad);
        entry.1 += 1;
    }
    let mut out: Vec<Contribution> = by_value
        .into_iter()
        .map(|(value, (bad, total))| Contribution { value, bad, total })
        .collect();
    out.sort_by(|a, b| {
        b.bad
            .cmp(&a.bad)
            .then(b.total.cmp(&a.total))
            .then(a.value.cmp(&b.value))
    });
    out.truncate(limit);
    Ok(out)
}
