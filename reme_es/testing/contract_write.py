"""Contract mixins for writes and filters (see `reme_es.testing.contract`)."""

from __future__ import annotations

from typing import Any

import pytest

from ..core.errors import BulkError, InvalidFilter, InvalidInput, MappingError
from ..core.models import LinkScope
from ._common import ASYNC
from ._common import ids as _ids
from ._common import paths as _paths
from .data import chunk, file_with, unit_vector


class WriteContract:
    """upsert / delete / clear / get_files, replace semantics, idempotence, bad input."""

    pytestmark = ASYNC

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
        stored = await store.vectors.get_chunks({path: [c.id for c in old + new]})
        assert set(stored) == {new[0].id}
        (node,) = await store.links.get_files([path])
        assert node.chunk_ids == [new[0].id]

    async def test_repeating_an_upsert_is_idempotent(self, store_factory, reme_es_neighbours):
        store = await store_factory()
        pairs = [file_with(f"digest/f{i}.md", [chunk(f"digest/f{i}.md", f"shared token number{i}")]) for i in range(5)]
        await store.upsert(pairs)
        first = _ids(await store.keyword_search("shared token", 10))
        await store.upsert(pairs)
        counts, stats = await store.inspect.health_counts(), await store.admin.stats()
        assert (counts["chunks"], counts["files"]) == (5, 5)  # this workspace's
        copies = 1 + reme_es_neighbours  # the index holds each workspace's own copy
        assert stats["chunks"]["docs"] == 5 * copies and stats["files"]["docs"] == 5 * copies
        assert _ids(await store.keyword_search("shared token", 10)) == first
        assert len(first) == 5

    async def test_delete_removes_file_chunks_and_outlinks_and_skips_unknown_paths(self, store_factory):
        store = await store_factory()
        keep = chunk("digest/keep.md", "keeper text")
        gone = chunk("digest/gone.md", "doomed text")
        await store.upsert([file_with(keep.path, [keep]), file_with(gone.path, [gone], links=[keep.path])])
        assert await store.delete(["digest/unknown.md"]) == 0
        assert [f.path for f in await store.links.get_files()] == ["digest/gone.md", "digest/keep.md"]
        assert await store.delete([gone.path, "digest/unknown.md"]) == 1
        assert [f.path for f in await store.links.get_files()] == ["digest/keep.md"]
        assert await store.keyword_search("doomed", 10) == []
        assert await store.links.inlinks(keep.path, LinkScope.ALL) == []
        assert _ids(await store.keyword_search("keeper", 10)) == [keep.id]

    async def test_clear_drops_everything(self, store_factory):
        store = await store_factory()
        c = chunk("digest/a.md", "anything at all")
        await store.upsert([file_with(c.path, [c])])
        await store.clear()
        assert await store.links.get_files() == []
        assert await store.keyword_search("anything", 10) == []

    async def test_get_files_returns_every_file_beyond_one_page(self, store_factory):
        store = await store_factory()
        paths = [f"resource/bulk/{i:05d}.md" for i in range(1050)]
        await store.upsert([file_with(p, [chunk(p, f"text {i}")]) for i, p in enumerate(paths)])
        assert [f.path for f in await store.links.get_files()] == paths

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
        got = await store.links.get_files(["digest/b.md", "digest/missing.md", "digest/a.md"])
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
        assert (await store.links.get_files([path]))[0].chunk_ids == [before.id]
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
        stored = {f.path: len(f.chunk_ids) for f in await store.links.get_files()}
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

    async def test_names_inside_wikilinks_and_file_names_are_searchable(self, store_factory):
        store = await store_factory()
        link = chunk("daily/2026-05-18.md", "Lunch with [[digest/people/mira.md]] about the project:atlas budget")
        named = chunk("digest/people/mira.md", "Notes by Mira on planning")
        other = chunk("digest/other.md", "Nothing about people here, nor any budgets")
        await store.upsert([file_with(c.path, [c]) for c in (link, named, other)])
        assert set(_ids(await store.keyword_search("Mira", 10))) == {link.id, named.id}
        assert _ids(await store.keyword_search("atlas", 10)) == [link.id]
        assert _ids(await store.keyword_search("mira.md", 10))[0] == link.id  # the whole name ranks first
        # English stemming is kept where the server has it (budgets ~ budget); the Elasticsearch test node has none
        budgets = set(_ids(await store.keyword_search("budgets", 10)))
        assert budgets == ({other.id, link.id} if store.caps.english_analyzer else {other.id})

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
        "query", ["title:* OR _exists_:path", "/.*/", "((((", "\\", "path:digest/a.md", "*", 'text:"x"~2 AND']
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
        assert [f.path for f in await store.links.get_files()] == ["digest/good.md"]
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
        await store.admin.create_index(store.index("files"), {"mappings": {"properties": {"path": {"type": "text"}}}})
        with pytest.raises(MappingError, match="path"):
            await store.ensure_indices()
        await store.admin.delete_index(store.index("files"))


_DATED: list[tuple[str, dict[str, Any]]] = [
    ("daily/2026-05-17.md", {"tag": "a"}),
    ("daily/2026-05-18/meeting.md", {"tag": "b", "kind": "note"}),
    ("daily/2026-05-19.md", {"tag": "a", "kind": "note"}),
    ("daily/2026-05-20.txt", {"tag": "c"}),  # a dated segment with another suffix carries no date
    ("digest/indexing.md", {}),
    ("resource/2026-05-18/report.jsonl", {"tag": "b", "priority": 2}),
]


class FilterContract:
    """Every filter key alone and combined, applied server-side in keyword and vector search."""

    pytestmark = ASYNC

    async def _filter_corpus(self, store_factory):
        store = await store_factory()
        pairs = []
        for i, (path, meta) in enumerate(_DATED):
            memo = chunk(path, f"memo entry {i}", vector=unit_vector(1, i * 0.01), metadata=meta)
            pairs.append(file_with(path, [memo]))
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
                {
                    "daily/2026-05-18/meeting.md",
                    "resource/2026-05-18/report.jsonl",
                    "daily/2026-05-20.txt",
                    "digest/indexing.md",
                },
            ),
            (
                {"start_date": "2026-05-18", "end_date": "2026-05-18", "strict_date_filter": True},
                {"daily/2026-05-18/meeting.md", "resource/2026-05-18/report.jsonl"},
            ),
            ({"start_date": "2026-05-19", "strict_date_filter": True}, {"daily/2026-05-19.md"}),
            ({"end_date": "2026-05-17", "strict_date_filter": True}, {"daily/2026-05-17.md"}),
            ({"tag": "a"}, {"daily/2026-05-17.md", "daily/2026-05-19.md"}),
            (
                {"tag": ["b", "c"]},
                {"daily/2026-05-18/meeting.md", "daily/2026-05-20.txt", "resource/2026-05-18/report.jsonl"},
            ),
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
