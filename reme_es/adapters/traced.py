"""One span and one duration per try of an engine request, after OpenTelemetry's database conventions.

Each try of `Transport.request` (and each round of `Transport.bulk`) is a CLIENT span named
`<db.operation.name> <db.collection.name>` (`search reme-chunks`, `msearch`, `bulk`) with `db.system.name`
(`opensearch` or `elasticsearch`), `db.operation.name` (the endpoint, from the REST path: `search`, `msearch`, `bulk`,
`index`, `get`, `indices.refresh`, `cluster.health`, ...), `db.collection.name` (the index or alias, when one is
named), `server.address` and `server.port`, and on a failed try `db.response.status_code` and `error.type` (the HTTP
status, or the error's class for a connection that failed). A try that is sent again counts in `reme_es.retries`.
The request body and query text are never put on these spans.

elasticsearch-py 9 makes spans of its own when opentelemetry-api is installed; reme-es turns them off for its own
client (`ElasticsearchTransport`): sent through `perform_request` with a path, they would be named by the HTTP method
alone (`POST`) with neither the operation nor the index, one more span under each of these. opensearch-py makes none.
"""

from __future__ import annotations

import functools
import time
import urllib.parse
from typing import Any

from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, StatusCode

from ..core import telemetry
from ..core.telemetry import TRACER, error_type

_BY_METHOD = {"GET": "indices.get", "HEAD": "indices.exists", "PUT": "indices.create", "DELETE": "indices.delete"}
_DOC = {"GET": "get", "HEAD": "exists", "PUT": "index", "POST": "index", "DELETE": "delete"}


@functools.lru_cache(maxsize=4096)  # a store sends the same few paths again and again
def operation_of(method: str, path: str) -> tuple[str, str | None]:
    """(`db.operation.name`, `db.collection.name` or None) of a request, from its method and REST path."""
    parts = [urllib.parse.unquote(p) for p in path.split("?", 1)[0].split("/") if p]
    at = next((i for i, p in enumerate(parts) if p.startswith("_")), None)
    collection = parts[0] if parts and at != 0 else None
    if at is None:
        return _BY_METHOD.get(method, method.lower()), collection
    endpoint = parts[at][1:]
    if endpoint in ("doc", "create"):
        return (_DOC.get(method, "index") if endpoint == "doc" else "create"), collection
    if endpoint in ("search", "msearch", "bulk", "count", "mget", "update", "delete_by_query", "update_by_query"):
        return endpoint, collection
    if collection is not None:  # /<index>/_refresh, /<index>/_mapping, /<index>/_settings ...
        return f"indices.{endpoint}", collection
    tail = [p for p in parts[at + 1 :] if not p.startswith("_")][:1]  # /_cluster/health, /_cat/shards, /_snapshot/r
    return ".".join([endpoint, *tail]) if endpoint in ("cluster", "cat", "nodes") else endpoint, None


class EngineRequest:
    """One try of one request: its span (a child of the current one) and its start, ended by `end`."""

    __slots__ = ("attributes", "span", "started")

    def __init__(self, system: str, method: str, path: str, server: tuple[str, int | None]):
        operation, collection = operation_of(method, path)
        self.attributes: dict[str, Any] = {"db.system.name": system, "db.operation.name": operation}
        if collection is not None:
            self.attributes["db.collection.name"] = collection
        self.span: Span = INVALID_SPAN  # no tracer provider: no span (`telemetry.tracing`)
        if telemetry.tracing():
            name = f"{operation} {collection}" if collection else operation
            span_attributes = {**self.attributes, "server.address": server[0]}
            if server[1] is not None:
                span_attributes["server.port"] = server[1]
            self.span = TRACER.start_span(name, kind=SpanKind.CLIENT, attributes=span_attributes)
        self.started = time.perf_counter()

    def retried(self) -> None:
        """The try failed and is sent again."""
        telemetry.record("reme_es.retries", 1, {"db.operation.name": self.attributes["db.operation.name"]})

    def end(self, error: BaseException | None = None) -> None:
        """End the try: its duration and count recorded, a failure (`error`) on the span."""
        attributes = self.attributes
        if error is not None:
            failed = error_type(error)
            attributes = {**attributes, "error.type": failed}
            if self.span.is_recording():
                status = getattr(error, "status", None)
                if isinstance(status, int):
                    self.span.set_attribute("db.response.status_code", str(status))
                self.span.set_attribute("error.type", failed)
                self.span.set_status(StatusCode.ERROR, failed)
        self.span.end()
        telemetry.record("db.client.operation.duration", time.perf_counter() - self.started, attributes)
        telemetry.record("reme_es.requests", 1, {k: v for k, v in attributes.items() if k != "db.collection.name"})


@functools.cache
def server_of(hosts: tuple[str, ...]) -> tuple[str, int | None]:
    """`server.address` and `server.port` of the first host (the one a single-host client sends to)."""
    if not hosts:
        return "", None
    url = urllib.parse.urlsplit(hosts[0] if "//" in hosts[0] else f"//{hosts[0]}")
    return url.hostname or "", url.port
