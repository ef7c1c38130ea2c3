"""CPU per search, not throughput on a machine where node and clients share the cores: node CPU-ms (from
/proc/<node pid>/stat) + client CPU-ms per keyword, vector, hybrid search and search job through ReMe's interface on
reme-es, beside ReMe faiss's process CPU-ms per search; then throughput of 1, 4 and 16 concurrent clients on the
shared-set layout (one index set, several workspaces).

    python -m bench.perf.cpu_per_search --url http://127.0.0.1:9200 --quick    # 2k chunks, ~1-2 minutes
    python -m bench.perf.cpu_per_search --url http://127.0.0.1:9200            # 10k and 100k chunks
           [--sizes 10k,100k] [--workload hash] [--queries 200] [--workspaces 4] [--clients 1,4,16]
           [--seconds 10] [--backends faiss,reme-es] [--reuse] [--keep]

The node must run on this machine (its pid comes from `GET /_nodes/_local/process`) and should be one nobody else
queries: every CPU-ms it spends counts. Its idle CPU rate is measured first (for as long as one kind's queries take)
and subtracted; both are printed. Workspace 0 of the set `--prefix` holds the measured `--sizes` chunks (faiss the
same chunks in its own folder); `--workspaces` - 1 neighbours hold a quarter of that each, so the per-call figures
are those of one workspace in a shared set. Per call kind the queries run one after the other (after `--warmup`):
CPU-ms per search of the node and of this process (client), the node's GC time per search (pause time from its JVM
stats), wall p50, and the ratio of node + client to faiss's. Before that every call kind runs for `--warm` seconds:
a node just started spends its first minutes compiling (JIT), and that CPU would count per search.

Throughput: `--clients` asyncio clients in this process each run the search job (limit 10) back to back for
`--seconds`, client i on workspace i mod `--workspaces` (faiss: all on its one store); searches/s, p50 latency and
node + client CPU-ms per search. One Python process drives all clients: at 16 its own CPU is the limit, and the
table says how busy it was.
"""

from __future__ import annotations

import asyncio
import os
import time

from bench.common import Raw, Report, median, parser, table
from bench.compare.reme_world import (
    FLAVOURS,
    SIZES,
    Corpus,
    engine_label,
    file_store,
    load,
    open_app,
    ops,
    parse_size,
    set_corpus,
)

PREFIX = "bench-cpu"
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int | str = "self") -> float:
    """utime + stime of a process (ms), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_MS


async def node_pid(fs) -> int:
    """The pid of the node behind the store's client; a clear error when it does not run on this machine."""
    answer = await Raw(fs.store.dialect).request("GET", "/_nodes/_local/process")
    pid = int(next(iter(answer["nodes"].values()))["process"]["id"])
    if not os.path.exists(f"/proc/{pid}/stat"):
        raise SystemExit(
            f"the node's pid {pid} is not a process of this machine: run the node here (node CPU is "
            "read from /proc/<pid>/stat), e.g. `reme-es server start --name perf --port 9470`"
        )
    return pid


class Meter:
    """Node and client CPU-ms and wall seconds over a block; `idle` is the node's CPU-ms per second at rest."""

    def __init__(self, pid: int | None, idle: float = 0.0):
        self.pid, self.idle = pid, idle

    def __enter__(self):
        self.n0 = cpu_ms(self.pid) if self.pid else 0.0
        self.c0, self.t0 = cpu_ms(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.client = cpu_ms() - self.c0
        self.node = (cpu_ms(self.pid) - self.n0 - self.idle * self.wall) if self.pid else 0.0


async def idle_rate(pid: int, seconds: float) -> float:
    """The node's CPU-ms per second while this process sends it nothing."""
    n0, t0 = cpu_ms(pid), time.perf_counter()
    await asyncio.sleep(seconds)
    return (cpu_ms(pid) - n0) / (time.perf_counter() - t0)


async def warm(kinds: dict, queries: list[str], seconds: float) -> None:
    """Every kind in turn for `seconds`: a node just started spends its first minutes compiling (JIT), which
    would count as CPU per search."""
    stop, i = time.perf_counter() + seconds, 0
    while time.perf_counter() < stop:
        for op in kinds.values():
            await op(queries[i % len(queries)])
        i += 1


async def gc_ms(fs) -> float:
    """The node's young + old GC time so far (ms), or 0 when no node is measured."""
    if fs is None:
        return 0.0
    answer = await Raw(fs.store.dialect).request("GET", "/_nodes/_local/stats/jvm")
    collectors = next(iter(answer["nodes"].values()))["jvm"]["gc"]["collectors"]
    return float(sum(c.get("collection_time_in_millis", 0) for c in collectors.values()))


async def per_call(
    kinds: dict, queries: list[str], warmup: int, pid: int | None, idle: float, fs=None
) -> dict[str, dict]:
    """CPU-ms per search of node and client, the node's GC ms per search, and wall p50 (ms), per call kind."""
    out = {}
    for name, op in kinds.items():
        for q in queries[:warmup]:
            await op(q)
        walls, gc0 = [], await gc_ms(fs)
        with Meter(pid, idle) as m:
            for q in queries[warmup:]:
                t = time.perf_counter()
                await op(q)
                walls.append((time.perf_counter() - t) * 1e3)
        n = len(walls)
        out[name] = {
            "node": m.node / n,
            "client": m.client / n,
            "p50": median(walls),
            "gc": (await gc_ms(fs) - gc0) / n,
        }
    return out


async def throughput(
    jobs: list, queries: list[str], clients: int, seconds: float, pid: int | None, idle: float
) -> dict:
    """`clients` clients running jobs back to back for `seconds`: searches/s, p50 ms, CPU-ms per search."""
    walls: list[float] = []
    stop = time.perf_counter() + seconds

    async def client(i: int) -> None:
        job, k = jobs[i % len(jobs)], i
        while time.perf_counter() < stop:
            t = time.perf_counter()
            await job(queries[k % len(queries)])
            walls.append((time.perf_counter() - t) * 1e3)
            k += clients

    with Meter(pid, idle) as m:
        await asyncio.gather(*(client(i) for i in range(clients)))
    n = max(1, len(walls))
    return {
        "per_s": len(walls) / m.wall,
        "p50": median(walls),
        "node": m.node / n,
        "client": m.client / n,
        "busy": m.client / (m.wall * 1e3),
    }


async def side(args, backend: str, size: int, corpus: Corpus, queries: list[str]) -> dict:
    """One backend at one size: per-call CPU, then throughput; the apps are closed (and the set dropped) after."""
    prefix = args.prefix if backend in FLAVOURS else f"{args.prefix}-faiss"
    apps = [await open_app(backend, args.url if backend in FLAVOURS else None, prefix, size)]
    try:
        loaded = [await load(apps[0], backend, corpus, size, args.reuse)]
        if backend in FLAVOURS:
            for n in range(1, args.workspaces):
                apps.append(await open_app(backend, args.url, prefix, size, n))
                loaded.append(await load(apps[-1], backend, corpus, max(10, size // 4 // 10 * 10), args.reuse))
        pid = await node_pid(file_store(apps[0])) if backend in FLAVOURS else None
        kinds = ops(apps[0], backend)
        await warm(kinds, queries, args.warm)
        idle = await idle_rate(pid, args.idle) if pid else 0.0
        fs = file_store(apps[0]) if pid else None
        calls = await per_call(kinds, queries, args.warmup, pid, idle, fs)
        result = {"load_s": sum(loaded), "idle": idle, "calls": calls}
        jobs = [ops(app, backend)["search job"] for app in apps]
        result["throughput"] = {c: await throughput(jobs, queries, c, args.seconds, pid, idle) for c in args.clients}
        return result
    finally:
        for app in apps:
            if backend in FLAVOURS and not args.keep:
                await file_store(app).clear()
        if backend in FLAVOURS and not args.keep:
            await file_store(apps[0]).store.drop()
        for app in apps:
            await app.close()


def report_size(report: Report, size: int, results: dict[str, dict], workspaces: int) -> None:
    faiss = results.get("faiss")
    rows = []
    for backend, r in results.items():
        for kind, c in r["calls"].items():
            total = c["node"] + c["client"]
            ratio = f"{total / (faiss['calls'][kind]['client'] or 1e-9):.2f}x" if faiss and backend != "faiss" else "-"
            rows.append(
                [
                    backend,
                    kind,
                    f"{c['node']:.2f}",
                    f"{c['gc']:.2f}",
                    f"{c['client']:.2f}",
                    f"{total:.2f}",
                    ratio,
                    f"{c['p50']:.2f}",
                ]
            )
    headers = ["backend", "call", "node CPU-ms", "node GC ms", "client CPU-ms", "total", "total / faiss", "wall p50 ms"]
    report(table(headers, rows, f"CPU per search at {size:,} chunks (node idle rate subtracted; faiss: its process)"))
    rows = [
        [
            backend,
            c,
            f"{t['per_s']:.1f}",
            f"{t['p50']:.1f}",
            f"{t['node']:.2f}",
            f"{t['client']:.2f}",
            f"{100 * t['busy']:.0f}%",
        ]
        for backend, r in results.items()
        for c, t in r["throughput"].items()
    ]
    report(
        table(
            ["backend", "clients", "searches/s", "p50 ms", "node CPU-ms", "client CPU-ms", "client busy"],
            rows,
            f"Search job throughput at {size:,} chunks (reme-es: {workspaces} workspaces in one set)",
        )
    )
    for backend, r in results.items():
        report(f"{backend}: load {r['load_s']:.1f} s" + (f", node idle {r['idle']:.1f} CPU-ms/s" if r["idle"] else ""))


async def run_size(args, size: int, report: Report) -> None:
    corpus = set_corpus(Corpus(args.workload))
    queries = corpus.queries(args.warmup + args.queries)
    results = {}
    for backend in args.backends:
        results["faiss" if backend == "faiss" else "reme-es"] = await side(args, backend, size, corpus, queries)
    report_size(report, size, results, args.workspaces)


def main() -> None:
    p = parser(__doc__.split("\n")[0], PREFIX)
    p.add_argument("--quick", action="store_true", help="2k chunks, 60 queries, 5 s per client count")
    p.add_argument("--sizes", default=None, help="chunks of the measured workspace (default 10k,100k; --quick 2k)")
    p.add_argument("--workload", default="hash", choices=("hash", "topics"))
    p.add_argument("--queries", type=int, default=None, help="queries per call kind (default 200; --quick 60)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--workspaces", type=int, default=4, help="workspaces in the reme-es set (default 4)")
    p.add_argument("--clients", default="1,4,16")
    p.add_argument("--seconds", type=float, default=None, help="per client count (default 10; --quick 5)")
    p.add_argument("--idle", type=float, default=3.0, help="seconds the node's idle CPU rate is measured")
    p.add_argument(
        "--warm",
        type=float,
        default=None,
        help="seconds of every call kind before measuring (default "
        "30; --quick 15): a node just started spends minutes compiling",
    )
    p.add_argument("--backends", default="faiss,reme-es", help="faiss and/or reme-es")
    p.add_argument("--reuse", action="store_true", help="skip loading workspaces the set already holds")
    p.add_argument("--keep", action="store_true", help="leave the indices (for --reuse)")
    args = p.parse_args()
    args.queries = args.queries or (60 if args.quick else 200)
    args.seconds = args.seconds or (5.0 if args.quick else 10.0)
    args.warm = args.warm if args.warm is not None else (15.0 if args.quick else 30.0)
    args.clients = [int(c) for c in args.clients.split(",")]
    label = asyncio.run(engine_label(args.url))
    args.backends = [label if b == "reme-es" else b for b in args.backends.split(",")]
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else SIZES["quick" if args.quick else "full"]
    report = Report()
    for size in sizes:
        asyncio.run(run_size(args, size, report))
    report.save(args.out, "cpu_per_search", label)


if __name__ == "__main__":
    main()
