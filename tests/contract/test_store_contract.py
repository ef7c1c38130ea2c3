"""The contract suite, unchanged, against every flavour under test (see tests/conftest.py).

`store_factory` comes from the suite's pytest plugin (reme_es.testing.pytest_plugin, loaded in tests/conftest.py);
this module only says how a store is opened: on the current flavour's server.
"""

from __future__ import annotations

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.store.connect import open_store
from reme_es.testing import SharedSetContract, StoreContract
from tests.containers.servers import contract_flavours


@pytest.fixture
def reme_es_open_store(server):
    """Stores of the current flavour's server."""

    async def open_one(prefix, options, **kwargs):
        return await open_store(ClientSettings(hosts=[server.url]), prefix, server.engine, options, **kwargs)

    return open_one


@pytest.mark.parametrize("server", contract_flavours(), indirect=True, scope="session")
class TestStoreContract(StoreContract):
    """Every contract case, the store alone in its index set, on OpenSearch 2.19 (`contract_flavours`)."""


class TestSharedSetContract(SharedSetContract):
    """Every contract case with a twin workspace in the same index set, on every flavour under test."""
