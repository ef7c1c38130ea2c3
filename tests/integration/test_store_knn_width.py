"""The k-NN width measured on the index (issue 40): calibration records a width in the chunks index's `_meta` that
reaches the recall target on held-out queries (short bag-of-words queries from outside the corpus), a store opened
later reads it into every k-NN body, and the climb says when the target is out of reach. The recalls it records are
checked against the test's own measurement (brute force here against the store's k-NN answers at the same width), and
on data the first width does not serve, the climb must go past it (issue 53: a calibration that reports recall 1.0
without measuring, or stops after one step, fails here)."""

from __future__ import annotations

import json

from reme_es.adapters.dialect import ClientSettings, knn_candidates
from reme_es.core.options import IndexOptions
from reme_es.store.calibration import RULE
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with
from reme_es.testing.shapes import exact_top, uniform, zipf_hash

N, DIMS, PER_FILE = 2000, 128, 50


async def _load(store, vectors):
    ids, files = [], []
    for f in range(0, len(vectors), PER_FILE):
        path = f"shape/{f // PER_FILE:04d}.md"
        chunks = [chunk(path, f"v{i}", start=2 * (i - f) + 1, vector=vectors[i]) for i in range(f, f + PER_FILE)]
        ids += [c.id for c in chunks]
        files.append(file_with(path, chunks))
    await store.upsert(files)
    await store.refresh()
    return ids


async def _recall(store, shape, ids, width: int) -> float:
    """Held-out recall@10 of the store's k-NN at the callers' depth with the width forced to `width`."""
    found = 0.0
    for q in shape.queries:
        body = store.indices.dialect.knn_body(
            q, RULE["depth"], store.indices.filter(None), width, size=10, caps=store.indices.caps
        )
        hits = await store.port.search(store.index("chunks"), body)
        floor = exact_top(shape.vectors, q, 10)[-1][1] - 1e-6
        good = {ids[i] for i, s in enumerate(sum(a * b for a, b in zip(v, q)) for v in shape.vectors) if s >= floor}
        found += sum(1 for h in hits[:10] if h["_source"]["chunk_id"] in good) / 10
    return found / len(shape.queries)


def _widths_sent(bodies: list) -> list[int]:
    """Every k-NN width (`ef_search`, `num_candidates`) in these request bodies (dicts, or `_msearch` lines)."""
    found: list[int] = []

    def walk(x):
        if isinstance(x, dict):
            found.extend(v for k, v in x.items() if k in ("ef_search", "num_candidates"))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for body in bodies:
        walk([json.loads(line) for line in body.splitlines()] if isinstance(body, (str, bytes)) else body)
    return found


def _width_in(body: dict) -> int:
    if "knn" in body:  # Elasticsearch
        return body["knn"]["num_candidates"]
    return body["query"]["knn"]["embedding"]["method_parameters"]["ef_search"]


async def test_the_calibrated_width_reaches_the_target_and_searches_use_it(server, es_prefix):
    shape = zipf_hash(N, queries=32, dims=DIMS, seed=11)
    options = IndexOptions(dims=DIMS)
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine, options)
    try:
        ids = await _load(store, shape.vectors)
        f = store.indices.filter(None)
        assert store.vectors.width(RULE["depth"]) is None  # nothing recorded: today's rule
        assert _width_in(store.searches.vectors.knn_body(shape.queries[0], 50, f)) == knn_candidates(50)

        record = await store.admin.calibrate()
        assert record.reached and record.stopped == "target" and record.recall >= RULE["target_recall"]
        assert (record.docs, record.sample, record.depth) == (N, RULE["sample"], RULE["depth"])
        assert len(record.groups) == len(RULE["probes"]) and min(record.groups) == record.recall  # the worst decides
        assert [s.width for s in record.steps] == [w for w in RULE["widths"] if w <= record.width]
        assert all(s.recall < RULE["target_recall"] for s in record.steps[:-1])  # the smallest width reaching it
        assert record.requests >= 4 and record.seconds > 0
        assert await store.admin.calibrate_if_due() is None  # the shape has not changed since

        held_out = await _recall(store, shape, ids, record.width)
        narrowest = await _recall(store, shape, ids, record.steps[0].width)
        assert held_out >= RULE["target_recall"], (held_out, record.to_meta())
        assert held_out >= narrowest
    finally:
        await store.close()

    again = await open_store(ClientSettings([server.url]), es_prefix, server.engine, options)
    try:  # another process reads the record from the index's _meta and sends the width in every k-NN body
        assert again.indices.knn_calibration == store.indices.knn_calibration
        assert again.indices.knn_calibration.to_meta() == record.to_meta()
        assert (
            _width_in(again.searches.vectors.knn_body(shape.queries[0], 50, again.indices.filter(None))) == record.width
        )
        assert _width_in(again.searches.vectors.knn_body(shape.queries[0], 200, again.indices.filter(None))) == min(
            RULE["max_width"], 4 * record.width
        )
        hits = await again.vector_search(shape.queries[0], 10)
        assert len(hits) == 10

        # the hybrid search's k-NN branch too, whatever the fusion (fused here on these nodes; the native request's
        # body carries the same width: tests/unit/test_builders.py)
        for fusion in ("zscore", "minmax"):
            hybrid = await open_store(
                ClientSettings([server.url]), es_prefix, server.engine, options, fusion=fusion, feedback=0
            )
            sent: list = []
            request = hybrid.port.transport.request

            async def recorded(method, path, body=None, params=None, sent=sent, request=request):
                sent.append(body)
                return await request(method, path, body, params)

            hybrid.port.transport.request = recorded
            try:
                assert len((await hybrid.search("chunk", shape.queries[0], 10)).hits) == 10
            finally:
                await hybrid.close()
            assert set(_widths_sent(sent)) == {record.width}, fusion

        # Out of reach within the ladder: the best width and its recall are reported, not recorded as reached.
        capped = await again.admin.calibrate(max_width=75, target=1.01, record=False)
        assert (capped.reached, capped.stopped) == (False, "max_width")
        assert capped.width in (50, 75) and [s.width for s in capped.steps] == [50, 75]
        assert again.indices.knn_calibration.to_meta() == record.to_meta()  # record=False leaves the recorded width
    finally:
        await again.close()


async def test_on_uniform_vectors_the_climb_passes_the_first_width_and_its_recalls_are_the_tests_own(server, es_prefix):
    """Isotropic directions in one segment of a sparse graph (m 4): the narrowest width does not find the ten, so the
    climb must go on; each recall it records at a width is the recall this test measures there (the same queries)."""
    shape = uniform(N, queries=32, dims=DIMS, seed=5)
    options = IndexOptions(dims=DIMS, hnsw_m=4, hnsw_ef_construction=32)
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine, options)
    try:
        ids = await _load(store, shape.vectors)
        await store.port.forcemerge(store.index("chunks"), 1)
        await store.refresh()
        record = await store.admin.calibrate(queries=list(shape.queries))
        first, chosen = record.steps[0], record.steps[-1]
        own_first = await _recall(store, shape, ids, first.width)
        own_chosen = await _recall(store, shape, ids, record.width)
        assert own_first < RULE["target_recall"], f"the first width already reaches {own_first}: not a shape for this"
        assert len(record.steps) >= 2 and record.width > first.width, record.to_meta()  # the climb went past it
        assert abs(first.recall - own_first) <= 0.02, (first, own_first)
        assert abs(record.recall - own_chosen) <= 0.02, (record.to_meta(), own_chosen)
        assert chosen.width == record.width and (not record.reached or own_chosen >= RULE["target_recall"] - 0.02)
    finally:
        await store.close()
