"""Cranfield's nDCG@10 under the store's search settings, chosen on the tuning half (odd query ids) and reported on
the other (even ids), through `es_search_step` as bench/quality/heldout.py runs it.

    python -m bench.quality.cranfield_tune --url http://127.0.0.1:9401 [--prefix bench-cran-tune] [--model minilm]

One index of Cranfield (1,400 abstracts, one chunk each, filled through ReMe's interface); every setting is an
attribute of the store's index set changed around each search (`bench/quality/heldout.py`'s `searching`), interleaved
question by question. Settings: the vector weight of the z-score fusion, feedback depth (top hits fed back per
branch), the fusion method, proximity re-scoring, BM25 over `text` + `text.cjk`. A Cranfield question is long (6-46
words, median 17) and a memory question short (1-14 words, median 7-10): a weight chosen for long questions alone would
leave the conversational sets as they are, which is why the vector weight is swept on its own here.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
from pathlib import Path

from bench.quality import memory_quality as mq
from bench.quality.heldout import halves, searching

GRID: list[tuple[str, dict]] = [("default (z-score 0.55, feedback 1)", {})]
GRID += [(f"vector weight {w}", {"vector_weight": w}) for w in (0.35, 0.45, 0.5, 0.6, 0.65, 0.75)]
GRID += [(f"feedback {n}", {"feedback": n}) for n in (0, 2, 3)]
GRID += [
    (f"vector weight {w}, feedback {n}", {"vector_weight": w, "feedback": n}) for w in (0.45, 0.65) for n in (2, 3)
]
GRID += [(f"fusion {k} (client)", {"pipeline_kind": k, "hybrid": "client"}) for k in ("minmax", "rrf")]
GRID += [(f"proximity {p}", {"proximity": p}) for p in (0.1, 0.3)]


async def run(url: str, prefix: str, root: Path) -> tuple[mq.Dataset, dict[str, list[list[str]]]]:
    """The set and each setting's top 10 per question."""
    d = mq.cranfield_set(root)
    texts = [t for cs in d.files.values() for _, _, t in cs]
    mq.embed_all(texts + d.queries)
    mq.embed_all(texts, side="passage")
    work = Path(tempfile.mkdtemp(prefix="reme-es-cran-tune-"))
    app = mq.make_app(mq.app_config(work, "opensearch", url, prefix))
    await app.start()
    fs = app.context.components["file_store"]["default"]
    runs: dict[str, list[list[str]]] = {}
    try:
        await fs.clear()
        await mq.index(fs, d, mq.PASSAGE_VECTORS)
        ix = fs.store.indices
        for i, q in enumerate(d.queries):
            for name, settings in GRID if i % 2 == 0 else GRID[::-1]:
                with searching(ix, **settings):
                    resp = await app.run_job("search_es", query=q, limit=mq.LIMIT)
                runs.setdefault(name, []).append([r["id"] for r in resp.metadata.get("results", [])])
    finally:
        await fs.clear()
        await fs.store.drop()
        await app.close()
        shutil.rmtree(work, ignore_errors=True)
    return d, runs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--prefix", default="bench-cran-tune")
    p.add_argument("--model", default="minilm")
    p.add_argument("--cranfield", default="/work/shared/data/cranfield")
    args = p.parse_args()
    mq.use_model(args.model)
    d, runs = asyncio.run(run(args.url, args.prefix, Path(args.cranfield)))
    half = halves(d)
    rows = []
    for name, r in runs.items():
        score = {
            h: statistics.fmean(mq.ndcg_at(r[i], d.gains[i]) for i in range(len(r)) if half[i] == h)
            for h in ("tune", "report")
        }
        rows.append((name, score["tune"], score["report"]))
    base = rows[0][1]
    best = max(rows, key=lambda x: round(x[1], 9))  # the first (the default) wins a tie
    print(f"| setting ({args.model}) | tune nDCG@10 (odd ids) | report nDCG@10 (even ids) |\n|---|--:|--:|")
    for name, t, r in rows:
        print(f"| {name} | {t:.3f} | {r:.3f} |")
    print(
        f"\nchosen on the tuning half: {best[0]} ({best[1]:.3f}, {best[1] - base:+.3f} against the default); "
        f"its reporting half {best[2]:.3f} (default {rows[0][2]:.3f})"
    )


if __name__ == "__main__":
    main()
