"""Spans and metrics of a search, a write and a failed request on real nodes of both engines (the SDK's in-memory
exporter and metric reader, tests/otel.py), and `/metrics` (Prometheus text) scraped after a few searches. A retried
request and a partial answer are played by the scripted server: tests/unit/test_telemetry.py."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core import prometheus
from reme_es.core.errors import IndexMissing
from reme_es.core.models import Chunk, FileDoc
from reme_es.core.options import IndexOptions
from reme_es.store.connect import open_store
from tests.otel import points, sdk, tree

DIMS = 4
NOTES = {
    "daily/a.md": ["the agent indexes its memory", "snapshots keep a copy"],
    "daily/b.md": ["a search walks every shard", "memory of the team"],
}


def files() -> list[tuple[FileDoc, list[Chunk]]]:
    out = []
    for n, (path, texts) in enumerate(NOTES.items()):
        chunks = [
            Chunk(id=f"{n}-{i}", path=path, text=t, embedding=[1.0, float(n), float(i), 0.5])
            for i, t in enumerate(texts)
        ]
        out.append((FileDoc(path=path, chunk_ids=[c.id for c in chunks]), chunks))
    return out


@pytest.fixture
async def store(server, prefix):
    s = await open_store(ClientSettings([server.url]), prefix, server.engine, IndexOptions(dims=DIMS), workspace="ws")
    try:
        await s.upsert(files())
        yield s
    finally:
        await s.drop()
        await s.close()


def attributes(span) -> dict:
    return dict(span.attributes or {})


async def test_a_keyword_search_is_one_memory_operation_over_its_engine_requests(store, server) -> None:
    exporter, _ = sdk()
    hits = await store.keyword_search("memory", 5)
    assert sorted(h.chunk.id for h in hits) == ["0-0", "1-1"]
    spans = list(exporter.get_finished_spans())
    chunks = f"{store.prefix}-chunks"
    assert tree(spans) == [(0, "search_memory"), (1, f"search {chunks}")]
    request, operation = spans
    assert attributes(operation) == {
        "gen_ai.operation.name": "search_memory",
        "gen_ai.provider.name": "reme-es",
        "gen_ai.memory.store.id": f"{store.prefix}/ws",
        "gen_ai.memory.record.count": 2,
    }
    host, port = server.url.split("//", 1)[1].rsplit(":", 1)
    assert attributes(request) == {
        "db.system.name": server.engine,
        "db.operation.name": "search",
        "db.collection.name": chunks,
        "server.address": host,
        "server.port": int(port),
    }
    assert request.parent.span_id == operation.context.span_id
    # elasticsearch-py's own spans (named by the HTTP method) are off: only ours
    assert {s.name for s in spans} == {"search_memory", f"search {chunks}"}


async def test_a_hybrid_search_says_its_ranking_stages(store) -> None:
    exporter, _ = sdk()
    result = await store.search("memory", [1.0, 0.0, 1.0, 0.5], limit=3)
    operation = next(s for s in exporter.get_finished_spans() if s.name == "search_memory")
    events = {e.name: dict(e.attributes or {}) for e in operation.events}
    ranking = events["ranking"]
    assert (ranking["reme_es.candidates.keyword"], ranking["reme_es.shown"]) == (result.keyword_hits, 3)
    assert ranking["reme_es.fusion"] == result.fusion and ranking["reme_es.candidates.vector"] == result.vector_hits
    assert events["knn_width"]["reme_es.knn.calibrated"] is False  # no width measured on 4 chunks


async def test_a_write_is_one_update_memory_over_its_rounds(store) -> None:
    exporter, reader = sdk()

    def rounds(name: str) -> float:
        return sum(p.value for p in points(reader, "reme_es.write.rounds") if p.attributes == {"reme_es.round": name})

    before = {r: rounds(r) for r in ("placeholder", "chunks", "commit")}
    await store.upsert(files()[:1])  # a file already stored: no placeholder round
    spans = list(exporter.get_finished_spans())
    p = store.prefix
    assert tree(spans) == [
        (0, "update_memory"),
        (1, f"mget {p}-files"),  # what is stored: the file doc, its chunks, its links
        (1, f"search {p}-chunks"),
        (1, f"search {p}-links"),
        (1, "bulk"),  # the chunks round
        (1, "bulk"),  # the commit round
        (1, f"indices.refresh {p}-chunks,{p}-files,{p}-links"),
    ]
    assert attributes(spans[-1])["gen_ai.memory.record.count"] == 1
    assert {r: rounds(r) - before[r] for r in before} == {"placeholder": 0, "chunks": 1, "commit": 1}


async def test_a_failed_request_marks_its_span_and_the_operation(store, server) -> None:
    exporter, _ = sdk()
    await store.drop()
    with pytest.raises(IndexMissing):
        await store.keyword_search("memory", 5)
    spans = list(exporter.get_finished_spans())
    operation = next(s for s in spans if s.name == "search_memory")
    failed = [s for s in spans if attributes(s).get("db.response.status_code") == "404"]
    assert failed and all(attributes(s)["error.type"] == "404" for s in failed)
    assert failed[0].parent.span_id == operation.context.span_id
    assert (attributes(operation)["error.type"], operation.status.is_ok) == ("IndexMissing", False)


def _count(text: str, metric: str, **labels: str) -> float:
    """The value of one sample of the exposition text."""
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    for line in text.splitlines():
        if line.startswith(metric + "{") or line.startswith(metric + " "):
            if all(w in line for w in wanted):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


@contextlib.contextmanager
def metrics_server(app) -> Iterator[str]:
    """`app` served on a free loopback port in a thread: the URL of its /metrics."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain")
        return resp.read().decode()


async def test_metrics_scraped_after_a_few_searches_count_them(store, server) -> None:
    sdk()
    with metrics_server(prometheus.wsgi_app()) as url:
        before = await asyncio.to_thread(scrape, url)
        for query in ("memory", "shard", "snapshots"):
            await store.keyword_search(query, 5)
        after = await asyncio.to_thread(scrape, url)
    searches = {"gen_ai_operation_name": "search_memory", "error_type": ""}
    grew = _count(after, "gen_ai_client_operation_duration_seconds_count", **searches) - _count(
        before, "gen_ai_client_operation_duration_seconds_count", **searches
    )
    assert grew == 3
    engine = {
        "db_system_name": server.engine,
        "db_operation_name": "search",
        "db_collection_name": f"{store.prefix}-chunks",
    }
    requests = _count(after, "db_client_operation_duration_seconds_count", **engine)
    assert requests - _count(before, "db_client_operation_duration_seconds_count", **engine) == 3
    assert re.search(r'^db_client_operation_duration_seconds_bucket\{.*le="\+Inf"\} ', after, re.M)


def test_reme_es_metrics_once_prints_the_servers_state(store, server) -> None:
    from click.testing import CliRunner

    from reme_es.cli import main

    result = CliRunner().invoke(main, ["metrics", "--once", "--hosts", server.url, "--index-prefix", store.prefix])
    assert result.exit_code == 0, result.output
    chunks = f'index="{store.prefix}-chunks-1",kind="chunks",set="{store.prefix}"'
    assert f"reme_es_index_docs{{{chunks}}} 4.0" in result.stdout
    assert f"reme_es_chunks_without_vector{{{chunks}}} 0.0" in result.stdout
    assert 'reme_es_doctor_check{check="templates",state="ok"} 1.0' in result.stdout
    assert 'reme_es_doctor_check{check="security",state="warn"} 1.0' in result.stdout
