"""`store.explain`: the per-stage breakdown read from the stages a search recorded (pure, no server)."""

from __future__ import annotations

from reme_es.core.models import Chunk, Hit, SearchResult
from reme_es.store.explain import explain, moved_text, stage
from reme_es.store.fusion import collapse_repeats, fuse, speaker_rescore


def _hit(cid: str, score: float, branch: str = "keyword", speaker: str = "", hash_: str = "") -> Hit:
    chunk = Chunk(id=cid, path=f"{cid}.md", text="", speaker=speaker, hash=hash_ or cid)
    return Hit(chunk=chunk, scores={branch: score, "score": score})


def test_each_hit_gets_its_rank_and_score_after_every_stage_and_the_stages_that_moved_it():
    keyword = [_hit("a", 9.0), _hit("b", 7.0, speaker="ana"), _hit("c", 5.0)]
    vector = [_hit("c", 0.9, "vector"), _hit("a", 0.8, "vector")]
    fused = fuse(
        vector, keyword, "rrf", 0.5
    )  # a and c found by both; a first (ranks 1+2 against 2+1: tie, vector first)
    lifted = speaker_rescore(fused, "What did Ana say?", 2.0)
    stages = [
        stage("bm25", keyword, branch=True),
        stage("k-NN", vector, branch=True),
        stage("fusion", fused),
        stage("speaker", lifted),
        stage("cut", lifted[:2]),
    ]
    result = SearchResult(hits=lifted[:2], stages=stages, fusion="client")
    out = explain(result)
    assert [s["name"] for s in out["stages"]] == ["bm25", "k-NN", "fusion", "speaker", "cut"]
    assert [s["candidates"] for s in out["stages"]] == [3, 2, 3, 3, 2]
    assert [h["id"] for h in out["ranked"]] == [h.chunk.id for h in lifted[:2]]
    assert out["consistent"] is True
    b = next(h for h in out["ranked"] if h["id"] == "b")
    assert b["found_by"] == ["bm25"]
    assert [(r["stage"], r["rank"]) for r in b["stages"]] == [
        ("bm25", 2),
        ("k-NN", None),
        ("fusion", 3),
        ("speaker", 1),
        ("cut", 1),
    ]
    assert b["moved_by"] == [{"stage": "speaker", "by": 2}]
    assert b["stages"][3]["feature"] == {"speaker": 1.0}
    assert moved_text(b["moved_by"][0]) == "speaker +2"
    first = out["ranked"][1]
    assert first["id"] == fused[0].chunk.id and first["moved_by"] == [{"stage": "speaker", "by": -1}]


def test_a_collapsed_repeat_shows_its_copies_and_no_move():
    hits = [_hit("a", 3.0, hash_="h"), _hit("b", 2.0, hash_="h"), _hit("c", 1.0)]
    kept = collapse_repeats(hits)
    result = SearchResult(hits=kept, stages=[stage("fusion", hits), stage("collapse", kept)], fusion="client")
    out = explain(result)
    assert [h["id"] for h in out["ranked"]] == ["a", "c"]
    assert out["ranked"][0]["stages"][1]["feature"] == {"repeats": 1.0}
    c = out["ranked"][1]
    assert c["moved_by"] == [{"stage": "collapse", "by": 1}]  # from third to second: its better copy left


def test_a_search_returning_hits_in_another_order_than_its_last_stage_is_flagged():
    hits = [_hit("a", 2.0), _hit("b", 1.0)]
    result = SearchResult(hits=list(reversed(hits)), stages=[stage("fusion", hits)])
    assert explain(result)["consistent"] is False
    assert explain(SearchResult(hits=[_hit("z", 1.0)], stages=[stage("fusion", hits)]))["consistent"] is False
    assert explain(SearchResult(hits=[]))["consistent"] is True


def test_a_server_fused_hit_is_found_by_the_branches_the_server_named():
    hit = Hit(chunk=Chunk(id="a", path="a.md", text=""), scores={"score": 0.7, "hybrid": 0.7, "vector": 0.9})
    out = explain(SearchResult(hits=[hit], stages=[stage("fusion", [hit])], fusion="native"))
    assert out["ranked"][0]["found_by"] == ["k-NN"]
    assert out["ranked"][0]["stages"] == [{"stage": "fusion", "rank": 1, "score": 0.7, "branch": False, "moved": None}]
