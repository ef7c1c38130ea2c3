"""A ReMe Application on reme-es (or on ReMe's own faiss store) loaded with the synthetic workload, kept between runs:
the setup of bench/perf/search_cost.py's breakdown, cpu and trips meters.

Each workspace lives in a fixed folder (`<tmp>/<prefix>-<size>-w<n>`), so its workspace key (and its documents in
the shared set) are the same on every run and `--reuse` can skip the ingest of a set loaded before.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bench.compare.reme_app import FLAVOURS, JOB_LIMIT, LIMIT, app_config, file_store, make_app, set_corpus, settle
from bench.data.workloads import Corpus, file_batches

SIZES = {"quick": [2_000], "full": [10_000, 100_000]}


def parse_size(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * mult)


async def engine_label(url: str) -> str:
    """The bench's backend label for the node at `url` (opensearch-3 or elasticsearch-9: only the engine matters)."""
    from reme_es.adapters.dialect import ClientSettings
    from reme_es.store.connect import detect_engine

    engine = await detect_engine(ClientSettings(hosts=[url]))
    return "elasticsearch-9" if engine == "elasticsearch" else "opensearch-3"


def folder(prefix: str, size: int, n: int) -> Path:
    return Path(tempfile.gettempdir()) / f"{prefix}-{size}-w{n}"


async def open_app(backend: str, url: str | None, prefix: str, size: int, n: int = 0):
    """ReMe's Application for workspace `n` of the set `prefix` (faiss: its own folder)."""
    ws = folder(prefix, size, n) / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    app = make_app(app_config(ws, backend, url, prefix))
    await app.start()
    return app


async def chunk_count(fs) -> int:
    """Chunks of this workspace already in the set (0 on a new one)."""
    await fs.refresh_counts()
    return int(fs.counts.get("chunks", 0))


async def load(app, backend: str, corpus: Corpus, size: int, reuse: bool) -> float:
    """Upsert `size` chunks of the workload unless `reuse` finds them there; seconds spent (0 when reused)."""
    fs = file_store(app)
    if reuse and backend in FLAVOURS and await chunk_count(fs) == size:
        return 0.0
    if backend in FLAVOURS:
        await fs.clear()
    t = time.perf_counter()
    for files in file_batches(corpus, size):
        await fs.upsert(files)
    await fs.dump()
    if backend in FLAVOURS:
        await settle(fs)
    return time.perf_counter() - t


def ops(app, backend: str) -> dict:
    """The call kinds measured, each a coroutine function of a query, through ReMe's interface; the search job is
    reme-es' `es_search_step` on reme-es and ReMe's own step on its stores."""
    fs = file_store(app)
    job = "search_es" if backend in FLAVOURS else "search"
    return {
        "keyword": lambda q: fs.keyword_search(q, LIMIT, {}),
        "vector": lambda q: fs.vector_search(q, LIMIT, {}),
        "hybrid": lambda q: asyncio.gather(fs.vector_search(q, LIMIT, {}), fs.keyword_search(q, LIMIT, {})),
        "search job": lambda q: app.run_job(job, query=q, limit=JOB_LIMIT),
    }


__all__ = [
    "FLAVOURS",
    "SIZES",
    "Corpus",
    "chunk_count",
    "engine_label",
    "file_store",
    "load",
    "open_app",
    "ops",
    "parse_size",
    "set_corpus",
]
