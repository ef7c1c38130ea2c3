"""Two ReMe workspaces in one index set through ReMe's Application: each sees exactly what it would see alone, and a
second folder claiming a workspace key is refused before ReMe's start-up scan writes or deletes anything; the team
page's ReMe YAML runs ReMe on the folder `reme-es sync` wrote."""

from __future__ import annotations

import asyncio
import copy
import logging
import re

import pytest
import yaml
from click.testing import CliRunner

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme.config import resolve_app_config

from reme_es.cli import main
from reme_es.core.errors import WorkspaceConflict
from tests.integration.reme_app import WATCHERS
from tests.integration.test_reme import app_config, make_app, run_scenario, write_workspace
from tests.unit.test_doc_samples import SAMPLES

pytestmark = pytest.mark.asyncio


async def test_a_second_workspace_with_the_same_files_sees_only_its_own(server, es_prefix, tmp_path):
    # The same scenario (index, search, edit, delete, restart) twice, in two folders, into one index set: the second
    # runs beside everything the first left. A read that dropped the workspace filter would see the first one's
    # nodes, links, chunks and hits (same paths, texts, vectors and ids) and answer differently.
    first = await run_scenario(server.engine, tmp_path / "a", server.url, es_prefix)
    second = await run_scenario(server.engine, tmp_path / "b", server.url, es_prefix)
    assert without_bm25_scores(second) == without_bm25_scores(first)
    assert second["initial"] == first["initial"] and second["restarted"] == first["restarted"]  # nodes, links: exact


def without_bm25_scores(seen: object) -> object:
    """What ReMe saw, scores left out: BM25 statistics (document frequencies) are the shard's, shared by every
    workspace in it, so the second workspace's keyword scores differ a little; ids, paths, texts and order may not."""
    if isinstance(seen, dict):
        return {k: without_bm25_scores(v) for k, v in seen.items() if k not in ("score", "scores")}
    if isinstance(seen, list | tuple):
        return [without_bm25_scores(v) for v in seen]
    if isinstance(seen, str):
        return re.sub(r"\[score=[^\]]*\]", "[scores]", seen)
    return seen


async def test_a_folder_claiming_another_folders_workspace_key_is_refused(server, es_prefix, tmp_path, caplog):
    write_workspace(tmp_path / "a")
    cfg = app_config(tmp_path / "a", server.engine, server.url, es_prefix)
    cfg["components"]["file_store"]["default"]["workspace_key"] = "shared-key"
    app = make_app(cfg)
    await app.start()
    await app.close()
    write_workspace(tmp_path / "b")
    other = app_config(tmp_path / "b", server.engine, server.url, es_prefix)
    other["components"]["file_store"]["default"]["workspace_key"] = "shared-key"
    app = make_app(other)
    with pytest.raises(
        WorkspaceConflict,
        match=rf"workspace 'shared-key' of index set '{es_prefix}' is written from "
        rf"{tmp_path / 'a'}",
    ):
        await app.start()
    await app.close()
    # `take_over: true` takes it, and says from whom: ReMe's start-up scan then replaces that folder's files.
    other["components"]["file_store"]["default"]["take_over"] = True
    app = make_app(other)
    with caplog.at_level(logging.WARNING, logger="reme_es.store.workspaces"):
        await app.start()
    await app.close()
    [taken] = [r.getMessage() for r in caplog.records if r.name == "reme_es.store.workspaces"]
    assert taken.startswith(
        f"workspace 'shared-key' of index set '{es_prefix}' taken over: it was written from {tmp_path / 'a'} on "
    )
    assert f"; now from {tmp_path / 'b'} on " in taken


async def test_the_team_pages_sample_runs_reme_on_the_folder_reme_es_sync_wrote(server, es_prefix, tmp_path):
    # docs/team-server.md's team.yaml, pointed at the test node, with the folder given at start as the page says
    # (`workspace_dir`): ReMe's own search job finds what `reme-es sync` of that folder wrote, so the sample runs
    # ReMe on the cluster, not on its local store, and both derive the same workspace key from the folder.
    ws = tmp_path / "notes"
    write_workspace(ws)
    args = ["sync", str(ws), "--hosts", server.url, "--index-prefix", es_prefix]  # its own event loop: a thread
    synced = await asyncio.to_thread(CliRunner().invoke, main, args, env={"REME_ES_HOME": str(tmp_path / "home")})
    assert synced.exit_code == 0, synced.stderr
    [team] = [config for where, config, _ in SAMPLES if where.startswith("docs/team-server.md:")]
    team = copy.deepcopy(team)
    team["components"]["file_store"]["default"].update(backend=server.engine, hosts=server.url, index_prefix=es_prefix)
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump(team), encoding="utf-8")
    cfg = resolve_app_config(
        config=str(path),
        workspace_dir=str(ws),
        log_config=False,
        log_to_file=False,
        log_to_console=False,
        enable_logo=False,
        jobs={name: {"enabled": False} for name in WATCHERS},
    )
    app = make_app(cfg)
    await app.start()
    try:
        assert type(app.context.components["file_store"]["default"]).__module__.startswith("reme_es.")
        resp = await app.run_job("search", query="kibana", limit=20)
        assert resp.success, resp.answer
        assert {"daily/2026-05-20/retro.md", "daily/2026-06-02.md"} <= {r["path"] for r in resp.metadata["results"]}
    finally:
        await app.close()
