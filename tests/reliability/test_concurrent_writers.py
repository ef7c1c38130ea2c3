"""Two writers of one prefix: file docs are written conditionally (`if_seq_no`/`if_primary_term`, `create`).

The interleavings are forced: writer B's bulk calls go through `PausedBulk`, which stops B just before a
chosen phase until writer A has finished a whole upsert. Everything else is the real store on a real node.
"""

from __future__ import annotations

import asyncio

import pytest

from reme_es.core.errors import BulkError
from reme_es.core.models import doc_id
from reme_es.testing.data import chunk, file_with

from .conftest import chunk_ids

PATH = "notes/shared.md"
C1, C2, C3, C4 = (chunk(PATH, f"line {n} of the shared note", start=2 * n) for n in range(1, 5))


class PausedBulk:
    """Holds a store's `n`-th bulk call (0 = first) until `release` is set."""

    def __init__(self, store, n: int):
        self.real, self.n, self.calls = store.port.transport.bulk, n, 0
        self.reached, self.release = asyncio.Event(), asyncio.Event()
        store.port.transport.bulk = self

    async def __call__(self, actions, *args, **kwargs):
        if self.calls == self.n:
            self.reached.set()
            await self.release.wait()
        self.calls += 1
        return await self.real(actions, *args, **kwargs)


async def _race(a, b, a_files, b_files, pause_at: int) -> BaseException | None:
    """B starts, stops before its `pause_at`-th bulk call; A writes all of its upsert; B goes on. B's error."""
    pause = PausedBulk(b, pause_at)
    task = asyncio.create_task(b.upsert(b_files))
    await asyncio.wait_for(pause.reached.wait(), 30)
    await a.upsert(a_files)
    pause.release.set()
    try:
        await task
    except BulkError as exc:
        return exc
    return None


async def _stored_file(store, path: str) -> dict:
    (doc,) = await store.links.get_files([path])
    return {"st_mtime": doc.st_mtime, "chunk_ids": sorted(doc.chunk_ids), "links": [x.target for x in doc.links]}


async def test_a_writer_that_read_an_older_version_loses_and_takes_its_chunks_back(store_factory):
    a = await store_factory()
    b = await store_factory(prefix=a.prefix)
    await a.upsert([file_with(PATH, [C1, C2], links=["old"], st_mtime=1.0)])

    # B reads version 1 and writes its chunks {C2, C4}, then waits before phase 2 (calls: phase 0 is skipped for a
    # known file, so call 0 = chunks, call 1 = phase 2). A replaces the file with {C1, C3} meanwhile.
    error = await _race(
        a,
        b,
        [file_with(PATH, [C1, C3], links=["a-link"], st_mtime=2.0)],
        [file_with(PATH, [C2, C4], links=["b-link"], st_mtime=3.0)],
        pause_at=1,
    )

    assert isinstance(error, BulkError)
    assert [(f.id, f.status) for f in error.failures] == [(doc_id(PATH), 409)]
    assert "another writer changed this file" in error.failures[0].reason
    # A's file doc stands. B deleted C1 as stale before it learnt it had lost, so it marked A's doc for
    # re-indexing (st_mtime -1) instead of leaving it silently incomplete; B's own chunks and link are gone.
    await b.refresh()
    assert await _stored_file(b, PATH) == {"st_mtime": -1.0, "chunk_ids": sorted([C1.id, C3.id]), "links": ["a-link"]}
    assert await chunk_ids(b) == [C3.id]
    assert [x.target for x in await b.links.outlinks(PATH, scope="all")] == ["a-link"]
    links = await b.dialect.transport.request("POST", f"/{b.index('links')}/_search", {"query": {"match_all": {}}})
    assert sorted(h["_source"]["target"] for h in links["hits"]["hits"]) == ["a-link"]

    # The next write of A's version (what the next sync does for a file whose st_mtime differs) repairs it.
    await a.upsert([file_with(PATH, [C1, C3], links=["a-link"], st_mtime=2.0)])
    assert await _stored_file(a, PATH) == {"st_mtime": 2.0, "chunk_ids": sorted([C1.id, C3.id]), "links": ["a-link"]}
    assert await chunk_ids(a) == sorted([C1.id, C3.id])


async def test_a_loser_that_harmed_nothing_leaves_the_winner_untouched(store_factory):
    a = await store_factory()
    b = await store_factory(prefix=a.prefix)
    await a.upsert([file_with(PATH, [C1], st_mtime=1.0)])

    # Both keep C1 and add one chunk each: B deletes nothing A lists, so A's doc keeps its st_mtime.
    error = await _race(
        a,
        b,
        [file_with(PATH, [C1, C2], st_mtime=2.0)],
        [file_with(PATH, [C1, C4], st_mtime=3.0)],
        pause_at=1,
    )

    assert [(f.id, f.status) for f in error.failures] == [(doc_id(PATH), 409)]
    await b.refresh()
    assert await _stored_file(b, PATH) == {"st_mtime": 2.0, "chunk_ids": sorted([C1.id, C2.id]), "links": []}
    # C1 is listed by A, so B does not take it back even though B rewrote it; C4 was B's alone.
    assert await chunk_ids(b) == sorted([C1.id, C2.id])


async def test_two_writers_adding_the_same_new_file_one_goes_on(store_factory):
    a = await store_factory()
    b = await store_factory(prefix=a.prefix)

    # Neither finds a file doc; B stops before its placeholder `create` (call 0), A adds the file meanwhile.
    error = await _race(
        a,
        b,
        [file_with(PATH, [C1], links=["a-link"], st_mtime=2.0)],
        [file_with(PATH, [C4], links=["b-link"], st_mtime=3.0)],
        pause_at=0,
    )

    assert [(f.id, f.status) for f in error.failures] == [(doc_id(PATH), 409)]
    await b.refresh()
    assert await _stored_file(b, PATH) == {"st_mtime": 2.0, "chunk_ids": [C1.id], "links": ["a-link"]}
    assert await chunk_ids(b) == [C1.id]  # B never wrote a chunk


async def test_other_files_of_the_losing_batch_are_stored(store_factory):
    a = await store_factory()
    b = await store_factory(prefix=a.prefix)
    await a.upsert([file_with(PATH, [C1], st_mtime=1.0)])
    other = chunk("notes/other.md", "a file only B writes")

    error = await _race(
        a,
        b,
        [file_with(PATH, [C2], st_mtime=2.0)],
        [file_with(PATH, [C3], st_mtime=3.0), file_with("notes/other.md", [other], st_mtime=3.0)],
        pause_at=2,  # B: placeholder of notes/other.md, chunks, then phase 2
    )

    assert [(f.id, f.status) for f in error.failures] == [(doc_id(PATH), 409)]
    assert error.succeeded > 0
    await b.refresh()
    assert await _stored_file(b, "notes/other.md") == {"st_mtime": 3.0, "chunk_ids": [other.id], "links": []}
    assert (await _stored_file(b, PATH))["chunk_ids"] == [C2.id]
    assert await chunk_ids(b) == sorted([C2.id, other.id])


@pytest.mark.parametrize("phase", ["placeholder", "file doc"])
async def test_a_resent_conditional_write_that_had_landed_is_not_a_conflict(store_factory, phase):
    """The node applied a bulk with a file doc but its answer was lost, so the same actions go again (what
    Dialect.bulk does after a dropped connection): the resent `create` / `if_seq_no` write gets a real 409, and
    the store recognises the stored doc as its own write."""
    store = await store_factory()
    if phase == "file doc":
        await store.upsert([file_with(PATH, [C1], st_mtime=1.0)])
    real_bulk, resent, statuses = store.port.transport.bulk, [], []

    async def answer_lost_once(actions, *args, **kwargs):
        if resent or not any(a["_index"] == store.index("files") for a in actions):
            return await real_bulk(actions, *args, **kwargs)
        await real_bulk(actions, *args, **kwargs)
        resent.append(len(actions))
        outcome = await real_bulk(actions, *args, **kwargs)
        statuses.extend(f.status for f in outcome.failures)  # what the node said to the resend, before settling
        return outcome

    store.port.transport.bulk = answer_lost_once
    outcome = await store.upsert([file_with(PATH, [C2], links=["x"], st_mtime=2.0)])

    assert resent
    assert statuses == [409]  # the resent file doc write was conditional, and the node refused it
    assert outcome.failures == []
    assert await _stored_file(store, PATH) == {"st_mtime": 2.0, "chunk_ids": [C2.id], "links": ["x"]}
    assert await chunk_ids(store) == [C2.id]


def test_two_syncs_of_one_workspace_at_once_end_consistent_and_a_rerun_is_clean(server, tmp_path, prefixes):
    """Two `reme-es sync` processes write the same 400-file workspace into one prefix at the same time. Where both
    write a file, the second finds the same version already stored (its `create` or `if_seq_no` write gets a
    409, and the stored doc equals its own) and counts the file as done: no failures, and the index equals a
    clean sync."""
    import random
    import re

    from .test_sync_crash import FILES, SEED, Sync, indexed_state, make_workspace

    workspace = tmp_path / "workspace"
    make_workspace(workspace, random.Random(SEED))
    clean = prefixes()
    Sync(server, workspace, tmp_path / "home-clean").run(clean)
    expected = asyncio.run(indexed_state(server, clean))

    prefix = prefixes()
    asyncio.run(_create(server, prefix))  # both processes then find the indices; neither races to create them
    procs = [Sync(server, workspace, tmp_path / f"home-{n}").start(prefix) for n in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    pattern = r"synced: (\d+) added, (\d+) modified, 0 deleted, (\d+) failed, (\d+) unchanged"
    summaries = [[int(n) for n in re.search(pattern, out).groups()] for out, _ in outs]
    print(f"\ntwo syncs at once: (added, modified, failed, unchanged) = {summaries}")
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert [s[2] for s in summaries] == [0, 0]
    # Each sync accounts for every file: added by it (or found already stored), modified (the other's placeholder
    # was there when it scanned), or unchanged (the other had stored it before).
    assert [s[0] + s[1] + s[3] for s in summaries] == [FILES, FILES]
    assert asyncio.run(indexed_state(server, prefix)) == expected
    out, _ = Sync(server, workspace, tmp_path / "home-0").run(prefix)
    assert "synced: 0 added, 0 modified, 0 deleted, 0 failed, 400 unchanged" in out
    assert asyncio.run(indexed_state(server, prefix)) == expected


async def _create(server, prefix: str) -> None:
    from reme_es.adapters.dialect import ClientSettings
    from reme_es.store.connect import open_store

    store = await open_store(ClientSettings([server.url]), prefix, server.engine)
    await store.close()
