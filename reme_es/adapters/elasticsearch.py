"""Elasticsearch dialect: elasticsearch-py 9, dense_vector (HNSW, float, explicit index_options), flattened metadata.

Hybrid: Elasticsearch has no search pipelines; the `rrf` retriever is licensed (Enterprise) and absent from
the integ-test distribution, so the store fuses client-side unless the probe finds it usable.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..models import Capabilities, SearchFilter
from .base import SOURCE_EXCLUDES, ClientSettings, Dialect, filter_clauses, keyword_query, knn_candidates

_JSON = {"accept": "application/json", "content-type": "application/json"}
_NDJSON = {"accept": "application/json", "content-type": "application/x-ndjson"}


class ElasticsearchDialect(Dialect):
    """Elasticsearch 9.x."""

    engine = "elasticsearch"
    metadata_type = "flattened"

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
            "max_retries": s.max_retries,
            "retry_on_timeout": True,
            "retry_on_status": (429, 502, 503, 504),
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
        return AsyncElasticsearch(**kwargs)

    async def _perform(self, method: str, path: str, body: Any, params: dict | None) -> Any:
        headers = _NDJSON if isinstance(body, (bytes, str)) else _JSON
        if params:
            from urllib.parse import urlencode

            path = f"{path}?{urlencode(params)}"
        resp = await self.client.perform_request(method, path, headers=headers, body=body)
        return resp.body

    def _bulk_helper(self) -> Any:
        from elasticsearch.helpers import async_streaming_bulk

        return async_streaming_bulk

    def _error_info(self, exc: Exception) -> tuple[int | None, str, bool]:
        from elastic_transport import ConnectionError as TransportConnectionError
        from elastic_transport import TlsError
        from elasticsearch import ApiError

        if isinstance(exc, TlsError):  # str() is just "TLS error"; the message says what failed
            return None, exc.message if isinstance(exc.message, str) and exc.message else str(exc), True
        if isinstance(exc, TransportConnectionError):
            return None, str(exc), True
        if isinstance(exc, ApiError):
            body = exc.body if isinstance(exc.body, dict) else {}
            err = body.get("error", exc.message)
            reason = err.get("reason") or err.get("type") if isinstance(err, dict) else str(err)
            caused = err.get("caused_by", {}).get("reason") if isinstance(err, dict) else None
            if caused and caused not in (reason or ""):
                reason = f"{reason}: {caused}"
            return exc.status_code, str(reason), False
        return None, "", False

    def vector_mapping(self, dims: int, m: int, ef_construction: int) -> dict:
        # 9.1+ would default 384+ dims to bbq_hnsw (binary quantisation); ask for plain float HNSW.
        return {
            "type": "dense_vector",
            "dims": dims,
            "index": True,
            "similarity": "cosine",
            "index_options": {"type": "hnsw", "m": m, "ef_construction": ef_construction},
        }

    def index_settings(self, with_vectors: bool) -> dict:
        # 9.2+ keeps vectors out of the stored _source (the default, stated here): searches do not parse them; the
        # reads that need them (vector reuse, reindex) ask for them back (`vector_read_params`, `source_with_vectors`).
        return {"index": {"mapping.exclude_source_vectors": True}} if with_vectors else {}

    def vector_read_params(self) -> dict:
        return {"_source_exclude_vectors": "false"}

    def source_with_vectors(self) -> bool | dict:
        return {"exclude_vectors": False}

    def knn_body(
        self, vector: list[float], k: int, f: SearchFilter, num_candidates: int | None = None, size: int | None = None
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

    def native_hybrid(self, caps: Capabilities, kind: str | None) -> bool:
        return kind == "rrf" and caps.rrf_retriever

    def hybrid_body(
        self, text: str, vector: list[float], size: int, f: SearchFilter, fields: tuple[str, ...] | None = None
    ) -> dict:
        """One request through the `rrf` retriever (licensed; used only when the probe finds it usable)."""
        knn = self.knn_body(vector, size, f)["knn"]
        return {
            "size": size,
            "retriever": {
                "rrf": {
                    "retrievers": [{"standard": {"query": keyword_query(text, f, fields)}}, {"knn": knn}],
                    "rank_constant": 60,
                    "rank_window_size": size,
                }
            },
            "_source": {"excludes": SOURCE_EXCLUDES},
        }

    async def probe(self) -> Capabilities:
        nodes = (await self.request("GET", "/_nodes/_local/plugins"))["nodes"]
        node = next(iter(nodes.values()))
        installed = {m["name"] for m in node.get("modules", [])} | {p["name"] for p in node.get("plugins", [])}
        caps = Capabilities(engine="elasticsearch", version=node["version"], knn=True, knn_engines=["hnsw"])
        caps.english_analyzer = await self._analyzer_works("english")
        caps.cjk_analyzer = await self._analyzer_works("cjk")
        caps.flat_metadata = True
        if "rank-rrf" in installed:
            try:
                license_type = (await self.request("GET", "/_license"))["license"]["type"]
            except Exception:  # noqa: BLE001 - no license API means no licensed features
                license_type = "basic"
            caps.rrf_retriever = license_type in ("enterprise", "trial")
        return caps
