"""Fixtures shared by the integration tests."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.store.connect import open_store
from tests.integration.cli_support import EXAMPLE, Cli, _drop


@pytest.fixture
async def es_prefix(server, prefix):
    """The test's index prefix, dropped afterwards."""
    yield prefix
    store = await open_store(ClientSettings(hosts=[server.url]), prefix, server.engine)
    try:
        await store.drop()
    finally:
        await store.close()


@pytest.fixture
def node_url(server) -> str:
    """Every command-line test runs once per flavour under test (overrides the OpenSearch-only fixture)."""
    return server.url


@pytest.fixture
def cli(node_url, prefix, tmp_path):
    """`reme-es` on a copy of examples/workspace with this test's prefix and home; its indices dropped after."""
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE, workspace)
    c = Cli(node_url, prefix, workspace, tmp_path / "home")
    yield c
    asyncio.run(_drop(node_url, prefix))
