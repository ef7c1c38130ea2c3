"""ReMe's file store measures the k-NN width of its index itself (issue 40, item 1; `reme_es.reme.width`): a ReMe
process that only writes through the file store runs neither `reme-es sync` nor `optimize`, which calibrate. At start
and after each `dump()` the store asks in the background whether a calibration is due, waits until the chunks index
stops merging, and records the width in the index's `_meta`, which its searches then send. The recall it records is
measured again here (issue 53): the same probes, their exact neighbours by brute force in the test, the store's k-NN
answers at the recorded width."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme_es.store.calibration import META_KEY, RULE, group_recalls, probe_queries, recall_at
from tests.integration.test_reme import app_config, make_app, write_workspace

pytestmark = pytest.mark.asyncio


async def test_the_file_store_calibrates_the_knn_width_in_the_background_once_due(
    server, es_prefix, tmp_path, monkeypatch
):
    monkeypatch.setitem(RULE, "min_docs", 5)  # the test workspace's few chunks make an index worth measuring
    ws = tmp_path / "ws"
    write_workspace(ws)
    app = make_app(app_config(ws, server.engine, server.url, es_prefix))
    await app.start()
    try:
        fs = app.context.components["file_store"]["default"]
        await fs.knn_width.wait()
        assert fs.store.indices.knn_calibration is None  # an empty index at start: nothing due
        indexed = await app.run_job("index_once")
        assert indexed.success, indexed.answer
        await fs.wait_backfill()
        await fs.dump()
        await fs.knn_width.wait()
        record = fs.store.indices.knn_calibration
        assert record is not None and record.docs >= 5 and record.width >= 1
        mapping = await fs.store.port.mapping(fs.store.index("chunks"))
        assert mapping["_meta"]["reme_es"][META_KEY] == record.to_meta()
        assert fs.store.vectors.width(RULE["depth"]) == record.width_for(RULE["depth"])  # searches send it
        assert record.steps and record.steps[0].width == RULE["depth"] and record.requests >= 4  # it measured
        assert abs(await _own_recall(fs.store, record.width) - record.recall) <= 0.02, record.to_meta()
        await fs.dump()  # nothing has moved since: not due, the record stays
        await fs.knn_width.wait()
        assert fs.store.indices.knn_calibration.to_meta() == record.to_meta()
    finally:
        await app.close()


def _with_ids(body: dict) -> dict:
    """A sample body whose hits carry their chunk ids beside their vectors."""
    src = body["_source"]
    if isinstance(src, list):
        body["_source"] = [*src, "chunk_id"]
    else:
        body["_source"] = {**src, "includes": [*src["includes"], "chunk_id"]}
    return body


async def _own_recall(store, width: int) -> float:
    """The worst probe group's recall@10 at `width`, measured here: the calibration's probes (its seeded sample of
    stored vectors), exact neighbours by brute force over every stored vector, the store's k-NN answers at `width`."""
    ix, index = store.indices, store.index("chunks")
    f, at = ix.filter(None), RULE["at"]
    sample = await store.port.ranked_sources(index, ix.dialect.sample_body(f, RULE["sample"], RULE["seed"]))
    probes = probe_queries([src["embedding"] for _, src in sample if src.get("embedding")])
    stored = [src for _, src in await store.port.ranked_sources(index, _with_ids(ix.dialect.sample_body(f, 10000, 1)))]

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b) or 1.0)

    found = []
    for q in probes:
        exact = sorted(((s["chunk_id"], cos(q, s["embedding"])) for s in stored), key=lambda p: -p[1])
        hits = await store.port.search(index, ix.dialect.knn_body(q, RULE["depth"], f, width, size=at, caps=ix.caps))
        found.append(recall_at([h["_source"]["chunk_id"] for h in hits], exact, at))
    return group_recalls(found, len(RULE["probes"]))[0]
