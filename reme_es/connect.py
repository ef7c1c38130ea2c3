"""Build a dialect and a MemoryStore from settings; detect the engine when not given."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from .adapters.base import ClientSettings, Dialect
from .errors import ConfigError, ConnectionFailed
from .store import MemoryStore
from .templates import IndexOptions

ENGINES = ("opensearch", "elasticsearch")


def make_dialect(engine: str, settings: ClientSettings) -> Dialect:
    """The dialect object for an engine name."""
    if engine == "opensearch":
        from .adapters.opensearch import OpenSearchDialect

        return OpenSearchDialect(settings)
    if engine == "elasticsearch":
        from .adapters.elasticsearch import ElasticsearchDialect

        return ElasticsearchDialect(settings)
    raise ConfigError(f"engine must be one of {', '.join(ENGINES)} or auto, got {engine!r}")


async def detect_engine(settings: ClientSettings) -> str:
    """Ask the first host which engine it runs (Elasticsearch nodes report a build flavour)."""
    from .adapters.opensearch import OpenSearchDialect

    dialect = OpenSearchDialect(settings)
    try:
        nodes = (await dialect.request("GET", "/_nodes/_local"))["nodes"]
    finally:
        await dialect.close()
    node = next(iter(nodes.values()))
    return "elasticsearch" if "build_flavor" in node else "opensearch"


def detect_engine_sync(url: str, timeout: float = 5.0) -> str:
    """Engine of an unsecured node, without a client (used by the launcher and tests)."""
    try:
        with urllib.request.urlopen(f"{url}/_nodes/_local", timeout=timeout) as resp:
            node = next(iter(json.loads(resp.read())["nodes"].values()))
    except (OSError, urllib.error.URLError) as exc:
        raise ConnectionFailed(f"could not reach {url}: {exc}") from exc
    return "elasticsearch" if "build_flavor" in node else "opensearch"


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
        engine = "opensearch" if settings.aws_region else await detect_engine(settings)
    store = MemoryStore(make_dialect(engine, settings), prefix, options, **store_kwargs)
    try:
        await store.connect(create=create)
    except BaseException:
        await store.close()
        raise
    return store
