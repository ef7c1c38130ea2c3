"""The fusion options of bench/quality/memory_quality.py: every way reme-es could fuse, applied to the same candidates.

Per query the drop-in's two branches are fetched once (keyword and k-NN, `candidates` each, with their text); every
client-side option fuses those same lists (reme_es.store.fusion), so the options differ only in fusion. The native rows
are the server's own fusion (OpenSearch hybrid query + search pipeline) over the same depth.
"""

from __future__ import annotations

from reme_es.store import fusion
from reme_es.store.fusion import collapse_repeats, fuse, proximity_rescore

RRF_WEIGHTS = (0.3, 0.5, 0.7)
CONVEX_WEIGHTS = (0.3, 0.5, 0.55, 0.6, 0.7)
FEEDBACK_WEIGHTS = (0.5, 0.55, 0.6)
OPTIONS = (
    ["keyword only", "vector only", "keyword + feedback", "vector + feedback"]
    + [f"rrf w_v={w}" for w in RRF_WEIGHTS]
    + [f"minmax w_v={w}" for w in CONVEX_WEIGHTS]
    + [f"zscore w_v={w}" for w in CONVEX_WEIGHTS]
    + [f"{m} w_v={w} + feedback" for m in ("rrf", "zscore") for w in FEEDBACK_WEIGHTS]
    + [f"{base} + proximity {b}" for base in ("rrf w_v=0.5", "minmax w_v=0.5", "zscore w_v=0.5") for b in (0.1, 0.3)]
)
NATIVE = (
    ("native rrf (pipeline)", "rrf", 0.7),
    ("native minmax w_v=0.7 (pipeline)", "minmax", 0.7),
    ("native minmax w_v=0.5 (pipeline)", "minmax", 0.5),
)
OPTIONS += [name for name, *_ in NATIVE]
COLLAPSED = (  # options also run with repeated texts kept once (reme_es.store.fusion.collapse_repeats)
    ["keyword only", "vector only", "rrf w_v=0.7", "minmax w_v=0.7"]
    + [f"zscore w_v={w}" for w in CONVEX_WEIGHTS]
    + [f"zscore w_v={w} + feedback" for w in FEEDBACK_WEIGHTS]
)
OPTIONS += [f"{name} + collapse" for name in COLLAPSED] + [f"{name} + collapse" for name, *_ in NATIVE]
UNGATED = "zscore w_v=0.55 + feedback from any hit"  # feedback without its length gate (FEEDBACK_MIN_TERMS 0)
OPTIONS += [UNGATED, f"{UNGATED} + collapse"]


def client_options(vector: list, keyword: list, query: str) -> dict[str, list]:
    """Every client-side option's fused ranking of one query's two candidate lists."""
    out = {"keyword only": keyword, "vector only": vector}
    for w in RRF_WEIGHTS:
        out[f"rrf w_v={w}"] = fuse(vector, keyword, "rrf", w)
    for method in ("minmax", "zscore"):
        for w in CONVEX_WEIGHTS:
            out[f"{method} w_v={w}"] = fuse(vector, keyword, method, w)
    for base in ("rrf w_v=0.5", "minmax w_v=0.5", "zscore w_v=0.5"):
        for b in (0.1, 0.3):
            out[f"{base} + proximity {b}"] = proximity_rescore(out[base], query, boost=b)
    return out


async def native(
    store,
    kind: str,
    weight: float,
    queries: list[str],
    vectors: list,
    candidates: int,
    limit: int,
    collapse: bool = False,
):
    """The server-fused ranking of each query through a search pipeline of `kind` (None when it cannot); `collapse`:
    repeated texts kept once (the store's `collapse`)."""
    ix = store.indices
    saved = (ix.hybrid, ix.pipeline_kind, ix.vector_weight, ix.collapse)
    ix.hybrid, ix.pipeline_kind, ix.vector_weight, ix.collapse = "native", kind, weight, collapse
    try:
        if not ix.native_hybrid():
            return None
        await ix.ensure_pipeline()
        out = []
        for q, v in zip(queries, vectors):
            result = await store.search(q, v, limit, mode="hybrid", candidates=candidates)
            out.append([h.chunk.id for h in result.hits])
        return out
    finally:
        ix.hybrid, ix.pipeline_kind, ix.vector_weight, ix.collapse = saved


async def top_sources(store, keyword: list, vector: list) -> dict[str, dict]:
    """The stored sources, vectors included, of each branch's first `feedback` hits, by chunk id."""
    from reme_es.core.models import doc_id

    n = store.indices.feedback
    hits = list({h.chunk.id: h for h in keyword[:n] + vector[:n]}.values())
    docs = [(doc_id(h.chunk.id), h.chunk.path) for h in hits]
    sources = await store.port.get_routed(store.indices.ix.chunks, docs, with_vectors=True)
    return {h.chunk.id: src for h, src in zip(hits, sources) if src is not None}


async def sweep(store, queries: list[str], vectors: list, candidates: int, limit: int) -> dict[str, list[list[str]]]:
    """Ranked chunk ids per option and query (top `limit`)."""
    from reme_es.core.models import SearchFilter

    runs: dict[str, list[list[str]]] = {}
    for q, v in zip(queries, vectors):
        keyword = await store.keyword_search(q, candidates)
        vector = await store.vector_search(v, candidates)
        options = client_options(vector, keyword, q)
        # the store's pseudo-relevance feedback pass (SearchStore._feedback) over the same first-pass lists, with the
        # top hits' stored texts and vectors (what the search's first `_msearch` brings it)
        stored = await top_sources(store, keyword, vector)
        fb_k, fb_v = await store.searches._feedback(q, v, candidates, SearchFilter(), keyword, vector, stored)
        options.update({"keyword + feedback": fb_k, "vector + feedback": fb_v})
        for m in ("rrf", "zscore"):
            options.update({f"{m} w_v={w} + feedback": fuse(fb_v, fb_k, m, w) for w in FEEDBACK_WEIGHTS})
        gate, fusion.FEEDBACK_MIN_TERMS = fusion.FEEDBACK_MIN_TERMS, 0  # every top hit feeds back, as before the gate
        try:
            any_k, any_v = await store.searches._feedback(q, v, candidates, SearchFilter(), keyword, vector, stored)
        finally:
            fusion.FEEDBACK_MIN_TERMS = gate
        options[UNGATED] = fuse(any_v, any_k, "zscore", 0.55)
        options.update({f"{name} + collapse": collapse_repeats(options[name]) for name in COLLAPSED + [UNGATED]})
        for name, hits in options.items():
            runs.setdefault(name, []).append([h.chunk.id for h in hits[:limit]])
    for (name, kind, w), collapse in ((n, c) for n in NATIVE for c in (False, True)):
        got = await native(store, kind, w, queries, vectors, candidates, limit, collapse)
        if got is not None:
            runs[f"{name} + collapse" if collapse else name] = got
    return runs


# ------------------------------------------------------------------------------------------ BM25 variants

_BASE = ["reme_english_possessive", "lowercase", "reme_link_parts"]
ANALYZERS = {  # subfield -> filters after the standard tokenizer (the template's own filters)
    "english": _BASE + ["reme_english_stop", "reme_english_stemmer"],
    "nostop": _BASE + ["reme_english_stemmer"],
    "nostem": _BASE + ["reme_english_stop"],
    "plain": _BASE,
    "shingles": _BASE + ["reme_english_stop", "reme_english_stemmer", "bench_shingle"],
}
BM25_VARIANTS = {  # name -> (field, extra should clause)
    "english analyzer (current)": ("english", None),
    "no stop words": ("nostop", None),
    "no stemming": ("nostem", None),
    "neither": ("plain", None),
    "english + phrase slop 3": ("english", "phrase"),
    "english + shingles": ("english", "shingles"),
    "english, CJK queries without text.cjk": ("english", "nocjk"),
}


def bm25_index_body() -> dict:
    """An index with one text subfield per analyzer variant, analysis from the chunks template."""
    from reme_es.adapters.templates import load_template

    analysis = load_template("chunks")["settings"]["analysis"]
    analysis["filter"]["bench_shingle"] = {
        "type": "shingle",
        "min_shingle_size": 2,
        "max_shingle_size": 2,
        "output_unigrams": False,
    }
    for name, filters in ANALYZERS.items():
        analysis["analyzer"][f"bench_{name}"] = {"type": "custom", "tokenizer": "standard", "filter": filters}
    fields = {name: {"type": "text", "analyzer": f"bench_{name}"} for name in ANALYZERS}
    fields["cjk"] = {"type": "text", "analyzer": "reme_cjk"}
    return {
        "settings": {"number_of_shards": 1, "number_of_replicas": 0, "analysis": analysis},
        "mappings": {"properties": {"t": {"type": "text", "analyzer": "standard", "fields": fields}}},
    }


def bm25_query(variant: str, q: str, limit: int) -> dict:
    """The keyword query of one variant (CJK queries also match t.cjk, as reme-es' auto keyword fields do)."""
    from reme_es.adapters.dialect import keyword_fields_for

    field, extra = BM25_VARIANTS[variant]
    cjk = "text.cjk" in keyword_fields_for(q, None) and extra != "nocjk"
    fields = [f"t.{field}"] + (["t.cjk"] if cjk else [])
    should = []
    if extra == "phrase":
        should.append({"match_phrase": {f"t.{field}": {"query": q, "slop": 3}}})
    if extra == "shingles":
        should.append({"match": {"t.shingles": q}})
    return {
        "size": limit,
        "_source": False,
        "query": {
            "bool": {"must": [{"multi_match": {"query": q, "fields": fields, "type": "most_fields"}}], "should": should}
        },
    }


async def bm25_variants(raw, index: str, chunks: list[tuple[str, str]], queries: list[str], limit: int) -> dict:
    """Ranked chunk ids per BM25 variant and query, on a scratch index of (chunk id, text)."""
    import json

    await raw.request("PUT", f"/{index}", bm25_index_body())
    try:
        for i in range(0, len(chunks), 1000):
            lines = []
            for cid, text in chunks[i : i + 1000]:
                lines += [json.dumps({"index": {"_index": index, "_id": cid}}), json.dumps({"t": text})]
            await raw.request("POST", "/_bulk", "\n".join(lines) + "\n")
        await raw.request("POST", f"/{index}/_refresh")
        runs: dict[str, list[list[str]]] = {}
        for variant in BM25_VARIANTS:
            for q in queries:
                resp = await raw.request("POST", f"/{index}/_search", bm25_query(variant, q, limit))
                runs.setdefault(variant, []).append([h["_id"] for h in resp["hits"]["hits"]])
        return runs
    finally:
        await raw.request("DELETE", f"/{index}")
