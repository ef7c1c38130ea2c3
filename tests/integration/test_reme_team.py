"""Two ReMe workspaces in one index set through ReMe's Application: each sees exactly what it would see alone, and a
second folder claiming a workspace key is refused before ReMe's start-up scan writes or deletes anything."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme_es.core.errors import WorkspaceConflict
from tests.integration.test_reme import app_config, make_app, run_scenario, write_workspace

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


async def test_a_folder_claiming_another_folders_workspace_key_is_refused(server, es_prefix, tmp_path):
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
    with pytest.raises(WorkspaceConflict, match=rf"workspace 'shared-key' of index set '{es_prefix}' is written from "
                                                 rf"{tmp_path / 'a'}"):
        await app.start()
    await app.close()
