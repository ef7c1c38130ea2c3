"""Contract mixins for vectors and hybrid search (see `reme_es.testing.contract`)."""

from __future__ import annotations

import pytest

from ..core.errors import DimensionMismatch
from ..core.models import doc_id
from ._common import ASYNC
from ._common import ids as _ids
from ._common import paths as _paths
from .data import chunk, file_with, unit_vector
from .requirements import require


class VectorContract:
    """k-NN: cosine scores, filter inside the k-NN clause, dimension checks."""

    pytestmark = ASYNC

    async def test_scores_are_cosine_similarity(self, store_factory):
        store = await store_factory()
        same = chunk("digest/same.md", "same", vector=unit_vector(1))
        ortho = chunk("digest/ortho.md", "orthogonal", vector=unit_vector(0, 1))
        opposite = chunk("digest/opp.md", "opposite", vector=unit_vector(-1))
        await store.upsert([file_with(c.path, [c]) for c in (same, ortho, opposite)])
        hits = await store.vector_search(unit_vector(1), 3)
        assert _ids(hits) == [same.id, ortho.id, opposite.id]
        assert [round(h.scores["vector"], 4) for h in hits] == [1.0, 0.0, -1.0]
        assert all(h.scores["score"] == h.scores["vector"] for h in hits)

    async def test_selective_filter_still_returns_limit_hits(self, store_factory):
        store = await store_factory()
        pairs = []
        for i in range(300):
            path = f"{'digest' if i % 30 == 0 else 'resource'}/n{i:03d}.md"
            pairs.append(file_with(path, [chunk(path, f"n {i}", vector=unit_vector(1, (i % 7) * 0.1, i * 0.001))]))
        await store.upsert(pairs)
        hits = await store.vector_search(unit_vector(1), 10, {"path_prefix": "digest/"})
        assert len(hits) == 10
        assert _paths(hits) == {f"digest/n{i:03d}.md" for i in range(0, 300, 30)}

    async def test_stored_vectors_can_be_read_back_for_reuse(self, store_factory):
        store = await store_factory()
        vec = unit_vector(0.6, 0.8)
        c = chunk("digest/a.md", "kept vector", vector=vec)
        await store.upsert([file_with(c.path, [c])])
        stored = await store.vectors.get_chunks({c.path: [c.id]}, with_vectors=True)
        assert stored[c.id]["embedding"] == pytest.approx(vec, abs=1e-6)
        assert "embedding" not in (await store.vectors.get_chunks({c.path: [c.id]}))[c.id]
        assert all(h.chunk.embedding is None for h in await store.vector_search(vec, 1))

    async def test_unchanged_chunks_are_not_written_again(self, store_factory):
        store = await store_factory()
        require(store, "vectors")
        kept = chunk("digest/u.md", "stays as it is", vector=unit_vector(1))
        edited = chunk("digest/u.md", "first words", start=3, vector=unit_vector(0, 1))
        await store.upsert([file_with(kept.path, [kept, edited])])
        assert await store.vectors.vector_ids({kept.path: [kept.id, edited.id, "no-such-chunk"]}) == {
            kept.id,
            edited.id,
        }
        new = chunk("digest/u.md", "other words", start=3, vector=unit_vector(0, 0, 1))
        stray = chunk("digest/u.md", "never stored", start=5, vector=unit_vector(0, 0, 0, 1))
        bare = kept.model_copy(update={"embedding": None})
        outcome = await store.upsert([file_with(kept.path, [bare, new, stray])], unchanged={kept.id, stray.id})
        written = {i for index, i in outcome.versions if index == store.index("chunks")}
        assert written == {doc_id(new.id), doc_id(stray.id)}
        assert _ids(await store.vector_search(unit_vector(1), 1)) == [kept.id]
        stored = await store.vectors.get_chunks({kept.path: [kept.id, edited.id, new.id, stray.id]}, with_vectors=True)
        assert sorted(stored) == sorted([kept.id, new.id, stray.id])
        assert stored[kept.id]["embedding"] == pytest.approx(kept.embedding, abs=1e-6)

    async def test_wrong_dimension_is_refused_on_write_and_query(self, store_factory):
        store = await store_factory()
        bad = chunk("digest/bad.md", "three dims", vector=[0.1, 0.2, 0.3])
        with pytest.raises(DimensionMismatch, match="3-d"):
            await store.upsert([file_with(bad.path, [bad])])
        assert await store.links.get_files() == []
        with pytest.raises(DimensionMismatch, match="3-d"):
            await store.vector_search([0.1, 0.2, 0.3], 5)

    async def test_reopening_with_another_dimension_is_refused(self, store_factory):
        store = await store_factory()
        with pytest.raises(DimensionMismatch, match="reindex"):
            await store_factory(dims=16, prefix=store.prefix)

    async def test_chunks_without_vectors_can_be_backfilled(self, store_factory):
        store = await store_factory()
        c1 = chunk("digest/a.md", "no vector yet")
        c2 = chunk("digest/b.md", "has a vector", vector=unit_vector(0, 1))
        await store.upsert([file_with(c1.path, [c1]), file_with(c2.path, [c2])])
        missing = [c async for batch in store.vectors.without_vectors() for c in batch]
        assert [c.id for c in missing] == [c1.id]
        await store.vectors.set_vectors({(c1.path, c1.id): unit_vector(1)})
        assert [c async for batch in store.vectors.without_vectors() for c in batch] == []
        assert _ids(await store.vector_search(unit_vector(1), 1)) == [c1.id]


class HybridContract:
    """Native fusion and client fusion agree where their formulas agree; fallback; filters in both branches."""

    pytestmark = ASYNC

    async def _hybrid_corpus(self, store_factory, **kwargs):
        store = await store_factory(**kwargs)
        pairs = []
        for i in range(12):
            path = f"{'daily/2026-05-18' if i % 2 else 'digest'}/h{i:02d}.md"
            words = "orbital mechanics " * (12 - i) + f"filler{i}"
            pairs.append(file_with(path, [chunk(path, words, vector=unit_vector(1, i * 0.15))]))
        await store.upsert(pairs)
        return store

    @pytest.mark.parametrize("hybrid", ["client", "auto"])
    async def test_hybrid_search_shows_a_repeated_text_once_at_its_best_rank(self, store_factory, hybrid):
        # One line said in three daily notes (same text, so the same vector and BM25 score) among distinct notes:
        # with `collapse` the ranking keeps its best copy and counts the two others; without it all three come back.
        import hashlib

        store = await store_factory(hybrid=hybrid, fusion="minmax", vector_weight=0.5, collapse=True)
        said = "orbital orbital long day talk tomorrow"
        texts = [said, said, f"orbital mechanics {said[-8:]}", said] + [f"orbital note {i}" for i in range(4)]
        pairs = []
        for i, text in enumerate(texts):
            path = f"daily/2026-05-{10 + i}/n{i}.md"
            c = chunk(path, text, vector=unit_vector(1, 0.3 if text == said else 0.1 * i))
            c = c.model_copy(update={"hash": hashlib.sha256(text.encode()).hexdigest()})
            pairs.append(file_with(path, [c]))
        await store.upsert(pairs)
        query, vector = "orbital tomorrow", unit_vector(1, 0.3)
        folded = await store.search(query, vector, 8)
        store.admin.tune(collapse=False)
        every = await store.search(query, vector, 8)
        assert [h.chunk.text for h in every.hits].count(said) == 3
        assert [h.chunk.text for h in folded.hits].count(said) == 1
        copies = [h for h in every.hits if h.chunk.text == said]  # the same text: the same scores
        newest = max(copies, key=lambda h: h.chunk.path)  # tied copies are shown by the latest path
        expected = [newest if h is copies[0] else h for h in every.hits if h.chunk.text != said or h is copies[0]]
        assert _ids(folded.hits) == _ids(expected)
        assert [h.scores.get("repeats", 0) for h in folded.hits] == [2 if h is newest else 0 for h in expected]

    @pytest.mark.parametrize("hybrid", ["client", "auto"])
    async def test_copies_that_fill_the_candidates_still_leave_limit_distinct_hits(self, store_factory, hybrid):
        # Twelve copies outrank two distinct notes in both branches and fill the 5 candidates per branch: the search
        # asks again, deeper, so the limit of 2 still gets two distinct hits, and the kept copy counts all 11 others.
        import hashlib

        store = await store_factory(hybrid=hybrid, fusion="minmax", vector_weight=0.5, collapse=True)
        said = "orbital orbital orbital tomorrow"
        texts = [said] * 12 + ["orbital note one", "orbital note two"]
        pairs = []
        for i, text in enumerate(texts):
            path = f"daily/2026-06-{i + 1:02d}/n.md"
            c = chunk(path, text, vector=unit_vector(1, 0.3 if text == said else 0.9 + i * 0.1))
            pairs.append(file_with(path, [c.model_copy(update={"hash": hashlib.sha256(text.encode()).hexdigest()})]))
        await store.upsert(pairs)
        result = await store.search("orbital tomorrow", unit_vector(1, 0.3), 2, candidates=5)
        assert [h.chunk.text for h in result.hits] == [said, "orbital note one"]
        assert result.hits[0].scores["repeats"] == 11
        assert result.hits[0].chunk.path == "daily/2026-06-12/n.md"  # the newest copy

    async def test_native_and_client_fusion_give_the_same_ranking(self, store_factory):
        # With equal weights ReMe's weighted RRF is plain RRF, which is what the server's RRF processor computes.
        # the fusion alone: the note boost (which re-scores either fused list) off
        store = await self._hybrid_corpus(store_factory, vector_weight=0.5, fusion="rrf", note_boost=0.0)
        require(store, "native_hybrid")
        native = await store.search("orbital mechanics", unit_vector(1), 8)
        store.hybrid = "client"
        client = await store.search("orbital mechanics", unit_vector(1), 8)
        assert (native.fusion, client.fusion) == ("native", "client")
        assert _ids(native.hits) == _ids(client.hits)
        assert [round(h.score, 6) for h in native.hits] == [round(2 * h.score, 6) for h in client.hits]

    @pytest.mark.parametrize("method", ["minmax", "zscore"])
    async def test_client_fusion_follows_the_configured_method(self, store_factory, method):
        from ..store.fusion import convex

        # the fusion alone: the note boost (which re-scores the fused list) off
        store = await self._hybrid_corpus(
            store_factory, hybrid="client", fusion=method, vector_weight=0.4, note_boost=0.0
        )
        query, vector = "orbital mechanics filler3", unit_vector(1, 0.9)
        result = await store.search(query, vector, 6, candidates=12)
        expected = convex(await store.vector_search(vector, 12), await store.keyword_search(query, 12), 0.4, method)
        assert result.fusion == "client"
        assert _ids(result.hits) == _ids(expected[:6])
        assert [round(h.score, 6) for h in result.hits] == [round(h.score, 6) for h in expected[:6]]

    async def test_client_fusion_rescores_its_head_by_term_proximity(self, store_factory):
        from ..store.fusion import PROXIMITY_TOP, convex, proximity_rescore

        store = await self._hybrid_corpus(store_factory, hybrid="client", fusion="zscore", vector_weight=0.5)
        store.admin.tune(proximity=0.3)
        query, vector = "filler7 orbital", unit_vector(1, 0.3)
        result = await store.search(query, vector, 5, candidates=12)
        fused = convex(await store.vector_search(vector, 12), await store.keyword_search(query, 12), 0.5, "zscore")
        expected = proximity_rescore(fused[:PROXIMITY_TOP], query, top=PROXIMITY_TOP, boost=0.3)[:5]
        assert _ids(result.hits) == _ids(expected)
        assert [round(h.scores["proximity"], 6) for h in result.hits] == [
            round(h.scores["proximity"], 6) for h in expected
        ]

    async def _with_and_without_feedback(self, store_factory, long: bool):
        # Six "orbital" chunks (the first the most orbital, holding "hohmann transfer") and digest/x.md, which shares
        # no term with the query "orbital"; `long`: every orbital chunk has the terms feedback needs. Searched for
        # "orbital" without feedback, then with it (the store, both results, the query and its vector).
        from ..store.fusion import FEEDBACK_MIN_TERMS

        store = await store_factory(hybrid="client", fusion="zscore", vector_weight=0.55, feedback=0, note_boost=0.0)
        pad = FEEDBACK_MIN_TERMS // 2 if long else 0
        texts = ["orbital orbital hohmann transfer" + " hohmann transfer" * pad] + [
            f"orbital mechanics filler{i}" + " mechanics filler" * pad for i in range(1, 6)
        ]
        pairs = [
            file_with(f"digest/f{i}.md", [chunk(f"digest/f{i}.md", t, vector=unit_vector(1, 0.2 * i))])
            for i, t in enumerate(texts)
        ]
        far = chunk("digest/x.md", "hohmann transfer budget", vector=unit_vector(0, 1))
        pairs.append(file_with("digest/x.md", [far]))
        await store.upsert(pairs)
        query, vector = "orbital", unit_vector(1, 0.5)
        plain = await store.search(query, vector, 7, candidates=7)
        store.admin.tune(feedback=1)
        return store, plain, await store.search(query, vector, 7, candidates=7), query, vector

    async def test_short_top_hits_do_not_feed_back(self, store_factory):
        # A hit of fewer than FEEDBACK_MIN_TERMS terms (a dialog turn) is no ground to expand a query from: with
        # feedback on, the search ranks and scores exactly as without it.
        _, plain, result, _, _ = await self._with_and_without_feedback(store_factory, long=False)
        assert result.keyword_hits == plain.keyword_hits == 6
        assert [(h.chunk.id, round(h.score, 6)) for h in result.hits] == [
            (h.chunk.id, round(h.score, 6)) for h in plain.hits
        ]

    async def test_client_fusion_with_feedback_reaches_a_chunk_only_the_top_hit_explains(self, store_factory):
        # "hohmann transfer budget" shares no term with the query: only the more_like_this of the top keyword hit
        # (which holds "hohmann transfer") brings it into the keyword branch; the k-NN query moves toward the top
        # vector hit's stored vector.
        from ..adapters.dialect import feedback_keyword_body
        from ..core.models import Chunk, SearchFilter
        from ..store.fusion import FEEDBACK_BETA, FEEDBACK_BOOST, FEEDBACK_TERMS, convex, rocchio
        from ..store.vectors import branch_hit

        store, plain, result, query, vector = await self._with_and_without_feedback(store_factory, long=True)
        assert (plain.keyword_hits, result.keyword_hits) == (6, 7)  # digest/x.md: found through feedback only
        first_k, first_v = await store.keyword_search(query, 7), await store.vector_search(vector, 1, k=7)
        assert [h.chunk.path for h in first_k[:1]] == ["digest/f0.md"]  # the most "orbital" chunk
        moved = rocchio(
            vector,
            [
                (await store.admin.stored_chunks({first_v[0].chunk.path: [first_v[0].chunk.id]}, with_vectors=True))[
                    first_v[0].chunk.id
                ]["embedding"]
            ],
            FEEDBACK_BETA,
        )
        like = [(store.admin.stored_id(doc_id(first_k[0].chunk.id)), store.admin.routing("digest/f0.md"))]
        body = feedback_keyword_body(
            store.index("chunks"),
            query,
            like,
            7,
            store.admin.filter(SearchFilter()),
            None,
            FEEDBACK_TERMS,
            FEEDBACK_BOOST,
        )
        keyword = [
            branch_hit("keyword", c.score, Chunk(id=c.chunk_id, path=c.path, text=""))
            for c in await store.admin.ranked(store.index("chunks"), body)
        ]
        assert "digest/x.md" in [h.chunk.path for h in keyword]
        expected = convex(await store.vector_search(moved, 7, k=7), keyword, 0.55, "zscore")
        assert _ids(result.hits) == _ids(expected[:7])
        assert [round(h.score, 6) for h in result.hits] == [round(h.score, 6) for h in expected[:7]]

    async def test_a_response_that_bypassed_the_pipeline_fails_loudly(self, store_factory):
        from ..core.errors import RequestFailed

        store = await self._hybrid_corpus(store_factory)
        require(store, "search_pipeline")
        # Replace the pipeline with one that has no fusion processor: the server then returns raw sub-query scores.
        await store.admin.put_pipeline(store.pipeline_name(), {"description": "bare"})
        with pytest.raises(RequestFailed, match="did not go through"):
            await store.search("orbital mechanics", unit_vector(1), 5)
        await store.ensure_pipeline()
        assert (await store.search("orbital mechanics", unit_vector(1), 5)).fusion == "native"

    async def test_a_deleted_pipeline_is_recreated_by_the_next_search(self, store_factory):
        store = await self._hybrid_corpus(store_factory)
        require(store, "search_pipeline")
        expected = await store.search("orbital mechanics", unit_vector(1), 5)
        await store.admin.delete_pipeline(store.pipeline_name())
        assert not await store.admin.pipeline_exists(store.pipeline_name())
        again = await store.search("orbital mechanics", unit_vector(1), 5)
        assert again.fusion == "native" and _ids(again.hits) == _ids(expected.hits)
        assert await store.admin.pipeline_exists(store.pipeline_name())

    async def test_client_fusion_is_used_when_the_server_lacks_hybrid(self, store_factory):
        store = await self._hybrid_corpus(store_factory)
        store.caps = store.caps.model_copy(
            update={"hybrid_query": False, "rrf_processor": False, "normalization_processor": False}
        )
        result = await store.search("orbital mechanics", unit_vector(1), 5)
        assert result.fusion == "client"
        assert (result.keyword_hits, result.vector_hits) == (12, 12)
        assert all({"keyword", "vector", "score"} <= set(h.scores) for h in result.hits)

    @pytest.mark.parametrize("mode", ["auto", "client"])
    async def test_filters_apply_in_both_branches(self, store_factory, mode):
        store = await self._hybrid_corpus(store_factory, hybrid=mode)
        result = await store.search("orbital mechanics", unit_vector(1), 20, {"path_prefix": "digest/"})
        assert _paths(result.hits) == {f"digest/h{i:02d}.md" for i in range(0, 12, 2)}
        assert len(result.hits) == 6

    @pytest.mark.parametrize("mode", ["auto", "client"])
    async def test_fused_hits_carry_their_stored_chunks(self, store_factory, mode):
        # Fusion ranks lean candidates (ids and scores); the returned hits must still be whole chunks.
        store = await self._hybrid_corpus(store_factory, hybrid=mode)
        result = await store.search("orbital mechanics", unit_vector(1), 4)
        assert len(result.hits) == 4
        by_path = {h.chunk.path: [h.chunk.id] for h in result.hits}
        stored = await store.vectors.get_chunks(by_path)
        for hit in result.hits:
            source = stored[hit.chunk.id]
            assert (hit.chunk.text, hit.chunk.start_line, hit.chunk.end_line) == (
                source["text"],
                source["start_line"],
                source["end_line"],
            )
            assert hit.chunk.text.startswith("orbital mechanics") and hit.chunk.embedding is None

    async def test_fused_hits_are_read_at_the_searched_refresh_point(self, store_factory):
        # An unrefreshed write has deleted chunks the last refresh still shows: they come back whole, as the
        # search saw them (the fetch reads the refreshed view, not the latest writes).
        store = await self._hybrid_corpus(store_factory, hybrid="client")
        require(store, "refresh_point")
        before = await store.search("orbital mechanics", unit_vector(1), 5)
        await store.delete([h.chunk.path for h in before.hits], refresh=False)
        after = await store.search("orbital mechanics", unit_vector(1), 5)
        assert [(h.chunk.id, h.chunk.text) for h in after.hits] == [(h.chunk.id, h.chunk.text) for h in before.hits]
        await store.refresh()
        now = await store.search("orbital mechanics", unit_vector(1), 5)
        assert not {h.chunk.id for h in before.hits} & set(_ids(now.hits))

    async def test_min_score_and_limit_apply_after_fusion(self, store_factory):
        store = await self._hybrid_corpus(store_factory, hybrid="client")
        full = await store.search("orbital mechanics", unit_vector(1), 12)
        cut = full.hits[4].score
        result = await store.search("orbital mechanics", unit_vector(1), 3, min_score=cut)
        assert _ids(result.hits) == _ids(full.hits[:3])
        result = await store.search("orbital mechanics", unit_vector(1), 12, min_score=cut)
        assert _ids(result.hits) == _ids([h for h in full.hits if h.score >= cut])
