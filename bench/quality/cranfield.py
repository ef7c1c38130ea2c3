"""Ranking quality on Cranfield: nDCG@10, recall@100 and MAP@100 of every search mode, side by side, one run.

    python -m bench.quality.cranfield [--url http://127.0.0.1:9200] [--data /work/shared/data/cranfield]

Each of the 1,400 documents is one chunk (title + abstract) at `resource/cran/NNNN.md`, embedded with
all-MiniLM-L6-v2 (reme_es.embeddings.minilm.LocalMiniLM; vectors cached under ~/.cache/reme-es-bench). The 225 queries
are numbered 1..225 in file order (the judgments' numbering, not the `.I` numbers). Every mode retrieves the top
100 through the store (`limit=100`, so hybrid modes fuse min(200, limit x 5) = 200 candidates per branch):
  BM25                 store.keyword_search, with the default keyword_fields (auto) and with ("text",)
  vector               store.vector_search (k-NN, cosine)
  native hybrid        OpenSearch hybrid query + search pipeline: rrf (score-ranker-processor) and minmax
                       (min-max normalisation, arithmetic mean weighted keyword 0.3 / vector 0.7)
  client RRF           ReMe's weighted RRF (vector_weight 0.7, k 60) over the two branches
Gains for nDCG come from cranqrel, where a lower grade is more relevant: 1->4, 2->3, 3->2, 4->1, -1 (and 5)->0;
nDCG uses linear gains and log2(rank + 1) discounts (trec_eval's ndcg_cut); the ideal ranking is built from all of a
query's judgments. recall@100 and MAP@100 count grades 1-4 as relevant. Means over all 225 queries. ReMe's
numbers use the same mapping. A second table scores the same runs with QRelsCorrectedforTRECeval's gains, where
the one -1 judgment of each query (apparently the query's source document) gets the top gain 5 and so counts as
relevant: that is the reading behind MAP figures like "BM25 english 0.426" (MAP@1000 here: 0.42 vs 0.30).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from pathlib import Path

import numpy as np

from bench.common import Raw, Report, Stopwatch, connect, drop_prefix, environment, parser, table
from bench.data.cranfield import GAINS, TREC_GAINS, doc_of, load_cranfield, path_of
from reme_es.adapters.dialect import keyword_query
from reme_es.core.models import Chunk, FileDoc, SearchFilter
from reme_es.embeddings.minilm import LocalMiniLM, default_model_path
from reme_es.store import CANDIDATE_MULTIPLIER, MemoryStore
from reme_es.store.fusion import candidate_depth

ANCHORS = {"BM25": (0.360, 0.714), "vector": (0.382, 0.773), "client RRF": (0.407, 0.777)}
GOALS = "goals: BM25 nDCG@10 >= 0.40, best hybrid >= 0.43"
CACHE = Path.home() / ".cache" / "reme-es-bench"
DEPTH = 100


def embed_cached(model: LocalMiniLM, texts: list[str], name: str) -> np.ndarray:
    """Embeddings of `texts`, cached on disk by model file and text content."""
    key = hashlib.sha256()
    mp = default_model_path()
    key.update(f"{mp}:{mp.stat().st_size if mp else 0}:{model.max_length}".encode())
    for t in texts:
        key.update(t.encode())
        key.update(b"\0")
    path = CACHE / f"{name}-{key.hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path)
    vectors = np.asarray(model.embed(texts), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


# ----------------------------------------------------------------------------------------- metrics


def gains_of(qrels: dict[int, dict[int, int]], mapping: dict[int, int]) -> dict[int, dict[int, int]]:
    """Per query: doc id -> gain under a grade -> gain mapping."""
    return {q: {d: mapping.get(g, 0) for d, g in judged.items()} for q, judged in qrels.items()}


def ndcg_at(ranked: list[int], gains: dict[int, int], k: int = 10) -> float:
    """nDCG@k with linear gains; the ideal ranking comes from all of the query's judgments."""
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[int], gains: dict[int, int], k: int = DEPTH) -> float:
    """Share of the relevant (positive-gain) documents found in the top k."""
    rel = {d for d, g in gains.items() if g > 0}
    return len(rel & set(ranked[:k])) / len(rel) if rel else 0.0


def ap_at(ranked: list[int], gains: dict[int, int], k: int = DEPTH) -> float:
    """Average precision over the top k, divided by all relevant (positive-gain) documents."""
    rel = {d for d, g in gains.items() if g > 0}
    hits, total = 0, 0.0
    for i, d in enumerate(ranked[:k]):
        if d in rel:
            hits += 1
            total += hits / (i + 1)
    return total / len(rel) if rel else 0.0


def mean(metric, runs: list[list[int]], gains: dict[int, dict[int, int]]) -> float:
    """The mean of a metric over the queries (query i + 1 is runs[i])."""
    return sum(metric(r, gains.get(i + 1, {})) for i, r in enumerate(runs)) / len(runs)


# ------------------------------------------------------------------------------------------- runs


async def index_cranfield(store: MemoryStore, docs: dict[int, str], vectors: np.ndarray) -> None:
    """One file with one chunk per document, then one refresh."""
    files = []
    for (num, text), vec in zip(sorted(docs.items()), vectors):
        path = path_of(num)
        chunk = Chunk(id=f"{path}#0", path=path, start_line=1, end_line=1, text=text, embedding=vec.tolist())
        files.append((FileDoc(path=path, chunk_ids=[chunk.id], size=len(text)), [chunk]))
    for i in range(0, len(files), 200):
        await store.upsert(files[i : i + 200], refresh=False)
    await store.refresh()


async def run_mode(store: MemoryStore, mode: str, queries: list[str], qvecs: np.ndarray, limit: int) -> list[list[int]]:
    """Ranked doc ids per query through the store's public search API."""
    out = []
    for q, v in zip(queries, qvecs):
        vec = v.tolist()
        if mode == "keyword":
            hits = await store.keyword_search(q, limit)
        elif mode == "vector":
            hits = await store.vector_search(vec, limit)
        else:
            hits = (await store.search(q, vec, limit=limit, mode="hybrid")).hits
        out.append([doc_of(h.chunk.path) for h in hits])
    return out


async def native_text_only(
    store: MemoryStore, raw: Raw, queries: list[str], qvecs: np.ndarray, limit: int
) -> list[list[int]]:
    """Native hybrid with a `text`-only keyword branch: the store's hybrid body with its keyword query swapped."""
    out = []
    f = SearchFilter()
    size = candidate_depth(limit, CANDIDATE_MULTIPLIER)
    for q, v in zip(queries, qvecs):
        body = store.dialect.hybrid_body(q, v.tolist(), size, f)
        body["query"]["hybrid"]["queries"][0] = keyword_query(q, f, ("text",))
        resp = await raw.request(
            "POST", f"/{store.index('chunks')}/_search", body, {"search_pipeline": store.pipeline_name()}
        )
        out.append([doc_of(h["_source"]["path"]) for h in resp["hits"]["hits"][:limit]])
    return out


async def main() -> None:
    p = parser(__doc__.splitlines()[0], "bench-quality")
    p.add_argument("--data", default="/work/shared/data/cranfield")
    args = p.parse_args()
    docs, queries, qrels = load_cranfield(Path(args.data))
    if len(docs) != 1400 or len(queries) != 225:
        raise SystemExit(f"expected 1400 docs and 225 queries, found {len(docs)} and {len(queries)}")
    model = LocalMiniLM()
    with Stopwatch() as emb:
        dvecs = embed_cached(model, [docs[k] for k in sorted(docs)], "cran-docs")
        qvecs = embed_cached(model, queries, "cran-queries")
    report = Report()
    store = await connect(args.url, args.prefix, dims=LocalMiniLM.dimensions, hybrid="client")
    raw = Raw(store.dialect)
    try:
        report(environment(store, args.url))
        await index_cranfield(store, docs, dvecs)
        analyzers = store.caps.english_analyzer
        report(
            f"Cranfield: {len(docs)} docs (title + abstract, one chunk each), {len(queries)} queries, "
            f"{sum(len(v) for v in qrels.values())} judgments; text analyzer: {'english' if analyzers else 'standard'}"
            f"; embeddings {emb.wall:.1f} s (cached in {CACHE})"
        )
        report(
            "gains: cranqrel grade 1->4, 2->3, 3->2, 4->1, -1->0 (linear gains, log2 discount); relevant = grade 1-4"
        )
        runs: dict[str, tuple[list[list[int]], list[list[int]], float, str]] = {}

        async def add(name: str, mode: str, note: str, fetch=None) -> None:
            fetch = fetch or (lambda limit: run_mode(store, mode, queries, qvecs, limit))
            with Stopwatch() as sw:
                deep, shallow = await fetch(DEPTH), await fetch(10)
            runs[name] = (deep, shallow, sw.wall, note)

        default_fields = store.keyword_fields
        await add("BM25", "keyword", "default keyword_fields (auto: 'text', plus 'text.cjk' for CJK queries)")
        store.keyword_fields = ("text",)
        await add("BM25 (text)", "keyword", "keyword_fields=('text',)")
        store.keyword_fields = default_fields
        await add("vector", "vector", f"all-MiniLM-L6-v2 int8, {store.caps.engine} HNSW")
        if store.caps.hybrid_query:
            store.hybrid = "native"
            for kind in ("rrf", "minmax"):
                store.pipeline_kind = kind
                await store.ensure_pipeline()
                weights = (
                    "unweighted (2.19 takes no weights), k 60"
                    if kind == "rrf" and not store.caps.rrf_weights
                    else "keyword 0.3 / vector 0.7"
                )
                await add(f"native hybrid {kind}", "hybrid", weights)
                await add(
                    f"native hybrid {kind} (text)",
                    "hybrid",
                    "keyword branch on `text` only (store body, keyword query swapped; raw request)",
                    lambda limit: native_text_only(store, raw, queries, qvecs, limit),
                )
        store.hybrid, store.pipeline_kind = "client", "rrf"  # client-side fusion follows the pipeline kind
        await add("client RRF", "hybrid", "ReMe weighted RRF, vector 0.7, k 60")
        store.keyword_fields = ("text",)
        await add("client RRF (text)", "hybrid", "keyword branch with keyword_fields=('text',)")
        store.keyword_fields = default_fields

        main_gains, trec_gains = gains_of(qrels, GAINS), gains_of(qrels, TREC_GAINS)
        rows, alt = [], []
        for name, (deep, shallow, seconds, note) in runs.items():
            anchor = ANCHORS.get(name)
            rows.append(
                [
                    name,
                    f"{mean(ndcg_at, deep, main_gains):.3f}",
                    f"{mean(ndcg_at, shallow, main_gains):.3f}",
                    f"{mean(recall_at, deep, main_gains):.3f}",
                    f"{mean(ap_at, deep, main_gains):.3f}",
                    f"{anchor[0]:.3f}" if anchor else "-",
                    f"{anchor[1]:.3f}" if anchor else "-",
                    f"{seconds:.1f}",
                    note,
                ]
            )
            alt.append(
                [
                    name,
                    f"{mean(ndcg_at, deep, trec_gains):.3f}",
                    f"{mean(recall_at, deep, trec_gains):.3f}",
                    f"{mean(ap_at, deep, trec_gains):.3f}",
                ]
            )
        report(
            table(
                [
                    "mode",
                    "nDCG@10",
                    "nDCG@10 lim10",
                    "recall@100",
                    "MAP@100",
                    "ReMe nDCG@10",
                    "ReMe R@100",
                    "s",
                    "note",
                ],
                rows,
                title="\n## Cranfield, README gains (1->4, 2->3, 3->2, 4->1, -1->0); top 100 per query "
                "('lim10': nDCG@10 of a limit=10 search, i.e. 50 candidates per hybrid branch)",
            )
        )
        report(GOALS + "; ReMe columns: ReMe's local store on the same data and gains")
        report(
            table(
                ["mode", "nDCG@10", "recall@100", "MAP@100"],
                alt,
                title="\n## the same runs with QRelsCorrectedforTRECeval's gains (-1 -> 5: the source document counts "
                "as the most relevant; every judged doc is relevant)",
            )
        )
    finally:
        await store.drop()
        await drop_prefix(raw, args.prefix)  # the other pipeline too
        await store.close()
    report.save(args.out, "quality", store.caps.engine)


if __name__ == "__main__":
    asyncio.run(main())
