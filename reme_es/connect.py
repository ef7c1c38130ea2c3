"""Build a dialect and a MemoryStore from settings; detect the engine when not given."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from .adapters.base import ClientSettings, Dialect
from .adapters.registry import engine_names
from .adapters.registry import make_dialect as _registered
from .errors import ConnectionFailed
from .store import MemoryStore
from .templates import IndexOptions


def __getattr__(name: str):
    if name == "ENGINES":  # the registered engine names, read when asked (entry points may add some)
        return engine_names()
    raise AttributeError(name)


def make_dialect(engine: str, settings: ClientSettings) -> Dialect:
    """The dialect object for an engine name (any registered in the `reme_es.dialects` entry point group)."""
    return _registered(engine, settings)


def engine_of_node(node: dict) -> str:
    """Which engine a `_nodes` entry comes from (Elasticsearch nodes report a build flavour)."""
    return "elasticsearch" if "build_flavor" in node else "opensearch"


async def detect_engine(settings: ClientSettings) -> str:
    """Ask the first host which engine it runs."""
    from .adapters.opensearch import OpenSearchDialect

    dialect = OpenSearchDialect(settings)
    try:
        node = await dialect._local_node()
    finally:
        await dialect.close()
    return engine_of_node(node)


def detect_engine_sync(url: str, timeout: float = 5.0) -> str:
    """Engine of an unsecured node, without a client (used by the launcher and tests)."""
    try:
        with urllib.request.urlopen(f"{url}/_nodes/_local", timeout=timeout) as resp:
            node = next(iter(json.loads(resp.read())["nodes"].values()))
    except (OSError, urllib.error.URLError) as exc:
        raise ConnectionFailed(f"could not reach {url}: {exc}") from exc
    return engine_of_node(node)


async def open_store(
    settings: ClientSettings,
    prefix: str,
    engine: str = "auto",
    options: IndexOptions | None = None,
    create: bool = True,
    **store_kwargs,
) -> MemoryStore:
    """Connect a MemoryStore (probe, indices, pipeline) and return it; close it when done."""
    if engine == "auto":
        # SigV4 exists only for Amazon OpenSearch; Serverless has no _nodes API to detect the engine with
        engine = ("aoss" if settings.aws_service == "aoss" else "opensearch") if settings.aws_region else (
            await detect_engine(settings)
        )
    store = MemoryStore(make_dialect(engine, settings), prefix, options, **store_kwargs)
    try:
        await store.connect(create=create)
    except BaseException:
        await store.close()
        raise
    return store
