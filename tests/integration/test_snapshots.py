"""Snapshot and restore on a real node started with a snapshot repository folder (`node.start(snapshot_repo=...)`, what
`reme-es server start --snapshot-repo` does) of the managed default flavour, OpenSearch 3 (2.19 where no Java 21+ is
installed; `REME_ES_TEST_SNAPSHOT_FLAVOUR` picks another).

Two index sets are written: a reme-es workspace (`reme-es sync` of examples/workspace under one index prefix) and a
Memorie-shaped store (indices from memorie/templates/*.json behind their aliases, documents of three tenants, under
another prefix). Both are snapshotted into an `fs` repository at the node's path.repo (`include_global_state: false`),
deleted, and restored: every index comes back with the same document ids and the same aliases, and `reme-es search`
finds the workspace again with the same hits. The sets are selected by index-name prefix only, whatever indices and
aliases the store layout makes of a prefix.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reme_es.core.engine_settings import vector_mapping
from reme_es.core.errors import ServerError
from reme_es.server import node
from reme_es.server.flavours import DEFAULT_FLAVOUR, get_flavour
from tests.containers.early import EARLY, Call, needs
from tests.integration.cli_support import EXAMPLE, Cli


def default_flavour() -> str:
    """The managed nodes' default flavour, or opensearch-2.19 where no Java for it is installed."""
    try:
        node.find_java(get_flavour(DEFAULT_FLAVOUR).java_min)
    except ServerError:
        return "opensearch-2.19"
    return DEFAULT_FLAVOUR


FLAVOUR = os.environ.get("REME_ES_TEST_SNAPSHOT_FLAVOUR") or default_flavour()
TEMPLATES = Path(__file__).resolve().parents[2] / "memorie" / "templates"
TENANTS = ["acme", "globex", "initech"]
QUERY = "how does the agent index its memory"


@contextmanager
def snapshot_node(flavour: str) -> Iterator[tuple[str, str]]:
    """A node of `flavour` whose path.repo is a fresh temporary folder: (url, path.repo); node and folder removed."""
    name = f"snap-{uuid.uuid4().hex[:8]}"
    folder = tempfile.mkdtemp(prefix="reme-es-snapshots-")
    try:
        port = node._free_port()
        info = node.start(flavour, name=name, http_port=port, heap="512m", timeout=300, snapshot_repo=folder)
        yield info.url, info.snapshot_repo
    finally:
        node.stop(name)
        shutil.rmtree(node.node_dir(name), ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


# started in the background ahead of the tests (tests/containers/early.py)
SNAPSHOT_NODE = ("snapshot-node", Call(__name__, "snapshot_node", (FLAVOUR,)))
needs(__name__, "snap_node", lambda item: SNAPSHOT_NODE)


@pytest.fixture(scope="module")
def snap_node():
    """(url, path.repo) of this module's node."""
    with EARLY.take(*SNAPSHOT_NODE) as value:
        yield value


def call(method: str, url: str, body: dict | None = None) -> dict:
    """One JSON request; an error status fails with the server's answer."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{method} {url} -> {exc.code}: {exc.read().decode(errors='replace')}") from exc


# ---------------------------------------------------------------------------------------------- the index sets


def memorie_index(kind: str, prefix: str, engine: str) -> tuple[str, dict]:
    """Index name and create body of one Memorie kind, rendered from its template as memorie/src/dialect.ts does."""
    template = json.loads((TEMPLATES / f"{kind}.json").read_text())
    settings, mappings = template["settings"], template["mappings"]
    if kind == "memories":
        settings["analysis"]["analyzer"]["memorie_text"] = {"type": "standard"}
    if kind == "vectors":
        mappings["properties"]["embedding"] = vector_mapping(engine, 4)
        if engine == "opensearch":
            settings["index"]["knn"] = True
    alias = f"{prefix}-memorie-{kind}"
    return f"{alias}-v{template['version']}", {"settings": settings, "mappings": mappings, "aliases": {alias: {}}}


def write_memorie(url: str, prefix: str, engine: str) -> None:
    """The three Memorie indices with 4 memories (and their vectors) per tenant and 2 relations per tenant."""
    for kind in ("memories", "vectors", "relations"):
        index, body = memorie_index(kind, prefix, engine)
        call("PUT", f"{url}/{index}", body)
    lines = []
    for t, tenant in enumerate(TENANTS):
        for i in range(4):
            mid = f"{tenant}-m{i}"
            memory = {"id": mid, "tenant_id": tenant, "namespace": "team", "type": "fact", "state": "active",
                      "content": f"{tenant} note {i} about the harbour ledger", "created_at": "2026-05-18T10:00:00Z"}
            vector = {"id": mid, "embedding": [1.0, float(t), float(i), 0.5], "zero": False, "has_meta": False}
            lines += [{"index": {"_index": f"{prefix}-memorie-memories", "_id": mid}}, memory,
                      {"index": {"_index": f"{prefix}-memorie-vectors", "_id": mid}}, vector]
        for i in range(2):
            rid = f"{tenant}-r{i}"
            relation = {"id": rid, "from_id": f"{tenant}-m{i}", "to_id": f"{tenant}-m{i + 1}", "type": "follows"}
            lines += [{"index": {"_index": f"{prefix}-memorie-relations", "_id": rid}}, relation]
    body = "".join(json.dumps(x) + "\n" for x in lines).encode()
    req = urllib.request.Request(f"{url}/_bulk?refresh=true", data=body, method="POST",
                                 headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        assert not json.loads(resp.read())["errors"]


def index_set(url: str, prefix: str) -> dict[str, dict]:
    """Every index whose name starts with `prefix`: its sorted document ids and sorted aliases."""
    call("POST", f"{url}/{prefix}*/_refresh")
    aliases = call("GET", f"{url}/{prefix}*/_alias")
    found = {}
    for index in sorted(aliases):
        hits = call("POST", f"{url}/{index}/_search", {"size": 10000, "_source": False, "sort": ["_doc"]})
        ids = sorted(h["_id"] for h in hits["hits"]["hits"])
        assert len(ids) == call("GET", f"{url}/{index}/_count")["count"]
        found[index] = {"ids": ids, "aliases": sorted(aliases[index]["aliases"])}
    return found


# ------------------------------------------------------------------------------------------------------ the test


def test_a_workspace_and_a_memorie_store_come_back_whole_from_a_snapshot(snap_node, tmp_path):
    url, path_repo = snap_node
    engine = "opensearch" if FLAVOUR.startswith("opensearch") else "elasticsearch"
    workspace_prefix, memorie_prefix = f"t-{uuid.uuid4().hex[:12]}", f"m-{uuid.uuid4().hex[:12]}"
    shutil.copytree(EXAMPLE, tmp_path / "workspace")
    cli = Cli(url, workspace_prefix, tmp_path / "workspace", tmp_path / "home")
    assert cli.sync().exit_code == 0
    write_memorie(url, memorie_prefix, engine)
    hits = cli.search(QUERY)
    before = {p: index_set(url, p) for p in (workspace_prefix, memorie_prefix)}
    assert hits and before[workspace_prefix] and sum(len(i["ids"]) for i in before[workspace_prefix].values()) > 7
    name = {kind: memorie_index(kind, memorie_prefix, engine)[0] for kind in ("memories", "vectors", "relations")}
    assert {i: s["ids"] for i, s in before[memorie_prefix].items()} == {
        name["memories"]: sorted(f"{t}-m{i}" for t in TENANTS for i in range(4)),
        name["relations"]: sorted(f"{t}-r{i}" for t in TENANTS for i in range(2)),
        name["vectors"]: sorted(f"{t}-m{i}" for t in TENANTS for i in range(4)),
    }
    assert all(s["aliases"] == [i.rsplit("-v", 1)[0]] for i, s in before[memorie_prefix].items())
    indices = sorted([*before[workspace_prefix], *before[memorie_prefix]])
    repo, snap = f"backups-{workspace_prefix}", "nightly-1"
    try:
        timings = snapshot_delete_restore(url, f"{path_repo}/{repo}", repo, snap, indices)
        assert {p: index_set(url, p) for p in (workspace_prefix, memorie_prefix)} == before
        assert cli.search(QUERY) == hits
        took = ", ".join(f"{k} {v:.2f}s" for k, v in timings.items())
        print(f"\n{FLAVOUR}: snapshot of {len(indices)} indices: {took}")
    finally:
        call("DELETE", f"{url}/{','.join(indices)}?ignore_unavailable=true")


def snapshot_delete_restore(url: str, location: str, repo: str, snap: str, indices: list[str]) -> dict[str, float]:
    """Register an `fs` repository at `location`, snapshot `indices`, delete them, restore them; seconds per step."""
    timings = {}
    call("PUT", f"{url}/_snapshot/{repo}", {"type": "fs", "settings": {"location": location}})
    start = time.monotonic()
    body = {"indices": ",".join(indices), "include_global_state": False}
    snapshot = call("PUT", f"{url}/_snapshot/{repo}/{snap}?wait_for_completion=true", body)["snapshot"]
    timings["snapshot"] = time.monotonic() - start
    assert (snapshot["state"], snapshot["shards"]["failed"], sorted(snapshot["indices"])) == ("SUCCESS", 0, indices)
    assert [s["snapshot"] for s in call("GET", f"{url}/_snapshot/{repo}/_all")["snapshots"]] == [snap]
    call("DELETE", f"{url}/{','.join(indices)}")
    assert call("GET", f"{url}/_cat/indices/{','.join(indices)}?format=json&ignore_unavailable=true") == []
    start = time.monotonic()
    restore = {**body, "include_aliases": True}
    restored = call("POST", f"{url}/_snapshot/{repo}/{snap}/_restore?wait_for_completion=true", restore)["snapshot"]
    call("GET", f"{url}/_cluster/health/{','.join(indices)}?wait_for_status=yellow&timeout=60s")
    timings["restore"] = time.monotonic() - start
    assert (sorted(restored["indices"]), restored["shards"]["failed"]) == (indices, 0)
    return timings
