"""Held-out retrieval quality: every default chosen on one half of the questions, reported on the other.

    python bench/heldout.py --url http://127.0.0.1:9401 [--out bench/results/heldout.txt] [--png bench/heldout.png]

Sets (MiniLM vectors, top 10, filled through ReMe's file-store interface as bench/memory_quality.py does):
  memory    bench/memory_data.py's 12 conversations; the questions of conversations 1, 3, 5, ... (paths sorted) are
            the tuning half, the others the reporting half (split by conversation: no conversation is in both)
  memory2   bench/memory_data.py's sibling bench/memory_data2.py (another generator, vocabulary and line format;
            longer sessions, multi-hop and relative-date questions): reporting only, nothing is tuned on it
  cranfield queries with odd ids tune, even ids report
Each second-round option (bench/heldout_options.py) is tried over its grid on the tuning halves (memory recall@10 +
Cranfield nDCG@10, each as a change against the default), and the chosen setting is reported on the reporting
halves beside ReMe's stores (local, faiss: keyword, vector, ReMe's fusion) and the drop-in's default
(`es_search_step`). Per option: extra round trips and the p50 of the time it adds, measured query by query in the
same run as the default's p50 (a shared machine: ratios only).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import heldout_options as opt  # noqa: E402
import memory_data2  # noqa: E402
import memory_quality as mq  # noqa: E402
from common import Report, table  # noqa: E402

from reme_es.store.fusion import proximity_rescore  # noqa: E402

POOL = 50
POOLS: dict[str, list[list[str]]] = {}  # set -> per question: the pool's ids (saved with the runs, to look into)
MULTI_HOP = {"memory": "update", "memory2": "multi-hop"}  # evidence in two notes of different days
TODAY = {"memory": dt.date(2026, 11, 1), "memory2": memory_data2.TODAY, "cranfield": dt.date(2026, 12, 1)}


def second_set() -> mq.Dataset:
    """bench/memory_data2.py's set as a Dataset."""
    data = memory_data2.generate()
    files: dict = {}
    for cid, path, line, text in data.chunks:
        files.setdefault(path, []).append((cid, line, text))
    return mq.Dataset("memory2", files, [q["question"] for q in data.questions],
                      [{c: 1 for c in q["evidence"]} for q in data.questions], [q["kind"] for q in data.questions])


def halves(d: mq.Dataset) -> list[str]:
    """'tune' or 'report' per question, fixed: by conversation (memory), by query id (Cranfield)."""
    if d.name == "memory2":
        return ["report"] * len(d.queries)
    if d.name == "cranfield":
        return ["tune" if i % 2 == 0 else "report" for i in range(len(d.queries))]  # ids 1, 3, ... tune
    convs = sorted({next(iter(g)).split("#")[0].rsplit("/", 1)[1] for g in d.gains})
    tune = set(convs[0::2])
    return ["tune" if next(iter(g)).split("#")[0].rsplit("/", 1)[1] in tune else "report" for g in d.gains]


def part(d: mq.Dataset, runs: list[list[str]], which: str) -> dict:
    """R@10, nDCG@10 and multi-hop R@10 over one half's questions."""
    idx = [i for i, h in enumerate(halves(d)) if h == which]
    if not idx:
        return {}
    r10 = [mq.recall_at(runs[i], d.gains[i], 10) for i in idx]
    hop = [r10[j] for j, i in enumerate(idx) if d.kinds[i] == MULTI_HOP.get(d.name)]
    return {"R@10": statistics.fmean(r10), "nDCG@10": statistics.fmean(mq.ndcg_at(runs[i], d.gains[i]) for i in idx),
            "hop": statistics.fmean(hop) if hop else float("nan"),
            "kinds": {k: statistics.fmean(mq.recall_at(runs[i], d.gains[i], 10) for i in idx if d.kinds[i] == k)
                      for k in dict.fromkeys(d.kinds[i] for i in idx)}}


async def drop_in(d: mq.Dataset, url: str, work: Path, encoder: opt.Encoder) -> tuple[dict, dict]:
    """The drop-in's default and every option's runs on one set, and the timings/trips."""
    ws = work / f"os-{d.name}"
    ws.mkdir(parents=True)
    app = mq.make_app(mq.app_config(ws, "opensearch", url, f"bench-heldout-{d.name}"))
    await app.start()
    fs = app.context.components["file_store"]["default"]
    lines = {p: {line: t for _, line, t in cs} for p, cs in d.files.items()}
    runs: dict[str, list[list[str]]] = {}
    cost: dict[str, list[float]] = {}
    pools = []
    try:
        await fs.clear()
        await mq.index(fs, d, mq.PASSAGE_VECTORS)
        s = fs.store.searches
        for q in d.queries:
            t0 = time.perf_counter()
            resp = await app.run_job("search_es", query=q, limit=mq.LIMIT)
            cost.setdefault("default (es_search_step)", []).append(time.perf_counter() - t0)
            runs.setdefault("default", []).append([r["id"] for r in resp.metadata.get("results", [])])
            ranked = await s.ranked(q, mq.VECTORS[q], POOL, None, mq.LIMIT)
            pool = await s.with_chunks(ranked.hits[:POOL])
            pools.append(pool)
            POOLS.setdefault(d.name, []).append([h.chunk.id for h in pool])
            await options(d, q, pool, s, encoder, lines, runs, cost)
        cost["late encode, top 20"] = [opt.late_cost(encoder, d.queries, pools, 20) / 1000]
        cost["late encode, top 50"] = [opt.late_cost(encoder, d.queries, pools, 50) / 1000]
    finally:
        await fs.clear()
        await fs.store.drop()
        await app.close()
    return runs, {k: statistics.median(v) * 1000 for k, v in cost.items()}


async def options(d, q, pool, s, encoder, lines, runs, cost) -> None:
    """Every option's ranking of one question (ids, top 10) and the time each added."""
    for family, grid in opt.GRID.items():
        for p in grid:
            name = opt.label(family, p)
            t0 = time.perf_counter()
            if family == "proximity":
                ids = [h.chunk.id for h in proximity_rescore(pool, q, top=p[1], boost=p[0])]
            elif family == "late interaction":
                ids = [h.chunk.id for h in opt.late_rescore(pool, q, encoder, p[0], p[1])]
            elif family == "neighbours":
                ids = opt.with_neighbours(pool, p, lines)
            elif family == "entities":
                ids = [h.chunk.id for h in await opt.entity_round(s, q, pool, p)]
            else:
                ids = [h.chunk.id for h in await opt.dated(s, q, mq.VECTORS[q], pool, p, TODAY[d.name])]
            cost.setdefault(name, []).append(time.perf_counter() - t0)
            runs.setdefault(name, []).append(ids[: mq.LIMIT])


def choose(results: dict) -> dict[str, str]:
    """Per family, the setting with the best summed change on the tuning halves (memory R@10, Cranfield nDCG@10)."""
    base_m, base_c = results["memory"]["default"]["tune"]["R@10"], results["cranfield"]["default"]["tune"]["nDCG@10"]
    chosen = {}
    for family, grid in opt.GRID.items():
        def gain(p):
            name = opt.label(family, p)
            return (results["memory"][name]["tune"]["R@10"] - base_m) + (
                results["cranfield"][name]["tune"]["nDCG@10"] - base_c)
        chosen[family] = opt.label(family, max(grid, key=gain))
    return chosen


async def main() -> None:
    import argparse
    import json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--cranfield", default="/work/shared/data/cranfield")
    p.add_argument("--out", default=str(HERE / "results" / "heldout.txt"))
    p.add_argument("--png", default=str(HERE / "heldout.png"))
    p.add_argument("--sets", default="memory,memory2,cranfield", help="a subset: no tables, runs saved to --out .json")
    args = p.parse_args()
    report = Report()
    mq.use_model("minilm")
    wanted = args.sets.split(",")
    sets = [make() for name, make in (("memory", mq.memory_set), ("memory2", second_set),
                                      ("cranfield", lambda: mq.cranfield_set(Path(args.cranfield)))) if name in wanted]
    encoder = opt.Encoder()
    results: dict = {}
    costs: dict = {}
    every: dict = {}  # set -> mode -> per-question ranked ids
    work = Path(tempfile.mkdtemp(prefix="reme-es-heldout-"))
    try:
        for d in sets:
            texts = [t for cs in d.files.values() for _, _, t in cs]
            mq.embed_all(texts + d.queries)
            mq.embed_all(texts, side="passage")
            t0 = time.perf_counter()
            runs, costs[d.name] = await drop_in(d, args.url, work, encoder)
            for backend in ("local", "faiss"):
                reme_runs, _ = await mq.run_backend(backend, d, args.url, work, bm25=False)
                runs.update({f"ReMe {backend}: {m}": r for m, r in reme_runs.items() if "by the bench" not in m})
            results[d.name] = {name: {h: part(d, r, h) for h in ("tune", "report")} for name, r in runs.items()}
            every[d.name] = runs
            print(f"{d.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).with_suffix(".json").write_text(json.dumps({"results": results, "costs": costs, "runs": every,
                                                                 "pools": POOLS}))
    if len(results) == 3:
        finish(report, results, costs, args)


def finish(report: Report, results: dict, costs: dict, args) -> None:
    """The tables (tuning grid, held-out report) and the plot."""
    chosen = choose(results)
    names = list(results["memory"])
    report(table(["option (tuning halves)", "memory R@10", "cranfield nDCG@10"],
                 [[n, results["memory"][n]["tune"]["R@10"], results["cranfield"][n]["tune"]["nDCG@10"]]
                  for n in names], title="\n## tuning halves: every setting tried"))
    report("chosen on the tuning halves: " + "; ".join(f"{f}: {n}" for f, n in chosen.items()))
    rows = [n for n in names if n.startswith("ReMe")] + ["default"] + list(chosen.values())
    cols = []
    for n in rows:
        m, m2, c = (results[s][n]["report"] for s in ("memory", "memory2", "cranfield"))
        family = next((f for f, c_ in chosen.items() if c_ == n), None)
        extra = costs["memory"].get(n, float("nan")) if family else float("nan")
        cols.append([n, m["R@10"], m["hop"], m2["R@10"], m2["hop"], c["nDCG@10"],
                     opt.TRIPS.get(family, "") if family else "", extra])
    report(table(["mode (reporting halves)", "memory R@10", "memory update R@10", "memory2 R@10",
                  "memory2 multi-hop R@10", "cranfield nDCG@10", "+ round trips", "+ ms p50 (memory)"], cols,
                 title="\n## held out: reporting halves (memory2: all of it)"))
    kinds = list(results["memory2"]["default"]["report"]["kinds"])
    report(table(["mode (memory2, by kind)", *kinds],
                 [[n, *(results["memory2"][n]["report"]["kinds"][k] for k in kinds)] for n in rows],
                 title="\n## memory2 by kind of question"))
    report(table(["set", *costs["memory"]], [[s, *(c.get(k, float("nan")) for k in costs["memory"])]
                                             for s, c in costs.items()], title="\n## p50 ms per search, same run"))
    plot(results, rows, Path(args.png))
    report.save(args.out, "heldout", "opensearch")


def plot(results: dict, rows: list[str], path: Path) -> None:
    """Recall@10 (memory sets) and nDCG@10 (Cranfield) on the reporting halves, per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("memory", "R@10"), ("memory2", "R@10"), ("cranfield", "nDCG@10"))
    fig, axes = plt.subplots(1, 3, figsize=(15, 1.5 + 0.35 * len(rows)))
    for ax, (s, metric) in zip(axes, panels):
        vals = [results[s][n]["report"][metric] for n in rows]
        ax.barh(range(len(rows)), vals, color=["#4c72b0" if n.startswith("ReMe") else "#c44e52" for n in rows])
        ax.set_yticks(range(len(rows)), rows if s == "memory" else [""] * len(rows), fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{s}: {metric} (reporting half)")
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.3f}", va="center", fontsize=7)
        ax.set_xlim(0, max(vals) * 1.2)
    fig.suptitle("held out (bench/heldout.py): ReMe's stores (blue), the reme-es drop-in and its options (red)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    asyncio.run(main())
