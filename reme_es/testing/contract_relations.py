"""Contract mixin for the relation weight: client fusion weighs a question that names someone through a named person
("Kwame's stepsister") at `relation_vector_weight`, any other question at `vector_weight` (`reme_es.store.fusion`)."""

from __future__ import annotations

from ._common import ASYNC
from ._common import ids as _ids
from .data import chunk, file_with, unit_vector


class RelationContract:
    """Hybrid search at the question's vector weight, as claimed."""

    pytestmark = ASYNC

    async def _corpus(self, store_factory):
        # BM25 ranks h00 first (the most "orbital mechanics"); the k-NN query (1, 0.9) ranks h06 first.
        store = await store_factory(hybrid="client", fusion="zscore", vector_weight=0.55, date_boost=0.0)
        pairs = []
        for i in range(12):
            path = f"digest/h{i:02d}.md"
            words = "orbital mechanics " * (12 - i) + f"filler{i}"
            pairs.append(file_with(path, [chunk(path, words, vector=unit_vector(1, i * 0.15))]))
        await store.upsert(pairs)
        return store, unit_vector(1, 0.9)

    async def test_a_question_naming_a_relation_is_fused_at_the_relation_weight(self, store_factory):
        from ..store.fusion import convex

        store, vector = await self._corpus(store_factory)
        store.admin.tune(relation_vector_weight=0.2)
        query = "What did Kwame's stepsister say about orbital mechanics?"
        result = await store.search(query, vector, 6, candidates=12)
        branches = await store.vector_search(vector, 12), await store.keyword_search(query, 12)
        leaning = convex(*branches, 0.2, "zscore")
        assert _ids(result.hits) == _ids(leaning[:6])
        assert _ids(leaning[:6]) != _ids(convex(*branches, 0.55, "zscore")[:6])  # the weight changes the ranking
        store.admin.tune(relation_vector_weight=None)  # off: the store's vector weight
        assert _ids((await store.search(query, vector, 6, candidates=12)).hits) == _ids(
            convex(*branches, 0.55, "zscore")[:6]
        )

    async def test_any_other_question_is_fused_at_the_vector_weight(self, store_factory):
        from ..store.fusion import convex

        store, vector = await self._corpus(store_factory)
        store.admin.tune(relation_vector_weight=0.2)
        query = "What did Kwame say about orbital mechanics?"
        result = await store.search(query, vector, 6, candidates=12)
        expected = convex(await store.vector_search(vector, 12), await store.keyword_search(query, 12), 0.55, "zscore")
        assert _ids(result.hits) == _ids(expected[:6])
