//! Configuration: defaults < a TOML file < `SLAPROOF_*` environment
//! variables, validated once at start.
//!
//! Nested keys are joined with a double underscore in the environment:
//! `SLAPROOF_DATABASE__URL` sets `database.url`. Secrets (database URLs,
//! which carry passwords) are [`SecretString`]s: `Debug` prints them
//! redacted and nothing in this crate prints them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use sqlx::postgres::PgConnectOptions;

mod ingest;
mod secrets_dir;
pub(crate) use ingest::IngestConfig;

/// The file read when `--config` is not given and it exists.
pub(crate) const DEFAULT_CONFIG_FILE: &str = "slaproof.toml";

/// The top-level sections; only `SLAPROOF_<SECTION>__…` variables are read,
/// so unrelated variables such as `SLAPROOF_TEST_DATABASE_URL` are not
/// mistaken for configuration.
const SECTIONS: &[&str] = &[
    "server",
    "database",
    "embedded",
    "events",
    "ingest",
    "evaluator",
    "probes",
    "webhooks",
    "compensation",
    "attestation",
    "chain",
    "transparency",
    "outbound",
    "api",
    "demo",
    "log",
    "telemetry",
];

/// The whole configuration of a slaproof process.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub embedded: EmbeddedConfig,
    pub events: EventsConfig,
    pub ingest: IngestConfig,
    pub evaluator: slaproof_evaluator::Settings,
    /// The synthetic probe runner.
    pub probes: slaproof_ingest::probe::Settings,
    /// The webhook worker: delivery, retries, the key secrets are sealed
    /// under.
    pub webhooks: slaproof_webhooks::Settings,
    /// The compensation worker: credit jobs.
    pub compensation: slaproof_compensation::Settings,
    /// The attestation worker: proofs of frozen period results and their
    /// anchors.
    pub attestation: slaproof_attestation::worker::Settings,
    /// The EVM chain anchors go to, the attester key and what it may spend.
    /// Unset `rpc_url`: `slaproof up` starts anvil (see `embedded.anvil`).
    pub chain: slaproof_chain::Settings,
    /// Each tenant's transparency log: its name, when a day is built.
    pub transparency: slaproof_app::transparency::TransparencySettings,
    /// Where slaproof may connect on a tenant's behalf (probe targets).
    pub outbound: slaproof_http::outbound::OutboundPolicy,
    /// The API's token issuer, audience and verification keys.
    pub api: slaproof_api::Settings,
    pub demo: DemoConfig,
    pub log: LogConfig,
    /// slaproof's own traces and metrics, exported over OTLP/HTTP.
    pub telemetry: TelemetryConfig,
}

/// The HTTP listener every service exposes.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// How long in-flight requests may take to finish after a shutdown
    /// signal, in seconds.
    pub shutdown_grace_secs: u64,
    /// How long a connection may take to send a request's headers, in
    /// seconds: a client trickling them (slowloris) is cut off then; an
    /// idle keep-alive connection waits at most this long for its next
    /// request.
    pub header_read_timeout_secs: u64,
    /// The most connections served at once; further ones wait, unaccepted,
    /// in the kernel's queue until one ends. Bounds what a flood of slow
    /// clients can hold (with `header_read_timeout_secs` and the API's
    /// `api.body_read_timeout_secs`).
    pub max_connections: usize,
    /// The most of them from one client address (an IPv6 host by its /64);
    /// one more is answered 503 and closed. Behind a proxy or load balancer
    /// every connection comes from its address: raise this to
    /// `max_connections` there, and bound clients at the proxy.
    pub max_connections_per_address: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            shutdown_grace_secs: 20,
            header_read_timeout_secs: 10,
            max_connections: 1_024,
            max_connections_per_address: 256,
        }
    }
}

/// Where the shared Postgres is.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// The services' connection: a role that is a member of
    /// `slaproof_service`, owns no table, and has no BYPASSRLS. Empty: the
    /// embedded Postgres of `slaproof up`.
    pub url: Option<SecretString>,
    /// The schema owner's connection, for migrations. Defaults to `url`.
    pub migrate_url: Option<SecretString>,
    /// Connections per process.
    pub max_connections: u32,
    /// Whether `up` and `serve` apply pending migrations at start.
    pub migrate_on_start: bool,
    /// Prepared statements kept per connection. 0 reuses no statement
    /// name, which pgbouncer before 1.21 needs in transaction mode (with its
    /// `server_reset_query = DEALLOCATE ALL` always); with 1.21 or later
    /// set its `max_prepared_statements` instead and keep this.
    pub statement_cache_capacity: usize,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: None,
            migrate_url: None,
            max_connections: 10,
            migrate_on_start: true,
            statement_cache_capacity: 100,
        }
    }
}

/// The private Postgres cluster `slaproof up` runs when no database is
/// configured.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddedConfig {
    /// Holds the cluster, its log and its generated credentials.
    pub data_dir: PathBuf,
    /// Folder with `initdb` and `postgres`; searched on PATH and in the
    /// usual install folders when empty.
    pub bin_dir: Option<PathBuf>,
    /// Postgres refuses to run as root: when slaproof runs as root, the
    /// cluster runs as this unprivileged system user.
    pub run_as: String,
    /// TCP port on 127.0.0.1; 0 picks a free one at each start.
    pub port: u16,
    /// With no `chain.rpc_url`, `slaproof up` starts anvil and deploys
    /// slaproof's contracts to it.
    pub anvil: bool,
    /// anvil's port on 127.0.0.1; 0 picks a free one at each start.
    pub anvil_port: u16,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".slaproof"),
            bin_dir: None,
            run_as: "postgres".to_owned(),
            port: 0,
            anvil: true,
            anvil_port: 0,
        }
    }
}

/// Telemetry storage.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// Days of raw events kept; older daily partitions are dropped.
    pub retention_days: u32,
    /// Days of partitions created ahead of today.
    pub partitions_ahead_days: u32,
    /// Seconds between two rounds of partition upkeep.
    pub upkeep_interval_secs: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            retention_days: 400,
            partitions_ahead_days: 7,
            upkeep_interval_secs: 3600,
        }
    }
}

/// The demo tenant `up` creates on first start.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DemoConfig {
    pub enabled: bool,
    /// Requests a second (at the day's mean) of the history the demo is
    /// given on its first start, from the start of the previous month to
    /// now; 0: no history.
    pub history_rate: f64,
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            history_rate: 0.1,
        }
    }
}

/// Logs.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A `tracing` filter, e.g. `info` or `info,slaproof_store=debug`.
    pub level: String,
    /// `text` for people, `json` for log pipelines.
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".to_owned(),
            format: LogFormat::Text,
        }
    }
}

/// slaproof's own traces and metrics, for its operators.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP base URL (`http://collector:4318`); `/v1/traces` and
    /// `/v1/metrics` are appended. Unset: nothing is exported, unless the
    /// standard `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Seconds between two metric exports.
    pub export_interval_secs: u64,
    /// The share of traces kept, from 0 to 1 (a parent's decision wins).
    pub sample_ratio: f64,
    /// A second listener for Prometheus (`0.0.0.0:9464`): `/metrics`, this
    /// process's operator metrics, and `/metrics/slo`, every tenant's SLO
    /// series. Unset: neither is served. Keep it off the public network:
    /// the SLO series name every tenant.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// The token Prometheus sends to the metrics listener
    /// (`Authorization: Bearer …`; in prometheus.yml `authorization:
    /// {credentials_file: …}`). Required unless `metrics_listen` is a
    /// loopback address (this machine only).
    pub metrics_token: Option<ConfigSecret>,
    /// A file holding the metrics token instead (compose or Kubernetes
    /// secrets mounted as files); surrounding whitespace is ignored.
    pub metrics_token_file: Option<std::path::PathBuf>,
    /// At most this many objectives of one tenant in `/metrics/slo` (by SLA
    /// and objective name; `slaproof_slo_series_truncated` marks a tenant
    /// with more), so that one tenant cannot make every scrape large.
    pub slo_series_per_tenant: usize,
}

/// A secret from the configuration: never printed (`Debug` says
/// `[redacted]`), compared only to check defaults in tests.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct ConfigSecret(SecretString);

impl ConfigSecret {
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl std::fmt::Debug for ConfigSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl PartialEq for ConfigSecret {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl TelemetryConfig {
    /// The metrics listener's token, read from `metrics_token` or
    /// `metrics_token_file`; `None` when neither is set.
    pub fn metrics_token(&self) -> anyhow::Result<Option<String>> {
        use anyhow::Context;
        match (&self.metrics_token, &self.metrics_token_file) {
            (Some(token), None) => Ok(Some(token.expose().to_owned())),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).with_context(|| {
                    format!("reading telemetry.metrics_token_file {}", path.display())
                })?;
                let token = text.trim();
                anyhow::ensure!(
                    token.len() >= 16,
                    "telemetry.metrics_token_file {}: the token must be at least 16 characters",
                    path.display()
                );
                Ok(Some(token.to_owned()))
            }
            (None, None) => Ok(None),
            (Some(_), Some(_)) => {
                anyhow::bail!(
                    "set telemetry.metrics_token or telemetry.metrics_token_file, not both"
                )
            }
        }
    }
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            service_name: "slaproof".to_owned(),
            export_interval_secs: 60,
            sample_ratio: 1.0,
            metrics_listen: None,
            metrics_token: None,
            metrics_token_file: None,
            slo_series_per_tenant: 1_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration file {0} does not exist")]
    MissingFile(PathBuf),
    #[error("invalid configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    #[error("invalid configuration: {key}: {rule}")]
    Invalid { key: &'static str, rule: String },
    #[error(
        "invalid configuration: the secrets directory {dir} ({}): {reason}",
        secrets_dir::SECRETS_DIR_ENV
    )]
    SecretsDir { dir: PathBuf, reason: String },
}

fn invalid(key: &'static str, rule: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        rule: rule.into(),
    }
}

impl Config {
    /// Loads defaults, then `file` (or `slaproof.toml` when it exists), then
    /// the files of the directory `SLAPROOF_SECRETS_DIR` names (one setting
    /// a file, as Kubernetes mounts a Secret), then the environment, and
    /// validates the result.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let secrets = std::env::var_os(secrets_dir::SECRETS_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        Self::load_with(file, secrets.as_deref())
    }

    /// [`Config::load`] with the secrets directory given.
    pub(crate) fn load_with(
        file: Option<&Path>,
        secrets: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let mut figment = Figment::new();
        match file {
            Some(path) if !path.exists() => return Err(ConfigError::MissingFile(path.to_owned())),
            Some(path) => figment = figment.merge(Toml::file_exact(path)),
            None if Path::new(DEFAULT_CONFIG_FILE).exists() => {
                figment = figment.merge(Toml::file_exact(DEFAULT_CONFIG_FILE));
            }
            None => {}
        }
        if let Some(dir) = secrets {
            figment = secrets_dir::merge(figment, dir)?;
        }
        figment = figment.merge(Env::prefixed("SLAPROOF_").split("__").filter(|key| {
            // Keys keep the case of the environment; sections are lower case.
            let key = key.as_str().to_ascii_lowercase();
            SECTIONS.iter().any(|s| key.starts_with(&format!("{s}.")))
        }));
        Self::from_figment(figment)
    }

    /// Extracts and validates a configuration from any figment, e.g. one
    /// built in a test.
    pub fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        let config: Config = figment.extract().map_err(Box::new)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every rule a loaded configuration must follow.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.database.url {
            parse_url(url).map_err(|e| invalid("database.url", e))?;
        }
        if let Some(url) = &self.database.migrate_url {
            if self.database.url.is_none() {
                return Err(invalid(
                    "database.migrate_url",
                    "is set but database.url is not; set both, or neither for the embedded database",
                ));
            }
            parse_url(url).map_err(|e| invalid("database.migrate_url", e))?;
        }
        if let Some(endpoint) = &self.telemetry.otlp_endpoint {
            match url::Url::parse(endpoint) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => {}
                Ok(url) => {
                    return Err(invalid(
                        "telemetry.otlp_endpoint",
                        format!("must be an http or https URL, got scheme {}", url.scheme()),
                    ));
                }
                Err(e) => {
                    return Err(invalid(
                        "telemetry.otlp_endpoint",
                        format!("is not a URL: {e}"),
                    ));
                }
            }
        }
        if let Some(metrics) = self.telemetry.metrics_listen
            && metrics.port() != 0
            && metrics == self.server.listen
        {
            return Err(invalid(
                "telemetry.metrics_listen",
                format!("is server.listen ({metrics}); the metrics need an address of their own"),
            ));
        }
        if let Some(metrics) = self.telemetry.metrics_listen {
            let t = &self.telemetry;
            if t.metrics_token.is_some() && t.metrics_token_file.is_some() {
                return Err(invalid(
                    "telemetry.metrics_token",
                    "set it or telemetry.metrics_token_file, not both",
                ));
            }
            if let Some(token) = &t.metrics_token
                && token.expose().trim().len() < 16
            {
                return Err(invalid(
                    "telemetry.metrics_token",
                    "must be at least 16 characters",
                ));
            }
            if t.metrics_token.is_none()
                && t.metrics_token_file.is_none()
                && !metrics.ip().is_loopback()
            {
                return Err(invalid(
                    "telemetry.metrics_token",
                    format!(
                        "must be set (or telemetry.metrics_token_file) when telemetry.metrics_listen ({metrics}) is reachable from other machines: /metrics/slo names every tenant's SLAs and customers"
                    ),
                ));
            }
        }
        if !(1..=100_000).contains(&self.telemetry.slo_series_per_tenant) {
            return Err(invalid(
                "telemetry.slo_series_per_tenant",
                format!(
                    "must be between 1 and 100000, got {}",
                    self.telemetry.slo_series_per_tenant
                ),
            ));
        }
        if self.telemetry.service_name.trim().is_empty() {
            return Err(invalid("telemetry.service_name", "must not be empty"));
        }
        if !(1..=3600).contains(&self.telemetry.export_interval_secs) {
            return Err(invalid(
                "telemetry.export_interval_secs",
                format!(
                    "must be between 1 and 3600, got {}",
                    self.telemetry.export_interval_secs
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.telemetry.sample_ratio) {
            return Err(invalid(
                "telemetry.sample_ratio",
                format!(
                    "must be between 0 and 1, got {}",
                    self.telemetry.sample_ratio
                ),
            ));
        }
        if !(1..=1000).contains(&self.database.max_connections) {
            return Err(invalid(
                "database.max_connections",
                format!(
                    "must be between 1 and 1000, got {}",
                    self.database.max_connections
                ),
            ));
        }
        if !(1..=3650).contains(&self.events.retention_days) {
            return Err(invalid(
                "events.retention_days",
                format!(
                    "must be between 1 and 3650, got {}",
                    self.events.retention_days
                ),
            ));
        }
        if !(1..=90).contains(&self.events.partitions_ahead_days) {
            return Err(invalid(
                "events.partitions_ahead_days",
                format!(
                    "must be between 1 and 90, got {}",
                    self.events.partitions_ahead_days
                ),
            ));
        }
        if !(1..=86_400).contains(&self.events.upkeep_interval_secs) {
            return Err(invalid(
                "events.upkeep_interval_secs",
                format!(
                    "must be between 1 and 86400, got {}",
                    self.events.upkeep_interval_secs
                ),
            ));
        }
        self.ingest.validate(self.database.max_connections)?;
        self.evaluator
            .validate()
            .map_err(|e| invalid(e.key, e.rule))?;
        // A tenant's evaluation holds this many pooled connections at once;
        // at the pool's size it would starve every other part of the process.
        if self.evaluator.connections >= self.database.max_connections {
            return Err(invalid(
                "evaluator.connections",
                format!(
                    "must be below database.max_connections ({}), got {}",
                    self.database.max_connections, self.evaluator.connections
                ),
            ));
        }
        self.api.validate().map_err(|e| invalid(e.key, e.rule))?;
        self.probes.validate().map_err(|e| invalid(e.key, e.rule))?;
        self.webhooks
            .validate()
            .map_err(|e| invalid(e.key, e.rule))?;
        self.compensation
            .validate()
            .map_err(|e| invalid(e.key, e.rule))?;
        self.attestation
            .validate()
            .map_err(|e| invalid(e.key, e.rule))?;
        self.chain.validate().map_err(|e| invalid(e.key, e.rule))?;
        self.transparency
            .validate()
            .map_err(|rule| invalid("transparency", rule))?;
        // Five a second is about 15 million requests over two months: more
        // would keep a first start busy for minutes.
        let rate = self.demo.history_rate;
        if !(rate.is_finite() && (0.0..=5.0).contains(&rate)) {
            return Err(invalid(
                "demo.history_rate",
                format!("must be between 0 and 5 requests a second, got {rate}"),
            ));
        }
        if self.server.shutdown_grace_secs > 600 {
            return Err(invalid(
                "server.shutdown_grace_secs",
                format!(
                    "must be at most 600, got {}",
                    self.server.shutdown_grace_secs
                ),
            ));
        }
        if !(1..=300).contains(&self.server.header_read_timeout_secs) {
            return Err(invalid(
                "server.header_read_timeout_secs",
                format!(
                    "must be between 1 and 300, got {}",
                    self.server.header_read_timeout_secs
                ),
            ));
        }
        if !(1..=100_000).contains(&self.server.max_connections) {
            return Err(invalid(
                "server.max_connections",
                format!(
                    "must be between 1 and 100000, got {}",
                    self.server.max_connections
                ),
            ));
        }
        if !(1..=100_000).contains(&self.server.max_connections_per_address) {
            return Err(invalid(
                "server.max_connections_per_address",
                format!(
                    "must be between 1 and 100000, got {}",
                    self.server.max_connections_per_address
                ),
            ));
        }
        if self.embedded.run_as.is_empty() {
            return Err(invalid("embedded.run_as", "must name a system user"));
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.level)
            .map_err(|e| invalid("log.level", format!("is not a valid filter: {e}")))?;
        Ok(())
    }

    /// The services' connection options, when a database is configured.
    pub fn service_connection(&self) -> Option<PgConnectOptions> {
        // Validated in `validate`, so parsing cannot fail here.
        self.database.url.as_ref().and_then(|u| parse_url(u).ok())
    }

    /// The owner's connection options for migrations, when a database is
    /// configured.
    pub fn owner_connection(&self) -> Option<PgConnectOptions> {
        self.database
            .migrate_url
            .as_ref()
            .or(self.database.url.as_ref())
            .and_then(|u| parse_url(u).ok())
    }
}

/// Parses a Postgres URL without ever echoing it (it may hold a password).
fn parse_url(url: &SecretString) -> Result<PgConnectOptions, String> {
    let text = url.expose_secret();
    if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
        return Err("must be a postgres:// URL".to_owned());
    }
    PgConnectOptions::from_str(text).map_err(|_| "is not a valid postgres:// URL".to_owned())
}

/// `user@host:port/database` of a connection: enough to tell where it goes,
/// never the password.
pub(crate) fn describe(options: &PgConnectOptions) -> String {
    format!(
        "{}@{}:{}/{}",
        options.get_username(),
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("-")
    )
}

#[cfg(test)]
mod tests;
