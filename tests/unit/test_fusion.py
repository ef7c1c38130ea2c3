"""Client-side fusion reproduces ReMe's SearchStep._rrf_merge exactly."""

from __future__ import annotations

import random

import pytest

from reme_es.fusion import apply_min_score, candidate_depth, weighted_rrf
from reme_es.models import Chunk, Hit


def _hit(cid: str, branch: str, score: float) -> Hit:
    return Hit(chunk=Chunk(id=cid, path=f"p/{cid}.md", text=cid), scores={branch: score, "score": score})


def _lists(seed: int) -> tuple[list[Hit], list[Hit]]:
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(40)]
    vec = [_hit(i, "vector", 1 - n / 100) for n, i in enumerate(rng.sample(ids, 25))]
    kw = [_hit(i, "keyword", 30 - n) for n, i in enumerate(rng.sample(ids, 25))]
    return vec, kw


def test_rrf_by_hand():
    vec = [_hit("a", "vector", 0.9), _hit("b", "vector", 0.8)]
    kw = [_hit("b", "keyword", 7.0), _hit("c", "keyword", 3.0)]
    fused = weighted_rrf(vec, kw, vector_weight=0.7)
    assert [h.chunk.id for h in fused] == ["b", "a", "c"]
    assert fused[0].scores == pytest.approx({"vector": 0.8, "keyword": 7.0, "score": 0.7 / 62 + 0.3 / 61})
    assert fused[1].scores == pytest.approx({"vector": 0.9, "score": 0.7 / 61})
    assert fused[2].scores == pytest.approx({"keyword": 3.0, "score": 0.3 / 62})


def test_candidate_depth_and_min_score():
    assert [candidate_depth(n) for n in (1, 10, 40, 41, 500)] == [5, 50, 200, 200, 500]
    hits = [_hit("a", "keyword", 0.5), _hit("b", "keyword", 0.1)]
    assert [h.chunk.id for h in apply_min_score(hits, 0.2)] == ["a"]
    assert apply_min_score(hits, 0.0) == hits


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weight", [0.0, 0.3, 0.7, 1.0])
def test_matches_reme_rrf_merge(seed, weight):
    search = pytest.importorskip("reme.steps.index.search", reason="reme-ai is not installed (pip install 'reme-es[reme]')")
    from reme.schema import FileChunk

    vec, kw = _lists(seed)

    def to_reme(hits):
        return [FileChunk(id=h.chunk.id, path=h.chunk.path, text=h.chunk.text, scores=dict(h.scores)) for h in hits]

    theirs = search.SearchStep._rrf_merge(to_reme(vec), to_reme(kw), weight)
    ours = weighted_rrf(vec, kw, weight)
    assert [h.chunk.id for h in ours] == [c.id for c in theirs]
    assert [h.scores for h in ours] == [c.scores for c in theirs]
