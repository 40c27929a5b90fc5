//! Logging set-up: one subscriber per process, text for people, JSON for
//! pipelines.

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber. `RUST_LOG`, when set, wins over the
/// configured level. Logs go to stderr; stdout is for what a command prints.
pub fn init(config: &LogConfig) {
    // sqlx reports Postgres NOTICEs ("relation already exists, skipping")
    // at info; they are noise unless asked for.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!("sqlx::postgres::notice=warn,{}", config.level))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests) is harmless, hence try_init.
    let _ = match config.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
