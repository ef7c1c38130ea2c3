"""Settling after a load: how long a bulk load through ReMe's file store takes until the node stops merging, and how
fast the index then answers, per load strategy (issue 20 item 2).

    python -m bench.perf.settle --url http://127.0.0.1:9200 [--size 100k] [--workload hash]
                                [--strategies default,merge2,forcemerge] [--queries 30] [--json PATH]

Every strategy loads the same `--size` chunks of the workload (bench/data/workloads.py: the `hash` shape upserts 500
files per call, the issue's shape) into a fresh prefix through ReMe's file store (upsert calls, then `dump()`), then
waits until the chunks index runs no merge, then measures. Strategies (one index setting or step each, all else
default):

  default      the store as it is
  refresh30    the file store's `refresh_after` 30 s (no background refresh during the load: fewer, bigger segments)
  merge2       `index.merge.scheduler.max_thread_count: 2` on the chunks index (a second merge thread)
  tier20       `index.merge.policy.segments_per_tier: 20` (fewer merges during the load, more segments after)
  forcemerge   default, measured, then `_forcemerge?max_num_segments=1` once the node stopped merging (timed) and
               measured again
  tier20max10  `segments_per_tier` 20 and `max_merge_at_once` 10 (OpenSearch 3's default is 30: a tier that
               overflows merges up to 30 segments, most of a 100k load's HNSW graphs, at once, after the load)
  refresh30+tier20  both: no refresh during the load, and tier20max10
  bulk4mb      bulk requests of at most 4 MiB (bulk10mb: 10 MiB), whatever the store's own bound
  nomerge+fm   no merges during the load (`segments_per_tier` and `max_merge_at_once` 100),
               then the defaults back and one `_forcemerge?max_num_segments=1`
  faiss        not a strategy: ReMe's own faiss store loaded the same way in this run (in-process, nothing to
               settle), the baseline of the `x faiss` column (faiss's ingest to steady state / the strategy's)

Per strategy: upsert + dump s, bulk items the node rejected (429/5xx, retried), merging after s, force-merge s,
ingest to steady state s (their sum) and as a speed against faiss's, the CPU seconds the node and this process spent
until then (on a shared machine the CPU figures move less than the wall times: compare those there), segments of the
chunks index, the node's total merge time, and p50 of keyword /
vector / date-filtered vector search (limit 50, as bench/compare/reme_backends.py, after 20 warm-up queries) with
recall@10 beside them (the top 10 of each vector search against the exact top 10).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS
from bench.compare import reme_backends as rb
from bench.data.workloads import DIMS, SHAPES, Corpus

NO_MERGE = {"index.merge.policy.segments_per_tier": 100, "index.merge.policy.max_merge_at_once": 100}
MERGE_DEFAULTS = {key: None for key in NO_MERGE}
STRATEGIES = {
    "default": {},
    "refresh30": {"refresh_after": 30.0},
    "merge2": {"settings": {"index.merge.scheduler.max_thread_count": 2}},
    "tier20": {"settings": {"index.merge.policy.segments_per_tier": 20}},
    "forcemerge": {"forcemerge": 1},
    "nomerge+fm": {"settings": NO_MERGE, "after": MERGE_DEFAULTS, "forcemerge": 1},
    # a tier wide enough that the tiered policy leaves a 100k load's segments unmerged, merges of at most 10 segments
    "tier20max10": {
        "settings": {"index.merge.policy.segments_per_tier": 20, "index.merge.policy.max_merge_at_once": 10}
    },
    # no refresh during the load (the node's indexing buffer cuts the segments: fewer, larger ones) and a tier wide
    # enough that the tiered policy leaves a 100k load's segments unmerged (each merge rebuilds an HNSW graph)
    "refresh30+tier20": {
        "refresh_after": 30.0,
        "settings": {"index.merge.policy.segments_per_tier": 20, "index.merge.policy.max_merge_at_once": 10},
    },
    "bulk4mb": {"bulk_bytes": 4 << 20},
    "bulk10mb": {"bulk_bytes": 10 << 20},
}
MODES = ("keyword", "vector", "vector filtered")
FAISS = "faiss"  # not a strategy: ReMe's own faiss store loaded the same way, in the same run (the ratio's baseline)


class Rejections(logging.Handler):
    """Counts the bulk rounds the node rejected in part or whole (429/5xx, retried by the transport)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.rounds = 0
        self.items = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("bulk:") and record.args:
            self.rounds += 1
            self.items += int(record.args[0])


def bound_bulk(transport, chunk_bytes: int) -> None:
    """Make every bulk of this transport use `chunk_bytes` per request."""
    bulk = transport.bulk

    def bounded(actions, max_retries=8, _chunk_bytes=None, require_alias=False):
        return bulk(actions, max_retries, chunk_bytes, require_alias)

    transport.bulk = bounded


async def node_cpu_s(raw) -> float:
    """CPU seconds the node's process has used (every thread: indexing, refreshes, merges)."""
    nodes = (await raw.request("GET", "/_nodes/stats/process"))["nodes"]
    return sum(n["process"]["cpu"]["total_in_millis"] for n in nodes.values()) / 1000


async def chunks_stats(raw, index: str) -> dict:
    stats = (await raw.request("GET", f"/{index}/_stats/merge,segments,docs"))["_all"]["primaries"]
    return {
        "segments": stats["segments"]["count"],
        "docs": stats["docs"]["count"],
        "merge_total_s": stats["merges"]["total_time_in_millis"] / 1000,
    }


async def measure(fs, corpus: Corpus, queries: list[str], vectors) -> dict:
    ops = {
        "keyword": lambda q: fs.keyword_search(q, rb.LIMIT, {}),
        "vector": lambda q: fs.vector_search(q, rb.LIMIT, {}),
        "vector filtered": lambda q: fs.vector_search(q, rb.LIMIT, dict(rb.MONTH)),
    }
    out = {}
    for mode in MODES:
        await rb.timed(ops[mode], queries[: rb.WARMUP])
        out[mode] = rb.summarise(await rb.timed(ops[mode], queries[rb.WARMUP :]))["p50"]
    ann = [
        [int(c.id.split("-")[1]) for c in await fs.vector_search(q, rb.LIMIT, {})][:10] for q in queries[rb.WARMUP :]
    ]
    exact = rb.exact_top(vectors, np.stack([corpus.embed_text(q) for q in queries[rb.WARMUP :]]))
    out["recall_at_10"] = float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(ann, exact)]))
    return out


async def run_faiss(args, work: Path) -> dict:
    """The same load into ReMe's own faiss store (in-process, nothing to settle): the baseline of the ratio."""
    corpus = rb.set_corpus(Corpus(args.workload))
    ws = work / FAISS
    ws.mkdir(parents=True)
    vectors = np.lib.format.open_memmap(ws / "vectors.npy", mode="w+", dtype=np.float32, shape=(args.size, DIMS))
    app = rb.make_app(rb.app_config(ws, "faiss", None, FAISS))
    await app.start()
    fs = rb.file_store(app)
    result: dict = {"strategy": FAISS, "size": args.size, "workload": args.workload, "merge_s": 0.0}
    try:
        cpu = time.process_time()
        result["upsert_s"], result["dump_s"] = await rb.upsert_all(fs, corpus, args.size, vectors)
        result["client_cpu_s"] = time.process_time() - cpu
        result.update(rejected_rounds=0, rejected_items=0, forcemerge_s=0.0, segments=0, docs=args.size)
        result.update(merge_total_s=0.0, node_cpu_s=math.nan)  # no node
        result["steady_s"] = result["upsert_s"] + result["dump_s"]
        vectors.flush()
        result.update(await measure(fs, corpus, corpus.queries(rb.WARMUP + args.queries), vectors))
    finally:
        await app.close()
    return result


async def run(strategy: str, args, work: Path) -> dict:
    from bench.common import Raw

    if strategy == FAISS:
        return await run_faiss(args, work)
    spec = STRATEGIES[strategy]
    corpus = rb.set_corpus(Corpus(args.workload))
    ws = work / strategy
    ws.mkdir(parents=True)
    cfg = rb.app_config(
        ws,
        "opensearch-3" if "opensearch" in args.engine else "elasticsearch-9",
        args.url,
        f"{args.prefix}-{strategy.replace('+', '-')}",
        spec.get("refresh_after"),
    )
    vectors = np.lib.format.open_memmap(ws / "vectors.npy", mode="w+", dtype=np.float32, shape=(args.size, DIMS))
    app = rb.make_app(cfg)
    await app.start()
    fs = rb.file_store(app)
    raw = Raw(fs.store.dialect)
    index = fs.store.index("chunks")
    result: dict = {"strategy": strategy, "size": args.size, "workload": args.workload}
    rejections = Rejections()
    logging.getLogger("reme_es.adapters.transport").addHandler(rejections)
    try:
        await fs.clear()
        if spec.get("bulk_bytes"):
            bound_bulk(fs.store.dialect.transport, spec["bulk_bytes"])
        if spec.get("settings"):
            await raw.request("PUT", f"/{index}/_settings", spec["settings"])
        cpu_node, cpu_client = await node_cpu_s(raw), time.process_time()
        result["upsert_s"], result["dump_s"] = await rb.upsert_all(fs, corpus, args.size, vectors)
        result["client_cpu_s"] = time.process_time() - cpu_client  # the bench's own data generation included
        result["rejected_rounds"], result["rejected_items"] = rejections.rounds, rejections.items
        result["merge_s"] = await rb.settle(fs)
        vectors.flush()
        queries = corpus.queries(rb.WARMUP + args.queries)
        if spec.get("after"):
            await raw.request("PUT", f"/{index}/_settings", spec["after"])
        result["forcemerge_s"] = 0.0
        if spec.get("forcemerge") and not spec.get("after"):  # the index as the load left it, then force-merged
            cpu_before = await node_cpu_s(raw)
            result["before"] = {**await chunks_stats(raw, index), **await measure(fs, corpus, queries, vectors)}
            cpu_node += await node_cpu_s(raw) - cpu_before  # the node's CPU for these queries is not the load's
        if spec.get("forcemerge"):
            t = time.perf_counter()
            await raw.request("POST", f"/{index}/_forcemerge", params={"max_num_segments": spec["forcemerge"]})
            await fs.store.indices.refresh()
            result["forcemerge_s"] = time.perf_counter() - t + await rb.settle(fs)
        result["steady_s"] = result["upsert_s"] + result["dump_s"] + result["merge_s"] + result["forcemerge_s"]
        result["node_cpu_s"] = await node_cpu_s(raw) - cpu_node
        result.update(await chunks_stats(raw, index))
        result.update(await measure(fs, corpus, queries, vectors))
    finally:
        logging.getLogger("reme_es.adapters.transport").removeHandler(rejections)
        await fs.clear()
        await fs.store.drop()
        await app.close()
    return result


def table(results: list[dict]) -> str:
    from bench.common import table as render

    base = next((r["steady_s"] for r in results if r["strategy"] == FAISS), None)

    def row(r: dict, name: str, fm: float, m: dict) -> list[str]:
        steady = r["upsert_s"] + r["dump_s"] + r["merge_s"] + fm
        return [
            name,
            rb.fmt(r["upsert_s"] + r["dump_s"]),
            str(r["rejected_items"]),
            rb.fmt(r["merge_s"]),
            rb.fmt(fm),
            rb.fmt(steady),
            rb.fmt(base / steady, 2) if base else "",
            rb.fmt(r.get("node_cpu_s", math.nan)) if m is r else "",
            rb.fmt(r.get("client_cpu_s", math.nan)) if m is r else "",
            str(m["segments"]),
            rb.fmt(m["merge_total_s"]),
            *(rb.fmt(m[x]) for x in MODES),
            rb.fmt(m["recall_at_10"], 3),
        ]

    rows = []
    for r in results:
        if "before" in r:  # the same load before its force-merge: the default
            rows.append(row(r, "default (that load, before its force-merge)", 0.0, r["before"]))
        rows.append(row(r, r["strategy"], r["forcemerge_s"], r))
    head = [
        "strategy",
        "upsert + dump s",
        "429-retried items",
        "merging after s",
        "force-merge s",
        "ingest to steady state s",
        "x faiss (speed)",
        "node CPU s",
        "client CPU s",
        "segments",
        "node merge time s",
        *(f"{m} p50 ms" for m in MODES),
        "recall@10",
    ]
    r0 = results[0]
    return render(
        head,
        rows,
        title=f"{r0['size']:,} chunks, workload {r0['workload']}, {r0['engine']}, limit {rb.LIMIT}: load strategies",
    )


async def engine_of(url: str) -> str:
    from reme_es.adapters.dialect import ClientSettings
    from reme_es.store.connect import detect_engine

    return await detect_engine(ClientSettings(hosts=[url]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="the node to load (a managed node of your own)")
    p.add_argument("--size", default="100k", help="chunks per load (default 100k)")
    p.add_argument("--workload", default="hash", choices=SHAPES)
    p.add_argument("--strategies", default=",".join(STRATEGIES), help=f"any of {', '.join(STRATEGIES)}")
    p.add_argument("--queries", type=int, default=30, help="measured queries per mode (after 20 warm-up ones)")
    p.add_argument("--prefix", default="perf-settle")
    p.add_argument("--json", default=str(RESULTS / "settle.json"), help="results, merged by strategy")
    args = p.parse_args()
    args.size = rb.parse_size(args.size)
    args.engine = asyncio.run(engine_of(args.url))
    results = []
    with tempfile.TemporaryDirectory(prefix="reme-settle-") as tmp:
        for strategy in [s.strip() for s in args.strategies.split(",") if s.strip()]:
            print(f"# {strategy} ...", file=sys.stderr, flush=True)
            res = asyncio.run(run(strategy, args, Path(tmp)))
            res["engine"] = args.engine
            print(json.dumps(res), file=sys.stderr, flush=True)
            results.append(res)
    print(table(results))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else []
    key = lambda r: (r["strategy"], r["size"], r["workload"], r.get("engine"))  # noqa: E731
    out.write_text(json.dumps([r for r in previous if key(r) not in {key(x) for x in results}] + results, indent=1))


if __name__ == "__main__":
    main()
