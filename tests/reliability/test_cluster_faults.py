"""Node faults in a real three-node OpenSearch 2.19 cluster on 127.0.0.1 (`rel-cluster-<run>-0/1/2`, 512m heap each;
names of this run only, so two runs on one machine never stop each other's members).

No test sets replicas: every index set is created by `reme-es sync` or by ReMe's Application with their defaults,
`index.auto_expand_replicas: 0-1`, which three nodes expand to one replica. Each test checks that layout (every shard
of its set started twice, on two members) before it kills anything. With replicas 0 the data-node tests fail: the
victim is chosen among the members holding a primary of the set, so those shards go red, the per-workspace counts
and the state read during the outage come up short and the prober's writes to them wait out the cluster's timeout.

Each test has its own index set (`--index-prefix`), shared by several workspaces, and counts per workspace (the key
the CLI derives from the folder, `default_workspace_key`), never a whole index.

While a member is down a `Prober` keeps calling the cluster from threads of its own, its client given every member's
URL, the killed one first: it writes one small file at a time (refresh on) and finds it by its unique word, counts a
workspace written before the kill and searches it for marker words, all with exact expected answers; a second thread
runs `reme-es search` the same way. Every call must answer right, none in more than HANG_LIMIT seconds; each test
prints the calls made during the outage and their longest latencies.
1. A data node that is not the elected manager, SIGKILLed during a `reme-es sync` of 300 files / 1,500 chunks: the
   run finishes with nothing failed and equals a clean sync of the same files (another workspace of the set).
2. The elected cluster manager SIGKILLed during MemoryStore writes: a new one is elected, every batch is
   acknowledged (none fails), nothing acknowledged is lost.
3. The elected manager SIGKILLed while idle, the set created by ReMe's Application (`file_store.default.backend:
   opensearch`, the three URLs, no replicas key): ReMe's search and reads answer as before the kill, and ReMe indexes
   a new file during the outage.
Each killed member rejoins and the cluster is green again (timed).
4. A data node SIGKILLed while idle, the prober running; then the two survivors killed too and all three restarted on
   their data folders (one restart for two scenarios: a member start is the module's largest cost): every
   acknowledged document of every workspace the module wrote is back, including 100 files that only reached the
   translog (no refresh, no flush) and what the survivors acknowledged while the first node was down.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.models import FileDoc, Link
from reme_es.core.options import default_workspace_key
from reme_es.server.cluster import Cluster, make_cluster
from reme_es.store.connect import open_store
from reme_es.sync.markdown import make_chunk
from tests.containers.early import EARLY, Call, needs

FILES = 300
SECTIONS = 5  # one chunk per section: 1,500 chunks
BATCH_FILES = 50
TOPICS = ["tides", "harbour", "engines", "ledger", "weather", "crew", "cargo", "charts", "radio", "lights"]
MARKED = (7, 51, 88)  # files whose first section carries a unique marker word (`marker0007`, ...)
# Seconds: the longest any prober call may take to answer (a member down, then rejoining). Below a request's try
# timeout (30 s, engine_settings.json), so a call that waits out one unanswered try fails the test. Not lower: in a
# clean-clone CI run (three pytest streams and eight nodes on 2 cores) a `reme-es search` made while the killed member
# was starting again answered right in 10.6 s.
HANG_LIMIT = 20.0
PAUSE = 0.5  # seconds between the prober's rounds (the machine may have 2 cores for 3 members and the tests)
HARD_LIMIT = 90.0  # seconds: a call still running then is recorded as hung (the prober goes on)


@contextmanager
def fresh_cluster() -> Iterator[Cluster]:
    """A fresh three-node cluster (node folders wiped first), stopped and wiped at the end even on failure."""
    run = uuid.uuid4().hex[:6]
    c = make_cluster("opensearch-2.19", [f"rel-cluster-{run}-{i}" for i in range(3)], heap="512m")
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


def new_set(kind: str) -> str:
    """A fresh index set name for one test."""
    return f"rel-cl-{kind}-{uuid.uuid4().hex[:8]}"


# Every workspace a test left with a known state: (set, workspace key) -> its indexed state. The full-cluster restart
# (the module's last test) checks that all of them come back exactly.
KNOWN: dict[tuple[str, str], dict] = {}


# ------------------------------------------------------------------------------------------- data


def make_workspace(root: Path, rng: random.Random, files: int = FILES) -> None:
    """`files` Markdown files of 5 short `##` sections each (one chunk per section), with wikilinks; the files of
    MARKED carry their marker word in their first section."""
    paths = [f"digest/{TOPICS[i % 10]}/{i:04d}.md" for i in range(files)]
    for n, path in enumerate(paths):
        lines = ["---", f"name: note {n}", f"description: about {TOPICS[n % 10]}", "---"]
        for s in range(SECTIONS):
            lines += ["", f"## {TOPICS[(n + s) % 10].title()} section {s}", ""]
            if s == 0 and n in MARKED:
                lines.append(f"marker{n:04d}")
            for _ in range(rng.randint(2, 5)):
                words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(6, 14)))
                if rng.random() < 0.3:
                    words += f" see [[{rng.choice(paths)}]]"
                lines.append(words)
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(file, (1_770_000_000 + n, 1_770_000_000 + n))


MARKER_QUERY = " ".join(f"marker{n:04d}" for n in MARKED)
MARKED_PATHS = sorted(f"digest/{TOPICS[n % 10]}/{n:04d}.md" for n in MARKED)


def synthetic(tag: str, start: int, count: int) -> list[tuple[FileDoc, list]]:
    """`count` files of 5 chunks and 2 links each, numbered from `start` (for direct MemoryStore writes)."""
    out = []
    for n in range(start, start + count):
        path = f"notes/{tag}/{n:05d}.md"
        chunks = [
            make_chunk(path, 1 + 3 * s, 3 + 3 * s, f"{TOPICS[(n + s) % 10]} entry {n} part {s}") for s in range(5)
        ]
        links = [Link(source=path, target=f"notes/{tag}/{(n + k) % 997:05d}.md") for k in (1, 2)]
        doc = FileDoc(path=path, st_mtime=1_770_000_000 + n, chunk_ids=[c.id for c in chunks], links=links)
        out.append((doc, chunks))
    return out


# ------------------------------------------------------------------------------------------ state


async def indexed_state(urls: list[str], prefix: str, key: str) -> dict:
    """Chunk ids, (path, st_mtime), link triples and the counts of one workspace of a set, after a refresh (the
    store connects to the existing set only: create=False)."""
    store = await open_store(ClientSettings(hosts=urls), prefix, "opensearch", create=False, workspace=key)
    try:
        assert store.workspace == key and not store.legacy
        await store.refresh()
        chunks = [
            s["chunk_id"]
            async for s in store.inspect.scan(store.index("chunks"), {"match_all": {}}, ["chunk_id"], ["chunk_id"])
        ]
        files = await store.links.get_files()
        link_fields = ["source", "target", "anchor"]
        links = [
            (s["source"], s["target"], s.get("anchor", ""))
            async for s in store.inspect.scan(store.index("links"), {"match_all": {}}, link_fields, link_fields)
        ]
        counts = await store.inspect.health_counts()
    finally:
        await store.close()
    return {
        "chunks": sorted(chunks),
        "files": [(f.path, f.st_mtime) for f in files],
        "file_chunks": {f.path: sorted(f.chunk_ids) for f in files},
        "links": sorted(links),
        "counts": counts,
    }


def state(urls: list[str], prefix: str, key: str) -> dict:
    return asyncio.run(indexed_state(urls, prefix, key))


def comparable(st: dict) -> dict:
    return {k: st[k] for k in ("chunks", "files", "links", "counts")}


def expect_counts(st: dict) -> None:
    """A state's per-workspace counts agree with what its scans listed (no duplicates, nothing hidden)."""
    assert st["counts"] == {
        "files": len(st["files"]),
        "chunks": len(st["chunks"]),
        "vectors": st["counts"]["vectors"],
        "links": len(st["links"]),
    }, st["counts"]


def default_layout(c: Cluster, prefix: str) -> dict[str, int]:
    """Check that every index of the set has `auto_expand_replicas: 0-1` and one replica, each shard started on two
    members; return how many primaries of the set each member holds. Waits for green first: a replica just
    allocated (a new set's registry, say) is still INITIALIZING for a moment."""
    c.wait(nodes=3, status="green", timeout=120)
    settings = c.get(f"/{prefix}-*/_settings?flat_settings=true")
    kinds = sorted(name.removeprefix(f"{prefix}-").rsplit("-", 1)[0] for name in settings)
    assert kinds == ["chunks", "files", "links", "workspaces"], sorted(settings)
    found = {
        name: (s["settings"].get("index.auto_expand_replicas"), s["settings"].get("index.number_of_replicas"))
        for name, s in settings.items()
    }
    assert found == {name: ("0-1", "1") for name in settings}, f"not the default replicas: {found}"
    rows = c.get(f"/_cat/shards/{prefix}-*?format=json&h=index,shard,prirep,state,node")
    copies: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for row in rows:
        copies.setdefault((row["index"], row["shard"]), []).append((row["prirep"], row["state"], row["node"]))
    for shard, held in copies.items():
        assert sorted(p for p, _, _ in held) == ["p", "r"] and {s for _, s, _ in held} == {"STARTED"}, (shard, held)
        assert len({n for _, _, n in held}) == 2, (shard, held)
    primaries = {n: 0 for n in c.names}
    for row in rows:
        if row["prirep"] == "p":
            primaries[row["node"]] += 1
    return primaries


def data_victim(c: Cluster, prefix: str) -> tuple[str, str, dict[str, int]]:
    """(victim, manager, primaries per member): the member that is not the elected manager holding the most
    primaries of the set; it must hold one, or losing it would prove nothing about replicas."""
    held = default_layout(c, prefix)
    manager = c.manager()
    victim = max((n for n in c.names if n != manager), key=lambda n: (held[n], n))
    assert held[victim] >= 1, f"no member but the manager {manager} holds a primary of {prefix}: {held}"
    return victim, manager, held


def hosts_first(c: Cluster, name: str) -> list[str]:
    """Every member's URL, `name`'s first (the client meets the killed member at once)."""
    return [c.url(name)] + [c.url(n) for n in c.names if n != name]


def cli_env(home: Path) -> dict[str, str]:
    # The built-in chunker gives each file its 5 chunks (ReMe's chunker, the default with reme-ai, makes one per file
    # here); the chunker plays no part in what a node crash does to the write protocol.
    return {
        **os.environ,
        "REME_ES_HOME": str(home),
        "REME_ES_BATCH_FILES": str(BATCH_FILES),
        "REME_ES_CHUNKER": "builtin",
    }


class Sync:
    """`reme-es sync` of one folder into one set as a child process: `--hosts` with every member's URL, nothing else
    but the set named (replicas, shards, engine and workspace key are the defaults), a private reme-es home."""

    def __init__(self, urls: list[str], folder: Path, prefix: str, home: Path):
        self.urls, self.folder, self.prefix = urls, folder, prefix
        self.key = default_workspace_key(folder)
        self.env = cli_env(home)

    def start(self) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from reme_es.cli import main; main()",
                "sync",
                str(self.folder),
                "--hosts",
                ",".join(self.urls),
                "--index-prefix",
                self.prefix,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def run(self) -> str:
        proc = self.start()
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
        assert f"(workspace {self.key})" in out, out
        return out


def summary(out: str) -> str:
    return [x for x in out.splitlines() if x.startswith("synced:")][-1].split(";")[0]


# ----------------------------------------------------------------------------------------- prober


@dataclass
class Answer:
    """One call of the prober: what it was, when it started (monotonic), how long it took, what went wrong, and for
    `reme-es search` how much of it went to starting the process and importing reme-es, before the command ran."""

    kind: str
    started: float
    seconds: float
    error: str | None = None
    startup: float = 0.0
    said: str = ""  # for `reme-es search`: the end of what the child wrote on stderr (its retry warnings)

    @property
    def answered_in(self) -> float:
        """Seconds the call took once running (what the cluster decides)."""
        return self.seconds - self.startup


class _Partial(logging.Handler):
    """Keeps the store's warnings about searches answered by only some of their shards."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


class Prober:
    """Calls the cluster round after round from threads of their own until stopped, every answer checked exactly.

    In-process (a MemoryStore per workspace, opened on the existing set before the kill, hosts `hosts` in that order):
    `write` upserts one small file with a unique word into workspace `probe` (refresh on), `find` searches for that
    word and must get that file's chunk alone, `count` counts workspace `reader` (its health counts must be one of
    `counts`, a list a test may change while the prober runs), `search` searches it for the marker words (`marked`:
    the exact chunk ids). In a second thread, `cli-search`: `reme-es search` of the marker words in folder `folder`
    (the workspace key the CLI derives from it), `--hosts` in the same order, engine detected; its hits' paths must be
    `marked_paths`.
    """

    def __init__(
        self,
        hosts: list[str],
        prefix: str,
        reader: str,
        counts: dict,
        marked: list[str] | None,
        query: str,
        folder: Path | None,
        marked_paths: list[str],
        home: Path,
    ):
        self.hosts, self.prefix, self.reader, self.counts = hosts, prefix, reader, [counts]
        self.marked, self.query, self.folder, self.marked_paths, self.home = marked, query, folder, marked_paths, home
        self.probe = f"probe-{uuid.uuid4().hex[:8]}"
        self.answers: list[Answer] = []
        self.acked: dict[str, list[str]] = {}  # probe files acknowledged: path -> chunk ids
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._threads = [threading.Thread(target=self._run_store, daemon=True)]
        if folder is not None:
            self._threads.append(threading.Thread(target=self._run_cli, daemon=True))
        self._partial = _Partial()

    def __enter__(self) -> Self:
        logging.getLogger("reme_es.adapters.port").addHandler(self._partial)
        for t in self._threads:
            t.start()
        assert self._ready.wait(120), "the prober's stores did not open"
        if self._failed:
            raise self._failed
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(HARD_LIMIT + 30)
        logging.getLogger("reme_es.adapters.port").removeHandler(self._partial)
        assert not any(t.is_alive() for t in self._threads), "the prober did not stop: a call hangs"

    def _record(self, kind: str, started: float, error: str | None, startup: float = 0.0, said: str = "") -> None:
        self.answers.append(Answer(kind, started, time.monotonic() - started, error, startup, said))

    def rounds_since(self, since: float, rounds: int = 5, timeout: float = 90.0) -> None:
        """Wait until `rounds` rounds of the store thread and one `reme-es search` (if it runs) started after `since`
        (monotonic) have answered."""
        wanted = {"write": rounds, **({"cli-search": 1} if len(self._threads) > 1 else {})}
        deadline = time.monotonic() + timeout
        while any(sum(a.kind == k and a.started >= since for a in self.answers) < n for k, n in wanted.items()):
            assert time.monotonic() < deadline, f"the prober made fewer calls than {wanted} in {timeout:.0f}s"
            time.sleep(0.1)

    async def _timed(self, kind: str, call, check) -> None:
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(call, HARD_LIMIT)
            problem = check(result)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and fails the test afterwards
            problem = f"{type(exc).__name__}: {str(exc)[:300]}"
        self._record(kind, started, problem)

    def _run_store(self) -> None:
        asyncio.run(self._store_rounds())

    async def _store_rounds(self) -> None:
        try:
            settings = ClientSettings(hosts=self.hosts)
            reader = await open_store(settings, self.prefix, "opensearch", create=False, workspace=self.reader)
            writer = await open_store(settings, self.prefix, "opensearch", create=False, workspace=self.probe)
        except BaseException as exc:
            self._failed = exc
            self._ready.set()
            raise
        self._ready.set()
        try:
            n = 0
            while not self._stop.is_set():
                word = f"sentinel{n:05d}"
                path = f"probe/{n:05d}.md"
                chunk = make_chunk(path, 1, 1, f"{word} written while a member may be down")
                doc = FileDoc(path=path, st_mtime=1_770_000_000 + n, chunk_ids=[chunk.id])

                async def write(doc=doc, chunk=chunk) -> None:
                    await writer.upsert([(doc, [chunk])], refresh=True)
                    self.acked[doc.path] = [chunk.id]

                await self._timed("write", write(), lambda _: None)
                await self._timed(
                    "find",
                    writer.keyword_search(word, 5),
                    lambda hits, chunk=chunk: None if [h.chunk.id for h in hits] == [chunk.id] else f"found {hits}",
                )
                await self._timed(
                    "count",
                    reader.inspect.health_counts(),
                    lambda got: None if got in self.counts else f"counted {got}, expected one of {self.counts}",
                )
                if self.marked is not None:
                    await self._timed(
                        "search",
                        reader.keyword_search(self.query, 10),
                        lambda hits: (
                            None
                            if sorted(h.chunk.id for h in hits) == self.marked
                            else f"search found {sorted((h.chunk.path, h.chunk.id) for h in hits)}, "
                            f"expected {self.marked}"
                        ),
                    )
                n += 1
                self._stop.wait(PAUSE)
        finally:
            await reader.close()
            await writer.close()

    def _run_cli(self) -> None:
        env = cli_env(self.home)
        # The child says on stderr when it had imported reme-es (wall clock), so the process start, which a busy
        # machine stretches to seconds, is told apart from the command's own time.
        code = "import sys, time; from reme_es.cli import main; print('imported', time.time(), file=sys.stderr); main()"
        args = [
            sys.executable,
            "-c",
            code,
            "search",
            self.query,
            "-w",
            str(self.folder),
            "--hosts",
            ",".join(self.hosts),
            "--index-prefix",
            self.prefix,
            "--mode",
            "keyword",
            "--json",
            "--limit",
            "10",
        ]
        while not self._stop.is_set():
            started, wall = time.monotonic(), time.time()
            startup, said = 0.0, ""
            try:
                proc = subprocess.run(args, check=False, capture_output=True, text=True, env=env, timeout=HARD_LIMIT)
                marks = [x.split() for x in proc.stderr.splitlines() if x.startswith("imported ")]
                startup = float(marks[0][1]) - wall if marks else 0.0
                said = "\n".join(x for x in proc.stderr.splitlines() if not x.startswith("imported "))[-600:]
                if proc.returncode != 0:
                    problem = f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
                else:
                    paths = sorted(h["path"] for h in json.loads(proc.stdout)["hits"])
                    problem = None if paths == self.marked_paths else f"cli found {paths}"
            except Exception as exc:  # noqa: BLE001 - recorded, fails the test afterwards
                problem = f"{type(exc).__name__}: {exc}"
            self._record("cli-search", started, problem, startup, said)
            self._stop.wait(4 * PAUSE)  # a child process is a second of CPU: leave some to the members

    # --------------------------------------------------------------------------------- verdicts

    def check(self, down: float, up: float) -> str:
        """Every call answered right within HANG_LIMIT; each kind answered at least once wholly inside the outage
        (`down` to `up`, monotonic). Returns a line on the calls for the test's printout."""
        wrong = [a for a in self.answers if a.error]
        assert not wrong, f"{len(wrong)} of {len(self.answers)} prober calls failed: {wrong[:5]}"
        slow = [a for a in self.answers if a.answered_in > HANG_LIMIT]
        assert not slow, f"prober calls slower than {HANG_LIMIT}s: {slow[:5]}"
        assert not self._partial.seen, f"searches answered by only some shards: {self._partial.seen[:3]}"
        during = [a for a in self.answers if a.started >= down and a.started + a.seconds <= up]
        kinds = {a.kind for a in self.answers}
        assert {a.kind for a in during} == kinds, f"not every kind answered during the outage: {during}"
        around = [a for a in self.answers if a.started + a.seconds >= down and a.started <= up]
        worst = {k: max(around, key=lambda a, k=k: (a.kind == k, a.answered_in)) for k in sorted(kinds)}
        cli = max((a for a in self.answers if a.kind == "cli-search"), key=lambda a: a.seconds, default=None)
        return (
            f"prober: {len(self.answers)} calls, all right, longest {max(a.answered_in for a in self.answers):.2f}s"
            + (f" (reme-es search: {cli.seconds:.2f}s with the process start, {cli.startup:.2f}s)" if cli else "")
            + f"; {len(around)} during the outage ({len(during)} wholly inside), longest there by kind: "
            + ", ".join(f"{k} {a.answered_in:.2f}s" for k, a in worst.items())
        )


def check_probes(urls: list[str], prefix: str, prober: Prober) -> None:
    """Every probe file the prober had acknowledged is stored, with its chunk, and nothing else."""
    got = state(urls, prefix, prober.probe)
    assert got["file_chunks"] == prober.acked
    assert got["chunks"] == sorted(i for ids in prober.acked.values() for i in ids)
    assert got["counts"] == {"files": len(prober.acked), "chunks": len(prober.acked), "vectors": 0, "links": 0}


def marked_chunks(st: dict, urls: list[str], prefix: str, key: str) -> list[str]:
    """The chunk ids of the marker words' search, read with every member up; they must be the marked files' first
    sections."""

    async def run() -> list[str]:
        store = await open_store(ClientSettings(hosts=urls), prefix, "opensearch", create=False, workspace=key)
        try:
            hits = await store.keyword_search(MARKER_QUERY, 10)
        finally:
            await store.close()
        assert sorted(h.chunk.path for h in hits) == MARKED_PATHS, hits
        return sorted(h.chunk.id for h in hits)

    ids = asyncio.run(run())
    assert set(ids) <= set(st["chunks"])
    return ids


# ------------------------------------------------------------------------------------------ tests


def test_sigkill_data_node_during_sync(cluster, tmp_path):
    all_up(cluster)
    prefix = new_set("sync")
    clean_dir, crashed_dir = tmp_path / "clean" / "notes", tmp_path / "crashed" / "notes"
    make_workspace(clean_dir, random.Random(20261130))
    shutil.copytree(clean_dir, crashed_dir)  # same files, same mtimes; another folder: another workspace key
    clean = Sync(cluster.urls, clean_dir, prefix, tmp_path / "home")
    out = clean.run()
    assert f"synced: {FILES} added, 0 modified, 0 deleted, 0 failed" in out
    expected = state(cluster.urls, prefix, clean.key)
    assert len(expected["files"]) == FILES and len(expected["chunks"]) == FILES * SECTIONS
    expect_counts(expected)
    marked = marked_chunks(expected, cluster.urls, prefix, clean.key)

    victim, manager, held = data_victim(cluster, prefix)
    survivors = [n for n in cluster.names if n != victim]
    live = [cluster.url(n) for n in survivors]
    crashed = Sync(hosts_first(cluster, victim), crashed_dir, prefix, tmp_path / "home")
    assert crashed.key != clean.key
    with Prober(
        hosts_first(cluster, victim),
        prefix,
        clean.key,
        expected["counts"],
        marked,
        MARKER_QUERY,
        clean_dir,
        MARKED_PATHS,
        tmp_path / "home",
    ) as prober:
        proc = crashed.start()
        progress = ""
        while not progress.startswith("synced "):  # kill once the first batch is acknowledged, mid-way through writing
            progress = proc.stdout.readline()
            assert progress, proc.stderr.read()
        cluster.kill(victim)
        killed_at = time.monotonic()
        out, err = proc.communicate(timeout=300)
        ran_on = time.monotonic() - killed_at
        assert proc.returncode == 0, out + err
        assert f"synced: {FILES} added, 0 modified, 0 deleted, 0 failed, 0 unchanged" in out, out + err

        # Read from the two survivors (replicas promoted): the killed run's workspace equals the clean sync's, and
        # the clean workspace is whole.
        after_kill = state(live, prefix, crashed.key)
        assert comparable(after_kill) == comparable(expected)
        assert comparable(state(live, prefix, clean.key)) == comparable(expected)
        rerun = crashed.run()  # nothing left to do, with the node still down
        prober.rounds_since(killed_at, 5)
        assert f"synced: 0 added, 0 modified, 0 deleted, 0 failed, {FILES} unchanged" in rerun, rerun
        restart_at = time.monotonic()
        cluster.start_member(victim)
        health = cluster.wait(nodes=3, status="green", timeout=120)
        green_at = time.monotonic()
        line = prober.check(killed_at, restart_at)
    check_probes(cluster.urls, prefix, prober)
    for key in (clean.key, crashed.key):
        back = state(cluster.urls, prefix, key)
        assert comparable(back) == comparable(expected), key
        KNOWN[(prefix, key)] = back
    KNOWN[(prefix, prober.probe)] = state(cluster.urls, prefix, prober.probe)
    print(
        f"\n{FILES} files / {len(expected['chunks'])} chunks / {len(expected['links'])} links; killed {victim} "
        f"(manager {manager}, primaries of the set {held}) after {progress.strip()!r}; the run went on "
        f"{ran_on:.1f}s: {summary(out)}; rerun: {summary(rerun)}; down {restart_at - killed_at:.1f}s, green again "
        f"{green_at - killed_at:.1f}s after the kill ({green_at - restart_at:.1f}s after the restart began, "
        f"{health['active_shards']} active shards)\n{line}"
    )


def synced_set(c: Cluster, tmp_path: Path, kind: str, files: int, seed: int) -> tuple[str, Sync, dict, list[str]]:
    """A new set made by `reme-es sync` of a workspace of `files` files with its defaults: (set, the sync, the
    workspace's state, the marker search's chunk ids)."""
    prefix = new_set(kind)
    folder = tmp_path / kind / "notes"
    make_workspace(folder, random.Random(seed), files)
    sync = Sync(c.urls, folder, prefix, tmp_path / "home")
    out = sync.run()
    assert f"synced: {files} added, 0 modified, 0 deleted, 0 failed" in out, out
    expected = state(c.urls, prefix, sync.key)
    assert len(expected["files"]) == files and len(expected["chunks"]) == files * SECTIONS
    expect_counts(expected)
    return prefix, sync, expected, marked_chunks(expected, c.urls, prefix, sync.key)


def rejoin(c: Cluster, name: str) -> tuple[float, dict]:
    """Restart a killed member and wait for green with three nodes: (monotonic time green, the health)."""
    c.start_member(name)
    health = c.wait(nodes=3, status="green", timeout=120)
    return time.monotonic(), health


async def _write_through_failover(
    c: Cluster, hosts: list[str], prefix: str, key: str, batches: int, kill_after: int
) -> dict:
    """Upsert `batches` batches of 10 files into workspace `key`; SIGKILL the elected manager after `kill_after` of
    them. Every upsert must be acknowledged as it is (none raises); each one's seconds are kept."""
    store = await open_store(ClientSettings(hosts=hosts), prefix, "opensearch", create=False, workspace=key)
    acked: dict[str, list[str]] = {}
    seconds: list[float] = []
    manager = killed_at = None
    loop = asyncio.get_running_loop()
    try:
        for i in range(batches):
            if i == kill_after:
                manager = c.manager()
                await loop.run_in_executor(None, c.kill, manager)
                killed_at = time.monotonic()
            files = synthetic(key, i * 10, 10)
            started = time.monotonic()
            await store.upsert(files, refresh=False)
            seconds.append(time.monotonic() - started)
            for doc, chunks in files:
                acked[doc.path] = sorted(ch.id for ch in chunks)
        await store.refresh()
    finally:
        await store.close()
    return {"acked": acked, "seconds": seconds, "manager": manager, "killed_at": killed_at}


def test_sigkill_cluster_manager_during_writes(cluster, tmp_path):
    all_up(cluster)
    prefix, sync, expected, marked = synced_set(cluster, tmp_path, "mgr", 100, 12)
    held = default_layout(cluster, prefix)
    manager = cluster.manager()
    key = f"writer-{uuid.uuid4().hex[:8]}"
    with Prober(
        hosts_first(cluster, manager),
        prefix,
        sync.key,
        expected["counts"],
        marked,
        MARKER_QUERY,
        sync.folder,
        MARKED_PATHS,
        tmp_path / "home",
    ) as prober:
        result = asyncio.run(_write_through_failover(cluster, hosts_first(cluster, manager), prefix, key, 40, 10))
        assert result["manager"] == manager
        killed_at = result["killed_at"]
        survivors = [n for n in cluster.names if n != manager]
        new_manager = cluster.manager(survivors)
        assert new_manager in survivors
        live = [cluster.url(n) for n in survivors]
        acked = result["acked"]
        assert len(acked) == 400
        written = state(live, prefix, key)
        assert written["file_chunks"] == acked
        assert written["files"] == [(p, 1_770_000_000 + int(p[-8:-3])) for p in sorted(acked)]
        assert written["counts"] == {"files": 400, "chunks": 2000, "vectors": 0, "links": 800}
        prober.rounds_since(killed_at, 5)
        restart_at = time.monotonic()
        green_at, green = rejoin(cluster, manager)
        line = prober.check(killed_at, restart_at)
    slow = [(i, round(s, 2)) for i, s in enumerate(result["seconds"]) if s > HANG_LIMIT]
    assert not slow, f"batches slower than {HANG_LIMIT}s: {slow}"
    check_probes(cluster.urls, prefix, prober)
    assert comparable(state(cluster.urls, prefix, key)) == comparable(written)
    back = state(cluster.urls, prefix, sync.key)
    assert comparable(back) == comparable(expected)
    KNOWN[(prefix, sync.key)], KNOWN[(prefix, key)] = back, written
    KNOWN[(prefix, prober.probe)] = state(cluster.urls, prefix, prober.probe)
    after = result["seconds"][10:]
    print(
        f"\nkilled manager {manager} (primaries of the set {held}), new manager {new_manager}; 400 files / 2000 "
        f"chunks acknowledged, no upsert failed; first batch after the kill {after[0]:.2f}s, longest "
        f"{max(after):.2f}s; down {restart_at - killed_at:.1f}s, green again {green_at - killed_at:.1f}s after the "
        f"kill ({green['active_shards']} active shards)\n{line}"
    )


REME_FILES = 24
REME_MARKED = (3, 11, 19)
REME_QUERY = " ".join(f"marker{n:04d}" for n in REME_MARKED)
REME_MARKED_PATHS = sorted(f"digest/memory-{n:02d}.md" for n in REME_MARKED)


def write_memories(ws: Path) -> None:
    """REME_FILES memory files an agent could have written (digest notes with front matter and links, and a daily
    log); the files of REME_MARKED carry a marker word."""
    for n in range(REME_FILES):
        marker = f" The codeword is marker{n:04d}." if n in REME_MARKED else ""
        text = f"""\
            ---
            name: memory {n}
            description: what the agent learnt about {TOPICS[n % 10]}
            ---
            # Memory {n}

            The {TOPICS[n % 10]} team changed its {TOPICS[(n + 3) % 10]} routine.{marker}
            See [[digest/memory-{(n + 1) % REME_FILES:02d}.md]].

            ## Follow-up

            Check the {TOPICS[(n + 5) % 10]} notes again next week.
            """
        path = ws / "digest" / f"memory-{n:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    daily = ws / "daily" / "2026-11-30.md"
    daily.parent.mkdir(parents=True, exist_ok=True)
    daily.write_text("# Log\n\nRead [[digest/memory-03.md]] and [[digest/memory-99.md]].\n", encoding="utf-8")


async def reme_keyword_paths(app, query: str) -> tuple[list[str], float]:
    """The paths ReMe's own search job finds for `query` on the keyword branch alone, and the seconds it took."""
    started = time.monotonic()
    resp = await app.run_job("search", query=query, limit=20, vector_weight=0.0)
    took = time.monotonic() - started
    assert resp.success, resp.answer
    return sorted(r["path"] for r in resp.metadata["results"]), took


async def reme_nodes(app) -> list[tuple]:
    fs = app.context.components["file_store"]["default"]
    return [(n.path, n.st_mtime, sorted(n.chunk_ids)) for n in sorted(await fs.get_nodes(), key=lambda n: n.path)]


async def test_reme_application_through_a_manager_kill_while_idle(cluster, tmp_path):
    pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")
    from tests.integration.test_reme import app_config, make_app

    await asyncio.to_thread(all_up, cluster)
    prefix = new_set("reme")
    ws = tmp_path / "reme-ws"
    write_memories(ws)
    manager = await asyncio.to_thread(cluster.manager)
    hosts = hosts_first(cluster, manager)
    cfg = app_config(ws, "opensearch", ",".join(hosts), prefix)  # no replicas or shards key: ReMe's defaults
    assert not {"replicas", "shards"} & set(cfg["components"]["file_store"]["default"])
    app = make_app(cfg)
    await app.start()
    try:
        fs = app.context.components["file_store"]["default"]
        key = default_workspace_key(ws)
        assert fs.store.workspace == key and fs.store.prefix == prefix
        indexed = await app.run_job("index_once")
        assert indexed.success, indexed.answer
        assert indexed.metadata["counts"] == {"added": REME_FILES + 1, "modified": 0, "deleted": 0}
        await fs.wait_backfill()
        await fs.dump()
        held = await asyncio.to_thread(default_layout, cluster, prefix)
        assert await asyncio.to_thread(cluster.manager) == manager
        nodes = await reme_nodes(app)
        memories = [f"digest/memory-{n:02d}.md" for n in range(REME_FILES)]
        assert [n[0] for n in nodes] == ["daily/2026-11-30.md", *memories]
        found, _ = await reme_keyword_paths(app, REME_QUERY)
        assert found == REME_MARKED_PATHS
        expected = await indexed_state(cluster.urls, prefix, key)
        expect_counts(expected)
        assert expected["counts"]["vectors"] == expected["counts"]["chunks"]  # the hash embedding gave every chunk one
        store = await open_store(ClientSettings(hosts=cluster.urls), prefix, "opensearch", create=False, workspace=key)
        try:
            hits = await store.keyword_search(REME_QUERY, 10)
        finally:
            await store.close()
        assert sorted(h.chunk.path for h in hits) == REME_MARKED_PATHS  # one chunk each
        marked = sorted(h.chunk.id for h in hits)

        live = [cluster.url(n) for n in cluster.names if n != manager]
        with Prober(
            hosts, prefix, key, expected["counts"], marked, REME_QUERY, ws, REME_MARKED_PATHS, tmp_path / "home"
        ) as prober:
            await asyncio.to_thread(prober.rounds_since, time.monotonic(), 3)
            await asyncio.to_thread(cluster.kill, manager)
            killed_at = time.monotonic()
            # ReMe, idle when the manager died, answers its next searches and reads at once, from the survivors.
            found, first_search = await reme_keyword_paths(app, REME_QUERY)
            assert found == REME_MARKED_PATHS
            assert await reme_nodes(app) == nodes
            assert comparable(await indexed_state(live, prefix, key)) == comparable(expected)
            # ... and indexes a memory written during the outage (one chunk, with its vector).
            c = expected["counts"]
            grown = {"files": c["files"] + 1, "chunks": c["chunks"] + 1, "links": c["links"]}
            # The set is shared: the prober's own refreshes (its workspace's writes) make ReMe's write visible while
            # it is half applied (its chunk before its file doc was seen). Any mix of the counts before and after
            # passes; nothing lower.
            prober.counts += [
                dict(zip(("files", "chunks", "vectors", "links"), mix, strict=True))
                for mix in itertools.product(*((c[k], c[k] + 1) for k in ("files", "chunks", "vectors")), [c["links"]])
            ]
            (ws / "digest" / "outage.md").write_text("# Outage\n\nThe codeword during the outage is quorum0042.\n")
            started = time.monotonic()
            indexed = await app.run_job("index_once")
            index_seconds = time.monotonic() - started
            assert indexed.success, indexed.answer
            assert indexed.metadata["counts"] == {"added": 1, "modified": 0, "deleted": 0}
            await fs.dump()
            assert (await reme_keyword_paths(app, "quorum0042"))[0] == ["digest/outage.md"]
            during = await indexed_state(live, prefix, key)
            assert during["counts"] == {**grown, "vectors": c["vectors"] + 1}
            assert set(expected["chunks"]) < set(during["chunks"])
            new_manager = await asyncio.to_thread(cluster.manager, [n for n in cluster.names if n != manager])
            await asyncio.to_thread(prober.rounds_since, killed_at, 10)
            restart_at = time.monotonic()
            green_at, green = await asyncio.to_thread(rejoin, cluster, manager)
            line = prober.check(killed_at, restart_at)
        found, _ = await reme_keyword_paths(app, REME_QUERY)
        assert found == REME_MARKED_PATHS
        assert [n[0] for n in await reme_nodes(app)] == sorted([*(n[0] for n in nodes), "digest/outage.md"])
    finally:
        await app.close()
    back = await indexed_state(cluster.urls, prefix, key)
    assert comparable(back) == comparable(during)
    probes = await indexed_state(cluster.urls, prefix, prober.probe)
    assert probes["file_chunks"] == prober.acked
    KNOWN[(prefix, key)], KNOWN[(prefix, prober.probe)] = back, probes
    print(
        f"\nReMe's set: {len(nodes)} files, {c['chunks']} chunks with vectors; killed manager {manager} while idle "
        f"(primaries of the set {held}), new manager {new_manager}; ReMe's first search after the kill "
        f"{first_search:.2f}s, its index job during the outage {index_seconds:.2f}s; "
        f"down {restart_at - killed_at:.1f}s, green again {green_at - killed_at:.1f}s after the kill "
        f"({green['active_shards']} active shards)\n{line}"
    )


async def _write(urls: list[str], prefix: str, key: str, start: int, count: int, refresh: bool) -> dict[str, list[str]]:
    store = await open_store(ClientSettings(hosts=urls), prefix, "opensearch", create=False, workspace=key)
    try:
        files = synthetic(key, start, count)
        for i in range(0, count, 50):
            await store.upsert(files[i : i + 50], refresh=refresh)
    finally:
        await store.close()
    return {doc.path: sorted(ch.id for ch in chunks) for doc, chunks in files}


def test_sigkill_data_node_while_idle_then_all_members(cluster, tmp_path):
    """A data node killed while idle; then, with the survivors holding what was written during its outage, the two
    others killed too and all three restarted on their data folders (the killed node's copies are stale by then)."""
    all_up(cluster)
    prefix, sync, expected, marked = synced_set(cluster, tmp_path, "idle", 100, 13)
    key = f"writer-{uuid.uuid4().hex[:8]}"
    acked = asyncio.run(_write(cluster.urls, prefix, key, 0, 300, refresh=True))
    acked |= asyncio.run(_write(cluster.urls, prefix, key, 300, 100, refresh=False))  # only in the translog when killed
    victim, manager, held = data_victim(cluster, prefix)
    survivors = [n for n in cluster.names if n != victim]
    live = [cluster.url(n) for n in survivors]
    with Prober(
        hosts_first(cluster, victim),
        prefix,
        sync.key,
        expected["counts"],
        marked,
        MARKER_QUERY,
        sync.folder,
        MARKED_PATHS,
        tmp_path / "home",
    ) as prober:
        prober.rounds_since(time.monotonic(), 3)
        cluster.kill(victim)
        killed_at = time.monotonic()
        assert comparable(state(live, prefix, sync.key)) == comparable(expected)
        written = state(live, prefix, key)
        assert written["file_chunks"] == acked
        assert written["counts"] == {"files": 400, "chunks": 2000, "vectors": 0, "links": 800}
        health = cluster.wait(nodes=2, status="yellow", names=survivors, timeout=30)
        prober.rounds_since(killed_at, 10)
        ended_at = time.monotonic()
    line = prober.check(killed_at, ended_at)
    known = {**KNOWN, (prefix, sync.key): expected, (prefix, key): written}
    for name in survivors:
        cluster.kill(name)
    cluster.start(timeout=180)
    green = cluster.wait(nodes=3, status="green", timeout=180)
    green_at = time.monotonic()
    check_probes(cluster.urls, prefix, prober)  # what the prober wrote while one node was down, after the full crash
    # every workspace of every set of this module, as the tests left it (a test that failed left none here)
    back = {where: comparable(state(cluster.urls, *where)) for where in known}
    assert back == {where: comparable(st) for where, st in known.items()}
    print(
        f"\nidle set: 100 files / 500 chunks (CLI) and 400 files / 2000 chunks / 800 links (MemoryStore, the last 100 "
        f"files unrefreshed); killed {victim} (manager {manager}, primaries of the set {held}); survivors "
        f"{health['status']}; {len(prober.acked)} probe files acknowledged by the survivors; then killed "
        f"{', '.join(survivors)} and restarted all three: green again {green_at - killed_at:.1f}s after the first kill "
        f"({green['active_shards']} active shards); every document of {len(known) + 1} workspaces in "
        f"{len({p for p, _ in known})} sets back exactly\n{line}"
    )
