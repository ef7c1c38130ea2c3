"""`reme-es server cluster start|status|stop` on real nodes: three OpenSearch 2.19 members of 512m heap each (names
of this run only), started by the command line in a child process, sharing one snapshot repository folder."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from reme_es.server import cluster, node


def reme_es(*args: str) -> subprocess.CompletedProcess:
    """`reme-es` in a child process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "reme_es.cli", *args], capture_output=True, text=True, timeout=600)


def post(url: str) -> dict:
    req = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


@pytest.fixture
def cluster_name():
    """A cluster name of this test; its members are stopped and their folders and record removed afterwards."""
    name = f"rel-clcli-{uuid.uuid4().hex[:6]}"
    yield name
    if (c := cluster.load_cluster(name)) is not None:
        c.stop()
    cluster.forget_local(name)


def test_the_command_line_starts_a_green_three_node_cluster_and_stops_it(cluster_name, tmp_path):
    port = cluster._free_run(node._free_port(), 3)
    started = time.monotonic()
    result = reme_es(
        "server",
        "cluster",
        "start",
        "--name",
        cluster_name,
        "--flavour",
        "opensearch-2.19",
        "--heap",
        "512m",
        "--port",
        str(port),
        "--snapshot-repo",
        str(tmp_path / "snaps"),
        "--json",
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    names = [f"{cluster_name}-{i}" for i in (1, 2, 3)]
    assert [(m["name"], m["http_port"], m["running"]) for m in view["nodes"]] == [
        (n, port + i, True) for i, n in enumerate(names)
    ]
    assert all(node._alive(m["pid"]) for m in view["nodes"])
    c = cluster.load_cluster(cluster_name)
    health = c.wait(nodes=3, status="green", timeout=120)
    assert (health["cluster_name"], health["status"]) == (f"reme-es-{cluster_name}", "green")
    listed = c.get("/_cat/nodes?format=json&h=name")
    assert sorted(n["name"] for n in listed) == names
    # one snapshot repository folder for all three: every member verifies a repository registered there
    location = str((tmp_path / "snaps" / "team").resolve())
    req = urllib.request.Request(
        f"{c.url(names[0])}/_snapshot/team",
        method="PUT",
        data=json.dumps({"type": "fs", "settings": {"location": location}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(req, timeout=60).close()
    verified = post(f"{c.url(names[1])}/_snapshot/team/_verify")["nodes"]
    assert sorted(n["name"] for n in verified.values()) == names

    status = reme_es("server", "cluster", "status", "--name", cluster_name, "--json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert (shown["health"]["status"], shown["health"]["number_of_nodes"]) == ("green", 3)
    assert [m["pid"] for m in shown["nodes"]] == [m["pid"] for m in view["nodes"]]
    text = reme_es("server", "cluster", "status", "--name", cluster_name)
    assert "health green, 3 nodes" in text.stdout and f"{names[2]}: pid {view['nodes'][2]['pid']}" in text.stdout

    stopped = reme_es("server", "cluster", "stop", "--name", cluster_name)
    assert stopped.returncode == 0 and stopped.stdout.strip() == f"cluster {cluster_name!r}: stopped {', '.join(names)}"
    assert not any(node._alive(m["pid"]) for m in view["nodes"])
    after = reme_es("server", "cluster", "status", "--name", cluster_name, "--json")
    assert after.returncode == 1 and [m["running"] for m in json.loads(after.stdout)["nodes"]] == [False] * 3
    print(f"\nreme-es server cluster start (3 x opensearch-2.19, 512m): {took:.1f}s")
