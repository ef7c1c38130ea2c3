"""The optimize job (issue 53, item 2; `reme_es.store.optimize_job`, `reme_es.reme.optimize`): after a load that left
the chunks index in several segments and an idle period, ReMe's file store merges it down to the segments search
wants and calibrates the k-NN width again on the merged graph, in the background. The width it records is measured
again here (the calibration's probes, brute force in the test). `optimize_after_load: false` (or
REME_ES_OPTIMIZE_AFTER_LOAD=false) leaves the segments as the load left them; searches during a merge answer as before
it. The rule's sizes are scaled down to the test workspace (a large load is 10,000 entries by default)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme_es.store import optimize_job
from reme_es.store.calibration import RULE as WIDTH_RULE
from tests.integration.test_reme import app_config, make_app, write_workspace
from tests.integration.test_reme_knn_width import _own_recall

pytestmark = pytest.mark.asyncio

BATCHES = 4  # loads, each made visible by a dump: a segment each


@pytest.fixture
def small_rule(monkeypatch):
    """The optimize rule and the width rule scaled to a workspace of a few dozen chunks, idle after 1 s."""
    monkeypatch.setitem(WIDTH_RULE, "min_docs", 5)
    for key, value in {"min_docs": 5, "min_segments": 2, "segments": 1, "idle_s": 1.0}.items():
        monkeypatch.setitem(optimize_job.RULE, key, value)


def _batch_file(ws, n: int) -> None:
    p = ws / "digest" / f"load-{n}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    words = " ".join(f"term{n}x{i}" for i in range(60))
    p.write_text(f"# load {n}\n\n{words}\n\nSection two of load {n}: {words[::-1]}\n")


async def _load(app, ws) -> object:
    """The workspace indexed in BATCHES loads, each dumped (refreshed: one more segment); the file store."""
    fs = app.context.components["file_store"]["default"]
    for n in range(BATCHES):
        if n:
            _batch_file(ws, n)
        indexed = await app.run_job("index_once")
        assert indexed.success, indexed.answer
        await fs.wait_backfill()
        await fs.dump()
    return fs


async def _segments(store) -> int:
    return (await store.admin.stats())["chunks"]["segments"]


async def test_after_a_load_and_an_idle_period_the_job_merges_and_calibrates_again(
    server, es_prefix, tmp_path, small_rule
):
    ws = tmp_path / "ws"
    write_workspace(ws)
    app = make_app(app_config(ws, server.engine, server.url, es_prefix))
    await app.start()
    try:
        fs = await _load(app, ws)
        await fs.knn_width.wait()
        before = fs.store.indices.knn_calibration
        loaded = await _segments(fs.store)
        assert loaded >= 2, "the load should leave several segments for this test to mean anything"
        assert before is not None and before.segments >= 2
        await fs.optimizer.wait()  # idle for idle_s, then merged and calibrated
        if not fs.store.caps.knn_merge_pays:  # Elasticsearch: a merged graph searched slower (docs/benchmarks.md)
            assert fs.optimizer.last is None, "the job merged where the engine's merged graph searches slower"
            await fs.store.refresh()
            assert await _segments(fs.store) == loaded and fs.store.indices.knn_calibration == before
            return
        assert fs.optimizer.last is not None, "the job ran"
        assert await _segments(fs.store) == 1
        record = fs.store.indices.knn_calibration
        assert record.segments == 1 and record.measured_at >= before.measured_at
        assert fs.optimizer.last["knn_width"] == record.to_meta()  # the job's own calibration is the one in use
        assert record.steps and record.requests >= 4  # it measured
        assert abs(await _own_recall(fs.store, record.width) - record.recall) <= 0.02, record.to_meta()
    finally:
        await app.close()


async def test_turned_off_the_segments_stay_as_the_load_left_them(server, es_prefix, tmp_path, small_rule, monkeypatch):
    monkeypatch.setenv("REME_ES_OPTIMIZE_AFTER_LOAD", "false")
    ws = tmp_path / "ws"
    write_workspace(ws)
    app = make_app(app_config(ws, server.engine, server.url, es_prefix))
    await app.start()
    try:
        fs = await _load(app, ws)
        assert fs.optimizer.enabled is False
        loaded = await _segments(fs.store)
        assert loaded >= 2
        await asyncio.sleep(optimize_job.RULE["idle_s"] + 1.5)
        await fs.optimizer.wait()
        assert fs.optimizer.last is None
        await fs.store.refresh()
        assert await _segments(fs.store) == loaded
        await fs.optimize_index()  # ReMe's optimize step: with the job off, deletes only (none here)
        assert await _segments(fs.store) == loaded
    finally:
        await app.close()


async def test_searches_during_the_merge_answer_as_before_it(server, es_prefix, tmp_path, small_rule, monkeypatch):
    monkeypatch.setenv("REME_ES_OPTIMIZE_AFTER_LOAD", "false")  # merged here, by ReMe's optimize step
    ws = tmp_path / "ws"
    write_workspace(ws)
    app = make_app(app_config(ws, server.engine, server.url, es_prefix))
    await app.start()
    try:
        fs = await _load(app, ws)
        store, query = fs.store, "term2x7"  # in load 2's chunks alone
        first = (await store.keyword_search(query, 1))[0].chunk
        stored = await store.admin.stored_chunks({first.path: [first.id]}, with_vectors=True)
        probe = stored[first.id]["embedding"]  # a stored vector: its own chunk is its nearest

        async def answers():  # the chunks matching the word (every one: fewer than 10), and the nearest chunk
            keyword = sorted((h.chunk.path, h.chunk.id) for h in await store.keyword_search(query, 10))
            near = [(h.chunk.path, h.chunk.id) for h in await store.vector_search(probe, 10)]
            return keyword, near[:1], len(near)

        expected = await answers()
        assert expected[1] == [(first.path, first.id)] and first.path == "digest/load-2.md"
        assert {p for p, _ in expected[0]} == {"digest/load-2.md"} and expected[2] == 10
        fs.optimizer.enabled = True
        # ReMe's optimize step merges where the engine's merged graph searches faster; elsewhere `reme-es optimize`
        merge = asyncio.create_task(
            fs.optimize_index() if store.caps.knn_merge_pays else optimize_job.optimize_for_search(store, force=True)
        )
        during = [await answers()]
        while not merge.done():
            during.append(await answers())
        await merge
        assert await _segments(store) == 1
        assert all(a == expected for a in during), during
        assert await answers() == expected
    finally:
        await app.close()
