"""The first pass's top hits that pseudo-relevance feedback reads, asked for in the candidates' own `_msearch`.

Feedback needs the text (for its length gate) and, on the vector branch, the stored vector of each branch's top
`n` hits. Rather than a round trip of its own after the candidates (an `_mget`), each branch's search is sent a
second time in the same `_msearch` with `size: n` and the `_source` it needs: the same query on the same refresh
point ranks the same top `n` (the k-NN search keeps its `k` and `ef_search`), so the sources are those of the
candidates' first `n`. The second copy costs the node one more search per branch, not the client a round trip.
The bodies come from `adapters.dialect.top_bodies`; this module reads their answers.
"""

from __future__ import annotations

from ..core.models import Hit


def by_chunk(answers: list[list[dict]]) -> dict[str, dict]:
    """The top hits' sources by chunk id (a hit both branches ranked first: once, with its vector if it has one)."""
    out: dict[str, dict] = {}
    for sources in answers:
        for src in sources:
            kept = out.get(src["chunk_id"])
            if kept is None or (src.get("embedding") and not kept.get("embedding")):
                out[src["chunk_id"]] = src
    return out


def shown_as(again: list[Hit], first: list[Hit], branch: str) -> list[Hit]:
    """The second pass's hits (ranked by its `score`) showing the first pass's `branch` score where it had one."""
    before = {h.chunk.id: h.scores[branch] for h in first}
    return [
        h.model_copy(update={"scores": {**h.scores, branch: before[h.chunk.id]}}) if h.chunk.id in before else h
        for h in again
    ]
