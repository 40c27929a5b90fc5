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
    Invalid { constraint: String, message: String },
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
        let message = constraint_message(&constraint)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("refused by database rule {constraint}"));
        match db.kind() {
            sqlx::error::ErrorKind::UniqueViolation => StoreError::Conflict {
                constraint,
                message,
            },
            sqlx::error::ErrorKind::CheckViolation
            | sqlx::error::ErrorKind::ForeignKeyViolation
            | sqlx::error::ErrorKind::NotNullViolation => StoreError::Invalid {
                constraint,
                message,
            },
            _ => StoreError::Database(err),
        }
    }
}

/// What each named constraint means to a person, in one place.
fn constraint_message(constraint: &str) -> Option<&'static str> {
    Some(match constraint {
        "tenants_name_unique" => "a tenant with this name exists already",
        "tenants_name_format" => {
            "tenant name must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit"
        }
        "customers_external_ref_unique" => "a customer with this external reference exists already",
        "customers_external_ref_format" => {
            "customer external reference must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'"
        }
        "slas_name_unique" => "an SLA with this name exists already",
        "ingest_keys_prefix_unique" => "ingest key prefix collision; try again",
        "maintenance_windows_ordered" => "maintenance window must end after it starts",
        "jobs_dedup" => "an equal job is pending already",
        "probes_name_unique" => "a probe with this name exists already",
        "probes_interval_range" => "probe interval must be between 10 and 86400 seconds",
        "probes_timeout_range" => {
            "probe timeout must be between 100 and 120000 ms and within the interval"
        }
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
