"""Elasticsearch dialect: elasticsearch-py 9, dense_vector (HNSW, float, explicit index_options), flattened metadata.

Hybrid: Elasticsearch has no search pipelines; the `rrf` retriever is licensed (Enterprise) and absent from
the integ-test distribution, so the store fuses client-side unless the probe finds it usable.
"""

from __future__ import annotations

import functools
from typing import Any

from ..core.engine_settings import CALIBRATION_BODIES, detected_engine
from ..core.engine_settings import vector_mapping as engine_vector_mapping
from ..core.errors import AuthError, ConfigError, RequestFailed
from ..core.models import RRF_K, Capabilities, SearchFilter
from .dialect import (
    SOURCE_EXCLUDES,
    ClientSettings,
    Dialect,
    filter_clauses,
    installed_names,
    keyword_query,
    knn_candidates,
)
from .error_map import TLS, ErrorInfo, connection_kind, error_body_info
from .transport import Transport

_JSON = {"accept": "application/json", "content-type": "application/json"}
_NDJSON = {"accept": "application/json", "content-type": "application/x-ndjson"}


@functools.cache
def _untraced(client_class: type) -> type:
    """The client class with elasticsearch-py's own spans off for its instances (and the copies `options()` makes of
    them, which are of the same class): `reme_es.adapters.traced` says why."""
    from elasticsearch._otel import OpenTelemetry

    class Untraced(client_class):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._otel = OpenTelemetry(enabled=False)

    return Untraced


class ElasticsearchTransport(Transport):
    """elasticsearch-py 9's AsyncElasticsearch with orjson, its own OpenTelemetry spans off (`reme_es.adapters.traced`
    makes one per try with the database conventions' attributes)."""

    db_system = "elasticsearch"

    def __init__(self, settings: ClientSettings):
        if settings.aws_region:
            raise ConfigError(
                "AWS SigV4 signing (aws_region) works only with OpenSearch (Amazon OpenSearch Service or Serverless); "
                "Elasticsearch and Elastic Cloud take username/password or an API key"
            )
        super().__init__(settings)

    def _make_client(self) -> Any:
        from elasticsearch import AsyncElasticsearch
        from elasticsearch.serializer import OrjsonSerializer

        s = self.settings
        kwargs: dict[str, Any] = {
            "hosts": s.hosts,
            "request_timeout": s.timeout,
            "max_retries": 0,  # the transport retries, under the shared policy (engine_settings.json `retry`)
            "retry_on_timeout": False,
            "retry_on_status": (),
            "verify_certs": s.verify_certs,
            "serializers": {"application/json": OrjsonSerializer()},
        }
        if s.username is not None:
            kwargs["basic_auth"] = (s.username, s.password or "")
        if s.api_key:
            kwargs["api_key"] = s.api_key
        if s.ca_certs:
            kwargs["ca_certs"] = s.ca_certs
        if s.client_cert:
            kwargs["client_cert"] = s.client_cert
            kwargs["client_key"] = s.client_key
        return _untraced(AsyncElasticsearch)(**kwargs)

    async def _perform(self, method: str, path: str, body: Any, params: dict | None, timeout: float) -> Any:
        headers = _NDJSON if isinstance(body, (bytes, str)) else _JSON
        if params:
            from urllib.parse import urlencode

            path = f"{path}?{urlencode(params)}"
        # a try shorter than the client's timeout (near the call's deadline) gets its own options
        client = self.client if timeout >= self.settings.timeout else self.client.options(request_timeout=timeout)
        resp = await client.perform_request(method, path, headers=headers, body=body)
        return resp.body

    def _bulk_helper(self, timeout: float) -> Any:
        from elasticsearch.helpers import async_streaming_bulk

        # elasticsearch-py takes a request's own timeout as a client option
        return functools.partial(async_streaming_bulk, self.client.options(request_timeout=timeout))

    def error_info(self, exc: Exception) -> ErrorInfo | None:
        from elastic_transport import ConnectionError as TransportConnectionError
        from elastic_transport import ConnectionTimeout, TlsError
        from elasticsearch import ApiError

        if isinstance(exc, TlsError):  # str() is just "TLS error"; the message says what failed
            reason = exc.message if isinstance(exc.message, str) and exc.message else str(exc)
            return ErrorInfo(reason=reason, connection=TLS)
        # a try that ran into its timeout is a failed connection too (elastic_transport's ConnectionTimeout is no
        # ConnectionError): retried like one
        if isinstance(exc, TransportConnectionError | ConnectionTimeout):
            return ErrorInfo(reason=str(exc), connection=connection_kind(exc))
        if isinstance(exc, ApiError):
            return error_body_info(exc.status_code, exc.body, exc.message)
        return None


class ElasticsearchDialect(Dialect):
    """Elasticsearch 9.x."""

    engine = "elasticsearch"
    metadata_type = "flattened"
    transport_class = ElasticsearchTransport

    def vector_mapping(self, dims: int, m: int, ef_construction: int) -> dict:
        # 9.1+ would default 384+ dims to bbq_hnsw (binary quantisation); ask for plain float HNSW.
        return engine_vector_mapping("elasticsearch", dims, m, ef_construction)

    def index_settings(self, with_vectors: bool, caps: Capabilities | None = None) -> dict:
        # 9.2+ keeps vectors out of the stored _source (the default, stated here): searches do not parse them; the
        # reads that need them (vector reuse, reindex) ask for them back (`vector_read_params`, `source_with_vectors`).
        return {"index": {"mapping.exclude_source_vectors": True}} if with_vectors else {}

    def vector_read_params(self) -> dict:
        return {"_source_exclude_vectors": "false"}

    def source_with_vectors(self) -> bool | dict:
        return {"exclude_vectors": False}

    def knn_body(
        self,
        vector: list[float],
        k: int,
        f: SearchFilter,
        num_candidates: int | None = None,
        size: int | None = None,
        caps: Capabilities | None = None,
    ) -> dict:
        knn: dict = {
            "field": "embedding",
            "query_vector": vector,
            "k": k,
            "num_candidates": num_candidates or knn_candidates(k),
        }
        if clauses := filter_clauses(f):
            knn["filter"] = {"bool": {"filter": clauses}}
        return {"size": size or k, "knn": knn, "_source": {"excludes": SOURCE_EXCLUDES}}

    def vectors_source(self) -> list | dict:
        return {"includes": ["embedding"], "exclude_vectors": False}

    def exact_script(self, vector: list[float]) -> dict:
        # painless (docs: "Exact kNN"); a node without it answers an error naming the script
        return {"source": CALIBRATION_BODIES["painless"], "params": {"query_vector": vector}}

    def native_hybrid(self, caps: Capabilities, kind: str | None) -> bool:
        return kind == "rrf" and caps.rrf_retriever

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
        """One request through the `rrf` retriever (licensed; used only when the probe finds it usable)."""
        knn = self.knn_body(vector, size, f, num_candidates)["knn"]
        return {
            "size": size,
            "retriever": {
                "rrf": {
                    "retrievers": [{"standard": {"query": keyword_query(text, f, fields, context)}}, {"knn": knn}],
                    "rank_constant": RRF_K,
                    "rank_window_size": size,
                }
            },
            "_source": {"excludes": SOURCE_EXCLUDES},
        }

    async def probe(self) -> Capabilities:
        node = await self.local_node()
        license_type = None
        if "rank-rrf" in installed_names(node):
            try:
                license_type = (await self.transport.request("GET", "/_license"))["license"]["type"]
            except (RequestFailed, AuthError):  # no license API (or no right to read it): no licensed features
                license_type = "basic"
        return self.capabilities(node, await self._analyzers(), license_type)

    @classmethod
    def detects(cls, node: dict) -> bool:
        """Elasticsearch nodes report a `build_flavor` (`default`, or `integ-test` for the test zip): the shared
        detection signal (`engine_settings.json` `engine_detection`)."""
        return detected_engine(node) == "elasticsearch"

    @staticmethod
    def capabilities(node: dict, analyzers: dict[str, bool], license_type: str | None = None) -> Capabilities:
        """Capabilities from the node's `_nodes` entry, the analyzers that work and the license type (pure): the
        `rrf` retriever needs the rank-rrf module and an enterprise or trial license."""
        caps = Capabilities(engine="elasticsearch", version=node["version"], knn=True, knn_engines=["hnsw"])
        caps.english_analyzer = analyzers.get("english", False)
        caps.cjk_analyzer = analyzers.get("cjk", False)
        caps.pattern_capture_filter = analyzers.get("pattern_capture", False)
        caps.flat_metadata = True
        caps.rrf_retriever = "rank-rrf" in installed_names(node) and license_type in ("enterprise", "trial")
        return caps
