"""The file store's vectors: embedding chunks and queries, provider health, and the background backfill."""

from __future__ import annotations

import asyncio

from reme.components.file_store import BaseFileStore
from reme.schema import FileChunk, FileNode

from ..models import Chunk
from ..store import stored_chunk_source
from .convert import as_vector, to_chunk

_EMBED_BATCH = 256


class Embeddings:
    """EsFileStore's embedding side (mirrors LocalFileStore): a provider failure marks the embedding store unhealthy
    and leaves chunks without vectors, which a backfill read from the index fills later.

    Expects `store`, `embedding_store`, `_backfill_task`, `_embedding_rebuild_pending` and `_closing` set by the
    store, and its `_vectors_on`, `_dim_matches`, `_require_store` and `refresh_counts`.
    """

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

    async def require_embedding_rebuild(self) -> None:
        """Disable vector reads and writes until `reindex('embedding')` rebuilds every vector."""
        self._embedding_rebuild_pending = True
        await self._cancel_backfill()

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

    async def _vectors_for_upsert(self, files: list[tuple[FileNode, list[FileChunk]]]) -> set[str]:
        """Give the files' chunks their vectors (given, reused from the index, or embedded); return the ids of chunks
        stored exactly as given with a vector (not written again)."""
        store = self._require_store()
        needs_embed: list[FileChunk] = []
        unchanged: set[str] = set()
        if self._vectors_on():
            # A chunk stored exactly as given, with a vector, is not written again (and its vector is not read);
            # one whose text is stored with a vector but something else changed reuses that vector.
            ids = {node.path: [c.id for c in chunks if c.embedding is None] for node, chunks in files}
            stored = await store.get_chunks(ids)
            if stored:
                await self._visible()  # `vector_ids` searches: an unrefreshed earlier write of these chunks counts
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
        return unchanged

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
        await self._visible()
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
