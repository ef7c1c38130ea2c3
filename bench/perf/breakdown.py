"""Where a search's time goes: ReMe's keyword, vector and hybrid calls and its search job on reme-es, split into client
build, wire, server `took` and parse, beside the floor of the node (a `GET /`, an empty `_search`, a bare `match` and
a bare k-NN query on the same client, and Lucene's own time for those queries from the profile API).

    python -m bench.perf.breakdown --url http://127.0.0.1:9200 --quick          # 2k chunks, ~1 minute
    python -m bench.perf.breakdown --url http://127.0.0.1:9200                  # 10k and 100k chunks
           [--sizes 10k,100k] [--workload hash|topics] [--queries 200] [--reuse] [--keep]

The workspace (bench/data/workloads.py, default shape `hash`: 4-word queries, 384-d vectors) is loaded through ReMe's
file-store interface into the index set `--prefix` as one workspace of it (the shared-set layout), and the node is
left to finish merging. `--reuse` skips the load when the set already holds the workspace (a run with `--keep`
leaves it). Every call kind and every floor request then runs once per query, in an order rotated query by query,
after `--warmup` queries, so the machine's drift falls on all alike.

Columns (ms, each the median over the queries of that part; see bench/perf/probe.py): wall p50 / p95, round trips,
build (until the first request is on the wire), between (client time between round trips), wire (in flight less
`took`), took (the server's), parse (from the last answer to the call's return), dumps / loads (JSON inside those),
wall - took (what the client and the wire add), and Lucene (the profile API's query + rewrite + collector time of
the same query shape, for the floor's queries). `hybrid` is ReMe's: both branches at once (asyncio.gather); the
search job is `es_search_step` (limit 10, link expansion, its defaults) as ReMe's `search` job runs it, then with
`feedback: 0` (the workload's 100-word chunks feed back, so the default job takes three round trips: the
expanded branches' queries need the first pass's top hits, and the answer's texts and links need the fused
ranking of the expanded branches).
"""

from __future__ import annotations

import asyncio

from bench.common import Raw, Report, median, parser, percentile, table
from bench.compare.reme_world import (
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
from reme_es.adapters.dialect import SOURCE_EXCLUDES
from reme_es.core.models import SearchFilter

PREFIX = "bench-breakdown"
PARTS = ("build", "between", "wire", "took", "parse", "dumps", "loads", "overhead")


def floor_ops(fs, corpus: Corpus) -> dict:
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


async def measure(kinds: dict, probe: Probe, queries: list[str], warmup: int) -> dict[str, list[Call]]:
    """Every kind once per query, the order rotated query by query; the first `warmup` queries are not kept."""
    names = list(kinds)
    out: dict[str, list[Call]] = {n: [] for n in names}
    for i, q in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            probe.begin()
            await kinds[name](q)
            call = probe.end()
            if i >= warmup:
                out[name].append(call)
    return out


def row(name: str, calls: list[Call], lucene: float | None) -> list:
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


async def run_size(args, size: int, backend: str, report: Report) -> None:
    corpus = set_corpus(Corpus(args.workload))
    app = await open_app(backend, args.url, args.prefix, size)
    try:
        spent = await load(app, backend, corpus, size, args.reuse)
        fs = file_store(app)
        report(
            f"\n{size:,} chunks ({args.workload}): {fs.store.caps.engine} {fs.store.caps.version}, "
            f"load {'reused' if not spent else f'{spent:.1f} s'}, set {args.prefix}"
        )
        probe = Probe().install(fs.store.dialect.transport.client)
        floor, bodies = floor_ops(fs, corpus)
        kinds = {**ops(app, backend), "search job, feedback 0": without_feedback(app), **floor}
        queries = corpus.queries(args.warmup + args.queries)
        calls = await measure(kinds, probe, queries, args.warmup)
        lucene = await profiled(bodies, queries[args.warmup :][:50])
        headers = ["call", "wall p50", "p95", "trips", *PARTS[:-1], "wall - took", "Lucene"]
        rows = [row(name, calls[name], lucene.get(name)) for name in kinds]
        report(table(headers, rows, f"Where the time goes, ms (median of {args.queries} queries per part)"))
        kw, bare = median([c.wall for c in calls["keyword"]]), median([c.wall for c in calls["bare match"]])
        report(f"keyword / bare match p50: {kw / bare:.2f}x")
    finally:
        if not args.keep:
            await file_store(app).clear()
            await file_store(app).store.drop()
        await app.close()


def main() -> None:
    p = parser(__doc__.split("\n")[0], PREFIX)
    p.add_argument("--quick", action="store_true", help="2k chunks, 60 queries (about a minute)")
    p.add_argument("--sizes", default=None, help="chunk counts, e.g. 10k,100k (default: 10k,100k; --quick: 2k)")
    p.add_argument("--workload", default="hash", choices=("hash", "topics"))
    p.add_argument("--queries", type=int, default=None, help="queries per call kind (default 200; --quick 60)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--reuse", action="store_true", help="skip the load when the set already holds the workspace")
    p.add_argument("--keep", action="store_true", help="leave the indices (for --reuse)")
    args = p.parse_args()
    args.queries = args.queries or (60 if args.quick else 200)
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else SIZES["quick" if args.quick else "full"]
    backend = asyncio.run(engine_label(args.url))
    report = Report()
    for size in sizes:
        asyncio.run(run_size(args, size, backend, report))
    report.save(args.out, "breakdown", backend)


if __name__ == "__main__":
    main()
