"""When the file store's writes become searchable: deferred refresh.

An upsert or delete returns once the cluster has acknowledged it (it is in the translog: durable), but a refresh
after every write call makes a new Lucene segment each time, and on a bulk load those segments are merged again
and again (for vectors, every merge rebuilds an HNSW graph). So writes leave the indices unrefreshed and the store
refreshes them (and re-reads its health counts) when it matters:

- before any read of this store (search, nodes, links, reindex, backfill): a caller always sees its own writes;
- at `dump()`, which ReMe's index step calls after its batches, and at close;
- in the background, `refresh_after` seconds after the last write (a write call still running counts as the last
  write; at most 10x that during a steady stream of writes), so other processes reading the same indices see the
  changes soon too;
- before the next write when a write failed (so the write protocol sees any chunk the failed one left behind).

A refresh never runs while a write call is sending its requests (both hold the refresh lock), so this store's own
refreshes never show a write half done: a read that needs a refresh waits for the write to finish. The lock is this
process's: in an index set shared by several workspaces, another workspace's (or process's) refresh can still make
a write call's new chunks searchable beside the stale ones before the call ends. The searches never return both
anyway: each answer keeps, of every file with two or more hits, only the chunks its file doc lists
(`reme_es.store.one_version`), so a reader never sees a file's old and new chunks together.

`refresh_after: 0` refreshes at the end of every write call, as before.

The health counts (ReMe's health_check reads them) are re-read in one request when writes are settled: at `dump()`,
after the background refresh and after each write with `refresh_after: 0`; a read's refresh leaves them to those,
so the first search after a write costs one refresh, not a refresh and the counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .background import cancel

MAX_DELAY_FACTOR = 10  # a steady stream of writes is refreshed at least every refresh_after x this

Refresh = Callable[[], Awaitable[bool]]
Recount = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


class DeferredRefresh:
    """The refresh schedule of one store's writes: `refresh()` makes them searchable (False: no store is open),
    `recount()` re-reads the health counts (it never raises)."""

    def __init__(
        self,
        refresh: Refresh,
        refresh_after: float,  # the `refresh_after` search option
        *,
        recount: Recount = _nothing,
        logger: Any = None,
        name: str = "file store",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        if refresh_after < 0:
            raise ValueError(f"refresh_after must be >= 0 seconds, got {refresh_after}")
        self.refresh_after = float(refresh_after)
        self._refresh = refresh
        self._recount = recount
        self._logger = logger or logging.getLogger(__name__)
        self._name = name
        self._clock = clock
        self._sleep = sleep
        self._unrefreshed_since: float | None = None
        self._last_write = 0.0
        self._write_failed = False
        self._lock = asyncio.Lock()  # held by a refresh and by a write call's requests (`writing`)
        self._writes = 0  # write calls asking for or holding the lock
        self._task: asyncio.Task | None = None
        self._counts_stale = False  # a refresh showed writes the health counts do not include yet

    @property
    def pending(self) -> bool:
        """Whether a write since the last refresh is not searchable yet."""
        return self._unrefreshed_since is not None

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """`async with refresher.writing():` around a write call's requests: no refresh can split them. A write
        call counts as a write from when it asks until it ends (`_refresh_later`)."""
        self._writes += 1
        try:
            async with self._lock:
                yield
        finally:
            self._writes -= 1
            self._last_write = self._clock()

    async def before_write(self) -> None:
        """Refresh first when the last write failed (what it left behind must be visible to the write protocol)."""
        if self._write_failed:
            await self.visible()
            self._write_failed = False

    async def written(self) -> None:
        """A write call succeeded: refresh now (refresh_after 0) or schedule the background refresh."""
        now = self._clock()
        self._last_write = now
        if self._unrefreshed_since is None:
            self._unrefreshed_since = now
        if self.refresh_after == 0:
            await self.settled()
        elif self._task is None or self._task.done():
            self._task = asyncio.create_task(self._refresh_later())

    def write_failed(self) -> None:
        """A write call raised: what it left may be unrefreshed; the next write refreshes first."""
        self._write_failed = True
        if self._unrefreshed_since is None:
            self._unrefreshed_since = self._clock()

    async def visible(self) -> None:
        """Refresh if any write since the last refresh is not searchable yet (the counts: `settled`)."""
        await self._make_visible()

    async def settled(self) -> None:
        """`visible`, then the health counts re-read (one request) if a refresh showed writes they lack."""
        await self._make_visible()
        if self._counts_stale:
            self._counts_stale = False
            await self._recount()

    async def _make_visible(self) -> bool:
        """`visible`; False when a refresh was due and nothing could refresh (no store open)."""
        if self._unrefreshed_since is None:
            return True
        async with self._lock:
            if self._unrefreshed_since is None:  # read again: a reader may have refreshed during the await above
                return True  # type: ignore[unreachable]  # mypy keeps the narrowing across the await
            since = self._unrefreshed_since
            self._unrefreshed_since = None  # a write finishing during the refresh sets it again
            try:
                refreshed = await self._refresh()
            except BaseException:
                if self._unrefreshed_since is None:
                    self._unrefreshed_since = since
                raise
            if not refreshed and self._unrefreshed_since is None:
                self._unrefreshed_since = since  # no store open: still to do
            self._counts_stale = self._counts_stale or refreshed
            return refreshed

    async def _refresh_later(self) -> None:
        """The background refresh: after `refresh_after` s without writes, or `MAX_DELAY_FACTOR` x that at most. A
        write call still running is the latest write: a stream of write calls that each take longer than
        `refresh_after` (a bulk load: ReMe's index step upserting batch after batch) is refreshed at the cap, not
        after every other call (each refresh cuts a segment per indexing thread, and the node merges them again)."""
        while self._unrefreshed_since is not None or self._counts_stale:
            if self._unrefreshed_since is not None:
                since = self._unrefreshed_since
                last = self._clock() if self._writes else self._last_write
                due = min(last + self.refresh_after, since + self.refresh_after * MAX_DELAY_FACTOR)
                delay = due - self._clock()
                if delay > 0:
                    await self._sleep(delay)
                    continue
            try:
                if not await self._make_visible():
                    return  # no store open; the next read or write refreshes
                await self.settled()
            except Exception as e:  # noqa: BLE001 - the next read or write refreshes; nothing is lost
                self._logger.warning(f"{self._name}: background refresh failed: {type(e).__name__}: {e}")
                return

    async def stop(self) -> None:
        """At close: stop the background refresh and make the last writes searchable (best effort)."""
        task, self._task = self._task, None
        await cancel(task)  # a failure of it was logged; the writes are made searchable below
        try:
            await self.visible()
        except Exception as e:  # noqa: BLE001 - the writes are durable; the next refresh of anyone shows them
            self._logger.warning(f"{self._name}: could not refresh at close: {type(e).__name__}: {e}")
