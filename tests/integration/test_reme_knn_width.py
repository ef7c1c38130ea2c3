"""ReMe's file store measures the k-NN width of its index itself (issue 40, item 1; `reme_es.reme.width`): a ReMe
process that only writes through the file store runs neither `reme-es sync` nor `optimize`, which calibrate. At start
and after each `dump()` the store asks in the background whether a calibration is due, waits until the chunks index
stops merging, and records the width in the index's `_meta`, which its searches then send."""

from __future__ import annotations

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme_es.store.calibration import META_KEY, RULE
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
        await fs.dump()  # nothing has moved since: not due, the record stays
        await fs.knn_width.wait()
        assert fs.store.indices.knn_calibration.to_meta() == record.to_meta()
    finally:
        await app.close()
