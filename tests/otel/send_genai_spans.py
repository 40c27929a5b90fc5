"""Sends GenAI spans to slaproof with the official OpenTelemetry SDK.

The endpoint, headers and compression come from the standard OTEL_*
environment variables; the test sets them. Exits non-zero when the export
was not accepted.
"""

import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult


class CheckedExporter(OTLPSpanExporter):
    """Remembers whether every export succeeded."""

    failed = False

    def export(self, spans):
        result = super().export(spans)
        if result != SpanExportResult.SUCCESS:
            CheckedExporter.failed = True
        return result


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    # The resource names the customer its spans served unless a span says
    # otherwise (a gateway serving many customers sets it per request).
    provider = TracerProvider(
        resource=Resource.create({"service.name": "py-gateway", "slaproof.customer": "globex"})
    )
    provider.add_span_processor(SimpleSpanProcessor(CheckedExporter()))
    tracer = provider.get_tracer("slaproof-test")
    for i in range(count):
        with tracer.start_as_current_span("chat llama-3.1-8b", kind=trace.SpanKind.SERVER) as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.request.model", "llama-3.1-8b")
            span.set_attribute("gen_ai.response.id", f"py-{i}")
            span.set_attribute("gen_ai.usage.input_tokens", 100 + i)
            span.set_attribute("gen_ai.usage.output_tokens", 10 + i)
            span.set_attribute("gen_ai.server.time_to_first_token", 0.05)
            span.set_attribute("gen_ai.request.stream", True)
            span.set_attribute("http.response.status_code", 200)
            if i % 2 == 0:
                span.set_attribute("slaproof.customer", "acme-corp")
            # Not a GenAI span: accepted, not stored.
            with tracer.start_as_current_span("db.query"):
                pass
    provider.shutdown()
    return 1 if CheckedExporter.failed else 0


if __name__ == "__main__":
    sys.exit(main())
