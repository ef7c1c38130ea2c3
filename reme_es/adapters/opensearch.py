"""OpenSearch dialect: opensearch-py, knn_vector (lucene HNSW), flat_object metadata, hybrid query + pipelines."""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import orjson

from ..core.engine_settings import CALIBRATION_BODIES, detected_engine
from ..core.engine_settings import vector_mapping as engine_vector_mapping
from ..core.errors import CapabilityError, ConfigError
from ..core.models import Capabilities, SearchFilter
from .dialect import SOURCE_EXCLUDES, Dialect, filter_clauses, installed_names, keyword_query, knn_candidates
from .error_map import ErrorInfo, connection_kind, error_body_info
from .transport import Transport


class _OrjsonSerializer:
    """opensearch-py serializer using orjson (vectors dominate request bodies)."""

    mimetype = "application/json"

    def dumps(self, data: Any) -> str:
        if isinstance(data, str):
            return data
        if isinstance(data, bytes):
            return data.decode()
        return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()

    def loads(self, s: str | bytes) -> Any:
        return orjson.loads(s)


_SESSION_TOKEN = re.compile(r"(x-amz-security-token:)\S+", re.IGNORECASE)


class _HideSessionToken(logging.Filter):
    """botocore.auth logs the canonical request at DEBUG, session token included; this masks the token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = _SESSION_TOKEN.sub(r"\1***", record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_SESSION_TOKEN.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        return True


def _botocore_session() -> Any:
    try:
        from botocore.session import Session
    except ImportError as exc:
        raise ConfigError("AWS SigV4 signing (aws_region) needs botocore: pip install 'reme-es[aws]'") from exc
    return Session()


def aws_sigv4_auth(region: str, service: str) -> Any:
    """opensearch-py's async SigV4 signer, with credentials from botocore's default chain (env, profile, role)."""
    session = _botocore_session()
    from botocore.exceptions import BotoCoreError
    from opensearchpy import AWSV4SignerAsyncAuth

    try:
        credentials = session.get_credentials()
    except BotoCoreError as exc:
        raise ConfigError(f"cannot load AWS credentials for SigV4 signing: {exc}") from exc
    if credentials is None:
        raise ConfigError(
            "aws_region is set but no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(and AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE, or run with an instance or task role"
        )
    auth_log = logging.getLogger("botocore.auth")
    if not any(isinstance(f, _HideSessionToken) for f in auth_log.filters):
        auth_log.addFilter(_HideSessionToken())
    return AWSV4SignerAsyncAuth(credentials, region, service)


class OpenSearchTransport(Transport):
    """opensearch-py's AsyncOpenSearch, with orjson, SigV4 signing when `aws_region` is set, and every pool
    connection closed on `close`."""

    def _make_client(self) -> Any:
        from opensearchpy import AsyncOpenSearch

        s = self.settings
        kwargs: dict[str, Any] = {
            "hosts": s.hosts,
            "serializer": _OrjsonSerializer(),
            "timeout": s.timeout,
            "max_retries": 0,  # the transport retries, under the shared policy (engine_settings.json `retry`)
            "retry_on_timeout": False,
            "retry_on_status": (),
            "verify_certs": s.verify_certs,
            "ssl_show_warn": False,
        }
        if s.username is not None:
            kwargs["http_auth"] = (s.username, s.password or "")
        if s.api_key:
            kwargs["headers"] = {"Authorization": f"ApiKey {s.api_key}"}
        if s.aws_region:
            from opensearchpy import AsyncHttpConnection

            # the default AIOHttpConnection ignores a callable http_auth; AsyncHttpConnection signs every request
            kwargs["http_auth"] = aws_sigv4_auth(s.aws_region, s.aws_service)
            kwargs["connection_class"] = AsyncHttpConnection
        if s.ca_certs:
            kwargs["ca_certs"] = s.ca_certs
        if s.client_cert:
            kwargs["client_cert"] = s.client_cert
            kwargs["client_key"] = s.client_key
        return AsyncOpenSearch(**kwargs)

    async def close(self) -> None:
        """Close every connection, also those the pool marked dead (opensearch-py closes only the live ones)."""
        if self._client is not None:
            pool = self._client.transport.connection_pool
            live = set(map(id, pool.connections))
            for conn in getattr(pool, "orig_connections", ()):
                if id(conn) not in live:
                    await conn.close()
        await super().close()

    async def _perform(self, method: str, path: str, body: Any, params: dict | None, timeout: float) -> Any:
        return await self.client.transport.perform_request(method, path, params=params, body=body, timeout=timeout)

    def _bulk_helper(self, timeout: float) -> Any:
        from opensearchpy.helpers import async_streaming_bulk

        # opensearch-py takes a request's own timeout as `request_timeout`, passed through to the transport
        return functools.partial(async_streaming_bulk, self.client, request_timeout=timeout)

    def error_info(self, exc: Exception) -> ErrorInfo | None:
        from opensearchpy.exceptions import ConnectionError as OSConnectionError
        from opensearchpy.exceptions import TransportError

        if isinstance(exc, OSConnectionError):
            return ErrorInfo(reason=str(getattr(exc, "error", "") or exc), connection=connection_kind(exc))
        if isinstance(exc, TransportError):
            return error_body_info(exc.status_code, exc.info, exc.error)
        return None


class OpenSearchDialect(Dialect):
    """OpenSearch 2.x / 3.x."""

    engine = "opensearch"
    metadata_type = "flat_object"
    transport_class = OpenSearchTransport

    def vector_mapping(self, dims: int, m: int, ef_construction: int) -> dict:
        return engine_vector_mapping("opensearch", dims, m, ef_construction)

    def index_settings(self, with_vectors: bool, caps: Capabilities | None = None) -> dict:
        # Derived source (caps.derived_vectors, 2.19+) keeps the vector out of the stored `_source` (get, _mget and
        # scroll put it back from the vector values): a search that fetches hits never parses their vectors.
        if not with_vectors:
            return {}
        if caps is not None and caps.derived_vectors:
            return {"index": {"knn": True, "knn.derived_source.enabled": True}}
        return {"index": {"knn": True}}

    def knn_body(
        self,
        vector: list[float],
        k: int,
        f: SearchFilter,
        num_candidates: int | None = None,
        size: int | None = None,
        caps: Capabilities | None = None,
    ) -> dict:
        query = self.knn_query(vector, k, f, num_candidates, caps)
        return {"size": size or k, "query": query, "_source": {"excludes": SOURCE_EXCLUDES}}

    @staticmethod
    def knn_query(
        vector: list[float],
        k: int,
        f: SearchFilter,
        num_candidates: int | None = None,
        caps: Capabilities | None = None,
    ) -> dict:
        """The k-NN clause; the filter sits inside it (lucene engine: efficient filtering, exact when selective).

        Where the server takes it (`caps.knn_ef_search`, 2.19+; None: assumed) the HNSW search keeps `num_candidates`
        (default `knn_candidates(k)`, as on Elasticsearch) candidates per segment, not just k (docs/decisions.md)."""
        clause: dict = {"vector": vector, "k": k}
        if caps is None or caps.knn_ef_search:
            clause["method_parameters"] = {"ef_search": num_candidates or knn_candidates(k)}
        if clauses := filter_clauses(f):
            clause["filter"] = {"bool": {"filter": clauses}}
        return {"knn": {"embedding": clause}}

    def sets_knn_width(self, caps: Capabilities | None) -> bool:
        # `method_parameters.ef_search` on lucene: 2.19+ (`caps.knn_ef_search`)
        return not self.merges_itself and (caps is None or caps.knn_ef_search)

    def exact_script(self, vector: list[float]) -> dict:
        # the k-NN plugin's scoring script (docs: "Exact k-NN with scoring script")
        params = {"field": "embedding", "query_value": vector, "space_type": CALIBRATION_BODIES["space_type"]}
        return {"source": "knn_score", "lang": "knn", "params": params}

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
        """The hybrid query; its branches are named `keyword` and `vector`, so each hit can tell its branch scores."""
        keyword = keyword_query(text, f, fields, context)
        keyword["bool"]["_name"] = "keyword"
        knn = self.knn_query(vector, size, f, num_candidates, caps)
        knn["knn"]["embedding"]["_name"] = "vector"
        query = {"hybrid": {"queries": [keyword, knn]}}
        return {"size": size, "query": query, "_source": {"excludes": SOURCE_EXCLUDES}}

    def hybrid_params(self, caps: Capabilities | None) -> dict:
        """Each hit's raw branch scores in `matched_queries` (2.13+), as ReMe's search step shows them."""
        return {"include_named_queries_score": "true"} if caps is None or caps.version_tuple >= (2, 13) else {}

    uses_search_pipeline = True

    def native_hybrid(self, caps: Capabilities, kind: str | None) -> bool:
        if kind == "zscore":  # fused client-side (the pipelines here normalise by min-max only)
            return False
        return caps.rrf_processor if kind == "rrf" else caps.normalization_processor

    def pipeline_weighted(self, caps: Capabilities | None, kind: str | None) -> bool:
        return kind != "rrf" or bool(caps and caps.rrf_weights)

    def pipeline_body(self, kind: str, vector_weight: float, weighted_rrf: bool = False) -> dict:
        from .templates import load_template

        if kind not in ("minmax", "rrf"):
            raise CapabilityError(f"unknown hybrid pipeline {kind!r}; use 'minmax' or 'rrf'")
        body = load_template(f"pipeline-{kind}")
        weights = [round(1.0 - vector_weight, 6), round(vector_weight, 6)]
        for proc in body["phase_results_processors"]:
            combination = next(iter(proc.values()))["combination"]
            if kind == "rrf" and not weighted_rrf:
                del combination["parameters"]  # 2.19's score-ranker-processor takes only rank_constant
            else:
                combination["parameters"]["weights"] = weights
        return body

    async def probe(self) -> Capabilities:
        return self.capabilities(await self.local_node(), await self._analyzers())

    @classmethod
    def detects(cls, node: dict) -> bool:
        """OpenSearch nodes report no `build_flavor` (Elasticsearch ones do): the shared detection signal
        (`engine_settings.json` `engine_detection`)."""
        return detected_engine(node) == "opensearch"

    @staticmethod
    def capabilities(node: dict, analyzers: dict[str, bool], license_type: str | None = None) -> Capabilities:
        """Capabilities from the node's `_nodes` entry and the analyzers that work (pure; no licensed features)."""
        installed = installed_names(node)
        caps = Capabilities(engine="opensearch", version=node["version"])
        major_minor = caps.version_tuple[:2]
        neural = "opensearch-neural-search" in installed
        caps.knn = "opensearch-knn" in installed
        caps.knn_engines = ["lucene"] if caps.knn else []
        caps.english_analyzer = analyzers.get("english", False)
        caps.cjk_analyzer = analyzers.get("cjk", False)
        caps.pattern_capture_filter = analyzers.get("pattern_capture", False)
        caps.flat_metadata = major_minor >= (2, 7)
        caps.hybrid_query = neural
        caps.normalization_processor = neural
        caps.rrf_processor = neural and major_minor >= (2, 19)
        caps.rrf_weights = major_minor >= (3, 0)  # weighted RRF came with 3.0
        caps.derived_vectors = caps.knn and major_minor >= (2, 19)  # k-NN derived source for vectors
        caps.knn_ef_search = caps.knn and major_minor >= (2, 19)  # `method_parameters.ef_search` on lucene
        caps.knn_merge_pays = caps.knn  # measured: engine_settings.json optimize_job.about
        return caps
