"""Vector index options by measurement (issue 20 item 4, issue 40 item 3): recall@10 and k-NN latency per index option
and search width, on one node, with the workload's vectors (bench/data/workloads.py).

    python -m bench.perf.vector_options --url http://127.0.0.1:9200 [--size 100k] [--workload hash]
                                        [--options none,sq,on_disk_4x] [--candidates 50,100,200,400,800]
                                        [--m 16] [--ef-construction 64] [--no-filter] [--oversample 3]

Every option gets its own index, holding the vector field (mapped as the shared engine settings map it,
`reme_es/engine_settings.json`, with the option applied) and the `workspace` keyword the store filters on. The vectors
of `--size` chunks are bulk-loaded into each (two concurrent streams, a refresh every 5,000 as the file store's load
makes segments) and the node is left to finish merging. Then `--queries` k-NN searches at k 50 (the depth ReMe's
search step asks a branch for) are sent at each search width (`ef_search` on OpenSearch, `num_candidates` on
Elasticsearch), ids only, with the workspace term filter inside the k-NN clause as the store sends it (`--no-filter`:
none). Every (option, width) pair gets each query in turn, the order rotating query by query, so load that comes and
goes falls on all alike: the p50s of one run are paired. Per option and width: wall p50 and p95 (after 20 warm-up
queries), the median server `took`, and recall@10 against the exact top 10 (numpy, cosine). The summary gives, per
option, the smallest width reaching `--target` recall, its p50, and the ratio of that p50 to the first option's.

Options (an option the node refuses, e.g. a faiss field on the managed node, is reported as refused):
  OpenSearch  `none`        lucene engine, float HNSW (the default mapping)
              `sq`          lucene scalar quantisation (`encoder: sq`, 7-bit, in memory, no rescoring)
              `on_disk_4x`  `mode: on_disk`, `compression_level: 4x` (lucene sq; rescored on the float vectors, k-NN
                            3.1+: oversample 1.0 by default)
              `faiss`, `faiss_fp16` (`encoder: sq` fp16), `faiss_on_disk_8x`, `faiss_on_disk_32x`: the faiss engine
                            (native HNSW; needs the k-NN plugin's native libraries, which the Maven Central zip, and so
                            the managed node, lacks: reme-es' k-NN guard refuses them there)
  Elasticsearch `hnsw` (float), `int8_hnsw`, `bbq_hnsw` (Elasticsearch 9's default for 384-d), `int4_hnsw`
  `+rescore`  suffix: the query rescores `--oversample` x k candidates on the float vectors (OpenSearch `rescore`,
              Elasticsearch `rescore_vector`)
  `@M/EFC`    suffix: HNSW m and ef_construction of that option (default `--m`, `--ef-construction`): `none@32/200`
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import sys
import time
from dataclasses import dataclass
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
WORKSPACE = "ws-bench"
OPTIONS = {
    "opensearch": ("none", "sq", "on_disk_4x", "faiss", "faiss_fp16", "faiss_on_disk_32x"),
    "elasticsearch": ("hnsw", "int8_hnsw", "int8_hnsw+rescore", "bbq_hnsw", "bbq_hnsw+rescore"),
}
# OpenSearch options: (engine, encoder, mode, compression_level)
OPENSEARCH = {
    "none": ("lucene", None, None, None),
    "sq": ("lucene", {"name": "sq"}, None, None),
    "on_disk_4x": ("lucene", None, "on_disk", "4x"),
    "faiss": ("faiss", None, None, None),
    "faiss_fp16": ("faiss", {"name": "sq", "parameters": {"type": "fp16"}}, None, None),
    "faiss_on_disk_8x": ("faiss", None, "on_disk", "8x"),
    "faiss_on_disk_32x": ("faiss", None, "on_disk", "32x"),
}
ELASTICSEARCH = ("hnsw", "int8_hnsw", "int4_hnsw", "bbq_hnsw")


@dataclass(frozen=True)
class Option:
    """One index option as named on the command line: `base[+rescore][@m/ef_construction]`."""

    name: str
    base: str
    rescore: bool
    m: int
    efc: int

    @classmethod
    def parse(cls, engine: str, text: str, m: int, efc: int) -> Option:
        spec, _, graph = text.partition("@")
        base, _, suffix = spec.partition("+")
        if suffix not in ("", "rescore"):
            raise SystemExit(f"unknown option suffix +{suffix} in {text!r}")
        known = OPENSEARCH if engine == "opensearch" else ELASTICSEARCH
        if base not in known:
            raise SystemExit(f"unknown {engine} option {base!r}; known: {', '.join(known)}")
        if graph:
            m_text, _, efc_text = graph.partition("/")
            m, efc = int(m_text), int(efc_text or efc)
        return cls(text, base, bool(suffix), m, efc)

    @property
    def index_suffix(self) -> str:
        return self.name.replace("+", "-").replace("@", "-m").replace("/", "-")


def mapping(engine: str, option: Option) -> dict:
    """The shared vector mapping with one option applied."""
    spec = copy.deepcopy(vector_mapping(engine, DIMS, option.m, option.efc))
    if engine == "opensearch":
        kind, encoder, mode, compression = OPENSEARCH[option.base]
        spec["method"]["engine"] = kind
        if encoder is not None:
            spec["method"]["parameters"]["encoder"] = encoder
        if mode is not None:
            spec["mode"], spec["compression_level"] = mode, compression
    else:
        spec["index_options"]["type"] = option.base
    return spec


def query(engine: str, vector: list[float], width: int, option: Option, oversample: float, filtered: bool) -> dict:
    """A k-NN search at k 50 and this width, ids only; the workspace term filter inside the k-NN clause."""
    term = {"bool": {"filter": [{"term": {"workspace": WORKSPACE}}]}}
    if engine == "opensearch":
        clause: dict = {"vector": vector, "k": K, "method_parameters": {"ef_search": width}}
        if option.rescore:
            clause["rescore"] = {"oversample_factor": oversample}
        if filtered:
            clause["filter"] = term
        return {"size": K, "_source": False, "track_total_hits": False, "query": {"knn": {"embedding": clause}}}
    knn: dict = {"field": "embedding", "query_vector": vector, "k": K, "num_candidates": max(width, K)}
    if option.rescore:
        knn["rescore_vector"] = {"oversample": oversample}
    if filtered:
        knn["filter"] = term
    return {"size": K, "_source": False, "track_total_hits": False, "knn": knn}


async def load(dialect, raw: Raw, index: str, vectors: np.ndarray) -> tuple[float, float]:
    """Bulk-load the vectors; (seconds to the last refresh, seconds the node merged after)."""
    t = time.perf_counter()
    for first in range(0, len(vectors), BLOCK):
        block = vectors[first : first + BLOCK]
        actions = [
            {"_index": index, "_id": str(first + i), "_source": {"workspace": WORKSPACE, "embedding": v.tolist()}}
            for i, v in enumerate(block)
        ]
        half = len(actions) // 2
        outcomes = await asyncio.gather(dialect.transport.bulk(actions[:half]), dialect.transport.bulk(actions[half:]))
        for outcome in outcomes:
            outcome.raise_for_failures()
        await raw.request("POST", f"/{index}/_refresh")
    loaded = time.perf_counter() - t
    return loaded, await settle(raw, index)


async def settle(raw: Raw, index: str) -> float:
    """Seconds until the index runs no merge."""
    t = time.perf_counter()
    while (await raw.request("GET", f"/{index}/_stats/merge"))["_all"]["primaries"]["merges"]["current"]:
        await asyncio.sleep(0.2)
    return time.perf_counter() - t


async def create(raw: Raw, engine: str, index: str, option: Option) -> str | None:
    """Create the option's index; None, or why the node refused it."""
    settings = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}
    if engine == "opensearch":
        settings["knn"] = True
    body = {
        "settings": {"index": settings},
        "mappings": {"properties": {"workspace": {"type": "keyword"}, "embedding": mapping(engine, option)}},
    }
    await drop(raw, index)
    try:
        await raw.request("PUT", f"/{index}", body)
    except Exception as exc:  # noqa: BLE001 - a refused mapping is a result
        status = getattr(exc, "status_code", None)
        if status is None or status >= 500:
            raise
        return f"refused ({status}): {reason(exc)}"
    return None


def reason(exc: Exception) -> str:
    """The node's reason for refusing a request, in one line."""
    info = getattr(exc, "info", None) or getattr(exc, "body", None)
    if isinstance(info, dict):
        error = info.get("error", {})
        if isinstance(error, dict):
            return str(error.get("reason", error))[:300]
    return str(exc)[:300]


async def drop(raw: Raw, index: str) -> None:
    try:
        await raw.request("DELETE", f"/{index}")
    except Exception as exc:  # noqa: BLE001 - not there
        if getattr(exc, "status_code", None) != 404:
            raise


async def sweep(args, engine: str, raw: Raw, ready: dict, queries: list[np.ndarray], exact) -> list[dict]:
    """Every query against every (option, width) in turn, rotating the order query by query, so load that comes and
    goes falls on all of them alike; per option and width: p50, took and recall@10."""
    combos = [(name, width) for width in args.candidates for name in ready]
    ms: dict[tuple, list[float]] = {c: [] for c in combos}
    took: dict[tuple, list[float]] = {c: [] for c in combos}
    ids: dict[tuple, list[list[int]]] = {c: [] for c in combos}
    for n_query, vector in enumerate(queries):
        shift = n_query % len(combos)
        for name, width in combos[shift:] + combos[:shift]:
            body = query(engine, vector.tolist(), width, ready[name]["option"], args.oversample, args.filter)
            t = time.perf_counter()
            resp = await raw.request("POST", f"/{ready[name]['index']}/_search", body)
            elapsed = (time.perf_counter() - t) * 1000
            if n_query >= rb.WARMUP:
                ms[(name, width)].append(elapsed)
                took[(name, width)].append(float(resp.get("took", 0)))
                ids[(name, width)].append([int(h["_id"]) for h in resp["hits"]["hits"][:10]])
    out = []
    for name, width in combos:
        info = ready[name]
        found = ids[(name, width)]
        summary = rb.summarise(ms[(name, width)])
        row = {
            **base_row(args, engine, info["option"]),
            "width": width,
            "load_s": info["load_s"],
            "merge_s": info["merge_s"],
            "segments": info["segments"],
            "p50_ms": summary["p50"],
            "p95_ms": summary["p95"],
            "took_p50_ms": statistics.median(took[(name, width)]),
            "recall_at_10": float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(found, exact)])),
            "merged": info.get("merged", False),
        }
        out.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return out


def base_row(args, engine: str, option: Option) -> dict:
    return {
        "engine": engine,
        "option": option.name,
        "size": args.size,
        "workload": args.workload,
        "filtered": args.filter,
        "m": option.m,
        "ef_construction": option.efc,
        "oversample": args.oversample if option.rescore else None,
    }


def table(results: list[dict]) -> str:
    from bench.common import table as render

    rows = [
        [
            f"{r['option']} (m {r['m']}, ef_construction {r['ef_construction']}){' 1 segment' if r['merged'] else ''}",
            str(r["width"]),
            rb.fmt(r["load_s"]),
            rb.fmt(r["merge_s"]),
            str(r["segments"]),
            rb.fmt(r["p50_ms"]),
            rb.fmt(r["took_p50_ms"]),
            rb.fmt(r["recall_at_10"], 3),
        ]
        for r in results
        if "error" not in r
    ]
    r0 = results[0]
    head = [
        "option",
        "ef_search / num_candidates",
        "load s",
        "merging after (1 segment: force-merge) s",
        "segments",
        f"k-NN k {K} p50 ms",
        "took p50 ms",
        "recall@10",
    ]
    title = (
        f"{r0['size']:,} vectors, workload {r0['workload']}, {r0['engine']} {r0.get('version', '')}"
        f"{', workspace filter in the k-NN clause' if r0['filtered'] else ', no filter'}"
    )
    out = render(head, rows, title=title) if rows else ""
    refused = [f"- {r['option']}: {r['error']}" for r in results if "error" in r]
    return out + ("\n\nnot measured:\n" + "\n".join(refused) if refused else "")


def best(results: list[dict], target: float) -> list[dict]:
    """Per option (and index state), the smallest width whose recall@10 reaches the target (else the best recall)."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if "error" not in r:
            groups.setdefault((r["option"], r["merged"]), []).append(r)
    out = []
    for rows in groups.values():
        hit = [r for r in rows if r["recall_at_10"] >= target]
        pick = min(hit, key=lambda r: r["width"]) if hit else max(rows, key=lambda r: (r["recall_at_10"], -r["width"]))
        out.append({**pick, "reached": bool(hit)})
    return out


def summary(results: list[dict], target: float) -> str:
    from bench.common import table as render

    picks = best(results, target)
    if not picks:
        return ""
    ref = picks[0]["p50_ms"]
    rows = [
        [
            p["option"] + (" 1 segment" if p["merged"] else ""),
            str(p["width"]) + ("" if p["reached"] else " (not reached: best)"),
            rb.fmt(p["recall_at_10"], 3),
            rb.fmt(p["p50_ms"]),
            rb.fmt(p["took_p50_ms"]),
            rb.fmt(p["p50_ms"] / ref, 2) if ref else "-",
        ]
        for p in picks
    ]
    head = ["option", f"smallest width to recall@10 {target}", "recall@10", "p50 ms", "took p50 ms", "p50 / first"]
    return render(head, rows, title=f"per option: the smallest width reaching recall@10 {target}")


async def main_async(args) -> list[dict]:
    engine = await detect_engine(ClientSettings(hosts=[args.url]))
    names = [o for o in args.options.split(",") if o] if args.options else list(OPTIONS[engine])
    options = [Option.parse(engine, n, args.m, args.ef_construction) for n in names]
    corpus = Corpus(args.workload)
    queries = [corpus.embed_text(q) for q in corpus.queries(rb.WARMUP + args.queries)]
    vectors = np.zeros((args.size, DIMS), dtype=np.float32)
    for first in range(0, args.size, BLOCK):
        _, vecs = corpus.chunk_batch(first, min(BLOCK, args.size - first))
        vectors[first : first + len(vecs)] = vecs
    exact = rb.exact_top(vectors, np.stack(queries[rb.WARMUP :]))
    dialect = make_dialect(engine, ClientSettings(hosts=[args.url], timeout=600.0))
    raw = Raw(dialect)
    results: list[dict] = []
    ready: dict[str, dict] = {}
    try:
        version = (await dialect.probe()).version
        for option in options:
            index = f"{args.prefix}-{option.index_suffix}"
            refused = await create(raw, engine, index, option)
            if refused:
                print(f"{option.name}: {refused}", file=sys.stderr, flush=True)
                results.append({**base_row(args, engine, option), "error": refused})
                continue
            loaded, merged = await load(dialect, raw, index, vectors)
            ready[option.name] = {"option": option, "index": index, "load_s": loaded, "merge_s": merged}
        for info in ready.values():
            info["segments"] = await segments(raw, info["index"])
        if ready:
            results += await sweep(args, engine, raw, ready, queries, exact)
        if ready and args.force_merge:
            for info in ready.values():
                t = time.perf_counter()
                await raw.request("POST", f"/{info['index']}/_forcemerge", params={"max_num_segments": 1})
                await raw.request("POST", f"/{info['index']}/_refresh")
                info["merge_s"], info["merged"] = time.perf_counter() - t, True
                info["segments"] = await segments(raw, info["index"])
            results += await sweep(args, engine, raw, ready, queries, exact)
    finally:
        if not args.keep:
            for info in ready.values():
                await drop(raw, info["index"])
        await dialect.transport.close()
    for r in results:
        r["version"] = version
    return results


async def segments(raw: Raw, index: str) -> int:
    return (await raw.request("GET", f"/{index}/_stats/segments"))["_all"]["primaries"]["segments"]["count"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="the node to measure (a managed node of your own)")
    p.add_argument("--size", default="100k")
    p.add_argument("--workload", default="hash", choices=SHAPES)
    p.add_argument("--options", default="", help="index options, comma-separated (default: every one of the engine)")
    p.add_argument("--candidates", default="50,100,200,400,800,1600", help="search widths at k 50")
    p.add_argument("--m", type=int, default=HNSW_M)
    p.add_argument("--ef-construction", type=int, default=HNSW_EF_CONSTRUCTION)
    p.add_argument("--oversample", type=float, default=3.0, help="rescore oversample of the `+rescore` options")
    p.add_argument("--no-filter", dest="filter", action="store_false", help="no workspace filter in the k-NN clause")
    p.add_argument("--target", type=float, default=0.97, help="the recall@10 the summary looks for")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--force-merge", action="store_true", help="then force-merge to one segment and measure again")
    p.add_argument("--keep", action="store_true", help="keep the indices afterwards")
    p.add_argument("--prefix", default="perf-vopt")
    p.add_argument("--json", default=str(RESULTS / "vector_options.json"))
    args = p.parse_args()
    args.size = rb.parse_size(args.size)
    args.candidates = [int(x) for x in args.candidates.split(",")]
    results = asyncio.run(main_async(args))
    print(table(results))
    print(summary(results, args.target))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else []

    def key(r: dict) -> tuple:
        return tuple(
            r.get(name)
            for name in ("engine", "version", "option", "size", "workload", "filtered", "m", "ef_construction")
        ) + (r.get("width"), r.get("merged"), r.get("oversample"))

    fresh = {key(x) for x in results}
    out.write_text(json.dumps([r for r in previous if key(r) not in fresh] + results, indent=1))


if __name__ == "__main__":
    main()
