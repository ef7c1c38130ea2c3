"""Concurrent segment search on a k-NN search: OpenSearch's slices, 1 against 2 (issue 53).

    reme-es server start --flavour opensearch-3 --name slices --port 9260 --heap 512m
    python -m bench.perf.concurrent_segments --url http://127.0.0.1:9260            # 100k x 384, both shapes
    python -m bench.perf.concurrent_segments --url http://127.0.0.1:9260 --quick    # 10k, a smoke run

OpenSearch searches a shard's segments one after another unless concurrent segment search cuts them into slices
(`search.concurrent.max_slice_count`; 0, the default, lets Lucene choose: half the node's processors, at most 4,
so **one slice on a 2-core node**). In the default `auto` mode the k-NN plugin asks for it on k-NN queries. Per
shape (bench/perf/where_ms.py's `clustered` and `uniform` vectors, loaded the same way through reme-es' store), as
loaded and after a force merge to one segment, at the smallest widths reaching recall@10 0.90, 0.95 and 0.97: the
p50/p99 of a filtered k-NN search (k 50, ids only, sent bare) with 1 slice (`mode: none`) and with 2 (`mode: auto`),
the two settings taking blocks of 10 queries in turn (the cluster setting is switched between blocks). Then
throughput: `--clients` searchers at once for `--seconds` each way (what the slices cost when every core is busy).

Prints the tables and writes them to bench/results/concurrent_segments.md (`--out`). Timing figures need a quiet
machine. The node is left with its own defaults at the end (the cluster settings are reset).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import aiohttp

from bench.common import RESULTS, connect, percentile, run_report, table
from bench.perf import where_ms as w

SETTINGS = {"1 slice": (1, "none"), "2 slices": (2, "auto")}
BLOCK = 10


async def use(http: aiohttp.ClientSession, url: str, way: str | None) -> None:
    """Switch the node to one way (None: back to its defaults)."""
    slices, mode = SETTINGS[way] if way else (None, None)
    body = {"persistent": {"search.concurrent.max_slice_count": slices, "search.concurrent_segment_search.mode": mode}}
    async with http.put(f"{url}/_cluster/settings", json=body) as resp:
        if resp.status != 200:
            raise RuntimeError(f"cluster settings refused: {resp.status} {await resp.text()}")


async def latencies(bench: w.Bench, http: aiohttp.ClientSession, url: str, width: int) -> dict[str, list[float]]:
    """Every query once each way, the ways taking blocks of `BLOCK` queries in turn."""
    ms: dict[str, list[float]] = {way: [] for way in SETTINGS}
    for first in range(0, len(bench.queries), BLOCK):
        ways = list(SETTINGS) if (first // BLOCK) % 2 == 0 else list(reversed(SETTINGS))
        for way in ways:
            await use(http, url, way)
            for v in bench.queries[first : first + BLOCK]:
                ms[way].append((await bench.bare(bench.body(v, width)))[0])
    return ms


async def throughput(bench: w.Bench, width: int, clients: int, seconds: float) -> float:
    """Searches per second with `clients` searchers at once."""
    done, count = time.perf_counter() + seconds, [0]

    async def searcher(n: int) -> None:
        while time.perf_counter() < done:
            await bench.bare(bench.body(bench.queries[n % len(bench.queries)], width))
            count[0] += 1
            n += clients

    await asyncio.gather(*(searcher(n) for n in range(clients)))
    return count[0] / seconds


async def one_state(bench, http, url: str, shape: str, state: str, stats: dict, args) -> tuple[list, list]:
    rows, load_rows = [], []
    reached = await bench.widths()
    by_width = {width: (target, r) for target, (width, r) in sorted(reached.items())}  # a width once: its best target
    for width, (target, r) in sorted(by_width.items()):
        ms = await latencies(bench, http, url, width)
        p50 = {way: percentile(x, 50) for way, x in ms.items()}
        rows.append(
            [shape, state, stats["segments"], target, width, round(r, 3)]
            + [f"{percentile(ms[way], 50):.2f} / {percentile(ms[way], 99):.2f}" for way in SETTINGS]
            + [f"{p50['1 slice'] / p50['2 slices']:.2f}x"]
        )
    width = max(width for width, _ in reached.values())
    qps = {}
    for way in SETTINGS:
        await use(http, url, way)
        qps[way] = await throughput(bench, width, args.clients, args.seconds)
    load_rows.append([shape, state, width, args.clients] + [round(qps[way], 1) for way in SETTINGS])
    return rows, load_rows


async def one_shape(args, shape: str, http: aiohttp.ClientSession) -> tuple[list, list]:
    stored, queries = w.vectors(shape, args.size, args.queries)
    store = await connect(args.url, f"{args.prefix}-{shape}", dims=w.DIMS)
    rows, load_rows = [], []
    try:
        bench = w.Bench(store, args.url, http, stored, queries)
        loaded_s = await bench.load()
        loaded = await bench.settle()
        print(f"{shape}: {args.size} loaded in {loaded_s:.1f} s, {loaded['segments']} segments", flush=True)
        for state in ("as loaded", "merged"):
            if state == "merged":
                await store.admin.optimize(max_segments=1, calibrate=False)
                await store.refresh()
                loaded = await bench.settle()
            got = await one_state(bench, http, args.url, shape, state, loaded, args)
            rows += got[0]
            load_rows += got[1]
            print(table(HEADERS, got[0]), flush=True)
    finally:
        await use(http, args.url, None)
        await store.drop()
        await store.close()
    return rows, load_rows


HEADERS = (
    "shape", "state", "segments", "target", "width", "recall", "1 slice p50 / p99 ms", "2 slices p50 / p99 ms",
    "p50 1 slice / 2",
)  # fmt: skip
LOAD_HEADERS = ("shape", "state", "width", "searchers at once", "1 slice searches/s", "2 slices searches/s")


async def main_async(args) -> str:
    rows, load_rows = [], []
    async with aiohttp.ClientSession() as http:
        for shape in args.shapes.split(","):
            got = await one_shape(args, shape, http)
            rows += got[0]
            load_rows += got[1]
    return "\n".join(
        [
            f"# Concurrent segment search on k-NN ({args.size} x {w.DIMS}, {args.queries} queries, k {w.K}, "
            f"{args.url})\n",
            table(HEADERS, rows, title="One search at a time (filtered, ids only, sent bare)"),
            table(LOAD_HEADERS, load_rows, title="Throughput with every core busy"),
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:9260")
    ap.add_argument("--prefix", default="slices")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--shapes", default=",".join(w.SHAPES))
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="10k chunks, 40 queries: a smoke run")
    ap.add_argument("--out", default=str(RESULTS / "concurrent_segments.md"))
    args = ap.parse_args()
    if args.quick:
        args.size, args.queries, args.seconds = 10_000, 40, 3.0
    run_report(main_async(args), "bench.perf.concurrent_segments", args.out)


if __name__ == "__main__":
    main()
