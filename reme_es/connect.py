"""Build a dialect and a MemoryStore from settings; the engine is resolved by the adapters (`resolve_engine`)."""

from __future__ import annotations

from .adapters.base import ClientSettings, Dialect
from .adapters.registry import engine_names, resolve_engine
from .adapters.registry import make_dialect as _registered
from .store import MemoryStore
from .templates import IndexOptions


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


async def open_store(
    settings: ClientSettings,
    prefix: str,
    engine: str = "auto",
    options: IndexOptions | None = None,
    create: bool = True,
    **store_kwargs,
) -> MemoryStore:
    """Connect a MemoryStore (probe, indices, pipeline) and return it; close it when done."""
    engine = await resolve_engine(settings, engine)
    store = MemoryStore(make_dialect(engine, settings), prefix, options, **store_kwargs)
    try:
        await store.connect(create=create)
    except BaseException:
        await store.close()
        raise
    return store


__all__ = ["detect_engine", "make_dialect", "open_store", "resolve_engine"]
