"""The optimize job in ReMe's file store (issue 53; `reme_es.store.optimize_job`): after a large load, once no write
came for `optimize_job.idle_s`, the chunks index is merged down to the segment count search wants and the k-NN width is
calibrated again on the merged graph.

ReMe's `optimize_index_cron` runs `optimize_index` on its own schedule, which a process that only loads may never
reach; so the file store also runs the job itself, in the background, as it measures the width (`width.py`): each
write and `dump()` (and the start) ask for it with `later()`, which only notes the time; one task per chunks index in
a process waits until the store has been idle for `idle_s`, lets a running width calibration end, and runs the job when
`optimize_due` holds (one `_stats` request when it does not). A write during the wait moves the wait on. The option
`optimize_after_load` (REME_ES_OPTIMIZE_AFTER_LOAD=false) turns it off. A failure is logged, never raised; close
cancels the wait (a merge the node has started goes on there).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import ClassVar

from ..store import MemoryStore
from ..store.optimize_job import RULE, optimize_for_search
from .background import OPTIMIZING, PerIndexJob
from .width import KnnWidth


async def _optimizing(store: MemoryStore) -> dict | None:
    """`optimize_for_search`, the index marked as merging meanwhile (no background width calibration beside it)."""
    index = store.admin.chunks_index
    OPTIMIZING.add(index)
    try:
        return await optimize_for_search(store)
    finally:
        OPTIMIZING.discard(index)


class OptimizeJob(PerIndexJob):
    """The background optimize job of one file store's chunks index."""

    running: ClassVar[dict[str, asyncio.Task]] = {}  # chunks index -> the job waiting or running for it in this process
    what = "optimize job"

    def __init__(
        self,
        store: Callable[[], MemoryStore | None],
        width: KnnWidth,
        enabled: bool,
        logger: logging.Logger,
        name: str,
    ):
        super().__init__(store, logger, name)
        self._width, self.enabled = width, enabled
        self.last_write = time.monotonic()
        self.last: dict | None = None  # what the last run did (None: nothing was due)

    def later(self) -> None:
        """Note a write (or a dump) and have the job run once the store has been idle for `idle_s` (no-op while
        one waits or runs for this index: the wait counts from this call)."""
        self.last_write = time.monotonic()
        store = self._store()
        if not self.enabled or store is None:
            return
        index = store.admin.chunks_index
        if (running := self.running.get(index)) is not None and not running.done():
            return
        self._task = self.running[index] = asyncio.create_task(self._run(store), name=f"optimize:{self._name}")

    async def _run(self, store: MemoryStore) -> None:
        try:
            while (left := self.last_write + RULE["idle_s"] - time.monotonic()) > 0:
                await asyncio.sleep(left)
            await self._width.wait()  # a calibration of the graphs about to be merged ends first
            self.last = result = await _optimizing(store)
            if result is not None:
                after, width = result["after"]["chunks"], result["knn_width"]
                self._log.info(
                    "%s: optimize job merged %s to %d segments in %.1f s; k-NN width %s",
                    self._name,
                    store.admin.chunks_index,
                    after["segments"],
                    result["seconds"],
                    f"{width['width']} (recall@10 {width['recall']:.3f})" if width else "not measured",
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the segments and width stay as they were
            self._log.warning("%s: optimize job failed: %s", self._name, exc)

    async def step(self, store: MemoryStore) -> dict:
        """ReMe's `optimize_index`: the job when enabled and due (after a running width calibration), else the
        expunge of deleted documents alone (`MemoryStore.optimize`); logged, and returned."""
        result = None
        if self.enabled:
            await self._width.wait()
            result = await _optimizing(store)
        if result is None:
            result = await store.admin.optimize()
        before, after, width = result["before"]["chunks"], result["after"]["chunks"], result.get("knn_width")
        self._log.info(
            f"{self._name}: optimize_index merged={result['merged']} segments={before['segments']}->"
            f"{after['segments']}" + (f" k-NN width {width['width']} recall@10 {width['recall']:.3f}" if width else "")
        )
        return result
