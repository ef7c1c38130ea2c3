"""Held-out retrieval quality: every default chosen on one half of the questions, reported on the other.

    python -m bench.quality.heldout --url http://127.0.0.1:9401 [--prefix bench-heldout]
                                    [--out bench/results/heldout.txt] [--png docs/img/heldout.png]

Sets (MiniLM vectors, top 10, filled through ReMe's file-store interface as bench/quality/memory_quality.py does):
  memory    bench/data/memory.py's 12 conversations; the questions of conversations 1, 3, 5, ... (paths sorted) are
            the tuning half, the others the reporting half (split by conversation: no conversation is in both)
  memory2   bench/data/memory.py's sibling bench/data/memory2.py (another generator, vocabulary and line format;
            longer sessions, multi-hop and relative-date questions), split the same way: the groups whose note names
            sort 1st, 3rd, ... tune, the others report
  memory3   bench/data/memory3.py (a third generator: one user with an assistant, a section per turn, first-person
            paraphrased questions: fact, update, multi-hop, relative, period), reporting only: never split, never
            in the choice; every question is reported ("report" is all of it)
  cranfield queries with odd ids tune, even ids report
Each option (bench/quality/heldout_options.py) is tried over its grid on the tuning halves (memory and memory2 recall@10
+ Cranfield nDCG@10, each as a change against the previous default; a tie goes to the mildest setting, listed first),
and the chosen setting is reported on the reporting halves beside ReMe's stores (local, faiss: keyword, vector, ReMe's
fusion), the drop-in's default (`es_search_step`) and its previous default (no date boost, one vector weight). The
options start from the previous default's pool. Per option: extra round trips and the p50 of the time it adds, measured
query by query in the same run as the defaults' p50s (a shared machine: ratios only).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PLOTS, RESULTS, Report, table
from bench.data import memory2, memory3
from bench.quality import heldout_options as opt
from bench.quality import memory_quality as mq
from reme_es.store.fusion import names_relation, proximity_rescore

POOL = 50
PREFIX = ["bench-heldout"]  # --prefix
POOLS: dict[str, list[list[str]]] = {}  # set -> per question: the pool's ids (saved with the runs, to look into)
MULTI_HOP = {"memory": "update", "memory2": "multi-hop", "memory3": "multi-hop"}  # evidence in two notes, two days
TODAY = {
    "memory": dt.date(2026, 11, 1),
    "memory2": memory2.TODAY,
    "memory3": memory3.TODAY,
    "cranfield": dt.date(2026, 12, 1),
}
SETS = ("memory", "memory2", "memory3", "cranfield")
REPORT_ONLY = {"memory3"}  # never split, never in the choice
PREVIOUS = {"date_boost": 0.0, "relation_vector_weight": None}  # the search defaults before this round


def generated_set(name: str, module) -> mq.Dataset:
    """A generated set (bench/data/memory2.py, bench/data/memory3.py) as a Dataset."""
    data = module.generate()
    files: dict = {}
    for cid, path, line, text in data.chunks:
        files.setdefault(path, []).append((cid, line, text))
    return mq.Dataset(
        name,
        files,
        [q["question"] for q in data.questions],
        [{c: 1 for c in q["evidence"]} for q in data.questions],
        [q["kind"] for q in data.questions],
    )


def halves(d: mq.Dataset) -> list[str]:
    """'tune' or 'report' per question, fixed: by conversation (memory, memory2), by query id (Cranfield)."""
    if d.name in REPORT_ONLY:
        return ["report"] * len(d.queries)
    if d.name == "cranfield":
        return ["tune" if i % 2 == 0 else "report" for i in range(len(d.queries))]  # ids 1, 3, ... tune
    convs = sorted({next(iter(g)).split("#")[0].rsplit("/", 1)[1] for g in d.gains})
    tune = set(convs[0::2])
    return ["tune" if next(iter(g)).split("#")[0].rsplit("/", 1)[1] in tune else "report" for g in d.gains]


def part(d: mq.Dataset, runs: list[list[str]], which: str) -> dict:
    """R@10, nDCG@10 and multi-hop R@10 over one half's questions ("all": every question)."""
    idx = [i for i, h in enumerate(halves(d)) if which in (h, "all")]
    if not idx:
        return {}
    r10 = [mq.recall_at(runs[i], d.gains[i], 10) for i in idx]
    hop = [r10[j] for j, i in enumerate(idx) if d.kinds[i] == MULTI_HOP.get(d.name)]
    return {
        "R@10": statistics.fmean(r10),
        "nDCG@10": statistics.fmean(mq.ndcg_at(runs[i], d.gains[i]) for i in idx),
        "hop": statistics.fmean(hop) if hop else float("nan"),
        "kinds": {
            k: statistics.fmean(mq.recall_at(runs[i], d.gains[i], 10) for i in idx if d.kinds[i] == k)
            for k in dict.fromkeys(d.kinds[i] for i in idx)
        },
    }


async def drop_in(d: mq.Dataset, url: str, work: Path, encoder: opt.Encoder) -> tuple[dict, dict]:
    """The drop-in's default and every option's runs on one set, and the timings/trips."""
    ws = work / f"os-{d.name}"
    ws.mkdir(parents=True)
    app = mq.make_app(mq.app_config(ws, "opensearch", url, f"{PREFIX[0]}-{d.name}"))
    await app.start()
    fs = app.context.components["file_store"]["default"]
    lines = {p: {line: t for _, line, t in cs} for p, cs in d.files.items()}
    runs: dict[str, list[list[str]]] = {}
    cost: dict[str, list[float]] = {}
    pools = []
    try:
        await fs.clear()
        await mq.index(fs, d, mq.PASSAGE_VECTORS)
        s, ix = fs.store.searches, fs.store.indices
        ix.today = TODAY[d.name]
        for i, q in enumerate(d.queries):
            both = [("default", {}), ("previous default", PREVIOUS)]
            for row, settings in both if i % 2 == 0 else both[::-1]:  # each first on half the questions (warm caches)
                with searching(ix, **settings):
                    t0 = time.perf_counter()
                    resp = await app.run_job("search_es", query=q, limit=mq.LIMIT)
                    cost.setdefault(f"{row} (es_search_step)", []).append(time.perf_counter() - t0)
                runs.setdefault(row, []).append([r["id"] for r in resp.metadata.get("results", [])])
            with searching(ix, **PREVIOUS):
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


@contextlib.contextmanager
def searching(ix, **settings):
    """The store's search settings (the index set's attributes) changed for a `with` block, then put back."""
    saved = {k: getattr(ix, k) for k in settings}
    for k, v in settings.items():
        setattr(ix, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(ix, k, v)


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
            elif family == "relation weight":
                ids = [h.chunk.id for h in pool]
                if names_relation(q):  # any other question is fused as before: its pool
                    with searching(s.indices, **{**PREVIOUS, "relation_vector_weight": p}):
                        ids = [h.chunk.id for h in (await s.ranked(q, mq.VECTORS[q], POOL, None, mq.LIMIT)).hits]
            else:
                every = family == "dates, every question"
                ids = [h.chunk.id for h in await opt.dated(s, q, mq.VECTORS[q], pool, p, TODAY[d.name], every)]
            cost.setdefault(name, []).append(time.perf_counter() - t0)
            runs.setdefault(name, []).append(ids[: mq.LIMIT])


TUNED_ON = (("memory", "R@10"), ("memory2", "R@10"), ("cranfield", "nDCG@10"))


def choose(results: dict) -> dict[str, str]:
    """Per family, the setting with the best summed change on the tuning halves (memory and memory2 R@10, Cranfield
    nDCG@10) against the previous default; the first of the grid (the mildest) wins a tie."""

    def gain(name: str) -> float:
        return round(
            sum(results[s][name]["tune"][m] - results[s]["previous default"]["tune"][m] for s, m in TUNED_ON), 9
        )

    return {family: max((opt.label(family, p) for p in grid), key=gain) for family, grid in opt.GRID.items()}


async def main() -> None:
    import argparse
    import json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--prefix", default="bench-heldout", help="index sets <prefix>-<set>, dropped after")
    p.add_argument("--cranfield", default="/work/shared/data/cranfield")
    p.add_argument("--out", default=str(RESULTS / "heldout.txt"))
    p.add_argument("--png", default=str(PLOTS / "heldout.png"))
    p.add_argument("--sets", default=",".join(SETS), help="a subset: no tables, runs saved to --out .json")
    p.add_argument("--tables-from", help="a saved run's .json: its tables and plot, without searching")
    args = p.parse_args()
    PREFIX[0] = args.prefix
    report = Report()
    if args.tables_from:
        saved = json.loads(Path(args.tables_from).read_text())
        return finish(report, saved["results"], saved["costs"], args)
    mq.use_model("minilm")
    wanted = args.sets.split(",")
    makers = (
        ("memory", mq.memory_set),
        ("memory2", lambda: generated_set("memory2", memory2)),
        ("memory3", lambda: generated_set("memory3", memory3)),
        ("cranfield", lambda: mq.cranfield_set(Path(args.cranfield))),
    )
    sets = [make() for name, make in makers if name in wanted]
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
            results[d.name] = {name: {h: part(d, r, h) for h in ("tune", "report", "all")} for name, r in runs.items()}
            every[d.name] = runs
            print(f"{d.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).with_suffix(".json").write_text(
        json.dumps({"results": results, "costs": costs, "runs": every, "pools": POOLS})
    )
    if set(results) == set(SETS):
        finish(report, results, costs, args)


def finish(report: Report, results: dict, costs: dict, args) -> None:
    """The tables (tuning grid, held-out report, targets) and the plot."""
    chosen = choose(results)
    names = list(results["memory"])
    tune = [(s, m) for s, m in TUNED_ON]
    report(
        table(
            ["option (tuning halves)", "memory R@10", "memory2 R@10", "memory2 multi-hop R@10", "cranfield nDCG@10"],
            [
                [
                    n,
                    *(results[s][n]["tune"][m] for s, m in tune[:2]),
                    results["memory2"][n]["tune"]["hop"],
                    results["cranfield"][n]["tune"]["nDCG@10"],
                ]
                for n in names
            ],
            title="\n## tuning halves: every setting tried",
        )
    )
    report("chosen on the tuning halves: " + "; ".join(f"{f}: {n}" for f, n in chosen.items()))
    rows = [n for n in names if n.startswith("ReMe")] + ["default", "previous default"] + list(chosen.values())
    third = "memory3" in results  # a run saved before the third set has none
    cols = []
    for n in rows:
        m, m2, c = (results[s][n]["report"] for s in ("memory", "memory2", "cranfield"))
        m3 = [results["memory3"][n]["report"][k] for k in ("R@10", "hop")] if third else []
        family = next((f for f, c_ in chosen.items() if c_ == n), None)
        ms = costs["memory2"].get(f"{n} (es_search_step)" if "default" in n else n, float("nan"))
        cols.append(
            [
                n,
                m["R@10"],
                m["hop"],
                m2["R@10"],
                m2["hop"],
                m2["kinds"].get("month", float("nan")),
                results["memory2"][n]["all"]["R@10"],
                *m3,
                c["nDCG@10"],
                opt.TRIPS.get(family, "") if family else "",
                ms,
            ]
        )
    report(
        table(
            [
                "mode (reporting halves)",
                "memory R@10",
                "memory update R@10",
                "memory2 R@10",
                "memory2 multi-hop R@10",
                "memory2 month R@10",
                "memory2 all R@10",
                *(["memory3 R@10 (all)", "memory3 multi-hop R@10"] if third else []),
                "cranfield nDCG@10",
                "+ round trips",
                "ms p50 (memory2; options: added)",
            ],
            cols,
            title="\n## held out: reporting halves",
        )
    )
    for s in ("memory2", "memory3") if third else ("memory2",):
        kinds = list(results[s]["default"]["report"]["kinds"])
        report(
            table(
                [f"mode ({s} reporting {'half' if s not in REPORT_ONLY else 'set: all of it'}, by kind)", *kinds],
                [[n, *(results[s][n]["report"]["kinds"][k] for k in kinds)] for n in rows],
                title=f"\n## {s} by kind of question",
            )
        )
    report(
        table(
            ["set", *costs["memory"]],
            [[s, *(c.get(k, float("nan")) for k in costs["memory"])] for s, c in costs.items()],
            title="\n## p50 ms per search, same run",
        )
    )
    report(targets(results, costs))
    plot(results, rows, Path(args.png))
    report.save(args.out, "heldout", "opensearch")


def targets(results: dict, costs: dict) -> str:
    """The issue's targets against the default, on the reporting halves."""

    def best(s: str, key: str = "R@10") -> tuple[str, float]:
        return max(((n, r["report"][key]) for n, r in results[s].items() if n.startswith("ReMe")), key=lambda x: x[1])

    lines = ["\n## targets (reporting halves, the default)"]
    memories = [s for s in ("memory", "memory2", "memory3") if s in results]
    for s in memories:
        name, value = best(s)
        ours, before = (results[s][n]["report"]["R@10"] for n in ("default", "previous default"))
        lines.append(
            f"{s}: {ours:.3f} against ReMe's best {value:.3f} ({name}): {ours / value:.2f}x (target 1.25x); "
            f"previous default {before:.3f}"
        )
    for s in memories[1:]:
        name, value = best(s, "hop")
        ours, before = (results[s][n]["report"]["hop"] for n in ("default", "previous default"))
        lines.append(
            f"{s} multi-hop: {ours:.3f} against ReMe's best {value:.3f} ({name}): {ours / value:.2f}x "
            f"(target 1.2x); previous default {before:.3f}"
        )
    lines.append(f"cranfield nDCG@10: {results['cranfield']['default']['report']['nDCG@10']:.3f} (target 0.45)")
    for s, c in costs.items():
        ratio = c["default (es_search_step)"] / c["previous default (es_search_step)"]
        lines.append(
            f"{s}: es_search_step p50 {c['default (es_search_step)']:.1f} ms, previous default "
            f"{c['previous default (es_search_step)']:.1f} ms ({ratio:.2f}x; limit 2x)"
        )
    return "\n".join(lines)


def plot(results: dict, rows: list[str], path: Path) -> None:
    """Recall@10 (memory sets) and nDCG@10 (Cranfield) on the reporting halves, per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        (s, m)
        for s, m in (("memory", "R@10"), ("memory2", "R@10"), ("memory3", "R@10"), ("cranfield", "nDCG@10"))
        if s in results
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 1.5 + 0.35 * len(rows)))
    for ax, (s, metric) in zip(axes, panels):
        vals = [results[s][n]["report"][metric] for n in rows]
        ax.barh(range(len(rows)), vals, color=["#4c72b0" if n.startswith("ReMe") else "#c44e52" for n in rows])
        ax.set_yticks(range(len(rows)), rows if s == "memory" else [""] * len(rows), fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{s}: {metric} ({'reporting only, all' if s in REPORT_ONLY else 'reporting half'})")
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.3f}", va="center", fontsize=7)
        ax.set_xlim(0, max(vals) * 1.2)
    fig.suptitle("held out (bench/quality/heldout.py): ReMe's stores (blue), the reme-es drop-in and its options (red)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    asyncio.run(main())
