"""What the one-version filter (reme_es/store/one_version.py, issue 39 item 5) costs a search.

    python -m bench.perf.visibility --url http://127.0.0.1:9200 [--queries 300]

Loads 300 files of 8 chunks (40 random words from 400, random 64-d vectors) into two workspaces of a new index set,
then runs each read with the filter off and on, alternating query by query so the machine's drift falls on both:
`keyword_search`, `vector_search` and hybrid `search` (limit 10), and ReMe's search step's pair (`ranked`, then
`shown` of the first 10, with and without the hit files' links). Prints per read the p50 wall time, the requests per
search and the share of searches that read file docs (the filter's `_mget`). The set is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import random
import statistics
import time
import uuid

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.options import IndexOptions
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with

one_version = importlib.import_module("reme_es.store.one_version")  # the module (the package re-exports its function)

DIMS, FILES, PER_FILE, LIMIT = 64, 300, 8, 10
rng = random.Random(7)
VOCAB = [f"w{i}" for i in range(400)]


def _vector() -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIMS)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def _files() -> list:
    files = []
    for f in range(FILES):
        path = f"daily/2026-05-{1 + f % 28:02d}/note-{f}.md"
        text = [" ".join(rng.choice(VOCAB) for _ in range(40)) for _ in range(PER_FILE)]
        files.append(file_with(path, [chunk(path, t, 1 + 3 * i, _vector()) for i, t in enumerate(text)]))
    return files


async def _ranked_shown(store, query: str, vector: list[float], links: bool):
    hits = (await store.ranked(query, vector, 5 * LIMIT)).hits[:LIMIT]
    return await store.shown(hits, [h.chunk.path for h in hits] if links else [])


async def main(url: str, queries: int) -> None:
    prefix = f"visbench-{uuid.uuid4().hex[:6]}"
    settings, options = ClientSettings([url]), IndexOptions(dims=DIMS)
    store = await open_store(settings, prefix, "auto", options, workspace="a", collapse=False)
    other = await open_store(settings, prefix, "auto", options, workspace="b")
    sent: list[str] = []
    request = store.port.transport.request

    async def counted(method, path, body=None, params=None):
        sent.append(path)
        return await request(method, path, body, params)

    store.port.transport.request = counted
    checked = one_version.shared_paths
    try:
        files = _files()
        for i in range(0, FILES, 50):
            await store.upsert(files[i : i + 50])
            await other.upsert(files[i : i + 50])
        asked = [(" ".join(rng.sample(VOCAB, 3)), _vector()) for _ in range(queries)]
        reads = {
            "keyword_search": lambda q, v: store.keyword_search(q, LIMIT),
            "vector_search": lambda q, v: store.vector_search(v, LIMIT, k=5 * LIMIT),
            "search (hybrid)": lambda q, v: store.search(q, v, LIMIT),
            "ranked + shown (links)": lambda q, v: _ranked_shown(store, q, v, True),
            "ranked + shown (no links)": lambda q, v: _ranked_shown(store, q, v, False),
        }
        for name, read in reads.items():
            for q, v in asked[:20]:
                await read(q, v)  # warm-up
            runs: dict[str, tuple[list[float], list[int], int]] = {"off": ([], [], 0), "on": ([], [], 0)}
            for q, v in asked:
                for label, shared in (("off", lambda keys: []), ("on", checked)):
                    one_version.shared_paths = shared
                    times, trips, mgets = runs[label]
                    sent.clear()
                    t = time.perf_counter()
                    await read(q, v)
                    times.append((time.perf_counter() - t) * 1000)
                    trips.append(len(sent))
                    runs[label] = (times, trips, mgets + any("files/_mget" in p for p in sent))
            one_version.shared_paths = checked
            (t_off, r_off, _), (t_on, r_on, m_on) = runs["off"], runs["on"]
            off, on = statistics.median(t_off), statistics.median(t_on)
            print(
                f"{name:26s} p50 off {off:6.2f} ms  on {on:6.2f} ms ({on - off:+.2f})  requests/search "
                f"{statistics.mean(r_off):.2f} -> {statistics.mean(r_on):.2f}  reading file docs: {m_on / queries:.0%}"
            )
    finally:
        one_version.shared_paths = checked
        await store.drop()
        await store.close()
        await other.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.queries))
