"""ReMe file store backed by OpenSearch or Elasticsearch (a drop-in for ReMe's `local` file store).

Nodes, chunks, links and vectors live in the cluster (`reme_es.store.MemoryStore`), so a restarted ReMe sees its
index at once: `get_nodes()` returns the stored `st_mtime`s and ReMe's start-up scan re-indexes only what changed
on disk. BM25 runs server-side; vectors come from ReMe's bound embedding store exactly as the local store gets them.

The store is composed of parts that own their state behind a small interface: `Embeddings` (embedding,
vector planning through the store's one planner, backfill: backfill.py), `PendingChanges` (pending.py: changes kept
while the cluster is unreachable), `HealthCounts` (counts.py: the counts ReMe's health views read), `TagIndexSync`
(tags.py: the tag index) and `DeferredRefresh` (visibility.py: when writes are refreshed: before this store's next
read, at dump and close, soon after in the background), `KnnWidth` (width.py: the k-NN width measured in the
background when due, at start and after `dump`); `convert` holds the pure ReMe <-> reme-es conversions and
`keys` the configuration keys, parsed into the options model (`reme_es.core.options`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reme.components.base_component import BaseComponent
from reme.components.embedding_store import BaseEmbeddingStore
from reme.components.file_store import BaseFileStore
from reme.components.tag_index import BaseTagIndex
from reme.enumeration import LinkScopeEnum
from reme.schema import FileChunk, FileLink, FileNode

from ..adapters.transport import ClientSettings
from ..core.checks import redact_host
from ..core.engine_settings import DEFAULT_ENGINE
from ..core.models import Chunk, Hit, LinkScope
from ..core.options import default_workspace_key
from ..store import MemoryStore
from ..store.fusion import apply_min_score
from ..store.shown import Shown
from .backfill import Embeddings
from .convert import as_vector, file_chunk_from_source, to_chunk, to_file_chunk, to_file_doc, to_file_link, to_file_node
from .counts import EsFileGraph, HealthCounts, stand_in_for_paired
from .keys import REME_PASS_THROUGH_KEYS, file_store_keys, plugin_options, split_keys
from .opening import HOSTS_ENV, open_matching, resolve_hosts
from .optimize import OptimizeJob
from .pending import PendingChanges, unreachable
from .rebuild import rebuild_derived
from .tags import TagIndexSync
from .visibility import DeferredRefresh
from .width import KnnWidth


class EsFileStore(BaseFileStore):
    """ReMe file store on an OpenSearch or Elasticsearch cluster.

    Invariants: each upserted path's chunks replace the stored ones and a search never sees both; a chunk
    whose id and text are already stored with a vector of the active dimension keeps that vector; when the
    embedding provider fails the chunks are stored without vectors, the embedding store is marked unhealthy
    and BM25 keeps working, and `resume_embedding` later fills the gaps from the index itself.
    """

    engine = DEFAULT_ENGINE

    def __init__(self, embedding_store: str = "default", tag_index: str = "", **kwargs):
        component, given = split_keys(type(self), kwargs)
        super().__init__(**component)
        self.options = plugin_options(given, self.engine, self.name or "file store")
        # ReMe's default pairing (`file_graph: default`, `keyword_index: default`): components this store stands in for
        self.paired = {"file_graph": kwargs.get("file_graph"), "keyword_index": kwargs.get("keyword_index")}
        self.store: MemoryStore | None = None
        self._views: list[BaseComponent] = []
        self.refresher = DeferredRefresh(
            self._refresh_store,
            self.options.search.refresh_after,
            recount=self.refresh_counts,
            logger=self.logger,
            name=self.name,
        )
        self.pending = PendingChanges(self._apply_pending, logger=self.logger, name=self.name)
        self.health = HealthCounts(self.logger, self.name)
        self._bind_components(embedding_store, tag_index)
        self.vectors = Embeddings(
            lambda: self.embedding_store,
            lambda: self.store,
            self.refresher.visible,
            self.refresh_counts,
            self._maintenance_guard,
            self.logger,
            self.name,
        )
        self.tags = TagIndexSync(lambda: self.tag_index, self._tagged_files, self.logger, self.name)
        self.knn_width = KnnWidth(lambda: self.store, self.logger, self.name)
        enabled = self.options.search.optimize_after_load
        self.optimizer = OptimizeJob(lambda: self.store, self.knn_width, enabled, self.logger, self.name)
        self.file_graph = EsFileGraph(store=self)
        ClientSettings.from_options(self.options.connection)  # refuse conflicting auth settings at once

    vector_weight = property(lambda self: self.options.search.vector_weight, doc="The fusion's vector weight.")
    feedback = property(lambda self: self.options.search.feedback, doc="Feedback hits per branch (0: off).")

    def _bind_components(self, embedding_store: str, tag_index: str) -> None:
        """Bind ReMe's embedding store (local by default) and tag index (none unless named; `default` is local)."""
        from reme.components.embedding_store import LocalEmbeddingStore
        from reme.components.tag_index import LocalTagIndex

        self.embedding_store = self.bind(embedding_store, BaseEmbeddingStore, default_factory=LocalEmbeddingStore)
        local = LocalTagIndex if tag_index == "default" else None
        self.tag_index = self.bind(tag_index, BaseTagIndex, default_factory=local, optional=False)

    # -- parts and state --------------------------------------------------------------------------

    @property
    def embedding_dimensions(self) -> int:
        """Dimension of the bound embedding model; 0 when vectors are off."""
        if self.embedding_store is None:
            return 0
        return max(0, int(getattr(self.embedding_store, "dimensions", 0)))

    counts = property(lambda self: self.health.counts, doc="File, chunk, vector and link counts (ReMe's health views).")
    file_chunks = property(lambda self: self.health.file_chunks, doc="What ReMe's health_check counts as chunks.")
    pending_changes = property(lambda self: self.pending.paths(), doc="Kept upserts and deletes, by path.")
    refresh_after = property(
        lambda self: self.refresher.refresh_after,
        lambda self, s: setattr(self.refresher, "refresh_after", float(s)),
        doc="Seconds after the last write that the background refresh runs (0: at the end of every write).",
    )

    def _require_store(self) -> MemoryStore:
        if self.store is None:
            raise RuntimeError(f"file store {self.name} is not started")
        return self.store

    async def _refresh_store(self) -> bool:
        """The deferred refresh's action: refresh the indices (False: not started; the counts: `refresh_counts`)."""
        if self.store is None:
            return False
        await self.store.refresh()
        return True

    async def refresh_counts(self) -> None:
        """Re-read the cluster's file, chunk, vector and link counts (what ReMe's sync health_check shows)."""
        await self.health.refresh(self.store)

    async def _tagged_files(self, key: str) -> list:
        await self.refresher.visible()
        return await self._require_store().links.with_front_matter(key)

    # -- lifecycle ---------------------------------------------------------------------------------

    async def _start(self) -> None:
        self.vectors.closing = self.pending.closing = False
        await super()._start()
        conn, index = self.options.connection, self.options.index
        hosts = await resolve_hosts(conn.hosts, conn.aws_region, conn.flavour, self.logger, self.name)
        settings = ClientSettings.from_options(conn, hosts)
        key = index.workspace_key or default_workspace_key(self.workspace_path)
        dims = self.embedding_dimensions or None
        if self.embedding_store is not None and not dims:
            self.logger.warning(f"{self.name}: the embedding store reports no dimension; vectors are off")
        self.store = await open_matching(
            settings,
            index.index_prefix,
            self.engine,
            index.model_copy(update={"dims": dims}),
            self.logger,
            self.name,
            folder=self.workspace_path,
            search=self.options.search,
            workspace=key,
        )
        try:  # before ReMe's start-up scan writes or deletes anything: another folder's workspace is never touched
            await self.store.claim(str(Path(self.workspace_path).resolve()), self.options.index.take_over)
        except BaseException:
            await self.store.close()
            self.store = None
            raise
        caps, where, dims = self.store.caps, ", ".join(redact_host(h) for h in hosts), self.store.dims
        assert caps is not None, "open_matching returns a connected store"
        self.logger.info(
            f"{self.name}: {caps.engine} {caps.version} at {where}, index set={self.store.prefix}, "
            f"workspace={self.store.workspace or '(the whole set, from before shared sets)'}, dims={dims}"
        )
        if self.store.dims:
            await self.vectors.record_model()
        await self.store.refresh()  # what a process that stopped mid-write left unrefreshed
        await self.refresh_counts()
        self._views = await stand_in_for_paired(self, self.paired)
        await self.tags.rebuild("startup synchronization")
        self.vectors.start_backfill()
        self.knn_width.later()
        self.optimizer.later()

    async def _close(self) -> None:
        self.vectors.closing = True
        await self.vectors.cancel_backfill()
        await self.optimizer.stop()
        await self.knn_width.stop()
        await self.refresher.stop()
        for view in self._views:
            await view.close()
        self._views = []
        self.pending.close()
        if self.store is not None:
            await self.store.close()
            self.store = None
        await super()._close()

    async def dump(self) -> None:
        """Make every write so far searchable and the health counts current (each write is durable when its call
        returns; see `visibility`), then measure the k-NN width in the background when due (`width`)."""
        await self.refresher.settled()
        self.knn_width.later()
        self.optimizer.later()

    async def load(self) -> None:
        """Nothing to load: the cluster holds the state."""

    # -- writes ------------------------------------------------------------------------------------

    @BaseFileStore.serialized
    async def upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> None:
        """Store files with their chunks; unchanged chunks keep their stored vectors. When the cluster cannot be
        reached the files are kept and written as soon as it answers again (the error is raised all the same, so ReMe
        reports the failure)."""
        if not files:
            return
        try:
            await self.refresher.before_write()
            await self._upsert(files)
        except Exception as e:
            self.refresher.write_failed()
            if unreachable(e):
                self.pending.keep(upserts=files)
            raise
        self.pending.applied([node.path for node, _ in files])

    async def _upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> None:
        store = self._require_store()
        unchanged = await self.vectors.for_upsert(files)
        docs = []
        for node, chunks in files:
            node.chunk_ids = [c.id for c in chunks]
            vectors = [as_vector(c.embedding) if c.embedding is not None else None for c in chunks]
            docs.append((to_file_doc(node, chunks), [to_chunk(c, v) for c, v in zip(chunks, vectors)]))
        async with self.refresher.writing():
            await store.upsert(docs, refresh=False, unchanged=unchanged)
        await self.refresher.written()
        self.optimizer.later()  # the optimize job waits until the writes stop
        await self.tags.upserted([node for node, _ in files])

    @BaseFileStore.serialized
    async def delete(self, path: str | list[str]) -> None:
        """Delete files with their chunks and links; unknown paths are skipped."""
        paths = [path] if isinstance(path, str) else list(path)
        if not paths:
            return
        try:
            await self.refresher.before_write()
            async with self.refresher.writing():
                deleted = await self._require_store().delete(paths, refresh=False)
        except Exception as e:
            self.refresher.write_failed()
            if unreachable(e):
                self.pending.keep(deletes=paths)
            raise
        self.pending.applied(paths)
        if deleted:
            await self.refresher.written()
            await self.tags.deleted(paths)

    @BaseFileStore.serialized
    async def _apply_pending(self) -> int:
        """Write the kept deletes and upserts (taken under the write lock, so a newer change is never undone)."""
        deletes, batches = self.pending.take()
        if deletes:
            await self.delete(deletes)
        for batch in batches:
            await self.upsert(batch)
        return len(deletes) + sum(len(batch) for batch in batches)

    async def wait_pending(self) -> None:
        """Wait until the changes kept while the cluster was unreachable are applied (tests, shutdown)."""
        await self.pending.wait()

    @BaseFileStore.serialized
    async def clear(self) -> None:
        """Drop every file, chunk and link of this workspace's indices."""
        await self._require_store().clear()
        await self.refresh_counts()
        await self.tags.clear()

    # -- embeddings (ReMe's file store API) --------------------------------------------------------

    async def require_embedding_rebuild(self) -> None:
        """Disable vector reads and writes until `reindex('embedding')` rebuilds every vector."""
        await self.vectors.require_rebuild()

    async def resume_embedding(self, *, verified: bool = False, rebuild: bool = False) -> bool:
        """Schedule a background pass that embeds stored chunks lacking vectors (all chunks if `rebuild`)."""
        return await self.vectors.resume(verified=verified, rebuild=rebuild)

    async def wait_backfill(self) -> None:
        """Wait for a scheduled embedding backfill to finish (tests, shutdown)."""
        await self.vectors.wait_backfill()

    # -- graph -------------------------------------------------------------------------------------

    async def get_nodes(self, paths: list[str] | None = None) -> list[FileNode]:
        """File nodes by path (missing skipped, input order kept); None = every node, sorted by path."""
        await self.refresher.visible()
        store = self._require_store()
        if paths is None:
            return [to_file_node(doc) for doc in await store.links.get_files(None)]
        found = {doc.path: doc for doc in await store.links.get_files(list(paths))}
        return [to_file_node(found[p]) for p in paths if p in found]

    async def get_outlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Links written in `path`, in order; REAL targets are indexed nodes, VIRTUAL ones are not."""
        await self.refresher.visible()
        links = await self._require_store().links.outlinks(path, LinkScope(LinkScopeEnum(scope).value))
        return [to_file_link(link) for link in links]

    async def get_inlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Links from every indexed file to `path`, sources sorted by path."""
        await self.refresher.visible()
        links = await self._require_store().links.inlinks(path, LinkScope(LinkScopeEnum(scope).value))
        return [to_file_link(link) for link in links]

    async def rebuild_links(self) -> None:
        """No-op: links are stored with their source file and resolved at query time."""

    # -- search ------------------------------------------------------------------------------------

    async def vector_search(self, query: str, limit: int, search_filter: dict) -> list[FileChunk]:
        """k-NN over chunk vectors; scores are cosine similarity."""
        if not query or limit <= 0:
            return []
        vector = await self.vectors.query_vector(query)
        if vector is None:
            return []
        await self.refresher.visible()
        return await self._require_store().vector_search(vector, limit, search_filter, build=file_chunk_from_source)

    async def keyword_search(self, query: str, limit: int, search_filter: dict) -> list[FileChunk]:
        """BM25 over chunk text, filtered server-side."""
        if not query or not query.strip() or limit <= 0:
            return []
        await self.refresher.visible()
        return await self._require_store().keyword_search(query.strip(), limit, search_filter, file_chunk_from_source)

    def hybrid_matches(self, vector_weight: float) -> bool:
        """Whether `ranked_search` fuses with this vector weight (the store's pipeline is built for one)."""
        return 0.0 < vector_weight < 1.0 and abs(vector_weight - self.vector_weight) < 1e-9

    async def ranked_search(
        self, query: str, candidates: int, search_filter: dict, min_score: float = 0.0, limit: int | None = None
    ) -> tuple[list[FileChunk], dict[str, Any]]:
        """Up to `candidates` fused hits without their texts (fetch those with `shown`), in one round trip: the server's
        fusion, or both branches in one `_msearch` fused here (with `collapse`, deeper when repeated texts leave fewer
        than `limit`). Counts are `{"vector", "keyword", "fusion"}` (branch hit counts are 0 when fused natively: the
        server does not report them)."""
        if not query or not query.strip() or candidates <= 0:
            return [], {"vector": 0, "keyword": 0, "fusion": "none"}
        vector = await self.vectors.query_vector(query)
        await self.refresher.visible()
        result = await self._require_store().ranked(query.strip(), vector, candidates, search_filter, limit)
        counts = {"vector": result.vector_hits, "keyword": result.keyword_hits, "fusion": result.fusion}
        return [to_file_chunk(h) for h in apply_min_score(result.hits, min_score)], counts

    async def shown(self, chunks: list[FileChunk], with_links: bool = True) -> tuple[list[FileChunk], Shown]:
        """Ranked hits with their texts and (`with_links`) their files' REAL links with the file docs read, in one
        `_msearch`."""
        hits = [Hit(chunk=Chunk(id=c.id, path=c.path, text=""), scores=dict(c.scores)) for c in chunks]
        shown = await self._require_store().shown(hits, [c.path for c in chunks] if with_links else [])
        return [to_file_chunk(h) for h in shown.hits], shown

    # -- maintenance -------------------------------------------------------------------------------

    async def optimize_index(self) -> None:
        """ReMe's optimize step: expunge deleted documents where they pile up (force-merge); after a large load
        (`optimize_after_load`), merge the chunks index down to the segments search wants and measure the k-NN width
        again (`optimize.OptimizeJob.step`)."""
        await self.refresher.visible()
        await self.optimizer.step(self._require_store())

    @BaseFileStore.serialized
    async def reindex(self, scope: str) -> dict:
        """Rebuild derived state without rescanning files: BM25 is server-side, so only vectors and tags."""
        await self.refresher.visible()
        tagged = lambda: self.tag_index.n_files if self.tag_index_enabled else 0  # noqa: E731
        return await rebuild_derived(scope, self._require_store(), self.vectors, self.tags, tagged)


__all__ = ["HOSTS_ENV", "REME_PASS_THROUGH_KEYS", "EsFileStore", "file_store_keys"]
