"""Traces and metrics of reme-es through OpenTelemetry's API, and the same metrics as Prometheus text.

Spans (docs/operations.md draws one search's tree):
- one span per memory operation, after OpenTelemetry's GenAI memory conventions: named by `gen_ai.operation.name`
  (`search_memory`, `update_memory`, `delete_memory`, `create_memory_store`, `delete_memory_store`), with
  `gen_ai.memory.store.id` = `<index set>/<workspace>` (Memorie: `<prefix>/<tenant>`), `gen_ai.provider.name`
  `reme-es`, `gen_ai.memory.record.count`; the query text (`gen_ai.memory.query.text`) only when
  `REME_ES_TRACE_QUERY_TEXT=1` opts in. The outermost operation makes the span: a ReMe search that runs the store's
  `ranked` and `shown` is one `search_memory`, not three;
- under it, one span per try of an engine request, after the database conventions (`reme_es.adapters.traced`);
- events on the operation's span for the ranking stages (`ranking`: candidates per branch, fused count, fusion;
  `knn_width`: the width used and whether calibrated) and for partial answers (`partial_answer`: shards failed).

Metrics (every instrument is in `INSTRUMENTS`): `db.client.operation.duration` and
`gen_ai.client.operation.duration` histograms in seconds, and counters of requests, retries, partial answers,
refusals by cause, write rounds, refreshes and calibrations (with a histogram of their recall). They go to the OTel
meter provider the application configured, and, once `reme_es.core.prometheus.enable()` has run, to a Prometheus
registry too (`reme-es metrics`, or `/metrics` of an app that mounts `prometheus.asgi_app()`).

With no SDK configured the API hands out non-recording spans and no-op instruments: the cost is a few function
calls per operation (bench/perf/tracing_overhead.py measures it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import INVALID_SPAN, ProxyTracerProvider, Span, SpanKind, StatusCode

from . import errors

TRACER = trace.get_tracer("reme_es")
METER = metrics.get_meter("reme_es")
PROVIDER = "reme-es"  # gen_ai.provider.name of every memory operation
QUERY_TEXT_ENV = "REME_ES_TRACE_QUERY_TEXT"  # "1" or "true": put the query text on search spans (it may hold PII)
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# name -> (kind, unit, description, attributes it carries: also the Prometheus labels, dots as underscores)
INSTRUMENTS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "db.client.operation.duration": (
        "histogram",
        "s",
        "Duration of one try of an engine request",
        ("db.system.name", "db.operation.name", "db.collection.name", "error.type"),
    ),
    "gen_ai.client.operation.duration": (
        "histogram",
        "s",
        "Duration of one memory operation",
        ("gen_ai.operation.name", "error.type"),
    ),
    "reme_es.requests": (
        "counter",
        "{request}",
        "Tries of engine requests",
        ("db.system.name", "db.operation.name", "error.type"),
    ),
    "reme_es.retries": ("counter", "{retry}", "Tries sent again under the retry policy", ("db.operation.name",)),
    "reme_es.partial_answers": (
        "counter",
        "{answer}",
        "Searches only some shards answered",
        ("db.collection.name",),
    ),
    "reme_es.refusals": (
        "counter",
        "{refusal}",
        "Memory operations reme-es refused, by cause",
        ("gen_ai.operation.name", "reme_es.cause"),
    ),
    "reme_es.write.rounds": ("counter", "{round}", "Rounds of the write protocol", ("reme_es.round",)),
    "reme_es.refreshes": ("counter", "{refresh}", "Refreshes of an index set's indices", ()),
    "reme_es.calibrations": ("counter", "{calibration}", "Measurements of the k-NN width", ("reme_es.reached",)),
    "reme_es.calibration.recall": ("histogram", "1", "Recall@10 each measurement of the k-NN width reached", ()),
}
RECALL_BUCKETS = (0.5, 0.8, 0.9, 0.95, 0.97, 0.99, 1.0)

_otel: dict[str, Any] = {}
for _name, (_kind, _unit, _text, _) in INSTRUMENTS.items():
    if _kind == "counter":
        _otel[_name] = METER.create_counter(_name, unit=_unit, description=_text)
    else:
        buckets = RECALL_BUCKETS if _unit == "1" else DURATION_BUCKETS
        _otel[_name] = METER.create_histogram(
            _name, unit=_unit, description=_text, explicit_bucket_boundaries_advisory=list(buckets)
        )

# The Prometheus mirror (`reme_es.core.prometheus`): None until enabled, then name -> prometheus_client metric.
_prometheus: dict[str, Any] | None = None
_tracing = False  # a tracer provider was found (`tracing`)
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ  # the API makes that provider on its first use
# Whether a memory operation's span is open in this context (the outermost one makes the span).
_operation: ContextVar[Span | None] = ContextVar("reme_es_operation", default=None)


def record(name: str, value: float, attributes: dict[str, Any] | None = None) -> None:
    """Add `value` to counter `name`, or record it in histogram `name` (`INSTRUMENTS`)."""
    attributes = attributes or {}
    instrument = _otel[name]
    if INSTRUMENTS[name][0] == "counter":
        instrument.add(value, attributes)
    else:
        instrument.record(value, attributes)
    if _prometheus is not None:
        metric = _prometheus[name]
        labels = [str(attributes.get(key, "")) for key in INSTRUMENTS[name][3]]
        child = metric.labels(*labels) if labels else metric
        child.inc(value) if INSTRUMENTS[name][0] == "counter" else child.observe(value)


def tracing() -> bool:
    """Whether a tracer provider is configured (an SDK): with none, reme-es makes no span at all, not even the API's
    non-recording ones (bench/perf/tracing_overhead.py). Once one is, it stays (the API sets a provider once)."""
    if _tracing:
        return True
    # the API's own record of the provider: read without `get_tracer_provider`, which looks at the environment on
    # every call while none is set
    if getattr(trace, "_TRACER_PROVIDER", None) is None and not _PROVIDER_FROM_ENV:
        return False
    return _set_tracing(not isinstance(trace.get_tracer_provider(), ProxyTracerProvider))


def _set_tracing(on: bool) -> bool:
    global _tracing
    _tracing = on
    return on


def query_text_opted_in() -> bool:
    """Whether search spans carry the query text (`REME_ES_TRACE_QUERY_TEXT`)."""
    return os.environ.get(QUERY_TEXT_ENV, "").lower() in ("1", "true", "yes")


def error_type(exc: BaseException) -> str:
    """`error.type` of an exception: the HTTP status of a rejected request, else the class name."""
    status = getattr(exc, "status", None)
    return str(status) if isinstance(status, int) else type(exc).__name__


def refusal(exc: BaseException) -> bool:
    """Whether an error is reme-es refusing an operation (a rule it keeps), not the cluster failing it."""
    if isinstance(exc, errors.ClusterChanged | errors.IndexMissing):
        return True
    failures = errors.ConnectionFailed | errors.RequestFailed | errors.ServerError | errors.BulkError
    return isinstance(exc, errors.ReMeESError) and not isinstance(exc, failures)


@contextmanager
def memory_operation(
    operation: str, store_id: str, query: str | None = None, records: int | None = None
) -> Iterator[Span]:
    """The span of one memory operation (module docstring), its duration and refusals recorded; inside another
    operation's span, that span (no new one, nothing recorded twice)."""
    outer = _operation.get()
    if outer is not None:
        yield outer
        return
    started, failed = time.perf_counter(), None
    with _span(operation, store_id, query, records) as span:
        token = _operation.set(span)
        try:
            yield span
        except BaseException as exc:
            failed = type(exc).__name__  # the error's class (an engine request's span says its HTTP status)
            if span.is_recording():
                span.set_attribute("error.type", failed)
                span.set_status(StatusCode.ERROR, failed)
            if refusal(exc):
                record("reme_es.refusals", 1, {"gen_ai.operation.name": operation, "reme_es.cause": failed})
            raise
        finally:
            _operation.reset(token)
            done = {"gen_ai.operation.name": operation, **({"error.type": failed} if failed else {})}
            record("gen_ai.client.operation.duration", time.perf_counter() - started, done)


@contextmanager
def _span(operation: str, store_id: str, query: str | None, records: int | None) -> Iterator[Span]:
    """The operation's span, current inside; with no tracer provider, a non-recording stand-in (no span made)."""
    if not tracing():
        yield INVALID_SPAN
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.memory.store.id": store_id,
    }
    if records is not None:
        attributes["gen_ai.memory.record.count"] = records
    if query is not None and query_text_opted_in():
        attributes["gen_ai.memory.query.text"] = query
    with TRACER.start_as_current_span(
        operation, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        yield span


def stage(name: str, attributes: dict[str, Any]) -> None:
    """An event on the current memory operation's span (ranking stages, the k-NN width, a partial answer)."""
    span = _operation.get()
    if span is not None and span.is_recording():
        span.add_event(name, attributes)
