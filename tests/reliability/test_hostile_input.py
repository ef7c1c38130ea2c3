"""Hostile input at the store level: query syntax, key floods, giant tokens, long paths, metadata type clashes."""

from __future__ import annotations

import pytest

from reme_es.core.errors import BulkError
from reme_es.core.models import MAX_ID_BYTES, SearchFilter, doc_id
from reme_es.testing.data import chunk, file_with

from .conftest import chunk_ids, count


def _field_count(mapping: dict) -> int:
    """Mapped fields, counted like index.mapping.total_fields.limit does (objects, leaves and multi-fields)."""
    total = 0
    for spec in mapping.get("properties", {}).values():
        total += 1 + _field_count(spec) + len(spec.get("fields", {}))
    return total


async def _mapping_fields(store, kind: str) -> int:
    resp = await store.dialect.transport.request("GET", f"/{store.index(kind)}/_mapping")
    return _field_count(next(iter(resp.values()))["mappings"])


async def _user_fields(store, kind: str) -> list[str]:
    """Fields the server itself lists for the index (field capabilities), without the `_` metadata fields."""
    resp = await store.dialect.transport.request("GET", f"/{store.index(kind)}/_field_caps", params={"fields": "*"})
    return sorted(f for f in resp["fields"] if not f.startswith("_"))


# A query's words are matched as words, whatever their syntax. With the english analyzer "and" and "not" are stop
# words, on both engines (the Elasticsearch test node gets the analyzer from reme-es' test analysis plugin).
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("title:* OR _exists_:x", ["notes/title.md"]),
        ("/.*/", []),
        ("((((", []),
        ("\\", []),
        ("path:x", []),
        ('text:"report" AND NOT x', ["notes/title.md"]),
    ],
)
async def test_query_syntax_is_plain_text(store_factory, query, expected):
    store = await store_factory()
    assert store.caps.english_analyzer is True
    await store.upsert(
        [
            file_with("notes/title.md", [chunk("notes/title.md", "the title of the quarterly report")]),
            file_with("x", [chunk("x", "unrelated words about gardening")], front_matter={"title": "x"}),
            file_with("notes/other.md", [chunk("notes/other.md", "gardening notes and soil")]),
        ]
    )
    hits = await store.keyword_search(query, 10)
    assert [h.chunk.path for h in hits] == expected


async def test_key_floods_do_not_grow_the_mapping(store_factory, server):
    store = await store_factory()
    before = {kind: await _mapping_fields(store, kind) for kind in ("chunks", "files")}
    fields_before = {kind: await _user_fields(store, kind) for kind in ("chunks", "files")}
    front_matter = {f"fm_key_{i}": f"value {i}" for i in range(2000)}
    path = "notes/flood.md"
    chunks = [chunk(path, f"flood chunk {i}", start=1 + 2 * i, metadata={f"meta_key_{i}": i}) for i in range(2000)]
    outcome = await store.upsert([file_with(path, chunks, front_matter=front_matter)])

    assert outcome.failures == []
    assert await count(store, "chunks") == 2000
    after = {kind: await _mapping_fields(store, kind) for kind in ("chunks", "files")}
    assert after == before
    assert before == {"chunks": 15, "files": 8}  # the template's fields, the workspace key among them
    # The server's own field list: OpenSearch 2.19's flat_object adds one internal `<field>.` entry, OpenSearch 3's
    # and Elasticsearch's flattened none; none grows with the keys.
    flat = [".", ""] if server.flavour == "opensearch-2.19" else [""]
    assert (
        {kind: await _user_fields(store, kind) for kind in ("chunks", "files")}
        == fields_before
        == {
            "chunks": sorted(
                [
                    "chunk_id",
                    "context",
                    "date",
                    "end_line",
                    "hash",
                    "path",
                    "question",
                    "speaker",
                    "start_line",
                    "text",
                    "text.cjk",
                    "words",
                    "workspace",
                    "written",
                ]
                + [f"metadata{x}" for x in flat]
            ),
            "files": sorted(
                ["chunk_ids", "hash", "path", "size", "st_mtime", "workspace"] + [f"front_matter{x}" for x in flat]
            ),
        }
    )
    (stored,) = await store.links.get_files([path])
    assert len(stored.front_matter) == 2000 and stored.front_matter["fm_key_1999"] == "value 1999"
    hits = await store.keyword_search("flood", 5, SearchFilter.parse({"meta_key_1999": 1999}))
    assert [h.chunk.start_line for h in hits] == [1 + 2 * 1999]


async def test_a_40kb_token_is_indexed_and_its_chunk_found_by_other_words(store_factory):
    store = await store_factory()
    token = "z" * 40_000
    giant = chunk("notes/giant.md", f"lighthouse keeper {token} logbook entry")
    small = file_with("notes/small.md", [chunk("notes/small.md", "a logbook")])
    await store.upsert([file_with("notes/giant.md", [giant]), small])

    assert await chunk_ids(store) == sorted([giant.id, chunk("notes/small.md", "a logbook").id])
    assert [h.chunk.id for h in await store.keyword_search("lighthouse", 5)] == [giant.id]
    hits = await store.keyword_search("keeper logbook", 5)
    assert [h.chunk.path for h in hits] == ["notes/giant.md", "notes/small.md"]
    assert len(hits[0].chunk.text) == len(giant.text)


async def test_a_path_over_512_bytes_is_stored_under_a_hashed_id(store_factory):
    store = await store_factory()
    path = "resource/" + "ü-deep-folder/" * 40 + "note.md"
    assert len(path.encode()) > MAX_ID_BYTES
    c = chunk(path, "a very deep note about tides")
    short = file_with("notes/short.md", [chunk("notes/short.md", "tides")])
    await store.upsert([file_with(path, [c], links=[path, "notes/short.md"]), short])

    assert doc_id(path).startswith("sha256:")
    query = {"query": {"term": {"path": path}}}
    ids = await store.dialect.transport.request("POST", f"/{store.index('files')}/_search", query)
    assert [h["_id"] for h in ids["hits"]["hits"]] == [store.port.stored_id(doc_id(path))]
    assert len(store.port.stored_id(doc_id(path)).encode()) <= MAX_ID_BYTES
    assert [f.path for f in await store.links.get_files([path])] == [path]
    assert await store.links.indexed([path, "notes/short.md", "nope.md"]) == {path, "notes/short.md"}
    hits = await store.keyword_search("tides", 5, SearchFilter(paths=[path]))
    assert [(h.chunk.id, h.chunk.path) for h in hits] == [(c.id, path)]
    assert [x.target for x in await store.links.outlinks(path)] == [path, "notes/short.md"]
    assert [x.source for x in await store.links.inlinks(path)] == [path]
    assert await store.delete(path) == 1
    assert await count(store, "chunks") == 1 and await count(store, "links") == 0


async def test_metadata_type_clash_across_chunks(store_factory):
    store = await store_factory()
    a = chunk("notes/a.md", "clash one", metadata={"owner": "alice"})
    b = chunk("notes/b.md", "clash two", metadata={"owner": {"name": "bob", "team": {"id": 7}}})
    c = chunk("notes/c.md", "clash three", metadata={"owner": ["carol", 3]})
    try:
        await store.upsert([file_with("notes/a.md", [a]), file_with("notes/b.md", [b]), file_with("notes/c.md", [c])])
        failures = []
    except BulkError as exc:
        failures = exc.failures
    # flat_object (OpenSearch) and flattened (Elasticsearch) index every leaf as a string under its dotted key:
    # no clash, nothing fails.
    assert failures == []
    assert await chunk_ids(store) == sorted([a.id, b.id, c.id])
    owned = await store.keyword_search("clash", 5, SearchFilter.parse({"owner": "alice"}))
    assert [h.chunk.id for h in owned] == [a.id]
    stored = await store.vectors.get_chunks({"notes/b.md": [b.id]})
    assert stored[b.id]["metadata"] == {"owner": {"name": "bob", "team": {"id": 7}}}
