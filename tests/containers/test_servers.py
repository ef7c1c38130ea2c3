"""The test servers themselves: what they report, and that the managed node is what we asked for."""

from __future__ import annotations

import json
import urllib.request

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.engines import resolve_engine
from reme_es.server import node
from tests.containers.servers import node_name


async def test_engine_detection(server):
    assert await resolve_engine(ClientSettings(hosts=[server.url])) == server.engine


def test_managed_node_status_reports_version_modules_and_capabilities(server):
    if server.source != "managed":
        pytest.skip(f"server comes from {server.source}, not the managed launcher")
    status = node.status(node_name(server.flavour))
    assert status["running"] is True and status["url"] == server.url
    assert status["health"] in ("green", "yellow")
    if server.flavour == "opensearch-2.19":
        assert status["version"] == "2.19.1"
        assert {"analysis-common", "lang-painless", "transport-netty4"} <= set(status["modules"])
        assert status["plugins"] == {
            "opensearch-knn": "2.19.1.0",
            "opensearch-neural-search": "2.19.1.0",
            "reme-es-knn-guard": "2.19.1",
        }
        assert status["capabilities"] == {
            "knn": True,
            "english_analyzer": True,
            "hybrid_pipeline": True,
            "rrf_processor": True,
        }
    elif server.flavour == "opensearch-3":
        assert status["version"] == "3.5.0"
        assert status["plugins"] == {"opensearch-knn": "3.5.0.0", "reme-es-knn-guard": "3.5.0"}  # the guard, ported
        assert status["capabilities"] == {
            "knn": True,
            "english_analyzer": True,
            "hybrid_pipeline": False,
            "rrf_processor": False,
        }
    elif server.flavour == "elasticsearch-9":
        assert status["version"].startswith("9.")
        assert status["capabilities"]["knn"] is True and status["capabilities"]["rrf_retriever"] is False


def test_managed_node_runs_unprivileged_and_binds_loopback_only(server):
    if server.source != "managed":
        pytest.skip(f"server comes from {server.source}, not the managed launcher")
    info = node.read_node(node_name(server.flavour))
    uid = next(int(line.split()[1]) for line in open(f"/proc/{info.pid}/status") if line.startswith("Uid:"))
    assert uid != 0
    with urllib.request.urlopen(f"{server.url}/_nodes/_local/http") as resp:
        http = next(iter(json.loads(resp.read())["nodes"].values()))["http"]
    assert all(addr.startswith("127.0.0.1:") for addr in http["bound_address"])
