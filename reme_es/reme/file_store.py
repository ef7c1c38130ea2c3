"""ReMe file store backed by OpenSearch or Elasticsearch (a drop-in for ReMe's `local` file store).

Nodes, chunks, links and vectors live in the cluster (`reme_es.store.MemoryStore`), so a restarted ReMe sees
its index at once: `get_nodes()` returns the stored `st_mtime`s and ReMe's start-up scan re-indexes only what
changed on disk. BM25 runs server-side; vectors come from ReMe's bound embedding store exactly as the local
store gets them.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import itertools
import os
from types import SimpleNamespace
from typing import Any

import numpy as np
from reme.components.base_component import BaseComponent
from reme.components.embedding_store import BaseEmbeddingStore
from reme.components.file_graph import BaseFileGraph
from reme.components.file_store import BaseFileStore
from reme.components.keyword_index import BaseKeywordIndex
from reme.components.tag_index import BaseTagIndex
from reme.enumeration import LinkScopeEnum
from reme.schema import FileChunk, FileFrontMatter, FileLink, FileNode
from reme.utils import hash_text

from ..adapters import lookups
from ..adapters.base import RETRYABLE_STATUS, ClientSettings, redact_host, validate_hosts
from ..config import default_prefix as default_index_prefix
from ..connect import open_store
from ..errors import BulkError, ConfigError, ConnectionFailed, MappingError, RequestFailed
from ..models import Chunk, FileDoc, Hit, Link, LinkScope
from ..store import MemoryStore, stored_chunk_source, validate_hybrid
from ..templates import IndexOptions

HOSTS_ENV = "REME_ES_HOSTS"
_EMBED_BATCH = 256
_PENDING_BATCH = 100  # kept upserts written per request when the cluster answers again
_RETRY_MAX_S = 30.0
_REINDEX_SCOPES = ("all", "bm25", "embedding", "tag")


# Keys ReMe's default.yaml gives `file_store.default` for its local store; a config that `extends: default` passes them
# to every file store, so they are accepted here and mean nothing.
REME_PASS_THROUGH_KEYS = ("store_name", "keyword_index", "file_graph")
# What ReMe's Application gives every component (BaseComponent's own arguments).
_COMPONENT_KEYS = ("name", "backend", "app_context")


def file_store_keys(cls: type) -> list[str]:
    """The configuration keys a file store class takes (its constructor's named parameters)."""
    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]


def _checked_keys(cls: type, kwargs: dict) -> dict:
    """BaseComponent's arguments from `kwargs`; ReMe's pass-through keys dropped, any other key refused."""
    unknown = sorted(set(kwargs) - set(_COMPONENT_KEYS) - set(REME_PASS_THROUGH_KEYS))
    if unknown:
        valid = file_store_keys(cls)
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
            hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
        where = f"file_store.{kwargs['name']}" if kwargs.get("name") else "file store"
        raise ConfigError(
            f"{where} ({cls.__name__}): unknown key{'s' if len(unknown) > 1 else ''} {', '.join(hints)}. "
            f"Valid keys: {', '.join(valid)} (ReMe's {', '.join(REME_PASS_THROUGH_KEYS)} are accepted and ignored)"
        )
    return {k: v for k, v in kwargs.items() if k in _COMPONENT_KEYS}


def _unreachable(exc: BaseException) -> bool:
    """Whether a write failed because the cluster could not take it now (down, overloaded), not because of the data."""
    if isinstance(exc, ConnectionFailed):
        return True
    if isinstance(exc, RequestFailed):
        return exc.status is None or exc.status in RETRYABLE_STATUS
    if isinstance(exc, BulkError):
        return bool(exc.failures) and all(f.status in RETRYABLE_STATUS for f in exc.failures)
    return False


def to_file_doc(node: FileNode, chunks: list[FileChunk]) -> FileDoc:
    """A ReMe FileNode with its chunks as a reme-es FileDoc (chunk ids from the chunks, links in order)."""
    return FileDoc(
        path=node.path,
        st_mtime=node.st_mtime,
        chunk_ids=[c.id for c in chunks],
        front_matter=node.front_matter.model_dump(mode="json"),
        links=[
            Link(source=node.path, target=link.target_path, anchor=link.target_anchor or "")
            for link in node.links
            if link.target_path
        ],
    )


def to_chunk(chunk: FileChunk, vector: list[float] | None) -> Chunk:
    """A ReMe FileChunk as a reme-es Chunk carrying `vector`."""
    return Chunk(
        id=chunk.id,
        path=chunk.path,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        text=chunk.text,
        hash=hash_text(chunk.text),
        metadata=chunk.metadata,
        embedding=vector,
    )


def to_file_node(doc: FileDoc) -> FileNode:
    """A stored FileDoc as the FileNode ReMe wrote (empty anchors become None)."""
    return FileNode(
        path=doc.path,
        st_mtime=doc.st_mtime,
        links=[to_file_link(link) for link in doc.links],
        chunk_ids=list(doc.chunk_ids),
        front_matter=FileFrontMatter(**doc.front_matter),
    )


def to_file_link(link: Link) -> FileLink:
    """A reme-es Link as a ReMe FileLink."""
    return FileLink(source_path=link.source, target_path=link.target, target_anchor=link.anchor or None)


def to_file_chunk(hit: Hit) -> FileChunk:
    """A search hit as a ReMe FileChunk with the hit's scores."""
    c = hit.chunk
    return FileChunk(
        id=c.id,
        text=c.text,
        metadata=c.metadata,
        path=c.path,
        start_line=c.start_line,
        end_line=c.end_line,
        scores=dict(hit.scores),
    )


def as_vector(embedding: Any) -> list[float]:
    """A ReMe embedding (float16 ndarray or list) as a JSON-ready list of floats."""
    return np.asarray(embedding, dtype=np.float32).tolist()


class EsFileStore(BaseFileStore):
    """ReMe file store on an OpenSearch or Elasticsearch cluster.

    Invariants: each upserted path's chunks replace the stored ones and a search never sees both; a chunk
    whose id and text are already stored with a vector of the active dimension keeps that vector; when the
    embedding provider fails the chunks are stored without vectors, the embedding store is marked unhealthy
    and BM25 keeps working, and `resume_embedding` later fills the gaps from the index itself.
    """

    engine = "auto"
    flavour = "opensearch-2.19"

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
        vector_weight: float = 0.7,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        flavour: str | None = None,
        **kwargs,
    ):
        super().__init__(**_checked_keys(type(self), kwargs))
        # ReMe's default pairing (`file_graph: default`, `keyword_index: default`): components this store stands in for
        self.paired = {"file_graph": kwargs.get("file_graph"), "keyword_index": kwargs.get("keyword_index")}
        self.file_chunks = ChunkCounts()
        self.counts = {"files": 0, "chunks": 0, "vectors": 0, "links": 0}
        self._views: list[BaseComponent] = []
        self._pending_upserts: dict[str, tuple[FileNode, list[FileChunk]]] = {}
        self._pending_deletes: set[str] = set()
        self._retry_task: asyncio.Task | None = None
        from reme.components.embedding_store import LocalEmbeddingStore
        from reme.components.tag_index import LocalTagIndex

        validate_hybrid(hybrid)
        self.embedding_store = self.bind(embedding_store, BaseEmbeddingStore, default_factory=LocalEmbeddingStore)
        self.tag_index = self.bind(
            tag_index,
            BaseTagIndex,
            default_factory=LocalTagIndex if tag_index == "default" else None,
            optional=False,
        )
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
        self.index_options = {"hnsw_m": int(hnsw_m), "hnsw_ef_construction": int(hnsw_ef_construction)}
        if flavour:
            self.flavour = flavour
        self.store: MemoryStore | None = None
        self._backfill_task: asyncio.Task | None = None
        self._embedding_rebuild_pending = False
        self._closing = False

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
            info = await asyncio.to_thread(node.start, self.flavour)
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
        await self.refresh_counts()
        await self._stand_in_for_paired_components()
        await self._rebuild_tag_index("startup synchronization")
        self._start_backfill()

    async def _record_vectors_model(self) -> None:
        """Record in the index which model makes its vectors (for `reme-es search`); warn if another one did."""
        from ..maintenance import record_vectors_model, vectors_model
        from ..sync.embed import describe_model, same_model
        from .as_embedding import vectors_identity

        mine = vectors_identity(self.embedding_store, self.store.dims)
        recorded = await vectors_model(self.store)
        if recorded is None:
            await record_vectors_model(self.store, mine)
        elif not same_model(recorded, mine):
            self.logger.warning(
                f"{self.name}: index {self.store.prefix} records vectors of {describe_model(recorded)}, but this "
                f"deployment embeds with {describe_model(mine)}; drop the index (`reme-es drop --yes`) to rebuild it"
            )

    async def _open(self, settings: ClientSettings, prefix: str, options: IndexOptions) -> MemoryStore:
        """Open the store; when the stored vector dimension differs from the model's, drop and recreate it.

        The index is derived from the workspace files, so ReMe's start-up scan rebuilds everything, which is
        what the local store does with vectors of a stale dimension.
        """
        kwargs = {"hybrid": self.hybrid, "vector_weight": self.vector_weight}
        try:
            return await open_store(settings, prefix, self.engine, options, **kwargs)
        except MappingError as exc:
            if not options.dims:
                raise
            probe = await open_store(settings, prefix, self.engine, IndexOptions(), create=False, hybrid="client")
            try:
                if probe.dims == options.dims:
                    raise exc
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
        """Nothing to flush: every write is stored and refreshed when it returns."""

    async def load(self) -> None:
        """Nothing to load: the cluster holds the state."""

    # -- ReMe's health and metadata views ----------------------------------------------------------

    async def refresh_counts(self) -> None:
        """Re-read the cluster's file, chunk, vector and link counts (what ReMe's sync health_check shows)."""
        store = self.store
        if store is None:
            return
        try:
            files, chunks, vectors, links = await asyncio.gather(
                store.count("files"),
                store.count("chunks"),
                store.count("chunks", lookups.with_field("embedding")),
                store.count("links"),
            )
        except Exception as e:  # noqa: BLE001 - a count must never fail a write; health shows the last known one
            self.logger.warning(f"{self.name}: could not refresh counts for health_check: {type(e).__name__}: {e}")
            return
        self.counts = {"files": files, "chunks": chunks, "vectors": vectors, "links": links}
        self.file_chunks.set(chunks, vectors)

    async def _stand_in_for_paired_components(self) -> None:
        """Answer for the local file graph and keyword index ReMe's default.yaml pairs with `file_store.default`.

        With `extends: default` ReMe still builds and starts `file_graph.default` (local) and `keyword_index.default`
        (bm25) beside this store. Nothing uses them, and ReMe's `health_check` reports their empty state (0 nodes,
        0 docs). When this store was paired with one of them (the pass-through key) and no other configured
        component names it, the store puts a view of itself in its place in the application's component map, so
        health_check and anything looking the component up by name see this store's counts. ReMe still closes the
        local one it started.
        """
        if self.app_context is None:
            return
        for ctype, view_cls, local_cls in (
            ("file_graph", EsFileGraph, "LocalFileGraph"),
            ("keyword_index", EsKeywordIndex, "BM25Index"),
        ):
            name = self.paired.get(ctype)
            group = self.app_context.components.get(ctype, {})
            current = group.get(name) if name else None
            if current is None or type(current).__name__ != local_cls or self._named_elsewhere(ctype, name):
                continue
            view = view_cls(store=self, name=name, app_context=self.app_context)
            await view.start()
            group[name] = view
            self._views.append(view)
            self.logger.info(f"{self.name}: {ctype}.{name} now reports this store's counts (the local one is unused)")

    def _named_elsewhere(self, ctype: str, name: str) -> bool:
        """Whether a configured component other than this store names `ctype` component `name`."""
        for group_type, group in self.app_context.app_config.components.items():
            for comp_name, cfg in group.items():
                if group_type == "file_store" and comp_name == self.name:
                    continue
                if (cfg.model_extra or {}).get(ctype) == name:
                    return True
        return False

    # -- embedding health (mirrors LocalFileStore) -------------------------------------------------

    def _mark_embedding_unhealthy(self, reason: str) -> None:
        if self.embedding_store is None:
            return
        self.embedding_store.is_healthy = False
        self.logger.error(f"{self.name}: embedding unavailable, {reason}; keyword search remains active")

    async def _recover_after_real_request(self, was_healthy: bool) -> None:
        if self.embedding_store is None or self._embedding_rebuild_pending or was_healthy:
            return
        if not self.embedding_store.is_healthy:
            return
        self.logger.info(f"{self.name}: embedding provider recovered; scheduling missing-vector backfill")
        await self.resume_embedding(verified=True)

    async def _query_vector(self, query: str) -> list[float] | None:
        """The query's embedding, or None when vectors are off or the provider fails (marked unhealthy)."""
        if not self._vectors_on() or not query:
            return None
        embedding_store = self.embedding_store
        was_healthy = embedding_store.is_healthy
        try:
            embedding = await embedding_store.get_embedding(query)
        except Exception as e:  # noqa: BLE001 - provider errors must not break search
            self._mark_embedding_unhealthy(f"search: {type(e).__name__}: {e}")
            return None
        if embedding is None:
            return None
        if not self._dim_matches(embedding):
            self._mark_embedding_unhealthy(f"search: query embedding dimension {len(embedding)} != {self.store.dims}")
            return None
        await self._recover_after_real_request(was_healthy)
        return as_vector(embedding)

    async def _embed(self, chunks: list[FileChunk]) -> None:
        """Embed chunks in place, in batches; a provider failure marks the store unhealthy and returns."""
        if not chunks or not self._vectors_on():
            return
        embedding_store = self.embedding_store
        was_healthy = embedding_store.is_healthy
        for start in range(0, len(chunks), _EMBED_BATCH):
            batch = chunks[start : start + _EMBED_BATCH]
            try:
                await embedding_store.get_node_embeddings(batch)
            except Exception as e:  # noqa: BLE001 - stored without vectors, backfilled later
                self._mark_embedding_unhealthy(f"upsert: {type(e).__name__}: {e}")
                return
        for chunk in chunks:
            if chunk.embedding is not None and not self._dim_matches(chunk.embedding):
                chunk.embedding = None
        if any(chunk.embedding is not None for chunk in chunks):
            await self._recover_after_real_request(was_healthy)

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
            await self._upsert(files)
        except Exception as e:
            if _unreachable(e):
                self._keep_pending(upserts=files)
            raise
        for node, _ in files:
            self._pending_upserts.pop(node.path, None)
            self._pending_deletes.discard(node.path)

    async def _upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> None:
        store = self._require_store()
        needs_embed: list[FileChunk] = []
        unchanged: set[str] = set()
        if self._vectors_on():
            # A chunk stored exactly as given, with a vector, is not written again (and its vector is not read);
            # one whose text is stored with a vector but something else changed reuses that vector.
            ids = {node.path: [c.id for c in chunks if c.embedding is None] for node, chunks in files}
            stored = await store.get_chunks(ids)
            with_vector = await store.vector_ids(ids) if stored else set()
            reuse: dict[str, FileChunk] = {}
            for _, chunks in files:
                for chunk in chunks:
                    if chunk.embedding is not None and self._dim_matches(chunk.embedding):
                        continue
                    chunk.embedding = None
                    old = stored.get(chunk.id)
                    if old is not None and chunk.id in with_vector and old.get("text") == chunk.text:
                        if old == stored_chunk_source(to_chunk(chunk, None)):
                            unchanged.add(chunk.id)
                        else:
                            reuse[chunk.id] = chunk
                    elif chunk.text:
                        needs_embed.append(chunk)
            if reuse:
                vectors = await store.get_chunks({c.path: [c.id] for c in reuse.values()}, with_vectors=True)
                for cid, chunk in reuse.items():
                    vec = (vectors.get(cid) or {}).get("embedding")
                    if self._dim_matches(vec):
                        chunk.embedding = vec
                    elif chunk.text:
                        needs_embed.append(chunk)
            await self._embed(needs_embed)
        else:
            for _, chunks in files:
                for chunk in chunks:
                    chunk.embedding = None
        docs = []
        for node, chunks in files:
            node.chunk_ids = [c.id for c in chunks]
            vectors = [as_vector(c.embedding) if c.embedding is not None else None for c in chunks]
            docs.append((to_file_doc(node, chunks), [to_chunk(c, v) for c, v in zip(chunks, vectors)]))
        await store.upsert(docs, unchanged=unchanged)
        await self.refresh_counts()
        await self._upsert_tag_nodes([node for node, _ in files])

    @BaseFileStore.serialized
    async def delete(self, path: str | list[str]) -> None:
        """Delete files with their chunks and links; unknown paths are skipped."""
        paths = [path] if isinstance(path, str) else list(path)
        if not paths:
            return
        try:
            deleted = await self._require_store().delete(paths)
        except Exception as e:
            if _unreachable(e):
                self._keep_pending(deletes=paths)
            raise
        for p in paths:
            self._pending_deletes.discard(p)
            self._pending_upserts.pop(p, None)
        if deleted:
            await self.refresh_counts()
            await self._delete_tag_paths(paths)

    # -- changes kept while the cluster is unreachable ----------------------------------------------

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
        store = self._require_store()
        if paths is None:
            return [to_file_node(doc) for doc in await store.get_files(None)]
        found = {doc.path: doc for doc in await store.get_files(list(paths))}
        return [to_file_node(found[p]) for p in paths if p in found]

    async def get_outlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Links written in `path`, in order; REAL targets are indexed nodes, VIRTUAL ones are not."""
        links = await self._require_store().get_outlinks(path, LinkScope(LinkScopeEnum(scope).value))
        return [to_file_link(link) for link in links]

    async def get_inlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list[FileLink]:
        """Links from every indexed file to `path`, sources sorted by path."""
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
        hits = await self._require_store().vector_search(vector, limit, search_filter)
        return [to_file_chunk(h) for h in hits]

    async def keyword_search(self, query: str, limit: int, search_filter: dict) -> list[FileChunk]:
        """BM25 over chunk text, filtered server-side."""
        if not query or not query.strip() or limit <= 0:
            return []
        hits = await self._require_store().keyword_search(query.strip(), limit, search_filter)
        return [to_file_chunk(h) for h in hits]

    def hybrid_matches(self, vector_weight: float) -> bool:
        """Whether `hybrid_search` fuses with this vector weight (the store's pipeline is built for one)."""
        return 0.0 < vector_weight < 1.0 and abs(vector_weight - self.vector_weight) < 1e-9

    async def hybrid_search(
        self, query: str, candidates: int, search_filter: dict, min_score: float = 0.0
    ) -> tuple[list[FileChunk], dict[str, Any]]:
        """Up to `candidates` fused hits in one request where the server can fuse (else ReMe's RRF client-side).

        Returns the hits and `{"vector", "keyword", "fusion"}` (branch hit counts are 0 when fused natively:
        the server does not report them).
        """
        if not query or not query.strip() or candidates <= 0:
            return [], {"vector": 0, "keyword": 0, "fusion": "none"}
        vector = await self._query_vector(query)
        result = await self._require_store().search(
            query.strip(), vector, candidates, search_filter, candidate_multiplier=1, min_score=min_score
        )
        counts = {"vector": result.vector_hits, "keyword": result.keyword_hits, "fusion": result.fusion}
        return [to_file_chunk(h) for h in result.hits], counts

    # -- maintenance -------------------------------------------------------------------------------

    async def optimize_index(self) -> None:
        """Expunge deleted documents where they pile up (force-merge)."""
        result = await self._require_store().optimize()
        self.logger.info(f"{self.name}: optimize_index merged={result['merged']}")

    async def require_embedding_rebuild(self) -> None:
        """Disable vector reads and writes until `reindex('embedding')` rebuilds every vector."""
        self._embedding_rebuild_pending = True
        await self._cancel_backfill()

    @BaseFileStore.serialized
    async def reindex(self, scope: str) -> dict:
        """Rebuild derived state without rescanning files: BM25 is server-side, so only vectors and tags."""
        if scope not in _REINDEX_SCOPES:
            raise ValueError(f"reindex scope must be one of: {', '.join(_REINDEX_SCOPES)}")
        out: dict[str, Any] = {"scope": scope}
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

    async def resume_embedding(self, *, verified: bool = False, rebuild: bool = False) -> bool:
        """Schedule a background pass that embeds stored chunks lacking vectors (all chunks if `rebuild`)."""
        if self.embedding_store is None or self._closing:
            return False
        if verified:
            self.embedding_store.is_healthy = True
        if self._embedding_rebuild_pending and not rebuild:
            return True
        self._start_backfill(skip_health_check=verified, rebuild=rebuild)
        return True

    def _start_backfill(self, *, skip_health_check: bool = False, rebuild: bool = False) -> None:
        if self._closing or not self._vectors_on() and not rebuild:
            return
        if self._backfill_task is not None and not self._backfill_task.done():
            return
        self._backfill_task = asyncio.create_task(
            self.backfill_embeddings(skip_health_check=skip_health_check, rebuild=rebuild),
            name=f"embedding-backfill:{self.name}",
        )

    async def wait_backfill(self) -> None:
        """Wait for a scheduled embedding backfill to finish (tests, shutdown)."""
        if self._backfill_task is not None:
            await asyncio.shield(self._backfill_task)

    async def _cancel_backfill(self) -> None:
        task, self._backfill_task = self._backfill_task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:
            self.logger.exception(f"{self.name}: embedding backfill failed during shutdown")

    async def backfill_embeddings(self, *, skip_health_check: bool = False, rebuild: bool = False) -> dict[str, int]:
        """Embed stored chunks that have no vector (every chunk if `rebuild`), reading them from the index."""
        if rebuild:
            self._embedding_rebuild_pending = False
        if not self._vectors_on():
            return {"filled": 0, "missing": 0}
        store = self._require_store()
        embedding_store = self.embedding_store
        filled = missing = 0
        checked = skip_health_check
        pages = self._all_chunks() if rebuild else store.chunks_without_vectors(batch=_EMBED_BATCH)
        async for page in pages:
            nodes = [FileChunk(id=c.id, path=c.path, text=c.text) for c in page if c.text]
            if not nodes:
                continue
            if not checked:  # like the local store: ask the provider only when there is work
                checked = True
                if not await embedding_store.health_check():
                    self.logger.warning(f"{self.name}: embedding backfill skipped: health check failed")
                    return {"filled": 0, "missing": len(nodes)}
            try:
                await embedding_store.get_node_embeddings(nodes)
            except Exception as e:  # noqa: BLE001
                self._mark_embedding_unhealthy(f"backfill: {type(e).__name__}: {e}")
                return {"filled": filled, "missing": missing + len(nodes)}
            done = {(n.path, n.id): as_vector(n.embedding) for n in nodes if self._dim_matches(n.embedding)}
            missing += len(nodes) - len(done)
            filled += await self._write_vectors(done)
        self.logger.info(f"{self.name}: embedding backfill complete: filled={filled}, missing={missing}")
        return {"filled": filled, "missing": missing}

    async def _all_chunks(self):
        store = self._require_store()
        files = await store.get_files(None)
        for start in range(0, len(files), 64):
            group = files[start : start + 64]
            sources = await store.get_chunks({f.path: f.chunk_ids for f in group})
            yield [Chunk(id=s["chunk_id"], path=s["path"], text=s.get("text", "")) for s in sources.values()]

    @BaseFileStore.serialized
    async def _write_vectors(self, vectors: dict[tuple[str, str], list[float]]) -> int:
        """Write vectors onto chunks that still exist (an upsert may have replaced them meanwhile)."""
        if not vectors:
            return 0
        store = self._require_store()
        ids_by_path: dict[str, list[str]] = {}
        for path, cid in vectors:
            ids_by_path.setdefault(path, []).append(cid)
        alive = await store.get_chunks(ids_by_path)
        live = {key: vec for key, vec in vectors.items() if key[1] in alive}
        if live:
            await store.set_vectors(live)
            await self.refresh_counts()
        return len(live)

    # -- tag index (mirrors LocalFileStore: optional, never blocks the store) ----------------------

    async def _rebuild_tag_index(self, reason: str) -> bool:
        if not self.tag_index_enabled:
            return True
        tag_index = self.require_tag_index()
        try:
            await tag_index.rebuild(await self.get_nodes())
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
            itertools.repeat(self._WITH, self.with_vectors), itertools.repeat(self._WITHOUT, self.chunks - self.with_vectors)
        )


class _StoreView:
    """Shared by the views: a read-only stand-in whose writes belong to the file store."""

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

    def __init__(self, store: EsFileStore, name: str | None = None, **kwargs):
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

    def __init__(self, store: EsFileStore, name: str | None = None, **kwargs):
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


class OpenSearchFileStore(EsFileStore):
    """The file store on OpenSearch 2.x/3.x (k-NN plugin for vectors, neural-search for one-request hybrid)."""

    engine = "opensearch"
    flavour = "opensearch-2.19"


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
    "ElasticsearchFileStore",
    "EsFileGraph",
    "EsFileStore",
    "EsKeywordIndex",
    "OpenSearchFileStore",
    "default_index_prefix",
    "file_store_class",
]
