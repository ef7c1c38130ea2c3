"""pytest plugin for running the contract suite from any package: `-p reme_es.testing.pytest_plugin` or
`pytest_plugins = ["reme_es.testing.pytest_plugin"]`.

It provides `store_factory`, the one fixture the contract cases take: an async callable
`(dims=8, prefix=None, **store_kwargs) -> MemoryStore` that opens a connected store on a fresh index prefix,
and drops and closes every store it opened at teardown. How a store is opened is the `reme_es_open_store`
fixture, which a third party overrides to plug in its own dialect or cluster:

    @pytest.fixture
    def reme_es_open_store():
        async def open_one(prefix: str, options: IndexOptions, **store_kwargs) -> MemoryStore:
            store = MemoryStore(MyDialect(settings), prefix, options, **store_kwargs)
            await store.connect()
            return store
        return open_one

By default it connects to `--reme-es-hosts` (or `REME_ES_TEST_HOSTS`) with `--reme-es-engine` (or
`REME_ES_TEST_ENGINE`, default auto). The contract classes carry their own asyncio marks, so the caller's
pytest needs no `asyncio_mode = auto`; pytest-asyncio must be installed.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import pytest_asyncio

from ..core.options import IndexOptions
from ..store import MemoryStore
from .data import DIMS

Opener = Callable[..., Awaitable[MemoryStore]]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reme-es", "reme-es contract suite")
    group.addoption("--reme-es-hosts", default=None, help="Cluster URL(s), comma-separated (REME_ES_TEST_HOSTS).")
    group.addoption("--reme-es-engine", default=None, help="Engine name or auto (REME_ES_TEST_ENGINE).")


@asynccontextmanager
async def dropped_at_exit() -> AsyncIterator[list[MemoryStore]]:
    """A list to put opened stores in; each is dropped and closed at exit, the last opened first."""
    opened: list[MemoryStore] = []
    try:
        yield opened
    finally:
        for store in reversed(opened):
            try:
                await store.drop()
            finally:
                await store.close()


@pytest.fixture
def reme_es_open_store(request: pytest.FixtureRequest) -> Opener:
    """How the contract suite opens a connected store (override this fixture to use your own dialect)."""
    from ..adapters.dialect import ClientSettings
    from ..core.runtime import runtime
    from ..store.connect import open_store

    hosts = request.config.getoption("--reme-es-hosts") or runtime().test_hosts
    engine = request.config.getoption("--reme-es-engine") or runtime().test_engine
    if not hosts:
        pytest.fail("the contract suite needs a cluster: pass --reme-es-hosts URL or override reme_es_open_store")

    async def open_one(prefix: str, options: IndexOptions, **store_kwargs) -> MemoryStore:
        return await open_store(ClientSettings(hosts=hosts.split(",")), prefix, engine, options, **store_kwargs)

    return open_one


@pytest.fixture
def reme_es_neighbours() -> int:
    """How many other workspaces share each contract store's index set, each written exactly as the store is (0: the
    store's set holds it alone; `SharedSetContract` sets 1)."""
    return 0


def mirror_writes(store: MemoryStore, twins: list[MemoryStore]) -> None:
    """Make every upsert, delete and vector write of `store` happen in each twin first (same paths, texts, vectors),
    so the twins' workspaces hold exactly what the store's holds: any read that drops the workspace filter then
    returns twice the hits, or a twin's, and the case that checks it fails. `clear` is not mirrored: a cleared store
    must find nothing while its twins keep everything."""
    for holder, name in ((lambda s: s, "upsert"), (lambda s: s, "delete"), (lambda s: s.vectors, "set_vectors")):
        own, others = getattr(holder(store), name), [getattr(holder(t), name) for t in twins]

        async def both(*args, _own=own, _others=others, **kwargs):
            for other in _others:
                try:
                    await other(*args, **kwargs)
                except Exception:  # noqa: BLE001 - the twin fails as the store will; the store's own error is the one raised
                    pass
            return await _own(*args, **kwargs)

        setattr(holder(store), name, both)


@pytest_asyncio.fixture
async def store_factory(
    reme_es_open_store: Opener, reme_es_neighbours: int
) -> AsyncIterator[Callable[..., Awaitable[MemoryStore]]]:
    """Connected stores on fresh prefixes, dropped and closed afterwards; with `reme_es_neighbours`, each store is
    workspace `main` of its set and as many twin workspaces get all its writes too (`mirror_writes`)."""
    async with dropped_at_exit() as opened:
        twins: list[MemoryStore] = []

        async def make(dims: int | None = DIMS, prefix: str | None = None, **store_kwargs) -> MemoryStore:
            prefix = prefix or f"c-{uuid.uuid4().hex[:12]}"
            if reme_es_neighbours and "workspace" not in store_kwargs:
                store_kwargs["workspace"] = "main"
                for n in range(reme_es_neighbours):
                    kwargs = {**store_kwargs, "workspace": f"twin-{n}"}
                    twins.append(await reme_es_open_store(prefix, IndexOptions(dims=dims), **kwargs))
                store = await reme_es_open_store(prefix, IndexOptions(dims=dims), **store_kwargs)
                mirror_writes(store, twins[-reme_es_neighbours:])
            else:
                store = await reme_es_open_store(prefix, IndexOptions(dims=dims), **store_kwargs)
            opened.append(store)
            return store

        try:
            yield make
        finally:
            for twin in twins:
                await twin.close()
