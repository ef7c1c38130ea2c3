"""SearchStore: keyword search (BM25) and hybrid search, native (one request) or fused client-side with the
VectorStore's k-NN branch."""

from __future__ import annotations

import logging

from ..adapters.dialect import SOURCE_EXCLUDES, cosine_from_score, feedback_keyword_body, keyword_body, top_bodies
from ..core.errors import CapabilityError, ConfigError, RequestFailed
from ..core.models import Fusion, Hit, SearchFilter, SearchResult, doc_id
from .dates import about_the_past, anchor_date, anchor_query, date_rescore, query_dates, with_window
from .explain import stage
from .feedback import by_chunk
from .feedback import shown_as as _shown_as
from .fusion import (
    COLLAPSE_MAX_DEPTH,
    FEEDBACK_BETA,
    FEEDBACK_BOOST,
    FEEDBACK_TERMS,
    PROXIMITY_TOP,
    apply_min_score,
    candidate_depth,
    collapse_repeats,
    feeds_back,
    fuse,
    note_rescore,
    proximity_rescore,
    query_weight,
    question_rescore,
    rocchio,
    speaker_rescore,
    turn_length_rescore,
)
from .indices import IndexSet
from .sources import HitBuilder, chunk_from_source, hit_from_source
from .vectors import VectorStore
from .vectors import bare_chunk as _bare_chunk
from .vectors import candidate_hit as _candidate_hit

log = logging.getLogger(__name__)

SEARCH_MODES = ("hybrid", "keyword", "vector")
# The share of `date_boost` a window counted from an event gets ("two weeks after the surgery"): its date comes from
# the best keyword hit for the event, which may be another day's mention of it.
ANCHORED_SHARE = 0.4


class SearchStore:
    """Searches over the chunks index, as ReMe's search step does them."""

    def __init__(self, indices: IndexSet, vectors: VectorStore, keyword_fields: tuple[str, ...] | None = None):
        self.indices, self.vectors, self.keyword_fields = indices, vectors, keyword_fields

    @property
    def port(self):
        """The index port."""
        return self.indices.port

    async def _candidates(self, body: dict, branch: str, params: dict | None = None) -> list[Hit]:
        """Run a search for scores, chunk ids and paths only; the hits' chunks carry no text until `_with_chunks`."""
        ranked = await self.port.ranked(self.indices.ix.chunks, body, params, self.indices.collapse)
        return [_candidate_hit(branch, c) for c in ranked]

    async def _with_chunks(self, hits: list[Hit]) -> list[Hit]:
        """The hits with their stored chunks, from one `_mget` at the searched refresh point (`realtime=false`)."""
        docs = [(doc_id(h.chunk.id), h.chunk.path) for h in hits]
        sources = await self.port.get_routed(self.indices.ix.chunks, docs, SOURCE_EXCLUDES, realtime=False)
        out = []
        for hit, src in zip(hits, sources, strict=True):
            if src is not None:
                out.append(hit.model_copy(update={"chunk": chunk_from_source(src)}))
            else:  # only if the chunk went between the search and the fetch (a refresh in between)
                log.info("search hit %s of %s is gone from the index; left out", hit.chunk.id, hit.chunk.path)
        return out

    async def _fused(self, body: dict, params: dict | None) -> list[Hit]:
        """The candidates of a native hybrid search, each with the raw score of the branches that found it (vector as
        cosine similarity, keyword as BM25) where the server names them, as ReMe's client-side fusion keeps them."""
        hits = []
        for c, named in await self.port.ranked_named(self.indices.ix.chunks, body, params, self.indices.collapse):
            scores = {"hybrid": c.score, "score": c.score}
            if "vector" in named:
                scores["vector"] = cosine_from_score(named["vector"])
            if "keyword" in named:
                scores["keyword"] = named["keyword"]
            chunk = _bare_chunk(c)
            hits.append(Hit(chunk=chunk, scores=scores))
        return hits

    async def keyword(
        self,
        query: str,
        limit: int,
        search_filter: SearchFilter | dict | None = None,
        build: HitBuilder = hit_from_source,
    ) -> list:
        """BM25 over chunk text, filtered server-side; empty query or limit <= 0 gives []. Each hit is
        `build("keyword", score, source)` (a `Hit` by default)."""
        f = self.indices.filter(search_filter)
        if not query or not query.strip() or limit <= 0:
            return []
        body = keyword_body(query, limit, f, self.keyword_fields)
        hits = await self.port.ranked_sources(self.indices.ix.chunks, body)
        return [build("keyword", score, src) for score, src in hits]

    async def search(
        self,
        query: str,
        vector: list[float] | None,
        limit: int,
        search_filter: SearchFilter | dict | None,
        mode: str,
        candidate_multiplier: int,
        min_score: float = 0.0,
        candidates: int | None = None,
    ) -> SearchResult:
        """Keyword, vector or hybrid search as ReMe does it: candidates per branch, fusion, min_score, limit (the
        defaults are MemoryStore.search's, which calls it).

        Candidates are ranked from scores and ids alone; only the hits returned are fetched with their text.
        `candidates` sets the depth per branch directly (default: ReMe's min(200, limit x candidate_multiplier))."""
        f = self.indices.filter(search_filter)
        if not query or not query.strip() or limit <= 0:
            return SearchResult(hits=[])
        candidates = max(limit, candidates) if candidates else candidate_depth(limit, candidate_multiplier)
        # One branch: its top `limit` hits are the first `limit` of its candidates, and min_score only cuts the tail,
        # so only those are asked for (the k-NN search still explores `candidates` neighbours).
        cut = f"min_score {min_score:g}, top {limit}"
        if mode == "keyword" or (mode == "hybrid" and vector is None):
            hits = await self.keyword(query, limit, f)
            kept = apply_min_score(hits, min_score)
            stages = [stage("bm25", hits, f"top {limit} by BM25", branch=True), stage("cut", kept, cut)]
            return SearchResult(hits=kept, keyword_hits=len(hits), fusion="keyword", stages=stages)
        if mode == "vector":
            hits = await self.vectors.search(vector, limit, f, k=candidates)
            kept = apply_min_score(hits, min_score)
            stages = [
                stage("k-NN", hits, f"top {limit} of k-NN over {candidates}", branch=True),
                stage("cut", kept, cut),
            ]
            return SearchResult(hits=kept, vector_hits=len(hits), fusion="vector", stages=stages)
        if mode != "hybrid":
            raise ConfigError(f"search mode must be hybrid, keyword or vector, got {mode!r}")
        result = await self.ranked(query, vector, candidates, f, limit)
        kept = apply_min_score(result.hits, min_score)[:limit]
        result.stages.append(stage("cut", kept, cut))
        result.hits = await self._with_chunks(kept)
        return result

    async def ranked(
        self,
        query: str,
        vector: list[float] | None,
        candidates: int,
        search_filter: SearchFilter | dict | None = None,
        limit: int | None = None,
    ) -> SearchResult:
        """Up to `candidates` fused hits ranked from ids and scores alone (their chunks carry no text), in one round
        trip: the server's fusion (one request) or both branches in one `_msearch`, fused here (the store's fusion).

        With `collapse` set, a text repeated in several chunks is kept once, at its best rank (by the text hashes the
        candidates carry: no request); when the copies leave fewer than `limit` hits of a pool that was full, the
        branches are asked again four times as deep (up to COLLAPSE_MAX_DEPTH), so `limit` distinct hits come back
        whenever the index holds them. With `proximity` set, client fusion fetches its head's text (one `_mget`) to
        re-rank it by term proximity."""
        f = self.indices.filter(search_filter)
        if not query or not query.strip() or candidates <= 0:
            return SearchResult(hits=[])
        depth = candidates
        while True:
            result = await self._pool(query, vector, depth, f)
            if not self.indices.collapse:
                break
            full = max(len(result.hits), result.keyword_hits, result.vector_hits) >= depth
            pooled, result.hits = len(result.hits), collapse_repeats(result.hits)
            if len(result.hits) >= (limit or 0) or not full or depth >= COLLAPSE_MAX_DEPTH:
                note = f"{pooled - len(result.hits)} repeated texts kept once, at {depth} candidates per branch"
                result.stages.append(stage("collapse", result.hits, note))
                break
            depth = min(depth * 4, COLLAPSE_MAX_DEPTH)
        await self._rescored(query, vector, result, f, candidates)
        return result

    async def _rescored(
        self, query: str, vector: list[float] | None, result: SearchResult, f: SearchFilter, candidates: int
    ) -> None:
        """The fused (and collapsed) ranking re-ranked in place by each step the index set turns on, in order:
        proximity, speaker, note, date, question, turn length; each step that runs is recorded as a stage."""
        ix = self.indices

        def step(name: str, hits: list[Hit], note: str) -> None:
            changed = hits is not result.hits
            result.hits = hits
            result.stages.append(stage(name, hits, note if changed else f"{note}: did not apply"))

        if ix.proximity and result.fusion == "client":
            step("proximity", await self._by_proximity(query, result.hits), f"boost {ix.proximity:g}")
        if ix.speaker_boost:
            step("speaker", speaker_rescore(result.hits, query, ix.speaker_boost), f"boost {ix.speaker_boost:g}")
        if ix.note_boost:
            step("note", note_rescore(result.hits, ix.note_boost), f"boost {ix.note_boost:g}")
        if ix.date_boost:
            hits, note = await self.by_dates(query, vector, result.hits, f, candidates)
            step("date", hits, note)
        if ix.question_factor < 1:
            step("question", question_rescore(result.hits, ix.question_factor), f"factor {ix.question_factor:g}")
        if ix.turn_length:
            step("turn length", turn_length_rescore(result.hits, ix.turn_length), f"weight {ix.turn_length:g}")

    async def by_dates(
        self, query: str, vector: list[float] | None, hits: list[Hit], f: SearchFilter, depth: int
    ) -> tuple[list[Hit], str]:
        """The ranked hits, and the candidates of the window the question names (both branches again inside it, without
        feedback: one round trip, two when the question counts from an event that one keyword search dates first),
        re-ranked with those dated inside lifted by `date_boost` (a window counted from an event the store dated
        itself, less sure, by ANCHORED_SHARE of it). A question that names no date, or asks about the present or
        future ("what is happening on 21 June?": `dates.about_the_past`), costs nothing. With the hits, what was done
        (a stage's note)."""
        hint = query_dates(query, self.indices.today) if about_the_past(query) else None
        boost = self.indices.date_boost
        if hint is not None and hint.anchor:
            when = anchor_date(hint, await self.keyword(anchor_query(query, hint), 5, f))
            hint = hint.around(when) if when else None
            boost *= ANCHORED_SHARE
        if hint is None or hint.start is None or hint.end is None:  # a window has both ends or none
            return hits, f"boost {self.indices.date_boost:g}"
        start, end = hint.start.isoformat(), hint.end.isoformat()
        window = f.model_copy(
            update={
                "start_date": max(start, f.start_date or start),
                "end_date": min(end, f.end_date or end),
                "strict_date": True,
            }
        )
        merged = with_window(hits, (await self._pool(query, vector, depth, window, feedback=False)).hits)
        merged = collapse_repeats(merged) if self.indices.collapse else merged
        note = f"boost {boost:g} inside {start}..{end}, {len(merged) - len(hits)} candidates of the window added"
        return date_rescore(merged, hint, boost, top=len(merged)), note

    async def _pool(
        self, query: str, vector: list[float] | None, depth: int, f: SearchFilter, feedback: bool = True
    ) -> SearchResult:
        """`depth` candidates per branch, fused by the server where the store fuses natively, else here (with the
        store's feedback unless `feedback` is false)."""
        if vector is not None and self.indices.native_hybrid():
            return await self._native(query, vector, depth, f)
        if vector is not None and self.indices.hybrid == "native":
            caps = self.indices.caps
            raise CapabilityError(
                f"native {self.indices.pipeline_kind} hybrid search needs the neural-search plugin (OpenSearch) or the "
                f"licensed rrf retriever (Elasticsearch), and an index with vectors; "
                f"{caps.engine if caps else 'the server'} lacks it. Use hybrid: auto or client."
            )
        return await self._client(query, vector, depth, f, feedback)

    async def _by_proximity(self, query: str, hits: list[Hit]) -> list[Hit]:
        """The fused head (PROXIMITY_TOP hits) fetched with its text and re-ranked by term proximity; the rest after."""
        head = await self._with_chunks(hits[:PROXIMITY_TOP])
        return proximity_rescore(head, query, top=len(head), boost=self.indices.proximity) + hits[PROXIMITY_TOP:]

    async def with_chunks(self, hits: list[Hit]) -> list[Hit]:
        """Ranked hits with their stored chunks (one `_mget`; hits whose chunk went meanwhile are left out)."""
        return await self._with_chunks(hits)

    async def _client(
        self, query: str, vector: list[float] | None, candidates: int, f: SearchFilter, feedback: bool = True
    ) -> SearchResult:
        """Both branches in one `_msearch` for ids and scores, fused by the store's fusion (its pipeline kind: ReMe's
        weighted RRF, min-max or z-score) at the question's vector weight (`fusion.query_weight`). With feedback,
        the same `_msearch` brings each branch's top hits' texts and vectors (`adapters.dialect.top_bodies`)."""
        bodies = [keyword_body(query, candidates, f, self.keyword_fields, self.indices.context_boost)]
        if vector:
            bodies.append(self.vectors.knn_body(vector, candidates, f))
        n = self.indices.feedback if len(bodies) == 2 and feedback else 0
        keyword, vec, tops = await self._branches(bodies, n)
        stages = [stage("bm25", keyword, f"asked for {candidates}", branch=True)]
        stages += [stage("k-NN", vec, f"asked for {candidates}", branch=True)] if vector else []
        if keyword and vec and n and vector:
            again_k, again_v = await self._feedback(query, vector, candidates, f, keyword, vec, tops)
            stages += [
                stage(f"feedback {b}", h, f"top {n} fed back", branch=True)
                for b, h, first in (("bm25", again_k, keyword), ("k-NN", again_v, vec))
                if h is not first
            ]
            keyword, vec = again_k, again_v
        fusion: Fusion
        if keyword and vec:
            method, ix = self.indices.pipeline_kind or "rrf", self.indices
            weight = query_weight(query, ix.vector_weight, ix.relation_vector_weight)
            fused, fusion = fuse(vec, keyword, method, weight), "client"
            stages.append(stage("fusion", fused, f"{method}, vector weight {weight:g} (client)"))
        else:
            fused, fusion = (vec or keyword), ("vector" if vec else "keyword")
            stages.append(stage("fusion", fused, f"one branch only ({fusion})"))
        return SearchResult(hits=fused, keyword_hits=len(keyword), vector_hits=len(vec), fusion=fusion, stages=stages)

    async def _branches(self, bodies: list[dict], tops: int = 0) -> tuple[list[Hit], list[Hit], dict[str, dict]]:
        """The keyword and (when a second body is given) vector candidates of one `_msearch`, and with `tops` the
        stored sources of each branch's first `tops` hits by chunk id (vectors included: feedback reads them)."""
        sourced = top_bodies(bodies, tops, self.port.dialect.source_with_vectors()) if tops else []
        answers, sources = await self.port.ranked_and_sources(
            self.indices.ix.chunks, bodies, sourced, self.indices.collapse
        )
        keyword, vec = (
            [_candidate_hit(branch, c) for c in ranked]
            for branch, ranked in zip(("keyword", "vector"), (answers[0], answers[1] if len(answers) > 1 else []))
        )
        return keyword, vec, by_chunk(sources)

    async def _feedback(
        self,
        query: str,
        vector: list[float],
        candidates: int,
        f: SearchFilter,
        keyword: list[Hit],
        vec: list[Hit],
        stored: dict[str, dict],
    ) -> tuple[list[Hit], list[Hit]]:
        """Both branches again, each expanded by its own top `feedback` hits (pseudo-relevance feedback): the k-NN
        query moved toward their stored vectors (Rocchio), the BM25 query OR-ed with a more_like_this of them. Only
        hits of at least FEEDBACK_MIN_TERMS terms feed back (a dialog turn or a one-line note has too few terms to
        expand a query from; the branch then keeps its first pass). `stored`: the top hits' sources with their
        vectors, from the first pass's `_msearch`; one more round trip, the expanded branches' `_msearch`, only when
        a branch has feedback. The hits are ranked by the expanded queries' scores but show the original query's
        branch score wherever the first pass found them."""
        n = self.indices.feedback

        def usable(hits: list[Hit]) -> list[Hit]:
            return [h for h in hits[:n] if feeds_back((stored.get(h.chunk.id) or {}).get("text", ""))]

        from_vec, from_kw = usable(vec), usable(keyword)
        if not from_vec and not from_kw:
            return keyword, vec
        like = [(self.port.stored_id(doc_id(h.chunk.id)), self.port.scope.routing(h.chunk.path)) for h in from_kw]
        moved = rocchio(vector, [stored[h.chunk.id].get("embedding") or [] for h in from_vec], FEEDBACK_BETA)
        bodies = [
            feedback_keyword_body(
                self.indices.ix.chunks,
                query,
                like,
                candidates,
                f,
                self.keyword_fields,
                FEEDBACK_TERMS,
                FEEDBACK_BOOST,
                self.indices.context_boost,
            )
            if like
            else keyword_body(query, candidates, f, self.keyword_fields, self.indices.context_boost),
            self.vectors.knn_body(moved, candidates, f),
        ]
        again_k, again_v, _ = await self._branches(bodies)
        if from_kw:
            keyword = _shown_as(again_k, keyword, "keyword") or keyword
        if from_vec:
            vec = _shown_as(again_v, vec, "vector") or vec
        return keyword, vec

    async def _native(self, query: str, vector: list[float], candidates: int, f: SearchFilter) -> SearchResult:
        """One request fused by the server (a search pipeline or a retriever); scores are checked to be fused."""
        ix, dialect = self.indices, self.indices.dialect
        self.vectors.check(vector, "the query")
        body = dialect.hybrid_body(
            query,
            vector,
            candidates,
            f,
            self.keyword_fields,
            caps=ix.caps,
            context=ix.context_boost,
            num_candidates=self.vectors.width(candidates),  # the width calibrated on the index, as the k-NN branch
        )
        pipeline = {"search_pipeline": ix.pipeline_name()} if dialect.uses_search_pipeline else {}
        params = {**pipeline, **dialect.hybrid_params(ix.caps)} or None
        try:
            hits = await self._fused(body, params)
        except RequestFailed as exc:
            # A missing pipeline is a 400 like any bad request: ask whether it exists rather than read the message.
            if not pipeline or exc.status != 400 or await self.port.pipeline_exists(ix.pipeline_name()):
                raise
            await ix.ensure_pipeline()  # deleted behind our back: recreate once
            hits = await self._fused(body, params)
        ceiling = dialect.hybrid_score_ceiling(ix.pipeline_kind) + 1e-6
        if any(not 0.0 <= h.score <= ceiling for h in hits):
            raise RequestFailed(
                f"the hybrid response did not go through the {ix.pipeline_name()} pipeline (raw scores came back); "
                "check that the neural-search plugin is installed and the pipeline exists",
                status=200,  # the server answered, but not through the fusion processor
                type="unfused_response",
            )
        note = f"{ix.pipeline_kind}, vector weight {ix.vector_weight:g} (one request, fused by the server)"
        return SearchResult(hits=hits, fusion="native", stages=[stage("fusion", hits, note)])
