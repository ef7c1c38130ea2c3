"""ReMe's health and metadata views of the file store: cluster counts, and the file graph and keyword index views."""

from __future__ import annotations

import itertools
import logging
from types import SimpleNamespace
from typing import Any

from reme.components.base_component import BaseComponent
from reme.components.file_graph import BaseFileGraph
from reme.components.file_store import BaseFileStore
from reme.components.keyword_index import BaseKeywordIndex
from reme.enumeration import LinkScopeEnum
from reme.schema import FileLink, FileNode

from ..core.errors import ConfigError
from ..store import MemoryStore


class HealthCounts:
    """The cluster's file, chunk, vector and link counts as ReMe's health_check reads them, re-read after refreshes."""

    def __init__(self, logger: Any = None, name: str = "file store"):
        self.counts = {"files": 0, "chunks": 0, "vectors": 0, "links": 0}
        self.file_chunks = ChunkCounts()
        self._logger = logger or logging.getLogger(__name__)
        self._name = name

    async def refresh(self, store: MemoryStore | None) -> None:
        """Re-read the counts in one request (a failure is logged: health shows the last known ones, and no write
        fails for it)."""
        if store is None:
            return
        try:
            self.counts = await store.inspect.health_counts()
        except Exception as e:  # noqa: BLE001 - a count must never fail a write; health shows the last known one
            self._logger.warning(f"{self._name}: could not refresh counts for health_check: {type(e).__name__}: {e}")
            return
        self.file_chunks.set(self.counts["chunks"], self.counts["vectors"])


async def stand_in_for_paired(store: BaseFileStore, paired: dict[str, str | None]) -> list[BaseComponent]:
    """Answer for the local file graph and keyword index ReMe's default.yaml pairs with `file_store.default`.

    With `extends: default` ReMe still builds and starts `file_graph.default` (local) and `keyword_index.default`
    (bm25) beside this store. Nothing uses them, and ReMe's `health_check` reports their empty state (0 nodes,
    0 docs). When this store was paired with one of them (the pass-through key) and no other configured
    component names it, the store puts a view of itself in its place in the application's component map, so
    health_check and anything looking the component up by name see this store's counts. ReMe still closes the
    local one it started. Returns the views started (the store closes them).
    """
    views: list[BaseComponent] = []
    if store.app_context is None:
        return views
    for ctype, view_cls, local_cls in (
        ("file_graph", EsFileGraph, "LocalFileGraph"),
        ("keyword_index", EsKeywordIndex, "BM25Index"),
    ):
        name = paired.get(ctype)
        group = store.app_context.components.get(ctype, {})
        current = group.get(name) if name else None
        if not name or current is None or type(current).__name__ != local_cls or _named_elsewhere(store, ctype, name):
            continue
        view = view_cls(store=store, name=name, app_context=store.app_context)
        await view.start()
        group[name] = view
        views.append(view)
        store.logger.info(f"{store.name}: {ctype}.{name} now reports this store's counts (the local one is unused)")
    return views


def _named_elsewhere(store: BaseFileStore, ctype: str, name: str) -> bool:
    """Whether a configured component other than this store names `ctype` component `name`."""
    for group_type, group in store.app_context.app_config.components.items():
        for comp_name, cfg in group.items():
            if group_type == "file_store" and comp_name == store.name:
                continue
            if (cfg.model_extra or {}).get(ctype) == name:
                return True
    return False


class ChunkCounts:
    """What ReMe's health_check reads as a file store's `file_chunks`: the cluster's chunk counts, no chunks in memory.

    ReMe counts `len(file_chunks)` and the values whose `embedding` is set; this stands for that many chunks.
    """

    _WITH, _WITHOUT = SimpleNamespace(embedding=True), SimpleNamespace(embedding=None)

    def __init__(self) -> None:
        self.chunks = 0
        self.with_vectors = 0

    def set(self, chunks: int, with_vectors: int) -> None:
        """Record the cluster's counts."""
        self.chunks, self.with_vectors = chunks, min(with_vectors, chunks)

    def __len__(self) -> int:
        return self.chunks

    def values(self):
        """One stand-in per stored chunk, with `embedding` set for those that have a vector."""
        return itertools.chain(
            itertools.repeat(self._WITH, self.with_vectors),
            itertools.repeat(self._WITHOUT, self.chunks - self.with_vectors),
        )


class _StoreView:
    """Shared by the views: a read-only stand-in whose writes belong to the file store."""

    name: str  # the component's (ReMe's BaseComponent sets it)
    store: BaseFileStore  # the reme-es file store it reads

    def _read_only(self, what: str):
        raise ConfigError(
            f"{type(self).__name__} {self.name!r} is a read-only view of the reme-es file store {self.store.name!r}; "
            f"{what} goes through the file store (upsert/delete), not through this component"
        )


class EsFileGraph(_StoreView, BaseFileGraph):
    """The file store's links as ReMe's `file_graph` (move/delete jobs read it; health_check counts it).

    Health counts come from the store's last refresh: nodes = files, edges = every stored wikilink edge (REAL and
    VIRTUAL alike: the split is decided at query time, so it is not counted; `n_virtual` is None).
    """

    def __init__(self, store: BaseFileStore, name: str | None = None, **kwargs):
        super().__init__(name=name or f"{store.name}-links", **kwargs)
        self.store = store

    # ReMe's health_check reads remote graph backends' counts from these cached attributes (its neo4j branch)
    _driver = property(lambda self: self.store.store)
    _n_nodes = property(lambda self: self.store.counts["files"])
    _n_edges = property(lambda self: self.store.counts["links"])
    _n_virtual = None

    async def get_nodes(self, paths: list[str] | None = None) -> list[FileNode]:
        """File nodes, as the store returns them."""
        return await self.store.get_nodes(paths)

    async def get_outlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Outlinks, as the store returns them."""
        return await self.store.get_outlinks(path, scope)

    async def get_inlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Inlinks, as the store returns them."""
        return await self.store.get_inlinks(path, scope)

    async def rebuild_links(self) -> None:
        """No-op: links are resolved at query time."""

    async def upsert_nodes(self, nodes: list[FileNode]) -> None:
        """Refused: the file store writes nodes with their chunks."""
        self._read_only("writing nodes")

    async def delete_nodes(self, paths: list[str]) -> None:
        """Refused: the file store deletes nodes with their chunks."""
        self._read_only("deleting nodes")

    async def clear(self) -> None:
        """Refused: the file store clears its indices."""
        self._read_only("clearing")


class EsKeywordIndex(_StoreView, BaseKeywordIndex):
    """The file store's server-side BM25 as ReMe's `keyword_index` (health_check counts its docs: the chunks)."""

    def __init__(self, store: BaseFileStore, name: str | None = None, **kwargs):
        super().__init__(name=name or f"{store.name}-bm25", **kwargs)
        self.store = store

    n_docs = property(lambda self: self.store.counts["chunks"])

    async def _start(self) -> None:
        """Nothing local to load."""

    async def _close(self) -> None:
        """Nothing local to dump."""

    async def retrieve(self, query: str, limit: int = 3) -> dict[str, float]:
        """Chunk id -> BM25 score of the best `limit` chunks, from the cluster."""
        return {c.id: c.scores["keyword"] for c in await self.store.keyword_search(query, limit, {})}

    async def add_docs(self, docs_dict: dict[str, str]) -> None:
        """Refused: the file store indexes chunks."""
        self._read_only("indexing")

    async def delete_docs(self, doc_ids: list[str]) -> None:
        """Refused: the file store deletes chunks."""
        self._read_only("deleting")

    async def clear(self) -> None:
        """Refused: the file store clears its indices."""
        self._read_only("clearing")
