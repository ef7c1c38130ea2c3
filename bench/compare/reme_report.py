"""The benchmarks page's tables from a `bench/compare/reme_backends.py` results file: p50 per size and workload,
and issue 20's targets.

    python -m bench.compare.reme_report [bench/results/reme_backends.json ...] [--backend opensearch-3] [--png PATH]

Prints one compact table per workload and size (p50 ms of every mode, ingest to steady state, restart, recall@10,
client RSS), then each target of issue 20 checked against ReMe's `faiss` store of the same run, and redraws the
plot. It measures nothing: every figure is one `reme_backends.py` measured.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.common import PLOTS, RESULTS, table
from bench.compare.reme_app import LABELS
from bench.compare.reme_backends import fmt, plot
from bench.data.workloads import DIMS

ES_JOB, ES_JOB_NOFB = "search job, es_search_step", "search job, es_search_step, feedback 0"
COLUMNS = [
    "backend",
    "ingest to steady state s (chunks/s)",
    "restart s",
    "keyword",
    "vector",
    "hybrid",
    "keyword, 1-month",
    "vector, 1-month",
    "search job: ReMe's step / es_search_step / feedback 0",
    "recall@10",
    "client RSS MiB: peak (anon)",
]


def ingest_s(r: dict) -> float:
    """Upsert calls + dump() + the merging after them: the time until the store is steady."""
    return r["upsert_s"] + r.get("dump_s", 0.0) + r.get("merge_s", 0.0)


def p50(r: dict, mode: str) -> float | None:
    stats = r["latency"].get(mode)
    return stats["p50"] if stats else None


def row(r: dict) -> list:
    job = " / ".join(fmt(p50(r, m)) for m in ("search job", ES_JOB, ES_JOB_NOFB) if p50(r, m) is not None)
    return [
        LABELS[r["backend"]],
        f"{fmt(ingest_s(r))} ({r['size'] / ingest_s(r):,.0f})",
        fmt(r["restart_s"]),
        *(fmt(p50(r, m)) for m in ("keyword", "vector", "hybrid", "keyword filtered", "vector filtered")),
        job,
        f"{r['recall_at_10']:.3f}",
        f"{r['client_rss_mib']:,.0f} ({fmt(own_rss(r)[0], 0)}{own_rss(r)[1]})",
    ]


def own_rss(r: dict) -> tuple[float, str]:
    """The client's own memory, MiB: its peak anonymous RSS where the run sampled it, else (marked `*`) peak RSS less
    the bench's memory-mapped copy of the vectors (size x 384 float32), which peak RSS includes."""
    if "client_anon_mib" in r:
        return r["client_anon_mib"], ""
    return r["client_rss_mib"] - r["size"] * DIMS * 4 / (1 << 20), "*"


def size_tables(results: list[dict]) -> str:
    """One table per workload and size, backends in the bench's order."""
    order = list(LABELS)
    out = []
    for workload in sorted({r["workload"] for r in results}):
        for size in sorted({r["size"] for r in results if r["workload"] == workload}):
            mine = sorted(
                (r for r in results if r["workload"] == workload and r["size"] == size),
                key=lambda r: order.index(r["backend"]),
            )
            out.append(table(COLUMNS, [row(r) for r in mine], title=f"{size:,} chunks, workload {workload}, p50 ms"))
    return "\n".join(out)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# (target, figure of a reme-es result `e` against the same run's faiss `f`, unit, bound, figure must be at most it)
TARGETS = [
    ("keyword p50 <= 4 ms", lambda e, f: p50(e, "keyword"), "ms", 4.0, True),
    ("vector p50 <= 3x faiss", lambda e, f: ratio(p50(e, "vector"), p50(f, "vector")), "x faiss's time", 3.0, True),
    (
        "date-filtered vector >= 1x faiss",
        lambda e, f: ratio(p50(f, "vector filtered"), p50(e, "vector filtered")),
        "x as fast",
        1.0,
        False,
    ),
    (
        "date-filtered keyword >= 10x faiss",
        lambda e, f: ratio(p50(f, "keyword filtered"), p50(e, "keyword filtered")),
        "x as fast",
        10.0,
        False,
    ),
    ("ingest to steady state >= 1x faiss", lambda e, f: ratio(ingest_s(f), ingest_s(e)), "x as fast", 1.0, False),
    (
        "search job (es_search_step) <= 2.5x faiss",
        lambda e, f: ratio(p50(e, ES_JOB), p50(f, "search job")),
        "x faiss's time",
        2.5,
        True,
    ),
    ("restart <= 0.1 s", lambda e, f: e["restart_s"], "s", 0.1, True),
]


def checks(es: dict, faiss: dict) -> list[tuple[str, float | None, str, bool | None]]:
    """(target, figure, unit, met) for one reme-es result against the same run's faiss."""
    out = []
    for name, value, unit, bound, at_most in TARGETS:
        v = value(es, faiss)
        out.append((name, v, unit, None if v is None else v <= bound if at_most else v >= bound))
    return out


def target_table(results: list[dict], backend: str) -> str:
    """Issue 20's targets at every size and workload where `backend` and faiss both ran."""
    rows = []
    for es in sorted((r for r in results if r["backend"] == backend), key=lambda r: (r["workload"], r["size"])):
        faiss = next(
            (
                r
                for r in results
                if r["backend"] == "faiss" and r["size"] == es["size"] and r["workload"] == es["workload"]
            ),
            None,
        )
        if faiss is None:
            continue
        for name, value, unit, met in checks(es, faiss):
            verdict = "-" if met is None else "met" if met else "missed"
            rows.append([f"{es['size']:,} {es['workload']}", name, f"{fmt(value)} {unit}" if value else "-", verdict])
    return table(
        ["size, workload", "target", f"{LABELS[backend]}", "verdict"],
        rows,
        title=f"Issue 20's targets, {LABELS[backend]} against ReMe faiss in the same run",
    )


# (target at the largest size, figure of a reme-es result there `e` and at 100k `h`, unit, bound, at most)
SCALE_TARGETS = [
    ("client RSS <= 400 MiB", lambda e, h: own_rss(e)[0], "MiB own", 400.0, True),
    ("restart <= 0.2 s", lambda e, h: e["restart_s"], "s", 0.2, True),
    *(
        (f"{m} p50 <= 1.5x its 100k figure", lambda e, h, m=m: ratio(p50(e, m), p50(h, m)), "x the 100k p50", 1.5, True)
        for m in ("keyword", "vector", "hybrid", "keyword filtered", "vector filtered", "search job", ES_JOB)
    ),
]


def scale_table(results: list[dict], backend: str, size: int = 1_000_000) -> str:
    """Issue 20's 1M targets for `backend` (and faiss's figures beside them), per workload run at both sizes."""
    rows = []
    for workload in sorted({r["workload"] for r in results}):

        def at(b: str, n: int, workload: str = workload) -> dict | None:
            return next(
                (r for r in results if r["backend"] == b and r["size"] == n and r["workload"] == workload), None
            )

        es, es100 = at(backend, size), at(backend, 100_000)
        if es is None or es100 is None:
            continue
        faiss, faiss100 = at("faiss", size), at("faiss", 100_000)
        for name, value, unit, bound, at_most in SCALE_TARGETS:
            v = value(es, es100)
            theirs = value(faiss, faiss100) if faiss and faiss100 else None
            met = "-" if v is None else "met" if (v <= bound if at_most else v >= bound) else "missed"
            rows.append(
                [
                    f"{size:,} {workload}",
                    name,
                    f"{fmt(v)} {unit}" if v is not None else "-",
                    met,
                    fmt(theirs) if theirs is not None else "-",
                ]
            )
    return table(
        ["size, workload", "target", LABELS[backend], "verdict", "ReMe faiss"],
        rows,
        title=f"Issue 20's targets at {size:,} chunks, {LABELS[backend]} (faiss's figure beside it)",
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "results",
        nargs="*",
        default=[str(RESULTS / "reme_backends.json")],
        help="results files of bench/compare/reme_backends.py (several: merged, a later file's row wins)",
    )
    p.add_argument("--backend", default="opensearch-3", help="the reme-es flavour the targets are checked for")
    p.add_argument("--png", default=str(PLOTS / "reme_backends.png"), help="where the plot goes")
    args = p.parse_args()
    merged: dict[tuple, dict] = {}
    for path in args.results:
        for r in json.loads(Path(path).read_text()):
            merged[(r["backend"], r["size"], r.get("workload", "topics"))] = r
    results = list(merged.values())
    print(size_tables(results))
    print(target_table(results, args.backend))
    print(scale_table(results, args.backend))
    plot(results, Path(args.png))


if __name__ == "__main__":
    main()
