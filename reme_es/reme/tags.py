"""The file store's tag index (mirrors LocalFileStore: optional, never blocks the store)."""

from __future__ import annotations

from reme.schema import FileNode

from .convert import to_file_node


class TagIndexUpdates:
    """EsFileStore's updates of its bound tag index; a failed incremental update rebuilds it from the stored nodes."""

    async def _rebuild_tag_index(self, reason: str) -> bool:
        if not self.tag_index_enabled:
            return True
        tag_index = self.require_tag_index()
        try:
            # Only files whose front matter holds the tag key can carry tags: one query for those, not every node
            # (a restart at 100k chunks read all 10k file docs here).
            await self._visible()
            tagged = await self._require_store().files_with_front_matter(tag_index.tag_key)
            await tag_index.rebuild([to_file_node(doc) for doc in tagged])
        except Exception:
            self.logger.exception(f"{self.name}: tag index rebuild failed during {reason}; file store stays available")
            tag_index.set_healthy(False)
            return False
        tag_index.set_healthy(True)
        return True

    async def _upsert_tag_nodes(self, nodes: list[FileNode]) -> None:
        if not self.tag_index_enabled:
            return
        try:
            await self.require_tag_index().upsert_nodes(nodes)
        except Exception:
            self.logger.exception(f"{self.name}: incremental tag index update failed; rebuilding")
            await self._rebuild_tag_index("incremental update recovery")

    async def _delete_tag_paths(self, paths: list[str]) -> None:
        if not self.tag_index_enabled:
            return
        try:
            await self.require_tag_index().delete(paths)
        except Exception:
            self.logger.exception(f"{self.name}: incremental tag index delete failed; rebuilding")
            await self._rebuild_tag_index("incremental delete recovery")
