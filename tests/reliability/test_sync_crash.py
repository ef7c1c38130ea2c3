"""Crash safety of `reme-es sync`: SIGKILL at a random moment, re-run, and compare with a clean sync.

A generated workspace of 400 Markdown files with wikilinks is synced by the real command line in a subprocess
(`--hosts` points at the flavour's test server, so no node is started). Each trial syncs into its own prefix,
kills the process at a seeded random moment inside its write phase (after a seeded number of acknowledged
batches, plus a seeded delay; the three trials of the first test draw one each from the early, middle and late
third of the write phase), runs the sync again to completion, and compares the indexed state with a clean
sync of the same workspace into another prefix: sorted chunk ids, file paths with st_mtime, and link
(source, target, anchor) triples, read back with scans. Every test runs once per flavour under test.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.store import MemoryStore
from reme_es.store.connect import make_dialect, open_store
from reme_es.store.indices import DEFAULT_WORKSPACE
from tests.containers.servers import Server

SEED = 20260518
FILES = 400
TRIALS = 3  # one kill in each third of the write phase
BATCH_FILES = 25  # 16 batches: many moments at which a kill leaves a partial state
KILL_BATCHES = FILES // BATCH_FILES - 4  # a kill comes after 0..11 acknowledged batches: at least 4 are left
TOPICS = ["tides", "harbour", "engines", "ledger", "weather", "crew", "cargo", "charts", "radio", "lights"]


def make_workspace(root: Path, rng: random.Random) -> None:
    """400 Markdown files in daily/, digest/ and resource/ with front matter, sections and wikilinks."""
    paths = (
        [f"daily/2026-0{1 + i // 28}-{1 + i % 28:02d}.md" for i in range(120)]
        + [f"digest/{TOPICS[i % 10]}-{i:03d}.md" for i in range(160)]
        + [f"resource/ref/{TOPICS[i % 10]}/{i:03d}.md" for i in range(120)]
    )
    assert len(paths) == FILES
    for n, path in enumerate(paths):
        topic = TOPICS[n % 10]
        lines = ["---", f"name: {topic} note {n}", f"description: about {topic}", f"tags: [{topic}, t{n % 7}]", "---"]
        for s in range(rng.randint(1, 4)):
            lines += ["", f"## {topic.title()} section {s}", ""]
            for _ in range(rng.randint(1, 12)):
                words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(8, 30)))
                link = ""
                if rng.random() < 0.4:
                    target = rng.choice(paths)
                    anchor = f"#{rng.choice(TOPICS).title()} section 0" if rng.random() < 0.3 else ""
                    link = f" see [[{target}{anchor}]]"
                elif rng.random() < 0.1:
                    link = f" and [[missing/{rng.choice(TOPICS)}.md]]"
                lines.append(words + link)
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(file, (1_770_000_000 + n, 1_770_000_000 + n))


class Sync:
    """`reme-es sync` as a child process against one server, with a private reme-es home."""

    def __init__(self, server: Server, workspace: Path, home: Path):
        self.url, self.engine, self.workspace = server.url, server.engine, workspace
        self.env = {
            **os.environ,
            "REME_ES_HOME": str(home),
            "REME_ES_BATCH_FILES": str(BATCH_FILES),
            # the workspace spans resource/ too (sync's default is ReMe's daily + digest); the built-in
            # chunker keeps the many runs fast (the chunker plays no part in crash safety)
            "REME_ES_DIRS": "daily,digest,resource",
            "REME_ES_CHUNKER": "builtin",
            "REME_ES_WORKSPACE_KEY": DEFAULT_WORKSPACE,
        }  # the workspace the state readers open

    def start(self, prefix: str, *args: str, **popen) -> subprocess.Popen:
        code = "from reme_es.cli import main; main()"
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                "sync",
                str(self.workspace),
                "--hosts",
                self.url,
                "--index-prefix",
                prefix,
                "--engine",
                self.engine,
                *args,
            ],
            **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": self.env, **popen},
        )

    def run(self, prefix: str) -> tuple[str, float]:
        """Sync to completion; returns stdout and the seconds from the 'syncing' line to exit."""
        proc = self.start(prefix)
        first = proc.stdout.readline()
        assert first.startswith("syncing "), first + proc.stderr.read()
        began = time.monotonic()
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
        return first + out, time.monotonic() - began

    def kill_after(self, prefix: str, batches: int, delay: float) -> tuple[int, str]:
        """Start a sync, SIGKILL it `delay` seconds after its `batches`-th progress line (0: its 'syncing' line);
        returns (returncode, stdout). Counting progress lines puts the kill inside the write phase however fast
        the server is today."""
        proc = self.start(prefix)
        seen = [proc.stdout.readline()]
        assert seen[0].startswith("syncing "), seen[0] + proc.stderr.read()
        while len(seen) <= batches:
            seen.append(proc.stdout.readline())
            assert re.fullmatch(r"synced \d+/\d+ files\n", seen[-1]), "".join(seen) + proc.stderr.read()
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        return proc.returncode, "".join(seen) + out


async def indexed_state(server: Server, prefix: str) -> dict:
    """Chunk ids, (path, st_mtime) and link triples of a prefix, read with search_after scans (after a refresh:
    only call this once the syncs are over, or it would make a killed sync's writes visible to the next one)."""
    store = MemoryStore(make_dialect(server.engine, ClientSettings([server.url])), prefix)
    try:
        await store.refresh()
        chunks = sorted([c.id async for page in store.vectors.without_vectors() for c in page])
        files = [(f.path, f.st_mtime) for f in await store.links.get_files()]
        links = sorted(await _scan_links(store))
        file_links = sorted((x.source, x.target, x.anchor) for f in await store.links.get_files() for x in f.links)
    finally:
        await store.close()
    return {"chunks": chunks, "files": files, "links": links, "file_links": file_links}


async def _scan_links(store: MemoryStore) -> list[tuple[str, str, str]]:
    out, after = [], None
    while True:
        sort = [{"source": "asc"}, {"target": "asc"}, {"anchor": "asc"}]
        body = {"size": 1000, "_source": ["source", "target", "anchor"], "sort": sort}
        if after:
            body["search_after"] = after
        hits = (await store.dialect.transport.request("POST", f"/{store.index('links')}/_search", body))["hits"]["hits"]
        out += [(h["_source"]["source"], h["_source"]["target"], h["_source"].get("anchor", "")) for h in hits]
        if len(hits) < 1000:
            return out
        after = hits[-1]["sort"]


def _progress(out: str) -> str:
    """The last `synced N/400 files` progress line of a run (what it had acknowledged), or 0."""
    lines = [x.split()[1] for x in out.splitlines() if x.startswith("synced ") and x.endswith(" files")]
    return lines[-1] if lines else f"0/{FILES}"


def _summary(out: str) -> str:
    return [x for x in out.splitlines() if x.startswith("synced:")][-1].split(";")[0]


def test_killed_syncs_converge_on_rerun(server, tmp_path, prefixes):
    rng = random.Random(SEED)
    workspace = tmp_path / "workspace"
    make_workspace(workspace, rng)
    sync = Sync(server, workspace, tmp_path / "home")

    clean = prefixes()
    out, write_seconds = sync.run(clean)
    assert "synced: 400 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped" in out
    expected = asyncio.run(indexed_state(server, clean))
    assert len(expected["files"]) == FILES
    assert expected["links"] == expected["file_links"]

    report = []
    for trial in range(TRIALS):
        prefix = prefixes()
        third = range(trial * KILL_BATCHES // TRIALS, (trial + 1) * KILL_BATCHES // TRIALS)
        batches, delay = rng.choice(third), rng.uniform(0.0, 0.15)
        code, out_killed = sync.kill_after(prefix, batches, delay)
        out_rerun, _ = sync.run(prefix)
        state = asyncio.run(indexed_state(server, prefix))
        report.append((batches, delay, code, _progress(out_killed), _summary(out_rerun)))
        assert state == expected, f"trial {trial}: {report[-1]}"
    print(
        f"\nclean sync: {len(expected['chunks'])} chunks, {len(expected['files'])} files, "
        f"{len(expected['links'])} links, write phase {write_seconds:.2f}s"
    )
    for batches, delay, code, acked, rerun in report:
        print(f"kill {batches} batches + {delay:.2f}s in: exit {code}, {acked} files acknowledged; rerun {rerun}")
    assert [r[2] for r in report] == [-signal.SIGKILL] * TRIALS  # every kill came before the run ended
    assert all(int(r[3].split("/")[0]) >= r[0] * BATCH_FILES for r in report)  # and after its chosen batches


def edit_workspace(root: Path, rng: random.Random) -> None:
    """After a crash: rewrite 40 files (new text, new links) and add 15. (Deleting a file is the case below.)"""
    files = sorted(root.rglob("*.md"))
    for n, file in enumerate(rng.sample(files, 40)):
        text = file.read_text(encoding="utf-8").replace("tides", "currents") + f"\nedited {n} [[digest/new-{n}.md]]\n"
        file.write_text(text, encoding="utf-8")
        os.utime(file, (1_780_000_000 + n, 1_780_000_000 + n))
    for n in range(15):
        file = root / "digest" / f"new-{n}.md"
        file.write_text(f"# New {n}\n\nfresh notes on {TOPICS[n % 10]} [[{files[n].relative_to(root).as_posix()}]]\n")
        os.utime(file, (1_780_100_000 + n, 1_780_100_000 + n))


def test_killed_sync_then_edits_converge_on_rerun(server, tmp_path, prefixes):
    """The workspace changes between the crash and the re-run: stale chunks the killed run wrote must go."""
    rng = random.Random(SEED + 1)
    report = []
    expected = None
    for trial in range(3):
        workspace = tmp_path / f"workspace-{trial}"
        make_workspace(workspace, random.Random(SEED))
        sync = Sync(server, workspace, tmp_path / f"home-{trial}")
        prefix = prefixes()
        batches, delay = 1 + rng.randrange(KILL_BATCHES - 1), rng.uniform(0.0, 0.15)
        code, out_killed = sync.kill_after(prefix, batches, delay)
        edit_workspace(workspace, random.Random(SEED + 2))
        out_rerun, _ = sync.run(prefix)
        if expected is None:  # every trial ends with the same files and mtimes: one clean sync serves all three
            clean = prefixes()
            sync.run(clean)
            expected = asyncio.run(indexed_state(server, clean))
        state = asyncio.run(indexed_state(server, prefix))
        report.append((batches, delay, code, _progress(out_killed), _summary(out_rerun)))
        extra = sorted(set(state["chunks"]) - set(expected["chunks"]))
        missing = sorted(set(expected["chunks"]) - set(state["chunks"]))
        extra_files = sorted(set(state["files"]) - set(expected["files"]))
        assert (len(extra), len(missing)) == (0, 0), f"trial {trial}: {report[-1]}, {extra_files}"
        assert state == expected, f"trial {trial}: {report[-1]}"
        assert len(expected["files"]) == FILES + 15
    for batches, delay, code, acked, rerun in report:
        print(f"kill {batches} batches + {delay:.2f}s in: exit {code}, {acked} acknowledged; edits; rerun {rerun}")
    assert [r[2] for r in report] == [-signal.SIGKILL] * 3
    assert all(int(r[3].split("/")[0]) >= r[0] * BATCH_FILES for r in report)


def test_chunks_of_a_never_acknowledged_file_go_when_the_file_is_deleted(server, tmp_path, prefixes):
    """The state a SIGKILL between the upsert phases leaves, made deterministic with an injected phase-2 failure."""
    from reme_es.core.errors import BulkError
    from reme_es.core.models import FileDoc, SearchFilter, doc_id
    from reme_es.core.options import SyncOptions
    from reme_es.sync.scan import parse

    from .test_bulk_faults import FaultyBulk

    workspace = tmp_path / "workspace"
    for name in ("a", "b"):
        (workspace / "digest").mkdir(parents=True, exist_ok=True)
        (workspace / "digest" / f"{name}.md").write_text(f"# {name}\n\nharbour notes {name}\n")
    prefix = prefixes()

    async def half_write() -> list[str]:
        store = await open_store(ClientSettings([server.url]), prefix, server.engine)
        try:
            path = "digest/b.md"
            parsed = parse(path, (workspace / path).read_text(), lambda m: None, SyncOptions().chunk_chars)
            mtime = (workspace / path).stat().st_mtime
            doc = FileDoc(path=path, st_mtime=mtime, chunk_ids=[c.id for c in parsed.chunks])
            # the placeholder file doc (phase 0) passes, the real one (phase 2) fails: chunks stored, no real doc
            FaultyBulk(store.dialect, {doc_id(path): (400, None, 1)})
            with pytest.raises(BulkError):
                await store.upsert([(doc, parsed.chunks)])
            hits = await store.keyword_search("harbour", 10, SearchFilter(paths=[path]))
            assert [h.chunk.id for h in hits] == [c.id for c in parsed.chunks]
            return [c.id for c in parsed.chunks]
        finally:
            await store.close()

    orphans = asyncio.run(half_write())
    (workspace / "digest" / "b.md").unlink()
    Sync(server, workspace, tmp_path / "home").run(prefix)

    async def chunks_of_b() -> list[str]:
        store = await open_store(ClientSettings([server.url]), prefix, server.engine, create=False)
        try:
            return [h.chunk.id for h in await store.keyword_search("harbour", 10, SearchFilter(paths=["digest/b.md"]))]
        finally:
            await store.close()

    assert len(orphans) == 1
    assert asyncio.run(chunks_of_b()) == []
