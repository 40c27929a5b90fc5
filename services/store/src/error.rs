//! What can go wrong in the store, with Postgres constraint names turned into
//! errors callers can show (409 / 422 over HTTP, a clear line in the CLI).

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached at all.
    #[error("cannot connect to the database: {0}")]
    Connect(#[source] sqlx::Error),
    /// A row that should exist does not (or belongs to another tenant, which
    /// looks the same from inside).
    #[error("{what} {key:?} not found")]
    NotFound { what: &'static str, key: String },
    /// A uniqueness rule of the schema refused the write.
    #[error("{message}")]
    Conflict { constraint: String, message: String },
    /// A check or foreign-key rule of the schema refused the write.
    #[error("{message}")]
    Invalid {
        constraint: String,
        /// The request field the rule is about.
        field: &'static str,
        message: String,
    },
    /// The service role could bypass row-level security.
    #[error(
        "database role {role:?} {problem}{}; services must connect as a role that is a member of \
         slaproof_service, owns no table and has neither SUPERUSER nor BYPASSRLS \
         (migrations run as the owner through database.migrate_url)",
        table.as_ref().map(|t| format!(" (e.g. {t})")).unwrap_or_default()
    )]
    UnsafeServiceRole {
        role: String,
        problem: &'static str,
        table: Option<String>,
    },
    /// A stored value no longer parses: the data predates a rule, or was
    /// written by hand.
    #[error("stored {what} is unreadable: {reason}")]
    Corrupt { what: &'static str, reason: String },
    /// A read asked for something it cannot have (a chart with a step
    /// that is not whole minutes, a quantile outside [0, 1]): the caller's
    /// mistake, naming the argument.
    #[error("{field} {reason}")]
    InvalidQuery { field: &'static str, reason: String },
    #[error("{0} timed out")]
    Timeout(&'static str),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        let Some(db) = err.as_database_error() else {
            return StoreError::Database(err);
        };
        let Some(constraint) = db.constraint().map(str::to_owned) else {
            return StoreError::Database(err);
        };
        // The schema's names stay inside: a caller learns which field is
        // wrong and why, never what a constraint is called.
        let (field, message) = constraint_meaning(&constraint).unwrap_or_else(|| {
            tracing::warn!(%constraint, "a constraint without a message refused a write");
            ("body", "refused by a rule of the data model")
        });
        let message = message.to_owned();
        match db.kind() {
            sqlx::error::ErrorKind::UniqueViolation => StoreError::Conflict {
                constraint,
                message,
            },
            sqlx::error::ErrorKind::CheckViolation
            | sqlx::error::ErrorKind::ForeignKeyViolation
            | sqlx::error::ErrorKind::NotNullViolation => StoreError::Invalid {
                constraint,
                field,
                message,
            },
            _ => StoreError::Database(err),
        }
    }
}

/// What each named constraint means to a person, and the field of the
/// request it is about, in one place.
fn constraint_meaning(constraint: &str) -> Option<(&'static str, &'static str)> {
    Some(match constraint {
        "tenants_name_unique" => ("name", "a tenant with this name exists already"),
        "tenants_name_format" => (
            "name",
            "tenant name must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit",
        ),
        "customers_external_ref_unique" => (
            "external_ref",
            "a customer with this external reference exists already",
        ),
        "customers_external_ref_format" => (
            "external_ref",
            "customer external reference must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'",
        ),
        "probes_customer_format" => (
            "customer",
            "a customer reference is 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-', starting with a letter or digit",
        ),
        "slas_name_unique" => ("name", "an SLA with this name exists already"),
        "slas_name_format" => (
            "name",
            "SLA name must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit",
        ),
        "ingest_keys_prefix_unique" => ("name", "ingest key prefix collision; try again"),
        "maintenance_windows_ordered" => ("ends_at", "maintenance window must end after it starts"),
        "jobs_dedup" => ("job", "an equal job is pending already"),
        "probes_name_unique" => ("name", "a probe with this name exists already"),
        "probes_name_format" => (
            "name",
            "probe name must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit",
        ),
        "probes_interval_range" => (
            "interval_secs",
            "probe interval must be between 10 and 86400 seconds",
        ),
        "probes_timeout_range" => (
            "timeout_ms",
            "probe timeout must be between 100 and 120000 ms and within the interval",
        ),
        "customer_thresholds_compliance_range" => {
            ("compliance_below_ppm", "must be between 0 and 1000000")
        }
        "customer_thresholds_budget_range" => (
            "budget_remaining_below_ppm",
            "must be between 0 and 1000000",
        ),
        "customer_thresholds_burn_positive" => ("burn_rate_above_milli", "must be positive"),
        "customer_thresholds_some_line" => ("body", "a threshold needs at least one line"),
        _ => return None,
    })
}

impl StoreError {
    /// Shorthand for a missing row.
    pub fn not_found(what: &'static str, key: impl std::fmt::Display) -> Self {
        StoreError::NotFound {
            what,
            key: key.to_string(),
        }
    }
}
