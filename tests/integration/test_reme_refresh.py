"""When the file store's writes become searchable (reme_es.reme.visibility), on a real node through ReMe's Application.

An upsert is durable when it returns but is not refreshed after every call: the store refreshes before its own next
read, at dump() and close, and in the background `refresh_after` seconds after the last write. Every test counts
the `_refresh` requests the store sends and reads the indices from a second, independent client (which never
refreshes), so a write that is refreshed too late, too often, or not at all fails.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from reme_es.core.errors import ConfigError

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme.schema import FileChunk, FileNode

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.options import default_workspace_key
from reme_es.store.connect import open_store
from tests.integration.test_reme import app_config, make_app

pytestmark = pytest.mark.asyncio


def note(n: int) -> tuple[FileNode, list[FileChunk]]:
    path = f"digest/refresh-{n}.md"
    chunks = [
        FileChunk(id=f"{path}#{i}", path=path, start_line=i + 1, end_line=i + 1, text=f"lighthouse keeper {n} log {i}")
        for i in range(3)
    ]
    return FileNode(path=path, st_mtime=1_770_000_000.0 + n), chunks


class Store:
    """The app's file store, with every `_refresh` request it sends counted, and an outside reader of its indices."""

    def __init__(self, app, reader):
        self.app, self.reader = app, reader
        self.fs = app.context.components["file_store"]["default"]
        self.refreshes = 0
        transport = self.fs.store.port.transport
        request = transport.request

        async def counted(method, path, body=None, params=None):
            if path.endswith("/_refresh"):
                self.refreshes += 1
            return await request(method, path, body, params)

        transport.request = counted

    async def seen_outside(self) -> int:
        """Files another client finds in the files index (searches see the last refresh only)."""
        return await self.reader.inspect.count("files")


@pytest.fixture
async def open_app(server, es_prefix, tmp_path):
    """`await open_app(refresh_after)`: a started Application on the test's prefix; closed at the end."""
    opened = []

    async def start(refresh_after: float) -> Store:
        cfg = app_config(tmp_path / "ws", server.engine, server.url, es_prefix)
        cfg["components"]["file_store"]["default"]["refresh_after"] = refresh_after
        (tmp_path / "ws").mkdir(exist_ok=True)
        app = make_app(cfg)
        await app.start()
        reader = await open_store(
            ClientSettings(hosts=[server.url]),
            es_prefix,
            server.engine,
            create=False,
            workspace=default_workspace_key(tmp_path / "ws"),
        )
        s = Store(app, reader)
        opened.append(s)
        return s

    yield start
    for s in opened:
        if s.fs.store is not None:  # not closed by the test
            await s.app.close()
        await s.reader.close()


async def test_writes_are_refreshed_once_before_the_stores_next_read_not_after_each_call(open_app):
    s = await open_app(refresh_after=60)
    for n in range(3):
        await s.fs.upsert([note(n)])
    assert s.refreshes == 0
    assert await s.seen_outside() == 0  # durable, not yet searchable

    hits = await s.fs.keyword_search("lighthouse keeper", 20, {})
    assert sorted({h.path for h in hits}) == [f"digest/refresh-{n}.md" for n in range(3)]
    assert s.refreshes == 1
    assert await s.seen_outside() == 3
    await s.fs.keyword_search("lighthouse", 20, {})
    await s.fs.get_nodes()
    assert s.refreshes == 1  # nothing written since: no refresh

    await s.fs.delete("digest/refresh-0.md")
    assert [n.path for n in await s.fs.get_nodes()] == ["digest/refresh-1.md", "digest/refresh-2.md"]
    assert s.refreshes == 2


async def test_dump_makes_writes_searchable_and_brings_health_counts_up_to_date(open_app):
    s = await open_app(refresh_after=60)
    await s.fs.upsert([note(1), note(2)])
    assert s.fs.counts["files"] == 0 and s.refreshes == 0
    await s.fs.dump()  # what ReMe's index step calls after its batches
    assert s.refreshes == 1
    assert s.fs.counts == {"files": 2, "chunks": 6, "vectors": 6, "links": 0}
    assert await s.seen_outside() == 2


async def test_another_reader_sees_the_writes_refresh_after_seconds_after_the_last_one(open_app):
    s = await open_app(refresh_after=0.3)
    await s.fs.upsert([note(1)])
    written = time.monotonic()
    while await s.seen_outside() != 1 or s.fs.counts["files"] != 1:  # searchable, then the counts re-read
        assert time.monotonic() - written < 10, "the background refresh never came"
        await asyncio.sleep(0.05)
    assert s.refreshes == 1  # the store itself read nothing: the background refresh did it


async def test_refresh_after_zero_refreshes_at_the_end_of_every_write(open_app):
    s = await open_app(refresh_after=0)
    await s.fs.upsert([note(1)])
    assert s.refreshes == 1 and await s.seen_outside() == 1 and s.fs.counts["chunks"] == 3
    await s.fs.upsert([note(2)])
    assert s.refreshes == 2 and await s.seen_outside() == 2


async def test_close_makes_the_last_writes_searchable(open_app):
    s = await open_app(refresh_after=60)
    await s.fs.upsert([note(1), note(2), note(3)])
    assert await s.seen_outside() == 0
    await s.app.close()
    assert s.refreshes == 1
    assert await s.seen_outside() == 3


async def test_a_failed_write_makes_the_next_write_refresh_first(open_app):
    s = await open_app(refresh_after=60)
    await s.fs.upsert([note(1)])
    node, chunks = note(2)
    chunks[0].path = "digest/elsewhere.md"  # a chunk of another file: the store refuses the whole call
    with pytest.raises(Exception, match="belongs to file"):
        await s.fs.upsert([(node, chunks)])
    assert s.refreshes == 0
    await s.fs.upsert([note(3)])
    assert s.refreshes == 1  # before writing: what the failed call left is visible to the write protocol's reads
    assert await s.seen_outside() == 1  # note 1 (refreshed before note 3 was written)


async def test_a_read_does_not_refresh_in_the_middle_of_a_write(open_app):
    s = await open_app(refresh_after=60)
    await s.fs.upsert([note(1)])  # unrefreshed: the next read refreshes
    transport = s.fs.store.port.transport
    bulk, gate, log = transport.bulk, asyncio.Event(), []

    async def held_bulk(actions, *args, **kwargs):
        log.append("bulk")
        await gate.wait()  # the write is stuck between its rounds
        return await bulk(actions, *args, **kwargs)

    transport.bulk = held_bulk
    write = asyncio.create_task(s.fs.upsert([note(2), note(3)]))  # new files: nothing to refresh before writing
    while not log:
        await asyncio.sleep(0.01)
    read = asyncio.create_task(s.fs.keyword_search("lighthouse keeper", 20, {}))
    await asyncio.sleep(0.5)
    assert s.refreshes == 0 and not read.done()  # the read waits for the write rather than refresh half of it
    gate.set()
    await write
    hits = await read
    transport.bulk = bulk
    assert s.refreshes == 1
    assert sorted({h.path for h in hits}) == [f"digest/refresh-{n}.md" for n in (1, 2, 3)]


async def test_refresh_after_must_not_be_negative(server, es_prefix, tmp_path):
    cfg = app_config(tmp_path / "ws", server.engine, server.url, es_prefix)
    cfg["components"]["file_store"]["default"]["refresh_after"] = -1
    refused = r"\(file_store\.default\): refresh_after: Input should be greater than or equal to 0"
    with pytest.raises(ConfigError, match=refused):
        make_app(cfg)
