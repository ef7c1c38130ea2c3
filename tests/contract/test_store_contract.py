"""The contract suite, unchanged, against every flavour under test (see tests/conftest.py)."""

from __future__ import annotations

import uuid

import pytest

from reme_es.adapters.base import ClientSettings
from reme_es.connect import open_store
from reme_es.templates import IndexOptions
from reme_es.testing import StoreContract
from reme_es.testing.data import DIMS


@pytest.fixture
async def store_factory(server):
    """Connected stores on fresh prefixes of the current flavour's server, dropped afterwards."""
    opened = []

    async def make(dims: int | None = DIMS, prefix: str | None = None, **kwargs):
        store = await open_store(
            ClientSettings(hosts=[server.url]),
            prefix or f"c-{uuid.uuid4().hex[:12]}",
            engine=server.engine,
            options=IndexOptions(dims=dims),
            **kwargs,
        )
        opened.append(store)
        return store

    yield make
    for store in reversed(opened):
        try:
            await store.drop()
        finally:
            await store.close()


class TestStoreContract(StoreContract):
    """Every contract case on every flavour."""
