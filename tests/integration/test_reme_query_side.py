"""Questions through an asymmetric model's query side (E5's `query: ` / `passage: `), on a real node.

ReMe's embedding interface embeds every input alike. An `as_embedding` backend that embeds questions apart from
stored texts (reme-es' `e5`) offers `embed_query(text)`; the drop-in must embed the questions of its searches with
it, for ReMe's own search step and for `es_search_step` alike, and the chunks with the backend's usual call. The
fake model here makes that visible: its query side maps a nonsense question onto the words of one chunk, so only
a search that used the query side finds that chunk first (through the passage side the question matches nothing).
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
RETRO = "The kibana dashboards were slow; ranking needs work."  # a line of daily/2026-05-20/retro.md


class QuerySideAsEmbedding(HashAsEmbedding):
    """HashAsEmbedding for stored texts; its query side embeds QUESTION as if it were RETRO and records each call."""

    questions: ClassVar[list[str]] = []

    async def embed_query(self, text: str) -> list[float]:
        """The query side: QUESTION means RETRO, anything else is embedded as a stored text."""
        QuerySideAsEmbedding.questions.append(text)
        passage_side = HashAsEmbedding.__call__
        return (await passage_side(self, [RETRO if text == QUESTION else text]))[0]


@pytest.fixture
async def app(server, es_prefix, tmp_path):
    """ReMe on the drop-in with the query-side model, the test workspace indexed."""
    ws = tmp_path / "ws"
    write_workspace(ws)
    components = {
        "as_embedding": {"default": {"backend": "query-side-hash", "dimensions": DIMS}},
        "embedding_store": {"default": {"backend": "local", "as_embedding": "default", "enable_cache": False}},
        "file_store": {"default": {"backend": server.engine, "embedding_store": "default", "hosts": server.url,
                                   "index_prefix": es_prefix}},
    }
    jobs = {"index_once": index_once_job(["daily_dir", "digest_dir", "resource_dir"], ["md", "jsonl"]),
            "search_native": {"backend": "base", "steps": [{"backend": "es_search_step"}]}}
    with R.preserve(allow_mutation=True):
        if R.get("as_embedding", "query-side-hash") is None:
            R.register(QuerySideAsEmbedding, "query-side-hash")
        application = Application(**quiet_config(ws, components, jobs))
    await application.start()
    try:
        indexed = await application.run_job("index_once")
        assert indexed.success, indexed.answer
        await application.context.components["file_store"]["default"].wait_backfill()
        yield application
    finally:
        await application.close()


async def test_the_drop_in_embeds_questions_with_the_query_side_and_chunks_with_the_passage_side(app):
    fs = app.context.components["file_store"]["default"]
    assert any("kibana dashboards" in text for text in HashAsEmbedding.texts)  # chunks: the passage side
    HashAsEmbedding.texts.clear()
    QuerySideAsEmbedding.questions.clear()

    hits = await fs.vector_search(QUESTION, 3, {})
    assert hits and hits[0].path == "daily/2026-05-20/retro.md"

    for job in ("search", "search_native"):  # ReMe's own search step, then reme-es' step
        resp = await app.run_job(job, query=QUESTION, limit=3)
        assert resp.success, resp.answer
        assert resp.metadata["results"][0]["path"] == "daily/2026-05-20/retro.md", job

    assert QuerySideAsEmbedding.questions and set(QuerySideAsEmbedding.questions) == {QUESTION}
    assert QUESTION not in HashAsEmbedding.texts  # never embedded as a stored text
