"""A search explained stage by stage, from what the search recorded as it ranked: pure functions, no I/O.

The search path (`SearchStore.search` / `ranked`) appends a `Stage` after each step that ran: each branch's own
ranking (BM25, k-NN, their feedback passes), the fusion, then every re-ranking step (collapse, proximity, speaker,
note, date, question, turn length) and the final cut (min_score, limit). `explain` reads those rankings for the hits
the search returned; it never ranks anything itself, so the CLI's `search --explain`, the UI's search page and the
search cannot disagree.
"""

from __future__ import annotations

from typing import Any

from ..core.models import Hit, SearchResult, Stage

# The score key each stage leaves on a hit (`Hit.scores`), shown beside that stage: what the stage looked at.
FEATURES = {
    "bm25": "keyword",
    "k-NN": "vector",
    "feedback bm25": "keyword",
    "feedback k-NN": "vector",
    "collapse": "repeats",
    "proximity": "proximity",
    "speaker": "speaker",
    "note": "note",
    "date": "in_dates",
    "question": "question",
    "turn length": "length",
}


def stage(name: str, hits: list[Hit], note: str = "", branch: bool = False) -> Stage:
    """The stage `name` as it left `hits`: their chunk ids and scores in rank order."""
    return Stage(name=name, ranking=[(h.chunk.id, h.score) for h in hits], note=note, branch=branch)


def _positions(s: Stage) -> dict[str, tuple[int, float]]:
    """Rank (from 1) and score of each chunk id in a stage's ranking (its first place where an id repeats)."""
    out: dict[str, tuple[int, float]] = {}
    for rank, (cid, score) in enumerate(s.ranking, start=1):
        out.setdefault(cid, (rank, score))
    return out


def _hit_stages(cid: str, stages: list[Stage], where: list[dict[str, tuple[int, float]]], hit: Hit) -> list[dict]:
    """One hit's rank and score after every stage, and how far each ranking stage moved it (positive: up)."""
    rows: list[dict] = []
    before: int | None = None
    for s, pos in zip(stages, where):
        rank, score = pos.get(cid, (None, None))
        row: dict[str, Any] = {"stage": s.name, "rank": rank, "score": score, "branch": s.branch}
        feature = FEATURES.get(s.name)
        if feature and feature in hit.scores:
            row["feature"] = {feature: hit.scores[feature]}
        if not s.branch:
            row["moved"] = (before - rank) if before is not None and rank is not None else None
            before = rank if rank is not None else before
        rows.append(row)
    return rows


def _found_by(rows: list[dict], hit: Hit) -> list[str]:
    """The branches whose ranking holds the hit; for a search the server fused (no branch ranking recorded), the
    branches whose score the server named for it."""
    found = [r["stage"] for r in rows if r["branch"] and r["rank"] is not None]
    if found or any(r["branch"] for r in rows):
        return found
    return [stage for stage, key in (("bm25", "keyword"), ("k-NN", "vector")) if key in hit.scores]


def _movers(rows: list[dict]) -> list[dict]:
    """The ranking stages that moved a hit, largest move first (ties in stage order)."""
    moves = [
        {"stage": r["stage"], "by": r["moved"]} for r in rows if not r["branch"] and r.get("moved") not in (None, 0)
    ]
    return sorted(moves, key=lambda m: -abs(m["by"]))


def explain(result: SearchResult) -> dict:
    """The per-stage breakdown of a search's returned hits, in the order the search returned them: for each hit its
    rank and score after every recorded stage, what it was found by (`found_by`: the branches whose ranking holds it),
    and which stages moved it and by how many places (`moved_by`). `stages` lists each stage with its note and how
    many candidates it ranked. `consistent` is false if the last ranking stage does not order the returned hits as
    the search returned them (a search path that re-ordered without recording a stage)."""
    stages = result.stages
    where = [_positions(s) for s in stages]
    hits = []
    for final, hit in enumerate(result.hits, start=1):
        cid = hit.chunk.id
        rows = _hit_stages(cid, stages, where, hit)
        hits.append(
            {
                "rank": final,
                "id": cid,
                "path": hit.chunk.path,
                "start_line": hit.chunk.start_line,
                "end_line": hit.chunk.end_line,
                "score": hit.score,
                "scores": dict(hit.scores),
                "found_by": _found_by(rows, hit),
                "stages": rows,
                "moved_by": _movers(rows),
            }
        )
    return {
        "fusion": result.fusion,
        "stages": [{"name": s.name, "note": s.note, "candidates": len(s.ranking), "branch": s.branch} for s in stages],
        "ranked": hits,
        "consistent": _consistent(result),
    }


def _consistent(result: SearchResult) -> bool:
    """Whether the last ranking stage holds the returned hits in the order returned (cuts only leave hits out)."""
    ranking = [s for s in result.stages if not s.branch]
    if not ranking:
        return not result.hits
    order = {cid: i for i, (cid, _) in reversed(list(enumerate(ranking[-1].ranking)))}
    places = [order.get(h.chunk.id) for h in result.hits]
    return all(p is not None for p in places) and places == sorted(places)  # type: ignore[type-var]


def moved_text(move: dict) -> str:
    """A move as the CLI and the page say it: `speaker +3` (up three places) or `date -1`."""
    return f"{move['stage']} {move['by']:+d}"
