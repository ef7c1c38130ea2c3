"""The door's maintenance namespaces (as opensearch-py gives `client.indices`): `store.admin`, what the CLI's upkeep
commands, the background k-NN width calibration and the contract suite do to an index set beside searching and
writing (reindex, migrate, drop plans, template diff, optimize, stats, calibration, the recorded embedding model);
and `store.vectors`, the stored vectors of the workspace's chunks (read back, planned, backfilled, set). Neither
needs a caller to reach past `MemoryStore` into its parts. Each plain name is the part's own bound method (or a
`lifecycle` function bound to the store): no signature is restated here.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from . import lifecycle
from .vectors import VectorStore

if TYPE_CHECKING:
    from . import MemoryStore
    from .calibration import Calibration


class Vectors:
    """`store.vectors`: this workspace's stored vectors. Searching by vector is the door's `vector_search`, which keeps
    one version per file."""

    def __init__(self, part: VectorStore):
        self.get_chunks = part.get_chunks  # stored chunk sources by id; vectors only when asked for
        self.vector_ids = part.vector_ids  # which chunks have a stored vector (no vector read)
        self.plan = part.plan  # unchanged, reusable or to embed, for chunks about to be written
        self.without_vectors = part.without_vectors  # batches of stored chunks with no vector (backfilling)
        self.set_vectors = part.set_vectors  # write vectors onto stored chunks, keyed by (path, chunk id)
        self.width = part.width  # the k-NN width a search for the k nearest uses now


class Admin:
    """`store.admin`: upkeep of one store's index set: rebuilds, moves, drops, merges, calibration, raw indices,
    pipelines and search knobs."""

    def __init__(self, store: MemoryStore, vectors: VectorStore):
        indices, port = store.indices, store.port
        self._indices, self._port, self._vectors = indices, port, vectors
        # the set's life (store/lifecycle.py)
        self.reindex = partial(lifecycle.reindex, store)
        self.migrate_to = partial(lifecycle.migrate, store)  # copy this workspace into another store's, counts checked
        self.template_diff = partial(lifecycle.template_diff, store)
        self.drop_plan = partial(lifecycle.drop_plan, store)
        self.drop_prefix = partial(lifecycle.drop_prefix, store)
        self.vectors_model = partial(lifecycle.vectors_model, store)
        self.record_vectors_model = partial(lifecycle.record_vectors_model, store)
        self.concrete_indices = partial(lifecycle.concrete_indices, store)
        self.live_options = partial(lifecycle.live_options, store)
        self.stats = indices.stats  # per index kind: docs, deleted docs, segments, size
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

    async def optimize(
        self, deleted_ratio: float = 0.1, max_segments: int | None = None, calibrate: bool = True
    ) -> dict:
        """Force-merge: expunge deletes in indices whose deleted-docs ratio passes the threshold; then, with
        `calibrate`, measure the k-NN width again where it is due (`calibrate_if_due`; the answer's `knn_width`)."""
        result = await self._indices.optimize(deleted_ratio, max_segments)
        if calibrate:
            record = await self._vectors.calibrate_if_due()
            result["knn_width"] = record.to_meta() if record is not None else None
        return result

    @property
    def chunks_index(self) -> str:
        """The chunks index (alias) of this store's set."""
        return self._indices.ix.chunks

    @property
    def calibration(self) -> Calibration | None:
        """The k-NN width calibration recorded on the chunks index (None while none is)."""
        return self._indices.knn_calibration

    async def chunks_merging(self) -> int:
        """How many merges run on the chunks index now."""
        return await self._port.merges_running(self._indices.ix.chunks)

    def tune(self, **knobs: Any) -> None:
        """Set search knobs of this store's index set (`SearchOptions` fields, and `today`); an unknown name raises."""
        for name, value in knobs.items():
            if name.startswith("_") or not hasattr(self._indices, name) or callable(getattr(self._indices, name)):
                raise AttributeError(f"{name!r} is not a search knob of the index set")
            setattr(self._indices, name, value)
