"""The file store's tag index (mirrors LocalFileStore: optional, never blocks the store)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from reme.components.tag_index import BaseTagIndex
from reme.schema import FileNode

from ..core.models import FileDoc
from .convert import to_file_node

# The stored files whose front matter holds a key (the store makes its writes visible first).
TaggedFiles = Callable[[str], Awaitable[list[FileDoc]]]


class TagIndexSync:
    """Keeps a bound tag index in step with the store; a failed incremental update rebuilds it from the stored nodes."""

    def __init__(
        self,
        tag_index: Callable[[], BaseTagIndex | None],
        tagged_files: TaggedFiles,
        logger: Any = None,
        name: str = "file store",
    ):
        self._tag_index = tag_index
        self._tagged_files = tagged_files
        self._logger = logger or logging.getLogger(__name__)
        self._name = name

    @property
    def tag_index(self) -> BaseTagIndex | None:
        """The bound tag index (None: none configured), resolved when ReMe starts the file store."""
        return self._tag_index()

    async def rebuild(self, reason: str) -> bool:
        """Rebuild the tag index from the stored nodes; False (logged, marked unhealthy) when that failed."""
        tag_index = self.tag_index
        if tag_index is None:
            return True
        try:
            # Only files whose front matter holds the tag key can carry tags: one query for those, not every node.
            tagged = await self._tagged_files(tag_index.tag_key)
            await tag_index.rebuild([to_file_node(doc) for doc in tagged])
        except Exception:
            what = f"{self._name}: tag index rebuild failed during {reason}"
            self._logger.exception(f"{what}; file store stays available")
            tag_index.set_healthy(False)
            return False
        tag_index.set_healthy(True)
        return True

    async def upserted(self, nodes: list[FileNode]) -> None:
        """Index the tags of written nodes."""
        await self._incremental("update", lambda tag_index: tag_index.upsert_nodes(nodes))

    async def deleted(self, paths: list[str]) -> None:
        """Forget the tags of deleted paths."""
        await self._incremental("delete", lambda tag_index: tag_index.delete(paths))

    async def _incremental(self, what: str, change: Callable[[BaseTagIndex], Awaitable[Any]]) -> None:
        """Apply one change to the bound tag index; when it fails, rebuild the index from the stored nodes."""
        tag_index = self.tag_index
        if tag_index is None:
            return
        try:
            await change(tag_index)
        except Exception:
            self._logger.exception(f"{self._name}: incremental tag index {what} failed; rebuilding")
            await self.rebuild(f"incremental {what} recovery")

    async def clear(self) -> None:
        """Empty the tag index (the store was cleared)."""
        if self.tag_index is not None:
            await self.tag_index.clear()
