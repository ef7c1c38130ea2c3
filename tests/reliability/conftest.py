"""Fixtures of the reliability tests: stores on fresh prefixes of each flavour's test server, and dedicated nodes.

`store_factory` and `prefixes` follow the parametrized `server` fixture (tests/conftest.py): a test using them runs
once per flavour under test (`REME_ES_TEST_FLAVOURS` selects) and talks to that server's engine.

Extra nodes are started with the managed launcher on an OS-chosen loopback port, checked to be the node we
started (another session may be starting a node at the same moment), and stopped in the finalizer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import socket
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.errors import ServerError
from reme_es.server import node
from reme_es.store import MemoryStore
from reme_es.store.connect import open_store
from reme_es.testing.pytest_plugin import dropped_at_exit

# Every logger of the client stacks of both engines; `debug_log` collects them at DEBUG.
CLIENT_LOGGERS = ("opensearch", "elasticsearch", "elastic_transport", "urllib3", "aiohttp", "reme_es", "asyncio")


def free_port() -> int:
    """A loopback port nobody listens on right now (OS-chosen, away from the 920x range other nodes use)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def managed_node(name: str, settings: dict, heap: str = "256m", flavour: str = "opensearch-2.19") -> Iterator[str]:
    """Start a dedicated node of `flavour`, make sure the URL answers as that node, stop and remove it afterwards."""
    try:
        info = node.start(flavour, name=name, http_port=free_port(), heap=heap, settings=settings)
        # `GET /_nodes/_local`, not `GET /`: the Elasticsearch integ-test node answers `GET /` with 405
        with urllib.request.urlopen(f"{info.url}/_nodes/_local", timeout=10) as resp:
            answered = next(iter(json.loads(resp.read())["nodes"].values()))["name"]
        if answered != name:
            raise ServerError(f"{info.url} answers as node {answered!r}, not {name!r} (port race with another start)")
        yield info.url
    finally:
        node.stop(name)
        shutil.rmtree(node.node_dir(name), ignore_errors=True)


@pytest.fixture
def debug_log():
    """Everything the client stacks log at DEBUG, one formatted string per record (read it after the call)."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s %(exc_info)s"))
    saved = {}
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        saved[name] = logger.level
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    yield records
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).removeHandler(handler)
        logging.getLogger(name).setLevel(saved[name])


@pytest.fixture
async def store_factory(server):
    """Connected stores on fresh prefixes of the flavour's test server (or `url`, a node of the same engine);
    dropped and closed afterwards."""
    async with dropped_at_exit() as opened:

        async def make(url: str | None = None, prefix: str | None = None, **kwargs) -> MemoryStore:
            prefix = prefix or f"rel-{uuid.uuid4().hex[:12]}"
            store = await open_store(ClientSettings(hosts=[url or server.url]), prefix, server.engine, **kwargs)
            opened.append(store)
            return store

        yield make


async def count(store: MemoryStore, kind: str) -> int:
    """Documents in one index kind (the store's last refresh is what counts)."""
    return (await store.dialect.transport.request("GET", f"/{store.index(kind)}/_count"))["count"]


async def chunk_ids(store: MemoryStore) -> list[str]:
    """Every stored chunk id, sorted."""
    resp = await store.dialect.transport.request(
        "POST",
        f"/{store.index('chunks')}/_search",
        {"size": 10000, "_source": ["chunk_id"], "query": {"match_all": {}}},
    )
    return sorted(h["_source"]["chunk_id"] for h in resp["hits"]["hits"])


@pytest.fixture
def prefixes(server):
    """Index prefixes on the flavour's test server handed out to one test (for child processes that create
    them), dropped afterwards."""
    made: list[str] = []

    def make() -> str:
        made.append(f"rel-crash-{uuid.uuid4().hex[:10]}")
        return made[-1]

    yield make
    for p in made:
        asyncio.run(_drop(server.url, server.engine, p))


async def _drop(url: str, engine: str, prefix: str) -> None:
    store = await open_store(ClientSettings([url]), prefix, engine, create=True)
    try:
        await store.drop()
    finally:
        await store.close()
