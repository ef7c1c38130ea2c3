"""How many requests ReMe's search job and the first read after a write cost (issue 20, item 3), on a real node.

`es_search_step` answers in two round trips: the ranked candidates (one hybrid request, or both branches in one
`_msearch`), then one `_msearch` for the shown texts, the hit files' links and their indexed outlink targets; only
inlink sources that are neither hit files nor outlink targets cost a third request, for their front matter. The
pseudo-relevance feedback of client fusion (`feedback: 1`, the drop-in's default since issue 22) reads the top hits'
texts and vectors in the candidates' own `_msearch` (no request of its own), and only when a top hit is long enough
to feed back costs one more: both expanded branches (one `_msearch`). A read
right after a write sends one refresh before it and no counts; the health counts come in one request at `dump()`.
Every request the store's client sends is recorded, so an extra round trip fails the test.
"""

from __future__ import annotations

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme.schema import FileChunk, FileNode

from reme_es.adapters.templates import INDEX_KINDS
from tests.integration.test_reme import app_config, make_app, write_workspace

pytestmark = pytest.mark.asyncio


def record(fs) -> list[tuple[str, str]]:
    """Every (method, path) the store's port sends from now on."""
    sent: list[tuple[str, str]] = []
    transport = fs.store.port.transport
    request = transport.request

    async def recorded(method, path, body=None, params=None):
        sent.append((method, path))
        return await request(method, path, body, params)

    transport.request = recorded
    return sent


@pytest.fixture
async def app(server, es_prefix, tmp_path):
    """ReMe's Application on the test workspace of test_reme.py, indexed and settled."""
    ws = tmp_path / "ws"
    write_workspace(ws)
    application = make_app(app_config(ws, server.engine, server.url, es_prefix))
    await application.start()
    try:
        indexed = await application.run_job("index_once")
        assert indexed.success, indexed.answer
        fs = application.context.components["file_store"]["default"]
        await fs.wait_backfill()
        await fs.keyword_search("settle", 1, {})  # nothing left unrefreshed
        await fs.knn_width.wait()  # the background check whether a k-NN calibration is due (`reme_es.reme.width`)
        yield application
    finally:
        await application.close()


def trips(sent: list[tuple[str, str]]) -> list[str]:
    """The request paths with the index names reduced to their kind (chunks, files, links)."""
    out = []
    for _, path in sent:
        parts = path.strip("/").split("/")
        kinds = [next((k for k in ("chunks", "files", "links") if n.endswith(k)), n) for n in parts[0].split(",")]
        out.append("/".join([",".join(kinds), *parts[1:]]))
    return out


# The top hits' texts and vectors come with the candidates: no round trip. The expanded branches' `_msearch` follows
# only when a top hit is long enough to feed back (`reme_es.store.fusion.feeds_back`), which this workspace's 160-byte
# chunks are not (`test_feedback_from_a_long_top_hit_costs_one_more_msearch` writes one that is).
FEEDBACK_TRIPS: list[str] = []


def feedback_trips(fs, feedback: int) -> list[str]:
    """Set the store's feedback depth; the round trips it adds to a client-fused search."""
    assert fs.feedback == 1  # the drop-in's default
    fs.store.indices.feedback = feedback
    return FEEDBACK_TRIPS if feedback and not fs.store.native_hybrid_available() else []


async def search_native(app, feedback: int, query: str) -> tuple:
    """Run the `search_native` job (limit 1) at feedback depth `feedback`: its response, the round trips it sent,
    and the ones expected before the shown texts (the ranked candidates, then those the feedback adds)."""
    fs = app.context.components["file_store"]["default"]
    extra = feedback_trips(fs, feedback)
    sent = record(fs)
    resp = await app.run_job("search_native", query=query, limit=1)
    assert resp.success, resp.answer
    first = "chunks/_search" if fs.store.native_hybrid_available() else "_msearch"
    return resp, trips(sent), [first, *extra]


@pytest.mark.parametrize("feedback", [0, 1], ids=["feedback-off", "feedback-default"])
async def test_es_search_step_answers_in_two_round_trips(app, feedback):
    resp, sent, ranked = await search_native(app, feedback, "Discussed the opensearch migration plan with Alice")
    assert [r["path"] for r in resp.metadata["results"]] == ["daily/2026-05-18/standup.md"]
    assert sent == [*ranked, "_msearch"]
    # standup.md links to opensearch.md (REAL) and missing.md (virtual); opensearch.md links back to it
    expansion = resp.metadata["link_expansion"]["daily/2026-05-18/standup.md"]
    meta = {"name": "OpenSearch", "description": "Notes about the OpenSearch file store backend"}
    neighbour = {"path": "digest/opensearch.md", "meta": meta}
    assert expansion == {"outlinks": [{**neighbour, "anchors": ["Plan"]}], "inlinks": [{**neighbour, "anchors": []}]}
    assert "Discussed the opensearch migration plan" in resp.answer


@pytest.mark.parametrize("feedback", [0, 1], ids=["feedback-off", "feedback-default"])
async def test_inlink_sources_that_were_not_fetched_cost_one_more_request(app, feedback):
    resp, sent, ranked = await search_native(app, feedback, "Reciprocal rank fusion weights the vector branch")
    assert [r["path"] for r in resp.metadata["results"]] == ["digest/ranking.md"]
    assert sent == [*ranked, "_msearch", "files/_mget"]  # retro.md links here and is neither hit nor target
    expansion = resp.metadata["link_expansion"]["digest/ranking.md"]
    assert [n["path"] for n in expansion["outlinks"]] == ["digest/opensearch.md"]
    assert [(n["path"], n["meta"]) for n in expansion["inlinks"]] == [
        ("daily/2026-05-20/retro.md", {}),
        (
            "digest/opensearch.md",
            {"name": "OpenSearch", "description": "Notes about the OpenSearch file store backend"},
        ),
    ]


async def test_the_first_read_after_a_write_refreshes_once_and_counts_nothing(app):
    fs = app.context.components["file_store"]["default"]
    fs.refresh_after = 60.0  # no background refresh during the test
    path = "digest/trips.md"
    chunk = FileChunk(id=f"{path}#0", path=path, start_line=1, end_line=1, text="lantern harbour tide tables")
    await fs.upsert([(FileNode(path=path, st_mtime=1_770_000_000.0), [chunk])])
    sent = record(fs)
    hits = await fs.keyword_search("lantern harbour", 5, {})
    assert [h.path for h in hits] == [path]
    assert trips(sent) == [f"{','.join(INDEX_KINDS)}/_refresh", "chunks/_search"]  # no counts before the search
    before = fs.counts["files"]
    sent.clear()
    await fs.dump()  # the counts, in one request
    assert trips(sent) == ["_msearch"]
    assert fs.counts["files"] == before + 1


async def test_feedback_from_a_long_top_hit_costs_one_more_msearch(app):
    # A chunk long enough to feed back (FEEDBACK_MIN_TERMS terms): the expanded branches need the first pass's top
    # hits (their ids and vectors), so they are a round trip of their own; the top hits' texts and vectors came with
    # the candidates. Three round trips, the most a client-fused search job sends with feedback on.
    from reme_es.store.fusion import FEEDBACK_MIN_TERMS, feeds_back

    fs = app.context.components["file_store"]["default"]
    if fs.store.native_hybrid_available():
        pytest.skip("the server fuses hybrid here: feedback is client fusion's")
    path = "digest/tides.md"
    text = " ".join(f"lantern harbour tide{i} tables" for i in range(FEEDBACK_MIN_TERMS))
    assert feeds_back(text)
    chunk = FileChunk(id=f"{path}#0", path=path, start_line=1, end_line=1, text=text)
    await fs.upsert([(FileNode(path=path, st_mtime=1_770_000_000.0), [chunk])])
    await fs.dump()
    await fs.wait_backfill()
    await fs.knn_width.wait()
    sent = record(fs)
    resp = await app.run_job("search_native", query="lantern harbour tide tables", limit=1)
    assert resp.success, resp.answer
    assert [r["path"] for r in resp.metadata["results"]] == [path]
    assert trips(sent) == ["_msearch", "_msearch", "_msearch"]


async def test_the_search_job_is_one_search_memory_span_over_its_round_trips(app, es_prefix):
    """ReMe's search step runs the store's `ranked` and `shown` inside one memory operation: one `search_memory` span
    with the ranking stages as an event and the two round trips as its children (the SDK's in-memory exporter)."""
    from tests.otel import sdk

    exporter, _ = sdk()
    fs = app.context.components["file_store"]["default"]
    resp = await app.run_job("search_native", query="Discussed the opensearch migration plan with Alice", limit=1)
    assert resp.success, resp.answer
    spans = list(exporter.get_finished_spans())
    (operation,) = [s for s in spans if s.name == "search_memory"]
    children = sorted(
        (s for s in spans if s.parent and s.parent.span_id == operation.context.span_id), key=lambda s: s.start_time
    )
    first = f"search {es_prefix}-chunks" if fs.store.native_hybrid_available() else "msearch"
    assert [s.name for s in children] == [first, "msearch"]
    assert operation.attributes["gen_ai.memory.store.id"] == f"{es_prefix}/{fs.store.workspace}"
    assert "ranking" in [e.name for e in operation.events]
