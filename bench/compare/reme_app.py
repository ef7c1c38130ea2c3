"""The worker side of bench/compare/reme_backends.py: its constants, ReMe's Application with the bench's fake
embedding model, and one backend measured at one size (`run_worker`, run in its own process).
bench/perf/concurrency.py and bench/perf/settle.py use the same pieces.
"""

from __future__ import annotations

import asyncio
import resource
import shutil
import threading
import time
from pathlib import Path

import numpy as np

from bench.data.workloads import DIMS, PER_FILE, Corpus, chunk_id, file_batches, file_path

REME_STORES = ("local", "faiss", "zvec")
FLAVOURS = ("opensearch-2.19", "opensearch-3", "elasticsearch-9")
BACKENDS = REME_STORES + FLAVOURS
LABELS = {
    "local": "ReMe local",
    "faiss": "ReMe faiss",
    "zvec": "ReMe zvec",
    "opensearch-2.19": "reme-es, OpenSearch 2.19",
    "opensearch-3": "reme-es, OpenSearch 3",
    "elasticsearch-9": "reme-es, Elasticsearch 9",
}
PORTS = {"opensearch-2.19": 9281, "opensearch-3": 9282, "elasticsearch-9": 9283}
REUPSERT_FILES = 100
LIMIT = 50  # ReMe's search step: min(200, limit x 5) candidates per branch at the default limit 10
JOB_LIMIT = 10
WARMUP = 20  # a node just started answers its first queries slowly (JIT): 5 left the 10k rows above the 100k ones
MONTH = {"start_date": "2026-03-01", "end_date": "2026-03-31"}
MODES = ("keyword", "vector", "hybrid", "keyword filtered", "vector filtered", "search job")
PREFIX = "perf-bench"
WATCHERS = [
    "index_update_loop",
    "resource_watch_loop",
    "digest_watch_loop",
    "dream_cron",
    "proactive_refresh_cron",
    "optimize_index_cron",
]


# ------------------------------------------------------------------------------------ ReMe application


def app_config(ws: Path, backend: str, url: str | None, prefix: str, refresh_after: float | None = None) -> dict:
    from reme.config import resolve_app_config

    store: dict = {"backend": backend, "embedding_store": "default"}
    if backend in FLAVOURS:
        store = {
            "backend": "elasticsearch" if backend.startswith("elasticsearch") else "opensearch",
            "embedding_store": "default",
            "hosts": url,
            "index_prefix": prefix,
        }
        if refresh_after is not None:
            store["refresh_after"] = refresh_after
    jobs: dict = {name: {"enabled": False} for name in WATCHERS}
    if backend in FLAVOURS:  # the same job answered by the reme-es step (one hybrid request, links in two)
        jobs["search_es"] = {"backend": "base", "steps": [{"backend": "es_search_step"}]}
    return resolve_app_config(
        log_config=False,
        workspace_dir=str(ws),
        enable_logo=False,
        log_to_file=False,
        log_to_console=False,
        plugins=["reme-es"],
        components={
            "as_embedding": {"default": {"backend": "bench-bow", "dimensions": DIMS}},
            "embedding_store": {"default": {"backend": "local", "as_embedding": "default", "enable_cache": False}},
            "file_store": {"default": store},
        },
        jobs=jobs,
    )


_CORPUS: Corpus | None = None


def set_corpus(corpus: Corpus) -> Corpus:
    """The corpus the fake embedding model embeds with (one per process)."""
    global _CORPUS
    _CORPUS = corpus
    return corpus


def make_app(cfg: dict):
    from reme.application import Application
    from reme.components.as_embedding import BaseAsEmbedding
    from reme.components.component_registry import R

    class BowAsEmbedding(BaseAsEmbedding):
        """The bench's fake embedding model: the corpus' weighted bag of words (deterministic, offline)."""

        def initialize_model(self) -> None:
            """Nothing to construct: the corpus holds the word vectors."""

        async def __call__(self, inputs, **kwargs):
            """Embed each input."""
            return [_CORPUS.embed_text(str(t)).tolist() for t in inputs]

    with R.preserve(allow_mutation=True):
        if R.get("as_embedding", "bench-bow") is None:
            R.register(BowAsEmbedding, "bench-bow")
        return Application(**cfg)


def file_store(app):
    return app.context.components["file_store"]["default"]


def rss_mib() -> float:
    """Peak RSS of this process (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class AnonPeak:
    """The largest anonymous RSS of this process (`RssAnon`, MiB), sampled every 0.1 s on a thread: the client's
    own memory (the store's index, caches, the Python heap) without file-backed pages, i.e. without the bench's
    memory-mapped copy of every vector (1.5 KiB a chunk), which peak RSS includes."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="anon-rss", daemon=True)
        self._thread.start()

    @staticmethod
    def now() -> float:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self.now())

    def stop(self) -> float:
        """Stop sampling; the peak seen (one last sample included)."""
        self._stop.set()
        self._thread.join()
        return max(self.peak, self.now())


# ------------------------------------------------------------------------------------ worker (one backend)


async def upsert_all(fs, corpus: Corpus, size: int, vectors_out: np.memmap) -> tuple[float, float]:
    """Upsert `size` chunks in calls of `corpus.files_per_call` files, then `dump()` once, as ReMe's index step does
    after its batches (the in-process stores persist then; reme-es makes the writes searchable). Returns the seconds
    spent in `upsert` and in `dump`."""
    spent = 0.0
    for files in file_batches(corpus, size, vectors_out):
        t = time.perf_counter()
        await fs.upsert(files)
        spent += time.perf_counter() - t
    t = time.perf_counter()
    await fs.dump()
    return spent, time.perf_counter() - t


async def settle(fs) -> float:
    """reme-es: wait until the node runs no merge on the chunks index and the file store has measured its k-NN width
    when due (`reme_es.reme.width`: it starts once the merges are done), then until its optimize job has merged the
    index and measured the width again when due (`reme_es.reme.optimize`: it starts once the store has been idle for
    `optimize_job.idle_s`), so queries are measured on the index as it stays, at the width its searches keep. The
    seconds of work: the wait for merges and the first calibration, plus the job's merge and calibration (not the idle
    time before the job starts, when searches run as fast as before it; `fs.optimizer.last` has what it did)."""
    from bench.common import Raw

    raw, t = Raw(fs.store.dialect), time.perf_counter()
    while True:
        stats = await raw.request("GET", f"/{fs.store.index('chunks')}/_stats/merge")
        if stats["_all"]["primaries"]["merges"]["current"] == 0:
            await fs.knn_width.wait()
            break
        await asyncio.sleep(0.2)
    waited = time.perf_counter() - t
    optimizer = getattr(fs, "optimizer", None)
    if optimizer is not None and optimizer.enabled:
        await optimizer.wait()
        if (job := optimizer.last) is not None:
            waited += job["seconds"] + ((job.get("knn_width") or {}).get("seconds") or 0.0)
    return waited


async def reupsert_unchanged(fs, corpus: Corpus, files: int = REUPSERT_FILES) -> float:
    """Upsert the first `files` files again with the same chunks, as ReMe's chunker hands them over (no vectors) after
    a file was touched: seconds. Every store should keep what it has (ReMe's reuse cached vectors)."""
    from reme.schema import FileChunk, FileNode

    n = files * PER_FILE
    texts, _ = corpus.chunk_batch(0, n)
    batch = []
    for fid in range(files):
        path = file_path(fid)
        chunks = [
            FileChunk(
                id=chunk_id(fid * PER_FILE + j),
                path=path,
                start_line=j * 10 + 1,
                end_line=j * 10 + 10,
                text=texts[fid * PER_FILE + j],
            )
            for j in range(PER_FILE)
        ]
        batch.append((FileNode(path=path, st_mtime=1_790_000_000.0 + fid, chunk_ids=[c.id for c in chunks]), chunks))
    t = time.perf_counter()
    await fs.upsert(batch)
    return time.perf_counter() - t


def exact_top(vectors: np.memmap, qvecs: np.ndarray, k: int = 10, block: int = 50_000) -> list[list[int]]:
    """The exact top k rows by cosine (vectors are unit length) for each query, scanning in blocks."""
    q = qvecs / np.maximum(np.linalg.norm(qvecs, axis=1, keepdims=True), 1e-12)
    best_s = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(q), k), dtype=np.int64)
    for start in range(0, len(vectors), block):
        part = np.asarray(vectors[start : start + block], dtype=np.float32)
        s = q @ part.T
        s_all = np.concatenate([best_s, s], axis=1)
        i_all = np.concatenate([best_i, np.arange(start, start + len(part))[None, :].repeat(len(q), 0)], axis=1)
        top = np.argsort(-s_all, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(s_all, top, 1), np.take_along_axis(i_all, top, 1)
    return best_i.tolist()


def summarise(ms: list[float]) -> dict:
    from bench.common import percentile

    return {"p50": percentile(ms, 50), "p95": percentile(ms, 95), "n": len(ms)}


async def timed(op, items) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        await op(item)
        out.append((time.perf_counter() - t) * 1000)
    return out


async def timed_pair(op_a, op_b, items) -> tuple[list[float], list[float]]:
    """Both ops on each item, alternating which goes first, so node load and caches fall on both alike."""
    a, b = [], []
    for n, item in enumerate(items):
        order = ((op_a, a), (op_b, b)) if n % 2 == 0 else ((op_b, b), (op_a, a))
        for op, out in order:
            t = time.perf_counter()
            await op(item)
            out.append((time.perf_counter() - t) * 1000)
    return a, b


def raw_ops(fs, corpus: Corpus, queries: list[str]) -> dict:
    """The same keyword and k-NN queries as requests sent straight to the node with the store's client (the
    ceiling), per mode."""
    from bench.common import Raw
    from reme_es.adapters.dialect import keyword_body
    from reme_es.core.models import SearchFilter

    store = fs.store
    raw = Raw(store.dialect)
    index = f"/{store.index('chunks')}/_search"
    vecs = {q: corpus.embed_text(q).tolist() for q in queries}
    out = {}
    for mode, f in (("keyword", None), ("vector", None), ("keyword filtered", MONTH), ("vector filtered", MONTH)):
        sf = SearchFilter.parse(f)
        if mode.startswith("keyword"):

            async def op(q, sf=sf):
                return await raw.request("POST", index, keyword_body(q, LIMIT, sf))
        else:

            async def op(q, sf=sf):
                return await raw.request("POST", index, store.dialect.knn_body(vecs[q], LIMIT, sf, size=LIMIT))

        out[mode] = op
    return out


async def node_heap_mib(fs) -> float | None:
    from bench.common import Raw

    resp = await Raw(fs.store.dialect).request("GET", "/_nodes/_local/stats/jvm")
    node = next(iter(resp["nodes"].values()))
    return node["jvm"]["mem"]["heap_used_in_bytes"] / (1 << 20)


async def run_worker(args) -> dict:
    backend, size = args.worker, args.size
    corpus = set_corpus(Corpus(args.workload))
    if getattr(args, "files_per_call", None):
        corpus.files_per_call = args.files_per_call
    work = Path(args.workdir)
    ws = work / "workspace"
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    prefix = f"{args.prefix}-{backend.replace('.', '')}"
    cfg = app_config(ws, backend, args.url, prefix, args.refresh_after)
    result: dict = {
        "backend": backend,
        "size": size,
        "workload": args.workload,
        "files_per_call": corpus.files_per_call,
    }
    vectors = np.lib.format.open_memmap(work / "vectors.npy", mode="w+", dtype=np.float32, shape=(size, DIMS))
    anon = AnonPeak()

    app = make_app(cfg)
    await app.start()
    fs = file_store(app)
    if backend in FLAVOURS:
        await fs.clear()  # a killed earlier run's indices under this prefix
    result["upsert_s"], result["dump_s"] = await upsert_all(fs, corpus, size, vectors)
    if backend in FLAVOURS:
        result["merge_s"] = await settle(fs)
        if (job := getattr(fs, "optimizer", None)) is not None and job.last is not None:  # the optimize job's share
            width = job.last.get("knn_width") or {}
            segments = f"{job.last['before']['chunks']['segments']} -> {job.last['after']['chunks']['segments']}"
            result["optimize"] = {
                "merge_s": job.last["seconds"],
                "calibration_s": width.get("seconds"),
                "segments": segments,
            }
        record = fs.store.indices.knn_calibration  # what the queries below search with (None: the rule)
        if record is not None:
            result["knn_width"] = {k: getattr(record, k) for k in ("width", "recall", "stopped", "seconds")}
    vectors.flush()
    t = time.perf_counter()
    await app.close()
    result["close_s"] = time.perf_counter() - t

    queries = corpus.queries(WARMUP + args.queries)
    app = make_app(cfg)
    t = time.perf_counter()
    await app.start()
    fs = file_store(app)
    first = await fs.keyword_search(queries[0], LIMIT, {})
    result["restart_s"] = time.perf_counter() - t
    result["first_answer_hits"] = len(first)
    try:
        ops = {
            "keyword": lambda q: fs.keyword_search(q, LIMIT, {}),
            "vector": lambda q: fs.vector_search(q, LIMIT, {}),
            "hybrid": lambda q: asyncio.gather(fs.vector_search(q, LIMIT, {}), fs.keyword_search(q, LIMIT, {})),
            "keyword filtered": lambda q: fs.keyword_search(q, LIMIT, dict(MONTH)),
            "vector filtered": lambda q: fs.vector_search(q, LIMIT, dict(MONTH)),
            "search job": lambda q: app.run_job("search", query=q, limit=JOB_LIMIT),
        }
        latency, raw = {}, {}
        ceiling = raw_ops(fs, corpus, queries) if backend in FLAVOURS else {}
        for mode in MODES:
            await timed(ops[mode], queries[:WARMUP])
            if mode in ceiling:  # reme-es and the raw request interleaved, query by query
                await timed(ceiling[mode], queries[:WARMUP])
                mine, theirs = await timed_pair(ops[mode], ceiling[mode], queries[WARMUP:])
                latency[mode], raw[mode] = summarise(mine), summarise(theirs)
            else:
                latency[mode] = summarise(await timed(ops[mode], queries[WARMUP:]))
        if backend in FLAVOURS:

            async def es_job(q):
                return await app.run_job("search_es", query=q, limit=JOB_LIMIT)

            await timed(es_job, queries[:WARMUP])
            latency["search job, es_search_step"] = summarise(await timed(es_job, queries[WARMUP:]))
            if fs.store.indices.feedback:  # the same step without pseudo-relevance feedback (`feedback: 0`)
                default, fs.store.indices.feedback = fs.store.indices.feedback, 0
                await timed(es_job, queries[:WARMUP])
                latency["search job, es_search_step, feedback 0"] = summarise(await timed(es_job, queries[WARMUP:]))
                fs.store.indices.feedback = default
        hits = await fs.vector_search(queries[WARMUP], LIMIT, dict(MONTH))
        result["filtered_vector_hits"] = len(hits)
        result["latency"] = latency
        if backend in FLAVOURS:
            result["raw"] = raw
            result["node_heap_mib"] = await node_heap_mib(fs)
            result["engine"] = f"{fs.store.caps.engine} {fs.store.caps.version}"
            result["native_hybrid"] = fs.store.native_hybrid_available()
        result["client_rss_mib"] = rss_mib()
        result["client_anon_mib"] = anon.stop()
        result["reupsert_s"] = await reupsert_unchanged(fs, corpus)
        ann = [[int(c.id.split("-")[1]) for c in await fs.vector_search(q, LIMIT, {})][:10] for q in queries[WARMUP:]]
    finally:
        if backend in FLAVOURS and not args.keep:
            await fs.clear()
            await fs.store.drop()
        await app.close()
    exact = exact_top(vectors, np.stack([corpus.embed_text(q) for q in queries[WARMUP:]]))
    result["recall_at_10"] = float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(ann, exact)]))
    return result
