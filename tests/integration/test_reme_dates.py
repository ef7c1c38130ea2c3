"""`date_boost` through ReMe's search job on a real node: a question that names a month ranks that month's note
first, at one more round trip (the window's own candidates); a question that names no date costs nothing more."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from tests.integration.test_reme import app_config, make_app
from tests.integration.test_reme_search_trips import record

pytestmark = pytest.mark.asyncio

NOTES = {  # the same repair in three months; March says most of the question's words
    "daily/2026-03-10.md": "# 2026-03-10\n\nRafa fixed the boiler himself last weekend, one video tutorial.\n",
    "daily/2026-06-14.md": "# 2026-06-14\n\nRafa repaired the gate, took a while.\n",
    "daily/2026-09-02.md": "# 2026-09-02\n\nRafa got the tap working again.\n",
}


@pytest.fixture
async def app(server, es_prefix, tmp_path):
    ws = tmp_path / "ws"
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    application = make_app(app_config(ws, server.engine, server.url, es_prefix))
    await application.start()
    try:
        assert (await application.run_job("index_once")).success
        fs = application.context.components["file_store"]["default"]
        await fs.wait_backfill()
        await fs.keyword_search("settle", 1, {})
        await fs.knn_width.wait()  # its background check whether a k-NN calibration is due sends requests too
        fs.store.indices.today = dt.date(2026, 12, 1)
        yield application
    finally:
        await application.close()


async def _search(app, query: str, boost: float) -> tuple[list[str], int]:
    fs = app.context.components["file_store"]["default"]
    fs.store.indices.date_boost = boost
    sent = record(fs)
    resp = await app.run_job("search_native", query=query, limit=3)
    del fs.store.port.transport.request  # the recording wrapper off: the class's method again
    return [r["path"] for r in resp.metadata["results"]], len(sent)


async def test_a_named_month_ranks_its_note_first_at_one_more_round_trip(app):
    query = "What did Rafa fix himself with a video last June?"
    plain, plain_trips = await _search(app, query, 0.0)
    boosted, boosted_trips = await _search(app, query, 1.5)  # more than the fused range: the month first
    assert plain[0] == "daily/2026-03-10.md"
    assert boosted[0] == "daily/2026-06-14.md"
    assert sorted(boosted) == sorted(plain)
    assert boosted_trips == plain_trips + 1


async def test_no_date_named_no_change(app):
    query = "What did Rafa fix himself with a video?"
    assert await _search(app, query, 0.6) == await _search(app, query, 0.0)


async def test_the_date_round_reads_only_its_own_workspace(server, es_prefix, tmp_path):
    # Two workspaces of one index set hold the same notes (same paths and texts); the second also holds a June note
    # that matches the question best. A window round that dropped the workspace filter would bring it (or the
    # second workspace's copies of the first's notes) into the first workspace's answer.
    own = {**NOTES, "daily/2026-06-20.md": "# 2026-06-20\n\nRafa fixed the fence himself, one video tutorial.\n"}
    apps = []
    try:
        for name, notes in (("b", own), ("a", NOTES)):
            ws = tmp_path / name
            for rel, text in notes.items():
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                (ws / rel).write_text(text)
            application = make_app(app_config(ws, server.engine, server.url, es_prefix))
            await application.start()
            apps.append(application)
            assert (await application.run_job("index_once")).success
            fs = application.context.components["file_store"]["default"]
            await fs.wait_backfill()
            await fs.keyword_search("settle", 1, {})
            fs.store.indices.today = dt.date(2026, 12, 1)
        other, first = apps
        query = "What did Rafa fix himself with a video last June?"
        theirs, _ = await _search(other, query, 1.5)
        assert "daily/2026-06-20.md" in theirs  # the note a leak would bring is among the question's best matches
        mine, _ = await _search(first, query, 1.5)
        assert sorted(mine) == sorted(NOTES)  # each of its own notes once, nothing of the other workspace
    finally:
        for application in apps:
            await application.close()
