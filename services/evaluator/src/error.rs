//! What can go wrong while evaluating a tenant.

use slaproof_store::StoreError;

/// An evaluator failure. Each is logged once by the worker and the job is
/// retried. A run in one transaction commits all its work or none; one
/// spread over connections (`evaluator.connections`) may leave the rollups
/// and some groups of SLAs committed, which the retry evaluates again as
/// every round does.
#[derive(Debug, thiserror::Error)]
pub enum EvaluatorError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("database error while {doing}: {source}")]
    Database {
        doing: &'static str,
        #[source]
        source: sqlx::Error,
    },
    /// Postgres cancelled a statement that ran (or waited on a lock) past
    /// the transaction's statement timeout.
    #[error(
        "a statement ran past evaluator.statement_timeout_secs while {doing} and was cancelled: {source}"
    )]
    StatementTimeout {
        doing: &'static str,
        #[source]
        source: sqlx::Error,
    },
    /// A stored value that cannot be what the schema promises.
    #[error("stored {what} is unreadable: {reason}")]
    Corrupt { what: &'static str, reason: String },
    /// Another transaction is evaluating this tenant right now.
    #[error("tenant {tenant} is being evaluated by another worker")]
    Busy { tenant: String },
    /// The job's lease ran out and another worker holds the tenant now; the
    /// work of the transaction the job was to complete in was rolled back.
    #[error("lost the lease on the evaluate job of tenant {tenant}")]
    LeaseLost { tenant: String },
}

impl EvaluatorError {
    /// A stored value (an SLA's definition) that cannot be read: the SLA it
    /// belongs to is left out of its tenant's evaluation, not the tenant.
    pub fn is_unreadable(&self) -> bool {
        matches!(
            self,
            EvaluatorError::Corrupt { .. } | EvaluatorError::Store(StoreError::Corrupt { .. })
        )
    }
}

/// Attaches what was being done to a database error.
pub(crate) trait Doing<T> {
    fn doing(self, doing: &'static str) -> Result<T, EvaluatorError>;
}

impl<T> Doing<T> for Result<T, sqlx::Error> {
    fn doing(self, doing: &'static str) -> Result<T, EvaluatorError> {
        self.map_err(|source| database(doing, source))
    }
}

fn database(doing: &'static str, source: sqlx::Error) -> EvaluatorError {
    if is_statement_timeout(&source) {
        EvaluatorError::StatementTimeout { doing, source }
    } else {
        EvaluatorError::Database { doing, source }
    }
}

/// A statement the store runs keeps the same context: what the evaluator
/// was doing, and a statement timeout named as one.
impl<T> Doing<T> for Result<T, StoreError> {
    fn doing(self, doing: &'static str) -> Result<T, EvaluatorError> {
        self.map_err(|err| match err {
            StoreError::Database(source) => database(doing, source),
            other => EvaluatorError::Store(other),
        })
    }
}

/// Whether Postgres cancelled the statement for the statement timeout
/// (`query_canceled`, which a cancel request shares: told apart by its
/// message).
fn is_statement_timeout(err: &sqlx::Error) -> bool {
    err.as_database_error().is_some_and(|e| {
        e.code().as_deref() == Some("57014") && e.message().contains("statement timeout")
    })
}

impl From<slaproof_domain::sketch::SketchError> for EvaluatorError {
    fn from(err: slaproof_domain::sketch::SketchError) -> Self {
        EvaluatorError::Corrupt {
            what: "sketch",
            reason: err.0,
        }
    }
}
