"""`reme-es server cluster start --secure|status|env|stop` on real nodes: three secured OpenSearch 2.19 members of 512m
heap each (names of this run only), started by the command line in a child process, sharing one snapshot repository
folder, one CA and one admin password; `reme-es sync` and `search` reach them with what `server cluster env` prints.
(The unsecured members are the same code without the security: tests/reliability/test_cluster_faults.py starts
them.)"""

from __future__ import annotations

import base64
import json
import shlex
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from reme_es.server import cluster, node, secure


def reme_es(*args: str) -> subprocess.CompletedProcess:
    """`reme-es` in a child process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "reme_es.cli", *args], capture_output=True, text=True, timeout=600)


def request(method: str, url: str, security, body: dict | None = None) -> dict:
    """One JSON request as the cluster's admin, over TLS checked against its CA."""
    token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=security.ca_certs)
    try:
        with urllib.request.urlopen(req, timeout=60, context=context) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{method} {url}: {exc.code} {exc.read().decode(errors='replace')}") from None


@pytest.fixture
def cluster_name():
    """A cluster name of this test; its members are stopped and their folders and record removed afterwards."""
    name = f"rel-clcli-{uuid.uuid4().hex[:6]}"
    yield name
    if (c := cluster.load_cluster(name)) is not None:
        c.stop()
    cluster.forget_local(name)


@pytest.fixture
def snaps():
    """The snapshot folder: outside pytest's tmp root, which another root session's start makes 0700 again (the
    nodes' run user then loses its way in: "path is not accessible on cluster-manager node")."""
    folder = Path(tempfile.mkdtemp(prefix="reme-es-clcli-snaps-"))
    yield folder / "snaps"
    shutil.rmtree(folder, ignore_errors=True)


def test_the_command_line_starts_a_green_secured_three_node_cluster_and_stops_it(cluster_name, snaps, tmp_path):
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
        str(snaps),
        "--secure",
        "--json",
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    names = [f"{cluster_name}-{i}" for i in (1, 2, 3)]
    assert [(m["name"], m["http_port"], m["running"], m["url"]) for m in view["nodes"]] == [
        (n, port + i, True, f"https://127.0.0.1:{port + i}") for i, n in enumerate(names)
    ]
    # one admin password, printed once, kept 0600 in every member's secret/ with the one CA
    security = secure.credentials(names[0])
    secret = node.node_dir(names[0]) / "secret"
    assert view["security"] == {
        "username": "admin",
        "password_file": str(secret / "admin.password"),
        "ca_certs": str(secret / "ca.crt"),
        "password": security.password,
    }
    for member in names[1:]:
        other = secure.credentials(member)
        assert (other.password, open(other.ca_certs).read()) == (security.password, open(security.ca_certs).read())
        assert (node.node_dir(member) / "secret" / "admin.password").stat().st_mode & 0o777 == 0o600
    assert all(node._alive(m["pid"]) for m in view["nodes"])
    c = cluster.load_cluster(cluster_name)
    health = c.wait(nodes=3, status="green", timeout=120)
    assert (health["cluster_name"], health["status"]) == (f"reme-es-{cluster_name}", "green")
    listed = c.get("/_cat/nodes?format=json&h=name")
    assert sorted(n["name"] for n in listed) == names
    # one snapshot repository folder for all three: every member verifies a repository registered there
    location = str((snaps / "team").resolve())
    request("PUT", f"{c.url(names[0])}/_snapshot/team", security, {"type": "fs", "settings": {"location": location}})
    verified = request("POST", f"{c.url(names[1])}/_snapshot/team/_verify", security)["nodes"]
    assert sorted(n["name"] for n in verified.values()) == names

    status = reme_es("server", "cluster", "status", "--name", cluster_name, "--json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert (shown["health"]["status"], shown["health"]["number_of_nodes"]) == ("green", 3)
    assert [m["pid"] for m in shown["nodes"]] == [m["pid"] for m in view["nodes"]]
    text = reme_es("server", "cluster", "status", "--name", cluster_name)
    assert "health green, 3 nodes" in text.stdout and f"{names[2]}: pid {view['nodes'][2]['pid']}" in text.stdout
    assert text.stdout.splitlines()[-3:] == [
        f"secured: user admin, CA certificate {secret / 'ca.crt'}",
        f"password of admin: in {secret / 'admin.password'} (0600)",
        f'connect: eval "$(reme-es server cluster env --name {cluster_name})"',
    ]
    assert security.password not in text.stdout

    # the CLI with what `server cluster env` prints: sync and search over TLS as the admin, on all three members
    env = reme_es("server", "cluster", "env", "--name", cluster_name)
    assert env.returncode == 0 and env.stdout.splitlines()[0] == "export REME_ES_HOSTS=" + ",".join(
        m["url"] for m in view["nodes"]
    )
    (tmp_path / "notes" / "digest").mkdir(parents=True)
    (tmp_path / "notes" / "digest" / "heron.md").write_text("The blue heron nests by the north pond.\n")
    notes = shlex.quote(str(tmp_path / "notes"))
    script = (
        f"{env.stdout}\n{sys.executable} -m reme_es.cli sync {notes} --index-prefix clcli\n"
        f"{sys.executable} -m reme_es.cli search heron -w {notes} --index-prefix clcli --json"
    )
    found = subprocess.run(["bash", "-euc", script], capture_output=True, text=True, timeout=600)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout[found.stdout.index("{") :])["hits"]  # after sync's two lines
    heron = ("digest/heron.md", "The blue heron nests by the north pond.")
    assert [(h["path"], h["text"].strip()) for h in hits] == [heron]

    stopped = reme_es("server", "cluster", "stop", "--name", cluster_name)
    assert stopped.returncode == 0 and stopped.stdout.strip() == f"cluster {cluster_name!r}: stopped {', '.join(names)}"
    assert not any(node._alive(m["pid"]) for m in view["nodes"])
    after = reme_es("server", "cluster", "status", "--name", cluster_name, "--json")
    assert after.returncode == 1 and [m["running"] for m in json.loads(after.stdout)["nodes"]] == [False] * 3
    print(f"\nreme-es server cluster start --secure (3 x opensearch-2.19-security, 512m): {took:.1f}s")
