"""Background tasks of the file store (calibration, backfill, refresh): how one is stopped."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..store import MemoryStore

# chunks indices the optimize job merges now in this process (`optimize.py`): it calibrates the width itself after the
# merge, so the background width calibration (`width.py`) does not start beside it
OPTIMIZING: set[str] = set()


async def cancel(task: asyncio.Task | None) -> Exception | None:
    """Cancel `task` and wait until it has ended; what it raised besides the cancellation (for the caller to log).

    A task that had already ended is awaited too, so an error it ended with is returned rather than lost."""
    if task is None:
        return None
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return None
    except Exception as exc:  # noqa: BLE001 - handed to the caller, which logs it
        return exc
    return None


class PerIndexJob:
    """A background job of the file store that runs at most once at a time per chunks index in this process (the
    width calibration, width.py; the optimize job, optimize.py): a subclass keeps its own `running` map (chunks
    index -> the task waiting or running for it) and names itself in `what` for the log."""

    running: ClassVar[dict[str, asyncio.Task]]
    what: ClassVar[str]

    def __init__(self, store: Callable[[], MemoryStore | None], logger: logging.Logger, name: str):
        self._store, self._log, self._name = store, logger, name
        self._task: asyncio.Task | None = None

    async def wait(self) -> None:
        """Wait for the job of this store's index, if one waits or runs in this process (tests, benches)."""
        store = self._store()
        task = self.running.get(store.admin.chunks_index) if store is not None else self._task
        if task is not None:
            await asyncio.shield(task)

    async def stop(self) -> None:
        """Cancel this store's job (the store closes)."""
        task, self._task = self._task, None
        failed = await cancel(task)
        if failed is not None:  # the job logs its own failures; this would be a defect of it
            self._log.warning("%s: %s ended with %r", self._name, self.what, failed)
