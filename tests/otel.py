"""An OpenTelemetry SDK for the telemetry tests: spans to an in-memory exporter, metrics to an in-memory reader.

The global tracer and meter providers can be set once per process; the first test that asks sets them, later ones
clear what the earlier ones recorded. reme-es' own tracer and meter are proxies that follow the global providers.
"""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_state: dict = {}


def sdk() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    """The exporter and the reader of the process's SDK (set up on the first call), spans cleared."""
    if not _state:
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _state.update(exporter=exporter, reader=reader)
    _state["exporter"].clear()
    return _state["exporter"], _state["reader"]


def points(reader: InMemoryMetricReader, name: str) -> list:
    """The data points of metric `name` as read now (cumulative since the process started)."""
    data = reader.get_metrics_data()
    found = []
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == name:
                    found += list(m.data.data_points)
    return found


def tree(spans: list[ReadableSpan]) -> list[tuple[int, str]]:
    """(depth, name) of every span, parents before children, siblings by start time."""
    by_parent: dict = {}
    ids = {s.context.span_id for s in spans}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)
    out: list[tuple[int, str]] = []

    def walk(parent, depth: int) -> None:
        for s in by_parent.get(parent, []):
            out.append((depth, s.name))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return out
