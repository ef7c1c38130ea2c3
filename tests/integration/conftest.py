"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

from reme_es.adapters.base import ClientSettings
from reme_es.connect import open_store


@pytest.fixture
async def es_prefix(server, prefix):
    """The test's index prefix, dropped afterwards."""
    yield prefix
    store = await open_store(ClientSettings(hosts=[server.url]), prefix, server.engine)
    try:
        await store.drop()
    finally:
        await store.close()
