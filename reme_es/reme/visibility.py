"""When the file store's writes become searchable: deferred refresh.

An upsert or delete returns once the cluster has acknowledged it (it is in the translog: durable), but a refresh
after every write call makes a new Lucene segment each time, and on a bulk load those segments are merged again
and again (for vectors, every merge rebuilds an HNSW graph). So writes leave the indices unrefreshed and the store
refreshes them (and re-reads its health counts) when it matters:

- before any read of this store (search, nodes, links, reindex, backfill): a caller always sees its own writes;
- at `dump()`, which ReMe's index step calls after its batches, and at close;
- in the background, `refresh_after` seconds after the last write (at most 10x that during a steady stream of
  writes), so other processes reading the same indices see the changes soon too;
- before the next write when a write failed (so the write protocol sees any chunk the failed one left behind).

A refresh never runs while a write call is sending its requests (both hold `_refresh_lock`), so a reader still
never sees a file's old and new chunks together: a read that needs a refresh waits for the write to finish.

`refresh_after: 0` refreshes at the end of every write call, as before.

The health counts (ReMe's health_check reads them) are re-read in one request when writes are settled: at `dump()`,
after the background refresh and after each write with `refresh_after: 0`; a read's refresh leaves them to those,
so the first search after a write costs one refresh, not a refresh and the counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

MAX_DELAY_FACTOR = 10  # a steady stream of writes is refreshed at least every refresh_after x this


class DeferredRefresh:
    """EsFileStore's refresh scheduling. Expects `store`, `refresh_counts()`, `logger` and `name`."""

    refresh_after: float = 1.0

    def _init_visibility(self, refresh_after: float) -> None:
        if refresh_after < 0:
            raise ValueError(f"refresh_after must be >= 0 seconds, got {refresh_after}")
        self.refresh_after = float(refresh_after)
        self._unrefreshed_since: float | None = None
        self._last_write = 0.0
        self._write_failed = False
        self._refresh_lock = asyncio.Lock()  # held by a refresh and by a write call's requests (`_writing`)
        self._refresh_task: asyncio.Task | None = None
        self._counts_stale = False  # a refresh showed writes the health counts do not include yet

    async def _written(self) -> None:
        """A write call succeeded: refresh now (refresh_after 0) or schedule the background refresh."""
        now = time.monotonic()
        self._last_write = now
        if self._unrefreshed_since is None:
            self._unrefreshed_since = now
        if self.refresh_after == 0:
            await self._settled()
        elif self._refresh_task is None or self._refresh_task.done():
            self._refresh_task = asyncio.create_task(self._refresh_later())

    def _write_failed_now(self) -> None:
        """A write call raised: what it left may be unrefreshed; the next write refreshes first."""
        self._write_failed = True
        if self._unrefreshed_since is None:
            self._unrefreshed_since = time.monotonic()

    def _writing(self) -> asyncio.Lock:
        """`async with self._writing():` around a write call's requests: no refresh can split them."""
        return self._refresh_lock

    async def _before_write(self) -> None:
        if self._write_failed:
            await self._visible()
            self._write_failed = False

    async def _visible(self) -> None:
        """Refresh the indices if any write since the last refresh is not searchable yet (counts: `_settled`)."""
        if self._unrefreshed_since is None or self.store is None:
            return
        async with self._refresh_lock:
            if self._unrefreshed_since is None:
                return  # another reader refreshed while this one waited
            since = self._unrefreshed_since
            self._unrefreshed_since = None  # a write finishing during the refresh sets it again
            try:
                await self.store.refresh()
            except BaseException:
                if self._unrefreshed_since is None:
                    self._unrefreshed_since = since
                raise
            self._counts_stale = True

    async def _settled(self) -> None:
        """`_visible`, then the health counts re-read (one request) if a refresh showed writes they lack."""
        await self._visible()
        if self._counts_stale:
            self._counts_stale = False
            await self.refresh_counts()

    async def _refresh_later(self) -> None:
        """The background refresh: after `refresh_after` s without writes, or `MAX_DELAY_FACTOR` x that at most."""
        while self._unrefreshed_since is not None or self._counts_stale:
            if self._unrefreshed_since is not None:
                since = self._unrefreshed_since
                due = min(self._last_write + self.refresh_after, since + self.refresh_after * MAX_DELAY_FACTOR)
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                    continue
            try:
                await self._settled()
            except Exception as e:  # noqa: BLE001 - the next read or write refreshes; nothing is lost
                self.logger.warning(f"{self.name}: background refresh failed: {type(e).__name__}: {e}")
                return

    async def _stop_refreshing(self) -> None:
        """At close: stop the background refresh and make the last writes searchable (best effort)."""
        if self._refresh_task is not None:
            self._refresh_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # its failure was logged; close refreshes below
                await self._refresh_task
            self._refresh_task = None
        try:
            await self._visible()
        except Exception as e:  # noqa: BLE001 - the writes are durable; the next refresh of anyone shows them
            self.logger.warning(f"{self.name}: could not refresh at close: {type(e).__name__}: {e}")
