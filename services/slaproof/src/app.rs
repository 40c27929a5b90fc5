//! The application: the HTTP listener every service exposes and the
//! services a process runs, started side by side and stopped by one
//! cancellation token.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use slaproof_app::webhooks::WebhookKey;
use slaproof_ingest::probe::ProbeRunner;
use slaproof_store::Database;
use sqlx::postgres::PgConnectOptions;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_http::trace::TraceLayer;

use crate::config::{Config, describe};
use crate::listener::{ConnectionLimits, serve};
use crate::{health, housekeeping, metrics, telemetry};

/// A service one process can run. `slaproof up` runs all of them;
/// `slaproof serve <service>` runs one. Later services (ingest, evaluator,
/// …) join this list as their crates land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Service {
    /// Creates event partitions ahead of time and drops them after retention.
    Housekeeping,
    /// Takes providers' telemetry: `POST /v1/events`.
    Ingest,
    /// Rolls events up and evaluates every tenant's SLAs: budgets, burn
    /// rates, alerts.
    Evaluator,
    /// Measures providers' endpoints on each synthetic probe's schedule and
    /// stores the results as events with source `probe`.
    Probes,
    /// Delivers the outbox's facts to tenants' webhook endpoints, signed
    /// per Standard Webhooks, at least once.
    Webhooks,
    /// Turns closed periods into service credits in the ledger.
    Compensation,
    /// Proves each frozen period result (Groth16) and anchors the proof on
    /// the configured chain (or `up`'s anvil).
    Attestation,
    /// The provider and customer API: `/v1/customers`, `/v1/slas`, …
    Api,
}

impl Service {
    /// Every service, in start order.
    pub const ALL: &'static [Service] = &[
        Service::Housekeeping,
        Service::Ingest,
        Service::Evaluator,
        Service::Probes,
        Service::Compensation,
        Service::Attestation,
        Service::Webhooks,
        Service::Api,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Service::Housekeeping => "housekeeping",
            Service::Ingest => "ingest",
            Service::Evaluator => "evaluator",
            Service::Probes => "probes",
            Service::Webhooks => "webhooks",
            Service::Compensation => "compensation",
            Service::Attestation => "attestation",
            Service::Api => "api",
        }
    }
}

/// Migrates (when asked to) as the owner, then connects as the service role
/// and refuses a role that row-level security would not bind.
#[tracing::instrument(skip_all, fields(service = %describe(service)))]
pub async fn open_database(
    config: &Config,
    owner: &PgConnectOptions,
    service: &PgConnectOptions,
    migrate: bool,
) -> anyhow::Result<Database> {
    if migrate {
        slaproof_store::migrate(owner)
            .await
            .with_context(|| format!("migrating {}", describe(owner)))?;
    }
    let service = service
        .clone()
        .statement_cache_capacity(config.database.statement_cache_capacity);
    let db = Database::connect(&service, config.database.max_connections)
        .await
        .with_context(|| format!("connecting to {}", describe(&service)))?;
    db.check_service_role().await?;
    Ok(db)
}

/// A built application, bound to its port but not yet serving.
#[derive(Debug)]
pub struct Application {
    listener: TcpListener,
    router: Router,
    db: Database,
    config: Config,
    services: Vec<Service>,
    probes: Option<Arc<ProbeRunner>>,
    /// The key webhook secrets are sealed under, when this process
    /// delivers webhooks.
    webhook_key: Option<WebhookKey>,
    /// The Prometheus listener (`telemetry.metrics_listen`) and its routes.
    metrics: Option<(TcpListener, Router)>,
}

impl Application {
    /// Binds the listener (port 0 picks a free port) and assembles the
    /// routes of the chosen services.
    pub async fn build(config: Config, db: Database, services: &[Service]) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(config.server.listen)
            .await
            .with_context(|| {
                format!(
                    "listening on {} (set server.listen, or SLAPROOF_SERVER__LISTEN, to another address)",
                    config.server.listen
                )
            })?;
        let mut router = health::router(db.clone());
        if services.contains(&Service::Ingest) {
            router = router.merge(slaproof_ingest::router(
                db.clone(),
                config.ingest.settings(&config.events),
            ));
        }
        if services.contains(&Service::Api) {
            let app = slaproof_app::App::with_default_policy(db.clone())
                .await
                .context("loading the authorization policy")?
                .with_outbound(config.outbound.clone())
                .with_late_grace(config.evaluator.grace());
            let app = with_configured_webhook_key(app, &config)?;
            let mut api = config.api.clone();
            if api.embed_secret.is_none() {
                // Shared through the database, so replicas accept each
                // other's embed tokens.
                api.embed_secret = Some(
                    app.shared_embed_secret()
                        .await
                        .context("reading the shared embed-token key")?
                        .into(),
                );
            }
            router = router.merge(slaproof_api::router(app, &api).context("building the API")?);
        }
        if telemetry::exporting() {
            // Under TraceLayer: the route is matched by then (`MatchedPath`).
            router = router.layer(axum::middleware::from_fn(telemetry::http_metrics));
        }
        // Spans name the path, never the query: an embed page's address
        // carries its token.
        let router = router.layer(TraceLayer::new_for_http().make_span_with(
            |request: &axum::http::Request<axum::body::Body>| {
                tracing::debug_span!("request", method = %request.method(), path = %request.uri().path())
            },
        ));
        let probes = if services.contains(&Service::Probes) {
            // The key probe header values are sealed under: the webhook key.
            let app = slaproof_app::App::with_default_policy(db.clone())
                .await
                .context("loading the authorization policy")?;
            let key = with_configured_webhook_key(app, &config)?
                .webhook_key()
                .await
                .context("reading the key probe headers are sealed under")?;
            Some(Arc::new(
                ProbeRunner::new(db.clone(), config.probes.clone(), config.outbound.clone())
                    .context("building the probe runner")?
                    .with_key(key),
            ))
        } else {
            None
        };
        let webhook_key = if services.contains(&Service::Webhooks) {
            let app = slaproof_app::App::with_default_policy(db.clone())
                .await
                .context("loading the authorization policy")?;
            let app = with_configured_webhook_key(app, &config)?;
            Some(
                app.webhook_key()
                    .await
                    .context("reading the webhook secret key")?,
            )
        } else {
            None
        };
        let metrics = match config.telemetry.metrics_listen {
            Some(address) => {
                let listener = TcpListener::bind(address).await.with_context(|| {
                    format!(
                        "listening for Prometheus on {address} (set telemetry.metrics_listen, or SLAPROOF_TELEMETRY__METRICS_LISTEN, to another address)"
                    )
                })?;
                let app = slaproof_app::App::with_default_policy(db.clone())
                    .await
                    .context("loading the authorization policy")?;
                let token_digest = config.telemetry.metrics_token()?.map(|token| {
                    use sha2::{Digest, Sha256};
                    <[u8; 32]>::from(Sha256::digest(token.as_bytes()))
                });
                Some((
                    listener,
                    metrics::router(metrics::MetricsState {
                        app,
                        token_digest,
                        per_tenant: config.telemetry.slo_series_per_tenant,
                    }),
                ))
            }
            None => None,
        };
        Ok(Self {
            listener,
            router,
            db,
            config,
            services: services.to_vec(),
            probes,
            webhook_key,
            metrics,
        })
    }

    /// Where the application listens.
    pub fn local_addr(&self) -> SocketAddr {
        // A bound listener always has an address.
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Where Prometheus scrapes, when `telemetry.metrics_listen` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
            .as_ref()
            .and_then(|(listener, _)| listener.local_addr().ok())
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Serves until `shutdown` is cancelled, then lets in-flight requests
    /// and workers finish within the configured grace period.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let grace = Duration::from_secs(self.config.server.shutdown_grace_secs);
        let mut workers = JoinSet::new();
        for service in &self.services {
            tracing::info!(service = service.name(), "starting");
            match service {
                Service::Housekeeping => {
                    workers.spawn(housekeeping::run(
                        self.db.clone(),
                        self.config.events.clone(),
                        self.config.evaluator.evaluations_full_days,
                        self.config.webhooks.attempts_retention_days,
                        shutdown.clone(),
                    ));
                    let app = slaproof_app::App::with_default_policy(self.db.clone())
                        .await
                        .context("loading the authorization policy")?;
                    workers.spawn(crate::transparency::run(
                        app,
                        self.config.transparency.clone(),
                        shutdown.clone(),
                    ));
                }
                // Serves requests only: its routes are in the router.
                Service::Ingest | Service::Api => {}
                Service::Probes => {
                    if let Some(runner) = &self.probes {
                        workers.spawn(runner.clone().run(shutdown.clone()));
                    }
                }
                Service::Webhooks => {
                    if let Some(key) = &self.webhook_key {
                        let worker = format!(
                            "webhooks-{}-{:08x}",
                            std::process::id(),
                            rand::random::<u32>()
                        );
                        workers.spawn(slaproof_webhooks::run(
                            self.db.clone(),
                            self.config.webhooks.clone(),
                            key.clone(),
                            self.config.outbound.clone(),
                            worker,
                            shutdown.clone(),
                        ));
                    }
                }
                Service::Compensation => {
                    let worker = format!(
                        "compensation-{}-{:08x}",
                        std::process::id(),
                        rand::random::<u32>()
                    );
                    workers.spawn(slaproof_compensation::run(
                        self.db.clone(),
                        self.config.compensation.clone(),
                        worker,
                        shutdown.clone(),
                    ));
                }
                Service::Attestation => {
                    workers.spawn(crate::chain::run_attestation(
                        self.config.clone(),
                        self.db.clone(),
                        shutdown.clone(),
                    ));
                }
                Service::Evaluator => {
                    // Names this process's job leases in the jobs table.
                    let worker = format!(
                        "evaluator-{}-{:08x}",
                        std::process::id(),
                        rand::random::<u32>()
                    );
                    workers.spawn(slaproof_evaluator::run(
                        self.db.clone(),
                        self.config.evaluator.clone(),
                        worker,
                        shutdown.clone(),
                    ));
                }
            }
        }
        tracing::info!(address = %self.local_addr(), "listening");
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(self.config.server.header_read_timeout_secs),
            max_connections: self.config.server.max_connections,
            max_per_address: self.config.server.max_connections_per_address,
        };
        if let Some((listener, router)) = self.metrics {
            if let Ok(address) = listener.local_addr() {
                tracing::info!(%address, "serving Prometheus metrics at /metrics and /metrics/slo");
            }
            let shutdown = shutdown.clone();
            workers.spawn(async move {
                if let Err(err) = serve(listener, router, limits, shutdown).await {
                    tracing::error!(error = %err, "the metrics listener stopped");
                }
            });
        }
        let server = serve(self.listener, self.router, limits, shutdown.clone());
        let deadline = async {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            result = server => result.context("serving HTTP")?,
            () = deadline => tracing::warn!(grace_secs = grace.as_secs(), "requests still running after the grace period; closing"),
        }
        let drain = async { while workers.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drain).await.is_err() {
            tracing::warn!("workers still running after the grace period; aborting them");
        }
        self.db.close().await;
        Ok(())
    }
}

/// `app` with the operator's webhook key (`webhooks.secret_key`), when set.
pub(crate) fn with_configured_webhook_key(
    app: slaproof_app::App,
    config: &Config,
) -> anyhow::Result<slaproof_app::App> {
    Ok(match config.webhooks.key()? {
        Some(key) => app.with_webhook_key(key),
        None => app,
    })
}

/// Cancels `token` on Ctrl-C or SIGTERM.
pub fn cancel_on_signals(token: CancellationToken) {
    tokio::spawn(async move {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(err) => {
                    tracing::error!(error = %err, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; shutting down"),
            () = terminate => tracing::info!("terminated; shutting down"),
        }
        token.cancel();
    });
}
