"""The engine-neutral part of an adapter: request builders shared by every dialect, and the dialect surface.

A dialect (one module per engine, found by entry point: `reme_es.adapters.engines`) subclasses `Dialect` and
overrides only what differs: its transport (how a client is made and called), the vector field and k-NN
clause, the metadata field type, the capability probe and the native hybrid request. Builders are pure
functions of their arguments; only the transport (`reme_es.adapters.transport`) does I/O.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

import orjson

from ..core.engine_settings import CALIBRATION_BODIES, RETRYABLE_STATUS, knn_candidates
from ..core.errors import BulkItemFailure, CapabilityError, MappingError, RequestFailed
from ..core.models import RRF_K, Capabilities, SearchFilter
from .transport import (
    AWS_SERVICES,
    BulkOutcome,
    ClientSettings,
    Transport,
    redact_host,
    validate_hosts,
)

SOURCE_EXCLUDES = ["embedding"]


# ----------------------------------------------------------------------------------- pure builders


def metadata_value(value: Any) -> str:
    """How a scalar metadata value is indexed by flat_object / flattened (JSON text of non-strings)."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def filter_clauses(f: SearchFilter) -> list[dict]:
    """Translate a SearchFilter into bool-filter clauses (identical DSL on OpenSearch and Elasticsearch)."""
    clauses: list[dict] = [{"term": {"workspace": f.workspace}}] if f.workspace else []
    if f.paths is not None:
        clauses.append({"terms": {"path": sorted(set(f.paths))}} if f.paths else {"match_none": {}})
    if f.prefixes:
        shoulds = [{"prefix": {"path": p}} for p in dict.fromkeys(f.prefixes)]
        clauses.append(shoulds[0] if len(shoulds) == 1 else {"bool": {"should": shoulds, "minimum_should_match": 1}})
    if f.start_date or f.end_date:
        bounds = {k: v for k, v in (("gte", f.start_date), ("lte", f.end_date)) if v}
        in_range = {"range": {"date": bounds}}
        if f.strict_date:
            clauses.append(in_range)
        else:
            no_date = {"bool": {"must_not": [{"exists": {"field": "date"}}]}}
            clauses.append({"bool": {"should": [in_range, no_date], "minimum_should_match": 1}})
    for key, values in f.metadata.items():
        field_name = f"metadata.{key}"
        present = sorted({metadata_value(v) for v in values if v is not None})
        options: list[dict] = [{"terms": {field_name: present}}] if present else []
        if any(v is None for v in values):
            options.append({"bool": {"must_not": [{"exists": {"field": field_name}}]}})
        if not options:
            clauses.append({"match_none": {}})
        else:
            either = {"bool": {"should": options, "minimum_should_match": 1}}
            clauses.append(options[0] if len(options) == 1 else either)
    return clauses


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def keyword_fields_for(text: str, fields: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Fields a keyword query searches: `text` (english), plus the `text.cjk` bigram field when the query has CJK
    characters (on English text the extra unstemmed field costs quality: docs/decisions.md)."""
    if fields:
        return fields
    return ("text", "text.cjk") if _CJK.search(text) else ("text",)


def keyword_query(text: str, f: SearchFilter, fields: tuple[str, ...] | None = None, context: float = 0.0) -> dict:
    """A BM25 query over chunk text; the text goes to `match`/`multi_match`, never to query_string syntax. With
    `context` > 0, a chunk also matches by its neighbours' text (the `context` field), that match's score weighted by
    `context`: a chunk matching either is a hit."""
    fields = keyword_fields_for(text, fields)
    if len(fields) == 1:
        must: dict = {"match": {fields[0]: {"query": text}}}
    else:
        must = {"multi_match": {"query": text, "fields": list(fields), "type": "most_fields"}}
    if context > 0:
        must = {"bool": {"should": [must, {"match": {"context": {"query": text, "boost": context}}}]}}
    query: dict = {"bool": {"must": [must]}}
    if clauses := filter_clauses(f):
        query["bool"]["filter"] = clauses
    return query


def keyword_body(
    text: str, size: int, f: SearchFilter, fields: tuple[str, ...] | None = None, context: float = 0.0
) -> dict:
    """A complete keyword search request body (`keyword_query`); it counts no hits beyond those returned
    (`track_total_hits: false` lets BM25 skip whole blocks of documents that cannot make the top `size`)."""
    return {
        "size": size,
        "query": keyword_query(text, f, fields, context),
        "_source": {"excludes": SOURCE_EXCLUDES},
        "track_total_hits": False,
    }


def feedback_keyword_body(
    index: str,
    text: str,
    like: list[tuple[str, str]],
    size: int,
    f: SearchFilter,
    fields: tuple[str, ...] | None = None,
    terms: int = 10,
    boost: float = 0.5,
    context: float = 0.0,
) -> dict:
    """`keyword_body`'s BM25 query OR-ed with pseudo-relevance feedback: a `more_like_this` of the `like` chunks
    ((doc id, routing path) of the top keyword hits), their `terms` most distinctive terms at `boost`; a hit matches
    either, and the filter holds for both."""
    fields = keyword_fields_for(text, fields)
    query = keyword_query(text, f, fields, context)["bool"]
    mlt = {
        "more_like_this": {
            "fields": list(fields),
            "like": [{"_index": index, "_id": i, "routing": r} for i, r in like],
            "min_term_freq": 1,
            "min_doc_freq": 1,
            "max_query_terms": terms,
            "include": True,
            "boost": boost,
        }
    }
    query = {"should": [*query.pop("must"), mlt], "minimum_should_match": 1, **query}
    return {"size": size, "query": {"bool": query}, "_source": {"excludes": SOURCE_EXCLUDES}, "track_total_hits": False}


def candidates_only(body: dict, with_hash: bool = False) -> dict:
    """The same search, returning only each hit's score, chunk id, path, speaker, question flag and word count (from
    doc values), and with `with_hash` its text hash (which lets the store fold repeated texts without fetching them;
    asked for only when the store collapses, as it costs a little per search).

    Fetching `_source` is most of a search's cost when chunks carry vectors: every hit's stored fields (the
    source with its embedding) are decompressed and parsed, even with the embedding excluded. The store ranks
    candidates from this lean answer and fetches the sources of the hits it returns in one `_mget`."""
    fields = ["chunk_id", "path", "speaker", "question", "words"] + (["hash"] if with_hash else [])
    return {**body, "_source": False, "stored_fields": "_none_", "docvalue_fields": fields}


def top_bodies(bodies: list[dict], n: int, vectors_source: bool | dict) -> list[dict]:
    """Per branch body (keyword, then k-NN) the same search for its top `n` hits with their `_source`: without
    vectors for the keyword branch, with them (`vectors_source`, the dialect's `source_with_vectors`) for k-NN."""
    sources = [{"excludes": SOURCE_EXCLUDES}, vectors_source]
    return [{**body, "size": n, "_source": source} for body, source in zip(bodies, sources)]


def with_vector(f: SearchFilter) -> dict:
    """The entries of the filter that have a vector."""
    return {"bool": {"filter": [*filter_clauses(f), {"exists": {"field": "embedding"}}]}}


def cosine_from_score(score: float) -> float:
    """Cosine similarity from a k-NN score of the cosine space: both engines report (1 + cos) / 2."""
    return 2.0 * score - 1.0


# --------------------------------------------------------------------------------------- dialect


class Dialect(ABC):
    """What differs between engines: capability flags, pure builders, and capabilities from node info.

    A dialect object holds no state of its own beyond its settings and its `transport` (the client); `probe`
    returns the server's `Capabilities` and changes nothing, and builders that depend on the server take those
    capabilities as an argument. It sends nothing itself but `probe`'s reads: the `IndexPort` sends every request
    through `transport`, the engine's client the dialect makes from its settings.
    """

    engine: str = ""
    metadata_type: str = ""
    transport_class: type[Transport]
    uses_search_pipeline = False  # native hybrid needs a search pipeline named in the request
    refreshes_itself = False  # True: no refresh API; writes become searchable on the engine's own schedule
    merges_itself = False  # True: no force-merge or index stats API
    cluster_identity = True  # the server tells its cluster UUID (`GET /` or the cluster state), checked by the port

    def __init__(self, settings: ClientSettings):
        self.settings = settings
        self.transport = self.transport_class(settings)

    # --- mappings -------------------------------------------------------------------------------
    @abstractmethod
    def vector_mapping(self, dims: int, m: int, ef_construction: int) -> dict:
        """Mapping of the embedding field."""

    def index_settings(self, with_vectors: bool, caps: Capabilities | None = None) -> dict:
        """Index-level settings this engine needs beyond the template's (on the server `caps` describe)."""
        return {}

    def vector_read_params(self) -> dict:
        """Params of a get/_mget whose `_source` must carry the vectors (an engine may leave them out by default)."""
        return {}

    def source_with_vectors(self) -> bool | dict:
        """The `_source` of a search whose hits must carry their vectors (reindex copies them)."""
        return True

    @staticmethod
    def vector_dims(mapping: dict) -> int | None:
        """The dimension of an embedding field mapping, or None if it is not a vector field."""
        return mapping.get("dimension") or mapping.get("dims")

    # --- requests -------------------------------------------------------------------------------
    @abstractmethod
    def knn_body(
        self,
        vector: list[float],
        k: int,
        f: SearchFilter,
        num_candidates: int | None = None,
        size: int | None = None,
        caps: Capabilities | None = None,
    ) -> dict:
        """A k-NN request body with the filter inside the k-NN clause: the `k` nearest, of which `size` (default k)
        come back. `num_candidates` is the per-segment exploration depth (default `knn_candidates(k)`) where the
        engine takes one; `caps` (None: a current server) say which request options the server takes."""

    def hybrid_body(
        self,
        text: str,
        vector: list[float],
        size: int,
        f: SearchFilter,
        fields: tuple[str, ...] | None = None,
        caps: Capabilities | None = None,
        context: float = 0.0,
        num_candidates: int | None = None,
    ) -> dict:
        """A native hybrid request body (engines without one raise); `num_candidates` as for `knn_body`."""
        raise CapabilityError(f"{self.engine} has no native hybrid request; use hybrid: client")

    def native_hybrid(self, caps: Capabilities, kind: str | None) -> bool:
        """Whether this server can fuse `kind` ('rrf' or 'minmax') in one request."""
        return False

    def hybrid_params(self, caps: Capabilities | None) -> dict:
        """URL parameters of a native hybrid request beyond the pipeline (e.g. to get each branch's score back)."""
        return {}

    def hybrid_score_ceiling(self, kind: str | None) -> float:
        """The highest score a native fusion of `kind` can give (above it, raw sub-query scores came back)."""
        return 1.0 if kind == "minmax" else 2.0 / (RRF_K + 1)

    def pipeline_body(self, kind: str, vector_weight: float, weighted_rrf: bool = False) -> dict:
        """A search pipeline body for native hybrid (engines without pipelines raise)."""
        raise CapabilityError(f"{self.engine} has no search pipelines; use hybrid: client")

    def pipeline_weighted(self, caps: Capabilities | None, kind: str | None) -> bool:
        """Whether the pipeline of `kind` on this server carries the branch weights (and so names them)."""
        return True

    # --- k-NN width calibration (its decisions: reme_es/store/calibration.py) ---------------------
    def sets_knn_width(self, caps: Capabilities | None) -> bool:
        """Whether searches on this server (`caps`; None: a current one) take the HNSW width that calibration
        measures, with index stats to measure it by."""
        return not self.merges_itself

    def vectors_source(self) -> list | dict:
        """The `_source` of a search whose hits carry their vectors and nothing else."""
        return ["embedding"]

    def sample_body(self, f: SearchFilter, size: int, seed: int) -> dict:
        """A random sample (by `seed`) of `size` entries of the filter with a vector, carrying their vectors."""
        random_score = {"seed": seed, "field": CALIBRATION_BODIES["random_field"]}
        return {
            "size": size,
            "query": {"function_score": {"query": with_vector(f), "random_score": random_score}},
            "_source": self.vectors_source(),
            "track_total_hits": False,
        }

    def exact_script(self, vector: list[float]) -> dict:
        """The scoring script of an exact cosine search (engines without one raise)."""
        raise CapabilityError(f"{self.engine} has no exact k-NN scoring script")

    def exact_body(self, vector: list[float], f: SearchFilter, size: int) -> dict:
        """An exact (brute-force) cosine search over the filter's entries with a vector: the `size` nearest."""
        script_score = {"query": with_vector(f), "script": self.exact_script(vector)}
        return {"size": size, "query": {"script_score": script_score}, "_source": False}

    # --- capabilities ---------------------------------------------------------------------------
    @classmethod
    def detects(cls, node: dict) -> bool:
        """Whether a `_nodes/_local` entry comes from this dialect's engine (`engine: auto`; pure). A dialect that
        cannot be told from node info (a managed service without `_nodes`) keeps this False."""
        return False

    @abstractmethod
    async def probe(self) -> Capabilities:
        """Ask the server what it can do (reads only; the dialect is not changed)."""

    @staticmethod
    @abstractmethod
    def capabilities(node: dict, analyzers: dict[str, bool], license_type: str | None = None) -> Capabilities:
        """Capabilities from a `_nodes` entry, the analyzers that work and the license type (pure)."""

    async def _analyzers(self) -> dict[str, bool]:
        """Which of the template's language analyzers the server has, and its `pattern_capture` filter."""
        found = {name: await self._analyzer_works(name) for name in ("english", "cjk")}
        found["pattern_capture"] = await self._pattern_capture_works()
        return found

    async def _analyzer_works(self, analyzer: str) -> bool:
        try:
            await self.transport.request("POST", "/_analyze", {"analyzer": analyzer, "text": "probe"})
        except RequestFailed:
            return False
        return True

    async def local_node(self) -> dict:
        """The `_nodes/_local/plugins` entry of the node answering."""
        nodes = (await self.transport.request("GET", "/_nodes/_local/plugins"))["nodes"]
        return next(iter(nodes.values()))

    async def _pattern_capture_works(self) -> bool:
        body = {"tokenizer": "standard", "filter": [{"type": "pattern_capture", "patterns": ["(a)"]}], "text": "probe"}
        try:
            await self.transport.request("POST", "/_analyze", body)
        except RequestFailed:
            return False
        return True


def installed_names(node: dict) -> set[str]:
    """Names of a node's modules and plugins, from its `_nodes` entry."""
    return {m["name"] for m in node.get("modules", [])} | {p["name"] for p in node.get("plugins", [])}


def ensure_mapping_compatible(index: str, actual: dict, expected: dict) -> None:
    """Raise MappingError when an existing index lacks or retypes a field reme-es needs."""
    actual_props = actual.get("properties", {})
    problems = []
    for name, spec in expected.get("properties", {}).items():
        have = actual_props.get(name)
        if have is None:
            problems.append(f"field {name!r} is missing")
        elif have.get("type", "object") != spec.get("type", "object"):
            problems.append(f"field {name!r} is {have.get('type', 'object')}, expected {spec.get('type', 'object')}")
    if problems:
        raise MappingError(
            f"index {index} exists with an incompatible mapping: {'; '.join(problems)}. "
            "Rebuild it with `reme-es reindex` or choose another index prefix."
        )


__all__ = [
    "AWS_SERVICES",
    "RETRYABLE_STATUS",
    "SOURCE_EXCLUDES",
    "BulkItemFailure",
    "BulkOutcome",
    "ClientSettings",
    "Dialect",
    "candidates_only",
    "cosine_from_score",
    "ensure_mapping_compatible",
    "filter_clauses",
    "installed_names",
    "keyword_body",
    "keyword_query",
    "knn_candidates",
    "redact_host",
    "validate_hosts",
    "with_vector",
]
