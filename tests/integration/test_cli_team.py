"""Many workspaces in one index set through the command line: isolation, who writes a workspace, forgetting one,
moving a workspace from its own set (the layout before shared sets) into a shared one, replicas."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import urllib.request

from click.testing import CliRunner

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.templates import INDEX_KINDS, render_index
from reme_es.cli import main
from reme_es.core.options import default_prefix, default_workspace_key
from reme_es.store import MemoryStore
from reme_es.store.connect import detect_engine, make_dialect
from tests.integration.cli_support import BUILTIN, EXAMPLE, EXAMPLE_FILES, Cli, _drop, _summary

ALL = 7  # files of examples/workspace that BUILTIN syncs


def _done(result) -> str:
    """A sync's summary up to its failed count."""
    return re.sub(r", \d+ unchanged.*$", "", _summary(result))


def _twin(cli: Cli, name: str) -> Cli:
    """A second copy of the example workspace (same paths and texts) in another folder, same index set."""
    folder = cli.workspace.parent / name / "workspace"
    shutil.copytree(EXAMPLE, folder)
    return Cli(cli.url, cli.prefix, folder, cli.home)


def _stats(cli: Cli, kind: str) -> dict:
    """The node's `_stats` of one index of the test's set (every copy, primaries and replicas)."""
    with urllib.request.urlopen(f"{cli.url}/{cli.prefix}-{kind}/_stats/docs", timeout=30) as resp:
        return json.loads(resp.read())


def _run(*args: str, home) -> object:
    return CliRunner().invoke(main, list(args), env={"REME_ES_HOME": str(home)}, catch_exceptions=False)


def test_two_workspaces_with_the_same_paths_share_a_set_and_stay_apart(cli):
    other = _twin(cli, "b")
    assert cli.key != other.key  # derived from each folder's absolute path
    assert _done(cli.sync()) == f"synced: {ALL} added, 0 modified, 0 deleted, 0 failed"
    # The second folder's sync into the same set adds its own copy and deletes nothing of the first's.
    assert _done(other.sync()) == f"synced: {ALL} added, 0 modified, 0 deleted, 0 failed"
    assert _done(cli.sync()) == "synced: 0 added, 0 modified, 0 deleted, 0 failed"
    (other.workspace / "digest" / "search.md").unlink()
    assert _done(other.sync()) == "synced: 0 added, 0 modified, 1 deleted, 0 failed"
    mine, theirs = cli.search("hybrid search"), other.search("hybrid search")
    assert "digest/search.md" in {p for p, _, _ in mine}
    assert "digest/search.md" not in {p for p, _, _ in theirs}
    counts = [json.loads(c("status", "--json").stdout)["workspace_counts"] for c in (cli, other)]
    assert (counts[0]["files"], counts[1]["files"]) == (ALL, ALL - 1)


def test_a_workspace_key_written_from_another_folder_is_refused_and_nothing_is_deleted(cli, monkeypatch):
    other = _twin(cli, "b")
    assert _done(cli.sync()) == f"synced: {ALL} added, 0 modified, 0 deleted, 0 failed"
    (other.workspace / "digest" / "search.md").unlink()
    as_key = ["--hosts", cli.url, "--index-prefix", cli.prefix, "--workspace-key", cli.key]
    refused = _run("sync", str(other.workspace), *BUILTIN, *as_key, home=cli.home)
    assert refused.exit_code == 2
    written = f"workspace {cli.key!r} of index set {cli.prefix!r} is written from {cli.workspace.resolve()}"
    assert written in refused.stderr
    assert "--workspace-key" in refused.stderr and "--take-over" in refused.stderr
    assert json.loads(cli("status", "--json").stdout)["workspace_counts"]["files"] == ALL  # nothing deleted
    not_mine = _run("drop", "-w", str(other.workspace), *as_key, "--yes", home=cli.home)  # from the wrong folder
    assert not_mine.exit_code == 2 and f"is written from {cli.workspace.resolve()} on " in not_mine.stderr
    assert json.loads(cli("status", "--json").stdout)["workspace_counts"]["files"] == ALL
    # --take-over names the writer (folder, host, since) and what this folder's sync would delete, and without a
    # terminal to ask on it needs --yes: refused, nothing written or deleted.
    held = cli.store(lambda s: s.inspect.workspace_record())
    files = {f.path: f for f in cli.store(lambda s: s.links.get_files())}
    chunks, gone = sum(len(f.chunk_ids) for f in files.values()), len(files["digest/search.md"].chunk_ids)
    writer = f"is written from {cli.workspace.resolve()} on {held['host']} since {held['since']}"
    asked = _run("sync", str(other.workspace), *BUILTIN, *as_key, "--take-over", home=cli.home)
    assert asked.exit_code == 2, asked.stdout
    assert f"workspace {cli.key} of index set {cli.prefix} {writer}, and holds {ALL} files, {chunks} chunks" in (
        asked.stderr
    )
    assert f"deletes 1 of those files ({gone} chunks) that this folder does not have and rewrites 0" in asked.stderr
    assert "Nothing was written or deleted: run again with --yes to take it over" in asked.stderr
    assert json.loads(cli("status", "--json").stdout)["workspace_counts"]["files"] == ALL
    assert cli.store(lambda s: s.inspect.workspace_record()) == held
    drop_asked = _run("drop", "-w", str(other.workspace), *as_key, "--take-over", home=cli.home)
    assert drop_asked.exit_code == 2 and f"({writer.removeprefix('is ')}; --take-over): {ALL} files" in (
        drop_asked.stderr
    )
    # On a terminal it asks; "n" takes nothing over.
    monkeypatch.setattr("reme_es.cli.app._interactive", lambda: True)
    declined = CliRunner().invoke(
        main,
        ["sync", str(other.workspace), *BUILTIN, *as_key, "--take-over"],
        input="n\n",
        env={"REME_ES_HOME": str(cli.home)},
        catch_exceptions=False,
    )
    assert declined.exit_code == 2
    assert "Take it over? [y/N]" in declined.stderr and "not confirmed: nothing was written or deleted" in (
        declined.stderr
    )
    assert json.loads(cli("status", "--json").stdout)["workspace_counts"]["files"] == ALL
    monkeypatch.setattr("reme_es.cli.app._interactive", lambda: False)
    taken = _run("sync", str(other.workspace), *BUILTIN, *as_key, "--take-over", "--yes", home=cli.home)
    assert taken.exit_code == 0, taken.stderr
    assert _done(taken) == "synced: 0 added, 0 modified, 1 deleted, 0 failed"
    assert cli.store(lambda s: s.inspect.workspace_record())["folder"] == str(other.workspace.resolve())


def test_an_unknown_workspace_is_refused_without_naming_the_others_and_status_lists_them_when_asked(cli):
    other, stranger = _twin(cli, "b"), _twin(cli, "c")
    cli.sync()
    other.sync()
    refused = stranger("search", "hybrid search")
    assert refused.exit_code == 2
    assert f"workspace {stranger.key} (folder {stranger.workspace.resolve()}) has nothing in index set " in (
        refused.stderr
    )
    assert "The set records 2 other workspace(s); " in refused.stderr and "status --workspaces" in refused.stderr
    for c in (cli, other):  # neither another workspace's folder nor its key
        assert str(c.workspace.resolve()) not in refused.stderr and c.key not in refused.stderr
    plain = json.loads(stranger("status", "--json").stdout)
    assert "workspaces" not in plain and plain["cluster"]["workspaces_in_set"] == 2
    listed = json.loads(stranger("status", "--workspaces", "--json").stdout)["workspaces"]
    assert [(w["workspace"], w["folder"]) for w in listed] == sorted(
        (c.key, str(c.workspace.resolve())) for c in (cli, other)
    )
    assert all(w["host"] and w["since"] for w in listed)
    text = cli("status", "--workspaces").stdout
    assert f"  * {cli.key}: {cli.workspace.resolve()} on " in text
    assert f"    {other.key}: {other.workspace.resolve()}" in text


def test_drop_forgets_one_workspace_and_expunges_it(cli):
    other = _twin(cli, "b")
    for path in EXAMPLE_FILES:  # a small workspace beside a larger one: its docs are under 10% of a segment's,
        if path != "digest/search.md":  # which a plain only_expunge_deletes merge would leave on disk
            (cli.workspace / path).unlink()
    cli.sync()
    other.sync()
    assert other("optimize", "--max-segments", "1").exit_code == 0  # both workspaces in one segment per index
    asked = cli("drop")
    assert asked.exit_code == 2 and f"workspace {cli.key} of index set {cli.prefix}: 1 files" in asked.stderr
    dropped = cli("drop", "--yes", "--expunge")
    assert dropped.exit_code == 0, dropped.stderr
    kinds = ("chunks", "files", "links", "workspaces")  # the registry too: the dropped record names its folder
    assert re.fullmatch(
        rf"dropped workspace {cli.key} of index set {cli.prefix}: \d+ documents in [\d.]+ s; merged chunks, [a-z, ]*"
        rf"workspaces in [\d.]+ s, no deleted document left in {', '.join(f'{cli.prefix}-{k}' for k in kinds)} "
        r"\(the workspace registry included\)\n"
        rf"snapshots: none of index set {cli.prefix} in the registered repositories \(none is registered\)\n",
        dropped.stdout,
    ), dropped.stdout
    deleted = {k: _stats(cli, k)["_all"]["total"]["docs"]["deleted"] for k in kinds}
    assert deleted == dict.fromkeys(kinds, 0)
    gone = cli("search", "hybrid search")  # the record went with it: an empty answer would look like an empty one
    assert gone.exit_code == 2
    nothing = f"workspace {cli.key} (folder {cli.workspace.resolve()}) has nothing in index set {cli.prefix}"
    assert nothing in gone.stderr
    assert json.loads(other("status", "--json").stdout)["workspace_counts"]["files"] == ALL
    assert {p for p, _, _ in other.search("hybrid search")} >= {"digest/search.md"}
    status = json.loads(other("status", "--json").stdout)
    assert status["cluster"]["workspaces_in_set"] == 1  # the dropped one's record went with it
    assert status["indices"]["chunks"]["deleted"] == 0  # expunged: the text left the disk


async def _old_layout_set(url: str, prefix: str) -> None:
    """Indices as reme-es made them before shared sets: no workspace field (the templates of that time)."""
    cs = ClientSettings(hosts=[url])
    store = MemoryStore(make_dialect(await detect_engine(cs), cs), prefix)
    try:
        caps = await store.dialect.probe()
        for kind in INDEX_KINDS:
            body = render_index(kind, store.dialect, caps, store.options)
            del body["mappings"]["properties"]["workspace"]
            body["aliases"] = {f"{prefix}-{kind}": {}}
            await store.port.create_index(f"{prefix}-{kind}-1", body)
    finally:
        await store.close()


def test_a_set_from_before_shared_sets_keeps_working_and_migrate_moves_it_without_loss(cli):
    own = default_prefix(cli.workspace)
    asyncio.run(_old_layout_set(cli.url, own))
    try:
        plain = lambda *a: _run(*a, "--hosts", cli.url, home=cli.home)  # noqa: E731 - no prefix, no key given
        first = plain("sync", str(cli.workspace), *BUILTIN)
        assert first.exit_code == 0, first.stderr
        assert f"into {own}-*" in first.stdout and _done(first).startswith(f"synced: {ALL} added")
        before = plain("search", "hybrid search", "--json", "--limit", "10", "-w", str(cli.workspace))
        status = plain("status", "-w", str(cli.workspace))
        assert "from before shared sets: `reme-es migrate`" in status.stdout
        moved = plain("migrate", "-w", str(cli.workspace), "--index-prefix", cli.prefix, "--json")
        assert moved.exit_code == 0, moved.stderr
        report = json.loads(moved.stdout)
        assert report["copied"]["files"] == ALL and report["source_dropped"] is True
        assert report["workspace"] == default_workspace_key(cli.workspace)
        after = cli("search", "hybrid search", "--json", "--limit", "10")
        assert json.loads(after.stdout)["hits"] == json.loads(before.stdout)["hits"]
        assert _done(cli.sync()) == "synced: 0 added, 0 modified, 0 deleted, 0 failed"  # ids and mtimes moved intact
        gone = plain("status", "-w", str(cli.workspace), "--index-prefix", own, "--json")
        assert json.loads(gone.stdout)["indices"] is None
    finally:
        asyncio.run(_drop(cli.url, own))


def test_replicas_and_shards_are_settable_and_reindex_keeps_them(cli):
    assert cli.sync("--replicas", "2", "--shards", "2").exit_code == 0
    diff = cli("templates", "diff")
    assert diff.exit_code == 1
    assert "~ settings.auto_expand_replicas: index has false, wanted 0-1" in diff.stdout
    assert "~ settings.number_of_shards: index has 2, wanted 1" in diff.stdout
    assert cli("templates", "diff", "--replicas", "2", "--shards", "2").exit_code == 0
    assert cli("reindex").exit_code == 0
    assert cli("templates", "diff", "--replicas", "2", "--shards", "2").exit_code == 0  # kept by the rebuild
    hits = cli.search("hybrid search")
    assert "digest/search.md" in {p for p, _, _ in hits}  # routed by workspace: found across two shards


def test_access_on_a_cluster_without_security_says_so_in_one_line(cli):
    """`reme-es access` on a node without a security plugin (the test nodes have none): one line naming it, exit 1,
    for list, grant and revoke alike."""
    target = ("--hosts", cli.url, "--index-prefix", cli.prefix)
    for args in (("list",), ("grant", "--workspace-key", "ana", "--user", "ana"), ("revoke", "--workspace-key", "ana")):
        result = cli("access", *args, *target, target=False)
        assert result.exit_code == 1, result.output
        assert result.output.splitlines() == [
            "error: this cluster has no security plugin: `reme-es access` needs the OpenSearch security plugin or "
            "Elasticsearch security. Nothing was changed"
        ], result.output
