"""Issue 50 item 5 and multi-hop ideas, measured on LoCoMo's development half over the default path's candidates.

    python -m bench.quality.locomo_stages --url http://127.0.0.1:9200 [--index plain,date-context,date-vector]
                                          [--cache /tmp/locomo-stages.json]

Step 1 (needs a node): each `--index` way of writing the half (bench/quality/locomo.py's workspaces) is written, and
every question of categories 1-4 is searched through the drop-in's default path (`es_search_step`, top 10) and the
store's `ranked_search` (the 50 fused candidates a question's top 10 is cut from, in order, with their scores):
  plain         each turn one chunk, as the held-out check writes it;
  date-context  the session's date in words ("8 May 2023, May 2023, 2023") added to every chunk's `context` field,
                which the keyword branch matches (a time prefix only BM25 sees);
  date-vector   the chunk's vector made from "[8 May 2023] <turn>" (a time prefix only the k-NN branch sees).
Step 2 (no node): stages re-rank the `plain` candidates in the client, each at a few weights; every row is recall@10
on the tune half (26, 30, 41), the report half (42, 43), the whole, per category, as bench/quality/locomo.py reports.
  late          MaxSim of MiniLM's token vectors (the mean over the question's tokens of each one's best cosine with
                the turn's tokens, ColBERT-style), min-max fused with the candidate's fused score;
  maxsim        a candidate's best sentence against the question (MiniLM cosine of each sentence of the turn),
                min-max fused with the candidate's fused score;
  maxsim-ctx    the same over the sentences of the turn and its two neighbours (the neighbours' at half weight);
  digest        one extractive digest per session made from its stored turns (its top 30 TF-IDF terms, its
                capitalised names, its 3 sentences of highest TF-IDF mass) scored against the question by BM25 over the
                conversation's digests; a candidate of a session among the top 3 digests lifted by w x the digest's
                score over the best digest's;
  digest+turns  as digest, and the top digest's 3 turns nearest the question (cosine) added to the candidates;
  rm3 session   feedback from the top session only (`rm3_session`), as a simulated second keyword round;
  session lift  each candidate lifted by w x the best other candidate's normalised score in its session.
  names out     a second k-NN round (simulated) with the question's vector made without the speakers' names
                (`names_out`).
The first run of step 1 caches its candidates in `--cache`; later runs re-rank from it (`--refresh` to search again).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
from pathlib import Path

from bench.quality import locomo
from bench.quality import memory_quality as mq
from bench.quality.locomo_rerank import DEPTH, LIMIT, Half, rerank, without_names


def date_words(path: str) -> str:
    """A note's date in words: `daily/2023-05-08/...` -> "8 May 2023, May 2023, 2023"."""
    m = re.search(r"(\d{4})-(\d{2})-(\d{2})", path)
    if not m:
        return ""
    import datetime as dt

    d = dt.date(int(m[1]), int(m[2]), int(m[3]))
    return f"{d.day} {d:%B} {d.year}, {d:%B} {d.year}, {d.year}"


# ------------------------------------------------------------------------------------------ step 1: the store


async def search_half(sets: list[mq.Dataset], url: str, way: str, work: Path) -> dict:
    """Per conversation: each question's default-path top 10 and its 50 fused candidates [(id, score)]."""
    from reme_es.store import writer

    plain_contexts = writer.chunk_contexts
    if way == "date-context":

        def dated(chunks):
            out = plain_contexts(chunks)
            return {c.id: f"{out.get(c.id, '')}\n{date_words(c.path)}".strip() for c in chunks}

        writer.chunk_contexts = dated
    vectors = mq.PASSAGE_VECTORS
    if way == "date-vector":
        prefixed = {
            t: f"[{date_words(p).split(',')[0]}] {t}" for d in sets for p, cs in d.files.items() for *_, t in cs
        }
        mq.embed_all(list(prefixed.values()), side="passage")
        vectors = {t: mq.PASSAGE_VECTORS[p] for t, p in prefixed.items()}
    out: dict = {}
    apps = []
    try:  # every conversation a workspace of one index set, as bench/quality/locomo.py writes them
        for d in sets:
            app = mq.make_app(mq.app_config(work / f"{way}-{d.name}", "opensearch", url, f"h50-stages-{way}"))
            await app.start()
            apps.append(app)
            await app.context.components["file_store"]["default"].clear()
            await mq.index(app.context.components["file_store"]["default"], d, vectors)
        for d, app in zip(sets, apps):
            fs = app.context.components["file_store"]["default"]
            per = out.setdefault(d.name, {"default": [], "candidates": []})
            for q in d.queries:
                resp = await app.run_job("search_es", query=q, limit=LIMIT)
                per["default"].append([r["id"] for r in resp.metadata.get("results", [])])
                fused, _ = await fs.ranked_search(q, DEPTH, {}, 0.0, LIMIT)
                per["candidates"].append([(c.id, float(c.scores.get("score", 0.0))) for c in fused])
    finally:
        writer.chunk_contexts = plain_contexts
        for app in apps:
            await app.context.components["file_store"]["default"].clear()
        if apps:
            await apps[-1].context.components["file_store"]["default"].store.drop()
        for app in apps:
            await app.close()
    return out


def recalls(h: Half, runs: dict[str, list[list[str]]]) -> dict[str, float]:
    """recall@10 (and @5) of `runs` on tune, report and whole half, per category."""
    out = {}
    for part, names in (("tune", locomo.TUNE), ("report", locomo.REPORT), ("all", locomo.CONVERSATIONS)):
        f = locomo.figures(runs, h.sets, names)
        out[part] = f["R@10"]
        if part == "all":
            out.update({k: f[k] for k in ("R@5", *locomo.CATEGORIES.values())})
    return out


def row(label: str, f: dict, moved: str = "") -> str:
    cols = ("all", "R@5", "tune", "report", *locomo.CATEGORIES.values())
    return f"| {label} | " + " | ".join(f"{f[c]:.3f}" for c in cols) + f" | {moved} |"


def moved(h: Half, runs: dict[str, list[list[str]]], base: dict[str, list[list[str]]]) -> str:
    """On the report half: how many questions' recall@10 rose and fell against `base` (a paired count, so a gain
    carried by a handful of questions shows as such)."""
    up = down = 0
    for c in locomo.REPORT:
        for new, old, g in zip(runs[c], base[c], h.sets[c].gains):
            d = mq.recall_at(new, g, LIMIT) - mq.recall_at(old, g, LIMIT)
            up, down = up + (d > 0), down + (d < 0)
    return f"+{up} / -{down}"


STAGES = {
    "late": (0.1, 0.2, 0.35, 0.5),
    "rm3 session": (0.1, 0.2, 0.3, 0.5),
    "names out": (0.1, 0.2, 0.3, 0.5),
    "maxsim": (0.1, 0.2, 0.3, 0.5),
    "maxsim-ctx": (0.1, 0.2, 0.3),
    "digest": (0.05, 0.1, 0.2, 0.3),
    "digest+turns": (0.1, 0.2),
    "session lift": (0.05, 0.1, 0.2),
}


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--data", default="/work/shared/data/locomo-dev")
    p.add_argument(
        "--index", default="plain", help="ways of writing the half to search: plain,date-context,date-vector"
    )
    p.add_argument("--cache", default="/tmp/locomo-stages.json")
    p.add_argument("--refresh", action="store_true")
    p.add_argument("--stages", default=",".join(STAGES), help="the client stages to run (step 2)")
    args = p.parse_args()
    sets = {c: locomo.conversation(Path(args.data) / f"{c}.json") for c in locomo.CONVERSATIONS}
    mq.use_model("minilm")
    texts = [t for d in sets.values() for cs in d.files.values() for _, _, t in cs]
    mq.embed_all([q for d in sets.values() for q in d.queries])
    mq.embed_all(texts, side="passage")
    cache = Path(args.cache)
    found = json.loads(cache.read_text()) if cache.exists() and not args.refresh else {}
    todo = [w for w in args.index.split(",") if w and w not in found]
    if todo:
        work = Path(tempfile.mkdtemp(prefix="reme-es-stages-"))
        try:
            for way in todo:
                found[way] = asyncio.run(search_half(list(sets.values()), args.url, way, work))
                cache.write_text(json.dumps(found))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    h = Half(sets)
    mq.embed_all([without_names(h, c, q) for c, d in sets.items() for q in d.queries])
    head = " | ".join(locomo.CATEGORIES.values())
    print(f"| row | R@10 | R@5 | tune R@10 | report R@10 | {head} | report questions up / down |")
    print("|---|" + "--:|" * (4 + len(locomo.CATEGORIES)) + "--:|")
    for way in found:
        print(row(f"{way}: default path", recalls(h, {c: found[way][c]["default"] for c in sets})))
        print(
            row(
                f"{way}: candidates' own order",
                recalls(h, {c: [[i for i, _ in x][:LIMIT] for x in found[way][c]["candidates"]] for c in sets}),
            )
        )
    plain = found.get("plain")
    if not plain:
        return
    base = {c: [[i for i, _ in x][:LIMIT] for x in plain[c]["candidates"]] for c in sets}
    for stage in [x for x in args.stages.split(",") if x]:
        for w in STAGES[stage]:
            runs = {
                c: [
                    rerank(h, c, q, cands, stage, w)[:LIMIT]
                    for q, cands in zip(sets[c].queries, plain[c]["candidates"])
                ]
                for c in sets
            }
            print(row(f"{stage} {w:g}", recalls(h, runs), moved(h, runs, base)))


if __name__ == "__main__":
    main()
