"""The engine-neutral part of an adapter: request builders shared by every dialect, and the dialect surface.

A dialect (one module per engine) subclasses `Dialect` and overrides only what differs: how a client is
made and called, the vector field and k-NN clause, the metadata field type, the capability probe and the
native hybrid request. Builders are pure functions of their arguments; only `Connection` does I/O.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from ..errors import (
    AuthError,
    BulkError,
    BulkItemFailure,
    ConfigError,
    ConnectionFailed,
    MappingError,
    ReMeESError,
    RequestFailed,
)
from ..models import Capabilities, SearchFilter

log = logging.getLogger(__name__)

SOURCE_EXCLUDES = ["embedding"]
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
AWS_SERVICES = ("es", "aoss")


# ----------------------------------------------------------------------------------- pure builders


def metadata_value(value: Any) -> str:
    """How a scalar metadata value is indexed by flat_object / flattened (JSON text of non-strings)."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def filter_clauses(f: SearchFilter) -> list[dict]:
    """Translate a SearchFilter into bool-filter clauses (identical DSL on OpenSearch and Elasticsearch)."""
    clauses: list[dict] = []
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
            clauses.append(options[0] if len(options) == 1 else {"bool": {"should": options, "minimum_should_match": 1}})
    return clauses


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def keyword_fields_for(text: str, fields: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Fields a keyword query searches: `text` (english), plus the `text.cjk` bigram field when the query has CJK
    characters (on English text the extra unstemmed field lowers Cranfield nDCG@10 from 0.366 to 0.359)."""
    if fields:
        return fields
    return ("text", "text.cjk") if _CJK.search(text) else ("text",)


def keyword_query(text: str, f: SearchFilter, fields: tuple[str, ...] | None = None) -> dict:
    """A BM25 query over chunk text; the text goes to `match`/`multi_match`, never to query_string syntax."""
    fields = keyword_fields_for(text, fields)
    if len(fields) == 1:
        must: dict = {"match": {fields[0]: {"query": text}}}
    else:
        must = {"multi_match": {"query": text, "fields": list(fields), "type": "most_fields"}}
    query: dict = {"bool": {"must": [must]}}
    if clauses := filter_clauses(f):
        query["bool"]["filter"] = clauses
    return query


def keyword_body(text: str, size: int, f: SearchFilter, fields: tuple[str, ...] | None = None) -> dict:
    """A complete keyword search request body."""
    return {"size": size, "query": keyword_query(text, f, fields), "_source": {"excludes": SOURCE_EXCLUDES}}


def candidates_only(body: dict) -> dict:
    """The same search, returning only each hit's score, chunk id and path (from doc values).

    Fetching `_source` is most of a search's cost when chunks carry vectors: every hit's stored fields (the
    source with its embedding) are decompressed and parsed, even with the embedding excluded. The store ranks
    candidates from this lean answer and fetches the sources of the hits it returns in one `_mget`."""
    return {**body, "_source": False, "stored_fields": "_none_", "docvalue_fields": ["chunk_id", "path"]}


def knn_candidates(k: int) -> int:
    """How many candidates an HNSW search keeps per segment for the k nearest: 5k (at least 100), the effort ReMe's
    faiss store spends (efSearch = limit x 5). With k alone recall@10 at k 50 was 0.83 on 100k chunks."""
    return min(10_000, max(100, 5 * k))


def cosine_from_score(score: float) -> float:
    """Cosine similarity from a k-NN score of the cosine space: both engines report (1 + cos) / 2."""
    return 2.0 * score - 1.0


def redact_host(url: str) -> str:
    """A host URL fit for messages and logs: a password written into it (`user:pw@host`) becomes `***`."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, hostport = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}" if ":" in userinfo else parts.netloc))


# --------------------------------------------------------------------------------------- dialect


@dataclass
class ClientSettings:
    """Connection settings; secrets are kept out of repr and never logged."""

    hosts: list[str]
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    verify_certs: bool = True
    ca_certs: str | None = None
    client_cert: str | None = None
    client_key: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    max_retries: int = 3
    aws_region: str | None = None  # set: sign requests with AWS SigV4 (credentials from botocore's default chain)
    aws_service: str = "es"  # "es": Amazon OpenSearch Service, "aoss": OpenSearch Serverless

    def __post_init__(self) -> None:
        if not self.aws_region:
            return
        if self.aws_service not in AWS_SERVICES:
            raise ConfigError(f"aws_service must be one of {', '.join(AWS_SERVICES)}, got {self.aws_service!r}")
        if self.username is not None or self.password or self.api_key:
            raise ConfigError(
                "aws_region signs requests with AWS SigV4; remove username/password and api_key "
                "(one authentication method at a time)"
            )

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["hosts"] = [redact_host(h) for h in self.hosts]
        return f"ClientSettings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


@dataclass
class BulkOutcome:
    """Result of a bulk write: how many items succeeded and which failed (id, status, reason)."""

    succeeded: int = 0
    failures: list[BulkItemFailure] = field(default_factory=list)
    # (index as given in the action, id) -> (_seq_no, _primary_term) of every document this bulk wrote
    versions: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def raise_for_failures(self) -> None:
        """Raise BulkError listing every failed item, if any."""
        if self.failures:
            raise BulkError(self.failures, self.succeeded)


class Dialect(ABC):
    """What differs between engines. Subclasses are stateless apart from the client they hold."""

    engine: str = ""
    metadata_type: str = ""

    def __init__(self, settings: ClientSettings):
        self.settings = settings
        self._client: Any = None

    # --- client ---------------------------------------------------------------------------------
    @abstractmethod
    def _make_client(self) -> Any:
        """Create the engine's async client (lazily, on first use)."""

    @property
    def client(self) -> Any:
        """The engine client, created on first use."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    async def close(self) -> None:
        """Close the client's connections."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    @abstractmethod
    async def _perform(self, method: str, path: str, body: Any, params: dict | None) -> Any:
        """Send one request and return the decoded body."""

    @abstractmethod
    def _bulk_helper(self) -> Any:
        """The client library's async_streaming_bulk."""

    @abstractmethod
    def _error_info(self, exc: Exception) -> tuple[int | None, str, bool]:
        """(status, reason, is_connection_error) of a client exception, or (None, '', False) if foreign."""

    async def request(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """Send one request; client exceptions are mapped to the ReMeESError tree."""
        try:
            return await self._perform(method, path, body, params)
        except ReMeESError:
            raise
        except Exception as exc:
            raise self.map_error(exc, f"{method} {path}") from exc

    def map_error(self, exc: Exception, what: str) -> ReMeESError:
        """Map a client exception to the ReMeESError tree (the only place this is done)."""
        status, reason, connection = self._error_info(exc)
        hosts = ", ".join(redact_host(h) for h in self.settings.hosts)
        if connection:
            tls = ""
            if re.search(r"certificate|ssl|tls", reason, re.IGNORECASE):
                tls = (
                    "; the TLS handshake failed: set ca_certs to the CA file that signed the server certificate "
                    "(verify_certs=False skips verification: tests only)"
                )
            return ConnectionFailed(
                f"could not reach {hosts} ({reason}); check that the server runs and the hosts/TLS settings "
                f"are right (start a local node with `reme-es server start`){tls}"
            )
        if status in (401, 403):
            return AuthError(
                f"{what}: the server answered {status} ({reason}); check the username/password or API key, "
                "and that the role may use this index prefix"
            )
        if status is None:
            return ReMeESError(f"{what} failed: {type(exc).__name__}: {exc}")
        return RequestFailed(f"{what} failed with {status}: {reason}", status=status, reason=reason)

    async def bulk(self, actions: list[dict], max_retries: int = 8, chunk_bytes: int = 10 << 20) -> BulkOutcome:
        """Run bulk actions; 429/5xx items are retried with exponential backoff, every failure is reported."""
        outcome = BulkOutcome()
        pending = actions
        helper = self._bulk_helper()
        for attempt in range(max_retries + 1):
            retry: list[dict] = []
            try:
                stream = helper(
                    self.client,
                    pending,
                    chunk_size=2000,
                    max_chunk_bytes=chunk_bytes,
                    raise_on_error=False,
                    raise_on_exception=False,
                    max_retries=0,
                    yield_ok=True,
                )
                results = [item async for item in stream]
            except Exception as exc:
                raise self.map_error(exc, "bulk") from exc
            for action, (ok, item) in zip(pending, results, strict=True):
                op, info = next(iter(item.items()))
                raw_status = info.get("status")
                status = raw_status if isinstance(raw_status, int) else 503  # transport failure: no item status
                if ok or (op == "delete" and status == 404):
                    outcome.succeeded += 1
                    if "_seq_no" in info and op != "delete":
                        key = (action["_index"], str(action.get("_id")))
                        outcome.versions[key] = (info["_seq_no"], info["_primary_term"])
                    continue
                if status in RETRYABLE_STATUS and attempt < max_retries:
                    retry.append(action)
                    continue
                error = info.get("error")
                reason = error.get("reason", str(error)) if isinstance(error, dict) else str(error or info)
                outcome.failures.append(BulkItemFailure(str(info.get("_index", "")), str(info.get("_id")), status, reason))
            if not retry:
                break
            delay = min(10.0, 0.2 * 2**attempt) * (0.5 + random.random())
            log.warning("bulk: %d item(s) rejected with 429/5xx, retry %d in %.1fs", len(retry), attempt + 1, delay)
            await asyncio.sleep(delay)
            pending = retry
        return outcome

    # --- mappings -------------------------------------------------------------------------------
    @abstractmethod
    def vector_mapping(self, dims: int, m: int, ef_construction: int) -> dict:
        """Mapping of the embedding field."""

    def index_settings(self, with_vectors: bool) -> dict:
        """Index-level settings this engine needs beyond the template's."""
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
        self, vector: list[float], k: int, f: SearchFilter, num_candidates: int | None = None, size: int | None = None
    ) -> dict:
        """A k-NN request body with the filter inside the k-NN clause: the `k` nearest, of which `size` (default k)
        come back."""

    def hybrid_body(
        self, text: str, vector: list[float], size: int, f: SearchFilter, fields: tuple[str, ...] | None = None
    ) -> dict:
        """A native hybrid request body (engines without one raise)."""
        raise NotImplementedError

    uses_search_pipeline = False

    def native_hybrid(self, caps: Capabilities, kind: str | None) -> bool:
        """Whether this server can fuse `kind` ('rrf' or 'minmax') in one request."""
        return False

    def pipeline_body(self, kind: str, vector_weight: float) -> dict:
        """A search pipeline body for native hybrid (engines without pipelines raise)."""
        raise NotImplementedError

    @abstractmethod
    async def probe(self) -> Capabilities:
        """Ask the server what it can do."""

    async def _analyzer_works(self, analyzer: str) -> bool:
        try:
            await self.request("POST", "/_analyze", {"analyzer": analyzer, "text": "probe"})
        except RequestFailed:
            return False
        return True


def validate_hosts(hosts: Iterable[str] | str | None) -> list[str]:
    """Normalise a host list given as a list or a comma-separated string."""
    if hosts is None:
        return []
    items = hosts.split(",") if isinstance(hosts, str) else list(hosts)
    out = [h.strip().rstrip("/") for h in items if h and h.strip()]
    for h in out:
        if "://" not in h:
            raise ConfigError(f"host {h!r} needs a scheme, e.g. http://{h} or https://{h}")
    return out


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
