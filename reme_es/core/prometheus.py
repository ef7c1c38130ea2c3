"""reme-es' metrics as Prometheus text (`prometheus-client`, the `metrics` extra), for scrapers.

`enable()` mirrors every instrument of `reme_es.core.telemetry.INSTRUMENTS` into one registry of this process (OTel
names with `.` as `_`, seconds histograms ending `_seconds`, counters `_total`); from then on each measurement goes to
the OTel API and to it. What serves it:
- `reme-es metrics` (`reme_es.cli.metrics_command`): an HTTP server of `/metrics` with the cluster's own figures too;
- `text()`: the exposition text, for any server of your own;
- `asgi_app()` / `wsgi_app()`: an app to mount at `/metrics` (Starlette: `app.mount("/metrics", asgi_app())`).
"""

from __future__ import annotations

from typing import Any

from . import telemetry

INSTALL_HINT = "Prometheus text needs prometheus-client: pip install 'reme-es[metrics]'"
_registry: Any = None


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:
        from .errors import ConfigError

        raise ConfigError(INSTALL_HINT) from exc
    return prometheus_client


def prometheus_name(name: str, unit: str) -> str:
    """The Prometheus name of an instrument: `db.client.operation.duration` (unit s) becomes
    `db_client_operation_duration_seconds`."""
    base = name.replace(".", "_")
    return f"{base}_seconds" if unit == "s" else base


def enable() -> Any:
    """The registry of this process's reme-es metrics, made (and the mirror turned on) on the first call."""
    global _registry
    if _registry is not None:
        return _registry
    pc = _client()
    registry = pc.CollectorRegistry(auto_describe=True)
    mirror: dict[str, Any] = {}
    for name, (kind, unit, text, attributes) in telemetry.INSTRUMENTS.items():
        labels = [a.replace(".", "_") for a in attributes]
        metric_name = prometheus_name(name, unit)
        if kind == "counter":
            mirror[name] = pc.Counter(metric_name, text, labels, registry=registry)
        else:
            buckets = telemetry.RECALL_BUCKETS if unit == "1" else telemetry.DURATION_BUCKETS
            mirror[name] = pc.Histogram(metric_name, text, labels, registry=registry, buckets=buckets)
    telemetry._prometheus = mirror
    _registry = registry
    return registry


def text(registry: Any = None) -> bytes:
    """The Prometheus exposition text of reme-es' metrics (and of any collector added to `registry`)."""
    return _client().generate_latest(registry or enable())


def content_type() -> str:
    """The Content-Type of `text()`."""
    return str(_client().CONTENT_TYPE_LATEST)


def asgi_app(registry: Any = None) -> Any:
    """An ASGI app answering every GET with `text()` (mount it at `/metrics`)."""
    return _client().make_asgi_app(registry or enable())


def wsgi_app(registry: Any = None) -> Any:
    """A WSGI app answering every GET with `text()`."""
    return _client().make_wsgi_app(registry or enable())
