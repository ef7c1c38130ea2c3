"""The dialect registry and the Amazon OpenSearch Serverless dialect, without a server (no AWS here: the
Serverless dialect is unit-tested only)."""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from reme_es.adapters import engines
from reme_es.adapters.aoss import ServerlessDialect
from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.engines import GROUP, dialect_class, engine_for_node, engine_names, make_dialect
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.templates import render_index
from reme_es.cli.app import _settings
from reme_es.core.errors import CapabilityError, ConfigError, RequestFailed
from reme_es.core.models import SearchFilter
from reme_es.core.options import IndexOptions
from reme_es.store import MemoryStore

GOLDEN = Path(__file__).parent / "golden"
AOSS = ClientSettings(hosts=["https://abc.eu-west-1.aoss.amazonaws.com"], aws_region="eu-west-1", aws_service="aoss")
FILTER = SearchFilter.parse({"path_prefix": "daily/", "tag": "a"})


def test_every_engine_comes_from_the_entry_point_group():
    registered = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    assert registered == {
        "opensearch": "reme_es.adapters.opensearch:OpenSearchDialect",
        "elasticsearch": "reme_es.adapters.elasticsearch:ElasticsearchDialect",
        "aoss": "reme_es.adapters.aoss:ServerlessDialect",
    }
    assert engine_names() == ("opensearch", "elasticsearch", "aoss")
    assert [dialect_class(e) for e in engine_names()] == [OpenSearchDialect, ElasticsearchDialect, ServerlessDialect]


def test_unknown_engines_are_refused_with_the_registered_names():
    with pytest.raises(ConfigError, match="engine must be one of opensearch, elasticsearch, aoss or auto, got 'solr'"):
        make_dialect("solr", ClientSettings(hosts=["http://x:1"]))
    with pytest.raises(ConfigError, match="engine must be auto or one of opensearch, elasticsearch, aoss"):
        _settings(None, None, engine="solr")
    assert _settings(None, None, engine="aoss").connection.engine == "aoss"


class _NoServer:
    """A transport that answers nothing and records what was asked."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    async def request(self, method, path, body=None, params=None):
        self.calls.append((method, path))
        if method == "GET" and path.endswith("/_mapping"):
            raise RequestFailed("no such index", status=404)
        return {}

    def guarded(self, guard):
        return self  # no cluster check: Serverless tells no cluster UUID

    async def close(self):
        pass


def test_serverless_probe_asks_nothing_and_reports_no_pipelines():
    dialect = ServerlessDialect(AOSS)
    dialect.transport = _NoServer()
    caps = asyncio.run(dialect.probe())
    assert dialect.transport.calls == []  # no _nodes, no _analyze: Serverless has neither
    assert (caps.engine, caps.knn, caps.english_analyzer, caps.cjk_analyzer) == ("aoss", True, True, True)
    assert (caps.hybrid_query, caps.normalization_processor, caps.rrf_processor, caps.rrf_retriever) == (
        False,
        False,
        False,
        False,
    )
    assert not dialect.native_hybrid(caps, "rrf") and not dialect.native_hybrid(caps, "minmax")


def test_serverless_store_connects_without_cluster_apis_and_fuses_client_side():
    dialect = ServerlessDialect(AOSS)
    dialect.transport = _NoServer()
    store = MemoryStore(dialect, "notes", IndexOptions(dims=8))
    asyncio.run(store.connect())
    paths = [p for _, p in dialect.transport.calls]
    assert paths == [
        "/notes-chunks/_mapping",
        "/notes-chunks-1",
        "/notes-files/_mapping",
        "/notes-files-1",
        "/notes-links/_mapping",
        "/notes-links-1",
        "/notes-workspaces/_mapping",
        "/notes-workspaces-1",
    ]  # no _refresh, no _search/pipeline
    assert not store.native_pipeline_wanted() and not store.native_hybrid_available()
    with pytest.raises(CapabilityError, match="no index stats or force-merge"):
        asyncio.run(store.admin.optimize())


def test_serverless_builders_are_opensearchs_where_they_agree():
    aoss, opensearch = ServerlessDialect(AOSS), OpenSearchDialect(ClientSettings(hosts=["http://x:1"]))
    assert aoss.knn_body([0.1, 0.2], 5, FILTER, size=3) == opensearch.knn_body([0.1, 0.2], 5, FILTER, size=3)
    caps = ServerlessDialect.capabilities()
    golden = json.loads((GOLDEN / "chunks_index_opensearch.json").read_text())
    body = render_index("chunks", aoss, caps, IndexOptions(dims=384))
    assert body["mappings"]["properties"] == golden["mappings"]["properties"]
    with pytest.raises(CapabilityError, match="no search pipelines"):
        aoss.pipeline_body("rrf", 0.7)
    with pytest.raises(CapabilityError, match="no search pipelines"):
        aoss.hybrid_body("x", [0.1], 5, FILTER)


def test_serverless_needs_sigv4_for_aoss():
    with pytest.raises(ConfigError, match="aws_service: aoss"):
        ServerlessDialect(ClientSettings(hosts=["https://x:443"]))


def test_probes_are_pure_functions_of_node_info_and_do_not_change_the_dialect():
    plugins = [{"name": "opensearch-knn"}, {"name": "opensearch-neural-search"}]
    node = {"version": "2.19.1", "modules": [], "plugins": plugins}
    caps = OpenSearchDialect.capabilities(node, {"english": True, "cjk": False})
    assert (caps.hybrid_query, caps.rrf_processor, caps.rrf_weights) == (True, True, False)
    assert OpenSearchDialect.capabilities({**node, "version": "3.1.0"}, {}).rrf_weights is True
    es = {"version": "9.3.2", "modules": [{"name": "rank-rrf"}], "plugins": []}
    assert ElasticsearchDialect.capabilities(es, {}, "basic").rrf_retriever is False
    assert ElasticsearchDialect.capabilities(es, {}, "enterprise").rrf_retriever is True
    dialect = OpenSearchDialect(ClientSettings(hosts=["http://x:1"]))
    state = dict(vars(dialect))
    assert dialect.capabilities({**node, "version": "3.1.0"}, {}).rrf_weights is True
    assert dialect.capabilities(node, {}).rrf_weights is False
    assert vars(dialect) == state  # the probe's answers live in Capabilities, never on the dialect


class PartnerDialect(OpenSearchDialect):
    """An out-of-tree engine built on OpenSearch's dialect, without a `detects` of its own."""

    engine = "partner"


class ForkDialect(OpenSearchDialect):
    """An out-of-tree engine that can tell its nodes apart."""

    engine = "fork"

    @classmethod
    def detects(cls, node: dict) -> bool:
        return node.get("distribution") == "fork"


def test_each_dialect_detects_its_own_nodes_and_a_subclass_does_not_take_them_over(monkeypatch):
    es_node = {"version": "9.3.2", "build_flavor": "default", "build_type": "tar"}
    os_node = {"version": "2.19.1", "build_type": "zip", "distribution": "opensearch"}
    assert (ElasticsearchDialect.detects(es_node), ElasticsearchDialect.detects(os_node)) == (True, False)
    assert (OpenSearchDialect.detects(os_node), OpenSearchDialect.detects(es_node)) == (True, False)
    assert (ServerlessDialect.detects(os_node), ServerlessDialect.detects(es_node)) == (False, False)
    assert (engine_for_node(es_node), engine_for_node(os_node)) == ("elasticsearch", "opensearch")
    targets = {**engines._targets(), "partner": f"{__name__}:PartnerDialect", "fork": f"{__name__}:ForkDialect"}
    monkeypatch.setattr(engines, "_targets", lambda: targets)
    fork_node = {**os_node, "distribution": "fork"}
    assert [engine_for_node(n) for n in (es_node, os_node, fork_node)] == ["elasticsearch", "opensearch", "fork"]


def test_vector_source_and_ef_search_follow_the_opensearch_version():
    node = {"version": "2.19.1", "modules": [], "plugins": [{"name": "opensearch-knn"}]}
    new = OpenSearchDialect.capabilities(node, {})
    old = OpenSearchDialect.capabilities({**node, "version": "2.17.0"}, {})
    assert (new.derived_vectors, new.knn_ef_search) == (True, True)
    assert (old.derived_vectors, old.knn_ef_search) == (False, False)
    dialect = OpenSearchDialect(ClientSettings(hosts=["http://x:1"]))
    assert dialect.index_settings(True, new) == {"index": {"knn": True, "knn.derived_source.enabled": True}}
    assert dialect.index_settings(True, old) == {"index": {"knn": True}}
    clause = dialect.knn_body([0.1, 0.2], 50, FILTER, caps=new)["query"]["knn"]["embedding"]
    assert clause["method_parameters"] == {"ef_search": 250}
    assert "method_parameters" not in dialect.knn_body([0.1, 0.2], 50, FILTER, caps=old)["query"]["knn"]["embedding"]
    hybrid = dialect.hybrid_body("x", [0.1, 0.2], 50, FILTER, caps=old)["query"]["hybrid"]["queries"][1]
    assert "method_parameters" not in hybrid["knn"]["embedding"]
