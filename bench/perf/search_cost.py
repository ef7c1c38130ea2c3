"""What a search costs, by one of five meters (`--meter`), each with the setup its question needs.

    python -m bench.perf.search_cost --meter breakdown --url http://127.0.0.1:9200 --quick   # 2k chunks, ~1 minute
    python -m bench.perf.search_cost --meter cpu --url http://127.0.0.1:9200 --quick         # 2k chunks, 1-2 minutes
    python -m bench.perf.search_cost --meter breakdown|cpu --url ...     # 10k and 100k chunks [--sizes 10k,100k]
    python -m bench.perf.search_cost --meter trips --url ...             # 2k chunks of each workload [--sizes 2k]
    python -m bench.perf.search_cost --meter fusion --url ... [--sets memory,cranfield] [--rounds 3]
    python -m bench.perf.search_cost --meter raw --url ... [--sizes 10k,100k] [--dims 384]
    every meter: [--workload hash|topics] [--queries 200] [--warmup 20] [--reuse] [--keep] [--prefix P] [--out FILE]

Every meter runs its call kinds (or variants) in an order rotated query by query, after `--warmup` queries, so the
machine's drift falls on all of them alike. Tables go to stdout and to `--out` (default
bench/results/search_cost-<meter>-<engine>.txt).

The `breakdown`, `cpu` and `trips` meters load the synthetic workload (bench/data/workloads.py, default shape `hash`:
100-word chunks, 384-d vectors, 4-word queries) through ReMe's file-store interface into the index set `--prefix` as
one workspace of it (the shared-set layout: bench/compare/reme_world.py), and leave the node to finish merging.
`--reuse` skips the load when the set already holds the workspace (a run with `--keep` leaves it).

  breakdown  Where a call's time goes: ReMe's keyword, vector and hybrid calls and its search job on reme-es, split
             into client build, wire, server `took` and parse (bench/perf/probe.py), beside the floor of the node (a
             `GET /`, an empty `_search`, a bare `match` and a bare k-NN query on the same client, and Lucene's own
             time for those queries from the profile API). Columns (ms, each the median over the queries of that
             part): wall p50 / p95, round trips, build (until the first request is on the wire), between (client
             time between round trips), wire (in flight less `took`), took (the server's), parse (from the last
             answer to the call's return), dumps / loads (JSON inside those), wall - took (what the client and the
             wire add), and Lucene (the profile API's query + rewrite + collector time of the floor's queries).
             `hybrid` is ReMe's: both branches at once (asyncio.gather); the search job is `es_search_step` (limit
             10, link expansion, its defaults) as ReMe's `search` job runs it, then with `feedback: 0` (the
             workload's 100-word chunks feed back, so the default job takes three round trips: the expanded
             branches' queries need the first pass's top hits, and the answer's texts and links need the fused
             ranking of the expanded branches).
  cpu        CPU per search, not throughput on a machine where node and clients share the cores: node CPU-ms (from
             /proc/<node pid>/stat) + client CPU-ms per keyword, vector, hybrid search and search job on reme-es,
             beside ReMe faiss's process CPU-ms per search (`--backends faiss,reme-es`); the node's GC time per
             search (JVM stats), wall p50, and the ratio of node + client to faiss's. The node must run on this
             machine (its pid comes from `GET /_nodes/_local/process`) and should be one nobody else queries. Every
             call kind first runs for `--warm` seconds (a node just started spends its first minutes compiling),
             then the node's idle CPU rate is measured for `--idle` seconds and subtracted; both are printed.
             Workspace 0 holds the measured chunks (faiss the same chunks in its own folder); `--workspaces` - 1
             neighbours hold a quarter of that each. Then throughput: `--clients` asyncio clients in this process
             each run the search job back to back for `--seconds`, client i on workspace i mod `--workspaces`;
             searches/s, p50 latency, node + client CPU-ms per search and how busy this one process was.
  trips      Could ReMe's search job take two round trips with feedback on? Two trips would mean fetching the
             answer's texts and links beside the expanded branches, for hits chosen before those branches answer:
             the first pass's top `n`. Per workload (`--workload hash,topics` by default here; the drop-in's
             defaults: z-score 0.55, feedback 1, collapse), how often feedback changes the top 10, and how often
             the final top 10 (its chunks, or just its files) lies inside the first pass's top 10, 20, 30 and 50.
  fusion     What the drop-in's fusion settings cost and what they find: `collapse` and the feedback's length gate
             against their absence, on both quality sets of bench/quality/memory_quality.py (the generated
             conversational memory, Cranfield from `--cranfield`), each in an index of its own with MiniLM vectors
             (that bench's cache). Every question runs `SearchStore.ranked` under each variant: the first round
             trips of `es_search_step` at its depth (50 candidates per branch), client-side z-score fusion at vector
             weight 0.55, limit 10, `--rounds` passes over the questions. Per set and variant: p50 and p95 ms, round
             trips per search, and recall@10 / nDCG@10 of its top 10; a second table gives each set's chunk lengths
             in the terms the feedback gate counts (`fusion.terms`), against its threshold. Variants:
               defaults               collapse on, feedback from top hits of at least 30 terms (the drop-in's)
               collapse off           the same, every copy of a repeated text kept
               feedback from any hit  the feedback's length gate off (FEEDBACK_MIN_TERMS 0): before the gate
               neither (last round)   collapse off and feedback from any hit: the search of the last round
               feedback off           collapse on, no feedback (one round trip fewer at most)
  raw        The store against raw requests for the same hits, sent with the same client: one index grows to each
             of `--sizes` (synthetic Zipf text, `--dims` random unit vectors, `store.upsert` of `--batch-files`
             files on two streams, one refresh per size), then every query runs through the store and raw:
               keyword           store.search(mode="keyword")           raw: keyword_body(q, 10, ...) with sources
               keyword (text)    the same with keyword_fields=("text",) raw: the same body on `text` only
               keyword filtered  with a path-prefix + date filter       raw: the same body with the filter
               vector            store.search(mode="vector")            raw: knn_body(v, k=50, size=10)
               native hybrid     store.search(mode="hybrid"), pipeline  raw: dialect.hybrid_body(50) + pipeline
               client hybrid     store.search(mode="hybrid"), client    raw: both branch bodies (50 each) at once
             Reported: p50/p95 wall of each side, the store's overhead over raw, wall minus the server's `took` of
             each side, the server's `took`, and ReMe's local store (linear scan) reference figures. Random vectors
             are a hard case for HNSW (no clusters), so vector latency here is pessimistic.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import time
from pathlib import Path

from bench.common import (
    Raw,
    Report,
    Stopwatch,
    TextGenerator,
    connect,
    environment,
    median,
    parser,
    percentile,
    table,
)
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
from bench.perf.probe import Call, Probe
from reme_es.adapters.dialect import SOURCE_EXCLUDES, keyword_body
from reme_es.core.models import Chunk, FileDoc, SearchFilter
from reme_es.core.options import SearchOptions
from reme_es.store import CANDIDATE_MULTIPLIER, MemoryStore, fusion
from reme_es.store.fusion import candidate_depth, collapse_repeats

METERS = ("breakdown", "cpu", "trips", "fusion", "raw")
PREFIXES = {  # each meter's index set (a `--keep`/`--reuse` pair must name the same)
    "breakdown": "bench-breakdown",
    "cpu": "bench-cpu",
    "trips": "bench-feedback-trips",
    "fusion": "bench-search-cost",
    "raw": "bench-latency",
}
LIMIT = 10  # the job's limit
DEPTH = candidate_depth(
    LIMIT, CANDIDATE_MULTIPLIER
)  # ReMe's candidates per branch at that limit: min(200, 10 x 5) = 50


def rotated(names: list[str], turn: int) -> list[str]:
    """`names` starting at `turn` (mod their number): each takes every place in turn as queries go by."""
    k = turn % len(names)
    return names[k:] + names[:k]


# ----------------------------------------------------------------------------------------- breakdown

PARTS = ("build", "between", "wire", "took", "parse", "dumps", "loads", "overhead")


def floor_ops(fs, corpus: Corpus) -> tuple[dict, dict]:
    """The floor: requests straight to the node on the store's own client (no store, no ReMe in between)."""
    store = fs.store
    raw, index = Raw(store.dialect), store.index("chunks")

    def match(q: str) -> dict:
        return {
            "size": 50,
            "query": {"match": {"text": q}},
            "_source": {"excludes": SOURCE_EXCLUDES},
            "track_total_hits": False,
        }

    def knn(q: str) -> dict:
        return store.dialect.knn_body(corpus.embed_text(q).tolist(), 50, SearchFilter(), size=50, caps=store.caps)

    root = ("GET", "/") if store.caps.engine == "opensearch" else ("GET", "/_nodes/_local/http")
    return {
        "GET /": lambda q: raw.request(*root),
        "empty _search": lambda q: raw.request("POST", f"/{index}/_search", {"size": 0}),
        "bare match": lambda q: raw.request("POST", f"/{index}/_search", match(q)),
        "bare k-NN": lambda q: raw.request("POST", f"/{index}/_search", knn(q)),
    }, {"bare match": match, "bare k-NN": knn, "raw": raw, "index": index}


def without_feedback(app):
    """The search job with the store's feedback off for the call (`feedback: 0`: never a third round trip)."""
    job, indices = ops(app, "opensearch-3")["search job"], file_store(app).store.indices

    async def op(q: str):
        kept, indices.feedback = indices.feedback, 0
        try:
            return await job(q)
        finally:
            indices.feedback = kept

    return op


def lucene_ms(answer: dict) -> float:
    """Query + rewrite + collector time (ms) of a profiled search's shards."""
    total = 0
    for shard in answer.get("profile", {}).get("shards", []):
        for search in shard.get("searches", []):
            total += sum(q.get("time_in_nanos", 0) for q in search.get("query", []))
            total += search.get("rewrite_time", 0)
            total += sum(c.get("time_in_nanos", 0) for c in search.get("collector", []))
    return total / 1e6


async def profiled(bodies: dict, queries: list[str]) -> dict[str, float]:
    """Median Lucene ms per floor query kind, from the profile API."""
    raw, index = bodies["raw"], bodies["index"]
    out = {}
    for kind in ("bare match", "bare k-NN"):
        ms = [
            lucene_ms(await raw.request("POST", f"/{index}/_search", {**bodies[kind](q), "profile": True}))
            for q in queries
        ]
        out[kind] = median(ms)
    return out


async def probed(kinds: dict, probe: Probe, queries: list[str], warmup: int) -> dict[str, list[Call]]:
    """Every kind once per query, the order rotated query by query; the first `warmup` queries are not kept."""
    out: dict[str, list[Call]] = {n: [] for n in kinds}
    for i, q in enumerate(queries):
        for name in rotated(list(kinds), i):
            probe.begin()
            await kinds[name](q)
            call = probe.end()
            if i >= warmup:
                out[name].append(call)
    return out


def breakdown_row(name: str, calls: list[Call], lucene: float | None) -> list:
    walls = [c.wall for c in calls]
    parts = [median([getattr(c, p) for c in calls]) for p in PARTS]
    trips = median([c.trips for c in calls])
    return [
        name,
        f"{median(walls):.2f}",
        f"{percentile(walls, 95):.2f}",
        f"{trips:g}",
        *(f"{v:.2f}" for v in parts),
        "-" if lucene is None else f"{lucene:.2f}",
    ]


async def breakdown(args, workload: str, size: int, report: Report) -> None:
    """One workload at one size: every call kind and floor request, split into its parts."""
    backend = await engine_label(args.url)
    corpus = set_corpus(Corpus(workload))
    app = await open_app(backend, args.url, args.prefix, size)
    try:
        spent = await load(app, backend, corpus, size, args.reuse)
        fs = file_store(app)
        report(
            f"\n{size:,} chunks ({workload}): {fs.store.caps.engine} {fs.store.caps.version}, "
            f"load {'reused' if not spent else f'{spent:.1f} s'}, set {args.prefix}"
        )
        probe = Probe().install(fs.store.dialect.transport.client)
        floor, bodies = floor_ops(fs, corpus)
        kinds = {**ops(app, backend), "search job, feedback 0": without_feedback(app), **floor}
        queries = corpus.queries(args.warmup + args.queries)
        calls = await probed(kinds, probe, queries, args.warmup)
        lucene = await profiled(bodies, queries[args.warmup :][:50])
        headers = ["call", "wall p50", "p95", "trips", *PARTS[:-1], "wall - took", "Lucene"]
        rows = [breakdown_row(name, calls[name], lucene.get(name)) for name in kinds]
        report(table(headers, rows, f"Where the time goes, ms (median of {args.queries} queries per part)"))
        kw, bare = median([c.wall for c in calls["keyword"]]), median([c.wall for c in calls["bare match"]])
        report(f"keyword / bare match p50: {kw / bare:.2f}x")
        args.records.append(
            {
                "workload": workload,
                "size": size,
                "engine": f"{fs.store.caps.engine} {fs.store.caps.version}",
                "calls": {
                    name: {
                        "p50": median([c.wall for c in got]),
                        "p95": percentile([c.wall for c in got], 95),
                        "trips": median([c.trips for c in got]),
                        **{part: median([getattr(c, part) for c in got]) for part in PARTS},
                    }
                    for name, got in calls.items()
                },
            }
        )
    finally:
        if not args.keep:
            await file_store(app).clear()
            await file_store(app).store.drop()
        await app.close()


# ----------------------------------------------------------------------------------------------- cpu

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


class CpuMeter:
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
        with CpuMeter(pid, idle) as m:
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

    with CpuMeter(pid, idle) as m:
        await asyncio.gather(*(client(i) for i in range(clients)))
    n = max(1, len(walls))
    return {
        "per_s": len(walls) / m.wall,
        "p50": median(walls),
        "node": m.node / n,
        "client": m.client / n,
        "busy": m.client / (m.wall * 1e3),
    }


async def cpu_side(args, backend: str, size: int, corpus: Corpus, queries: list[str]) -> dict:
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


def cpu_report(report: Report, size: int, results: dict[str, dict], workspaces: int) -> None:
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


async def cpu(args, workload: str, size: int, report: Report) -> None:
    """One workload at one size: every backend of `--backends`, one after the other."""
    label = await engine_label(args.url)
    corpus = set_corpus(Corpus(workload))
    queries = corpus.queries(args.warmup + args.queries)
    results = {}
    for backend in args.backends.split(","):
        backend = label if backend == "reme-es" else backend
        results["faiss" if backend == "faiss" else "reme-es"] = await cpu_side(args, backend, size, corpus, queries)
    cpu_report(report, size, results, args.workspaces)


# --------------------------------------------------------------------------------------------- trips

HEADS = (10, 20, 30, 50)


TRIPS_HEADERS = [
    "workload",
    "queries",
    "feedback changed the top 10",
    *(f"top 10 in first {n}" for n in HEADS),
    *(f"its files in first {n}" for n in HEADS),
]


async def trips(args, workload: str, size: int) -> list:
    """One workload's row: shares of queries whose final top 10 lies inside the first pass's top n."""
    corpus = set_corpus(Corpus(workload))
    backend = await engine_label(args.url)
    app = await open_app(backend, args.url, f"{args.prefix}-{workload}", size)
    try:
        await load(app, backend, corpus, size, reuse=True)
        fs = file_store(app)
        store = fs._require_store()
        f = store.indices.filter({})
        fired, chunks_in, files_in = 0, dict.fromkeys(HEADS, 0), dict.fromkeys(HEADS, 0)
        queries = corpus.queries(args.queries)
        for q in queries:
            vector = await fs.vectors.query_vector(q)
            first = (await store.searches._pool(q, vector, DEPTH, f, feedback=False)).hits
            first = collapse_repeats(first) if store.indices.collapse else first
            final = (await store.ranked(q, vector, DEPTH, {}, LIMIT)).hits[:LIMIT]
            ids, paths = [h.chunk.id for h in final], {h.chunk.path for h in final}
            fired += ids != [h.chunk.id for h in first[:LIMIT]]
            for n in HEADS:
                chunks_in[n] += set(ids) <= {h.chunk.id for h in first[:n]}
                files_in[n] += paths <= {h.chunk.path for h in first[:n]}

        def share(k: int) -> str:
            return f"{k / len(queries):.2f}"

        return [
            workload,
            len(queries),
            share(fired),
            *(share(chunks_in[n]) for n in HEADS),
            *(share(files_in[n]) for n in HEADS),
        ]
    finally:
        if not args.keep:
            await file_store(app).clear()
            await file_store(app).store.drop()
        await app.close()


# -------------------------------------------------------------------------------------------- fusion

VARIANTS = {  # name -> (collapse, feedback depth, feedback length gate in terms)
    "defaults": (True, 1, fusion.FEEDBACK_MIN_TERMS),
    "collapse off": (False, 1, fusion.FEEDBACK_MIN_TERMS),
    "feedback from any hit": (True, 1, 0),
    "neither (last round)": (False, 1, 0),
    "feedback off": (True, 0, fusion.FEEDBACK_MIN_TERMS),
}


async def index_set(store: MemoryStore, data, passage_vectors: dict) -> None:
    """Every chunk of the set, with its text hash and its passage-side vector, 200 files a call; then refreshed."""
    files = []
    for path, chunks in data.files.items():
        cs = [
            Chunk(
                id=cid,
                path=path,
                start_line=line,
                end_line=line,
                text=text,
                embedding=passage_vectors[text],
                hash=hashlib.sha256(text.encode()).hexdigest(),
            )
            for cid, line, text in chunks
        ]
        files.append((FileDoc(path=path, chunk_ids=[c.id for c in cs]), cs))
    for i in range(0, len(files), 200):
        await store.upsert(files[i : i + 200])
    await store.refresh()


async def variants(store: MemoryStore, data, vectors: dict, rounds: int, warmup: int) -> dict[str, dict]:
    """Per variant: call times (s), requests per call, and the top 10 of each question (first round)."""
    probe = Probe().install(store.dialect.transport.client)
    out = {name: {"times": [], "trips": [], "ranked": []} for name in VARIANTS}

    async def run(name: str, q: str, record: bool) -> None:
        collapse, feedback, gate = VARIANTS[name]
        store.indices.collapse, store.indices.feedback, fusion.FEEDBACK_MIN_TERMS = collapse, feedback, gate
        probe.begin()
        result = await store.searches.ranked(q, vectors[q], DEPTH, None, LIMIT)
        call = probe.end()
        if record:
            out[name]["times"].append(call.wall / 1e3)
            out[name]["trips"].append(call.trips)
            if len(out[name]["ranked"]) < len(data.queries):
                out[name]["ranked"].append([h.chunk.id for h in result.hits[:LIMIT]])

    for q in data.queries[:warmup]:
        for name in VARIANTS:
            await run(name, q, record=False)
    for r in range(rounds):
        for k, q in enumerate(data.queries):
            for name in rotated(list(VARIANTS), k + r):
                await run(name, q, record=True)
    fusion.FEEDBACK_MIN_TERMS = VARIANTS["defaults"][2]
    return out


async def fusion_settings(args, report: Report) -> None:
    """Both quality sets, every variant interleaved: cost beside recall, and the chunk lengths the gate counts."""
    from bench.quality import memory_quality as mq  # its sets, their MiniLM vectors and its scores

    mq.use_model("minilm")
    wanted = args.sets.split(",")
    sets = ([mq.memory_set()] if "memory" in wanted else []) + (
        [mq.cranfield_set(Path(args.cranfield))] if "cranfield" in wanted else []
    )
    rows, lengths = [], []
    for data in sets:
        texts = [t for chunks in data.files.values() for _, _, t in chunks]
        n = [len(fusion.terms(t)) for t in texts]
        lengths.append(
            [
                data.name,
                len(n),
                min(n),
                f"{percentile(n, 1):.0f}",
                f"{percentile(n, 50):.0f}",
                max(n),
                f"{sum(x >= fusion.FEEDBACK_MIN_TERMS for x in n) / len(n):.3f}",
            ]
        )
        mq.embed_all(texts + data.queries)
        mq.embed_all(texts, side="passage")
        store = await connect(
            args.url,
            f"{args.prefix}-{data.name}",
            dims=len(mq.VECTORS[data.queries[0]]),
            hybrid="client",
            fusion="zscore",
            vector_weight=SearchOptions().vector_weight,
        )
        try:
            if not rows:
                report(environment(store, args.url))
            await index_set(store, data, mq.PASSAGE_VECTORS)
            got = await variants(store, data, mq.VECTORS, args.rounds, args.warmup)
        finally:
            await store.drop()
            await store.close()
        for name, m in got.items():
            recall = sum(mq.recall_at(r, g, LIMIT) for r, g in zip(m["ranked"], data.gains)) / len(data.gains)
            ndcg = sum(mq.ndcg_at(r, g, LIMIT) for r, g in zip(m["ranked"], data.gains)) / len(data.gains)
            rows.append(
                [
                    data.name,
                    name,
                    f"{percentile(m['times'], 50) * 1000:.2f}",
                    f"{percentile(m['times'], 95) * 1000:.2f}",
                    f"{sum(m['trips']) / len(m['trips']):.2f}",
                    f"{recall:.3f}",
                    f"{ndcg:.3f}",
                ]
            )
    report(
        table(
            ["set", "variant", "p50 ms", "p95 ms", "round trips", "R@10", "nDCG@10"],
            rows,
            title=f"\n## SearchStore.ranked, {DEPTH} candidates per branch, limit {LIMIT}, MiniLM, "
            f"{args.rounds} rounds",
        )
    )
    report(
        table(
            ["set", "chunks", "min", "p1", "median", "max", f"share >= {fusion.FEEDBACK_MIN_TERMS}"],
            lengths,
            title="\n## terms per chunk (fusion.terms), what the feedback gate counts",
        )
    )


# ----------------------------------------------------------------------------------------------- raw

# ReMe's local store (linear scan), measured on this machine kind (PERFORMANCE.md): p50 ms by size.
REME_VECTOR_MS = {10_000: 78.0, 100_000: 803.0, 300_000: 2455.0}
REME_FILTERED_KEYWORD_MS = {100_000: 100.6}
FILTER = {"path_prefix": "daily/", "start_date": "2026-03-01", "end_date": "2026-08-31"}
RAW_HEADERS = [
    "mode",
    "store p50",
    "store p95",
    "raw p50",
    "raw p95",
    "overhead p50",
    "store wall-took p50",
    "raw wall-took p50",
    "took p50",
    "hits",
    "ReMe local p50",
    "speedup",
]


def file_path(i: int) -> str:
    """Half the files are dated daily notes (daily/2026-MM-DD/...), half topic files."""
    if i % 2 == 0:
        day = (i // 2) % 336
        return f"daily/2026-{day // 28 + 1:02d}-{day % 28 + 1:02d}/note-{i:06d}.md"
    return f"memory/topic-{i % 97:02d}/{i:06d}.md"


def make_batch(gen: TextGenerator, first_file: int, files: int, per_file: int, words: int, dims: int) -> list:
    """`files` files of `per_file` chunks with text and vectors."""
    texts = gen.texts(files * per_file, words)
    vectors = gen.vectors(files * per_file, dims).tolist() if dims else [None] * len(texts)
    batch = []
    for f in range(files):
        path = file_path(first_file + f)
        chunks = [
            Chunk(
                id=f"{path}#{j}",
                path=path,
                start_line=j * 10 + 1,
                end_line=j * 10 + 10,
                text=texts[f * per_file + j],
                embedding=vectors[f * per_file + j],
            )
            for j in range(per_file)
        ]
        batch.append((FileDoc(path=path, chunk_ids=[c.id for c in chunks]), chunks))
    return batch


async def grow(store: MemoryStore, gen: TextGenerator, have: int, want: int, args) -> tuple[int, float]:
    """Grow the index from `have` to `want` chunks with two upsert streams; returns (chunks, seconds)."""
    per_file = args.chunks_per_file
    queue: asyncio.Queue = asyncio.Queue(maxsize=2)

    async def producer() -> None:
        f = have // per_file
        while f * per_file < want:
            n = min(args.batch_files, (want - f * per_file) // per_file)
            await queue.put(make_batch(gen, f, n, per_file, args.words, args.dims))
            f += n
        for _ in range(2):
            await queue.put(None)

    async def worker() -> None:
        while (batch := await queue.get()) is not None:
            await store.upsert(batch, refresh=False)

    with Stopwatch() as sw:
        await asyncio.gather(producer(), worker(), worker())
        await store.refresh()
    return want - have, sw.wall


def raw_op(store: MemoryStore, raw: Raw, mode: str, f: SearchFilter):
    """A function (query, vector) -> awaitable of the raw response(s) for one mode."""
    index = f"/{store.index('chunks')}/_search"
    dialect = store.dialect

    async def op(q: str, v: list[float]) -> list[dict]:
        if mode.startswith("keyword"):
            return [await raw.request("POST", index, keyword_body(q, LIMIT, f, store.keyword_fields))]
        if mode == "vector":
            return [await raw.request("POST", index, dialect.knn_body(v, DEPTH, f, size=LIMIT))]
        if mode == "native hybrid":
            body = dialect.hybrid_body(q, v, DEPTH, f, store.keyword_fields)
            return [await raw.request("POST", index, body, {"search_pipeline": store.pipeline_name()})]
        return list(
            await asyncio.gather(
                raw.request("POST", index, keyword_body(q, DEPTH, f, store.keyword_fields)),
                raw.request("POST", index, dialect.knn_body(v, DEPTH, f)),
            )
        )

    return op


def store_op(store: MemoryStore, mode: str, f: SearchFilter):
    """A function (query, vector) -> awaitable of the store's search for one mode."""
    search_mode = "keyword" if mode.startswith("keyword") else "vector" if mode == "vector" else "hybrid"
    hybrid = "native" if mode == "native hybrid" else "client"

    async def op(q: str, v: list[float]):
        store.hybrid = hybrid
        return await store.search(q, v, limit=LIMIT, search_filter=f, mode=search_mode)

    return op


async def store_and_raw(
    store: MemoryStore, raw: Raw, probe: Probe, mode: str, queries: list, vectors: list, warmup: int
):
    """Wall times of both sides and each side's server `took` (the slower of concurrent branches), query by query."""
    f = SearchFilter.parse(FILTER if mode == "keyword filtered" else None)
    default_fields = store.keyword_fields
    if mode == "keyword (text)":
        store.keyword_fields = ("text",)
    sides = {"store": store_op(store, mode, f), "raw": raw_op(store, raw, mode, f)}
    out = {"store": [], "raw": [], "store_took": [], "raw_took": [], "hits": []}
    try:
        for i, (q, v) in enumerate(zip(queries, vectors)):
            for side in rotated(["store", "raw"], i):
                probe.begin()
                result = await sides[side](q, v)
                call = probe.end()
                if i < warmup:
                    continue
                out[side].append(call.wall)
                out[f"{side}_took"].append(max((r.took_ms for r in probe.requests), default=float("nan")))
                if side == "store":
                    out["hits"].append(len(result.hits))
    finally:
        store.keyword_fields = default_fields
    return out


async def segments(raw: Raw, index: str) -> int:
    """Segments of an index's primaries."""
    resp = await raw.request("GET", f"/{index}/_stats/segments")
    return resp["_all"]["primaries"]["segments"]["count"]


async def store_against_raw(args, report: Report) -> str:
    """One index grown to each size; every mode through the store and raw. Returns the engine."""
    gen = TextGenerator(seed=11)
    qgen = TextGenerator(seed=11)  # same vocabulary, its own random stream for the queries
    queries = qgen.queries(args.queries + args.warmup)
    qvectors = qgen.vectors(len(queries), args.dims).tolist()
    store = await connect(args.url, args.prefix, dims=args.dims, hybrid="client")
    raw = Raw(store.dialect)
    probe = Probe().install(store.dialect.transport.client)
    try:
        report(environment(store, args.url))
        native = store.caps.hybrid_query
        if native:
            store.pipeline_kind = store.pipeline_kind or "rrf"
            await store.ensure_pipeline()
        modes = ["keyword", "keyword (text)", "keyword filtered", "vector"] + (["native hybrid"] if native else [])
        modes.append("client hybrid")
        report(
            f"{args.queries} queries per mode and size ({args.warmup} warm-up), limit {LIMIT} "
            f"({DEPTH} candidates per branch), {args.dims}-d random unit vectors, ~{args.words}-word chunks; "
            f"native pipeline: {store.pipeline_kind if native else 'n/a (client fusion only)'}; filter: {FILTER}"
        )
        have = 0
        for size in sorted(args.sizes):
            added, seconds = await grow(store, gen, have, size, args)
            have = size
            segs = await segments(raw, store.index("chunks"))
            report(
                f"\n## {size:,} chunks (loaded {added:,} in {seconds:.0f} s, {added / seconds:,.0f} docs/s; "
                f"{segs} segments)"
            )
            rows = []
            for mode in modes:
                m = await store_and_raw(store, raw, probe, mode, queries, qvectors, args.warmup)
                s50, s95 = median(m["store"]), percentile(m["store"], 95)
                r50, r95 = median(m["raw"]), percentile(m["raw"], 95)
                gap = median([s - t for s, t in zip(m["store"], m["store_took"])])
                raw_gap = median([s - t for s, t in zip(m["raw"], m["raw_took"])])
                refs = {"keyword filtered": REME_FILTERED_KEYWORD_MS, "vector": REME_VECTOR_MS}.get(mode, {})
                ref = refs.get(size)
                rows.append(
                    [
                        mode,
                        f"{s50:.1f}",
                        f"{s95:.1f}",
                        f"{r50:.1f}",
                        f"{r95:.1f}",
                        f"{s50 / r50 - 1:+.0%}",
                        f"{gap:.2f}",
                        f"{raw_gap:.2f}",
                        f"{median(m['raw_took']):.0f}",
                        f"{median(m['hits']):.0f}",
                        f"{ref:.0f}" if ref else "-",
                        f"{ref / s50:.0f}x" if ref else "-",
                    ]
                )
            report(table(RAW_HEADERS, rows))
        report(
            "\nms; overhead = store p50 / raw p50 - 1 (target < 20%); wall-took: store wall minus the server's took "
            "(the slower branch for client hybrid; target <= 2 ms for keyword); ReMe local = ReMe's linear-scan "
            "store on this machine kind (vector 78 ms at 10k, 803 ms at 100k, 2,455 ms at 300k; filtered keyword "
            "100.6 ms at 100k)"
        )
        return store.caps.engine
    finally:
        await store.drop()
        await store.close()


# ---------------------------------------------------------------------------------------------- main

PER_SIZE = {"breakdown": breakdown, "cpu": cpu}  # meters on the ReMe world, one workload and size at a time


def arguments() -> argparse.Namespace:
    p = parser(__doc__.split("\n")[0], "<the meter's>")
    p.description, p.formatter_class = __doc__, argparse.RawDescriptionHelpFormatter
    p.add_argument("--meter", required=True, choices=METERS, help="what to measure (see above)")
    p.add_argument("--quick", action="store_true", help="2k chunks, 60 queries (cpu: 5 s per client count)")
    p.add_argument("--json", default=None, help="breakdown: also write each call kind's medians here (JSON)")
    p.add_argument("--sizes", default=None, help="chunks, e.g. 10k,100k (default 10k,100k; --quick and trips: 2k)")
    p.add_argument("--workload", default=None, help="workload shapes, hash and/or topics (default hash; trips: both)")
    p.add_argument("--queries", type=int, default=None, help="queries per call kind (default 200; --quick 60)")
    p.add_argument("--warmup", type=int, default=20, help="queries run first and not kept (default 20)")
    p.add_argument("--reuse", action="store_true", help="skip the load when the set already holds the workspace")
    p.add_argument("--keep", action="store_true", help="leave the indices (for --reuse)")
    g = p.add_argument_group("cpu")
    g.add_argument("--backends", default="faiss,reme-es", help="faiss and/or reme-es")
    g.add_argument("--workspaces", type=int, default=4, help="workspaces in the reme-es set (default 4)")
    g.add_argument("--clients", default="1,4,16", help="concurrent clients of the throughput table")
    g.add_argument("--seconds", type=float, default=None, help="per client count (default 10; --quick 5)")
    g.add_argument("--idle", type=float, default=3.0, help="seconds the node's idle CPU rate is measured")
    g.add_argument("--warm", type=float, default=None, help="seconds of every call kind first (default 30; --quick 15)")
    g = p.add_argument_group("fusion")
    g.add_argument("--sets", default="memory,cranfield", help="which quality sets to run (default both)")
    g.add_argument("--cranfield", default="/work/shared/data/cranfield", help="Cranfield's folder")
    g.add_argument("--rounds", type=int, default=3, help="passes over the questions (default 3)")
    g = p.add_argument_group("raw")
    g.add_argument("--dims", type=int, default=384)
    g.add_argument("--words", type=int, default=100, help="words per chunk")
    g.add_argument("--chunks-per-file", type=int, default=10)
    g.add_argument("--batch-files", type=int, default=500, help="files per upsert call")
    args = p.parse_args()
    if args.prefix == "<the meter's>":
        args.prefix = PREFIXES[args.meter]
    args.queries = args.queries or (60 if args.quick else 200)
    args.seconds = args.seconds or (5.0 if args.quick else 10.0)
    args.warm = args.warm if args.warm is not None else (15.0 if args.quick else 30.0)
    args.clients = [int(c) for c in args.clients.split(",")]
    args.records = []
    quick = args.quick or args.meter == "trips"
    args.sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else SIZES["quick" if quick else "full"]
    args.workload = (args.workload or ("hash,topics" if args.meter == "trips" else "hash")).split(",")
    return args


def main() -> None:
    args = arguments()
    report = Report()
    if args.meter in PER_SIZE:
        for workload in args.workload:
            for size in args.sizes:
                asyncio.run(PER_SIZE[args.meter](args, workload, size, report))
        engine = asyncio.run(engine_label(args.url))
    elif args.meter == "trips":  # one table per size, a row per workload
        for size in args.sizes:
            rows = [asyncio.run(trips(args, workload, size)) for workload in args.workload]
            report(
                f"{size:,} chunks per workload, limit {LIMIT}, depth {DEPTH}, the drop-in's defaults; shares of queries"
            )
            report(
                table(
                    TRIPS_HEADERS, rows, "Feedback against a two-trip job: is the final top 10 among the first pass's?"
                )
            )
        engine = asyncio.run(engine_label(args.url))
    elif args.meter == "fusion":
        asyncio.run(fusion_settings(args, report))
        engine = asyncio.run(engine_label(args.url))
    else:
        engine = asyncio.run(store_against_raw(args, report))
    report.save(args.out, f"search_cost-{args.meter}", engine)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"meter": args.meter, "engine": engine, "runs": args.records}, indent=1))


if __name__ == "__main__":
    main()
