"""ReMe file store backed by OpenSearch or Elasticsearch (a drop-in for ReMe's `local` file store).

Nodes, chunks, links and vectors live in the cluster (`reme_es.store.MemoryStore`), so a restarted ReMe sees
its index at once: `get_nodes()` returns the stored `st_mtime`s and ReMe's start-up scan re-indexes only what
changed on disk. BM25 runs server-side; vectors come from ReMe's bound embedding store exactly as the local
store gets them.

The class is assembled from mixins along its seams: `vectors` (embedding, backfill), `pending` (changes kept while
the cluster is unreachable), `health` (counts and ReMe's health views), `tags` (the tag index), `visibility` (when
writes are refreshed: before this store's next read, at dump and close, soon after in the background); `convert` holds the
pure ReMe <-> reme-es conversions and `keys` the configuration-key check.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from reme.components.base_component import BaseComponent
from reme.components.embedding_store import BaseEmbeddingStore
from reme.components.file_store import BaseFileStore
from reme.components.tag_index import BaseTagIndex
from reme.enumeration import LinkScopeEnum
from reme.schema import FileChunk, FileLink, FileNode

from ..adapters.base import ClientSettings, redact_host, validate_hosts
from ..config import default_prefix as default_index_prefix
from ..connect import open_store
from ..engine_settings import HNSW_EF_CONSTRUCTION, HNSW_M
from ..errors import ConfigError, MappingError
from ..fusion import DEFAULT_FUSION, DEFAULT_PROXIMITY, DEFAULT_VECTOR_WEIGHT, apply_min_score, validate_fusion
from ..models import Chunk, Hit, LinkScope
from ..store import MemoryStore, validate_hybrid
from ..store.shown import Shown
from ..templates import IndexOptions
from .convert import as_vector, to_chunk, to_file_chunk, to_file_doc, to_file_link, to_file_node
from .health import ChunkCounts, EsFileGraph, EsKeywordIndex, HealthViews
from .keys import REME_PASS_THROUGH_KEYS, _checked_keys, file_store_keys
from .pending import PendingChanges, _unreachable
from .tags import TagIndexUpdates
from .vectors import Embeddings
from .visibility import DeferredRefresh

HOSTS_ENV = "REME_ES_HOSTS"
_REINDEX_SCOPES = ("all", "bm25", "embedding", "tag")


class EsFileStore(Embeddings, PendingChanges, HealthViews, TagIndexUpdates, DeferredRefresh, BaseFileStore):
    """ReMe file store on an OpenSearch or Elasticsearch cluster.

    Invariants: each upserted path's chunks replace the stored ones and a search never sees both; a chunk
    whose id and text are already stored with a vector of the active dimension keeps that vector; when the
    embedding provider fails the chunks are stored without vectors, the embedding store is marked unhealthy
    and BM25 keeps working, and `resume_embedding` later fills the gaps from the index itself.
    """

    engine = "auto"
    flavour: str | None = None  # the managed node's; None: the `default` node's own, else opensearch-3

    def __init__(
        self,
        hosts: list[str] | str | None = None,
        index_prefix: str = "",
        embedding_store: str = "default",
        tag_index: str = "",
        username: str | None = None,
        password: str | None = None,
        api_key: str | None = None,
        verify_certs: bool = True,
        ca_certs: str | None = None,
        aws_region: str | None = None,
        aws_service: str = "es",
        hybrid: str = "auto",
        vector_weight: float = DEFAULT_VECTOR_WEIGHT,
        fusion: str | None = DEFAULT_FUSION,
        proximity: float = DEFAULT_PROXIMITY,
        hnsw_m: int = HNSW_M,
        hnsw_ef_construction: int = HNSW_EF_CONSTRUCTION,
        flavour: str | None = None,
        refresh_after: float = 1.0,
        **kwargs,
    ):
        super().__init__(**_checked_keys(type(self), kwargs))
        # ReMe's default pairing (`file_graph: default`, `keyword_index: default`): components this store stands in for
        self.paired = {"file_graph": kwargs.get("file_graph"), "keyword_index": kwargs.get("keyword_index")}
        self._init_runtime_state()
        self._init_visibility(refresh_after)
        validate_hybrid(hybrid)
        self._bind_components(embedding_store, tag_index)
        self.file_graph = EsFileGraph(store=self)
        self.hosts = validate_hosts(hosts)
        self.index_prefix = index_prefix
        self.settings_kwargs = {
            "username": username,
            "password": password,
            "api_key": api_key,
            "verify_certs": verify_certs,
            "ca_certs": ca_certs,
            "aws_region": aws_region,
            "aws_service": aws_service,
        }
        ClientSettings(hosts=self.hosts, **self.settings_kwargs)  # refuse conflicting auth settings at once
        self.hybrid = hybrid
        self.vector_weight = float(vector_weight)
        self.fusion, self.proximity = validate_fusion(fusion), float(proximity)
        self.index_options = {"hnsw_m": int(hnsw_m), "hnsw_ef_construction": int(hnsw_ef_construction)}
        if flavour:
            self.flavour = flavour

    def _init_runtime_state(self) -> None:
        """The store's state before `start`: counts, views, kept changes, background tasks."""
        self.file_chunks = ChunkCounts()
        self.counts = {"files": 0, "chunks": 0, "vectors": 0, "links": 0}
        self._views: list[BaseComponent] = []
        self._pending_upserts: dict[str, tuple[FileNode, list[FileChunk]]] = {}
        self._pending_deletes: set[str] = set()
        self._retry_task: asyncio.Task | None = None
        self.store: MemoryStore | None = None
        self._backfill_task: asyncio.Task | None = None
        self._embedding_rebuild_pending = False
        self._closing = False

    def _bind_components(self, embedding_store: str, tag_index: str) -> None:
        """Bind ReMe's embedding store (local by default) and tag index (none unless named; `default` is local)."""
        from reme.components.embedding_store import LocalEmbeddingStore
        from reme.components.tag_index import LocalTagIndex

        self.embedding_store = self.bind(embedding_store, BaseEmbeddingStore, default_factory=LocalEmbeddingStore)
        self.tag_index = self.bind(
            tag_index,
            BaseTagIndex,
            default_factory=LocalTagIndex if tag_index == "default" else None,
            optional=False,
        )

    # -- properties --------------------------------------------------------------------------------

    @property
    def embedding_dimensions(self) -> int:
        """Dimension of the bound embedding model; 0 when vectors are off."""
        if self.embedding_store is None:
            return 0
        return max(0, int(getattr(self.embedding_store, "dimensions", 0)))

    def _require_store(self) -> MemoryStore:
        if self.store is None:
            raise RuntimeError(f"file store {self.name} is not started")
        return self.store

    def _vectors_on(self) -> bool:
        return (
            self.embedding_store is not None
            and not self._embedding_rebuild_pending
            and self.store is not None
            and bool(self.store.dims)
        )

    def _dim_matches(self, embedding: Any) -> bool:
        return embedding is not None and self.store is not None and len(embedding) == self.store.dims

    # -- lifecycle ---------------------------------------------------------------------------------

    async def _start(self) -> None:
        self._closing = False
        await super()._start()
        hosts = self.hosts or validate_hosts(os.environ.get(HOSTS_ENV))
        if not hosts:
            if self.settings_kwargs["aws_region"]:
                raise ConfigError(f"{self.name}: aws_region is set but no hosts; give the Amazon OpenSearch endpoint")
            from ..server import node

            self.logger.info(f"{self.name}: no hosts configured and {HOSTS_ENV} unset; starting a local node")
            info = await asyncio.to_thread(node.start, node.flavour_of("default", self.flavour))
            hosts = [info.url]
        settings = ClientSettings(hosts=hosts, **self.settings_kwargs)
        prefix = self.index_prefix or default_index_prefix(self.workspace_path)
        dims = self.embedding_dimensions or None
        if self.embedding_store is not None and not dims:
            self.logger.warning(f"{self.name}: the embedding store reports no dimension; vectors are off")
        self.store = await self._open(settings, prefix, IndexOptions(dims=dims, **self.index_options))
        self.logger.info(
            f"{self.name}: {self.store.caps.engine} {self.store.caps.version} at "
            f"{', '.join(redact_host(h) for h in hosts)}, "
            f"prefix={prefix}, dims={self.store.dims}"
        )
        if self.store.dims:
            await self._record_vectors_model()
        await self.store.refresh()  # what a process that stopped mid-write left unrefreshed
        await self.refresh_counts()
        await self._stand_in_for_paired_components()
        await self._rebuild_tag_index("startup synchronization")
        self._start_backfill()

    async def _open(self, settings: ClientSettings, prefix: str, options: IndexOptions) -> MemoryStore:
        """Open the store; when the stored vector dimension differs from the model's, drop and recreate it.

        The index is derived from the workspace files, so ReMe's start-up scan rebuilds everything, which is
        what the local store does with vectors of a stale dimension.
        """
        kwargs = {"hybrid": self.hybrid, "vector_weight": self.vector_weight, "pipeline": self.fusion,
                  "proximity": self.proximity}
        try:
            return await open_store(settings, prefix, self.engine, options, **kwargs)
        except MappingError:
            if not options.dims:
                raise
            probe = await open_store(settings, prefix, self.engine, IndexOptions(), create=False, hybrid="client")
            try:
                if probe.dims == options.dims:
                    raise
                self.logger.warning(
                    f"{self.name}: index {prefix} holds {probe.dims or 'no'} vectors, the model gives "
                    f"{options.dims}-d; dropping it so ReMe re-indexes the workspace"
                )
                await probe.drop()
            finally:
                await probe.close()
            return await open_store(settings, prefix, self.engine, options, **kwargs)

    async def _close(self) -> None:
        self._closing = True
        await self._cancel_backfill()
        await self._stop_refreshing()
        for view in self._views:
            await view.close()
        self._views = []
        if self._retry_task is not None:
            self._retry_task.cancel()
            self._retry_task = None
        if self._pending_upserts or self._pending_deletes:
            self.logger.warning(
                f"{self.name}: closing with {len(self._pending_upserts)} upsert(s) and {len(self._pending_deletes)} "
                "delete(s) not applied (cluster unreachable); ReMe's start-up scan re-indexes them"
            )
        if self.store is not None:
            await self.store.close()
            self.store = None
        await super()._close()

    async def dump(self) -> None:
        """Make every write so far searchable and the health counts current (each write is durable when its call
        returns; see `visibility`)."""
        await self._settled()

    async def load(self) -> None:
        """Nothing to load: the cluster holds the state."""

    # -- writes ------------------------------------------------------------------------------------

    @BaseFileStore.serialized
    async def upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> None:
        """Store files with their chunks; unchanged chunks keep their stored vectors.

        When the cluster cannot be reached the files are kept and written as soon as it answers again (the error
        is raised all the same, so ReMe reports the failure).
        """
        if not files:
            return
        try:
            await self._before_write()
            await self._upsert(files)
        except Exception as e:
            self._write_failed_now()
            if _unreachable(e):
                self._keep_pending(upserts=files)
            raise
        for node, _ in files:
            self._pending_upserts.pop(node.path, None)
            self._pending_deletes.discard(node.path)

    async def _upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> None:
        store = self._require_store()
        unchanged = await self._vectors_for_upsert(files)
        docs = []
        for node, chunks in files:
            node.chunk_ids = [c.id for c in chunks]
            vectors = [as_vector(c.embedding) if c.embedding is not None else None for c in chunks]
            docs.append((to_file_doc(node, chunks), [to_chunk(c, v) for c, v in zip(chunks, vectors)]))
        async with self._writing():
            await store.upsert(docs, refresh=False, unchanged=unchanged)
        await self._written()
        await self._upsert_tag_nodes([node for node, _ in files])

    @BaseFileStore.serialized
    async def delete(self, path: str | list[str]) -> None:
        """Delete files with their chunks and links; unknown paths are skipped."""
        paths = [path] if isinstance(path, str) else list(path)
        if not paths:
            return
        try:
            await self._before_write()
            async with self._writing():
                deleted = await self._require_store().delete(paths, refresh=False)
        except Exception as e:
            self._write_failed_now()
            if _unreachable(e):
                self._keep_pending(deletes=paths)
            raise
        for p in paths:
            self._pending_deletes.discard(p)
            self._pending_upserts.pop(p, None)
        if deleted:
            await self._written()
            await self._delete_tag_paths(paths)

    @BaseFileStore.serialized
    async def clear(self) -> None:
        """Drop every file, chunk and link of this workspace's indices."""
        await self._require_store().clear()
        await self.refresh_counts()
        if self.tag_index_enabled:
            await self.require_tag_index().clear()

    # -- graph -------------------------------------------------------------------------------------

    async def get_nodes(self, paths: list[str] | None = None) -> list[FileNode]:
        """File nodes by path (missing skipped, input order kept); None = every node, sorted by path."""
        await self._visible()
        store = self._require_store()
        if paths is None:
            return [to_file_node(doc) for doc in await store.get_files(None)]
        found = {doc.path: doc for doc in await store.get_files(list(paths))}
        return [to_file_node(found[p]) for p in paths if p in found]

    async def get_outlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Links written in `path`, in order; REAL targets are indexed nodes, VIRTUAL ones are not."""
        await self._visible()
        links = await self._require_store().get_outlinks(path, LinkScope(LinkScopeEnum(scope).value))
        return [to_file_link(link) for link in links]

    async def get_inlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Links from every indexed file to `path`, sources sorted by path."""
        await self._visible()
        links = await self._require_store().get_inlinks(path, LinkScope(LinkScopeEnum(scope).value))
        return [to_file_link(link) for link in links]

    async def rebuild_links(self) -> None:
        """No-op: links are stored with their source file and resolved at query time."""

    # -- search ------------------------------------------------------------------------------------

    async def vector_search(self, query: str, limit: int, search_filter: dict) -> list[FileChunk]:
        """k-NN over chunk vectors; scores are cosine similarity."""
        if not query or limit <= 0:
            return []
        vector = await self._query_vector(query)
        if vector is None:
            return []
        await self._visible()
        hits = await self._require_store().vector_search(vector, limit, search_filter)
        return [to_file_chunk(h) for h in hits]

    async def keyword_search(self, query: str, limit: int, search_filter: dict) -> list[FileChunk]:
        """BM25 over chunk text, filtered server-side."""
        if not query or not query.strip() or limit <= 0:
            return []
        await self._visible()
        hits = await self._require_store().keyword_search(query.strip(), limit, search_filter)
        return [to_file_chunk(h) for h in hits]

    def hybrid_matches(self, vector_weight: float) -> bool:
        """Whether `ranked_search` fuses with this vector weight (the store's pipeline is built for one)."""
        return 0.0 < vector_weight < 1.0 and abs(vector_weight - self.vector_weight) < 1e-9

    async def ranked_search(
        self, query: str, candidates: int, search_filter: dict, min_score: float = 0.0
    ) -> tuple[list[FileChunk], dict[str, Any]]:
        """Up to `candidates` fused hits without their texts (fetch those with `shown`), in one round trip: the server's
        fusion, or both branches in one `_msearch` fused with ReMe's RRF. Counts are `{"vector", "keyword", "fusion"}`
        (branch hit counts are 0 when fused natively: the server does not report them)."""
        if not query or not query.strip() or candidates <= 0:
            return [], {"vector": 0, "keyword": 0, "fusion": "none"}
        vector = await self._query_vector(query)
        await self._visible()
        result = await self._require_store().ranked(query.strip(), vector, candidates, search_filter)
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
        """Expunge deleted documents where they pile up (force-merge)."""
        await self._visible()
        result = await self._require_store().optimize()
        self.logger.info(f"{self.name}: optimize_index merged={result['merged']}")

    @BaseFileStore.serialized
    async def reindex(self, scope: str) -> dict:
        """Rebuild derived state without rescanning files: BM25 is server-side, so only vectors and tags."""
        if scope not in _REINDEX_SCOPES:
            raise ValueError(f"reindex scope must be one of: {', '.join(_REINDEX_SCOPES)}")
        out: dict[str, Any] = {"scope": scope}
        await self._visible()
        if scope in ("all", "bm25"):
            stats = await self._require_store().stats()
            out["bm25"] = {"indexed": stats["chunks"]["docs"], "scope": "bm25"}
        if scope in ("all", "embedding"):
            self._embedding_rebuild_pending = False
            filled = await self.backfill_embeddings(rebuild=True)
            out["embedding"] = {"indexed": filled["filled"], "scope": "embedding"}
            if filled["missing"]:
                raise RuntimeError(f"embedding reindex incomplete: {filled['missing']} chunks failed")
        if scope in ("all", "tag"):
            if not await self._rebuild_tag_index("explicit reindex"):
                raise RuntimeError("tag index reindex failed")
            out["tag"] = {"indexed": self.tag_index.n_files if self.tag_index_enabled else 0, "scope": "tag"}
        return out if scope == "all" else out[scope]


class OpenSearchFileStore(EsFileStore):
    """The file store on OpenSearch 2.x/3.x (k-NN plugin for vectors, neural-search for one-request hybrid)."""

    engine = "opensearch"


class ElasticsearchFileStore(EsFileStore):
    """The file store on Elasticsearch 9.x (hybrid fused client-side with ReMe's RRF)."""

    engine = "elasticsearch"
    flavour = "elasticsearch-9"


def file_store_class(engine: str) -> type[EsFileStore]:
    """The ReMe file store of a registered engine: the two named above, or one made for another dialect."""
    named = {"opensearch": OpenSearchFileStore, "elasticsearch": ElasticsearchFileStore}
    if engine in named:
        return named[engine]
    doc = f"The file store on the registered `{engine}` dialect (hosts required)."
    return type(f"{engine.title()}FileStore", (EsFileStore,), {"engine": engine, "__doc__": doc})


__all__ = [
    "REME_PASS_THROUGH_KEYS",
    "ChunkCounts",
    "ElasticsearchFileStore",
    "EsFileGraph",
    "EsFileStore",
    "EsKeywordIndex",
    "OpenSearchFileStore",
    "as_vector",
    "default_index_prefix",
    "file_store_class",
    "file_store_keys",
    "to_chunk",
    "to_file_chunk",
    "to_file_doc",
    "to_file_link",
    "to_file_node",
]
