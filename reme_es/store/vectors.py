"""VectorStore: k-NN search over chunk embeddings (HNSW), and vector upkeep (read back, backfill, set)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from ..adapters import lookups as q
from ..adapters.dialect import SOURCE_EXCLUDES, cosine_from_score
from ..adapters.port import Action, Candidate
from ..adapters.transport import BulkOutcome
from ..core import telemetry
from ..core.errors import AuthError, CapabilityError, RequestFailed
from ..core.models import Chunk, Hit, SearchFilter, doc_id
from .calibration import (
    RULE,
    Calibration,
    Step,
    calibration_due,
    climb,
    group_recalls,
    ladder,
    median_took,
    now_iso,
    probe_queries,
    recall_at,
)
from .indices import IndexSet
from .pace import paced
from .sources import HitBuilder, check_vector, chunk_from_source, hit_from_source
from .vector_plan import VectorPlan, plan_vectors

log = logging.getLogger(__name__)


def branch_hit(branch: str, raw: float, chunk: Chunk) -> Hit:
    """A hit of one search branch; k-NN scores become cosine similarity."""
    score = cosine_from_score(raw) if branch == "vector" else raw
    return Hit(chunk=chunk, scores={branch: score, "score": score})


def candidate_hit(branch: str, c: Candidate) -> Hit:
    """A branch's hit for a candidate: its chunk carries id, path and text hash, no text (the search adds it)."""
    return branch_hit(branch, c.score, bare_chunk(c))


def bare_chunk(c: Candidate) -> Chunk:
    """A candidate's chunk without its text: what the ranking stages read from doc values."""
    return Chunk(
        id=c.chunk_id, path=c.path, text="", hash=c.hash, speaker=c.speaker, question=c.question, words=c.words
    )


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
        return self.indices.dialect.knn_body(vector, k, f, self.width(k), size=size, caps=self.indices.caps)

    def width(self, k: int) -> int | None:
        """HNSW candidates per segment for the `k` nearest: the width calibrated on this index (`calibrate`, read from
        its `_meta` when the store opened), or None for the dialect's rule (`knn_candidates`) while none is recorded."""
        record = self.indices.knn_calibration
        width = record.width_for(k) if record is not None else None
        telemetry.stage(
            "knn_width",
            {"reme_es.knn.k": k, "reme_es.knn.width": width or 0, "reme_es.knn.calibrated": record is not None},
        )
        return width

    async def calibrate_if_due(self) -> Calibration | None:
        """Calibrate the k-NN width when `knn_calibration.due_rule` holds (after a load, a sync or a merge); None when
        not due, or where the width cannot be set (no vectors, a managed service, OpenSearch before 2.19)."""
        if not self.calibratable():
            return None
        try:
            stats = await self.port.stats(self.indices.ix.chunks)
            if not calibration_due(self.indices.knn_calibration, stats["docs"], stats["segments"]):
                return None
            return await self.calibrate(stats=stats)
        except AuthError as exc:  # a grantee's role reads no index stats and puts no mapping (adapters/security.py)
            log.info("k-NN width not calibrated on %s: %s", self.indices.ix.chunks, exc)
            return None

    def calibratable(self) -> bool:
        """Whether this index has vectors and a search width the server takes (and stats to measure it by)."""
        ix = self.indices
        return bool(ix.dims) and ix.dialect.sets_knn_width(ix.caps)

    async def calibrate(
        self,
        queries: list[list[float]] | None = None,
        *,
        sample: int | None = None,
        target: float | None = None,
        budget_ms: float | None = None,
        max_width: int | None = None,
        depth: int | None = None,
        record: bool = True,
        stats: dict | None = None,
    ) -> Calibration:
        """Measure the smallest width whose recall@10 at the callers' depth reaches the target on this index, and
        record it in the chunks index's `_meta` (engine_settings.json `knn_calibration`). Probe queries are made
        from `sample` stored vectors of this workspace unless `queries` are given; their exact neighbours come from
        an exact scoring query (Elasticsearch without painless: the widest k-NN search). The index should be
        refreshed. Returns the record: the width, the recall it reached, why the climb stopped, its cost."""
        if not self.calibratable():
            raise CapabilityError(f"index {self.indices.ix.chunks} has no k-NN width to calibrate here")
        started = time.monotonic()
        target = RULE["target_recall"] if target is None else target
        widths = ladder(
            RULE["depth"] if depth is None else depth, RULE["max_width"] if max_width is None else max_width
        )
        run = _Measuring(self, RULE["depth"] if depth is None else depth)
        if stats is None:
            stats, run.requests = await self.port.stats(self.indices.ix.chunks), run.requests + 1
        groups = 1  # the callers' own queries: one group
        if queries is None:
            queries, groups = await run.probes(sample or RULE["sample"]), len(RULE["probes"])
        if not queries:
            raise CapabilityError(f"index {self.indices.ix.chunks} holds no vectors of this workspace to calibrate on")
        reference, truth = await run.truth(queries, widths[-1])
        budget = RULE["latency_budget_ms"] if budget_ms is None else budget_ms
        chosen, stopped, steps = await climb(widths, lambda w: run.step(queries, truth, w, groups), target, budget)
        result = Calibration(
            width=chosen.width,
            recall=chosen.recall,
            target=target,
            reached=chosen.recall >= target,
            stopped=stopped,
            depth=run.depth,
            at=RULE["at"],
            docs=stats["docs"],
            segments=stats["segments"],
            sample=len(queries),
            reference=reference,
            measured_at=now_iso(),
            steps=steps,
            groups=chosen.groups,
        )
        result.seconds, result.requests = round(time.monotonic() - started, 2), run.requests + (2 if record else 0)
        if record:  # its cost as measured up to here, the two requests that record it counted
            await self._record(result)
        telemetry.record("reme_es.calibrations", 1, {"reme_es.reached": str(result.reached).lower()})
        telemetry.record("reme_es.calibration.recall", result.recall)
        return result

    async def _record(self, result: Calibration) -> None:
        """Keep a calibration in the chunks index's `_meta` (the rest of `_meta` kept) and use it from now on."""
        ix = self.indices
        mapping = await self.port.mapping(ix.ix.chunks) or {}
        meta = mapping.get("_meta") or {}
        meta.setdefault("reme_es", {})[RULE["meta_key"]] = result.to_meta()
        await self.port.put_meta(ix.ix.chunks, meta)
        ix.knn_calibration = Calibration.from_meta(meta["reme_es"])

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


class _Measuring:
    """The searches of one calibration of a store's chunks index (the dialect's bodies, sent through the port), and
    how many requests they took."""

    def __init__(self, store: VectorStore, depth: int):
        self.store, self.depth, self.requests = store, depth, 0
        self.index, self.f = store.indices.ix.chunks, store.indices.filter(None)

    async def probes(self, sample: int) -> list[list[float]]:
        """Probe queries from a random sample of the workspace's stored vectors (`probe_queries`)."""
        body = self.store.indices.dialect.sample_body(self.f, sample, RULE["seed"])
        found = await self.store.port.ranked_sources(self.index, body)
        self.requests += 1
        return probe_queries([src["embedding"] for _, src in found if src.get("embedding")])

    def approx(self, queries: list[list[float]], width: int, size: int) -> list[dict]:
        """The k-NN searches of `queries` at the callers' depth and `width`, answering ids and scores."""
        ix = self.store.indices
        return [
            q.ids_and_scores(ix.dialect.knn_body(v, self.depth, self.f, width, size=size, caps=ix.caps))
            for v in queries
        ]

    async def timed(self, bodies: list[dict]) -> list:
        """The calibration's searches, paced (`pace.paced`: a few at a time, a pause after each part), each request
        counted."""

        def send(part: list[dict]):
            self.requests += 1
            return self.store.port.timed_searches(self.index, part, "calibration search")

        return await paced(send, bodies)

    async def truth(self, queries: list[list[float]], widest: int) -> tuple[str, list[list[tuple[str, float]]]]:
        """The reference neighbours of each query: "exact" (the engine's scoring script), or "widest" (the widest
        k-NN search, where the node runs no scripts: Elasticsearch's integ-test distribution)."""
        size = RULE["bodies"]["exact_per_at"] * RULE["at"]
        try:
            bodies = [self.store.indices.dialect.exact_body(v, self.f, size) for v in queries]
            return "exact", [a.ranked for a in await self.timed(bodies)]
        except RequestFailed as exc:
            if "script" not in str(exc) and "painless" not in str(exc):
                raise
        answers = await self.timed(self.approx(queries, widest, size))
        return "widest", [a.ranked for a in answers]

    async def step(self, queries: list[list[float]], truth: list, width: int, groups: int) -> Step:
        """Recall@`at` of each probe group at `width`, and the median server time of one search."""
        at = RULE["at"]
        answers = await self.timed(self.approx(queries, width, at))
        found = [recall_at([i for i, _ in a.ranked], t, at) for a, t in zip(answers, truth)]
        worst, means = group_recalls(found, groups)
        return Step(width, worst, median_took([a.took_ms for a in answers]), means)
