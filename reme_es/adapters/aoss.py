"""Amazon OpenSearch Serverless dialect: OpenSearch's requests, a probe without cluster APIs, no search pipelines.

What differs from a managed OpenSearch domain (AWS's "Supported operations and plugins in Amazon OpenSearch
Serverless"): requests are signed with SigV4 for service `aoss`; there is no `_nodes`, `_cluster` or global
`_analyze` API, so the probe cannot ask which plugins run and reads the collection's fixed feature set
instead; there are no search pipelines, so hybrid search is fused client-side; the collection refreshes on
its own (no `_refresh`) and merges on its own (no `_forcemerge`, no `_stats`). Unit-tested only (no AWS here).
"""

from __future__ import annotations

from ..core.errors import CapabilityError, ConfigError
from ..core.models import Capabilities
from .dialect import ClientSettings
from .opensearch import OpenSearchDialect, OpenSearchTransport

SERVERLESS_VERSION = "serverless"


class ServerlessTransport(OpenSearchTransport):
    """opensearch-py signed for OpenSearch Serverless (service `aoss`)."""

    def __init__(self, settings: ClientSettings):
        if not settings.aws_region or settings.aws_service != "aoss":
            raise ConfigError(
                "engine aoss (Amazon OpenSearch Serverless) signs requests with SigV4: set aws_region and "
                "aws_service: aoss"
            )
        super().__init__(settings)


class ServerlessDialect(OpenSearchDialect):
    """Amazon OpenSearch Serverless collections (search and vector search types)."""

    engine = "aoss"
    transport_class = ServerlessTransport
    uses_search_pipeline = False  # no search pipelines: hybrid is fused client-side
    refreshes_itself = True  # no `_refresh` API: documents become searchable after the collection's own refresh
    merges_itself = True  # no `_forcemerge` or `_stats`
    cluster_identity = False  # no `GET /` or cluster state: a collection's endpoint names it already

    async def probe(self) -> Capabilities:
        """What a Serverless collection offers (fixed; asks the server nothing: it has no `_nodes` API)."""
        return self.capabilities()

    @classmethod
    def detects(cls, node: dict) -> bool:
        """Never from node info: a collection has no `_nodes` API (`resolve_engine` picks aoss from the settings)."""
        return False

    @staticmethod
    def capabilities(
        node: dict | None = None, analyzers: dict[str, bool] | None = None, license_type: str | None = None
    ) -> Capabilities:
        """The collection's capabilities: k-NN, the language analyzers (analysis plugins are preinstalled),
        flat_object metadata; no hybrid query or pipeline processors."""
        return Capabilities(
            engine="aoss",
            version=SERVERLESS_VERSION,
            knn=True,
            knn_engines=["lucene"],
            english_analyzer=True,
            cjk_analyzer=True,
            pattern_capture_filter=True,
            flat_metadata=True,
        )

    def native_hybrid(self, caps: Capabilities, kind: str | None) -> bool:
        return False

    def hybrid_body(self, text, vector, size, f, fields=None, caps=None, context=0.0, num_candidates=None) -> dict:
        """Serverless has no hybrid search pipelines."""
        raise CapabilityError("Amazon OpenSearch Serverless has no search pipelines; hybrid is fused client-side")

    def pipeline_body(self, kind: str, vector_weight: float, weighted_rrf: bool = False) -> dict:
        """Serverless has no search pipelines."""
        raise CapabilityError("Amazon OpenSearch Serverless has no search pipelines; use hybrid: client or auto")
