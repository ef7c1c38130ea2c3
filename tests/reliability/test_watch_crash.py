"""Crash safety of `reme-es sync --watch`: SIGKILL the watcher while it processes bursts of changes.

The 400-file workspace of test_sync_crash is synced by a real `reme-es sync --watch` child process. Each of
four cycles (re)starts the watcher and waits for its `watching` line (the catch-up with what the last killed
watcher left is done by then), adds a probe file with a word of its own and waits for the watcher's summary of
it, finds the word with a search (the watcher works and what it acknowledged is visible), writes a burst of
changes (about 220 files rewritten, 20 added, 15 deleted), waits for a seeded number of the watcher's progress
lines, writes a small second wave into the run being processed, and SIGKILLs the watcher a seeded delay later.
The probe word must still be found after the kill. At the end one plain `reme-es sync` runs, and the index must
equal a clean sync of the final workspace into a fresh prefix (chunk ids, (path, st_mtime), link triples).

Every write sets a distinct mtime of its own, so no edit can hide behind a coarse file-system clock.
"""

from __future__ import annotations

import asyncio
import os
import queue
import random
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.store import MemoryStore
from reme_es.store.connect import make_dialect
from tests.conftest import first_flavour_only
from tests.containers.servers import Server

from .test_sync_crash import BATCH_FILES, FILES, SEED, TOPICS, Sync, indexed_state, make_workspace

CYCLES = 4
REWRITES, ADDS, DELETES = 220, 20, 15
SECOND_WAVE = 10
WAIT = 60.0  # seconds any one expected line may take


class Watcher:
    """A running `reme-es sync --watch`: its stdout lines go through a queue, so no read can hang the test."""

    def __init__(self, sync: Sync, prefix: str, err: Path):
        self.err = err
        with err.open("a") as fh:
            self.proc = sync.start(prefix, "--watch", stderr=fh)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_line(self) -> str:
        """The next stdout line (fails when the watcher exits or stays silent for WAIT seconds)."""
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            line = None
        assert line is not None, (
            f"watcher silent or gone (exit {self.proc.poll()}): {self.seen[-5:]}\n{self.err.read_text()}"
        )
        self.seen.append(line)
        return line

    def until(self, pattern: str) -> list[str]:
        """Lines up to and including the first one matching `pattern`."""
        got = [self.next_line()]
        while not re.fullmatch(pattern, got[-1]):
            got.append(self.next_line())
        return got

    def kill(self) -> tuple[int, list[str]]:
        """SIGKILL the watcher; its exit status and the stdout lines it wrote that were not read yet."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        rest = []
        while (line := self.lines.get(timeout=WAIT)) is not None:
            rest.append(line)
        self.seen += rest
        return self.proc.returncode, rest


class Editor:
    """Seeded changes to the workspace; every written file gets the next mtime of one increasing clock."""

    def __init__(self, root: Path, rng: random.Random):
        self.root, self.rng = root, rng
        self.clock = 1_790_000_000

    def files(self, probes: bool = True) -> list[Path]:
        """The synced files, sorted (without the probe files unless `probes`)."""
        found = sorted(p for d in ("daily", "digest", "resource") for p in (self.root / d).rglob("*.md"))
        return found if probes else [p for p in found if not p.name.startswith("probe-")]

    def write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.clock += 1
        os.utime(path, (self.clock, self.clock))

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def burst(self, cycle: int) -> None:
        """Rewrite REWRITES files (new words, a new link), add ADDS, delete DELETES (probes are left alone)."""
        deleted = self.rng.sample(self.files(probes=False), DELETES)
        for f in deleted:
            f.unlink()
        kept = self.files(probes=False)
        for n in range(ADDS):
            target = self.rel(self.rng.choice(kept))
            self.write(
                self.root / "digest" / f"burst-{cycle}-{n:02d}.md",
                f"# Burst {cycle} note {n}\n\n{self.rng.choice(TOPICS)} log of burst {cycle} [[{target}]]\n",
            )
        for n, f in enumerate(self.rng.sample(kept, REWRITES)):
            text = f.read_text(encoding="utf-8").replace(self.rng.choice(TOPICS), self.rng.choice(TOPICS))
            link = f"[[digest/burst-{cycle}-{n % ADDS:02d}.md]]" if n % 3 else f"[[missing/{cycle}-{n}.md]]"
            self.write(f, text + f"\nburst {cycle} edit {n} {link}\n")

    def second_wave(self, cycle: int) -> None:
        """While the watcher writes the burst: rewrite SECOND_WAVE more files and delete two."""
        for n, f in enumerate(self.rng.sample(self.files(probes=False), SECOND_WAVE)):
            self.write(f, f.read_text(encoding="utf-8") + f"\nsecond wave {cycle} edit {n}\n")
        for f in self.rng.sample(self.files(probes=False), 2):
            f.unlink()


async def _search(server: Server, prefix: str, word: str) -> list[str]:
    """Paths of the chunks a keyword search finds (no refresh: only what the watcher made visible counts)."""
    store = MemoryStore(make_dialect(server.engine, ClientSettings([server.url])), prefix)
    try:
        return [h.chunk.path for h in await store.keyword_search(word, 5)]
    finally:
        await store.close()


def _summary(line: str) -> str:
    return line.split(";")[0]


@pytest.fixture
def watchers():
    """Watchers started by one test; any still running at the end (a failed assertion) is killed."""
    started: list[Watcher] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait(timeout=30)


@first_flavour_only
def test_killed_watcher_converges_on_one_plain_sync(server, tmp_path, prefixes, watchers):
    rng = random.Random(SEED + 10)
    workspace = tmp_path / "workspace"
    make_workspace(workspace, random.Random(SEED))
    editor = Editor(workspace, rng)
    sync = Sync(server, workspace, tmp_path / "home")
    prefix = prefixes()
    err = tmp_path / "watch.err"
    progress = r"synced \d+/\d+ files"
    report = []

    for cycle in range(CYCLES):
        began = time.monotonic()
        watcher = Watcher(sync, prefix, err)
        watchers.append(watcher)
        start = watcher.until(r"watching .*")
        assert start[-1] == f"watching {workspace.resolve()} (Ctrl-C to stop)", start
        if cycle == 0:
            assert (
                _summary(start[-2]) == f"synced: {FILES} added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped"
            )
        else:  # the catch-up finished the killed run: its deletes come after all writes, so none had happened
            m = re.fullmatch(
                r"synced: (\d+) added, (\d+) modified, (\d+) deleted, 0 failed, (\d+) unchanged, 0 skipped",
                _summary(start[-2]),
            )
            assert m, start
            added, modified, deleted, unchanged = map(int, m.groups())
            assert (deleted, added + modified + unchanged) == (DELETES + 2, len(editor.files())), start[-2]
            assert modified > 0

        time.sleep(1.0)  # the watcher's own catch-up pass after `watching` is over: the probe is an event of its own
        word = f"quokkaprobe{cycle}"
        in_scope = len(editor.files())
        editor.write(workspace / "digest" / f"probe-{cycle}.md", f"# Probe {cycle}\n\nthe {word} was here\n")
        done = watcher.until(r"synced: .*")
        assert (
            _summary(done[-1]) == f"synced: 1 added, 0 modified, 0 deleted, 0 failed, {in_scope} unchanged, 0 skipped"
        )
        assert asyncio.run(_search(server, prefix, word)) == [f"digest/probe-{cycle}.md"]

        editor.burst(cycle)
        batches, delay = 1 + rng.randrange(5), rng.uniform(0.0, 0.1)
        seen = watcher.until(progress)
        assert seen == [f"synced {BATCH_FILES}/{REWRITES + ADDS} files"]  # the whole burst is one run
        for _ in range(batches - 1):
            assert re.fullmatch(progress, watcher.next_line()), watcher.seen[-3:]
        editor.second_wave(cycle)
        time.sleep(delay)
        code, rest = watcher.kill()
        assert code == -signal.SIGKILL
        assert all(re.fullmatch(progress, x) for x in rest), rest  # killed inside the run, before its summary
        assert asyncio.run(_search(server, prefix, word)) == [f"digest/probe-{cycle}.md"]
        report.append((cycle, batches, delay, watcher.seen[-1], time.monotonic() - began))

    out, _ = sync.run(prefix)
    after_kills = asyncio.run(indexed_state(server, prefix))
    clean = prefixes()
    sync.run(clean)
    expected = asyncio.run(indexed_state(server, clean))
    files = len(editor.files())
    print(
        f"\nwatch crash ({server.flavour}): {len(expected['chunks'])} chunks, {files} files, "
        f"{len(expected['links'])} links; final plain sync: {_summary(out.splitlines()[-1])}"
    )
    for cycle, batches, delay, last, seconds in report:
        print(
            f"cycle {cycle}: killed {delay:.2f}s after progress line {batches} of the burst (last: {last!r}); "
            f"cycle took {seconds:.1f}s"
        )
    assert len(expected["files"]) == files == FILES + CYCLES * (ADDS + 1 - DELETES - 2)
    assert after_kills == expected
    assert err.read_text() == ""
