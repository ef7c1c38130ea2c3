"""Retrieval quality on agent memory: ReMe's own stores against the reme-es drop-in, on a generated conversational
memory (bench/data/memory.py) and on Cranfield, every mode in one run, one table and one plot.

    python -m bench.quality.memory_quality --url http://127.0.0.1:9200 [--backends local,faiss,opensearch]
                                           [--cranfield /work/shared/data/cranfield] [--png docs/img/memory_quality.png]

Both sets are indexed through ReMe's file-store interface (`upsert`, one chunk per dialog turn or per Cranfield
document, vectors handed over with the chunks; query vectors come from the same model through a ReMe `as_embedding`
backend; `--model minilm,e5` (default: both, one after the other): all-MiniLM-L6-v2 and multilingual-e5-small, whose
backend, like reme-es' `e5`, embeds what ReMe hands it as questions and offers the drop-in a passage side
(`embed_passages`) for its chunks: bench/quality/memory_models.py).
Vectors are cached under ~/.cache/reme-es-bench (keyed by model and texts), so only each model's first run embeds
(~4,400 turns + 1,400 abstracts). Every search asks for the top 10:
  keyword          file_store.keyword_search (ReMe: its BM25 index; reme-es: the cluster's BM25)
  vector           file_store.vector_search (ReMe local: exact cosine; faiss: its index; reme-es: k-NN)
  ReMe fusion      app.run_job("search"): ReMe's own search step (weighted RRF, vector_weight 0.7, 50 candidates
                   per branch) over that store's branches
  reme-es fusion   app.run_job on a job of reme-es' `es_search_step` (the store fuses: one hybrid request; repeated
                   texts kept once, `collapse`); again with `feedback: 0`, and with `collapse: false`
  vector, repeats collapsed by the bench   not a mode of any store: the vector branch's 50 candidates with repeated
                   texts kept once by the bench, top 10: what collapsing alone gives each store, ReMe's included
Metrics: recall@5 and recall@10 of the evidence turns (Cranfield: of the documents judged 1-4), nDCG@10 (memory: gain 1
per evidence turn; Cranfield: the README gains of bench/quality/cranfield.py). Means over all questions. A second table
sweeps the fusion options reme-es could use, client-side over the same two candidate lists of the drop-in (50 per
branch).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import PLOTS, RESULTS, Raw, Report, table
from bench.data.cranfield import GAINS, load_cranfield, path_of
from bench.data.memory import generate
from bench.quality.memory_models import MODELS, embedder
from bench.quality.memory_options import BM25_VARIANTS, OPTIONS, bm25_variants, sweep

CACHE = Path.home() / ".cache" / "reme-es-bench"
LIMIT = 10
CANDIDATES = 50  # what ReMe's search step asks each branch for at limit 10
BACKENDS = ("local", "faiss", "opensearch")
LABELS = {"local": "ReMe local", "faiss": "ReMe faiss", "opensearch": "reme-es (OpenSearch)"}
MODES = (
    "keyword",
    "vector",
    "ReMe fusion",
    "reme-es fusion",
    "reme-es fusion, feedback off",
    "reme-es fusion, collapse off",
    "vector, repeats collapsed by the bench",
)
WATCHERS = [
    "index_update_loop",
    "resource_watch_loop",
    "digest_watch_loop",
    "dream_cron",
    "proactive_refresh_cron",
    "optimize_index_cron",
]
VECTORS: dict[str, list[float]] = {}  # text -> vector through ReMe's interface (the bench's as_embedding backend)
PASSAGE_VECTORS: dict[str, list[float]] = {}  # stored text -> its passage-side vector (e5; else VECTORS')
EMPTY = {"R@5": math.nan, "R@10": math.nan, "nDCG@10": math.nan}  # a set not run
CACHED: dict[str, np.ndarray] = {}  # sha256(model key, text) -> vector, from the disk cache


@dataclass
class Dataset:
    """A set indexed as files of chunks, with questions and per-question gains by chunk id."""

    name: str
    files: dict[str, list[tuple[str, int, str]]]  # path -> [(chunk id, line, text)]
    queries: list[str]
    gains: list[dict[str, int]]  # per query: chunk id -> gain (> 0 relevant)
    kinds: list[str]


def memory_set() -> Dataset:
    """The generated conversational memory."""
    data = generate()
    files: dict[str, list[tuple[str, int, str]]] = {}
    for cid, path, line, text in data.chunks:
        files.setdefault(path, []).append((cid, line, text))
    return Dataset(
        "memory",
        files,
        [q["question"] for q in data.questions],
        [{c: 1 for c in q["evidence"]} for q in data.questions],
        [q["kind"] for q in data.questions],
    )


def cranfield_set(root: Path) -> Dataset:
    """Cranfield: one file and one chunk per document."""
    docs, queries, qrels = load_cranfield(root)
    files = {path_of(d): [(f"{path_of(d)}#1", 1, text)] for d, text in sorted(docs.items())}
    gains = [{f"{path_of(d)}#1": GAINS.get(g, 0) for d, g in qrels.get(i + 1, {}).items()} for i in range(len(queries))]
    return Dataset("cranfield", files, queries, gains, ["cranfield"] * len(queries))


def _load_cache() -> None:
    """Every cached vector of this bench (shards `mvec-*.npz` under CACHE: texts' sha256 keys and vectors)."""
    for shard in sorted(CACHE.glob("mvec-*.npz")):
        with np.load(shard) as z:
            CACHED.update(zip(z["keys"].tolist(), z["vectors"]))


MODEL = {"name": "minilm"}  # --model: which encoder makes every vector of the run (bench/quality/memory_models.py)


def embed_all(texts: list[str], batch: int = 256, side: str = "reme") -> None:
    """Fill VECTORS (or, `side="passage"`, PASSAGE_VECTORS) for `texts` from the disk cache, embedding what is
    missing; each batch is saved as it is done (a shard keyed by the model and side), so an interrupted run keeps
    its work. A model without a passage side fills PASSAGE_VECTORS from its one side."""
    if not CACHED:
        _load_cache()
    model = embedder(MODEL["name"])
    if side == "passage" and model.embed_passages is None:
        embed_all(texts, batch)
        PASSAGE_VECTORS.update({t: VECTORS[t] for t in texts})
        return
    model_key, embed, target = model.key, model.embed, VECTORS
    if side == "passage":
        model_key, embed, target = model.passage_key, model.embed_passages, PASSAGE_VECTORS
    keyed = {t: hashlib.sha256(f"{model_key}\0{t}".encode()).hexdigest() for t in set(texts) - target.keys()}
    todo = sorted((t for t, k in keyed.items() if k not in CACHED), key=len)  # batches of like length pad little
    t0 = time.perf_counter()
    for i in range(0, len(todo), batch):
        part = todo[i : i + batch]
        vectors = embed(part)
        CACHE.mkdir(parents=True, exist_ok=True)
        keys = [keyed[t] for t in part]
        np.savez(CACHE / f"mvec-{keys[0][:16]}.npz", keys=np.asarray(keys), vectors=vectors)
        CACHED.update(zip(keys, vectors))
    if todo:
        print(f"embedded {len(todo)} texts ({side} side) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    target.update({t: CACHED[k].tolist() for t, k in keyed.items()})


def passage_side() -> bool:
    """Whether the run's model embeds stored texts apart from what ReMe hands it (e5)."""
    return embedder(MODEL["name"]).embed_passages is not None


# ------------------------------------------------------------------------------------------ metrics


def recall_at(ranked: list[str], gains: dict[str, int], k: int) -> float:
    """Share of the relevant chunks in the top k."""
    rel = {c for c, g in gains.items() if g > 0}
    return len(rel & set(ranked[:k])) / len(rel) if rel else 0.0


def ndcg_at(ranked: list[str], gains: dict[str, int], k: int = 10) -> float:
    """nDCG@k, linear gains, log2 discounts, the ideal from all judgments."""
    dcg = sum(gains.get(c, 0) / math.log2(i + 2) for i, c in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def scores(runs: list[list[str]], data: Dataset) -> dict[str, float]:
    """recall@5, recall@10 and nDCG@10, means over the questions."""
    n = len(runs)
    return {
        "R@5": sum(recall_at(r, g, 5) for r, g in zip(runs, data.gains)) / n,
        "R@10": sum(recall_at(r, g, 10) for r, g in zip(runs, data.gains)) / n,
        "nDCG@10": sum(ndcg_at(r, g) for r, g in zip(runs, data.gains)) / n,
    }


def by_kind(runs: list[list[str]], data: Dataset) -> dict[str, float]:
    """recall@10 per question kind."""
    out = {}
    for kind in dict.fromkeys(data.kinds):
        idx = [i for i, k in enumerate(data.kinds) if k == kind]
        out[kind] = sum(recall_at(runs[i], data.gains[i], 10) for i in idx) / len(idx)
    return out


# ------------------------------------------------------------------------------------------ ReMe apps


def app_config(ws: Path, backend: str, url: str, prefix: str) -> dict:
    """A ReMe application on `backend` with the bench's embedding backend and the reme-es search job."""
    from reme.config import resolve_app_config

    store: dict = {"backend": backend, "embedding_store": "default"}
    if backend in ("opensearch", "elasticsearch"):
        store.update(hosts=url, index_prefix=prefix)
    jobs: dict = {name: {"enabled": False} for name in WATCHERS}
    jobs["search_es"] = {"backend": "base", "steps": [{"backend": "es_search_step"}]}
    return resolve_app_config(
        log_config=False,
        workspace_dir=str(ws),
        enable_logo=False,
        log_to_file=False,
        log_to_console=False,
        plugins=["reme-es"],
        components={
            "as_embedding": {
                "default": {
                    "backend": "bench-cached-passage-side" if passage_side() else "bench-cached",
                    "dimensions": 384,
                }
            },
            "embedding_store": {"default": {"backend": "local", "as_embedding": "default", "enable_cache": False}},
            "file_store": {"default": store},
        },
        jobs=jobs,
    )


def make_app(cfg: dict):
    """The application, with the bench's as_embedding backend (cached vectors) registered."""
    from reme.application import Application
    from reme.components.as_embedding import BaseAsEmbedding
    from reme.components.component_registry import R

    class CachedAsEmbedding(BaseAsEmbedding):
        """The run's model's vectors, computed before the run (bench/quality/memory_quality.py's cache)."""

        def initialize_model(self) -> None:
            """Nothing to load: the vectors are in memory."""

        async def __call__(self, inputs, **kwargs):
            """The cached vector of each input (embedded now if the run did not see it coming)."""
            texts = [str(t) for t in inputs]
            embed_all(texts)
            return [VECTORS[t] for t in texts]

    class CachedPassageSideAsEmbedding(CachedAsEmbedding):
        """As the e5 backend: also a passage side, through which the drop-in embeds its chunks."""

        async def embed_passages(self, texts: list[str]) -> list[list[float]]:
            """The cached passage-side vector of each stored text."""
            embed_all(texts, side="passage")
            return [PASSAGE_VECTORS[t] for t in texts]

    with R.preserve(allow_mutation=True):
        backends = {"bench-cached": CachedAsEmbedding, "bench-cached-passage-side": CachedPassageSideAsEmbedding}
        for name, backend in backends.items():
            if R.get("as_embedding", name) is None:
                R.register(backend, name)
        return Application(**cfg)


async def index(fs, data: Dataset, vectors: dict[str, list[float]]) -> None:
    """Upsert every file with its chunks and their `vectors` (those the store would compute: ReMe's stores through
    ReMe's interface, the drop-in through the passage side), 50 files a call, then dump (as ReMe's index step)."""
    from reme.schema import FileChunk, FileNode

    files = []
    for n, (path, chunks) in enumerate(data.files.items()):
        fcs = [
            FileChunk(
                id=cid,
                path=path,
                start_line=line,
                end_line=line,
                text=text,
                embedding=np.asarray(vectors[text], dtype=np.float32),
            )
            for cid, line, text in chunks
        ]
        files.append((FileNode(path=path, st_mtime=1_780_000_000.0 + n, chunk_ids=[c.id for c in fcs]), fcs))
    for i in range(0, len(files), 50):
        await fs.upsert(files[i : i + 50])
    await fs.dump()


async def run_backend(backend: str, data: Dataset, url: str, work: Path, bm25: bool = True) -> tuple[dict, dict]:
    """Ranked chunk ids per mode on one backend, and (reme-es) the fusion sweep's runs (and, `bm25`, the BM25
    variants', which no model changes)."""
    ws = work / f"{backend}-{data.name}"
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    app = make_app(app_config(ws, backend, url, f"bench-memq-{data.name}"))
    await app.start()
    fs = app.context.components["file_store"]["default"]
    runs: dict[str, list[list[str]]] = {m: [] for m in MODES}
    swept: dict = {}
    try:
        if backend == "opensearch":
            await fs.clear()
        await index(fs, data, PASSAGE_VECTORS if backend == "opensearch" else VECTORS)
        for q in data.queries:
            runs["keyword"].append([c.id for c in await fs.keyword_search(q, LIMIT, {})])
            runs["vector"].append([c.id for c in await fs.vector_search(q, LIMIT, {})])
            runs["vector, repeats collapsed by the bench"].append(distinct(await fs.vector_search(q, CANDIDATES, {})))
            resp = await app.run_job("search", query=q, limit=LIMIT)
            runs["ReMe fusion"].append([r["id"] for r in resp.metadata.get("results", [])])
            if backend == "opensearch":
                resp = await app.run_job("search_es", query=q, limit=LIMIT)
                runs["reme-es fusion"].append([r["id"] for r in resp.metadata.get("results", [])])
                for setting, mode in (
                    ("feedback", "reme-es fusion, feedback off"),
                    ("collapse", "reme-es fusion, collapse off"),
                ):  # the same step without it
                    saved = getattr(fs.store.indices, setting)
                    setattr(fs.store.indices, setting, type(saved)(0))
                    resp = await app.run_job("search_es", query=q, limit=LIMIT)
                    setattr(fs.store.indices, setting, saved)
                    runs[mode].append([r["id"] for r in resp.metadata.get("results", [])])
        if backend == "opensearch":
            swept = await sweep(fs.store, data.queries, [VECTORS[q] for q in data.queries], CANDIDATES, LIMIT)
            chunks = [(cid, text) for cs in data.files.values() for cid, _, text in cs]
            if bm25:
                swept.update(
                    await bm25_variants(
                        Raw(fs.store.dialect), f"bench-memq-bm25-{data.name}", chunks, data.queries, LIMIT
                    )
                )
    finally:
        if backend == "opensearch":
            await fs.clear()
            await fs.store.drop()
        await app.close()
    return {m: r for m, r in runs.items() if r}, swept


def distinct(chunks: list) -> list[str]:
    """The ids of the first LIMIT chunks of a ranking whose texts were not seen higher up (repeats kept once)."""
    seen: set[str] = set()
    return [c.id for c in chunks if not (c.text in seen or seen.add(c.text))][:LIMIT]


# ------------------------------------------------------------------------------------------ report


def plot(rows: list[tuple[str, str, dict, dict]], path: Path) -> None:
    """Grouped bars: recall@10 on the memory set and nDCG@10 on Cranfield, per store and mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, max(4.5, 1.5 + 0.24 * len(rows))))
    for ax, (metric, key, title) in zip(
        axes, (("R@10", 0, "conversational memory: recall@10"), ("nDCG@10", 1, "Cranfield: nDCG@10"))
    ):
        labels = [f"{b}\n{m}" for b, m, *_ in rows]
        values = [r[2 + key][metric] for r in rows]
        colors = [
            "#bbbbbb" if "by the bench" in m else "#c44e52" if b.startswith("reme-es") else "#4c72b0"
            for b, m, *_ in rows
        ]
        ax.barh(range(len(rows)), values, color=colors)
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(title)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:.3f}", va="center", fontsize=7)
        ax.set_xlim(0, (np.nanmax(values) if not np.all(np.isnan(values)) else 1.0) * 1.18)
    fig.suptitle(
        "ReMe's stores (blue) and the reme-es drop-in (red), top 10 (bench/quality/memory_quality.py)\n"
        "grey: no store's mode, the vector branch with repeats collapsed by the bench"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _sweep_row(sweeps: dict, name: str) -> list:
    """One option's row: memory R@10 and nDCG@10, Cranfield R@10 and nDCG@10."""
    mem, cran = sweeps.get("memory", {}).get(name, EMPTY), sweeps.get("cranfield", {}).get(name, EMPTY)
    return [name, mem["R@10"], mem["nDCG@10"], cran["R@10"], cran["nDCG@10"]]


async def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--cranfield", default="/work/shared/data/cranfield", help="Cranfield's folder; 'none': skip it")
    p.add_argument("--sets", default="memory,cranfield", help="which sets to run (default both)")
    p.add_argument(
        "--model",
        default=",".join(MODELS),
        help=f"the encoders, each a run of every store and set (default {','.join(MODELS)})",
    )
    p.add_argument("--png", default=str(PLOTS / "memory_quality.png"))
    p.add_argument("--out", default=str(RESULTS / "memory_quality.txt"))
    p.add_argument("--merge", nargs="+", help="no run: tables and plot from these runs' saved JSON (out .json)")
    args = p.parse_args()
    report = Report()
    if args.merge:
        report(f"merged from {', '.join(args.merge)}")
        return finish(report, *merged(args.merge), args)
    models = args.model.split(",")
    for model in models:
        if model not in MODELS:
            raise SystemExit(f"--model takes {', '.join(MODELS)} (comma-separated), not {model!r}")
    report(f"embedding models: {', '.join(models)}")
    wanted = args.sets.split(",")
    sets = ([memory_set()] if "memory" in wanted else []) + (
        [cranfield_set(Path(args.cranfield))] if "cranfield" in wanted and args.cranfield != "none" else []
    )
    report(
        ", ".join(
            f"{d.name}: {sum(len(c) for c in d.files.values())} chunks in {len(d.files)} files, "
            f"{len(d.queries)} questions"
            for d in sets
        )
    )
    work = Path(tempfile.mkdtemp(prefix="reme-es-memq-"))
    results: dict[tuple[str, str], dict[str, dict]] = {}
    sweeps: dict[str, dict] = {}
    kinds: dict[tuple[str, str], dict[str, float]] = {}
    try:
        for model in models:
            use_model(model)
            for d in sets:
                texts = [t for chunks in d.files.values() for _, _, t in chunks]
                embed_all(texts + d.queries)  # through ReMe's interface: ReMe's stores, and every question
                embed_all(texts, side="passage")  # the drop-in's chunks
            for backend in args.backends.split(","):
                store = f"{LABELS[backend]}, {model}"
                for d in sets:
                    t0 = time.perf_counter()
                    runs, swept = await run_backend(backend, d, args.url, work, bm25=model == models[0])
                    for mode, r in runs.items():
                        results.setdefault((store, mode), {})[d.name] = scores(r, d)
                        if d.name == "memory":
                            kinds[(store, mode)] = by_kind(r, d)
                    if swept:
                        sweeps.setdefault(model, {})[d.name] = {name: scores(r, d) for name, r in swept.items()}
                    print(f"{model} {backend} {d.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
                    Path(args.out).with_suffix(".json").write_text(
                        json.dumps(  # what is measured so far, as it goes
                            {
                                "results": [[k, v] for k, v in results.items()],
                                "sweeps": sweeps,
                                "kinds": [[k, v] for k, v in kinds.items()],
                            }
                        )
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish(report, results, kinds, sweeps, args)


def use_model(name: str) -> None:
    """Make `name` the encoder of every vector from now on (the in-memory vectors of another model are dropped)."""
    MODEL["name"] = name
    VECTORS.clear()
    PASSAGE_VECTORS.clear()


def merged(paths: list[str]) -> tuple[dict, dict, dict]:
    """Results, kinds and sweeps of earlier runs' JSON files (e.g. one per --sets), merged."""
    results: dict = {}
    kinds: dict = {}
    sweeps: dict = {}
    for path in paths:
        saved = json.loads(Path(path).read_text())
        for key, per_set in saved["results"]:
            results.setdefault(tuple(key), {}).update(per_set)
        kinds.update({tuple(k): v for k, v in saved["kinds"]})
        for model, per_set in saved["sweeps"].items():
            sweeps.setdefault(model, {}).update(per_set)
    return results, kinds, sweeps


def finish(report: Report, results: dict, kinds: dict, sweeps: dict, args) -> None:
    """Print the tables, draw the plot, save the report."""
    rows = [(b, m, v.get("memory", EMPTY), v.get("cranfield", EMPTY)) for (b, m), v in results.items()]
    report(
        table(
            ["store", "mode", "mem R@5", "mem R@10", "mem nDCG@10", "cran R@5", "cran R@10", "cran nDCG@10"],
            [
                [b, m, mem["R@5"], mem["R@10"], mem["nDCG@10"], cr["R@5"], cr["R@10"], cr["nDCG@10"]]
                for b, m, mem, cr in rows
            ],
            title="\n## top 10 per query, every store and mode",
        )
    )
    names = list(next(iter(kinds.values()), {}))
    report(
        table(
            ["store", "mode", *names],
            [[b, m, *(v[k] for k in names)] for (b, m), v in kinds.items()],
            title="\n## conversational memory, recall@10 by question kind",
        )
    )
    cols = ["mem R@10", "mem nDCG@10", "cran R@10", "cran nDCG@10"]
    for model, swept in sweeps.items():
        report(
            table(
                [f"fusion, {model} (reme-es candidates, 50 per branch)", *cols],
                [_sweep_row(swept, name) for name in OPTIONS],
                title=f"\n## fusion options, {model}",
            )
        )
    if sweeps:  # BM25 does not depend on the model: the first model's run
        report(
            table(
                ["BM25 variant (scratch index, top 10)", *cols],
                [_sweep_row(next(iter(sweeps.values())), name) for name in BM25_VARIANTS],
                title="\n## BM25 variants",
            )
        )
    plot(rows, Path(args.png))
    report.save(args.out, "memory_quality", "opensearch")


if __name__ == "__main__":
    asyncio.run(main())
