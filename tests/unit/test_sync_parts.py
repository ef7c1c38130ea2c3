"""The parts a `WorkspaceSync` holds, each on its own: `SyncWriter` (what the store holds, isolating rejected files,
deletes) over a stand-in store, and `SyncWatcher` (retries while the server is away, the event filter) over a
stand-in pass. The real-node runs are in tests/integration/test_cli_sync.py and tests/reliability/."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reme_es.core.errors import BulkError, BulkItemFailure, ConfigError, ConnectionFailed
from reme_es.core.models import Chunk, FileDoc
from reme_es.core.options import SyncOptions
from reme_es.sync.report import Reporter, Summary
from reme_es.sync.state import State
from reme_es.sync.watch import SyncWatcher
from reme_es.sync.write import SyncWriter


class FakeStore:
    """The part of MemoryStore a writer calls: stored files (`links.get_files`), upsert and delete; `reject` paths
    fail in bulk."""

    def __init__(self, files: list[FileDoc], reject: set[str] = frozenset()):
        self.files = {f.path: f for f in files}
        self.reject = set(reject)
        self.listings = 0
        self.upserts: list[list[str]] = []
        self.links = self  # the door's `links` namespace: only `get_files` is read

    async def get_files(self) -> list[FileDoc]:
        self.listings += 1
        return list(self.files.values())

    async def upsert(self, items, refresh=True, unchanged=()) -> None:
        self.upserts.append([doc.path for doc, _ in items])
        rejected = [doc.path for doc, _ in items if doc.path in self.reject]
        bad = [BulkItemFailure("c", path, 400, "mapper_parsing_exception") for path in rejected]
        for doc, _ in items:
            if doc.path not in self.reject:
                self.files[doc.path] = doc
        if bad:
            raise BulkError(bad, succeeded=len(items) - len(bad))

    async def delete(self, paths, refresh=True) -> None:
        for p in paths:
            self.files.pop(p, None)


def _item(path: str, mtime: float) -> tuple[FileDoc, list[Chunk]]:
    chunk = Chunk(id=f"{path}#1", path=path, text=f"text of {path}")
    return FileDoc(path=path, st_mtime=mtime, chunk_ids=[chunk.id]), [chunk]


def _writer(store: FakeStore) -> SyncWriter:
    chunk_chars = SyncOptions().chunk_chars
    return SyncWriter(store, Reporter(lambda m: None, lambda m: None), State(None), asyncio.Event(), chunk_chars)


async def test_the_writer_reads_the_store_once_and_keeps_its_listing_in_step():
    store = FakeStore([_item("daily/a.md", 1.0)[0], _item("daily/b.md", 1.0)[0]])
    writer = _writer(store)
    assert sorted(await writer.known()) == ["daily/a.md", "daily/b.md"]
    summary = Summary()
    doc, chunks = _item("daily/c.md", 2.0)
    await writer.write([("daily/c.md", "added", doc, chunks, "")], summary)
    await writer.delete(["daily/a.md"], summary)
    known = await writer.known()
    assert sorted(known) == ["daily/b.md", "daily/c.md"]
    assert (known["daily/c.md"].st_mtime, known["daily/c.md"].chunk_ids) == (2.0, ["daily/c.md#1"])
    assert (summary.added, summary.deleted, summary.chunks, store.listings) == (1, 1, 1, 1)
    writer.forget()  # after an outage: the store is read again
    assert sorted(await writer.known()) == ["daily/b.md", "daily/c.md"] and store.listings == 2


async def test_the_writer_lists_a_rejected_file_and_writes_the_others():
    store = FakeStore([], reject={"daily/bad.md"})
    writer = _writer(store)
    summary = Summary()
    prepared = [(p, "added", *_item(p, 1.0), "") for p in ("daily/ok.md", "daily/bad.md")]
    prepared.append(("daily/gone.md", "added", None, [], "cannot read: Permission denied"))
    await writer.write(prepared, summary)
    assert [(f.path, f.reason) for f in summary.failed] == [
        ("daily/gone.md", "cannot read: Permission denied"),
        ("daily/bad.md", "400 mapper_parsing_exception"),
    ]
    assert summary.added == 1 and sorted(await writer.known()) == ["daily/ok.md"]


async def test_the_watcher_retries_a_pass_until_the_server_answers_and_forgets_what_it_knew():
    calls, forgotten = [], []

    async def run(full: bool) -> Summary:
        calls.append(full)
        if len(calls) == 1:
            raise ConnectionFailed("no host answered", kind="refused")
        return Summary(added=3)

    warnings = []
    stop = asyncio.Event()
    report = Reporter(print, warnings.append)
    watcher = SyncWatcher(Path("/ws"), ["daily"], run, lambda: forgotten.append(1), report, stop)
    summary = await watcher.run_retrying(full=True)
    assert summary.added == 3 and calls == [True, True] and forgotten == [1]
    assert warnings == ["server error, retrying in 1s: no host answered"]


async def test_the_watcher_stops_retrying_when_stopped_and_raises_what_is_not_the_server():
    stop = asyncio.Event()

    async def down(full: bool) -> Summary:
        stop.set()
        raise ConnectionFailed("no host answered")

    watcher = SyncWatcher(Path("/ws"), ["daily"], down, lambda: None, Reporter(print, lambda m: None), stop)
    assert await watcher.run_retrying() is None

    async def bad(full: bool) -> Summary:
        raise ConfigError("bad dirs")

    watcher = SyncWatcher(Path("/ws"), ["daily"], bad, lambda: None, Reporter(print, lambda m: None), asyncio.Event())
    with pytest.raises(ConfigError, match="bad dirs"):
        await watcher.run_retrying()


def test_the_watcher_follows_only_the_synced_folders():
    dirs = ["daily", "digest/sub"]
    watcher = SyncWatcher(Path("/ws"), dirs, lambda f: None, lambda: None, Reporter(), asyncio.Event())
    seen = {
        p: watcher.watch_filter(None, p)
        for p in (
            "/ws/daily/a.md",
            "/ws/digest/sub/b.md",
            "/ws/digest/c.md",
            "/ws/resource/d.jsonl",
            "/ws/daily/.hidden/e.md",
            "/elsewhere/daily/f.md",
        )
    }
    assert seen == {
        "/ws/daily/a.md": True,
        "/ws/digest/sub/b.md": True,
        "/ws/digest/c.md": True,
        "/ws/resource/d.jsonl": False,
        "/ws/daily/.hidden/e.md": False,
        "/elsewhere/daily/f.md": False,
    }
