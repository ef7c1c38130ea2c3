"""The managed OpenSearch node refuses k-NN engines it cannot run, and starts with a red index (issue 15, defect 7);
a restart keeps its port (issue 18, defect 12). The refusals are checked on the run's own node of every OpenSearch
flavour under test; the restarts on a node of the managed default's flavour of their own.

Its k-NN plugin comes from Maven Central without native libraries: a faiss or nmslib field (or one on the default
engine) used to kill the JVM on its first write, and every restart died again replaying it. The node must refuse
such a mapping with a message naming the lucene engine and stay up; and a node with one red index must start (not
wait out the health timeout and stop), naming the index and how to remove it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reme_es.core.errors import ServerError
from reme_es.server import knn_guard, node
from reme_es.server.flavours import FLAVOURS, get_flavour
from tests.containers.early import EARLY, Call, needs
from tests.containers.servers import selected_flavours
from tests.reliability.conftest import free_port

FLAVOUR = "opensearch-2.19"


def call(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def knn_index(method: dict | None) -> dict:
    field: dict = {"type": "knn_vector", "dimension": 4}
    if method is not None:
        field["method"] = method
    return {"settings": {"index": {"knn": True, "number_of_replicas": 0}}, "mappings": {"properties": {"v": field}}}


@pytest.fixture
def node_name():
    """A dedicated node's name; the node is stopped and its folder removed afterwards."""
    name = f"knn-guard-{uuid.uuid4().hex[:8]}"
    try:
        yield name
    finally:
        node.stop(name)
        shutil.rmtree(node.node_dir(name), ignore_errors=True)


def assert_the_guard_refuses_faiss_and_nmslib(url: str, prefix: str) -> None:
    """faiss, nmslib and engine-less k-NN fields are refused (new index, added field, template) with the lucene
    hint, and the node stays up with k-NN on lucene working end to end. Leaves the index `{prefix}-lucene`."""
    refused = {
        "faiss": {"name": "hnsw", "engine": "faiss", "space_type": "l2"},
        "nmslib": {"name": "hnsw", "engine": "nmslib", "space_type": "l2"},
        "default": None,  # no engine named: the plugin's default is faiss (nmslib for some spaces)
    }
    for label, method in refused.items():
        status, body = call(f"{url}/{prefix}-{label}", "PUT", knn_index(method))
        assert status == 400, (label, body)
        reason = body["error"]["reason"]
        assert "cannot run k-NN engines faiss or nmslib" in reason, reason
        assert '"engine": "lucene"' in reason, reason
        assert "field [v]" in reason, reason
    # The same field added later to an existing k-NN index, and in an index template, is refused too.
    lucene = f"{url}/{prefix}-lucene"
    status, _ = call(lucene, "PUT", knn_index({"name": "hnsw", "engine": "lucene", "space_type": "l2"}))
    assert status == 200
    status, body = call(
        f"{lucene}/_mapping",
        "PUT",
        {"properties": {"w": {"type": "knn_vector", "dimension": 4, "method": refused["faiss"]}}},
    )
    assert status == 400 and "engine [faiss]" in body["error"]["reason"], body
    status, body = call(
        f"{url}/_index_template/{prefix}-template",
        "PUT",
        {"index_patterns": [f"{prefix}-tpl-*"], "template": knn_index(refused["nmslib"])},
    )
    assert status == 400 and "engine [nmslib]" in body["error"]["reason"], body

    # The node is still up and k-NN on lucene works end to end (write, refresh, search).
    status, _ = call(f"{lucene}/_doc/1?refresh=true", "PUT", {"v": [1.0, 0.0, 0.0, 0.0]})
    assert status == 201
    query = {"query": {"knn": {"v": {"vector": [1.0, 0.0, 0.0, 0.0], "k": 1}}}}
    status, body = call(f"{lucene}/_search", "POST", query)
    assert status == 200 and [h["_id"] for h in body["hits"]["hits"]] == ["1"]
    status, body = call(f"{url}/_cat/indices/{prefix}-*?format=json&h=index")
    assert sorted(i["index"] for i in body) == [f"{prefix}-lucene"]


# The session servers of OpenSearch under test (secured flavours have servers of their own).
MANAGED_OPENSEARCH = [
    f for f in selected_flavours() if get_flavour(f).engine == "opensearch" and get_flavour(f).security_plugin is None
]


@pytest.mark.parametrize("flavour", MANAGED_OPENSEARCH)
def test_the_run_s_opensearch_node_refuses_faiss_and_nmslib(servers, flavour):
    """The guard in every managed OpenSearch flavour under test, on the run's own node of that flavour."""
    server = servers.get(flavour)
    if server.source != "managed":
        pytest.skip(f"server comes from {server.source}: the guard is part of the managed node only")
    prefix = f"guard-{uuid.uuid4().hex[:8]}"
    try:
        assert_the_guard_refuses_faiss_and_nmslib(server.url, prefix)
    finally:
        call(f"{server.url}/{prefix}-lucene", "DELETE")


@contextmanager
def fresh_opensearch_3_node() -> Iterator[tuple[str, node.NodeInfo]]:
    """(name, info) of a fresh managed OpenSearch 3 node, stopped and its folder removed at exit."""
    name = f"knn-guard-{uuid.uuid4().hex[:8]}"
    try:
        yield name, node.start("opensearch-3", name=name, http_port=free_port(), heap="256m", timeout=300)
    finally:
        node.stop(name)
        shutil.rmtree(node.node_dir(name), ignore_errors=True)


# started in the background ahead of the test (tests/containers/early.py)
OPENSEARCH_3_NODE = ("knn-guard-opensearch-3", Call(__name__, "fresh_opensearch_3_node"))
needs(__name__, "opensearch_3_node", lambda item: OPENSEARCH_3_NODE)


@pytest.fixture
def opensearch_3_node():
    """(name, info) of a dedicated OpenSearch 3 node, just started."""
    with EARLY.take(*OPENSEARCH_3_NODE) as name_and_info:
        yield name_and_info


def test_on_opensearch_3_the_guard_holds_and_a_red_index_does_not_stop_the_node(opensearch_3_node):
    """The managed default (OpenSearch 3, the guard built for Java 21) on a node of its own: the guard refuses, and
    restarts with a red index and with the node's port taken behave as the launcher promises."""
    flavour = "opensearch-3"
    node_name, info = opensearch_3_node
    url = info.url
    assert info.red_indices == {}
    assert_the_guard_refuses_faiss_and_nmslib(url, "guard")

    # A red index: its only primary may be allocated to no node. Restarting must not wait out the health timeout
    # (which used to stop the node): the start returns, naming the index, and the other indices answer.
    status, _ = call(
        f"{url}/guard-red?wait_for_active_shards=0",
        "PUT",
        {"settings": {"index": {"number_of_replicas": 0, "routing.allocation.require._name": "no-such-node"}}},
    )
    assert status == 200
    assert node.stop(node_name) is True
    # A restart without a port keeps the node's port (clients keep its URL), and refuses to move when it is taken.
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the node's closed connections linger a while
        taken.bind(("127.0.0.1", info.http_port))
        taken.listen()
        with pytest.raises(ServerError) as refused:
            node.start(flavour, name=node_name, heap="256m")
    assert str(refused.value).startswith(f"node {node_name!r} keeps its port {info.http_port} across restarts ")
    info = node.start(flavour, name=node_name, heap="256m", timeout=240)
    assert info.url == url
    assert list(info.red_indices) == ["guard-red"]
    assert "no-such-node" in info.red_indices["guard-red"]  # the allocation decider's explanation
    advice = info.red_index_advice()
    assert advice == [
        (
            f"index 'guard-red' is red ({info.red_indices['guard-red']}); the node serves every other index. "
            f"Remove it with: curl -X DELETE '{info.url}/guard-red'"
        )
    ]
    assert node.read_node(node_name).red_indices == info.red_indices  # node.json records them for `server status`
    status, body = call(f"{info.url}/guard-lucene/_search", "POST", {"query": {"match_all": {}}})
    assert status == 200 and body["hits"]["total"]["value"] == 1


@pytest.fixture
def private_home():
    """A reme-es home of this test's own, outside pytest's basetemp (other sessions on the machine prune that)."""
    home = Path(tempfile.mkdtemp(prefix="reme-es-knn-guard-"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_faiss_index_from_before_the_guard_no_longer_kills_the_node(node_name, private_home, monkeypatch):
    """The issue's scenario: a faiss index written on a node without the guard crashes it, and used to crash every
    restart while its translog replayed. With the guard the node starts, the index is red and named."""
    installs = node.reme_es_home() / "installs"
    flavour = get_flavour(FLAVOUR)
    install = installs / f"{flavour.name}-{flavour.version}"
    node.install(flavour)
    monkeypatch.setenv("REME_ES_HOME", str(private_home))
    copy = private_home / "installs" / install.name
    shutil.copytree(install, copy, symlinks=True)
    shutil.rmtree(copy / flavour.home_name / "plugins" / knn_guard.NAME, ignore_errors=True)  # a node from before
    monkeypatch.setitem(FLAVOURS, FLAVOUR, dataclasses.replace(flavour, knn_guard=False))
    try:
        info = node.start(FLAVOUR, name=node_name, http_port=free_port(), heap="256m", timeout=240)
        faiss = knn_index({"name": "hnsw", "engine": "faiss", "space_type": "l2"})
        status, _ = call(f"{info.url}/old-faiss", "PUT", faiss)
        assert status == 200  # nothing refuses it here
        try:
            call(f"{info.url}/old-faiss/_doc/1?refresh=true", "PUT", {"v": [1.0, 0.0, 0.0, 0.0]})
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # the JVM died under the request
        deadline = time.monotonic() + 60
        while node.status(node_name)["running"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not node.status(node_name)["running"], "writing to a faiss index should have killed the guard-less node"
        node.stop(node_name)

        monkeypatch.setitem(FLAVOURS, FLAVOUR, flavour)  # the current launcher: builds the guard into the install
        info = node.start(FLAVOUR, name=node_name, http_port=free_port(), heap="256m", timeout=240)
        assert list(info.red_indices) == ["old-faiss"]
        assert (
            "not started: this managed OpenSearch node cannot run k-NN engines faiss or nmslib"
            in (info.red_indices["old-faiss"])
        )
        status, body = call(f"{info.url}/_cluster/health")
        assert status == 200 and body["status"] == "red" and node.status(node_name)["running"], (status, body)
        assert "Delete the index (DELETE /old-faiss) or move it to a full distribution" in info.red_indices["old-faiss"]
        status, _ = call(f"{info.url}/old-faiss", "DELETE")  # what the advice says; then the node is green
        assert status == 200
        status, body = call(f"{info.url}/_cluster/health?wait_for_status=green&timeout=30s")
        assert status == 200 and body["status"] == "green"
    finally:
        node.stop(node_name)  # while REME_ES_HOME still points at this test's home
