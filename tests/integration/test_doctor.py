"""`reme-es doctor` on a real node: a fresh single-node set passes every check but the three a single node should warn
about (replicas, snapshots, security), and each other check is made to fail (or warn) on the node, then passes after
the fix it names, run as the user would run it.

The node is this module's own (OpenSearch 3, the managed default, with a snapshot folder): the checks change cluster
settings (the shard limit) and register a snapshot repository, which no shared node should see.
`REME_ES_TEST_DOCTOR_NODE=URL,PATH_REPO` reuses a running node instead. Security's passing side needs a secured
node (tests/unit/test_doctor.py covers it on facts): here only its warning is seen.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
import urllib.request
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.models import Chunk, FileDoc
from reme_es.core.options import IndexOptions
from reme_es.store.connect import open_store
from tests.containers.early import EARLY, Call, needs
from tests.integration.cli_support import EXAMPLE, Cli, _drop, _touch
from tests.integration.test_snapshots import FLAVOUR

SINGLE_NODE_WARNINGS = {"replicas", "snapshots", "security"}
DOCTOR_NODE = ("doctor-node", Call("tests.integration.test_snapshots", "snapshot_node", (FLAVOUR,)))
needs(__name__, "doctor_node", lambda item: None if os.environ.get("REME_ES_TEST_DOCTOR_NODE") else DOCTOR_NODE)


@pytest.fixture(scope="module")
def doctor_node():
    """(url, path.repo) of this module's node."""
    if given := os.environ.get("REME_ES_TEST_DOCTOR_NODE"):
        url, folder = given.split(",", 1)
        yield url, folder
        return
    with EARLY.take(*DOCTOR_NODE) as value:
        yield value


@pytest.fixture(scope="module")
def cli(doctor_node, tmp_path_factory):
    """One set synced from a copy of examples/workspace with the local model's vectors; dropped at the end."""
    url = doctor_node[0]
    root = tmp_path_factory.mktemp("doctor")
    shutil.copytree(EXAMPLE, root / "workspace")
    c = Cli(url, f"doc-{os.getpid()}", root / "workspace", root / "home")
    result = c.sync("--embedding", "local")
    assert result.exit_code == 0, result.output
    yield c
    asyncio.run(_drop(url, c.prefix))


def call(method: str, url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read() or b"{}")


def doctor(cli: Cli, *args: str) -> tuple[int, dict[str, tuple[str, str]]]:
    """Exit code and {check: (status, message)} of `reme-es doctor --json` on the test's set."""
    result = cli("doctor", "--json", *args)
    checks = json.loads(result.stdout)["checks"]
    return result.exit_code, {c["name"]: (c["status"], c["message"]) for c in checks}


def statuses(checks: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: status for name, (status, _) in checks.items()}


def test_a_fresh_single_node_set_warns_only_about_what_one_node_cannot_have(cli) -> None:
    code, checks = doctor(cli)
    assert code == 0
    assert {n for n, s in statuses(checks).items() if s != "ok"} == SINGLE_NODE_WARNINGS
    assert checks["vectors-model"] == ("ok", f"{cli.prefix}: local all-MiniLM-L6-v2 (384-d)")
    assert checks["security"][1].startswith("no document-level security (no security plugin)")
    plain = cli("doctor")
    assert plain.exit_code == 0
    assert [line.split(" ", 1)[0] for line in plain.stdout.splitlines() if not line.startswith(" ")] == [
        "ok",
        "WARN",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "WARN",
        "WARN",
    ]


def test_replicas_no_node_can_hold_fail_until_reindex_with_fewer(cli) -> None:
    url = cli.url
    call(
        "PUT",
        f"{url}/{cli.prefix}-chunks/_settings",
        {"index": {"auto_expand_replicas": "false", "number_of_replicas": 1}},
    )
    code, checks = doctor(cli)
    assert code == 1
    assert checks["replicas"][0] == "fail" and f"{cli.prefix}-chunks-1" in checks["replicas"][1]
    assert checks["cluster-health"][0] == "warn" and f"{cli.prefix}-chunks-1[0]" in checks["cluster-health"][1]
    assert cli("reindex", "--replicas", "0").exit_code == 0
    code, checks = doctor(cli)
    assert (code, checks["replicas"][0], checks["cluster-health"][0]) == (0, "warn", "ok")  # single node: warn


def test_an_older_template_fails_until_reindex(cli) -> None:
    url, alias = cli.url, f"{cli.prefix}-links"
    ((name, body),) = call("GET", f"{url}/{alias}/_mapping").items()
    meta = body["mappings"]["_meta"]
    meta["reme_es"]["template_version"] = 1
    call("PUT", f"{url}/{alias}/_mapping", {"_meta": meta})
    code, checks = doctor(cli)
    assert (code, checks["templates"]) == (1, ("fail", f"older templates than this code writes: {name} (v1, code v2)"))
    assert cli("reindex").exit_code == 0
    code, checks = doctor(cli)
    assert (code, checks["templates"][0]) == (0, "ok")


def test_another_configured_model_fails_until_left_out(cli) -> None:
    code, checks = doctor(cli, "--embedding", "e5")
    assert (code, checks["vectors-model"][0]) == (1, "fail")
    assert "multilingual-e5-small" in checks["vectors-model"][1]
    code, checks = doctor(cli)
    assert (code, checks["vectors-model"][0]) == (0, "ok")


def test_chunks_without_vectors_warn_until_a_sync_with_the_recorded_model(cli) -> None:
    _touch(cli.workspace / "digest" / "search.md", "# Search\n\nA new paragraph about the doctor's checks.\n")
    assert cli.sync("--embedding", "none").exit_code == 0
    code, checks = doctor(cli)
    assert (code, checks["missing-vectors"]) == (0, ("warn", f"chunks without a vector: {cli.prefix}: 1"))
    assert cli.sync().exit_code == 0  # no --embedding: the recorded model embeds what has no vector
    code, checks = doctor(cli)
    assert checks["missing-vectors"][0] == "ok"


def test_deleted_documents_warn_until_optimize(cli) -> None:
    code, checks = doctor(cli, "--deleted-min", "1")  # a sync's rewrites leave deleted documents behind
    assert checks["deleted-docs"][0] == "warn" and "optimize due" in checks["deleted-docs"][1]
    # A shard keeps documents deleted in the last ~30 s for recovery (its retention lease): optimize expunges them
    # once the lease has moved on, so it is run again until then (as `IndexSet.expunge` does)
    for _ in range(24):
        assert cli("optimize", "--deleted-ratio", "0").exit_code == 0
        code, checks = doctor(cli, "--deleted-min", "1")
        if checks["deleted-docs"][0] == "ok":
            break
        time.sleep(5)
    assert checks["deleted-docs"] == ("ok", "deleted documents under 10% (or fewer than 1) in every index")


def test_the_shard_limit_fails_when_reached_until_raised(cli) -> None:
    url = cli.url
    shards = call("GET", f"{url}/_cluster/health")["active_shards"]
    call("PUT", f"{url}/_cluster/settings", {"persistent": {"cluster.max_shards_per_node": shards}})
    try:
        code, checks = doctor(cli)
        assert (code, checks["shard-limit"][0]) == (1, "fail")
        assert checks["shard-limit"][1] == (
            f"{shards} of {shards} shards ({shards} per node, 1 data node(s)): no new index can be created"
        )
    finally:
        call("PUT", f"{url}/_cluster/settings", {"persistent": {"cluster.max_shards_per_node": None}})
    code, checks = doctor(cli)
    assert checks["shard-limit"][0] == "ok"


async def _load_vectors(url: str, prefix: str, workspace: str, n: int, dims: int = 8) -> None:
    """`n` chunks with vectors of `dims` dimensions (one file of 50 chunks each) of `workspace`, written through the
    library."""
    import random

    rng = random.Random(7)
    store = await open_store(ClientSettings([url]), prefix, options=IndexOptions(dims=dims), workspace=workspace)
    try:
        files = []
        for f in range(n // 50):
            path = f"daily/{f:04d}.md"
            chunks = [
                Chunk(id=f"c{f}-{i}", path=path, text=f"note {f} {i}", embedding=[rng.gauss(0, 1) for _ in range(dims)])
                for i in range(50)
            ]
            files.append((FileDoc(path=path, chunk_ids=[c.id for c in chunks]), chunks))
        await store.upsert(files)
    finally:
        await store.close()


def test_an_unmeasured_knn_width_warns_until_optimize_calibrate(cli, tmp_path) -> None:
    other = Cli(cli.url, f"{cli.prefix}-knn", cli.workspace, cli.home)
    asyncio.run(_load_vectors(cli.url, other.prefix, other.key, 1000))
    try:
        code, checks = doctor(other)
        assert checks["calibration"] == ("warn", f"k-NN width due: {other.prefix} (never measured)")
        result = other("optimize", "--calibrate")
        assert result.exit_code == 0, result.output
        code, checks = doctor(other)
        assert checks["calibration"][0] == "ok" and checks["calibration"][1].startswith(f"{other.prefix}: width ")
    finally:
        asyncio.run(_drop(cli.url, other.prefix))


def test_memorie_indices_are_checked_beside_the_sets(cli) -> None:
    url, prefix = cli.url, f"{cli.prefix}-mem"
    name = f"{prefix}-memorie-relations-v1"
    meta = {"reme_es": {"kind": "memorie-relations", "template_version": 1}}
    call(
        "PUT",
        f"{url}/{name}",
        {
            "mappings": {"_meta": meta},
            "aliases": {f"{prefix}-memorie-relations": {}},
            "settings": {"index": {"auto_expand_replicas": "0-1"}},
        },
    )
    other = Cli(url, prefix, cli.workspace, cli.home)
    try:
        code, checks = doctor(other)
        assert (code, checks["templates"]) == (
            1,
            ("fail", f"older templates than this code writes: {name} (v1, code v2)"),
        )
        meta["reme_es"]["template_version"] = 2  # what Memorie's store does to the index when it opens it
        call("PUT", f"{url}/{name}/_mapping", {"_meta": meta})
        code, checks = doctor(other)
        assert checks["templates"] == ("ok", "1 index(es) on this code's template versions")
    finally:
        call("DELETE", f"{url}/{name}")


def test_snapshots_warn_until_one_is_taken(cli, doctor_node) -> None:
    code, checks = doctor(cli)
    assert checks["snapshots"][0] == "warn"
    location = str(Path(doctor_node[1]) / f"doctor-{os.getpid()}")
    assert cli("snapshot", "create", "--repo", "doctor", "--location", location).exit_code == 0
    code, checks = doctor(cli)
    assert checks["snapshots"][0] == "ok" and checks["snapshots"][1].startswith("last snapshot doctor/")
    assert ": SUCCESS, " in checks["snapshots"][1]


def test_every_engine_passes_the_checks_of_a_fresh_set(server, prefix, tmp_path) -> None:
    """On each flavour's shared test node: the set-scoped checks pass and security warns (no node here has it)."""
    shutil.copytree(EXAMPLE, tmp_path / "workspace")
    one = Cli(server.url, prefix, tmp_path / "workspace", tmp_path / "home")
    try:
        assert one.sync().exit_code == 0
        code, checks = doctor(one)
        assert code == 0
        scoped = ("templates", "vectors-model", "calibration", "missing-vectors", "deleted-docs")
        assert {name: checks[name][0] for name in (*scoped, "security")} == {
            **dict.fromkeys(scoped, "ok"),
            "security": "warn",
        }
    finally:
        asyncio.run(_drop(server.url, prefix))
