"""The reme-es contract suite, importable by anyone who writes an adapter.

Use it by subclassing `StoreContract` (or single mixins) in a pytest module and providing one fixture,
`store_factory`: an async callable `(dims: int | None = 8, **store_kwargs) -> MemoryStore` that returns a
connected store on a fresh index prefix and drops it at teardown. Capability-dependent cases skip, with the
reason, when `store.caps` says the server lacks the feature.
"""

from .contract import (
    FilterContract,
    HybridContract,
    LinkContract,
    MaintenanceContract,
    StoreContract,
    VectorContract,
    WriteContract,
)
from .data import chunk, file_with, unit_vector

__all__ = [
    "FilterContract",
    "HybridContract",
    "LinkContract",
    "MaintenanceContract",
    "StoreContract",
    "VectorContract",
    "WriteContract",
    "chunk",
    "file_with",
    "unit_vector",
]
