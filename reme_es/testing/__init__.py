"""The reme-es contract suite, importable by anyone who writes an adapter.

Use it by subclassing `StoreContract` (or single mixins) in a pytest module and loading the plugin
(`-p reme_es.testing.pytest_plugin`): it provides `store_factory`, an async callable
`(dims: int | None = 8, prefix=None, **store_kwargs) -> MemoryStore` that returns a connected store on a fresh
index prefix and drops it at teardown; override its `reme_es_open_store` fixture to open your own dialect's
store, or pass `--reme-es-hosts`. Capability-dependent cases skip, with the reason, when the store lacks the
feature (`reme_es.testing.requirements`). `reme_es.testing.fakes.MemoryPort` runs the write protocol without a
server.
"""

from .contract import (
    FilterContract,
    HybridContract,
    LinkContract,
    MaintenanceContract,
    SharedSetContract,
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
    "SharedSetContract",
    "StoreContract",
    "VectorContract",
    "WriteContract",
    "chunk",
    "file_with",
    "unit_vector",
]
