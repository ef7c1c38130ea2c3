"""Vector index options by measurement (issue 20 item 4): recall@10 and k-NN latency per index option and search
width, on one node, with the workload's vectors (bench/data/workloads.py).

    python -m bench.perf.vector_options --url http://127.0.0.1:9200 [--size 100k] [--workload hash] [--options none,sq]
                                        [--candidates 100,250,500] [--m 16] [--ef-construction 64]

Per option, the vectors of `--size` chunks are bulk-loaded (two concurrent streams, a refresh every 5,000 as the
file store's load makes segments) into a fresh index holding only the vector field, mapped as the shared engine
settings map it (`reme_es/engine_settings.json`) with the option applied; the node is left to finish merging.
Then, for each search width (`ef_search` on OpenSearch, `num_candidates` on Elasticsearch), `--queries` k-NN
searches at k 50 (the depth ReMe's search step asks a branch for) are timed (p50 after 20 warm-up queries, ids only)
and their top 10 compared with the exact top 10 (numpy, cosine).

Options: OpenSearch (lucene engine) `none` (float HNSW) and `sq` (Lucene scalar quantisation, `encoder: sq`);
Elasticsearch `hnsw` (float), `int8_hnsw`, `bbq_hnsw` (Elasticsearch 9's default for 384-d) and `bbq_hnsw+rescore`
(oversample 3, rescored on the float vectors).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS, Raw
from bench.compare import reme_backends as rb
from bench.data.workloads import DIMS, SHAPES, Corpus
from reme_es.adapters.dialect import ClientSettings
from reme_es.core.engine_settings import HNSW_EF_CONSTRUCTION, HNSW_M, vector_mapping
from reme_es.store.connect import detect_engine, make_dialect

K = 50
BLOCK = 5_000
OPTIONS = {"opensearch": ("none", "sq"), "elasticsearch": ("hnsw", "int8_hnsw", "bbq_hnsw", "bbq_hnsw+rescore")}


def mapping(engine: str, option: str, m: int, efc: int) -> dict:
    """The shared vector mapping with one option applied."""
    spec = copy.deepcopy(vector_mapping(engine, DIMS, m, efc))
    if engine == "opensearch":
        if option == "sq":
            spec["method"]["parameters"]["encoder"] = {"name": "sq"}
    else:
        spec["index_options"]["type"] = option.split("+")[0]
    return spec


def query(engine: str, vector: list[float], width: int, option: str) -> dict:
    if engine == "opensearch":
        clause = {"vector": vector, "k": K, "method_parameters": {"ef_search": width}}
        return {"size": K, "_source": False, "query": {"knn": {"embedding": clause}}}
    knn = {"field": "embedding", "query_vector": vector, "k": K, "num_candidates": width}
    if option.endswith("+rescore"):
        knn["rescore_vector"] = {"oversample": 3.0}
    return {"size": K, "_source": False, "knn": knn}


async def load(dialect, raw: Raw, index: str, corpus: Corpus, size: int, vectors: np.ndarray) -> tuple[float, float]:
    """Bulk-load the vectors; (seconds to the last refresh, seconds the node merged after)."""
    t = time.perf_counter()
    for first in range(0, size, BLOCK):
        _, vecs = corpus.chunk_batch(first, min(BLOCK, size - first))
        vectors[first : first + len(vecs)] = vecs
        actions = [
            {"_index": index, "_id": str(first + i), "_source": {"embedding": v.tolist()}} for i, v in enumerate(vecs)
        ]
        half = len(actions) // 2
        outcomes = await asyncio.gather(dialect.transport.bulk(actions[:half]), dialect.transport.bulk(actions[half:]))
        for outcome in outcomes:
            outcome.raise_for_failures()
        await raw.request("POST", f"/{index}/_refresh")
    loaded = time.perf_counter() - t
    t = time.perf_counter()
    while (await raw.request("GET", f"/{index}/_stats/merge"))["_all"]["primaries"]["merges"]["current"]:
        await asyncio.sleep(0.2)
    return loaded, time.perf_counter() - t


async def run_option(args, engine: str, option: str, corpus: Corpus, queries: list[np.ndarray]) -> list[dict]:
    settings = ClientSettings(hosts=[args.url], timeout=600.0)
    dialect = make_dialect(engine, settings)
    raw = Raw(dialect)
    index = f"{args.prefix}-{option.replace('+', '-')}"
    try:
        body_settings = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}
        if engine == "opensearch":
            body_settings["knn"] = True
        body = {
            "settings": {"index": body_settings},
            "mappings": {"properties": {"embedding": mapping(engine, option, args.m, args.ef_construction)}},
        }
        await drop(raw, index)
        await raw.request("PUT", f"/{index}", body)
        vectors = np.zeros((args.size, DIMS), dtype=np.float32)
        loaded, merged = await load(dialect, raw, index, corpus, args.size, vectors)
        exact = rb.exact_top(vectors, np.stack(queries[rb.WARMUP :]))
        out = await sweep(args, engine, option, raw, index, queries, exact, loaded, merged)
        if args.force_merge:
            t = time.perf_counter()
            await raw.request("POST", f"/{index}/_forcemerge", params={"max_num_segments": 1})
            await raw.request("POST", f"/{index}/_refresh")
            out += await sweep(args, engine, option, raw, index, queries, exact, loaded, time.perf_counter() - t)
        return out
    finally:
        await drop(raw, index)
        await dialect.transport.close()


async def sweep(args, engine, option, raw, index, queries, exact, loaded, merged) -> list[dict]:
    """p50 and recall@10 at each search width, on the index as it is."""
    segments = (await raw.request("GET", f"/{index}/_stats/segments"))["_all"]["primaries"]["segments"]["count"]
    out = []
    for width in args.candidates:
        bodies = [query(engine, q.tolist(), width, option) for q in queries]

        async def op(b):
            return await raw.request("POST", f"/{index}/_search", b)

        await rb.timed(op, bodies[: rb.WARMUP])
        ms, ids = [], []
        for b in bodies[rb.WARMUP :]:
            t = time.perf_counter()
            resp = await op(b)
            ms.append((time.perf_counter() - t) * 1000)
            ids.append([int(h["_id"]) for h in resp["hits"]["hits"][:10]])
        recall = float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(ids, exact)]))
        out.append(
            {
                "engine": engine,
                "option": option,
                "size": args.size,
                "workload": args.workload,
                "m": args.m,
                "ef_construction": args.ef_construction,
                "width": width,
                "load_s": loaded,
                "merge_s": merged,
                "segments": segments,
                "p50_ms": rb.summarise(ms)["p50"],
                "recall_at_10": recall,
            }
        )
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


async def drop(raw: Raw, index: str) -> None:
    try:
        await raw.request("DELETE", f"/{index}")
    except Exception as exc:  # noqa: BLE001 - not there
        if getattr(exc, "status_code", None) != 404:
            raise


def table(results: list[dict]) -> str:
    from bench.common import table as render

    rows = [
        [
            f"{r['option']} (m {r['m']}, ef_construction {r['ef_construction']})",
            str(r["width"]),
            rb.fmt(r["load_s"]),
            rb.fmt(r["merge_s"]),
            str(r["segments"]),
            rb.fmt(r["p50_ms"]),
            rb.fmt(r["recall_at_10"], 3),
        ]
        for r in results
    ]
    r0 = results[0]
    head = [
        "option",
        "ef_search / num_candidates",
        "load s",
        "merging after (1 segment: force-merge) s",
        "segments",
        f"k-NN k {K} p50 ms",
        "recall@10",
    ]
    return render(
        head, rows, title=f"{r0['size']:,} vectors, workload {r0['workload']}, {r0['engine']} {r0.get('version', '')}"
    )


async def main_async(args) -> list[dict]:
    engine = await detect_engine(ClientSettings(hosts=[args.url]))
    options = [o for o in args.options.split(",") if o] if args.options else list(OPTIONS[engine])
    corpus = Corpus(args.workload)
    queries = [corpus.embed_text(q) for q in corpus.queries(rb.WARMUP + args.queries)]
    dialect = make_dialect(engine, ClientSettings(hosts=[args.url]))
    try:
        version = (await dialect.probe()).version
    finally:
        await dialect.transport.close()
    results = []
    for option in options:
        for r in await run_option(args, engine, option, corpus, queries):
            r["version"] = version
            results.append(r)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="the node to measure (a managed node of your own)")
    p.add_argument("--size", default="100k")
    p.add_argument("--workload", default="hash", choices=SHAPES)
    p.add_argument("--options", default="", help="index options (default: every one of the engine)")
    p.add_argument("--candidates", default="100,250,500", help="search widths at k 50")
    p.add_argument("--m", type=int, default=HNSW_M)
    p.add_argument("--ef-construction", type=int, default=HNSW_EF_CONSTRUCTION)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--force-merge", action="store_true", help="then force-merge to one segment and measure again")
    p.add_argument("--prefix", default="perf-vopt")
    p.add_argument("--json", default=str(RESULTS / "vector_options.json"))
    args = p.parse_args()
    args.size = rb.parse_size(args.size)
    args.candidates = [int(x) for x in args.candidates.split(",")]
    results = asyncio.run(main_async(args))
    print(table(results))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else []

    def key(r: dict) -> tuple:
        return (
            r["engine"],
            r.get("version"),
            r["option"],
            r["size"],
            r["workload"],
            r["m"],
            r["ef_construction"],
            r["width"],
        )

    out.write_text(json.dumps([r for r in previous if key(r) not in {key(x) for x in results}] + results, indent=1))


if __name__ == "__main__":
    main()
