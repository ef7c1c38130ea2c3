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
from typing import ClassVar

from ..store import MemoryStore
from .background import OPTIMIZING, PerIndexJob

SETTLE_POLL_S = 1.0  # how often the merges of the chunks index are asked while it merges
SETTLE_MAX_S = 300.0  # then it calibrates anyway

_again: set[str] = set()  # chunks indices whose running calibration is to ask once more when it ends


class KnnWidth(PerIndexJob):
    """Background calibration of one file store's chunks index."""

    running: ClassVar[dict[str, asyncio.Task]] = {}  # chunks index -> the calibration running for it in this process
    what = "k-NN width calibration"

    def later(self) -> None:
        """Calibrate in the background when due, after the index stops merging (no-op while one runs)."""
        store = self._store()
        if store is None or not store.admin.calibratable():
            return
        index = store.admin.chunks_index
        if index in OPTIMIZING:  # the optimize job measures the width after its merge
            return
        if (running := self.running.get(index)) is not None and not running.done():
            _again.add(index)
            return
        self._task = self.running[index] = asyncio.create_task(self._run(store), name=f"knn-width:{self._name}")

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
