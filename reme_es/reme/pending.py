"""Changes kept while the cluster is unreachable, and the loop that applies them once it answers again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from reme.schema import FileChunk, FileNode

from ..core.engine_settings import RETRYABLE_STATUS
from ..core.errors import BulkError, ConnectionFailed, RequestFailed

PENDING_BATCH = 100  # kept upserts written per request when the cluster answers again
RETRY_MAX_S = 30.0

Upsert = tuple[FileNode, list[FileChunk]]
# Writes the kept deletes and upserts (the store takes its write lock, then `PendingChanges.take()`); returns how many.
Apply = Callable[[], Awaitable[int]]


def unreachable(exc: BaseException) -> bool:
    """Whether a write failed because the cluster could not take it now (down, overloaded), not because of the data."""
    if isinstance(exc, ConnectionFailed):
        return True
    if isinstance(exc, RequestFailed):
        return exc.status is None or exc.status in RETRYABLE_STATUS
    if isinstance(exc, BulkError):
        return bool(exc.failures) and all(f.status in RETRYABLE_STATUS for f in exc.failures)
    return False


class PendingChanges:
    """Upserts and deletes that failed because the cluster was unreachable, retried in the background.

    The latest change of a path wins. `apply` is called (after 1 s, doubling up to `RETRY_MAX_S` while the cluster
    stays unreachable) until nothing is kept; a failure for another cause drops the kept changes, logged.
    """

    def __init__(
        self,
        apply: Apply,
        *,
        logger: Any = None,
        name: str = "file store",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self._apply = apply
        self._logger = logger or logging.getLogger(__name__)
        self._name = name
        self._sleep = sleep
        self._upserts: dict[str, Upsert] = {}
        self._deletes: set[str] = set()
        self._task: asyncio.Task | None = None
        self.closing = False

    def __bool__(self) -> bool:
        return bool(self._upserts or self._deletes)

    def paths(self) -> dict[str, list[str]]:
        """Paths whose upsert or delete is kept, not yet applied."""
        return {"upserts": sorted(self._upserts), "deletes": sorted(self._deletes)}

    def keep(self, upserts: Sequence[Upsert] = (), deletes: Sequence[str] = ()) -> None:
        """Remember failed changes and make sure a retry loop runs (unless the store is closing)."""
        for node, chunks in upserts:
            self._deletes.discard(node.path)
            self._upserts[node.path] = (node, chunks)
        for path in deletes:
            self._upserts.pop(path, None)
            self._deletes.add(path)
        self._logger.warning(
            f"{self._name}: cluster unreachable; keeping {len(self._upserts)} upsert(s) and "
            f"{len(self._deletes)} delete(s) to apply when it answers again"
        )
        if not self.closing and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._retry(), name=f"pending-changes:{self._name}")

    def applied(self, paths: list[str]) -> None:
        """These paths were written (upserted or deleted) since: nothing kept for them is applied any more."""
        for path in paths:
            self._upserts.pop(path, None)
            self._deletes.discard(path)

    def take(self) -> tuple[list[str], list[list[Upsert]]]:
        """What to apply now: the kept deletes, and the kept upserts in batches of `PENDING_BATCH`."""
        upserts = list(self._upserts.values())
        return sorted(self._deletes), [upserts[i : i + PENDING_BATCH] for i in range(0, len(upserts), PENDING_BATCH)]

    async def _retry(self) -> None:
        """Apply the kept changes once the cluster answers: backoff from 1 s up to `RETRY_MAX_S`."""
        delay = 1.0
        while self and not self.closing:
            await self._sleep(delay)
            try:
                applied = await self._apply()
            except Exception as e:  # the loop must outlive any failure
                if not unreachable(e):
                    self._logger.exception(f"{self._name}: kept changes could not be applied; giving up on them")
                    self._upserts.clear()
                    self._deletes.clear()
                    return
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            self._logger.info(f"{self._name}: cluster answers again; applied {applied} kept change(s)")

    async def wait(self) -> None:
        """Wait until the kept changes are applied (tests, shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def close(self) -> None:
        """Stop retrying; warn about what is left (ReMe's start-up scan re-indexes it)."""
        self.closing = True
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self:
            self._logger.warning(
                f"{self._name}: closing with {len(self._upserts)} upsert(s) and {len(self._deletes)} "
                "delete(s) not applied (cluster unreachable); ReMe's start-up scan re-indexes them"
            )
