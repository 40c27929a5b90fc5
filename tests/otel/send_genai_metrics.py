"""Sends GenAI histogram metrics to slaproof with the official OpenTelemetry SDK.

The endpoint, headers and compression come from the standard OTEL_*
environment variables; the test sets them. Records time to first token for
`count` requests into a histogram with the GenAI conventions' advisory
bucket boundaries, and one non-GenAI counter (refused by slaproof as a
partial success, which is still a successful export). Exits non-zero when an
export was not accepted.
"""

import sys

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

# The advisory boundaries of gen_ai.server.time_to_first_token, in seconds.
TTFT_BOUNDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]


class CheckedExporter(OTLPMetricExporter):
    """Remembers whether every export succeeded."""

    failed = False

    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        if result != MetricExportResult.SUCCESS:
            CheckedExporter.failed = True
        return result


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    reader = PeriodicExportingMetricReader(CheckedExporter(), export_interval_millis=3_600_000)
    provider = MeterProvider(
        resource=Resource.create({"service.name": "py-gateway"}), metric_readers=[reader]
    )
    meter = provider.get_meter("slaproof-test")
    ttft = meter.create_histogram(
        "gen_ai.server.time_to_first_token",
        unit="s",
        explicit_bucket_boundaries_advisory=TTFT_BOUNDS,
    )
    other = meter.create_counter("http.server.active_requests")
    for i in range(count):
        # 0.03, 0.05, 0.07, ...: one value in each of several buckets.
        ttft.record(0.03 + 0.02 * i, {"gen_ai.request.model": "llama-3.1-8b", "gen_ai.operation.name": "chat"})
        other.add(1)
    provider.shutdown()
    return 1 if CheckedExporter.failed else 0


if __name__ == "__main__":
    sys.exit(main())
