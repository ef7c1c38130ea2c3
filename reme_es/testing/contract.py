"""Contract mixins: one per capability, each test with exact expectations (ids, order, counts, reasons).

Every test takes the `store_factory` fixture (see `reme_es.testing`). Nothing here knows which engine runs.
"""

from __future__ import annotations

import pytest

from ..errors import BulkError, DimensionMismatch, InvalidFilter, InvalidInput, MappingError
from ..models import LinkScope
from .data import chunk, file_with, unit_vector

pytestmark = pytest.mark.asyncio


def _ids(hits) -> list[str]:
    return [h.chunk.id for h in hits]


def _paths(hits) -> set[str]:
    return {h.chunk.path for h in hits}


class WriteContract:
    """upsert / delete / clear / get_files, replace semantics, idempotence, bad input."""

    async def test_upsert_then_keyword_search_finds_exactly_the_matching_chunk(self, store_factory):
        store = await store_factory()
        a = chunk("digest/apollo.md", "Apollo guidance computer rope memory")
        b = chunk("digest/gemini.md", "Gemini capsule rendezvous radar")
        await store.upsert([file_with(a.path, [a]), file_with(b.path, [b])])
        assert _ids(await store.keyword_search("rope memory", 10)) == [a.id]
        assert _ids(await store.keyword_search("rendezvous", 10)) == [b.id]

    async def test_upsert_replaces_every_chunk_of_the_path(self, store_factory):
        store = await store_factory()
        path = "digest/notes.md"
        old = [chunk(path, "alpha original wording", 1), chunk(path, "beta original wording", 3)]
        await store.upsert([file_with(path, old)])
        new = [chunk(path, "gamma replacement wording", 1)]
        await store.upsert([file_with(path, new)])
        assert await store.keyword_search("original", 10) == []
        assert _ids(await store.keyword_search("wording", 10)) == [new[0].id]
        stored = await store.get_chunks({path: [c.id for c in old + new]})
        assert set(stored) == {new[0].id}
        (node,) = await store.get_files([path])
        assert node.chunk_ids == [new[0].id]

    async def test_repeating_an_upsert_is_idempotent(self, store_factory):
        store = await store_factory()
        pairs = [file_with(f"digest/f{i}.md", [chunk(f"digest/f{i}.md", f"shared token number{i}")]) for i in range(5)]
        await store.upsert(pairs)
        first = _ids(await store.keyword_search("shared token", 10))
        await store.upsert(pairs)
        stats = await store.stats()
        assert stats["chunks"]["docs"] == 5 and stats["files"]["docs"] == 5
        assert _ids(await store.keyword_search("shared token", 10)) == first
        assert len(first) == 5

    async def test_delete_removes_file_chunks_and_outlinks_and_skips_unknown_paths(self, store_factory):
        store = await store_factory()
        keep = chunk("digest/keep.md", "keeper text")
        gone = chunk("digest/gone.md", "doomed text")
        await store.upsert([file_with(keep.path, [keep]), file_with(gone.path, [gone], links=[keep.path])])
        assert await store.delete(["digest/unknown.md"]) == 0
        assert [f.path for f in await store.get_files()] == ["digest/gone.md", "digest/keep.md"]
        assert await store.delete([gone.path, "digest/unknown.md"]) == 1
        assert [f.path for f in await store.get_files()] == ["digest/keep.md"]
        assert await store.keyword_search("doomed", 10) == []
        assert await store.get_inlinks(keep.path, LinkScope.ALL) == []
        assert _ids(await store.keyword_search("keeper", 10)) == [keep.id]

    async def test_clear_drops_everything(self, store_factory):
        store = await store_factory()
        c = chunk("digest/a.md", "anything at all")
        await store.upsert([file_with(c.path, [c])])
        await store.clear()
        assert await store.get_files() == []
        assert await store.keyword_search("anything", 10) == []

    async def test_get_files_returns_every_file_beyond_one_page(self, store_factory):
        store = await store_factory()
        paths = [f"resource/bulk/{i:05d}.md" for i in range(1050)]
        await store.upsert([file_with(p, [chunk(p, f"text {i}")]) for i, p in enumerate(paths)])
        assert [f.path for f in await store.get_files()] == paths

    async def test_get_files_by_path_keeps_order_skips_missing_and_round_trips_fields(self, store_factory):
        store = await store_factory()
        a, b = chunk("digest/a.md", "first"), chunk("digest/b.md", "second")
        fm = {"name": "A node", "description": "about a", "tags": ["x", "y"]}
        await store.upsert(
            [
                file_with(a.path, [a], links=[("digest/b.md", "intro")], front_matter=fm, st_mtime=1716012345.123456),
                file_with(b.path, [b], st_mtime=1716012399.5),
            ]
        )
        got = await store.get_files(["digest/b.md", "digest/missing.md", "digest/a.md"])
        assert [f.path for f in got] == ["digest/b.md", "digest/a.md"]
        assert got[1].st_mtime == 1716012345.123456
        assert got[1].front_matter == fm
        assert [(lk.target, lk.anchor) for lk in got[1].links] == [("digest/b.md", "intro")]
        assert got[1].chunk_ids == [a.id]

    async def test_failed_bulk_item_is_reported_and_the_file_keeps_its_previous_content(self, store_factory):
        store = await store_factory()
        path, other = "digest/victim.md", "digest/bystander.md"
        before = chunk(path, "previous safe content")
        await store.upsert([file_with(path, [before])])
        bad = chunk(path, "replacement that cannot be stored", start=2**40)  # overflows the integer field
        fine = chunk(other, "bystander content arrives")
        with pytest.raises(BulkError) as err:
            await store.upsert([file_with(path, [bad]), file_with(other, [fine])])
        assert [f.id for f in err.value.failures] == [bad.id]
        assert err.value.failures[0].status == 400
        assert "start_line" in err.value.failures[0].reason
        assert _ids(await store.keyword_search("previous safe", 10)) == [before.id]
        assert await store.keyword_search("replacement", 10) == []
        assert (await store.get_files([path]))[0].chunk_ids == [before.id]
        assert _ids(await store.keyword_search("bystander", 10)) == [fine.id]

    async def test_a_large_upsert_in_concurrent_streams_reports_each_failure_and_keeps_the_rest(self, store_factory):
        # 600 chunk writes go out as two concurrent bulk requests; a failure in either is reported and taken back.
        store = await store_factory()
        paths = [f"resource/s{i:02d}.md" for i in range(60)]
        files = [
            file_with(p, [chunk(p, f"stream {i} part {j}", start=j * 3 + 1) for j in range(10)])
            for i, p in enumerate(paths)
        ]
        bad_early = chunk("resource/s05.md", "early failure", start=2**40)
        bad_late = chunk("resource/s55.md", "late failure", start=2**40)
        files[5][1].append(bad_early)
        files[55][1].append(bad_late)
        with pytest.raises(BulkError) as err:
            await store.upsert(files)
        assert sorted(f.id for f in err.value.failures) == sorted([bad_early.id, bad_late.id])
        stored = {f.path: len(f.chunk_ids) for f in await store.get_files()}
        assert stored == {f"resource/s{i:02d}.md": 10 for i in range(60) if i not in (5, 55)}
        assert await store.keyword_search("stream 5 part", 10, {"path": "resource/s05.md"}) == []
        assert len(await store.keyword_search("stream", 600)) == 580

    async def test_unicode_and_cjk_text_is_found_by_bm25(self, store_factory):
        store = await store_factory()
        ja = chunk("daily/2026-05-18.md", "私は東京に住んでいます")
        de = chunk("daily/2026-05-19.md", "Grüße aus München, café crème")
        await store.upsert([file_with(ja.path, [ja]), file_with(de.path, [de])])
        assert _ids(await store.keyword_search("東京", 10)) == [ja.id]
        assert _ids(await store.keyword_search("München", 10)) == [de.id]

    async def test_empty_query_or_zero_limit_gives_nothing(self, store_factory):
        store = await store_factory()
        c = chunk("digest/a.md", "some words", vector=unit_vector(1))
        await store.upsert([file_with(c.path, [c])])
        assert await store.keyword_search("", 10) == []
        assert await store.keyword_search("   ", 10) == []
        assert await store.keyword_search("words", 0) == []
        assert await store.vector_search(unit_vector(1), 0) == []
        assert (await store.search("", unit_vector(1), 10)).hits == []

    @pytest.mark.parametrize(
        "query", ["title:* OR _exists_:path", "/.*/", "((((", "\\", "path:digest/a.md", "*", "text:\"x\"~2 AND"]
    )
    async def test_query_syntax_is_never_interpreted(self, store_factory, query):
        store = await store_factory()
        plain = chunk("digest/a.md", "ordinary sentence without operators")
        await store.upsert([file_with(plain.path, [plain])])
        assert await store.keyword_search(query, 10) == []

    async def test_bad_input_raises_a_named_error_and_stores_nothing(self, store_factory):
        store = await store_factory()
        good = chunk("digest/good.md", "stored before the bad writes")
        await store.upsert([file_with(good.path, [good])])
        surrogate = chunk("digest/bad.md", "bad metadata", metadata={"k": "\udcff"})
        with pytest.raises(InvalidInput, match="digest/bad.md"):
            await store.upsert([file_with(surrogate.path, [surrogate])])
        huge = chunk("digest/huge.md", "x " * (5 << 20))
        with pytest.raises(InvalidInput, match="MiB"):
            await store.upsert([file_with(huge.path, [huge])])
        stray = chunk("digest/other.md", "chunk claiming another path")
        with pytest.raises(InvalidInput, match="belongs to file"):
            await store.upsert([file_with("digest/good.md", [stray])])
        assert [f.path for f in await store.get_files()] == ["digest/good.md"]
        assert _ids(await store.keyword_search("stored before", 10)) == [good.id]

    @pytest.mark.parametrize(
        "bad",
        [
            {"metadata": "not a dict"},
            {"start_date": "2026-13-45"},
            {"end_date": 20260518},
            {"tag": {"nested": "dict"}},
            {"paths": [1, 2]},
            {"prefix": {"a": 1}},
        ],
    )
    async def test_malformed_filters_raise_invalid_filter(self, store_factory, bad):
        store = await store_factory()
        with pytest.raises(InvalidFilter):
            await store.keyword_search("anything", 10, bad)

    async def test_existing_index_with_incompatible_mapping_is_reported(self, store_factory):
        store = await store_factory()
        await store.drop()
        await store.dialect.request("PUT", f"/{store.index('files')}", {"mappings": {"properties": {"path": {"type": "text"}}}})
        with pytest.raises(MappingError, match="path"):
            await store.ensure_indices()
        await store.dialect.request("DELETE", f"/{store.index('files')}")


_DATED = [
    ("daily/2026-05-17.md", {"tag": "a"}),
    ("daily/2026-05-18/meeting.md", {"tag": "b", "kind": "note"}),
    ("daily/2026-05-19.md", {"tag": "a", "kind": "note"}),
    ("daily/2026-05-20.txt", {"tag": "c"}),  # a dated segment with another suffix carries no date
    ("digest/indexing.md", {}),
    ("resource/2026-05-18/report.jsonl", {"tag": "b", "priority": 2}),
]


class FilterContract:
    """Every filter key alone and combined, applied server-side in keyword and vector search."""

    async def _filter_corpus(self, store_factory):
        store = await store_factory()
        pairs = []
        for i, (path, meta) in enumerate(_DATED):
            pairs.append(file_with(path, [chunk(path, f"memo entry {i}", vector=unit_vector(1, i * 0.01), metadata=meta)]))
        await store.upsert(pairs)
        return store

    async def _both(self, store, flt) -> set[str]:
        kw = _paths(await store.keyword_search("memo", 50, flt))
        vec = _paths(await store.vector_search(unit_vector(1), 50, flt))
        assert kw == vec, f"keyword and vector disagree for {flt}: {kw} vs {vec}"
        return kw

    @pytest.mark.parametrize(
        ("flt", "expected"),
        [
            ({"path": "digest/indexing.md"}, {"digest/indexing.md"}),
            ({"paths": ["daily/2026-05-17.md", "daily/2026-05-19.md"]}, {"daily/2026-05-17.md", "daily/2026-05-19.md"}),
            ({"paths": []}, set()),
            ({"path_prefix": "daily/2026-05-18"}, {"daily/2026-05-18/meeting.md"}),
            ({"prefixes": ["digest/", "resource/"]}, {"digest/indexing.md", "resource/2026-05-18/report.jsonl"}),
            (
                {"start_date": "2026-05-18", "end_date": "2026-05-18"},
                {"daily/2026-05-18/meeting.md", "resource/2026-05-18/report.jsonl", "daily/2026-05-20.txt",
                 "digest/indexing.md"},
            ),
            (
                {"start_date": "2026-05-18", "end_date": "2026-05-18", "strict_date_filter": True},
                {"daily/2026-05-18/meeting.md", "resource/2026-05-18/report.jsonl"},
            ),
            ({"start_date": "2026-05-19", "strict_date_filter": True}, {"daily/2026-05-19.md"}),
            ({"end_date": "2026-05-17", "strict_date_filter": True}, {"daily/2026-05-17.md"}),
            ({"tag": "a"}, {"daily/2026-05-17.md", "daily/2026-05-19.md"}),
            ({"tag": ["b", "c"]}, {"daily/2026-05-18/meeting.md", "daily/2026-05-20.txt", "resource/2026-05-18/report.jsonl"}),
            ({"metadata": {"kind": "note"}}, {"daily/2026-05-18/meeting.md", "daily/2026-05-19.md"}),
            ({"priority": 2}, {"resource/2026-05-18/report.jsonl"}),
            ({"tag": None}, {"digest/indexing.md"}),
            ({"tag": "a", "kind": "note"}, {"daily/2026-05-19.md"}),
            (
                {"path_prefix": "daily/", "start_date": "2026-05-18", "strict_date_filter": True, "kind": "note"},
                {"daily/2026-05-18/meeting.md", "daily/2026-05-19.md"},
            ),
        ],
    )
    async def test_filter(self, store_factory, flt, expected):
        store = await self._filter_corpus(store_factory)
        assert await self._both(store, flt) == expected

    async def test_no_filter_returns_everything(self, store_factory):
        store = await self._filter_corpus(store_factory)
        assert await self._both(store, None) == {p for p, _ in _DATED}


class LinkContract:
    """Outlinks and inlinks with REAL / VIRTUAL / ALL, before and after the target is deleted and re-added."""

    async def test_link_scopes_follow_the_target_being_deleted_and_re_added(self, store_factory):
        store = await store_factory()
        target = chunk("digest/target.md", "the target")
        src_b = chunk("digest/b.md", "links to target and a ghost")
        src_a = chunk("daily/2026-05-18.md", "also links to target")
        await store.upsert(
            [
                file_with(target.path, [target]),
                file_with(src_b.path, [src_b], links=[target.path, "digest/ghost.md", (target.path, "intro")]),
                file_with(src_a.path, [src_a], links=[target.path]),
            ]
        )
        out_all = [(lk.target, lk.anchor) for lk in await store.get_outlinks(src_b.path, LinkScope.ALL)]
        assert out_all == [("digest/target.md", ""), ("digest/ghost.md", ""), ("digest/target.md", "intro")]
        assert [lk.target for lk in await store.get_outlinks(src_b.path, LinkScope.REAL)] == [target.path, target.path]
        assert [lk.target for lk in await store.get_outlinks(src_b.path, LinkScope.VIRTUAL)] == ["digest/ghost.md"]
        inl = await store.get_inlinks(target.path, LinkScope.REAL)
        assert [(lk.source, lk.anchor) for lk in inl] == [
            ("daily/2026-05-18.md", ""),
            ("digest/b.md", ""),
            ("digest/b.md", "intro"),
        ]
        assert await store.get_inlinks(target.path, LinkScope.VIRTUAL) == []
        assert [lk.source for lk in await store.get_inlinks("digest/ghost.md", LinkScope.VIRTUAL)] == ["digest/b.md"]

        await store.delete(target.path)
        assert await store.get_inlinks(target.path, LinkScope.REAL) == []
        assert len(await store.get_inlinks(target.path, LinkScope.VIRTUAL)) == 3
        assert [lk.target for lk in await store.get_outlinks(src_b.path, LinkScope.REAL)] == []
        assert [lk.target for lk in await store.get_outlinks(src_b.path, LinkScope.VIRTUAL)] == [
            target.path, "digest/ghost.md", target.path,
        ]

        await store.upsert([file_with(target.path, [target])])
        assert len(await store.get_inlinks(target.path, LinkScope.REAL)) == 3
        assert await store.get_outlinks("digest/missing.md", LinkScope.ALL) == []

    async def test_rewriting_a_file_replaces_its_outlinks(self, store_factory):
        store = await store_factory()
        c = chunk("digest/a.md", "a")
        await store.upsert([file_with(c.path, [c], links=["digest/x.md", "digest/y.md"])])
        await store.upsert([file_with(c.path, [c], links=["digest/y.md"])])
        assert await store.get_inlinks("digest/x.md", LinkScope.ALL) == []
        assert [lk.source for lk in await store.get_inlinks("digest/y.md", LinkScope.ALL)] == ["digest/a.md"]

    async def test_expansion_is_bounded_and_marks_deleted_neighbours_virtual(self, store_factory):
        store = await store_factory()
        hub = chunk("digest/hub.md", "hub")
        spokes = [chunk(f"digest/s{i}.md", f"spoke {i}") for i in range(4)]
        await store.upsert(
            [file_with(hub.path, [hub], links=[s.path for s in spokes], front_matter={"name": "Hub"})]
            + [file_with(s.path, [s], links=[hub.path], front_matter={"name": f"S{i}", "description": f"d{i}"})
               for i, s in enumerate(spokes)]
        )
        exp = await store.expand([hub.path], max_per_direction=2)
        assert [(n.direction, n.path, n.name, n.description, n.real) for n in exp[hub.path]] == [
            ("out", "digest/s0.md", "S0", "d0", True),
            ("out", "digest/s1.md", "S1", "d1", True),
            ("in", "digest/s0.md", "S0", "d0", True),
            ("in", "digest/s1.md", "S1", "d1", True),
        ]
        await store.delete("digest/s0.md")
        exp = await store.expand([hub.path, "digest/s1.md"], max_per_direction=2)
        assert [(n.direction, n.path, n.real, n.name) for n in exp[hub.path]] == [
            ("out", "digest/s0.md", False, ""),
            ("out", "digest/s1.md", True, "S1"),
            ("in", "digest/s1.md", True, "S1"),
            ("in", "digest/s2.md", True, "S2"),
        ]
        assert [(n.direction, n.path, n.name) for n in exp["digest/s1.md"]] == [
            ("out", "digest/hub.md", "Hub"),
            ("in", "digest/hub.md", "Hub"),
        ]
        assert await store.traverse("digest/s1.md", depth=2) == {
            "digest/s1.md": 0, "digest/hub.md": 1, "digest/s0.md": 2, "digest/s2.md": 2, "digest/s3.md": 2,
        }


class VectorContract:
    """k-NN: cosine scores, filter inside the k-NN clause, dimension checks."""

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
        stored = await store.get_chunks({c.path: [c.id]}, with_vectors=True)
        assert stored[c.id]["embedding"] == pytest.approx(vec, abs=1e-6)
        assert "embedding" not in (await store.get_chunks({c.path: [c.id]}))[c.id]
        assert all(h.chunk.embedding is None for h in await store.vector_search(vec, 1))

    async def test_unchanged_chunks_are_not_written_again(self, store_factory):
        from ..models import doc_id

        store = await store_factory()
        kept = chunk("digest/u.md", "stays as it is", vector=unit_vector(1))
        edited = chunk("digest/u.md", "first words", start=3, vector=unit_vector(0, 1))
        await store.upsert([file_with(kept.path, [kept, edited])])
        assert await store.vector_ids({kept.path: [kept.id, edited.id, "no-such-chunk"]}) == {kept.id, edited.id}
        new = chunk("digest/u.md", "other words", start=3, vector=unit_vector(0, 0, 1))
        stray = chunk("digest/u.md", "never stored", start=5, vector=unit_vector(0, 0, 0, 1))
        bare = kept.model_copy(update={"embedding": None})
        outcome = await store.upsert([file_with(kept.path, [bare, new, stray])], unchanged={kept.id, stray.id})
        written = {i for index, i in outcome.versions if index.startswith(store.index("chunks"))}
        assert written == {doc_id(new.id), doc_id(stray.id)}
        assert _ids(await store.vector_search(unit_vector(1), 1)) == [kept.id]
        stored = await store.get_chunks({kept.path: [kept.id, edited.id, new.id, stray.id]}, with_vectors=True)
        assert sorted(stored) == sorted([kept.id, new.id, stray.id])
        assert stored[kept.id]["embedding"] == pytest.approx(kept.embedding, abs=1e-6)

    async def test_wrong_dimension_is_refused_on_write_and_query(self, store_factory):
        store = await store_factory()
        bad = chunk("digest/bad.md", "three dims", vector=[0.1, 0.2, 0.3])
        with pytest.raises(DimensionMismatch, match="3-d"):
            await store.upsert([file_with(bad.path, [bad])])
        assert await store.get_files() == []
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
        missing = [c async for batch in store.chunks_without_vectors() for c in batch]
        assert [c.id for c in missing] == [c1.id]
        await store.set_vectors({(c1.path, c1.id): unit_vector(1)})
        assert [c async for batch in store.chunks_without_vectors() for c in batch] == []
        assert _ids(await store.vector_search(unit_vector(1), 1)) == [c1.id]


class HybridContract:
    """Native fusion and client fusion agree where their formulas agree; fallback; filters in both branches."""

    async def _hybrid_corpus(self, store_factory, **kwargs):
        store = await store_factory(**kwargs)
        pairs = []
        for i in range(12):
            path = f"{'daily/2026-05-18' if i % 2 else 'digest'}/h{i:02d}.md"
            words = "orbital mechanics " * (12 - i) + f"filler{i}"
            pairs.append(file_with(path, [chunk(path, words, vector=unit_vector(1, i * 0.15))]))
        await store.upsert(pairs)
        return store

    async def test_native_and_client_fusion_give_the_same_ranking(self, store_factory):
        # With equal weights ReMe's weighted RRF is plain RRF, which is what the server's RRF processor computes.
        store = await self._hybrid_corpus(store_factory, vector_weight=0.5, pipeline="rrf")
        if not store.native_hybrid_available():
            pytest.skip(f"{store.caps.engine} {store.caps.version} has no native RRF hybrid")
        native = await store.search("orbital mechanics", unit_vector(1), 8)
        store.hybrid = "client"
        client = await store.search("orbital mechanics", unit_vector(1), 8)
        assert (native.fusion, client.fusion) == ("native", "client")
        assert _ids(native.hits) == _ids(client.hits)
        assert [round(h.score, 6) for h in native.hits] == [round(2 * h.score, 6) for h in client.hits]

    async def test_a_response_that_bypassed_the_pipeline_fails_loudly(self, store_factory):
        from ..errors import RequestFailed

        store = await self._hybrid_corpus(store_factory)
        if not store.native_hybrid_available():
            pytest.skip(f"{store.caps.engine} {store.caps.version} has no native hybrid")
        # Replace the pipeline with one that has no fusion processor: the server then returns raw sub-query scores.
        await store.dialect.request("PUT", f"/_search/pipeline/{store.pipeline_name()}", {"description": "bare"})
        with pytest.raises(RequestFailed, match="did not go through"):
            await store.search("orbital mechanics", unit_vector(1), 5)
        await store.ensure_pipeline()
        assert (await store.search("orbital mechanics", unit_vector(1), 5)).fusion == "native"

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
        stored = await store.get_chunks(by_path)
        for hit in result.hits:
            source = stored[hit.chunk.id]
            assert (hit.chunk.text, hit.chunk.start_line, hit.chunk.end_line) == (
                source["text"], source["start_line"], source["end_line"]
            )
            assert hit.chunk.text.startswith("orbital mechanics") and hit.chunk.embedding is None

    async def test_fused_hits_are_read_at_the_searched_refresh_point(self, store_factory):
        # An unrefreshed write has deleted chunks the last refresh still shows: they come back whole, as the
        # search saw them (the fetch reads the refreshed view, not the latest writes).
        store = await self._hybrid_corpus(store_factory, hybrid="client")
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


class MaintenanceContract:
    """optimize = force-merge that expunges deletes past a threshold, with before/after figures."""

    async def test_optimize_merges_only_past_the_deleted_ratio_and_reports_figures(self, store_factory):
        # Soft-deleted documents stay until the shard's retention lease moves on (about 30 s on a quiet shard),
        # so the deleted count right after the merge is not asserted; the merge itself and its report are.
        store = await store_factory()
        pairs = [file_with(f"digest/o{i}.md", [chunk(f"digest/o{i}.md", f"doc {i}")]) for i in range(20)]
        await store.upsert(pairs)
        await store.delete([f"digest/o{i}.md" for i in range(10)])
        quiet = await store.optimize(deleted_ratio=0.99)
        assert quiet["merged"] == []
        report = await store.optimize(deleted_ratio=0.1)
        assert "chunks" in report["merged"] and "links" not in report["merged"]
        assert report["before"]["chunks"]["deleted"] >= 10
        assert report["after"]["chunks"]["docs"] == 10
        full = await store.optimize(max_segments=1)
        assert full["after"]["chunks"]["segments"] == 1
        assert full["after"]["files"]["docs"] == 10
        assert [f.path for f in await store.get_files()] == [f"digest/o{i}.md" for i in range(10, 20)]


    async def test_reindex_keeps_every_vector(self, store_factory):
        # Vectors are kept out of the stored `_source` (OpenSearch derived source, Elasticsearch's default): the copy
        # must still carry them, or the new index answers k-NN with nothing and nobody notices until a search.
        from ..maintenance import reindex
        from ..templates import IndexOptions

        store = await store_factory()
        kept = [chunk(f"digest/r{i}.md", f"reindexed {i}", vector=unit_vector(1, i * 0.1)) for i in range(5)]
        await store.upsert([file_with(c.path, [c]) for c in kept])
        results = await reindex(store, IndexOptions(dims=store.dims))
        assert [(r["kind"], r["docs"], r["vectors"]) for r in results] == [
            ("chunks", 5, "kept"), ("files", 5, "none"), ("links", 0, "none")
        ]
        assert [c async for batch in store.chunks_without_vectors() for c in batch] == []
        stored = await store.get_chunks({c.path: [c.id] for c in kept}, with_vectors=True)
        assert sorted(stored) == sorted(c.id for c in kept)
        for c in kept:
            assert stored[c.id]["embedding"] == pytest.approx(c.embedding, abs=1e-6)
        assert _ids(await store.vector_search(unit_vector(1, 0.4), 1)) == [kept[4].id]


class StoreContract(WriteContract, FilterContract, LinkContract, VectorContract, HybridContract, MaintenanceContract):
    """The whole contract."""
