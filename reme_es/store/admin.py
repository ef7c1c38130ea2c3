"""The door's maintenance namespace, `store.admin` (as opensearch-py gives `client.indices`): what the background
k-NN width calibration and the contract suite do to an index set beside searching and writing, so that they need not
reach past `MemoryStore` into its parts. Each name is the part's own bound method: no signature is restated here.
"""

from __future__ import annotations

from typing import Any

from ..adapters.port import IndexPort
from .indices import IndexSet
from .vectors import VectorStore


class Admin:
    """`store.admin`: calibration, merges, pipelines, raw indices and search knobs of one store's index set."""

    def __init__(self, indices: IndexSet, port: IndexPort, vectors: VectorStore):
        self._indices, self._port = indices, port
        # the k-NN width (store/calibration.py)
        self.calibratable = vectors.calibratable
        self.calibrate = vectors.calibrate
        self.calibrate_if_due = vectors.calibrate_if_due
        # stored chunks (vectors on request), ids and routing as this workspace stores them
        self.stored_chunks = vectors.get_chunks
        self.stored_id = port.stored_id
        self.routing = port.scope.routing
        self.filter = indices.filter
        self.ranked = port.ranked
        # the search pipeline and the indices themselves, by name
        self.put_pipeline = port.put_pipeline
        self.delete_pipeline = port.delete_pipeline
        self.pipeline_exists = port.pipeline_exists
        self.create_index = port.create_index
        self.delete_index = port.delete_index

    @property
    def chunks_index(self) -> str:
        """The chunks index (alias) of this store's set."""
        return self._indices.ix.chunks

    async def chunks_merging(self) -> int:
        """How many merges run on the chunks index now."""
        return await self._port.merges_running(self._indices.ix.chunks)

    def tune(self, **knobs: Any) -> None:
        """Set search knobs of this store's index set (`SearchOptions` fields, and `today`); an unknown name raises."""
        for name, value in knobs.items():
            if name.startswith("_") or not hasattr(self._indices, name) or callable(getattr(self._indices, name)):
                raise AttributeError(f"{name!r} is not a search knob of the index set")
            setattr(self._indices, name, value)
