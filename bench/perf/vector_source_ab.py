"""Two chunk-index layouts on one OpenSearch node, side by side: the one before the performance round of issue 13
(vector in the stored `_source`, ef_construction 100, k-NN with `k` alone) and today's (k-NN derived source,
ef_construction 64, 5k candidates).

    python -m bench.perf.vector_source_ab [--url http://127.0.0.1:9200] [--size 30000]

Both indices are loaded at the same time with the bench workspace of reme_backends.py (raw `_bulk`, 1,000 chunks
per request), then every query goes to both, alternating which goes first, so the two sides share the node's
load. Prints load seconds, wall p50 (server `took` p50) of 50-hit searches with sources, and the index sizes.
Indices are named `perf-abq-*` and dropped at the end.
"""

import argparse
import asyncio
import time

import numpy as np
import orjson

from bench.common import Raw, drop_prefix
from bench.compare import reme_backends as rb
from bench.data.workloads import file_path
from reme_es.adapters.dialect import ClientSettings
from reme_es.store.connect import make_dialect


async def main(url: str, n: int) -> None:
    URL, N = url, n
    c = rb.Corpus()
    d = make_dialect("opensearch", ClientSettings(hosts=[URL], timeout=600))
    raw = Raw(d)

    def vec(efc):
        return {
            "type": "knn_vector",
            "dimension": 384,
            "method": {
                "name": "hnsw",
                "engine": "lucene",
                "space_type": "cosinesimil",
                "parameters": {"m": 16, "ef_construction": efc},
            },
        }

    st = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1", "knn": True}
    layouts = {"before": ({**st}, vec(100), None), "after": ({**st, "knn.derived_source.enabled": True}, vec(64), 250)}
    await drop_prefix(raw, "perf-abq")  # what a killed earlier run left
    for name, (s, v, _) in layouts.items():
        await raw.request(
            "PUT",
            f"/perf-abq-{name}",
            {
                "settings": {"index": s},
                "mappings": {
                    "properties": {
                        "chunk_id": {"type": "keyword"},
                        "path": {"type": "keyword"},
                        "date": {"type": "date"},
                        "text": {"type": "text", "analyzer": "english"},
                        "embedding": v,
                    }
                },
            },
        )

    async def load(name):
        t = time.perf_counter()
        for first in range(0, N, 1000):
            texts, vecs = c.chunk_batch(first, 1000)
            lines = []
            for i, (tx, v) in enumerate(zip(texts, vecs)):
                p = file_path((first + i) // 10)
                lines.append(orjson.dumps({"index": {"_index": f"perf-abq-{name}", "_id": str(first + i)}}))
                lines.append(
                    orjson.dumps(
                        {
                            "chunk_id": f"chunk-{first + i:08d}",
                            "path": p,
                            "date": p.split("/")[1],
                            "text": tx,
                            "embedding": v.astype(np.float16).astype(np.float32).tolist(),
                        }
                    )
                )
            r = await raw.request("POST", "/_bulk", b"\n".join(lines) + b"\n")
            assert not r["errors"]
        await raw.request("POST", f"/perf-abq-{name}/_refresh")
        return time.perf_counter() - t

    loads = await asyncio.gather(load("before"), load("after"))
    print(f"N={N} loaded at once: before {loads[0]:.0f} s, after {loads[1]:.0f} s", flush=True)
    qs = c.queries(85)
    flt = [{"range": {"date": {"gte": "2026-03-01", "lte": "2026-03-31"}}}]

    def body(mode, q, ef):
        v = c.embed_text(q).tolist()
        src = {"excludes": ["embedding"]}
        if mode == "keyword":
            return {"size": 50, "query": {"match": {"text": q}}, "_source": src}
        if mode == "keyword filtered":
            return {"size": 50, "query": {"bool": {"must": [{"match": {"text": q}}], "filter": flt}}, "_source": src}
        cl = {"vector": v, "k": 50}
        if ef:
            cl["method_parameters"] = {"ef_search": ef}
        if mode == "vector filtered":
            cl["filter"] = {"bool": {"filter": flt}}
        return {"size": 50, "query": {"knn": {"embedding": cl}}, "_source": src}

    for mode in ("keyword", "vector", "keyword filtered", "vector filtered"):
        wall = {"before": [], "after": []}
        took = {"before": [], "after": []}
        for i, q in enumerate(qs):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for name in order:
                t = time.perf_counter()
                r = await raw.request("POST", f"/perf-abq-{name}/_search", body(mode, q, layouts[name][2]))
                if i >= 5:
                    wall[name].append((time.perf_counter() - t) * 1000)
                    took[name].append(r["took"])
        print(
            f"{mode}: before p50 {np.median(wall['before']):.1f} ms (took {np.median(took['before']):.0f}), "
            f"after p50 {np.median(wall['after']):.1f} ms (took {np.median(took['after']):.0f})",
            flush=True,
        )
    for name in layouts:
        sz = (await raw.request("GET", f"/perf-abq-{name}/_stats/store"))["_all"]["primaries"]["store"][
            "size_in_bytes"
        ] >> 20
        print(f"{name}: store {sz} MiB", flush=True)
        await raw.request("DELETE", f"/perf-abq-{name}")
    await d.transport.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--size", type=int, default=30_000)
    a = p.parse_args()
    asyncio.run(main(a.url, a.size))
