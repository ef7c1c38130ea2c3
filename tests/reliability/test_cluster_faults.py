"""Node faults in a real three-node OpenSearch 2.19 cluster on 127.0.0.1 (`rel-cluster-<run>-0/1/2`, 512m heap each;
names of this run only, so two runs on one machine never stop each other's members).

The indices have `number_of_replicas: 1` (IndexOptions(replicas=1)), and every client gets all three URLs.
1. SIGKILL a data node that is not the elected cluster manager during a `reme-es sync` of 1,000 files / 5,000
   chunks: what the killed run left is kept, a re-run converges on a clean sync's state, the node rejoins green.
2. SIGKILL the elected cluster manager while MemoryStore writes: writes resume after re-election, nothing
   acknowledged is lost.
3. SIGKILL all three members and restart them on their data folders: every acknowledged document is back, the
   last writes only ever reached the translog (no refresh, no flush).
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reme_es.adapters.base import ClientSettings
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.connect import open_store
from reme_es.models import FileDoc, Link
from reme_es.server.cluster import Cluster, make_cluster
from reme_es.store import MemoryStore
from reme_es.sync.markdown import make_chunk
from reme_es.templates import IndexOptions
from tests.containers.early import EARLY, Call, needs

FILES = 1000
SECTIONS = 5  # one chunk per section: 5,000 chunks
BATCH_FILES = 50
TOPICS = ["tides", "harbour", "engines", "ledger", "weather", "crew", "cargo", "charts", "radio", "lights"]
OPTIONS = IndexOptions(replicas=1)


@contextmanager
def fresh_cluster() -> Iterator[Cluster]:
    """A fresh three-node cluster (node folders wiped first), stopped and wiped at the end even on failure."""
    c = make_cluster("opensearch-2.19", [f"rel-cluster-{uuid.uuid4().hex[:6]}-{i}" for i in range(3)], heap="512m")
    c.stop()
    c.wipe()
    try:
        c.start(timeout=300)  # started ahead, it shares the CPU with the running tests
        c.wait(nodes=3, status="green", timeout=120)
        yield c
    finally:
        c.stop()
        c.wipe()


# started in the background ahead of the tests (tests/containers/early.py)
CLUSTER = ("cluster", Call(__name__, "fresh_cluster"))
needs(__name__, "cluster", lambda item: CLUSTER)


@pytest.fixture(scope="module")
def cluster():
    """The fresh three-node cluster of this module."""
    with EARLY.take(*CLUSTER) as c:
        yield c


def all_up(c: Cluster) -> None:
    """Every member running and the cluster green (a failed earlier test may have left one down)."""
    c.start(timeout=180)
    c.wait(nodes=3, status="green", timeout=120)


# ------------------------------------------------------------------------------------------- data


def make_workspace(root: Path, rng: random.Random) -> None:
    """1,000 Markdown files of 5 short `##` sections each (one chunk per section), with wikilinks."""
    paths = [f"digest/{TOPICS[i % 10]}/{i:04d}.md" for i in range(FILES)]
    for n, path in enumerate(paths):
        lines = ["---", f"name: note {n}", f"description: about {TOPICS[n % 10]}", "---"]
        for s in range(SECTIONS):
            lines += ["", f"## {TOPICS[(n + s) % 10].title()} section {s}", ""]
            for _ in range(rng.randint(2, 5)):
                words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(6, 14)))
                if rng.random() < 0.3:
                    words += f" see [[{rng.choice(paths)}]]"
                lines.append(words)
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(file, (1_770_000_000 + n, 1_770_000_000 + n))


def synthetic(prefix: str, start: int, count: int) -> list[tuple[FileDoc, list]]:
    """`count` files of 5 chunks and 2 links each, numbered from `start` (for direct MemoryStore writes)."""
    out = []
    for n in range(start, start + count):
        path = f"notes/{prefix}/{n:05d}.md"
        chunks = [
            make_chunk(path, 1 + 3 * s, 3 + 3 * s, f"{TOPICS[(n + s) % 10]} entry {n} part {s}") for s in range(5)
        ]
        links = [Link(source=path, target=f"notes/{prefix}/{(n + k) % 997:05d}.md") for k in (1, 2)]
        doc = FileDoc(path=path, st_mtime=1_770_000_000 + n, chunk_ids=[c.id for c in chunks], links=links)
        out.append((doc, chunks))
    return out


# ------------------------------------------------------------------------------------------ state


def dialect(urls: list[str]) -> OpenSearchDialect:
    return OpenSearchDialect(ClientSettings(hosts=urls))


async def indexed_state(urls: list[str], prefix: str) -> dict:
    """Chunk ids, (path, st_mtime), link triples and raw doc counts of a prefix, after a refresh."""
    store = MemoryStore(dialect(urls), prefix)
    try:
        await store.refresh()
        chunks = [
            s["chunk_id"]
            async for s in store._scan(store.index("chunks"), {"match_all": {}}, ["chunk_id"], ["chunk_id"])
        ]
        files = await store.get_files()
        link_fields = ["source", "target", "anchor"]
        links = [
            (s["source"], s["target"], s.get("anchor", ""))
            async for s in store._scan(store.index("links"), {"match_all": {}}, link_fields, link_fields)
        ]
        counts = {
            kind: (await store.dialect.request("GET", f"/{store.index(kind)}/_count"))["count"]
            for kind in ("chunks", "files", "links")
        }
    finally:
        await store.close()
    return {
        "chunks": sorted(chunks),
        "files": [(f.path, f.st_mtime) for f in files],
        "file_chunks": {f.path: sorted(f.chunk_ids) for f in files},
        "links": sorted(links),
        "counts": counts,
    }


def comparable(state: dict) -> dict:
    return {k: state[k] for k in ("chunks", "files", "links")}


async def create_indices(urls: list[str], prefix: str) -> None:
    """Create a prefix's indices with one replica (the CLI would create them with the template's 0)."""
    store = await open_store(ClientSettings(hosts=urls), prefix, "opensearch", options=OPTIONS)
    await store.close()


def primaries_on(c: Cluster, prefix: str, names: list[str]) -> dict[str, int]:
    """How many primary shards of the prefix's indices each member holds."""
    rows = c.get(f"/_cat/shards/{prefix}-*?format=json", names)
    held = {n: 0 for n in names}
    for row in rows:
        if row["prirep"] == "p" and row.get("node") in held:
            held[row["node"]] += 1
    return held


class Sync:
    """`reme-es sync` as a child process, `--hosts` with every member's URL, a private reme-es home."""

    def __init__(self, urls: list[str], workspace: Path, home: Path):
        self.urls, self.workspace = urls, workspace
        # The built-in chunker gives each file its 5 chunks (ReMe's chunker, the default with reme-ai, makes one per file
        # here); the chunker plays no part in what a node crash does to the write protocol.
        self.env = {
            **os.environ,
            "REME_ES_HOME": str(home),
            "REME_ES_BATCH_FILES": str(BATCH_FILES),
            "REME_ES_CHUNKER": "builtin",
        }

    def start(self, prefix: str) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from reme_es.cli import main; main()",
                "sync",
                str(self.workspace),
                "--hosts",
                ",".join(self.urls),
                "--index-prefix",
                prefix,
                "--engine",
                "opensearch",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def run(self, prefix: str) -> str:
        proc = self.start(prefix)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
        return out


def summary(out: str) -> str:
    return [x for x in out.splitlines() if x.startswith("synced:")][-1].split(";")[0]


# ------------------------------------------------------------------------------------------ tests


def test_sigkill_data_node_during_sync(cluster, tmp_path):
    all_up(cluster)
    urls = cluster.urls
    workspace = tmp_path / "workspace"
    make_workspace(workspace, random.Random(20261130))
    sync = Sync(urls, workspace, tmp_path / "home")
    clean, crashed = f"rel-cl-clean-{uuid.uuid4().hex[:8]}", f"rel-cl-kill-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_indices(urls, clean))
    asyncio.run(create_indices(urls, crashed))
    cluster.wait(nodes=3, status="green")

    out = sync.run(clean)
    assert f"synced: {FILES} added, 0 modified, 0 deleted, 0 failed" in out
    expected = asyncio.run(indexed_state(urls, clean))
    assert len(expected["files"]) == FILES and len(expected["chunks"]) == FILES * SECTIONS
    assert expected["counts"] == {"chunks": FILES * SECTIONS, "files": FILES, "links": len(expected["links"])}

    # The victim: not the elected cluster manager; of the two others, the one holding more primaries of `crashed`.
    manager = cluster.manager()
    others = [n for n in cluster.names if n != manager]
    held = primaries_on(cluster, crashed, others)
    victim = max(others, key=lambda n: (held[n], n))
    survivors = [n for n in cluster.names if n != victim]
    live = [cluster.url(n) for n in survivors]

    proc = sync.start(crashed)
    progress = ""
    while not progress.startswith("synced "):  # kill once the first batch is acknowledged, mid-way through writing
        progress = proc.stdout.readline()
        assert progress, proc.stderr.read()
    cluster.kill(victim)
    killed_at = time.monotonic()
    out, err = proc.communicate(timeout=300)
    ran_on = time.monotonic() - killed_at
    first_run = (proc.returncode, summary(out) if "synced:" in out else err.strip().splitlines()[-1:])

    # What the run left, read from the two survivors (replicas promoted): every real file doc has all its chunks.
    cluster.wait(nodes=2, status="yellow", names=survivors, timeout=60)
    after_kill = asyncio.run(indexed_state(live, crashed))
    stored = set(after_kill["chunks"])
    acknowledged = {p: ids for p, ids in after_kill["file_chunks"].items() if dict(after_kill["files"])[p] != -1.0}
    assert all(set(ids) <= stored for ids in acknowledged.values())
    assert set(after_kill["chunks"]) <= set(expected["chunks"])
    assert after_kill["counts"]["chunks"] == len(after_kill["chunks"])  # no duplicates
    if proc.returncode == 0 and ", 0 failed," in out:  # the run acknowledged everything: it is all there already
        assert comparable(after_kill) == comparable(expected) and after_kill["counts"] == expected["counts"]

    # Re-run with the node still down: converges exactly; then the node comes back and the cluster is green.
    rerun = sync.run(crashed)
    converged = asyncio.run(indexed_state(live, crashed))
    assert comparable(converged) == comparable(expected)
    assert converged["counts"] == expected["counts"]
    assert stored <= set(converged["chunks"])
    cluster.start_member(victim)
    health = cluster.wait(nodes=3, status="green", timeout=120)
    back = asyncio.run(indexed_state(urls, crashed))
    assert comparable(back) == comparable(expected) and back["counts"] == expected["counts"]
    print(
        f"\nclean: {len(expected['chunks'])} chunks, {len(expected['files'])} files, {len(expected['links'])} links; "
        f"killed {victim} (manager {manager}, primaries held {held}) after {progress.strip()!r}; "
        f"killed run went on {ran_on:.1f}s after the kill: {first_run}; after it: {len(stored)} chunks, {len(after_kill['files'])} file docs "
        f"({len(acknowledged)} real); rerun: {summary(rerun)}; green again {time.monotonic() - killed_at:.1f}s "
        f"after the kill ({health['active_shards']} active shards)"
    )


async def _write_through_failover(c: Cluster, prefix: str, batches: int, kill_after: int) -> dict:
    """Upsert `batches` batches of 10 files; SIGKILL the elected manager after `kill_after` of them. A batch whose
    upsert raised is written again (what a caller does) until it is acknowledged, for at most 120 s."""
    store = await open_store(ClientSettings(hosts=c.urls, timeout=20), prefix, "opensearch", options=OPTIONS)
    acked: dict[str, list[str]] = {}
    errors: list[str] = []
    manager = None
    killed_at = resumed_at = None
    try:
        for i in range(batches):
            if i == kill_after:
                # Kill only once every replica is allocated and in sync: a primary killed while its replica still
                # recovers leaves the shard red until that node returns, which is not the failover under test.
                await asyncio.get_running_loop().run_in_executor(None, functools.partial(c.wait, nodes=3, status="green"))
                manager = c.manager()
                await asyncio.get_running_loop().run_in_executor(None, c.kill, manager)
                killed_at = time.monotonic()
            files = synthetic(prefix, i * 10, 10)
            deadline = time.monotonic() + 120
            while True:
                try:
                    await store.upsert(files, refresh=False)
                    break
                except Exception as exc:  # noqa: BLE001 - any failure: not acknowledged, write the batch again
                    errors.append(f"batch {i}: {type(exc).__name__}: {str(exc)[:160]}")
                    assert time.monotonic() < deadline, errors[-3:]
                    await asyncio.sleep(1.0)
            if killed_at is not None and resumed_at is None:
                resumed_at = time.monotonic()
            for doc, chunks in files:
                acked[doc.path] = sorted(c.id for c in chunks)
        await store.refresh()
    finally:
        await store.close()
    return {
        "acked": acked,
        "errors": errors,
        "manager": manager,
        "resume_seconds": resumed_at - killed_at if killed_at is not None else None,
    }


def test_sigkill_cluster_manager_during_writes(cluster):
    all_up(cluster)
    prefix = f"rel-cl-mgr-{uuid.uuid4().hex[:8]}"
    result = asyncio.run(_write_through_failover(cluster, prefix, batches=40, kill_after=10))
    killed = result["manager"]
    survivors = [n for n in cluster.names if n != killed]
    new_manager = cluster.manager(survivors)
    assert new_manager in survivors
    live = [cluster.url(n) for n in survivors]
    state = asyncio.run(indexed_state(live, prefix))
    acked = result["acked"]
    assert len(acked) == 400
    assert state["chunks"] == sorted(i for ids in acked.values() for i in ids)
    assert state["files"] == [(p, 1_770_000_000 + int(p[-8:-3])) for p in sorted(acked)]
    assert state["counts"] == {"chunks": 2000, "files": 400, "links": 800}
    cluster.start_member(killed)
    cluster.wait(nodes=3, status="green", timeout=120)
    assert asyncio.run(indexed_state(cluster.urls, prefix))["counts"] == state["counts"]
    print(
        f"\nkilled manager {killed}, new manager {new_manager}; 400 files / 2000 chunks acknowledged; "
        f"first batch after the kill acknowledged in {result['resume_seconds']:.1f}s; "
        f"{len(result['errors'])} failed attempts re-written: {result['errors'][:3]}"
    )


async def _write(urls: list[str], prefix: str, start: int, count: int, refresh: bool) -> dict[str, list[str]]:
    store = await open_store(ClientSettings(hosts=urls), prefix, "opensearch", options=OPTIONS)
    try:
        files = synthetic(prefix, start, count)
        for i in range(0, count, 50):
            await store.upsert(files[i : i + 50], refresh=refresh)
    finally:
        await store.close()
    return {doc.path: sorted(c.id for c in chunks) for doc, chunks in files}


def test_sigkill_all_members_and_restart(cluster):
    all_up(cluster)
    urls = cluster.urls
    prefix = f"rel-cl-all-{uuid.uuid4().hex[:8]}"
    acked = asyncio.run(_write(urls, prefix, 0, 300, refresh=True))
    cluster.wait(nodes=3, status="green")  # the new indices' replicas allocated: every row has its docs.count
    # Every other prefix of this module, as it stands (refreshed): its exact doc counts must come back too.
    before = {
        row["index"]: int(row["docs.count"])
        for row in cluster.get("/_cat/indices/rel-cl-*?format=json&h=index,docs.count")
    }
    acked |= asyncio.run(_write(urls, prefix, 300, 100, refresh=False))  # only in the translog when killed
    for name in cluster.names:
        cluster.kill(name)
    cluster.start(timeout=180)
    health = cluster.wait(nodes=3, status="green", timeout=180)
    state = asyncio.run(indexed_state(urls, prefix))
    assert state["chunks"] == sorted(i for ids in acked.values() for i in ids)
    assert [p for p, _ in state["files"]] == sorted(acked)
    assert state["counts"] == {"chunks": 2000, "files": 400, "links": 800}
    after = {
        row["index"]: int(row["docs.count"])
        for row in cluster.get("/_cat/indices/rel-cl-*?format=json&h=index,docs.count")
    }
    mine = {k: v for k, v in after.items() if k.startswith(prefix)}
    assert {k: v for k, v in after.items() if not k.startswith(prefix)} == {
        k: v for k, v in before.items() if not k.startswith(prefix)
    }
    print(
        f"\nkilled all 3 members after acknowledging 400 files / 2000 chunks / 800 links (the last 100 files "
        f"unrefreshed); back green with {health['active_shards']} active shards; {prefix}: {mine}; "
        f"other indices unchanged: {len(before) - len(mine)}"
    )
