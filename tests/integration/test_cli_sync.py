"""`reme-es sync` end to end against a real node (the `cli` fixture: every flavour under test): what it indexes,
edits, renames and deletes, dry runs, bad input, symlinks, failures and size limits, watch mode and a server
outage under it. The sync mechanics are tested with the built-in chunkers and the whole example file set
(`BUILTIN`); test_cli_embeddings' `test_default_sync_*` and test_reme_friction test ReMe's file set and chunkers.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

from reme_es.adapters.retry import REQUEST, RetryPolicy
from reme_es.core.models import LinkScope, chunk_id
from tests.conftest import first_flavour_only
from tests.integration.cli_support import EXAMPLE_FILES, _summary, _touch
from tests.integration.nodes import Proxy, exists

# --------------------------------------------------------------------------------------------- sync


def test_sync_then_search_prints_hits_and_links(cli):
    result = cli.sync()
    assert result.exit_code == 0, result.stderr
    assert _summary(result) == "synced: 7 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped"
    assert re.search(r"; 8 chunks in \d+\.\d\ds \(\d+ chunks/s\)$", result.stdout.splitlines()[-1])
    assert result.stderr == ""

    files = cli.store(lambda s: s.links.get_files())
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
    assert cli.store(lambda s: s.links.get_files(["digest/search.md"]))[0].front_matter == {}

    # delete: chunks, file doc and its links go; links to it turn virtual
    (cli.workspace / "digest/indexing.md").unlink()
    deleted = cli.sync()
    assert _summary(deleted) == "synced: 0 added, 0 modified, 1 deleted, 0 failed, 6 unchanged, 0 skipped"
    assert cli.search("SHA-256") == []
    virtual = cli.store(lambda s: s.links.outlinks("digest/project-atlas.md", LinkScope.VIRTUAL))
    assert [x.target for x in virtual] == ["digest/indexing.md", "atlas-diagram.png"]

    # rename: old path removed, new path added
    (cli.workspace / "digest/project-atlas.md").rename(cli.workspace / "digest/atlas.md")
    renamed = cli.sync()
    assert _summary(renamed) == "synced: 1 added, 0 modified, 1 deleted, 0 failed, 5 unchanged, 0 skipped"
    assert cli.search("force-merge") == [("digest/atlas.md", 7, 20)]
    assert [f.path for f in cli.store(lambda s: s.links.get_files())] == [
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
            "warning: digest/broken.md:2: front matter is not valid YAML "
            "(expected ',' or ']', but got '<stream end>'); indexed as plain text"
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

    virtual = cli.store(lambda s: s.links.outlinks("digest/links.md", LinkScope.VIRTUAL))
    real = cli.store(lambda s: s.links.outlinks("digest/links.md", LinkScope.REAL))
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
    assert [f.path for f in cli.store(lambda s: s.links.get_files())] == sorted([*EXAMPLE_FILES, "digest/a..b.md"])


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
    assert [f.path for f in cli.store(lambda s: s.links.get_files())] == EXAMPLE_FILES


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
    assert [f.path for f in cli.store(lambda s: s.links.get_files())] == EXAMPLE_FILES


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
        # The watcher groups events for 3 s at most; the rest is room for a busy machine (each `search` is a process).
        deadline = time.monotonic() + 30
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


# ------------------------------------------------------------------------------------ server outage

_POLICY = RetryPolicy.shared(REQUEST)
# Seconds from a file written during an outage to the watcher's warning at the latest: the watch's grouping of events
# (3 s at most), a request's every retry at its longest backoff (9.5 s with the shared policy), and 15 s for the
# process on a busy machine (a CI run with three test streams on 2 cores missed a plain 15 s limit).
OUTAGE_NOTICED = 3 + sum(_POLICY.delay(n, 1.0) for n in range(_POLICY.tries - 1)) + 15


@first_flavour_only
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
            deadline = time.monotonic() + OUTAGE_NOTICED
            while "server error, retrying" not in err_file.read_text():
                assert time.monotonic() < deadline, err_file.read_text()
                time.sleep(0.2)
            proxy.start()
            found, deadline = [], time.monotonic() + OUTAGE_NOTICED  # the next pass: one backoff of 1 s, then retries
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
