"""ReMe's own file stores (`local`, `faiss`, `zvec`) against reme-es, all through ReMe's file-store interface.

    python -m bench.compare.reme_backends --sizes 10k,100k [--workload topics,hash]
                                          [--backends local,faiss,zvec,opensearch-2.19,opensearch-3,...] [--queries 40]
                                          [--url opensearch-2.19=http://127.0.0.1:9200 ...] [--png PATH]

Every backend runs in its own process (so client RSS is its own), one size after the other, back to back. The
reme-es backends get their own managed node each (`reme-es server start --name perf-bench-<flavour>`), started
here and stopped at the end, unless `--url flavour=URL` names a node to use instead. Sizes go up to 1M (`1m`):
vectors are kept in a memory-mapped file and the exact top 10 is computed in blocks.

The workspace is synthetic and the same for every backend, in two shapes (bench/data/workloads.py): `topics` (chunks
mix common words with their file's topic words, vectors cluster by topic, queries of 2-4 topic words, 100 files per
`upsert`) and `hash` (the shape issue 20 measured: no topics, feature-hashing vectors that do not cluster, 4-word
queries, 500 files per `upsert`). Files have 10 chunks of 100 words, every file dated (`daily/2026-MM-DD/...`,
spread over 12 months); vectors are 384-d from a deterministic fake embedding model registered with ReMe as an
`as_embedding` backend, so chunk and query vectors share one space. Chunks are handed to `upsert` already embedded
(the same vectors for every backend; ReMe keeps them as float16).

Measured per backend and size:
  upsert + dump s     all `file_store.upsert` calls, then one `dump()` as ReMe's index step does after its batches
                      (the in-process stores persist then; reme-es makes the writes searchable)
  merging after s     reme-es: how long the node went on merging segments after that, the file store's width
                      calibration, and its optimize job's merge and calibration (`reme_es.reme.optimize`: after
                      `optimize_job.idle_s` idle, not counted; the result's `optimize` has its share); the queries
                      wait for them, so they are measured on the index as it stays. Ingest to steady state = upsert +
                      dump + merging. `--files-per-call` and `--refresh-after` vary the load (bulk size, refresh)
  re-upsert s         the first 100 files upserted again unchanged, chunks without vectors (a touched file, as
                      ReMe's chunker hands it over): each store should keep what it has
  restart s           a new Application: `start()` until the first keyword answer (ReMe's stores load their files)
  keyword / vector    `keyword_search` / `vector_search` (query embedded by the fake model), limit 50 = what ReMe's
                      search step asks each branch for at its default limit 10 (min(200, limit x 5))
  hybrid              both branches at once (asyncio.gather), as ReMe's search step runs them
  ... 1-month filter  the same with `start_date`/`end_date` one month apart (~8% of the chunks)
  search job          `app.run_job("search", query=..., limit=10)`: ReMe's search step end to end (fusion, links);
                      for reme-es also the same job answered by its `es_search_step` (its defaults: z-score fusion
                      with pseudo-relevance feedback), and that step again with `feedback: 0` (two round trips)
  recall@10           vector_search's top 10 against the exact top 10 (numpy, cosine, over the same vectors)
  client RSS          peak RSS of the process (it includes the bench's memory-mapped copy of every vector, 1.5 KiB a
                      chunk), and its peak anonymous RSS (`RssAnon`, sampled every 0.1 s: the store's own memory
                      without that copy); node heap: JVM heap used after the queries (reme-es only)
  raw                 for reme-es: the same keyword / k-NN queries sent straight to the node with the same client
                      (the ceiling: what the node answers when nothing sits between the caller and it), interleaved
                      query by query with reme-es' own (alternating which goes first)
p50 and p95 over --queries queries after 20 warm-up queries. The table of every size is printed, written to
bench/results/reme_backends.json, and plotted per workload (p50 of every mode, client RSS and ingest against N per
backend, log-log) to --png with the workload in the name (needs matplotlib: pip install 'reme-es[bench]').
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PLOTS, RESULTS, module_command
from bench.compare.reme_app import (  # noqa: F401 - re-exported for bench/perf/concurrency.py and bench/perf/settle.py
    BACKENDS,
    FLAVOURS,
    JOB_LIMIT,
    LABELS,
    LIMIT,
    MODES,
    MONTH,
    PORTS,
    PREFIX,
    REME_STORES,
    REUPSERT_FILES,
    WARMUP,
    app_config,
    exact_top,
    file_store,
    make_app,
    node_heap_mib,
    raw_ops,
    reupsert_unchanged,
    rss_mib,
    run_worker,
    set_corpus,
    settle,
    summarise,
    timed,
    timed_pair,
    upsert_all,
)
from bench.data.workloads import DIMS, PER_FILE, SHAPES, Corpus  # noqa: F401

WORKER, WORKER_ENV = module_command("bench.compare.reme_backends")  # a backend's worker process

# ------------------------------------------------------------------------------------ driver


def parse_size(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * mult)


def reme_es_cli() -> list[str]:
    exe = Path(sys.executable).with_name("reme-es")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "reme_es.cli"]


def start_node(flavour: str, heap: str) -> str:
    """Start this bench's own managed node of one flavour; its URL."""
    name = f"{PREFIX}-{flavour.replace('.', '')}"
    cmd = [
        *reme_es_cli(),
        "server",
        "start",
        "--flavour",
        flavour,
        "--name",
        name,
        "--port",
        str(PORTS[flavour]),
        "--heap",
        heap,
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"could not start a {flavour} node: {out.stderr.strip() or out.stdout.strip()}")
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])["url"]
    except (ValueError, KeyError, IndexError):
        return f"http://127.0.0.1:{PORTS[flavour]}"


def stop_node(flavour: str) -> None:
    name = f"{PREFIX}-{flavour.replace('.', '')}"
    subprocess.run([*reme_es_cli(), "server", "stop", "--name", name], capture_output=True, check=False)


def run_one(backend: str, size: int, workload: str, url: str | None, args, work: Path) -> dict | None:
    out = work / f"{backend}-{size}-{workload}.json"
    cmd = [
        *WORKER,
        "--worker",
        backend,
        "--size",
        str(size),
        "--queries",
        str(args.queries),
        "--workdir",
        str(work / backend),
        "--result",
        str(out),
        "--prefix",
        args.prefix,
        "--workload",
        workload,
    ]
    if args.refresh_after is not None:
        cmd += ["--refresh-after", str(args.refresh_after)]
    if args.files_per_call is not None:
        cmd += ["--files-per-call", str(args.files_per_call)]
    if url:
        cmd += ["--url", url]
    print(f"# {LABELS[backend]}, {size:,} chunks, workload {workload} ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    proc = subprocess.run(cmd, check=False, timeout=args.timeout, env=WORKER_ENV)
    if proc.returncode != 0 or not out.exists():
        print(f"# {LABELS[backend]} at {size:,} failed (exit {proc.returncode})", file=sys.stderr)
        return None
    res = json.loads(out.read_text())
    print(f"# ... done in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return res


def fmt(v: float | None, digits: int | None = None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if digits is None:
        digits = 2 if v < 10 else 1 if v < 100 else 0
    return f"{v:,.{digits}f}"


def _p50s(stats: dict | None) -> str:
    return f"{fmt(stats['p50'])} / {fmt(stats['p95'])}" if stats else "-"


def tables(results: list[dict]) -> str:
    from bench.common import table

    lines = []
    for workload, size in sorted({(r.get("workload", "topics"), r["size"]) for r in results}):
        rows = []
        group = [x for x in results if x["size"] == size and x.get("workload", "topics") == workload]
        for r in group:
            lat = r["latency"]
            ingest = r["upsert_s"] + r.get("dump_s", 0.0)
            steady = ingest + r.get("merge_s", 0.0)
            rows.append(
                [
                    LABELS[r["backend"]],
                    fmt(ingest),
                    fmt(r.get("merge_s")),
                    fmt(steady),
                    fmt(size / steady, 0),
                    fmt(r.get("reupsert_s")),
                    fmt(r["restart_s"], 2),
                    *(f"{fmt(lat[m]['p50'])} / {fmt(lat[m]['p95'])}" for m in MODES),
                    fmt(r["recall_at_10"], 3),
                    fmt(r["client_rss_mib"], 0),
                    fmt(r.get("client_anon_mib"), 0),
                    fmt(r.get("node_heap_mib"), 0),
                ]
            )
        lines.append(
            table(
                [
                    "backend",
                    "upsert + dump s",
                    "merging after s",
                    "ingest to steady state s",
                    "chunks/s",
                    f"re-upsert {REUPSERT_FILES * PER_FILE:,} unchanged s",
                    "restart s",
                    *(f"{m} p50/p95 ms" for m in MODES),
                    "recall@10",
                    "client peak RSS MiB",
                    "client anon RSS MiB",
                    "node heap MiB",
                ],
                rows,
                title=f"{size:,} chunks, workload {workload}, limit {LIMIT} (search job: limit {JOB_LIMIT})",
            )
        )
        raws = [r for r in group if "raw" in r]
        if raws:
            rows = [
                [
                    LABELS[r["backend"]],
                    *(
                        f"{fmt(r['raw'][m]['p50'])} / {fmt(r['latency'][m]['p50'])}"
                        for m in ("keyword", "vector", "keyword filtered", "vector filtered")
                    ),
                ]
                for r in raws
            ]
            lines.append(
                table(
                    [
                        "node",
                        *(
                            f"{m} raw / reme-es p50 ms"
                            for m in ("keyword", "vector", "keyword filtered", "vector filtered")
                        ),
                    ],
                    rows,
                    title=f"{size:,} chunks, workload {workload}: the same queries sent raw to the node (the ceiling)",
                )
            )
            rows = [
                [
                    LABELS[r["backend"]],
                    *(
                        f"{fmt(r['latency'][m]['p50'])} / {fmt(r['latency'][m]['p95'])}"
                        for m in ("search job", "search job, es_search_step")
                        if m in r["latency"]
                    ),
                    _p50s(r["latency"].get("search job, es_search_step, feedback 0")),
                    "yes" if r.get("native_hybrid") else "no",
                ]
                for r in raws
                if "search job, es_search_step" in r["latency"]
            ]
            if rows:
                lines.append(
                    table(
                        [
                            "node",
                            "search job, ReMe's search_step p50/p95 ms",
                            "search job, es_search_step p50/p95 ms",
                            "es_search_step, feedback 0 p50/p95 ms",
                            "native hybrid",
                        ],
                        rows,
                        title=f"{size:,} chunks, workload {workload}: ReMe's search job (limit {JOB_LIMIT}) with "
                        "reme-es' own step",
                    )
                )
    return "\n".join(lines)


def _series(results: list[dict], backend: str, value) -> list[tuple[int, float]]:
    return sorted((r["size"], value(r)) for r in results if r["backend"] == backend)


PANELS = [(m, f"{m} p50 ms", lambda r, m=m: r["latency"][m]["p50"]) for m in MODES] + [
    (
        "client RSS (own: anonymous)",
        "client anon RSS MiB",
        lambda r: r.get("client_anon_mib", r["client_rss_mib"] - r["size"] * DIMS * 4 / (1 << 20)),
    ),
    ("ingest to steady state", "s", lambda r: r["upsert_s"] + r.get("dump_s", 0.0) + r.get("merge_s", 0.0)),
]


def plot(results: list[dict], path: Path) -> None:
    """One figure per workload: p50 of every mode, client RSS and ingest against N (log-log)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is missing (pip install 'reme-es[bench]')", file=sys.stderr)
        return
    for workload in sorted({r.get("workload", "topics") for r in results}):
        mine = [r for r in results if r.get("workload", "topics") == workload]
        fig, axes = plt.subplots(2, 4, figsize=(17, 7.5), sharex=True)
        for ax, (title, ylabel, value) in zip(axes.flat, PANELS):
            for backend in BACKENDS:
                if pts := _series(mine, backend, value):
                    ax.plot(*zip(*pts), "--" if backend in REME_STORES else "-", marker="o", label=LABELS[backend])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(title)
            ax.set_xlabel("chunks")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        axes.flat[0].legend(fontsize=8)
        fig.suptitle(f"ReMe file stores vs reme-es through ReMe's file-store interface, workload {workload} (log-log)")
        fig.tight_layout()
        out = path.with_name(f"{path.stem}-{workload}{path.suffix}")
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
        plt.close(fig)
        print(f"plot written to {out}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="10k,100k", help="chunk counts, e.g. 10k,100k,300k,1m")
    p.add_argument("--backends", default=",".join(BACKENDS), help=f"any of {', '.join(BACKENDS)}")
    p.add_argument(
        "--workload",
        default="topics,hash",
        help=f"workload shapes, any of {', '.join(SHAPES)} (see bench/data/workloads.py)",
    )
    p.add_argument("--queries", type=int, default=40, help="measured queries per mode (after 20 warm-up ones)")
    p.add_argument("--url", action="append", default=[], help="flavour=URL: use this node instead of starting one")
    p.add_argument("--heap", default="2g", help="heap of the nodes this bench starts (default 2g)")
    p.add_argument("--png", default=str(PLOTS / "reme_backends.png"), help="where the plot goes")
    p.add_argument("--json", default=str(RESULTS / "reme_backends.json"), help="where the results go")
    p.add_argument("--timeout", type=float, default=7200, help="seconds one backend at one size may take")
    p.add_argument("--keep", action="store_true", help="keep the indices (worker)")
    p.add_argument(
        "--refresh-after",
        type=float,
        default=None,
        help="reme-es: the file store's refresh_after (default: its own, 1 s; 0 = refresh after every call)",
    )
    p.add_argument(
        "--files-per-call",
        type=int,
        default=None,
        help="files per upsert call, every backend alike (default: the workload's, topics 100, hash 500; 10 chunks a "
        "file): the bulk size a ReMe index step hands the store",
    )
    p.add_argument("--prefix", default=PREFIX, help=f"index prefix of the reme-es backends (default {PREFIX})")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.worker:
        url = args.url[0] if args.url else None
        args.url = url
        res = asyncio.run(run_worker(args))
        Path(args.result).write_text(json.dumps(res))
        return

    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    if bad := [w for w in workloads if w not in SHAPES]:
        p.error(f"unknown workload(s) {', '.join(bad)}; choose from {', '.join(SHAPES)}")
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        p.error(f"unknown backend(s) {', '.join(unknown)}; choose from {', '.join(BACKENDS)}")
    urls = dict(u.split("=", 1) for u in args.url)
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="reme-backends-") as tmp:
        for backend in backends:
            started = False
            url = urls.get(backend)
            if backend in FLAVOURS and not url:
                url, started = start_node(backend, args.heap), True
            try:
                for workload in workloads:
                    for size in sizes:
                        if res := run_one(backend, size, workload, url, args, Path(tmp)):
                            results.append(res)
            finally:
                if started:
                    stop_node(backend)
    if not results:
        raise SystemExit("no backend produced a result")
    print(tables(results))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else []

    def key(r: dict) -> tuple:
        return r["backend"], r["size"], r.get("workload", "topics")

    keep = [r for r in previous if key(r) not in {key(x) for x in results}]
    out.write_text(json.dumps(keep + results, indent=1))
    plot(keep + results, Path(args.png))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
