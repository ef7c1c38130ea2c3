"""A search never shows a file's old and new chunks together, also when another workspace of the set refreshes the
shared indices while a write of the file is half done (issue 39 item 5; `reme_es.store.one_version`).

Workspace A's write of a new version of one file is held between its chunk round (the new chunks indexed) and its
commit round (stale chunks deleted, file doc written): the test wraps the writer's chunk round and waits on an event.
Workspace B then writes and refreshes the indices of the set, which makes A's new chunks visible beside the old ones.
Every read of A that returns chunks must show one version of the file: the old one while the write is held, the new
one after it. The new chunks rank first, so an answer that only dropped them would come back short of its limit.
"""

from __future__ import annotations

import asyncio

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.options import IndexOptions
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with, unit_vector

PATH = "notes/plan.md"
QUERY, VECTOR = "alpha", unit_vector(1)
# v1 and v2 share their first chunk (same path, lines and text: same id, not written again); the other two differ.
SAME = chunk(PATH, "alpha one", 1, unit_vector(1, 0.6))
V1 = [SAME, chunk(PATH, "alpha two", 3, unit_vector(1, 0.7)), chunk(PATH, "alpha three", 5, unit_vector(1, 0.8))]
V2 = [SAME, chunk(PATH, "alpha alpha alpha four", 3, VECTOR), chunk(PATH, "alpha alpha alpha five", 5, VECTOR)]
OLD, NEW = {c.id for c in V1}, {c.id for c in V2}
OTHER = file_with("notes/other.md", [chunk("notes/other.md", "beta gamma", 1, unit_vector(0, 1))])


async def shown_ids(store, limit: int) -> dict[str, list[str]]:
    """The chunk ids each read of `store` returns for QUERY, by read (the ReMe search step's pair: ranked, shown)."""
    ranked = await store.ranked(QUERY, VECTOR, 50)
    return {
        "keyword_search": [h.chunk.id for h in await store.keyword_search(QUERY, limit)],
        "vector_search": [h.chunk.id for h in await store.vector_search(VECTOR, limit, k=50)],
        "search hybrid": [h.chunk.id for h in (await store.search(QUERY, VECTOR, limit)).hits],
        "search keyword": [h.chunk.id for h in (await store.search(QUERY, None, limit, mode="keyword")).hits],
        "search vector": [h.chunk.id for h in (await store.search(QUERY, VECTOR, limit, mode="vector")).hits],
        "ranked, shown": [h.chunk.id for h in (await store.shown(ranked.hits[:limit], [PATH])).hits],
        "ranked, shown (no links)": [h.chunk.id for h in (await store.shown(ranked.hits[:limit], [])).hits],
    }


async def test_a_half_done_write_shows_one_version_when_another_workspace_refreshes(server, es_prefix):
    settings, options = ClientSettings([server.url]), IndexOptions(dims=len(VECTOR))
    writer = await open_store(settings, es_prefix, server.engine, options, workspace="a")
    reader = await open_store(settings, es_prefix, server.engine, options, workspace="a")
    other = await open_store(settings, es_prefix, server.engine, options, workspace="b")
    held, go = asyncio.Event(), asyncio.Event()
    write = None
    try:
        await writer.upsert([file_with(PATH, V1)])
        write = asyncio.create_task(_held(writer, file_with(PATH, V2), held, go))
        await asyncio.wait_for(held.wait(), 10)
        await other.upsert([OTHER])  # refreshes the set's indices: A's new chunks become searchable
        assert await other.keyword_search("beta", 5)  # B's refresh happened
        assert await reader.inspect.count("chunks") == 5  # both versions of A's file are visible: 3 old chunks, 2 new

        for read, ids in (await shown_ids(reader, 5)).items():
            assert set(ids) == OLD, read  # the old version, whole: the new chunks ranked first but are left out
        for read, ids in (await shown_ids(reader, 2)).items():
            if not read.startswith("ranked, shown"):  # `shown` leaves out; the ReMe step asks for the next ones
                # one version: the old one (left-out hits replaced by the next ones), or the two new chunks, which
                # one write call wrote (the reads that see each chunk's `written` token keep them unasked)
                assert len(ids) == 2 and (set(ids) <= OLD or set(ids) <= NEW - OLD), read

        go.set()
        await asyncio.wait_for(write, 10)
        for read, ids in (await shown_ids(reader, 5)).items():
            assert set(ids) == NEW, read
    finally:
        go.set()
        if write is not None:
            await asyncio.gather(write, return_exceptions=True)
        for store in (writer, reader, other):
            await store.close()


async def test_a_file_written_in_one_call_costs_no_file_doc_read(server, es_prefix):
    """The chunks one write call stored carry its token: a search whose hits of a file all carry one asks nothing
    more; once a rewrite kept an unchanged chunk (its older token beside the new ones), the file doc is read."""
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine, IndexOptions(dims=len(VECTOR)))
    sent: list[str] = []
    request = store.port.transport.request

    async def recorded(method, path, body=None, params=None):
        sent.append(path.rsplit("/", 1)[-1])
        return await request(method, path, body, params)

    try:
        await store.upsert([file_with(PATH, V1)])
        store.port.transport.request = recorded
        assert {h.chunk.id for h in await store.keyword_search(QUERY, 5)} == OLD
        assert {h.chunk.id for h in await store.vector_search(VECTOR, 5, k=50)} == OLD
        assert sent == ["_search", "_search"]  # three hits of one file each, no `_mget` of its file doc
        store.port.transport.request = request
        await store.upsert([file_with(PATH, V2)], unchanged={SAME.id})  # SAME keeps the first call's token
        store.port.transport.request = recorded
        sent.clear()
        assert {h.chunk.id for h in await store.keyword_search(QUERY, 5)} == NEW
        assert sent == ["_search", "_mget"]
    finally:
        store.port.transport.request = request
        await store.close()


async def test_reme_search_step_replaces_the_hits_of_another_version(server, es_prefix, tmp_path):
    """ReMe's search step (`es_search_step`: ranked candidates, then `shown`) answers with `limit` chunks of the old
    version while the write is held: the new chunks it ranked first are left out and replaced by the next ones."""
    pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")
    from tests.integration.test_reme import app_config, make_app

    (tmp_path / "ws").mkdir()
    app = make_app(app_config(tmp_path / "ws", server.engine, server.url, es_prefix))
    await app.start()
    fs = app.context.components["file_store"]["default"]
    settings, options = ClientSettings([server.url]), IndexOptions(dims=fs.store.dims)
    writer = await open_store(settings, es_prefix, server.engine, options, workspace=fs.store.workspace)
    other = await open_store(settings, es_prefix, server.engine, options, workspace="b")
    held, go = asyncio.Event(), asyncio.Event()
    write = None
    try:
        words = [file_with(PATH, [chunk(c.path, c.text, c.start_line) for c in v]) for v in (V1, V2)]  # no vectors
        await writer.upsert([words[0]])
        write = asyncio.create_task(_held(writer, words[1], held, go))
        await asyncio.wait_for(held.wait(), 10)
        await other.upsert([file_with(OTHER[0].path, [chunk(OTHER[0].path, "beta gamma")])])  # refreshes the set

        async def answer(limit: int) -> list[str]:
            resp = await app.run_job("search_native", query=QUERY, limit=limit)
            assert resp.success, resp.answer
            return [r["id"] for r in resp.metadata["results"]]

        assert len(ids := await answer(2)) == 2 and set(ids) <= OLD
        assert set(await answer(5)) == OLD
        go.set()
        await asyncio.wait_for(write, 10)
        assert set(await answer(5)) == NEW
    finally:
        go.set()
        if write is not None:
            await asyncio.gather(write, return_exceptions=True)
        await writer.close()
        await other.close()
        await app.close()


async def _held(store, file, held: asyncio.Event, go: asyncio.Event):
    """`store.upsert([file])`, held after its chunk round until `go` is set (`held` is set then)."""
    chunk_round = store.writer.bulk_streams

    async def held_after_chunks(actions, streams=2):
        outcome = await chunk_round(actions, streams)
        held.set()
        await go.wait()
        return outcome

    store.writer.bulk_streams = held_after_chunks
    try:
        return await store.upsert([file])
    finally:
        store.writer.bulk_streams = chunk_round
