"""Where the vector milliseconds go (issue 53, item 1), and what the optimize job and the width calibration cost.

    reme-es server start --flavour opensearch-3 --name where-ms --port 9250 --heap 512m
    python -m bench.perf.where_ms --url http://127.0.0.1:9250            # 100k x 384, both shapes
    python -m bench.perf.where_ms --url http://127.0.0.1:9250 --quick    # 10k, a smoke run
    python -m bench.perf.where_ms --url http://127.0.0.1:9250 --size 1000000 --shapes clustered --no-costs  # 1M

Per shape (`clustered`: 200 centres, each vector its centre plus noise; `uniform`: random directions, which is what
hash embeddings look like), `--size` chunks of 384-d vectors are loaded through reme-es' store (files of 100 chunks,
2,000 per upsert, a refresh every 5,000 as a file store's deferred refresh makes segments) and the node is left to
finish merging. Held-out queries come from the same distribution; their exact top 10 by brute force (numpy, cosine).

1. **Costs, each alone**, as loaded (the segments a load leaves) and after a force merge to one segment: at the
   smallest width of the calibration ladder reaching recall@10 0.90, 0.95 and 0.97 (bare, ids only, filtered), the
   p50 of a k-NN search at k 50 sent bare (aiohttp, no reme-es code): ids only without the workspace filter (the floor,
   on one segment), ids only with the filter inside the k-NN clause (the filter's cost), with the 50 hits' sources
   (the sources' cost), and reme-es' `store.vector_search` at the same width beside the very body it sends, sent bare
   (the client's cost). Every variant gets each query in turn, so load that comes and goes falls on all alike.
2. **The width calibration**: its seconds and requests, beside store searches run while it measures (p50/p99 against
   the same searches idle).
3. **The optimize job** (`reme_es.store.optimize_job`): the store's vector p50 and recall at its calibrated width
   before, the merge's wall seconds with search p50/p99 during it, and p50 and recall at the width calibrated again
   after it.

Prints the tables and writes them to bench/results/where_ms.md (`--out`). Timing figures need a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time

import aiohttp
import numpy as np

from bench.common import RESULTS, connect, percentile, run_report, table
from reme_es.adapters import lookups as q
from reme_es.core.models import doc_id
from reme_es.store.calibration import RULE, Calibration, now_iso
from reme_es.store.optimize_job import optimize_for_search
from reme_es.testing.data import chunk, file_with

K, AT, DIMS, CENTRES, PER_FILE, PER_CALL, REFRESH_EVERY = 50, 10, 384, 200, 100, 2000, 5000
TARGETS = (0.90, 0.95, 0.97)
SHAPES = ("clustered", "uniform")


def vectors(shape: str, n: int, queries: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """`n` stored vectors and `queries` held-out ones of a shape, L2-normalised (float32)."""
    rng = np.random.default_rng(seed)
    if shape == "clustered":
        centres = rng.normal(size=(CENTRES, DIMS))
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)

        def draw(m: int) -> np.ndarray:
            return centres[rng.integers(0, CENTRES, m)] + rng.normal(scale=0.6 / math.sqrt(DIMS), size=(m, DIMS))

    else:

        def draw(m: int) -> np.ndarray:
            return rng.normal(size=(m, DIMS))

    out = [draw(n), draw(queries)]
    return tuple((x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32) for x in out)  # type: ignore[return-value]


def exact(stored: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    """The exact top `AT` of each query (cosine = dot product of unit vectors)."""
    out = []
    for first in range(0, len(queries), 64):
        scores = queries[first : first + 64] @ stored.T
        out += [set(np.argpartition(-row, AT)[:AT].tolist()) for row in scores]
    return out


def recall(found: list[list[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(set(f[:AT]) & t) / AT for f, t in zip(found, truth)]))


class Bench:
    """One shape on one store: the bare client, the id map, the bodies."""

    def __init__(self, store, url: str, http: aiohttp.ClientSession, stored: np.ndarray, queries: np.ndarray):
        self.store, self.url, self.http, self.stored, self.queries = store, url.rstrip("/"), http, stored, queries
        self.truth = exact(stored, queries)
        self.index = store.index("chunks")
        self.params = {k: str(v) for k, v in (store.port.scope.params(None) or {}).items()}
        self.ids: dict[str, int] = {}

    async def load(self) -> float:
        """Load the vectors through the store; seconds to the last refresh (the node then merges on)."""
        started, files, since = time.perf_counter(), [], 0
        for f in range(0, len(self.stored), PER_FILE):
            path = f"where/{f // PER_FILE:05d}.md"
            chunks = [chunk(path, f"v{i}", 2 * (i - f) + 1, self.stored[i].tolist()) for i in range(f, f + PER_FILE)]
            self.ids.update(
                {self.store.port.stored_id(doc_id(c.id)): i for c, i in zip(chunks, range(f, f + PER_FILE))}
            )
            self.ids.update({c.id: i for c, i in zip(chunks, range(f, f + PER_FILE))})
            files.append(file_with(path, chunks))
            if len(files) * PER_FILE >= PER_CALL or f + PER_FILE >= len(self.stored):
                await self.store.upsert(files, refresh=False)
                since, files = since + len(files) * PER_FILE, []
                if since >= REFRESH_EVERY:
                    await self.store.refresh()
                    since = 0
        await self.store.refresh()
        return time.perf_counter() - started

    async def settle(self) -> dict:
        while await self.store.admin.chunks_merging():
            await asyncio.sleep(0.5)
        return (await self.store.admin.stats())["chunks"]

    def body(self, v: np.ndarray, width: int, filtered: bool = True, sources: bool = False) -> dict:
        ix = self.store.indices
        body = ix.dialect.knn_body(v.tolist(), K, ix.filter(None), width, size=K, caps=ix.caps)
        if not filtered:
            clause = body.get("knn") or body["query"]["knn"]["embedding"]
            clause.pop("filter", None)
        return body if sources else q.ids_and_scores(body)

    async def bare(self, body: dict) -> tuple[float, list[int]]:
        """One search sent with a plain HTTP client: wall ms and the hits as vector numbers."""
        t = time.perf_counter()
        async with self.http.post(f"{self.url}/{self.index}/_search", json=body, params=self.params) as resp:
            answer = await resp.json()
        ms = (time.perf_counter() - t) * 1000
        return ms, [self.ids.get(h["_id"], -1) for h in answer["hits"]["hits"]]

    async def node_cpu_s(self) -> float:
        """CPU seconds the node's process has used (its `_nodes` stats), to difference around a merge."""
        async with self.http.get(f"{self.url}/_nodes/_local/stats/process") as resp:
            answer = await resp.json()
        return next(iter(answer["nodes"].values()))["process"]["cpu"]["total_in_millis"] / 1000

    def force_width(self, width: int, stats: dict) -> None:
        """The store searches at `width` (a record of it, as a calibration would leave)."""
        self.store.indices.knn_calibration = Calibration(
            width=width, recall=0.0, target=0.0, reached=True, stopped="target", depth=K, at=AT,
            docs=stats["docs"], segments=stats["segments"], sample=0, reference="bench", measured_at=now_iso(),
        )  # fmt: skip

    async def via_store(self, v: np.ndarray) -> tuple[float, list[int]]:
        t = time.perf_counter()
        hits = await self.store.vector_search(v.tolist(), K)
        return (time.perf_counter() - t) * 1000, [self.ids.get(h.chunk.id, -1) for h in hits]

    async def widths(self) -> dict[float, tuple[int, float]]:
        """The smallest ladder width reaching each target (bare, ids only, filtered) and its recall."""
        reached: dict[float, tuple[int, float]] = {}
        for width in [w for w in RULE["widths"] if w >= K]:
            found = [(await self.bare(self.body(v, width)))[1] for v in self.queries]
            r = recall(found, self.truth)
            for target in TARGETS:
                if r >= target and target not in reached:
                    reached[target] = (width, r)
            if len(reached) == len(TARGETS):
                break
        return reached

    async def variant(self, name: str, v: np.ndarray, width: int, store_body: dict) -> tuple[float, list[int]]:
        """One search of a cost variant (see the module's item 1)."""
        if name == "store":
            return await self.via_store(v)
        if name == "bare_same":
            return await self.bare(store_body)
        return await self.bare(self.body(v, width, filtered=name != "floor", sources=name == "sources"))

    async def costs(self, state: str, stats: dict) -> list[list]:
        """Per target width: p50 of each variant, the variants taking the queries in turn."""
        rows = []
        for target, (width, r) in sorted((await self.widths()).items()):
            self.force_width(width, stats)
            ms: dict[str, list[float]] = {k: [] for k in ("floor", "filter", "sources", "bare_same", "store")}
            found: list[list[int]] = []
            for n, v in enumerate(self.queries):
                store_body = self.store.searches.vectors.knn_body(
                    v.tolist(), K, self.store.indices.filter(None), size=K
                )
                names = list(ms)
                for name in names[n % len(names) :] + names[: n % len(names)]:
                    took, hits = await self.variant(name, v, width, store_body)
                    ms[name].append(took)
                    if name == "store":
                        found.append(hits)
            p = {k: percentile(x, 50) for k, x in ms.items()}
            rows.append(
                [state, stats["segments"], target, width, round(r, 3), round(recall(found, self.truth), 3)]
                + [round(p[k], 2) for k in ms]
                + [round(p["filter"] - p["floor"], 2), round(p["sources"] - p["filter"], 2)]
                + [round(p["store"] - p["bare_same"], 2)]
            )
        return rows

    async def searching(self, work) -> tuple[object, list[float]]:
        """Run `work` (a coroutine) with store searches sent one after another beside it; its result and their ms."""
        done, took = asyncio.Event(), []

        async def loop() -> None:
            n = 0
            while not done.is_set():
                took.append((await self.via_store(self.queries[n % len(self.queries)]))[0])
                n += 1

        searcher = asyncio.create_task(loop())
        try:
            result = await work
        finally:
            done.set()
            await searcher
        return result, took

    async def idle_searches(self) -> tuple[float, list[float]]:
        """Store p50 and recall at the recorded width, and the latencies (idle)."""
        took, found = [], []
        for v in self.queries:
            ms, hits = await self.via_store(v)
            took.append(ms)
            found.append(hits)
        return recall(found, self.truth), took


def p(values: list[float], at: float) -> float | str:
    return round(percentile(values, at), 2) if values else "-"


async def one_shape(args, shape: str, http: aiohttp.ClientSession) -> dict[str, list[list]]:
    stored, queries = vectors(shape, args.size, args.queries)
    store = await connect(args.url, f"{args.prefix}-{shape}", dims=DIMS)
    out: dict[str, list[list]] = {"costs": [], "calibration": [], "optimize": []}
    try:
        bench = Bench(store, args.url, http, stored, queries)
        loaded_s = await bench.load()
        loaded = await bench.settle()
        print(f"{shape}: {args.size} loaded in {loaded_s:.1f} s, {loaded['segments']} segments", flush=True)
        if not args.no_costs:
            out["costs"] += [[shape, *row] for row in await bench.costs("as loaded", loaded)]
        store.indices.knn_calibration = None  # the store's own calibration from here
        _, idle = await bench.idle_searches()
        record, during = await bench.searching(store.admin.calibrate())
        out["calibration"].append(_calibration_row(shape, loaded, record, idle, during))
        r_before, before = await bench.idle_searches()
        cpu = await bench.node_cpu_s()
        job, merging = await bench.searching(optimize_for_search(store, force=True, calibrate=False))
        merged = await bench.settle()
        cpu = await bench.node_cpu_s() - cpu  # the searches beside it included
        _, idle_merged = await bench.idle_searches()  # at the width recorded before the merge
        record_after, during_after = await bench.searching(store.admin.calibrate())
        out["calibration"].append(_calibration_row(shape, merged, record_after, idle_merged, during_after))
        r_after, after = await bench.idle_searches()
        out["optimize"].append(
            [shape, f"{loaded['segments']} -> {merged['segments']}", job["seconds"] if job else "-", round(cpu, 1)]
            + [p(before, 50), p(merging, 50), p(merging, 99), len(merging)]
            + [record.width, round(r_before, 3), record_after.width, round(r_after, 3), p(after, 50)]
        )
        if not args.no_costs:
            out["costs"] += [[shape, *row] for row in await bench.costs("merged", merged)]
    finally:
        await store.drop()
        await store.close()
    return out


def _calibration_row(shape: str, stats: dict, record, idle: list[float], during: list[float]) -> list:
    return [shape, stats["segments"], record.width, round(record.recall, 3), record.seconds, record.requests] + [
        p(idle, 50),
        p(idle, 99),
        p(during, 50),
        p(during, 99),
        len(during),
    ]


COST_HEADERS = (
    "shape", "state", "segments", "target", "width", "recall", "store recall", "floor p50 (no filter, ids)",
    "filtered ids p50", "+ sources p50", "same body bare p50", "reme-es store p50", "filter ms", "sources ms",
    "client ms",
)  # fmt: skip
CALIBRATION_HEADERS = (
    "shape", "segments", "width", "probe recall", "calibration s", "requests", "search p50 idle", "p99 idle",
    "p50 during", "p99 during", "searches during",
)  # fmt: skip
OPTIMIZE_HEADERS = (
    "shape", "segments", "merge wall s", "node CPU s (merge + searches)", "vector p50 before", "p50 during merge",
    "p99 during merge", "searches during", "width before", "recall before", "width after", "recall after",
    "vector p50 after",
)  # fmt: skip


def report(args, results: list[dict[str, list[list]]]) -> str:
    rows = {k: [r for res in results for r in res[k]] for k in ("costs", "calibration", "optimize")}
    parts = [
        f"# Where the vector milliseconds go ({args.size} x {DIMS}, {args.queries} queries, k {K}, {args.url})\n",
        "All latencies in ms (wall, client side). Floor: one segment, ids only, no filter. The deltas: filter = "
        "filtered - floor; sources = with sources - filtered; client = reme-es store - the same body sent bare.\n",
        table(COST_HEADERS, rows["costs"], title="Costs, each alone, at the widths of each recall"),
        table(CALIBRATION_HEADERS, rows["calibration"], title="The width calibration beside the searches it disturbs"),
        table(OPTIMIZE_HEADERS, rows["optimize"], title="The optimize job, before and after"),
    ]
    return "\n".join(parts)


async def main_async(args) -> str:
    async with aiohttp.ClientSession() as http:
        results = [await one_shape(args, shape, http) for shape in args.shapes.split(",")]
    return report(args, results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:9250")
    ap.add_argument("--prefix", default="where-ms")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--quick", action="store_true", help="10k chunks, 40 queries: a smoke run")
    ap.add_argument(
        "--no-costs", action="store_true", help="only the calibration and the optimize job (item 2; e.g. at 1M)"
    )
    ap.add_argument("--out", default=str(RESULTS / "where_ms.md"))
    args = ap.parse_args()
    if args.quick:
        args.size, args.queries = 10_000, 40
    run_report(main_async(args), "bench.perf.where_ms", args.out)


if __name__ == "__main__":
    main()
