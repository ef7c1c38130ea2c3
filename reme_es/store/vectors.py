"""VectorStore: k-NN search over chunk embeddings (HNSW), and vector upkeep (read back, backfill, set)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from ..adapters import lookups as q
from ..adapters.dialect import SOURCE_EXCLUDES, cosine_from_score
from ..adapters.port import Action
from ..adapters.transport import BulkOutcome
from ..core.errors import CapabilityError
from ..core.models import Chunk, Hit, SearchFilter, doc_id
from .indices import IndexSet
from .sources import HitBuilder, check_vector, chunk_from_source, hit_from_source
from .vector_plan import VectorPlan, plan_vectors


def branch_hit(branch: str, raw: float, chunk: Chunk) -> Hit:
    """A hit of one search branch; k-NN scores become cosine similarity."""
    score = cosine_from_score(raw) if branch == "vector" else raw
    return Hit(chunk=chunk, scores={branch: score, "score": score})


class VectorStore:
    """The embedding side of the chunks index."""

    def __init__(self, indices: IndexSet):
        self.indices = indices

    @property
    def port(self):
        """The index port."""
        return self.indices.port

    def check(self, vector: list[float] | None, what: str) -> None:
        """Refuse a vector of another dimension than the index's."""
        check_vector(self.indices.dims, vector, what)

    def knn_body(self, vector: list[float], k: int, f: SearchFilter, size: int | None = None) -> dict:
        """The dialect's k-NN body, after checking the index has vectors of this dimension."""
        if not self.indices.dims:
            raise CapabilityError(
                f"index {self.indices.ix.chunks} has no embedding field; enable embeddings and reindex"
            )
        self.check(vector, "the query")
        return self.indices.dialect.knn_body(vector, k, f, size=size, caps=self.indices.caps)

    async def search(
        self,
        vector: list[float] | None,
        limit: int,
        search_filter: SearchFilter | dict | None = None,
        k: int = 0,
        build: HitBuilder = hit_from_source,
    ) -> list:
        """k-NN over chunk embeddings with the filter inside the k-NN clause; scores are cosine similarity.
        The top `limit` of the `k` nearest (k defaults to limit) come back, each `build("vector", cosine, source)`
        (a `Hit` by default)."""
        f = self.indices.filter(search_filter)
        if not vector or limit <= 0:
            return []
        body = self.knn_body(vector, max(k, limit), f, size=limit)
        hits = await self.port.ranked_sources(self.indices.ix.chunks, body)
        return [build("vector", cosine_from_score(score), src) for score, src in hits]

    async def get_chunks(self, ids_by_path: dict[str, list[str]], with_vectors: bool = False) -> dict[str, dict]:
        """Stored chunk sources by chunk id (routing by path); vectors only when asked for."""
        docs = [(doc_id(cid), path) for path, ids in ids_by_path.items() for cid in ids]
        if with_vectors:
            found = await self.port.get_routed(self.indices.ix.chunks, docs, with_vectors=True)
        else:
            found = await self.port.get_routed(self.indices.ix.chunks, docs, ["embedding"])
        return {src["chunk_id"]: src for src in found if src is not None}

    async def vector_ids(self, ids_by_path: dict[str, list[str]]) -> set[str]:
        """Which of these chunks have a stored vector (answered by the index: no vector is read)."""
        wanted = sorted({self.port.stored_id(doc_id(cid)) for ids in ids_by_path.values() for cid in ids})
        if not wanted or not self.indices.dims:
            return set()
        query = q.with_vector_among(wanted)
        return {s["chunk_id"] async for s in self.port.scan(self.indices.ix.chunks, query, ["chunk_id"], ["chunk_id"])}

    async def plan(
        self,
        chunks: list[Chunk],
        stored_ids: dict[str, list[str]],
        before_search: Callable[[], Awaitable[None]] | None = None,
    ) -> VectorPlan:
        """Plan the vectors of chunks about to be written (`vector_plan`), given the ids stored for their paths;
        reusable chunks get their stored vector back here (one that cannot be read back goes to `to_embed`).
        `before_search` runs before the index is searched for which ids have a vector (the file store refreshes)."""
        if not self.indices.dims:
            return VectorPlan(to_embed=list(chunks))
        stored = await self.get_chunks(stored_ids) if any(stored_ids.values()) else {}
        if stored and before_search is not None:
            await before_search()
        plan = plan_vectors(chunks, stored, await self.vector_ids(stored_ids) if stored else set())
        if plan.reusable:
            vectors = await self.get_chunks({c.path: [c.id] for c in plan.reusable}, with_vectors=True)
            for chunk in plan.reusable:
                vec = (vectors.get(chunk.id) or {}).get("embedding")
                if vec and len(vec) == self.indices.dims:
                    chunk.embedding = vec
                else:
                    plan.to_embed.append(chunk)
            plan.reusable = [c for c in plan.reusable if c.embedding is not None]
        return plan

    async def without_vectors(self, batch: int = 500) -> AsyncIterator[list[Chunk]]:
        """Yield batches of stored chunks that have no embedding (for backfilling)."""
        page: list[Chunk] = []
        query = q.without_field("embedding")
        async for src in self.port.scan(self.indices.ix.chunks, query, {"excludes": SOURCE_EXCLUDES}, ["chunk_id"]):
            page.append(chunk_from_source(src))
            if len(page) >= batch:
                yield page
                page = []
        if page:
            yield page

    async def set_vectors(self, vectors: dict[tuple[str, str], list[float]], refresh: bool = True) -> BulkOutcome:
        """Write embeddings onto stored chunks, keyed by (path, chunk id), with partial updates."""
        actions = []
        for (path, cid), vec in vectors.items():
            self.check(vec, f"chunk {cid} of {path}")
            actions.append(Action("update", self.indices.ix.chunks, doc_id(cid), {"embedding": vec}, routing=path))
        outcome = await self.port.bulk(actions)
        if refresh:
            await self.indices.refresh()
        outcome.raise_for_failures()
        return outcome
