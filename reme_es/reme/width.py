"""The k-NN width of the file store's index, measured in the background (`reme_es.store.calibration`).

`reme-es sync` and `reme-es optimize` calibrate the width when it is due; a ReMe process that writes through the
file store alone runs neither, so the file store does it itself: at start and after each `dump()` it asks, in the
background, whether a calibration is due (one `_stats` request when it is not) and runs it. A calibration measures
the graphs as they are, so it waits until the chunks index has stopped merging (a load leaves the node merging for
seconds: measured before, the width would be too narrow for the larger segments after). One calibration at a time
per chunks index in a process: the file stores of many workspaces of one set share its record; a `dump()` while it
runs has it ask once more when it ends (the writes since may have made it due). A failure is logged, never raised:
searches keep the width recorded before (or the rule, while none is).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..store import MemoryStore
from .background import OPTIMIZING, cancel

SETTLE_POLL_S = 1.0  # how often the merges of the chunks index are asked while it merges
SETTLE_MAX_S = 300.0  # then it calibrates anyway

_running: dict[str, asyncio.Task] = {}  # chunks index -> the calibration running for it in this process
_again: set[str] = set()  # chunks indices whose running calibration is to ask once more when it ends


class KnnWidth:
    """Background calibration of one file store's chunks index."""

    def __init__(self, store: Callable[[], MemoryStore | None], logger: logging.Logger, name: str):
        self._store, self._log, self._name = store, logger, name
        self._task: asyncio.Task | None = None

    def later(self) -> None:
        """Calibrate in the background when due, after the index stops merging (no-op while one runs)."""
        store = self._store()
        if store is None or not store.admin.calibratable():
            return
        index = store.admin.chunks_index
        if index in OPTIMIZING:  # the optimize job measures the width after its merge
            return
        if (running := _running.get(index)) is not None and not running.done():
            _again.add(index)
            return
        self._task = _running[index] = asyncio.create_task(self._run(store), name=f"knn-width:{self._name}")

    async def _run(self, store: MemoryStore) -> None:
        index = store.admin.chunks_index
        _again.add(index)
        while index in _again:
            _again.discard(index)
            await self._once(store)

    async def _once(self, store: MemoryStore) -> None:
        try:
            waited = 0.0
            while await store.admin.chunks_merging() and waited < SETTLE_MAX_S:
                await asyncio.sleep(SETTLE_POLL_S)
                waited += SETTLE_POLL_S
            record = await store.admin.calibrate_if_due()
            if record is not None:
                self._log.info(
                    "%s: k-NN width %d measured on %s (recall@10 %.3f, %s, %.1f s)",
                    self._name,
                    record.width,
                    store.admin.chunks_index,
                    record.recall,
                    record.stopped,
                    record.seconds,
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the width recorded before stays in use
            self._log.warning("%s: k-NN width not calibrated: %s", self._name, exc)

    async def wait(self) -> None:
        """Wait for the calibration of this store's index, if one runs in this process (tests, benches)."""
        store = self._store()
        task = _running.get(store.admin.chunks_index) if store is not None else self._task
        if task is not None:
            await asyncio.shield(task)

    async def stop(self) -> None:
        """Cancel this store's calibration (the store closes)."""
        task, self._task = self._task, None
        failed = await cancel(task)
        if failed is not None:  # the calibration logs its own failures; this would be a defect of it
            self._log.warning("%s: k-NN width calibration ended with %r", self._name, failed)
