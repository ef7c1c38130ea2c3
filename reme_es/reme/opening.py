"""Opening the file store's cluster: which hosts (configured, the environment, or a managed local node) and an index
whose vector dimension matches the model (a stale one is dropped: ReMe's start-up scan rebuilds it)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..core.errors import ConfigError, MappingError
from ..core.options import ENV_PREFIX, IndexOptions
from ..store import MemoryStore
from ..store.connect import open_store

HOSTS_ENV = ENV_PREFIX + "HOSTS"


async def resolve_hosts(
    hosts: list[str], aws_region: str | None, flavour: str | None, logger: Any, name: str
) -> list[str]:
    """The configured hosts (ReMe's `hosts` key, else `REME_ES_HOSTS`: both in the options), else the managed
    `default` node (started here): of `flavour`, or (None) of the node's own flavour, else the default one
    (`node.flavour_of`)."""
    if hosts:
        return hosts
    if aws_region:
        raise ConfigError(f"{name}: aws_region is set but no hosts; give the Amazon OpenSearch endpoint")
    from ..server import node

    logger.info(f"{name}: no hosts configured and {HOSTS_ENV} unset; starting a local node")
    info = await asyncio.to_thread(node.start, node.flavour_of("default", flavour))
    return [info.url]


async def open_matching(
    settings: Any,
    prefix: str | None,
    engine: str,
    options: IndexOptions,
    logger: Any,
    name: str,
    folder: Any = None,
    **kwargs: Any,
) -> MemoryStore:
    """Open the store (`prefix` None: the set `choose_set` finds for `folder`); when the stored vector dimension
    differs from the model's and no other workspace uses the set, drop and recreate it.

    The index is derived from the workspace files, so ReMe's start-up scan rebuilds everything, which is
    what the local store does with vectors of a stale dimension. A set other workspaces use is never dropped: the
    error says to give this model its own set.
    """
    try:
        return await open_store(settings, prefix, engine, options, folder=folder, **kwargs)
    except MappingError:
        if not options.dims:
            raise
        probe = await open_store(
            settings,
            prefix,
            engine,
            IndexOptions(),
            create=False,
            folder=folder,
            hybrid="client",
            workspace=kwargs.get("workspace"),
        )
        try:
            if probe.dims == options.dims:
                raise
            others = (
                []
                if probe.legacy
                else [w for w in await probe.inspect.workspaces() if w["workspace"] != probe.workspace]
            )
            if others:
                raise ConfigError(
                    f"{name}: index set {probe.prefix} holds {probe.dims or 'no'} vectors for {len(others)} other "
                    f"workspace(s); this embedding model gives {options.dims}-d. Give this model its own index set "
                    "(file store key `index_prefix`)"
                ) from None
            logger.warning(
                f"{name}: index set {probe.prefix} holds {probe.dims or 'no'} vectors, the model gives "
                f"{options.dims}-d; dropping it so ReMe re-indexes the workspace"
            )
            prefix = probe.prefix
            await probe.drop()
        finally:
            await probe.close()
        return await open_store(settings, prefix, engine, options, folder=folder, **kwargs)
