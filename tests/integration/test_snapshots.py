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
            memory = {
                "id": mid,
                "tenant_id": tenant,
                "namespace": "team",
                "type": "fact",
                "state": "active",
                "content": f"{tenant} note {i} about the harbour ledger",
                "created_at": "2026-05-18T10:00:00Z",
            }
            vector = {"id": mid, "embedding": [1.0, float(t), float(i), 0.5], "zero": False, "has_meta": False}
            lines += [
                {"index": {"_index": f"{prefix}-memorie-memories", "_id": mid}},
                memory,
                {"index": {"_index": f"{prefix}-memorie-vectors", "_id": mid}},
                vector,
            ]
        for i in range(2):
            rid = f"{tenant}-r{i}"
            relation = {"id": rid, "from_id": f"{tenant}-m{i}", "to_id": f"{tenant}-m{i + 1}", "type": "follows"}
            lines += [{"index": {"_index": f"{prefix}-memorie-relations", "_id": rid}}, relation]
    body = "".join(json.dumps(x) + "\n" for x in lines).encode()
    req = urllib.request.Request(
        f"{url}/_bulk?refresh=true", data=body, method="POST", headers={"Content-Type": "application/x-ndjson"}
    )
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


# ------------------------------------------------------------------------ one workspace restored, the other kept


def workspace_docs(url: str, prefix: str, key: str) -> dict[str, dict[str, dict]]:
    """Per index kind of the set, the workspace's documents: id -> `_source` (vectors included)."""
    call("POST", f"{url}/{prefix}-*/_refresh")
    out = {}
    for kind in ("chunks", "files", "links", "workspaces"):
        body = {"size": 10000, "query": {"term": {"workspace": key}}}
        hits = call("POST", f"{url}/{prefix}-{kind}/_search?routing={key}", body)["hits"]["hits"]
        out[kind] = {h["_id"]: h["_source"] for h in hits}
    return out


def test_one_workspace_is_restored_while_anothers_later_writes_survive(snap_node, tmp_path):
    """`reme-es snapshot create | list | restore -w`: two workspaces of one set are snapshotted; afterwards B writes a
    new file and A deletes one file and rewrites another; restoring A alone gives A exactly its snapshot state (every
    file, chunk with its vector, link and its registry record; the same search hits) and leaves B's later writes.
    Before the snapshot exists, a restore from a repository that is not registered fails (exit 2) and changes
    nothing; no temporary copy is left behind. Then `restore --all` brings the whole set back to the snapshot."""
    url, path_repo = snap_node
    prefix = f"r-{uuid.uuid4().hex[:12]}"
    for name in ("a", "b"):
        shutil.copytree(EXAMPLE, tmp_path / name)
    a = Cli(url, prefix, tmp_path / "a", tmp_path / "home")
    b = Cli(url, prefix, tmp_path / "b", tmp_path / "home")
    repo, location = f"backups-{prefix}", f"{path_repo}/backups-{prefix}"
    try:
        assert a.sync("--embedding", "local").exit_code == 0
        assert b.sync("--embedding", "local").exit_code == 0
        snap_a, snap_b = workspace_docs(url, prefix, a.key), workspace_docs(url, prefix, b.key)
        assert len(snap_a["files"]) == len(snap_b["files"]) == 7 and len(snap_a["workspaces"]) == 1 and snap_a["links"]
        assert all(len(c["embedding"]) == 384 for c in snap_a["chunks"].values())
        hits_a = a.search(QUERY, "--limit", "100")  # every chunk that matches

        missing = a("snapshot", "restore", "nightly", "--repo", repo, "--yes")
        assert missing.exit_code == 2
        assert f"snapshot repository '{repo}' is not registered on this cluster" in missing.stderr
        assert workspace_docs(url, prefix, a.key) == snap_a
        outside = a("snapshot", "create", "--repo", repo, "--location", str(tmp_path / "elsewhere"))
        assert outside.exit_code == 2 and "is not below the path.repo of node(s)" in outside.stderr

        created = a("snapshot", "create", "nightly", "--repo", repo, "--location", location, "--json")
        assert created.exit_code == 0, created.stderr
        info = json.loads(created.stdout)
        assert (info["state"], info["shards"]["failed"]) == ("SUCCESS", 0)
        assert info["indices"] == sorted(f"{prefix}-{k}-1" for k in ("chunks", "files", "links", "workspaces"))
        listed = a("snapshot", "list", "--repo", repo, "--json", "--hosts", url, target=False)
        assert [s["snapshot"] for s in json.loads(listed.stdout)] == ["nightly"]

        # after the snapshot: B writes a new file, A deletes one and rewrites another
        (tmp_path / "b" / "digest" / "heron.md").write_text("# Heron\n\nThe grey heron waits by the [[search]] pond.\n")
        assert b.sync("--embedding", "local").exit_code == 0
        (tmp_path / "a" / "daily" / "2026-05-18.md").unlink()
        (tmp_path / "a" / "digest" / "search.md").write_text("# Search\n\nRewritten after the snapshot: zebrafinch.\n")
        assert a.sync("--embedding", "local").exit_code == 0
        assert [p for p, _, _ in a.search("zebrafinch", "--mode", "keyword")] == ["digest/search.md"]
        later_b = workspace_docs(url, prefix, b.key)
        assert len(later_b["files"]) == 8 and len(later_b["chunks"]) > len(snap_b["chunks"])
        assert workspace_docs(url, prefix, a.key) != snap_a

        restored = a("snapshot", "restore", "nightly", "--repo", repo, "--yes", "--json")
        assert restored.exit_code == 0, restored.stderr
        result = json.loads(restored.stdout)
        assert result["restored"] == {kind: len(docs) for kind, docs in snap_a.items()}
        assert workspace_docs(url, prefix, a.key) == snap_a
        assert workspace_docs(url, prefix, b.key) == later_b
        # searchable as before: the same hits (BM25 statistics are the shard's, B's writes included: compare the
        # set of hits), the deleted note found again, the rewritten text gone
        assert set(a.search(QUERY, "--limit", "100")) == set(hits_a)
        assert "daily/2026-05-18.md" in {p for p, _, _ in a.search("local SQLite store", "--mode", "keyword")}
        assert a.search("zebrafinch", "--mode", "keyword") == []
        assert [p for p, _, _ in b.search("heron", "--mode", "keyword")] == ["digest/heron.md"]
        assert call("GET", f"{url}/_cat/indices/restore-*?format=json") == []
        print(f"\n{FLAVOUR}: workspace restore of {sum(result['restored'].values())} docs in {result['seconds']:.2f}s")

        # --all: the whole set back at the snapshot, B's later file gone too, the aliases on the restored indices
        whole = a("snapshot", "restore", "nightly", "--repo", repo, "--all", "--yes")
        assert whole.exit_code == 0, whole.stderr
        assert (workspace_docs(url, prefix, a.key), workspace_docs(url, prefix, b.key)) == (snap_a, snap_b)
        assert sorted(call("GET", f"{url}/{prefix}-*/_alias")) == info["indices"]
    finally:
        call("DELETE", f"{url}/{prefix}-*")


def test_drop_expunge_names_the_snapshots_that_still_hold_the_set_and_snapshot_delete_ages_them_out(
    snap_node, tmp_path
):
    """`drop --expunge` lists the snapshots, of every registered repository, that hold the dropped workspace's index
    set (and no snapshot of another set), and says how to age them out; `snapshot delete` without --yes deletes
    nothing (exit 2), with --yes deletes them; the next `drop --expunge` then finds none."""
    url, path_repo = snap_node
    prefix, other = f"x-{uuid.uuid4().hex[:12]}", f"y-{uuid.uuid4().hex[:12]}"
    for name in ("a", "b", "c"):
        shutil.copytree(EXAMPLE, tmp_path / name)
    a, b = Cli(url, prefix, tmp_path / "a", tmp_path / "home"), Cli(url, prefix, tmp_path / "b", tmp_path / "home")
    c = Cli(url, other, tmp_path / "c", tmp_path / "home")
    repo, location = f"forget-{prefix}", f"{path_repo}/forget-{prefix}"
    try:
        for cli in (a, b, c):
            assert cli.sync().exit_code == 0
        for cli, snap in ((a, "nightly-1"), (a, "nightly-2"), (c, "other-set")):
            made = cli("snapshot", "create", snap, "--repo", repo, "--location", location)
            assert made.exit_code == 0, made.stderr

        dropped = b("drop", "--yes", "--expunge")
        assert dropped.exit_code == 0, dropped.stderr
        last = dropped.stdout.splitlines()[-1]
        assert last.startswith(
            f"snapshots that still hold index set {prefix} as it was when each was taken, this workspace included if "
            f"it had documents then: {repo}/nightly-1, {repo}/nightly-2. A snapshot is never changed: age them out "
            "with `reme-es snapshot delete NAME --repo REPO`"
        ), dropped.stdout
        assert "other-set" not in dropped.stdout

        kept = a("snapshot", "delete", "nightly-1", "nightly-2", "--repo", repo, "--hosts", url, target=False)
        assert kept.exit_code == 2 and "Nothing was deleted: run again with --yes." in kept.stderr
        missing = a(
            "snapshot", "delete", "nightly-1", "nightly-9", "--repo", repo, "--yes", "--hosts", url, target=False
        )
        assert missing.exit_code == 2 and f"repository '{repo}' holds no snapshot 'nightly-9'" in missing.stderr
        listed = a("snapshot", "list", "--repo", repo, "--json", "--hosts", url, target=False)
        assert [s["snapshot"] for s in json.loads(listed.stdout)] == ["nightly-1", "nightly-2", "other-set"]
        deleted = a(
            "snapshot", "delete", "nightly-1", "nightly-2", "--repo", repo, "--yes", "--hosts", url, target=False
        )
        assert deleted.exit_code == 0, deleted.stderr
        assert deleted.stdout.splitlines() == [
            f"deleted snapshot nightly-1 of repository {repo}",
            f"deleted snapshot nightly-2 of repository {repo}",
        ]
        listed = a("snapshot", "list", "--repo", repo, "--json", "--hosts", url, target=False)
        assert [s["snapshot"] for s in json.loads(listed.stdout)] == ["other-set"]

        gone = a("drop", "--yes", "--expunge", "--json")
        assert gone.exit_code == 0, gone.stderr
        snapshots = json.loads(gone.stdout)["snapshots"]
        assert snapshots["held"] == [] and repo in snapshots["repositories"]
    finally:
        call("DELETE", f"{url}/{prefix}-*")
        call("DELETE", f"{url}/{other}-*")
