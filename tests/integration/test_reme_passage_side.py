"""Chunks through an asymmetric model's passage side (E5's `passage: ` / `query: `), on a real node.

ReMe's embedding interface embeds every input alike; reme-es' `e5` backend embeds what ReMe hands it as questions
and offers `embed_passages(texts)` for stored texts. The drop-in must embed its chunks with `embed_passages`, at
upsert and in the backfill, and its searches' questions through ReMe's interface. The fake model here makes that
visible: its passage side embeds the retro note's chunk as if it said QUESTION, so only a store whose chunks went
through the passage side finds that chunk first for QUESTION (through ReMe's side the chunk matches nothing of it).
"""

from __future__ import annotations

from typing import ClassVar

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme.application import Application
from reme.components.component_registry import R

from tests.integration.reme_app import index_once_job, quiet_config
from tests.integration.test_reme import DIMS, HashAsEmbedding, write_workspace

pytestmark = pytest.mark.asyncio

QUESTION = "qqq zzz"  # no word of it occurs in the workspace
RETRO = "kibana dashboards were slow"  # words of daily/2026-05-20/retro.md's chunk, and of no other file


class PassageSideAsEmbedding(HashAsEmbedding):
    """HashAsEmbedding for what ReMe hands over; its passage side embeds the retro chunk as QUESTION."""

    passages: ClassVar[list[str]] = []

    async def embed_passages(self, texts: list[str]) -> list[list[float]]:
        """The passage side: a text with RETRO's words is embedded as QUESTION, any other as ReMe's side does."""
        PassageSideAsEmbedding.passages.extend(texts)
        reme_side = HashAsEmbedding.__call__
        return await reme_side(self, [QUESTION if RETRO in " ".join(t.split()) else t for t in texts])


async def _app(server, prefix: str, ws) -> Application:
    components = {
        "as_embedding": {"default": {"backend": "passage-side-hash", "dimensions": DIMS}},
        "embedding_store": {"default": {"backend": "local", "as_embedding": "default", "enable_cache": False}},
        "file_store": {
            "default": {
                "backend": server.engine,
                "embedding_store": "default",
                "hosts": server.url,
                "index_prefix": prefix,
            }
        },
    }
    jobs = {
        "index_once": index_once_job(["daily_dir", "digest_dir", "resource_dir"], ["md", "jsonl"]),
        "search_native": {"backend": "base", "steps": [{"backend": "es_search_step"}]},
    }
    with R.preserve(allow_mutation=True):
        if R.get("as_embedding", "passage-side-hash") is None:
            R.register(PassageSideAsEmbedding, "passage-side-hash")
        application = Application(**quiet_config(ws, components, jobs))
    await application.start()
    return application


@pytest.fixture
async def app(server, es_prefix, tmp_path):
    """ReMe on the drop-in with the passage-side model, the test workspace indexed."""
    ws = tmp_path / "ws"
    write_workspace(ws)
    HashAsEmbedding.texts.clear()
    PassageSideAsEmbedding.passages.clear()
    application = await _app(server, es_prefix, ws)
    try:
        indexed = await application.run_job("index_once")
        assert indexed.success, indexed.answer
        await application.context.components["file_store"]["default"].wait_backfill()
        yield application
    finally:
        await application.close()


async def _retro_first(app) -> None:
    """QUESTION finds the retro note first through the store's vector search, ReMe's search step and es_search_step."""
    fs = app.context.components["file_store"]["default"]
    hits = await fs.vector_search(QUESTION, 3, {})
    assert hits and hits[0].path == "daily/2026-05-20/retro.md"
    for job in ("search", "search_native"):
        resp = await app.run_job(job, query=QUESTION, limit=3)
        assert resp.success, resp.answer
        assert resp.metadata["results"][0]["path"] == "daily/2026-05-20/retro.md", job


async def test_chunks_go_through_the_passage_side_and_questions_through_remes(app):
    assert any("kibana dashboards" in text for text in PassageSideAsEmbedding.passages)
    assert not any("kibana dashboards" in text for text in HashAsEmbedding.texts)  # no chunk through ReMe's side
    HashAsEmbedding.texts.clear()
    PassageSideAsEmbedding.passages.clear()

    await _retro_first(app)

    assert QUESTION in HashAsEmbedding.texts and QUESTION not in PassageSideAsEmbedding.passages


async def test_the_backfill_embeds_through_the_passage_side_too(app):
    fs = app.context.components["file_store"]["default"]
    await fs.require_embedding_rebuild()  # vector reads and writes off until a rebuild refills every vector
    PassageSideAsEmbedding.passages.clear()
    assert await fs.resume_embedding(rebuild=True)
    await fs.wait_backfill()
    assert any("kibana dashboards" in text for text in PassageSideAsEmbedding.passages)
    await _retro_first(app)
