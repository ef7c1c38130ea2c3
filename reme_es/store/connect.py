"""Build a dialect and a MemoryStore from settings; the engine is resolved by the adapters (`resolve_engine`).

Callers outside `reme_es/store/` get a store (`open_store`) or, before or without one, a `Cluster` (`open_cluster`):
neither constructs a dialect nor touches a transport (`make_dialect` stays for tests that build a store by hand)."""

from __future__ import annotations

from pathlib import Path

from ..adapters.dialect import ClientSettings, Dialect
from ..adapters.engines import engine_names, resolve_engine
from ..adapters.engines import make_dialect as _registered
from ..adapters.port import IndexPort
from ..adapters.security_admin import SecurityAdmin
from ..core.engine_settings import DEFAULT_ENGINE
from ..core.models import Capabilities
from ..core.options import SHARED_SET, IndexOptions, SearchOptions, default_prefix
from . import MemoryStore


def __getattr__(name: str):
    if name == "ENGINES":  # the registered engine names, read when asked (entry points may add some)
        return engine_names()
    raise AttributeError(name)


def make_dialect(engine: str, settings: ClientSettings) -> Dialect:
    """The dialect object for an engine name (any registered in the `reme_es.dialects` entry point group)."""
    return _registered(engine, settings)


async def detect_engine(settings: ClientSettings) -> str:
    """Which registered engine the first host runs (`resolve_engine` with engine auto)."""
    return await resolve_engine(settings)


async def choose_set(dialect: Dialect, folder: Path | None) -> str:
    """The index set of a workspace folder when none is named: the set it had to itself before shared sets, where
    that exists (so existing indices keep working), else the shared set."""
    if folder is not None:
        own = default_prefix(folder)
        if await IndexPort(dialect).mapping(f"{own}-chunks") is not None:
            return own
    return SHARED_SET


class Cluster:
    """One cluster without an index set, for what comes before a store or goes without one: which set a folder uses
    (`choose_set`), what the server can do (`probe`), a store that needs no indices (`store`), the port snapshots work
    through (`port`) and the security admin of a set (`security`). One client for all of them: `close` closes it, and
    so does closing a store made by `store`."""

    def __init__(self, dialect: Dialect):
        self._dialect = dialect
        self.port = IndexPort(dialect)

    @property
    def engine(self) -> str:
        """The engine name (resolved: never `auto`)."""
        return self._dialect.engine

    async def choose_set(self, folder: Path | None) -> str:
        """The index set of a workspace folder when none is named (`choose_set`)."""
        return await choose_set(self._dialect, folder)

    async def probe(self) -> Capabilities:
        """What the server can do (reads only)."""
        return await self._dialect.probe()

    def store(self, prefix: str, workspace: str | None = None) -> MemoryStore:
        """A store of `prefix` on this cluster's client, not connected: it works where the set has no indices yet
        (its counts, health, drop plan); closing it closes the cluster's client."""
        return MemoryStore(self._dialect, prefix, workspace=workspace)

    def security(self, prefix: str) -> SecurityAdmin:
        """The security admin of the set `prefix` on this cluster (close the cluster when done)."""
        return SecurityAdmin(self._dialect.transport, self._dialect.engine, prefix)

    async def close(self) -> None:
        """Close the client."""
        await self.port.close()


async def open_cluster(settings: ClientSettings, engine: str = DEFAULT_ENGINE) -> Cluster:
    """The cluster the settings name, its engine resolved (`resolve_engine`); close it when done."""
    return Cluster(make_dialect(await resolve_engine(settings, engine), settings))


async def open_store(
    settings: ClientSettings,
    prefix: str | None,
    engine: str = DEFAULT_ENGINE,
    options: IndexOptions | None = None,
    create: bool = True,
    folder: Path | None = None,
    **store_kwargs,
) -> MemoryStore:
    """Connect a MemoryStore (probe, indices, pipeline) and return it; close it when done. `prefix` None: the set
    `choose_set` finds for `folder`. In `store_kwargs`: `workspace` (the workspace in the set) and `search`
    (SearchOptions), or search options by name (`fusion="rrf"`, `feedback=0`, ...)."""
    workspace, search = store_kwargs.pop("workspace", None), store_kwargs.pop("search", None)
    search = search or SearchOptions(**store_kwargs)
    engine = await resolve_engine(settings, engine)
    dialect = make_dialect(engine, settings)
    try:
        prefix = prefix or await choose_set(dialect, folder)
    except BaseException:
        await dialect.transport.close()
        raise
    store = MemoryStore(dialect, prefix, options, search, workspace)
    try:
        await store.connect(create=create)
    except BaseException:
        await store.close()
        raise
    return store


__all__ = ["Cluster", "choose_set", "detect_engine", "make_dialect", "open_cluster", "open_store", "resolve_engine"]
