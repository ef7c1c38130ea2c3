"""The file store's deferred refresh and pending-changes retry as objects of their own: a fake port (it counts and
fails refreshes, or refuses writes as an unreachable cluster does) and a fake clock stand in for the cluster and
time. The same behaviour against real nodes: tests/integration/test_reme_refresh.py and test_reme_defects.py."""

from __future__ import annotations

import asyncio

import pytest
from reme.schema import FileNode

from reme_es.core.errors import BulkError, BulkItemFailure, ConnectionFailed, InvalidInput, RequestFailed
from reme_es.core.models import FileDoc
from reme_es.reme.pending import PENDING_BATCH, RETRY_MAX_S, PendingChanges, unreachable
from reme_es.reme.tags import TagIndexSync
from reme_es.reme.visibility import MAX_DELAY_FACTOR, DeferredRefresh


class FakeClock:
    """Monotonic time that moves only when a test advances it; `sleep` waits for that."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future]] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        future = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now + delay, future))
        await future

    async def advance(self, seconds: float) -> None:
        """Let started tasks reach their sleep, move time on, wake the sleepers that are due, and let them run."""
        await settle()
        self.now += seconds
        for wake_at, future in list(self._sleepers):
            if wake_at <= self.now + 1e-9 and not future.done():
                future.set_result(None)
                self._sleepers.remove((wake_at, future))
        await settle()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class FakePort:
    """The refresh side of an index port: counts refreshes, at what time, and fails the next `fail` of them."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.refreshed_at: list[float] = []
        self.fail = 0
        self.open = True
        self.recounted_at: list[float] = []

    async def refresh(self) -> bool:
        if not self.open:
            return False
        if self.fail:
            self.fail -= 1
            raise ConnectionFailed("node down", kind="refused")
        self.refreshed_at.append(self.clock.now)
        return True

    async def recount(self) -> None:
        self.recounted_at.append(self.clock.now)


def deferred(refresh_after: float = 1.0) -> tuple[DeferredRefresh, FakePort, FakeClock]:
    clock = FakeClock()
    port = FakePort(clock)
    refresher = DeferredRefresh(port.refresh, refresh_after, recount=port.recount, clock=clock, sleep=clock.sleep)
    return refresher, port, clock


# ------------------------------------------------------------------------------------------ deferred refresh


async def test_a_write_is_refreshed_refresh_after_seconds_later_not_before():
    refresher, port, clock = deferred(1.0)
    await refresher.written()
    await clock.advance(0.9)
    assert port.refreshed_at == [] and refresher.pending
    await clock.advance(0.1)
    assert port.refreshed_at == [1.0] and not refresher.pending


async def test_each_write_moves_the_refresh_on_but_a_stream_is_refreshed_within_the_cap():
    refresher, port, clock = deferred(1.0)
    for _ in range(50):  # a write every 0.5 s for 25 s
        await refresher.written()
        await clock.advance(0.5)
    assert port.refreshed_at == [1.0 * MAX_DELAY_FACTOR, 2.0 * MAX_DELAY_FACTOR]


async def test_a_stream_of_write_calls_longer_than_refresh_after_is_refreshed_at_the_cap():
    """ReMe's index step upserting batch after batch: each call takes 3 s, the next starts 0.5 s after. A running
    call is the latest write, so the stream is refreshed at the cap, not right after every other call."""
    refresher, port, clock = deferred(1.0)

    async def call() -> None:
        async with refresher.writing():
            await clock.sleep(3.0)
        await refresher.written()

    for _ in range(7):  # 24.5 s of calls
        task = asyncio.create_task(call())
        await settle()
        await clock.advance(3.0)
        await task
        await clock.advance(0.5)
    # calls end at 3, 6.5, 10, 13.5, 17, 20.5, 24 s. The cap, 10 s after the first write (3 s), falls in the fourth
    # call: refreshed when it ends. Before, every call ended inside the next one's refresh_after: a refresh after each
    assert port.refreshed_at == [13.5]
    await clock.advance(0.5)  # the stream paused: refresh_after after the last call (the next cap, 27 s, not reached)
    assert port.refreshed_at == [13.5, 25.0]


async def test_a_read_refreshes_only_what_is_unrefreshed():
    refresher, port, clock = deferred(5.0)
    await refresher.visible()
    assert port.refreshed_at == []
    await refresher.written()
    await refresher.visible()
    await refresher.visible()
    assert port.refreshed_at == [0.0]
    await clock.advance(5.0)
    assert port.refreshed_at == [0.0]  # the background refresh found nothing left to do


async def test_a_read_leaves_the_counts_to_the_background_refresh_and_dump_settles_them():
    refresher, port, clock = deferred(1.0)
    await refresher.written()
    await refresher.visible()  # a search right after the write: one refresh, no counts
    assert (port.refreshed_at, port.recounted_at) == ([0.0], [])
    await clock.advance(1.0)  # the background task finds the writes searchable and re-reads the counts, off the read
    assert (port.refreshed_at, port.recounted_at) == ([0.0], [0.0])
    await refresher.written()
    await refresher.settled()  # dump()
    assert (port.refreshed_at, port.recounted_at) == ([0.0, 1.0], [0.0, 1.0])
    await refresher.settled()
    await clock.advance(5.0)
    assert (port.refreshed_at, port.recounted_at) == ([0.0, 1.0], [0.0, 1.0])


async def test_refresh_after_zero_refreshes_at_the_end_of_every_write():
    refresher, port, clock = deferred(0.0)
    await refresher.written()
    await clock.advance(1.0)
    await refresher.written()
    assert port.refreshed_at == port.recounted_at == [0.0, 1.0]
    assert clock.sleeps == []


async def test_after_a_failed_write_the_next_write_refreshes_first():
    refresher, port, _ = deferred(1.0)
    refresher.write_failed()
    await refresher.before_write()
    assert port.refreshed_at == [0.0]
    await refresher.before_write()
    assert port.refreshed_at == [0.0]


async def test_a_failed_refresh_keeps_the_writes_unrefreshed_for_the_next_read():
    refresher, port, clock = deferred(1.0)
    port.fail = 1
    await refresher.written()
    await clock.advance(1.0)  # the background refresh fails (logged) and ends
    assert port.refreshed_at == [] and refresher.pending
    await refresher.visible()
    assert port.refreshed_at == [1.0] and not refresher.pending


async def test_a_store_not_open_leaves_the_refresh_to_do():
    refresher, port, clock = deferred(1.0)
    port.open = False
    await refresher.written()
    await clock.advance(1.0)
    assert refresher.pending
    port.open = True
    await refresher.visible()
    assert port.refreshed_at == [1.0]


async def test_no_refresh_runs_while_a_write_sends_its_requests():
    refresher, port, _ = deferred(1.0)
    await refresher.written()
    async with refresher.writing():
        reader = asyncio.create_task(refresher.visible())
        await settle()
        assert port.refreshed_at == [] and not reader.done()
    await reader
    assert port.refreshed_at == [0.0]


async def test_stop_cancels_the_background_refresh_and_refreshes_the_last_writes():
    refresher, port, clock = deferred(1.0)
    await refresher.written()
    await refresher.stop()
    assert port.refreshed_at == [0.0]
    await clock.advance(5.0)
    assert port.refreshed_at == [0.0]


def test_refresh_after_below_zero_is_refused():
    with pytest.raises(ValueError, match="refresh_after must be >= 0 seconds, got -1"):
        DeferredRefresh(FakePort(FakeClock()).refresh, -1)


# ------------------------------------------------------------------------------------------ pending changes


class FakeStore:
    """Applies kept changes through a fake port that refuses them while `down` (as an unreachable cluster)."""

    def __init__(self) -> None:
        self.down = 0
        self.error: Exception | None = None
        self.written: list[tuple[str, list[str]]] = []
        self.pending: PendingChanges | None = None

    async def apply(self) -> int:
        if self.error is not None:
            raise self.error
        if self.down:
            self.down -= 1
            raise ConnectionFailed("node down", kind="refused")
        deletes, batches = self.pending.take()
        if deletes:
            self.written.append(("delete", deletes))
            self.pending.applied(deletes)
        for batch in batches:
            paths = [node.path for node, _ in batch]
            self.written.append(("upsert", paths))
            self.pending.applied(paths)
        return len(deletes) + sum(len(b) for b in batches)


def pending_changes() -> tuple[PendingChanges, FakeStore, FakeClock]:
    clock, store = FakeClock(), FakeStore()
    store.pending = PendingChanges(store.apply, sleep=clock.sleep)
    return store.pending, store, clock


def node(path: str) -> FileNode:
    return FileNode(path=path, st_mtime=1.0)


async def test_kept_changes_are_retried_with_backoff_until_the_cluster_answers():
    pending, store, clock = pending_changes()
    store.down = 6
    pending.keep(upserts=[(node("a.md"), [])], deletes=["b.md"])
    for _ in range(7):
        await clock.advance(RETRY_MAX_S)
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert store.written == [("delete", ["b.md"]), ("upsert", ["a.md"])]
    assert pending.paths() == {"upserts": [], "deletes": []}
    await pending.wait()


async def test_the_latest_change_of_a_path_wins():
    pending, store, clock = pending_changes()
    store.down = 1
    pending.keep(upserts=[(node("a.md"), []), (node("b.md"), [])])
    pending.keep(deletes=["a.md"])
    pending.keep(upserts=[(node("c.md"), [])], deletes=["c.md"])
    assert pending.paths() == {"upserts": ["b.md"], "deletes": ["a.md", "c.md"]}
    pending.keep(upserts=[(node("a.md"), [])])
    assert pending.paths() == {"upserts": ["a.md", "b.md"], "deletes": ["c.md"]}
    await clock.advance(1.0)
    await clock.advance(2.0)
    assert store.written == [("delete", ["c.md"]), ("upsert", ["b.md", "a.md"])]  # in the order of their last change


async def test_a_newer_successful_write_drops_what_was_kept_for_its_path():
    pending, store, clock = pending_changes()
    pending.keep(upserts=[(node("a.md"), []), (node("b.md"), [])])
    pending.applied(["a.md"])
    await clock.advance(1.0)
    assert store.written == [("upsert", ["b.md"])]


async def test_kept_upserts_are_applied_in_batches():
    pending, _, _ = pending_changes()
    pending.keep(upserts=[(node(f"{i:03}.md"), []) for i in range(PENDING_BATCH + 1)])
    deletes, batches = pending.take()
    assert deletes == [] and [len(b) for b in batches] == [PENDING_BATCH, 1]
    pending.close()


async def test_a_failure_that_is_not_the_cluster_being_away_gives_the_changes_up():
    pending, store, clock = pending_changes()
    store.error = InvalidInput("chunk a#1 has no text")
    pending.keep(upserts=[(node("a.md"), [])])
    await clock.advance(1.0)
    assert pending.paths() == {"upserts": [], "deletes": []}
    assert clock.sleeps == [1.0]
    await pending.wait()


async def test_close_stops_retrying_and_keeps_no_new_loop():
    pending, store, clock = pending_changes()
    store.down = 100
    pending.keep(deletes=["a.md"])
    await clock.advance(1.0)
    pending.close()
    await clock.advance(RETRY_MAX_S)
    assert clock.sleeps == [1.0, 2.0]
    pending.keep(deletes=["b.md"])
    await clock.advance(RETRY_MAX_S)
    assert clock.sleeps == [1.0, 2.0] and store.written == []
    assert pending.paths() == {"upserts": [], "deletes": ["a.md", "b.md"]}


@pytest.mark.parametrize(
    "exc,kept",
    [
        (ConnectionFailed("down", kind="refused"), True),
        (RequestFailed("busy", status=503), True),
        (RequestFailed("no status"), True),
        (RequestFailed("bad request", status=400), False),
        (RequestFailed("not implemented", status=501), False),
        (BulkError([BulkItemFailure("c", "a", 429, "full"), BulkItemFailure("c", "b", 502, "bad gateway")]), True),
        (BulkError([BulkItemFailure("c", "a", 429, "full"), BulkItemFailure("c", "b", 400, "mapper_parsing")]), False),
        (BulkError([]), False),
        (InvalidInput("no text"), False),
    ],
)
def test_which_failures_mean_the_cluster_is_unreachable(exc, kept):
    assert unreachable(exc) is kept


# ------------------------------------------------------------------------------------------- tag index


class FakeTagIndex:
    """A tag index whose incremental calls fail while `fail` is set; records every call and its health."""

    tag_key = "memory_tags"

    def __init__(self) -> None:
        self.fail = False
        self.calls: list[tuple] = []
        self.healthy: list[bool] = []

    async def upsert_nodes(self, nodes: list[FileNode]) -> None:
        self.calls.append(("upsert", [n.path for n in nodes]))
        if self.fail:
            raise RuntimeError("tag index down")

    async def delete(self, paths: list[str]) -> None:
        self.calls.append(("delete", paths))
        if self.fail:
            raise RuntimeError("tag index down")

    async def rebuild(self, nodes: list[FileNode]) -> None:
        self.calls.append(("rebuild", [n.path for n in nodes]))

    def set_healthy(self, healthy: bool) -> None:
        self.healthy.append(healthy)


async def test_a_failed_incremental_tag_update_or_delete_rebuilds_the_tag_index_from_the_tagged_files(caplog):
    index, asked = FakeTagIndex(), []

    async def tagged_files(key: str) -> list[FileDoc]:
        asked.append(key)
        return [FileDoc(path="digest/tagged.md", st_mtime=1.0, front_matter={"memory_tags": ["a"]})]

    tags = TagIndexSync(lambda: index, tagged_files, name="fs")
    await tags.upserted([node("digest/a.md")])
    await tags.deleted(["digest/b.md"])
    assert (index.calls, asked, index.healthy) == ([("upsert", ["digest/a.md"]), ("delete", ["digest/b.md"])], [], [])
    index.fail, index.calls = True, []
    await tags.upserted([node("digest/a.md")])
    await tags.deleted(["digest/b.md"])
    assert index.calls == [
        ("upsert", ["digest/a.md"]),
        ("rebuild", ["digest/tagged.md"]),
        ("delete", ["digest/b.md"]),
        ("rebuild", ["digest/tagged.md"]),
    ]
    assert (asked, index.healthy) == (["memory_tags", "memory_tags"], [True, True])
    assert [r.getMessage() for r in caplog.records if r.name == "reme_es.reme.tags"] == [
        "fs: incremental tag index update failed; rebuilding",
        "fs: incremental tag index delete failed; rebuilding",
    ]
    untagged = TagIndexSync(lambda: None, tagged_files)  # no tag index configured: nothing to keep in step
    await untagged.upserted([node("digest/a.md")])
    await untagged.deleted(["digest/b.md"])
    assert asked == ["memory_tags", "memory_tags"]
