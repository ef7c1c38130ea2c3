"""Spans and metrics of reme-es (reme_es.core.telemetry, reme_es.adapters.traced) with the SDK's in-memory exporter,
against the scripted HTTP server for what a real node does not do on demand: a request answered 503 then 200 (one
span per try, the retry counted) and a search only some shards answered (the partial_answer event and counter). The
real-node side (a search, a write, a failed request, both engines): tests/integration/test_telemetry.py."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.port import IndexPort
from reme_es.adapters.traced import operation_of
from reme_es.adapters.transport import ClientSettings
from reme_es.core import telemetry
from reme_es.core.errors import ConfigError
from tests.otel import points, sdk, tree

from .scripted_server import SEARCH_ANSWER, ScriptedServer
from .test_behaviour_cases import FakeClock

DIALECTS = {"opensearch": OpenSearchDialect, "elasticsearch": ElasticsearchDialect}
BODY = {"query": {"match_all": {}}}


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/reme-chunks/_search", ("search", "reme-chunks")),
        ("POST", "/_msearch", ("msearch", None)),
        ("POST", "/_bulk", ("bulk", None)),
        ("GET", "/reme-files/_doc/a%2Fb", ("get", "reme-files")),
        ("PUT", "/reme-files/_doc/x", ("index", "reme-files")),
        ("DELETE", "/reme-files/_doc/x", ("delete", "reme-files")),
        ("POST", "/reme-chunks/_refresh", ("indices.refresh", "reme-chunks")),
        ("PUT", "/reme-chunks-2", ("indices.create", "reme-chunks-2")),
        ("GET", "/_cluster/health", ("cluster.health", None)),
        ("GET", "/_cat/shards/reme-*", ("cat.shards", None)),
        ("GET", "/_snapshot/backups/_all", ("snapshot", None)),
        ("POST", "/reme-chunks/_count?q=x", ("count", "reme-chunks")),
    ],
)
def test_the_operation_and_collection_of_a_rest_path(method, path, expected) -> None:
    assert operation_of(method, path) == expected


class PartialServer(ScriptedServer):
    """The scripted server whose `{"partial": [total, successful]}` answer is a search some shards did not answer."""

    @staticmethod
    def render(answer: dict, body: bytes):
        if "partial" in answer:
            total, ok = answer["partial"]
            shards = {"total": total, "successful": ok, "skipped": 0, "failed": total - ok}
            return 200, {**SEARCH_ANSWER, "_shards": shards}, {}
        return ScriptedServer.render(answer, body)


def _retries(reader) -> float:
    return sum(p.value for p in points(reader, "reme_es.retries") if p.attributes.get("db.operation.name") == "search")


@pytest.mark.parametrize("engine", sorted(DIALECTS))
async def test_a_retried_request_is_one_span_per_try_under_its_operation(engine) -> None:
    exporter, reader = sdk()
    before = _retries(reader)
    with ScriptedServer(elasticsearch=engine == "elasticsearch") as server:
        dialect = DIALECTS[engine](ClientSettings([server.url]))
        dialect.transport.clock = FakeClock(0.5)
        server.answers = [{"status": 503}, {"status": 200}]
        try:
            with telemetry.memory_operation("search_memory", "golden/ws", "what was said"):
                await dialect.transport.request("POST", "/golden/_search", BODY)
        finally:
            await dialect.transport.close()
    spans = exporter.get_finished_spans()
    assert tree(list(spans)) == [(0, "search_memory"), (1, "search golden"), (1, "search golden")]
    first, second, operation = spans
    assert dict(first.attributes or {}) == {
        "db.system.name": engine,
        "db.operation.name": "search",
        "db.collection.name": "golden",
        "server.address": "127.0.0.1",
        "server.port": int(server.url.rsplit(":", 1)[1]),
        "db.response.status_code": "503",
        "error.type": "503",
    }
    assert (first.status.status_code, second.status.status_code) == (StatusCode.ERROR, StatusCode.UNSET)
    assert "error.type" not in (second.attributes or {})
    assert dict(operation.attributes or {}) == {
        "gen_ai.operation.name": "search_memory",
        "gen_ai.provider.name": "reme-es",
        "gen_ai.memory.store.id": "golden/ws",
    }  # no query text without the opt-in
    assert _retries(reader) == before + 1


async def test_a_partial_answer_is_an_event_on_the_operation_and_counted(monkeypatch) -> None:
    monkeypatch.setenv(telemetry.QUERY_TEXT_ENV, "1")
    exporter, reader = sdk()
    with PartialServer() as server:
        dialect = OpenSearchDialect(ClientSettings([server.url]))
        port = IndexPort(dialect)
        server.answers = [{"uuid": "u-1"}, {"partial": [3, 2]}]
        try:
            await port.identity.record("golden-*")
            with telemetry.memory_operation("search_memory", "golden/ws", "what was said"):
                assert await port.search("golden", BODY) == []
        finally:
            await dialect.transport.close()
    operation = next(s for s in exporter.get_finished_spans() if s.name == "search_memory")
    assert (operation.attributes or {})["gen_ai.memory.query.text"] == "what was said"  # opted in
    assert [(e.name, dict(e.attributes or {})) for e in operation.events] == [
        ("partial_answer", {"db.collection.name": "golden", "reme_es.shards.total": 3, "reme_es.shards.failed": 1})
    ]
    counted = [
        p.value for p in points(reader, "reme_es.partial_answers") if p.attributes == {"db.collection.name": "golden"}
    ]
    assert counted and counted[0] >= 1


def test_a_refusal_is_counted_by_cause_and_nested_operations_make_one_span() -> None:
    exporter, reader = sdk()

    def refused() -> float:
        return sum(
            p.value for p in points(reader, "reme_es.refusals") if p.attributes.get("reme_es.cause") == "ConfigError"
        )

    before = refused()
    with pytest.raises(ConfigError), telemetry.memory_operation("update_memory", "s/w", records=2):
        with telemetry.memory_operation("search_memory", "s/w"):  # inside another: no span of its own
            raise ConfigError("no")
    (span,) = exporter.get_finished_spans()
    assert (span.name, span.attributes["error.type"], span.attributes["gen_ai.memory.record.count"]) == (
        "update_memory",
        "ConfigError",
        2,
    )
    assert refused() == before + 1
    durations = [
        p
        for p in points(reader, "gen_ai.client.operation.duration")
        if p.attributes == {"gen_ai.operation.name": "update_memory", "error.type": "ConfigError"}
    ]
    assert durations and durations[0].count >= 1
