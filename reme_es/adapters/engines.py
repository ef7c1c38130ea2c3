"""Dialects found by entry point: group `reme_es.dialects`, name = engine name, value = the Dialect class.

    [project.entry-points."reme_es.dialects"]
    opensearch = "reme_es.adapters.opensearch:OpenSearchDialect"

Adding an engine is one dialect module plus one entry point: `connect`, the config and CLI choices, the
`Capabilities` model and the ReMe plugin all read the engine names from here. The classes are imported only
when a dialect is asked for (`dialect_class`); listing names imports nothing.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from ..core.engine_settings import DEFAULT_ENGINE
from ..core.errors import ConfigError

if TYPE_CHECKING:
    from .dialect import ClientSettings, Dialect

GROUP = "reme_es.dialects"

# The project's own dialects, used when the package's metadata is not installed (a source checkout on sys.path).
BUILT_IN = {
    "opensearch": "reme_es.adapters.opensearch:OpenSearchDialect",
    "elasticsearch": "reme_es.adapters.elasticsearch:ElasticsearchDialect",
    "aoss": "reme_es.adapters.aoss:ServerlessDialect",
}


@cache
def _targets() -> dict[str, str]:
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    return {**BUILT_IN, **found}


def engine_names() -> tuple[str, ...]:
    """Every registered engine name, built-in ones first."""
    names = list(_targets())
    return tuple(names)


def dialect_class(engine: str) -> type[Dialect]:
    """The Dialect class registered for an engine name."""
    target = _targets().get(engine)
    if target is None:
        raise ConfigError(f"engine must be one of {', '.join(engine_names())} or auto, got {engine!r}")
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)


def make_dialect(engine: str, settings: ClientSettings) -> Dialect:
    """A dialect object for an engine name."""
    return dialect_class(engine)(settings)


def engine_for_node(node: dict) -> str:
    """The registered engine whose dialect `detects` this `_nodes/_local` entry. Dialects registered after the
    built-in ones are asked first, and only a dialect that defines `detects` itself is asked (a subclass of a
    built-in dialect does not take over its parent's nodes)."""
    for name in reversed(engine_names()):
        cls = dialect_class(name)
        if "detects" in vars(cls) and cls.detects(node):
            return name
    raise ConfigError(f"no registered dialect ({', '.join(engine_names())}) recognises the node; set engine")


async def resolve_engine(settings: ClientSettings, engine: str = DEFAULT_ENGINE) -> str:
    """The engine to talk to: the one named (checked), else for SigV4 settings (`aws_region`) Amazon OpenSearch or,
    with `aws_service: aoss`, Serverless (which has no `_nodes` API to ask), else the dialect that detects the
    node answering at the first host. `open_store` and every CLI command decide the engine here."""
    if engine != "auto":
        dialect_class(engine)
        return engine
    if settings.aws_region:
        return "aoss" if settings.aws_service == "aoss" else "opensearch"
    from .opensearch import OpenSearchDialect  # its client does no product check, so it can ask any node

    asking = OpenSearchDialect(settings)
    try:
        node = await asking.local_node()
    finally:
        await asking.transport.close()
    return engine_for_node(node)
