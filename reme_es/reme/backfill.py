"""The file store's vectors: embedding chunks and queries, provider health, and the background backfill."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import numpy as np
from reme.components.embedding_store import BaseEmbeddingStore
from reme.schema import FileChunk, FileNode

from ..core.models import Chunk
from ..embeddings.minilm import describe_model, same_model
from ..store import MemoryStore
from .as_embedding import vectors_identity
from .background import cancel
from .convert import as_vector, to_chunk

EMBED_BATCH = 256


class Embeddings:
    """The embedding side of a file store (mirrors LocalFileStore): a provider failure marks the embedding store
    unhealthy and leaves chunks without vectors, which a backfill read from the index fills later.

    It reads the bound embedding store through `embedding_store()` and the open `MemoryStore` through `store()`
    (None before start and after close), makes writes visible with `visible()` before it reads, reports changed
    vector counts with `counts_changed()`, and writes vectors under `guard()`, the file store's write lock.
    """

    def __init__(
        self,
        embedding_store: Callable[[], BaseEmbeddingStore | None],
        store: Callable[[], MemoryStore | None],
        visible: Callable[[], Awaitable[None]],
        counts_changed: Callable[[], Awaitable[None]],
        guard: Callable[[], AbstractAsyncContextManager],
        logger: Any = None,
        name: str = "file store",
    ):
        self._embedding_store = embedding_store
        self._store = store
        self._visible = visible
        self._counts_changed = counts_changed
        self._guard = guard
        self._logger = logger or logging.getLogger(__name__)
        self._name = name
        self.rebuild_pending = False
        self.closing = False
        self._backfill_task: asyncio.Task | None = None

    @property
    def embedding_store(self) -> BaseEmbeddingStore | None:
        """ReMe's embedding store the file store is bound to (resolved when ReMe starts the file store)."""
        return self._embedding_store()

    def _require_store(self) -> MemoryStore:
        store = self._store()
        if store is None:
            raise RuntimeError(f"file store {self._name} is not started")
        return store

    def _require_embedding_store(self) -> BaseEmbeddingStore:
        """The bound embedding store, where `on()` said there is one."""
        embedding_store = self.embedding_store
        if embedding_store is None:
            raise RuntimeError(f"file store {self._name} has no embedding store")
        return embedding_store

    def on(self) -> bool:
        """Whether vectors are read and written now (a model, a vector field, no rebuild pending)."""
        store = self._store()
        return self.embedding_store is not None and not self.rebuild_pending and store is not None and bool(store.dims)

    def dim_matches(self, embedding: Any) -> bool:
        """Whether an embedding has the index's vector dimension."""
        store = self._store()
        return embedding is not None and store is not None and len(embedding) == store.dims

    async def record_model(self) -> None:
        """Record in the index which model makes its vectors (for `reme-es search`); warn if another one did."""
        store = self._require_store()
        mine = vectors_identity(self.embedding_store, store.dims)
        recorded = await store.admin.vectors_model()
        if recorded is None:
            await store.admin.record_vectors_model(mine)
        elif not same_model(recorded, mine):
            self._logger.warning(
                f"{self._name}: index {store.prefix} records vectors of {describe_model(recorded)}, but this "
                f"deployment embeds with {describe_model(mine)}; drop the index (`reme-es drop --yes`) to rebuild it"
            )

    async def require_rebuild(self) -> None:
        """Disable vector reads and writes until a rebuild refills every vector."""
        self.rebuild_pending = True
        await self.cancel_backfill()

    def _mark_unhealthy(self, reason: str) -> None:
        if self.embedding_store is None:
            return
        self.embedding_store.is_healthy = False
        self._logger.error(f"{self._name}: embedding unavailable, {reason}; keyword search remains active")

    async def _recover_after_real_request(self, was_healthy: bool) -> None:
        if self.embedding_store is None or self.rebuild_pending or was_healthy:
            return
        if not self.embedding_store.is_healthy:
            return
        self._logger.info(f"{self._name}: embedding provider recovered; scheduling missing-vector backfill")
        await self.resume(verified=True)

    async def query_vector(self, query: str) -> list[float] | None:
        """The query's embedding, or None when vectors are off or the provider fails (marked unhealthy)."""
        if not self.on() or not query:
            return None
        embedding_store = self._require_embedding_store()
        was_healthy = embedding_store.is_healthy
        try:
            embedding = await embedding_store.get_embedding(query)
        except Exception as e:  # noqa: BLE001 - provider errors must not break search
            self._mark_unhealthy(f"search: {type(e).__name__}: {e}")
            return None
        if embedding is None:
            return None
        if not self.dim_matches(embedding):
            self._mark_unhealthy(f"search: query embedding dimension {len(embedding)} != {self._require_store().dims}")
            return None
        await self._recover_after_real_request(was_healthy)
        return as_vector(embedding)

    async def embed(self, chunks: list[FileChunk]) -> None:
        """Embed chunks that have text in place, in batches; a provider failure marks the store unhealthy."""
        chunks = [c for c in chunks if c.text]
        if not chunks or not self.on():
            return
        was_healthy = self._require_embedding_store().is_healthy
        for start in range(0, len(chunks), EMBED_BATCH):
            try:
                await self._embed_stored(chunks[start : start + EMBED_BATCH])
            except Exception as e:  # noqa: BLE001 - stored without vectors, backfilled later
                self._mark_unhealthy(f"upsert: {type(e).__name__}: {e}")
                return
        for chunk in chunks:
            if chunk.embedding is not None and not self.dim_matches(chunk.embedding):
                chunk.embedding = None
        if any(chunk.embedding is not None for chunk in chunks):
            await self._recover_after_real_request(was_healthy)

    async def _embed_stored(self, chunks: list[FileChunk]) -> None:
        """Give chunks the vectors of their texts as stored texts: through the backend's passage side where it has
        one (e5: `passage: `, while ReMe's interface embeds every text as a question), else through ReMe's
        embedding store (its cache, retries and health flags)."""
        embedding_store = self._require_embedding_store()
        embed_passages = getattr(getattr(embedding_store, "as_embedding", None), "embed_passages", None)
        if embed_passages is None:
            await embedding_store.get_node_embeddings(chunks)
            return
        for chunk, vector in zip(chunks, await embed_passages([c.text for c in chunks]), strict=True):
            chunk.embedding = np.asarray(vector, dtype=np.float16)  # as ReMe keeps vectors

    async def for_upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> set[str]:
        """Give the files' chunks their vectors (given, reused from the index, or embedded: `VectorStore.plan`);
        return the ids of chunks stored exactly as given with a vector (not written again)."""
        if not self.on():
            for _, chunks in files:
                for chunk in chunks:
                    chunk.embedding = None
            return set()
        # Chunks given without a vector are looked up in the index; one given with another dimension is embedded.
        ids = {node.path: [c.id for c in chunks if c.embedding is None] for node, chunks in files}
        wanted: dict[str, FileChunk] = {}
        for _, chunks in files:
            for chunk in chunks:
                if chunk.embedding is not None and self.dim_matches(chunk.embedding):
                    continue  # given with the model's vector
                chunk.embedding = None
                wanted[chunk.id] = chunk
        planned = [to_chunk(c, None) for c in wanted.values()]
        # `vector_ids` searches: an unrefreshed earlier write of these chunks must count
        plan = await self._require_store().vectors.plan(planned, ids, before_search=self._visible)
        for chunk in plan.reusable:
            wanted[chunk.id].embedding = chunk.embedding
        await self.embed([wanted[c.id] for c in plan.to_embed])
        return plan.unchanged

    async def resume(self, *, verified: bool = False, rebuild: bool = False) -> bool:
        """Schedule a background pass that embeds stored chunks lacking vectors (all chunks if `rebuild`)."""
        if self.embedding_store is None or self.closing:
            return False
        if verified:
            self.embedding_store.is_healthy = True
        if self.rebuild_pending and not rebuild:
            return True
        self.start_backfill(skip_health_check=verified, rebuild=rebuild)
        return True

    def start_backfill(self, *, skip_health_check: bool = False, rebuild: bool = False) -> None:
        """Start the background backfill unless one runs (or vectors are off and this is no rebuild)."""
        if self.closing or not self.on() and not rebuild:
            return
        if self._backfill_task is not None and not self._backfill_task.done():
            return
        self._backfill_task = asyncio.create_task(
            self.backfill(skip_health_check=skip_health_check, rebuild=rebuild), name=f"embedding-backfill:{self._name}"
        )

    async def wait_backfill(self) -> None:
        """Wait for a scheduled embedding backfill to finish (tests, shutdown)."""
        if self._backfill_task is not None:
            await asyncio.shield(self._backfill_task)

    async def cancel_backfill(self) -> None:
        """Stop a running backfill (what it wrote stays)."""
        task, self._backfill_task = self._backfill_task, None
        failed = await cancel(task)
        if failed is not None:
            self._logger.error(f"{self._name}: embedding backfill failed during shutdown", exc_info=failed)

    async def backfill(self, *, skip_health_check: bool = False, rebuild: bool = False) -> dict[str, int]:
        """Embed stored chunks that have no vector (every chunk if `rebuild`), reading them from the index."""
        if rebuild:
            self.rebuild_pending = False
        if not self.on():
            return {"filled": 0, "missing": 0}
        store = self._require_store()
        await self._visible()
        filled = missing = 0
        checked = skip_health_check
        pages = self._all_chunks(store) if rebuild else store.vectors.without_vectors(batch=EMBED_BATCH)
        async for page in pages:
            nodes = [FileChunk(id=c.id, path=c.path, text=c.text) for c in page if c.text]
            if not nodes:
                continue
            if not checked:  # like the local store: ask the provider only when there is work
                checked = True
                if not await self._require_embedding_store().health_check():
                    self._logger.warning(f"{self._name}: embedding backfill skipped: health check failed")
                    return {"filled": 0, "missing": len(nodes)}
            try:
                await self._embed_stored(nodes)
            except Exception as e:  # noqa: BLE001
                self._mark_unhealthy(f"backfill: {type(e).__name__}: {e}")
                return {"filled": filled, "missing": missing + len(nodes)}
            done = {(n.path, n.id): as_vector(n.embedding) for n in nodes if self.dim_matches(n.embedding)}
            missing += len(nodes) - len(done)
            filled += await self._write_vectors(done)
        self._logger.info(f"{self._name}: embedding backfill complete: filled={filled}, missing={missing}")
        return {"filled": filled, "missing": missing}

    @staticmethod
    async def _all_chunks(store: MemoryStore) -> AsyncIterator[list[Chunk]]:
        files = await store.links.get_files(None)
        for start in range(0, len(files), 64):
            group = files[start : start + 64]
            sources = await store.vectors.get_chunks({f.path: f.chunk_ids for f in group})
            yield [Chunk(id=s["chunk_id"], path=s["path"], text=s.get("text", "")) for s in sources.values()]

    async def _write_vectors(self, vectors: dict[tuple[str, str], list[float]]) -> int:
        """Write vectors onto chunks that still exist (an upsert may have replaced them meanwhile)."""
        if not vectors:
            return 0
        async with self._guard():
            store = self._require_store()
            ids_by_path: dict[str, list[str]] = {}
            for path, cid in vectors:
                ids_by_path.setdefault(path, []).append(cid)
            alive = await store.vectors.get_chunks(ids_by_path)
            live = {key: vec for key, vec in vectors.items() if key[1] in alive}
            if live:
                await store.vectors.set_vectors(live)
                await self._counts_changed()
            return len(live)
