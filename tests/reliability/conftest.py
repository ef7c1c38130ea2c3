"""Fixtures of the reliability tests: stores on fresh prefixes of the default node, and a dedicated managed node.

Extra nodes are started with the managed launcher on an OS-chosen loopback port, checked to be the node we
started (another session may be starting a node at the same moment), and stopped in the finalizer.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reme_es.adapters.base import ClientSettings
from reme_es.connect import open_store
from reme_es.errors import ServerError
from reme_es.server import node
from reme_es.store import MemoryStore

# Every logger of the client stacks of both engines; `debug_log` collects them at DEBUG.
CLIENT_LOGGERS = ("opensearch", "elasticsearch", "elastic_transport", "urllib3", "aiohttp", "reme_es", "asyncio")


def free_port() -> int:
    """A loopback port nobody listens on right now (OS-chosen, away from the 920x range other nodes use)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def managed_node(name: str, settings: dict, heap: str = "256m") -> Iterator[str]:
    """Start a dedicated OpenSearch 2.19 node, make sure the URL answers as that node, stop it afterwards."""
    try:
        info = node.start("opensearch-2.19", name=name, http_port=free_port(), heap=heap, settings=settings)
        with urllib.request.urlopen(info.url, timeout=10) as resp:
            answered = json.loads(resp.read())["name"]
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
async def store_factory(node_url):
    """Connected stores on fresh prefixes of the default OpenSearch node; dropped and closed afterwards."""
    opened: list[MemoryStore] = []

    async def make(url: str | None = None, prefix: str | None = None, **kwargs) -> MemoryStore:
        store = await open_store(
            ClientSettings(hosts=[url or node_url]), prefix or f"rel-{uuid.uuid4().hex[:12]}", "opensearch", **kwargs
        )
        opened.append(store)
        return store

    yield make
    for store in reversed(opened):
        try:
            await store.drop()
        finally:
            await store.close()


async def count(store: MemoryStore, kind: str) -> int:
    """Documents in one index kind (the store's last refresh is what counts)."""
    return (await store.dialect.request("GET", f"/{store.index(kind)}/_count"))["count"]


async def chunk_ids(store: MemoryStore) -> list[str]:
    """Every stored chunk id, sorted."""
    resp = await store.dialect.request(
        "POST", f"/{store.index('chunks')}/_search", {"size": 10000, "_source": ["chunk_id"], "query": {"match_all": {}}}
    )
    return sorted(h["_source"]["chunk_id"] for h in resp["hits"]["hits"])
