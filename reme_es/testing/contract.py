"""Contract mixins: one per capability, each test with exact expectations (ids, order, counts, reasons).

Every test takes the `store_factory` fixture (see `reme_es.testing.plugin`). Nothing here knows which engine
runs or how it stores things: cases speak through the store's public methods and its port, and a case that
needs a capability says so with `require` (reme_es.testing.requirements), which skips it with the reason.
Each class carries its asyncio mark, so a subclass in any test module runs without `asyncio_mode = auto`.
"""

from __future__ import annotations

from .contract_search import HybridContract, MaintenanceContract, VectorContract
from .contract_write import FilterContract, LinkContract, WriteContract


class StoreContract(WriteContract, FilterContract, LinkContract, VectorContract, HybridContract, MaintenanceContract):
    """The whole contract."""


__all__ = [
    "FilterContract", "HybridContract", "LinkContract", "MaintenanceContract", "StoreContract", "VectorContract",
    "WriteContract",
]
