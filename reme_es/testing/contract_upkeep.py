"""Contract mixins for the set's upkeep: optimize, reindex (see `reme_es.testing.contract`)."""

from __future__ import annotations

import pytest

from ._common import ASYNC
from ._common import ids as _ids
from .data import chunk, file_with, unit_vector
from .requirements import require


class MaintenanceContract:
    """optimize = force-merge that expunges deletes past a threshold, with before/after figures."""

    pytestmark = ASYNC

    async def test_optimize_merges_only_past_the_deleted_ratio_and_reports_figures(
        self, store_factory, reme_es_neighbours
    ):
        # Soft-deleted documents stay until the shard's retention lease moves on (about 30 s on a quiet shard),
        # so the deleted count right after the merge is not asserted; the merge itself and its report are.
        store = await store_factory()
        require(store, "force_merge")
        pairs = [file_with(f"digest/o{i}.md", [chunk(f"digest/o{i}.md", f"doc {i}")]) for i in range(20)]
        await store.upsert(pairs)
        await store.delete([f"digest/o{i}.md" for i in range(10)])
        quiet = await store.admin.optimize(deleted_ratio=0.99)
        assert quiet["merged"] == []
        report = await store.admin.optimize(deleted_ratio=0.1)
        assert "chunks" in report["merged"] and "links" not in report["merged"]
        copies = 1 + reme_es_neighbours  # index figures: every workspace of the set holds its own copy
        assert report["before"]["chunks"]["deleted"] >= 10 * copies
        assert report["after"]["chunks"]["docs"] == 10 * copies
        full = await store.admin.optimize(max_segments=1)
        assert full["after"]["chunks"]["segments"] == 1
        assert full["after"]["files"]["docs"] == 10 * copies
        assert [f.path for f in await store.links.get_files()] == [f"digest/o{i}.md" for i in range(10, 20)]

    async def test_reindex_keeps_every_vector(self, store_factory, reme_es_neighbours):
        # Vectors are kept out of the stored `_source` (OpenSearch derived source, Elasticsearch's default): the copy
        # must still carry them, or the new index answers k-NN with nothing and nobody notices until a search.
        from ..core.options import IndexOptions

        store = await store_factory()
        require(store, "vectors")
        kept = [chunk(f"digest/r{i}.md", f"reindexed {i}", vector=unit_vector(1, i * 0.1)) for i in range(5)]
        await store.upsert([file_with(c.path, [c]) for c in kept])
        results = await store.admin.reindex(IndexOptions(dims=store.dims))
        copies = 1 + reme_es_neighbours  # a rebuild copies every workspace of the set
        assert [(r["kind"], r["docs"], r["vectors"]) for r in results] == [
            ("chunks", 5 * copies, "kept"),
            ("files", 5 * copies, "none"),
            ("links", 0, "none"),
        ]
        assert [c async for batch in store.vectors.without_vectors() for c in batch] == []
        stored = await store.vectors.get_chunks({c.path: [c.id] for c in kept}, with_vectors=True)
        assert sorted(stored) == sorted(c.id for c in kept)
        for c in kept:
            assert stored[c.id]["embedding"] == pytest.approx(c.embedding, abs=1e-6)
        assert _ids(await store.vector_search(unit_vector(1, 0.4), 1)) == [kept[4].id]
