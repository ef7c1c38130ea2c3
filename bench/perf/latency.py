"""Search latency through MemoryStore against raw requests for the same hits, sent with the same client.

    python -m bench.perf.latency [--url http://127.0.0.1:9200] [--sizes 10000,100000] [--queries 200] [--dims 384]

One index grows to each size in turn (synthetic Zipf text from a pseudo-word vocabulary, random unit vectors;
loaded with `store.upsert` in batches of --batch-files files on two concurrent streams, one refresh per size, no
force-merge). At each size, every query runs through the store and raw, the order alternating query by query:
  keyword           store.search(mode="keyword", limit=10)       raw: keyword_body(q, 10, ...) with sources
  keyword (text)    the same with keyword_fields=("text",)       raw: the same body on `text` only
  keyword filtered  the same with a path-prefix + date filter    raw: the same body with the filter
  vector            store.search(mode="vector", limit=10)        raw: knn_body(v, k=50, size=10) with sources
  native hybrid     store.search(mode="hybrid"), search pipeline raw: dialect.hybrid_body(50) + ?search_pipeline=
  client hybrid     store.search(mode="hybrid"), RRF in Python   raw: both branch bodies (50 each), concurrently
(50 = ReMe's candidate depth for limit 10: min(200, limit x 5).) Raw is what a client without reme-es sends for the
same hits: the 10 hits with their sources for one branch (the store sends the same), and the candidates with their
sources where fusion needs 50. For hybrid the store ranks candidates from ids and scores alone (doc values, no
stored fields) and fetches the sources of the hits it returns in one `_mget`: two requests where raw sends one.
Reported: p50/p95 wall of each side, the store's overhead over raw, wall minus the server's `took` for each
side (client + transport time), and the server's `took` (the store's search request). ReMe's local store (linear
scan) reference numbers are printed next to ours.
Random vectors are a hard case for HNSW (no clusters), so vector latency here is pessimistic.
"""

from __future__ import annotations

import asyncio
import time

from bench.common import Raw, Report, Stopwatch, TextGenerator, connect, environment, median, parser, percentile, table
from reme_es.adapters.dialect import keyword_body
from reme_es.core.models import Chunk, FileDoc, SearchFilter
from reme_es.store import MemoryStore
from reme_es.store.fusion import candidate_depth

# ReMe's local store (linear scan), measured on this machine kind (PERFORMANCE.md): p50 ms by size.
REME_VECTOR_MS = {10_000: 78.0, 100_000: 803.0, 300_000: 2455.0}
REME_FILTERED_KEYWORD_MS = {100_000: 100.6}
LIMIT = 10
FILTER = {"path_prefix": "daily/", "start_date": "2026-03-01", "end_date": "2026-08-31"}


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


async def load(store: MemoryStore, gen: TextGenerator, have: int, want: int, args) -> tuple[int, float]:
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


class Took:
    """Records the server's `took` of every response that passes through a dialect's request method."""

    def __init__(self, store: MemoryStore):
        self.values: list[int] = []
        dialect = store.dialect
        request = dialect.transport.request

        async def recording(method, path, body=None, params=None):
            resp = await request(method, path, body, params)
            if isinstance(resp, dict) and "took" in resp:
                self.values.append(resp["took"])
            return resp

        dialect.transport.request = recording
        self.close = lambda: delattr(dialect.transport, "request")

    def take(self) -> float:
        """The largest took since the last call (the slower branch when two ran at once), in ms."""
        out, self.values = (max(self.values) if self.values else float("nan")), []
        return float(out)


def raw_ops(store: MemoryStore, raw: Raw, mode: str, f: SearchFilter):
    """A function (query, vector) -> awaitable of the raw response(s) for one mode."""
    index = f"/{store.index('chunks')}/_search"
    size = candidate_depth(LIMIT)
    dialect = store.dialect

    async def op(q: str, v: list[float]) -> list[dict]:
        if mode.startswith("keyword"):
            return [await raw.request("POST", index, keyword_body(q, LIMIT, f, store.keyword_fields))]
        if mode == "vector":
            return [await raw.request("POST", index, dialect.knn_body(v, size, f, size=LIMIT))]
        if mode == "native hybrid":
            return [
                await raw.request(
                    "POST",
                    index,
                    dialect.hybrid_body(q, v, size, f, store.keyword_fields),
                    {"search_pipeline": store.pipeline_name()},
                )
            ]
        return list(
            await asyncio.gather(
                raw.request("POST", index, keyword_body(q, size, f, store.keyword_fields)),
                raw.request("POST", index, dialect.knn_body(v, size, f)),
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


async def measure(
    store: MemoryStore, raw: Raw, mode: str, queries: list, vectors: list, warm_q: list, warm_v: list
) -> dict:
    """Wall times of both sides, the store's took and the raw side's took, query by query."""
    f = SearchFilter.parse(FILTER if mode == "keyword filtered" else None)
    default_fields = store.keyword_fields
    if mode == "keyword (text)":
        store.keyword_fields = ("text",)
    s_op, r_op = store_op(store, mode, f), raw_ops(store, raw, mode, f)
    took = Took(store)
    out = {"store": [], "raw": [], "store_took": [], "raw_took": [], "hits": []}
    try:
        for q, v in zip(warm_q, warm_v):
            await s_op(q, v)
            await r_op(q, v)
        took.take()
        for i, (q, v) in enumerate(zip(queries, vectors)):
            for side in ("store", "raw") if i % 2 == 0 else ("raw", "store"):
                t = time.perf_counter()
                if side == "store":
                    result = await s_op(q, v)
                    out["store"].append((time.perf_counter() - t) * 1000)
                    out["store_took"].append(took.take())
                    out["hits"].append(len(result.hits))
                else:
                    resps = await r_op(q, v)
                    out["raw"].append((time.perf_counter() - t) * 1000)
                    out["raw_took"].append(float(max(r["took"] for r in resps)))
                    took.take()
    finally:
        took.close()
        store.keyword_fields = default_fields
    return out


async def segments(raw: Raw, index: str) -> int:
    """Segments of an index's primaries."""
    resp = await raw.request("GET", f"/{index}/_stats/segments")
    return resp["_all"]["primaries"]["segments"]["count"]


async def main() -> None:
    p = parser(__doc__.splitlines()[0], "bench-latency")
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--dims", type=int, default=384)
    p.add_argument("--words", type=int, default=100, help="words per chunk")
    p.add_argument("--chunks-per-file", type=int, default=10)
    p.add_argument("--batch-files", type=int, default=500, help="files per upsert call")
    args = p.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    gen = TextGenerator(seed=11)
    qgen = TextGenerator(seed=11)  # same vocabulary, its own random stream for the queries
    queries = qgen.queries(args.queries + args.warmup)
    qvectors = qgen.vectors(len(queries), args.dims).tolist()
    queries, warm_q = queries[args.warmup :], queries[: args.warmup]
    qvectors, warm_v = qvectors[args.warmup :], qvectors[: args.warmup]
    report = Report()
    store = await connect(args.url, args.prefix, dims=args.dims, hybrid="client")
    raw = Raw(store.dialect)
    try:
        report(environment(store, args.url))
        native = store.caps.hybrid_query
        if native:
            store.pipeline_kind = store.pipeline_kind or "rrf"
            await store.ensure_pipeline()
        modes = (
            ["keyword", "keyword (text)", "keyword filtered", "vector"]
            + (["native hybrid"] if native else [])
            + ["client hybrid"]
        )
        report(
            f"{args.queries} queries per mode and size ({args.warmup} warm-up), limit {LIMIT} "
            f"({candidate_depth(LIMIT)} candidates per branch), {args.dims}-d random unit vectors, "
            f"~{args.words}-word chunks; "
            f"native pipeline: {store.pipeline_kind if native else 'n/a (client fusion only)'}; "
            f"filter: {FILTER}"
        )
        have = 0
        summary = []
        for size in sizes:
            added, seconds = await load(store, gen, have, size, args)
            have = size
            segs = await segments(raw, store.index("chunks"))
            report(
                f"\n## {size:,} chunks (loaded {added:,} in {seconds:.0f} s, {added / seconds:,.0f} docs/s; "
                f"{segs} segments)"
            )
            rows = []
            for mode in modes:
                m = await measure(store, raw, mode, queries, qvectors, warm_q, warm_v)
                s50, s95 = median(m["store"]), percentile(m["store"], 95)
                r50, r95 = median(m["raw"]), percentile(m["raw"], 95)
                gap = median([s - t for s, t in zip(m["store"], m["store_took"])])
                raw_gap = median([s - t for s, t in zip(m["raw"], m["raw_took"])])
                ref = (
                    REME_FILTERED_KEYWORD_MS
                    if mode == "keyword filtered"
                    else REME_VECTOR_MS
                    if mode == "vector"
                    else {}
                ).get(size)
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
                summary.append([f"{size:,}", mode, f"{s50:.1f}", f"{r50:.1f}", f"{s50 / r50 - 1:+.0%}"])
            report(
                table(
                    [
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
                    ],
                    rows,
                )
            )
        report(
            "\nms; overhead = store p50 / raw p50 - 1 (target < 20%); wall-took: store wall minus the server's took "
            "(the slower branch for client hybrid; target <= 2 ms for keyword); ReMe local = ReMe's linear-scan "
            "store on this machine kind (vector 78 ms at 10k, 803 ms at 100k, 2,455 ms at 300k; filtered keyword "
            "100.6 ms at 100k)"
        )
    finally:
        await store.drop()
        await store.close()
    report.save(args.out, "latency", store.caps.engine)


if __name__ == "__main__":
    asyncio.run(main())
