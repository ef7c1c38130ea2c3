"""Contract mixins: one per capability, each test with exact expectations (ids, order, counts, reasons).

Every test takes the `store_factory` fixture (see `reme_es.testing.pytest_plugin`). Nothing here knows which engine
runs or how it stores things: cases speak through the store's public methods and its port, and a case that
needs a capability says so with `require` (reme_es.testing.requirements), which skips it with the reason.
Each class carries its asyncio mark, so a subclass in any test module runs without `asyncio_mode = auto`.
"""

from __future__ import annotations

import pytest

from .contract_dates import DateContract
from .contract_links import LinkContract
from .contract_relations import RelationContract
from .contract_search import HybridContract, VectorContract
from .contract_upkeep import MaintenanceContract
from .contract_write import FilterContract, WriteContract


class StoreContract(
    WriteContract,
    FilterContract,
    LinkContract,
    VectorContract,
    HybridContract,
    MaintenanceContract,
    DateContract,
    RelationContract,
):
    """The whole contract."""


class SharedSetContract(StoreContract):
    """The whole contract, each store sharing its index set with a twin workspace that holds the very same files,
    chunks, vectors and links (same paths, texts, ids): every read path must return only its own workspace."""

    @pytest.fixture
    def reme_es_neighbours(self) -> int:
        """One twin workspace beside every store."""
        return 1


__all__ = [
    "DateContract",
    "FilterContract",
    "HybridContract",
    "LinkContract",
    "MaintenanceContract",
    "RelationContract",
    "SharedSetContract",
    "StoreContract",
    "VectorContract",
    "WriteContract",
]
