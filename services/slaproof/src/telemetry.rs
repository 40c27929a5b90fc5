//! Logging and slaproof's own telemetry: one subscriber per process, text
//! for people, JSON for pipelines; when `telemetry.otlp_endpoint` is set,
//! the same spans and the operators' metrics exported over OTLP/HTTP; when
//! `telemetry.metrics_listen` is set, the metrics kept for Prometheus to
//! scrape (`crate::metrics` serves them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use opentelemetry::metrics::Histogram;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, global};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::config::{LogConfig, LogFormat, TelemetryConfig};

/// The standard variable, honoured when `telemetry.otlp_endpoint` is unset.
const OTEL_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Whether this process exports; without it no middleware is added.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// What must outlive the process's work to flush its telemetry. Inert when
/// nothing is exported.
#[must_use = "call shutdown() when the work is done, or the last spans and metrics are lost"]
#[derive(Debug)]
pub(crate) struct Telemetry {
    otlp: Option<Otlp>,
    meter_provider: Option<SdkMeterProvider>,
}

#[derive(Debug)]
struct Otlp {
    tracer_provider: SdkTracerProvider,
    /// Runs the exporters' HTTP requests: the SDK exports from threads of
    /// its own, outside the application's runtime, and still exports after
    /// that runtime is gone (the final flush).
    runtime: tokio::runtime::Runtime,
}

/// The registry `/metrics` encodes: the process's instruments, through the
/// OpenTelemetry Prometheus exporter. Set once, when the process keeps
/// metrics for scraping.
static PROMETHEUS: OnceLock<prometheus::Registry> = OnceLock::new();

/// The process's metrics for Prometheus, when `telemetry.metrics_listen`
/// is set.
pub(crate) fn prometheus_registry() -> Option<&'static prometheus::Registry> {
    PROMETHEUS.get()
}

impl Telemetry {
    /// Exports what is left: the spans still batched and a last metrics
    /// reading. Call after the application's graceful stop, outside any
    /// async runtime (it waits on the export threads).
    pub(crate) fn shutdown(self) {
        if let Some(otlp) = &self.otlp
            && let Err(err) = otlp.tracer_provider.shutdown()
        {
            tracing::warn!(error = %err, "flushing spans failed");
        }
        if let Some(meter_provider) = self.meter_provider
            && let Err(err) = meter_provider.shutdown()
        {
            tracing::warn!(error = %err, "flushing metrics failed");
        }
        if let Some(otlp) = self.otlp {
            otlp.runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// Whether spans and metrics are exported by this process.
pub(crate) fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Installs the global subscriber and, when an OTLP endpoint is configured,
/// the trace and metric exporters. `RUST_LOG`, when set, wins over the
/// configured level, for logs and exported spans alike. Logs go to stderr;
/// stdout is for what a command prints. Call outside any async runtime.
pub(crate) fn init(log: &LogConfig, telemetry: &TelemetryConfig) -> anyhow::Result<Telemetry> {
    // sqlx reports Postgres NOTICEs ("relation already exists, skipping")
    // at info; they are noise unless asked for.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("sqlx::postgres::notice=warn,{}", log.level)));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match log.format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    let endpoint = telemetry.otlp_endpoint.clone().or_else(|| {
        std::env::var(OTEL_ENDPOINT_VAR)
            .ok()
            .filter(|v| !v.trim().is_empty())
    });
    let resource = Resource::builder()
        .with_service_name(telemetry.service_name.clone())
        .build();
    let mut meters = SdkMeterProvider::builder().with_resource(resource.clone());
    let otlp = match endpoint {
        Some(endpoint) => {
            let (otlp, reader) = exporters(&endpoint, telemetry, resource)?;
            meters = meters.with_reader(reader);
            Some(otlp)
        }
        None => None,
    };
    let registry = match telemetry.metrics_listen {
        Some(_) => {
            let registry = prometheus::Registry::new();
            let exporter = opentelemetry_prometheus::exporter()
                .with_registry(registry.clone())
                .build()
                .context("building the Prometheus exporter")?;
            meters = meters.with_reader(exporter);
            Some(registry)
        }
        None => None,
    };
    // A meter provider only when something reads it.
    let meter_provider = (otlp.is_some() || registry.is_some()).then(|| meters.build());
    let otel = otlp
        .as_ref()
        .map(|e| tracing_opentelemetry::layer().with_tracer(e.tracer_provider.tracer("slaproof")));
    // A second init (tests) is harmless, hence try_init.
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .try_init()
        .is_ok();
    if let Some(meter_provider) = &meter_provider
        && installed
    {
        global::set_meter_provider(meter_provider.clone());
        if let Some(registry) = registry {
            // Only the first init's registry holds the instruments.
            let _ = PROMETHEUS.set(registry);
        }
        EXPORTING.store(true, Ordering::Relaxed);
    }
    Ok(Telemetry {
        otlp,
        meter_provider,
    })
}

/// The OTLP/HTTP (protobuf) exporters of spans and metrics at `endpoint`:
/// the tracer provider, and the reader for the meter provider.
fn exporters(
    endpoint: &str,
    config: &TelemetryConfig,
    resource: Resource,
) -> anyhow::Result<(Otlp, PeriodicReader<opentelemetry_otlp::MetricExporter>)> {
    let base = endpoint.trim_end_matches('/');
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("otlp-export")
        .enable_all()
        .build()
        .context("starting the telemetry export thread")?;
    let client = ExportClient {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .context("building the telemetry HTTP client")?,
        runtime: runtime.handle().clone(),
    };
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client.clone())
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/traces"))
        .build()
        .with_context(|| format!("telemetry.otlp_endpoint {endpoint}: the span exporter"))?;
    let tracer_provider = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            config.sample_ratio,
        ))))
        .with_resource(resource)
        .build();

    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/metrics"))
        .build()
        .with_context(|| format!("telemetry.otlp_endpoint {endpoint}: the metric exporter"))?;
    let reader = PeriodicReader::builder(metrics)
        .with_interval(Duration::from_secs(config.export_interval_secs))
        .build();
    Ok((
        Otlp {
            tracer_provider,
            runtime,
        },
        reader,
    ))
}

/// The exporters' HTTP client: the tree's reqwest (opentelemetry-otlp's own
/// reqwest feature is another major version), its requests run on the
/// export runtime because the SDK calls from plain threads.
#[derive(Debug, Clone)]
struct ExportClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, headers, body))
        });
        let (status, headers, body) = sent.await??;
        let mut response = http::Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

/// `http.server.request.duration`, the OpenTelemetry HTTP semantic
/// convention, made on first use (after `init`).
static REQUEST_DURATION: LazyLock<Histogram<f64>> = LazyLock::new(|| {
    global::meter("slaproof")
        .f64_histogram("http.server.request.duration")
        .with_unit("s")
        .with_description("Duration of HTTP server requests")
        .build()
});

/// The method as a metric label: one of the nine HTTP methods, else
/// `_OTHER` (OpenTelemetry's semantic conventions): a client choosing its
/// own method names must not add a series for each.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    }
}

/// Records every request's duration by method, route template and status.
/// Added to the router only when exporting.
pub(crate) async fn http_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    // The template (`/v1/slas/{sla}`), never the path: bounded cardinality.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned());
    let response = next.run(request).await;
    let mut attributes = vec![
        KeyValue::new("http.request.method", method),
        KeyValue::new(
            "http.response.status_code",
            i64::from(response.status().as_u16()),
        ),
    ];
    if let Some(route) = route {
        attributes.push(KeyValue::new("http.route", route));
    }
    REQUEST_DURATION.record(started.elapsed().as_secs_f64(), &attributes);
    response
}

#[cfg(test)]
mod method_tests {
    use super::method_label;
    use axum::http::Method;

    #[test]
    fn only_known_methods_become_labels() {
        // Found in review: arbitrary method names became metric labels.
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        for made_up in ["FOO", "X1234567890", "get"] {
            let method = Method::from_bytes(made_up.as_bytes()).unwrap();
            assert_eq!(method_label(&method), "_OTHER", "{made_up}");
        }
    }
}
