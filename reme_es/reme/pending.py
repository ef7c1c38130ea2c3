"""Changes kept while the cluster is unreachable, and the loop that applies them once it answers again."""

from __future__ import annotations

import asyncio

from reme.components.file_store import BaseFileStore
from reme.schema import FileChunk, FileNode

from ..adapters.base import RETRYABLE_STATUS
from ..errors import BulkError, ConnectionFailed, RequestFailed

_PENDING_BATCH = 100  # kept upserts written per request when the cluster answers again
_RETRY_MAX_S = 30.0


def _unreachable(exc: BaseException) -> bool:
    """Whether a write failed because the cluster could not take it now (down, overloaded), not because of the data."""
    if isinstance(exc, ConnectionFailed):
        return True
    if isinstance(exc, RequestFailed):
        return exc.status is None or exc.status in RETRYABLE_STATUS
    if isinstance(exc, BulkError):
        return bool(exc.failures) and all(f.status in RETRYABLE_STATUS for f in exc.failures)
    return False



class PendingChanges:
    """EsFileStore's upserts and deletes that failed because the cluster was unreachable, retried in the background.

    Expects `_pending_upserts`, `_pending_deletes`, `_retry_task` and `_closing` set by the store, and its `upsert`
    and `delete`.
    """

    @property
    def pending_changes(self) -> dict[str, list[str]]:
        """Paths whose upsert or delete failed because the cluster was unreachable, not yet applied."""
        return {"upserts": sorted(self._pending_upserts), "deletes": sorted(self._pending_deletes)}

    def _keep_pending(
        self, upserts: list[tuple[FileNode, list[FileChunk]]] = (), deletes: list[str] = ()
    ) -> None:
        """Remember failed changes (the latest change of a path wins) and make sure a retry loop runs."""
        for node, chunks in upserts:
            self._pending_deletes.discard(node.path)
            self._pending_upserts[node.path] = (node, chunks)
        for path in deletes:
            self._pending_upserts.pop(path, None)
            self._pending_deletes.add(path)
        self.logger.warning(
            f"{self.name}: cluster unreachable; keeping {len(self._pending_upserts)} upsert(s) and "
            f"{len(self._pending_deletes)} delete(s) to apply when it answers again"
        )
        if not self._closing and (self._retry_task is None or self._retry_task.done()):
            self._retry_task = asyncio.create_task(self._retry_pending(), name=f"pending-changes:{self.name}")

    async def _retry_pending(self) -> None:
        """Apply the kept changes once the cluster answers: backoff from 1 s up to `_RETRY_MAX_S`."""
        delay = 1.0
        while (self._pending_upserts or self._pending_deletes) and not self._closing:
            await asyncio.sleep(delay)
            try:
                applied = await self._apply_pending()
            except Exception as e:  # the loop must outlive any failure
                if not _unreachable(e):
                    self.logger.exception(f"{self.name}: kept changes could not be applied; giving up on them")
                    self._pending_upserts.clear()
                    self._pending_deletes.clear()
                    return
                delay = min(delay * 2, _RETRY_MAX_S)
                continue
            self.logger.info(f"{self.name}: cluster answers again; applied {applied} kept change(s)")

    @BaseFileStore.serialized
    async def _apply_pending(self) -> int:
        """Write the kept deletes and upserts (taken under the write lock, so a newer change is never undone)."""
        deletes = sorted(self._pending_deletes)
        upserts = list(self._pending_upserts.values())
        if deletes:
            await self.delete(deletes)
        for start in range(0, len(upserts), _PENDING_BATCH):
            await self.upsert(upserts[start : start + _PENDING_BATCH])
        return len(deletes) + len(upserts)

    async def wait_pending(self) -> None:
        """Wait until the kept changes are applied (tests, shutdown)."""
        if self._retry_task is not None:
            await asyncio.shield(self._retry_task)
