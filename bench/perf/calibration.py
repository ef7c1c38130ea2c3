"""k-NN width calibration (issue 40): recall@10 at the callers' depth (50 for limit 10) with today's width rule and
with the width calibrated on the index, per data shape and size, on the ReMe store (reme_es), plus what the
calibration cost (seconds, requests). Held-out queries are not stored vectors; their exact neighbours are computed
here by brute force (numpy), independently of the node.

    .venv/bin/python -m bench.perf.calibration --url http://127.0.0.1:9431 --sizes 10000 --shapes zipf-hash,clustered

Recall figures do not depend on the CPU; seconds do (medians of one run on a shared 2-core machine: noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np

from reme_es.adapters.dialect import ClientSettings, knn_candidates
from reme_es.core.options import IndexOptions
from reme_es.store.calibration import RULE
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with
from reme_es.testing.shapes import SHAPES

PER_FILE, FILES_PER_UPSERT = 50, 100


async def load(store, vectors: list[list[float]]) -> list[str]:
    """Write the vectors as chunks (PER_FILE per file); returns the chunk ids in vector order."""
    ids: list[str] = []
    batch = []
    for f in range(0, len(vectors), PER_FILE):
        path = f"shape/{f // PER_FILE:06d}.md"
        chunks = [
            chunk(path, f"v{i}", start=2 * (i - f) + 1, vector=vectors[i])
            for i in range(f, min(f + PER_FILE, len(vectors)))
        ]
        ids += [c.id for c in chunks]
        batch.append(file_with(path, chunks))
        if len(batch) >= FILES_PER_UPSERT:
            await store.upsert(batch)
            batch = []
    if batch:
        await store.upsert(batch)
    await store.refresh()
    return ids


def truth(vectors: np.ndarray, queries: np.ndarray, at: int) -> list[set[int]]:
    """Per query, the indices whose cosine ties or beats the at-th best (vectors are unit length)."""
    scores = queries @ vectors.T
    out = []
    for row in scores:
        kth = np.partition(row, -at)[-at]
        out.append(set(np.nonzero(row >= kth - 1e-6)[0].tolist()))
    return out


async def held_out_recall(
    store, queries, good: list[set[int]], index_of: dict[str, int], at: int, depth: int
) -> tuple[float, float]:
    """Mean recall@at of the store's vector search at the callers' depth, and the median wall ms of one search."""
    found, ms = [], []
    for q, g in zip(queries, good):
        t = time.perf_counter()
        hits = await store.vector_search(q, at, k=depth)
        ms.append((time.perf_counter() - t) * 1000)
        found.append(sum(1 for h in hits[:at] if index_of.get(h.chunk.id) in g) / at)
    return float(np.mean(found)), float(np.median(ms))


async def one(url: str, engine: str, shape_name: str, n: int, keep: bool) -> dict:
    shape = SHAPES[shape_name](n, queries=200)
    dims = len(shape.vectors[0])
    prefix = f"calbench-{shape_name}-{n}"
    store = await open_store(ClientSettings([url]), prefix, engine, IndexOptions(dims=dims))
    try:
        if await store.inspect.count("chunks") < n:
            await store.drop()
            await store.close()
            store = await open_store(ClientSettings([url]), prefix, engine, IndexOptions(dims=dims))
            t = time.perf_counter()
            ids = await load(store, shape.vectors)
            load_s = time.perf_counter() - t
        else:
            ids = [chunk(f"shape/{i // PER_FILE:06d}.md", f"v{i}", start=2 * (i % PER_FILE) + 1).id for i in range(n)]
            load_s = 0.0
        index_of = {cid: i for i, cid in enumerate(ids)}
        at, depth = RULE["at"], RULE["depth"]
        good = truth(np.asarray(shape.vectors), np.asarray(shape.queries), at)
        store.indices.knn_calibration = None  # today's rule
        before, before_ms = await held_out_recall(store, shape.queries, good, index_of, at, depth)
        stats = await store.admin.stats()
        record = await store.admin.calibrate()
        after, after_ms = await held_out_recall(store, shape.queries, good, index_of, at, depth)
        return {
            "engine": engine,
            "shape": shape_name,
            "n": n,
            "segments": stats["chunks"]["segments"],
            "load_s": round(load_s, 1),
            "old_width": knn_candidates(depth),
            "old_recall": round(before, 3),
            "old_ms": round(before_ms, 1),
            "width": record.width,
            "probe_recall": round(record.recall, 3),
            "stopped": record.stopped,
            "reference": record.reference,
            "recall": round(after, 3),
            "ms": round(after_ms, 1),
            "cal_s": record.seconds,
            "cal_requests": record.requests,
            "steps": [[s.width, round(s.recall, 3)] for s in record.steps],
        }
    finally:
        if not keep:
            await store.drop()
        await store.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", action="append", required=True, help="engine=url or url (OpenSearch), repeatable")
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--keep", action="store_true", help="keep the indices (a second run reuses them)")
    a = ap.parse_args()
    for spec in a.url:
        engine, url = spec.split("=", 1) if "=" in spec else ("opensearch", spec)
        for n in [int(s) for s in a.sizes.split(",")]:
            for shape in a.shapes.split(","):
                print(json.dumps(await one(url, engine, shape, n, a.keep)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
