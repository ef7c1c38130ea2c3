"""Engine-neutral models: what the store writes and what searches return.

Everything above `reme_es.adapters` speaks in these models, never in query DSL.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .errors import InvalidFilter

# k of reciprocal rank fusion everywhere: client-side fusion, the server's RRF processor and retriever.
RRF_K = 60

# Ids longer than this many UTF-8 bytes are hashed (OpenSearch and Elasticsearch refuse ids over 512 bytes).
MAX_ID_BYTES = 512


def doc_id(key: str) -> str:
    """A document id for `key`: the key itself when short enough, else a stable hash of it."""
    if len(key.encode("utf-8")) <= MAX_ID_BYTES:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def chunk_id(path: str, start: int, end: int, text: str) -> str:
    """ReMe's deterministic chunk id: sha256 of "path start end text" (FileChunk.set_hash_id)."""
    return hashlib.sha256(" ".join([path, str(start), str(end), text]).encode("utf-8")).hexdigest()


_DATE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:\.md)?$")


def date_from_path(path: str) -> str | None:
    """The `YYYY-MM-DD` date in a path's second segment (`daily/2026-05-18/x.md`, `daily/2026-05-18.md`)."""
    parts = path.split("/")
    if len(parts) < 2:
        return None
    m = _DATE_RE.match(parts[1])
    if not m:
        return None
    try:
        dt.date.fromisoformat(m.group(1))
    except ValueError:
        return None
    return m.group(1)


class Link(BaseModel):
    """One wikilink edge: `source` file links to `target` (literal, as written), with an optional anchor."""

    model_config = ConfigDict(frozen=True)

    source: str
    target: str
    anchor: str = ""

    @property
    def id(self) -> str:
        """Deterministic id of the edge."""
        return doc_id(f"{self.source}\x1f{self.target}\x1f{self.anchor}")


class LinkScope(StrEnum):
    """Which links to return: REAL (target indexed), VIRTUAL (target not indexed), or ALL."""

    REAL = "real"
    VIRTUAL = "virtual"
    ALL = "all"


class Chunk(BaseModel):
    """One searchable piece of a file."""

    id: str
    path: str
    start_line: int = 0
    end_line: int = 0
    text: str
    hash: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None
    # who said it, as search candidates carry it (the stored `speaker`: `sources.chunk_speaker`); not written from here
    speaker: str = ""
    # whether it is a question, as search candidates carry it (the stored `question`: `sources.chunk_asks`)
    question: bool = False
    # its words, as search candidates carry them (the stored `words`: 0 where the chunk was written before the field)
    words: int = 0


class FileDoc(BaseModel):
    """One indexed file: its mtime, chunk ids, front matter and outlinks (in order)."""

    path: str
    st_mtime: float = 0.0
    chunk_ids: list[str] = Field(default_factory=list)
    front_matter: dict[str, Any] = Field(default_factory=dict)
    links: list[Link] = Field(default_factory=list)
    size: int = 0
    hash: str = ""


class Hit(BaseModel):
    """A search result: the chunk, and the per-branch scores that explain its rank."""

    chunk: Chunk
    scores: dict[str, float] = Field(default_factory=dict)

    @property
    def score(self) -> float:
        """The score the hit was ranked by."""
        return self.scores.get("score", 0.0)


Fusion = Literal["native", "client", "keyword", "vector", "none"]  # how a search's branches were fused


class Stage(BaseModel):
    """One stage of a search as it ran: its candidates in rank order with their score after it (`ranking`, pairs of
    chunk id and score), and what it did (`note`). The search records these as it ranks; `store.explain` reads them."""

    name: str
    ranking: list[tuple[str, float]] = Field(default_factory=list)
    note: str = ""
    branch: bool = False  # a branch's own ranking (BM25, k-NN, their feedback passes), before fusion


class SearchResult(BaseModel):
    """Hits plus what happened: branch counts, how fusion was done, and each stage's ranking (`stages`)."""

    hits: list[Hit]
    keyword_hits: int = 0
    vector_hits: int = 0
    fusion: Fusion = "none"
    stages: list[Stage] = Field(default_factory=list)


class Neighbour(BaseModel):
    """A linked file shown with a hit: direction, path, and name/description from its front matter."""

    direction: Literal["out", "in"]
    path: str
    anchor: str = ""
    real: bool = True
    name: str = ""
    description: str = ""


class Capabilities(BaseModel):
    """What the connected server can do, probed once at connect."""

    engine: str  # the name the dialect that probed is registered under (`reme_es.adapters.engines`)
    version: str
    knn: bool = False
    knn_engines: list[str] = Field(default_factory=list)
    english_analyzer: bool = False
    cjk_analyzer: bool = False
    pattern_capture_filter: bool = False  # analysis-common's (or reme-es' ES test plugin's): splits link paths
    flat_metadata: bool = False
    hybrid_query: bool = False
    normalization_processor: bool = False
    rrf_processor: bool = False
    rrf_retriever: bool = False
    rrf_weights: bool = False  # the RRF processor takes branch weights (OpenSearch 3.0+)
    derived_vectors: bool = False
    knn_ef_search: bool = False  # a k-NN query takes its candidates per segment (OpenSearch method_parameters, 2.19+)
    knn_merge_pays: bool = False  # a merged graph searches faster: the optimize job merges (measured, optimize_job)

    @property
    def version_tuple(self) -> tuple[int, ...]:
        """Numeric version, e.g. (2, 19, 1)."""
        return tuple(int(x) for x in re.findall(r"\d+", self.version)[:3])


_PATH_KEYS = ("path", "paths")
_PREFIX_KEYS = ("path_prefix", "path_prefixes", "prefix", "prefixes")
_SCALAR = (str, int, float, bool)


def _as_str_list(key: str, value: Any) -> list[str]:
    values = value if isinstance(value, (list, tuple, set)) else [value]
    out = []
    for v in values:
        if not isinstance(v, str):
            raise InvalidFilter(f"filter {key!r} takes a string or a list of strings, got {type(v).__name__}")
        out.append(v)
    return out


def _as_date(key: str, value: Any) -> str | None:
    if value in (None, ""):
        return None
    if isinstance(value, dt.date):
        return value.isoformat()[:10]
    if isinstance(value, str):
        try:  # the whole text: a date, or an ISO date-time whose date counts ("2026-05-18garbage" is refused)
            return dt.datetime.fromisoformat(value).date().isoformat()
        except ValueError:
            pass
    raise InvalidFilter(f"filter {key!r} must be a date written YYYY-MM-DD, got {value!r}")


def _as_bool(key: str, value: Any) -> bool:
    """A flag: True, False, 1, 0 or None (False). Anything else, such as the string "false", is refused, not read
    as truthy."""
    if value is None or isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise InvalidFilter(f"filter {key!r} must be true or false, got {value!r}")


class SearchFilter(BaseModel):
    """A search filter with ReMe's local-store semantics, every part applied server-side.

    paths: exact paths (any of; an empty list matches nothing); prefixes: path prefixes (any of); start/end_date:
    inclusive, compared with the date in the path's second segment (chunks without a date pass unless strict_date);
    metadata: key -> allowed values (any of; None matches a missing key).
    """

    paths: list[str] | None = None
    prefixes: list[str] = Field(default_factory=list)
    start_date: str | None = None
    end_date: str | None = None
    strict_date: bool = False
    metadata: dict[str, list[str | int | float | bool | None]] = Field(default_factory=dict)
    # the workspace of a shared index set the store reads (set by the store, never parsed from a caller's dict)
    workspace: str | None = None

    @property
    def empty(self) -> bool:
        """True when the filter lets every chunk through."""
        return not (self.paths is not None or self.prefixes or self.start_date or self.end_date or self.metadata)

    @classmethod
    def parse(cls, raw: dict[str, Any] | SearchFilter | None) -> SearchFilter:
        """Build a filter from ReMe's `search_filter` dict; unknown keys are metadata equality."""
        if raw is None:
            return cls()
        if isinstance(raw, SearchFilter):
            return raw
        if not isinstance(raw, dict):
            raise InvalidFilter(f"search_filter must be a dict, got {type(raw).__name__}")
        out = cls()
        for key, value in raw.items():
            if key in _PATH_KEYS:
                out.paths = (out.paths or []) + _as_str_list(key, value)
            elif value is None and key in (*_PREFIX_KEYS, "start_date", "end_date", "metadata"):
                continue
            elif key in _PREFIX_KEYS:
                out.prefixes += _as_str_list(key, value)
            elif key == "start_date":
                out.start_date = _as_date(key, value)
            elif key == "end_date":
                out.end_date = _as_date(key, value)
            elif key == "strict_date_filter":
                out.strict_date = _as_bool(key, value)
            elif key == "metadata":
                if not isinstance(value, dict):
                    raise InvalidFilter(f"filter 'metadata' must be a dict, got {type(value).__name__}")
                for mk, mv in value.items():
                    out._add_metadata(mk, mv)
            else:
                out._add_metadata(key, value)
        return out

    def _add_metadata(self, key: object, value: Any) -> None:
        if not isinstance(key, str) or not key or key.startswith(".") or key.endswith("."):
            raise InvalidFilter(f"metadata filter key {key!r} is not a valid field name")
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        for v in values:
            if v is not None and not isinstance(v, _SCALAR):
                raise InvalidFilter(
                    f"filter {key!r}: values must be strings, numbers or booleans (or a list of them), "
                    f"got {type(v).__name__}"
                )
            if isinstance(v, float) and not math.isfinite(v):  # no JSON form: orjson writes null, no number
                raise InvalidFilter(f"filter {key!r}: {v!r} has no JSON form to match; give a finite number")
        self.metadata.setdefault(key, []).extend(values)
