"""Client-side fusion of ranked lists: pure functions, no I/O.

`weighted_rrf` is ReMe's `SearchStep._rrf_merge`: score = w_v / (k + rank_v) + (1 - w_v) / (k + rank_k), ranks
from 1, hits found by one branch only keep that branch's contribution, ties keep first-seen order (vector
list first). Given the same two lists it produces the same order and scores as ReMe.
"""

from __future__ import annotations

from .models import RRF_K, Hit


def weighted_rrf(vector: list[Hit], keyword: list[Hit], vector_weight: float = 0.7, k: int = RRF_K) -> list[Hit]:
    """Fuse a vector and a keyword ranking with ReMe's weighted reciprocal rank fusion."""
    keyword_weight = 1.0 - vector_weight
    merged: dict[str, Hit] = {}
    for rank, hit in enumerate(vector, start=1):
        scores = {**hit.scores, "vector": hit.scores.get("vector", hit.score), "score": vector_weight / (k + rank)}
        merged[hit.chunk.id] = hit.model_copy(update={"scores": scores})
    for rank, hit in enumerate(keyword, start=1):
        contribution = keyword_weight / (k + rank)
        existing = merged.get(hit.chunk.id)
        keyword_score = hit.scores.get("keyword", hit.score)
        if existing is not None:
            existing.scores = {
                **existing.scores,
                "keyword": keyword_score,
                "score": existing.scores["score"] + contribution,
            }
        else:
            scores = {**hit.scores, "keyword": keyword_score, "score": contribution}
            merged[hit.chunk.id] = hit.model_copy(update={"scores": scores})
    return sorted(merged.values(), key=lambda h: h.score, reverse=True)


MAX_CANDIDATES = 200  # ReMe's cap on each branch's candidates


def candidate_depth(limit: int, multiplier: int = 5, cap: int = MAX_CANDIDATES) -> int:
    """How many candidates each branch fetches, as ReMe does: min(cap, limit x multiplier)."""
    return max(limit, min(cap, limit * multiplier))


def apply_min_score(hits: list[Hit], min_score: float) -> list[Hit]:
    """Drop hits whose fused score is below `min_score` (0 keeps all)."""
    if min_score <= 0:
        return hits
    return [h for h in hits if h.score >= min_score]
