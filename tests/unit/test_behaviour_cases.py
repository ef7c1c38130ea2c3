"""The golden behaviour cases (tests/golden/behaviour_cases.json), replayed by the real Python transport and both
engine clients in front of a scripted HTTP server; memorie/test/behaviour.test.ts replays the same file.

Time is a fake clock: a request takes none, a backoff sleep moves the clock by its delay, `random()` is the file's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.port import IndexPort
from reme_es.adapters.retry import BULK, REQUEST, Clock
from reme_es.core.errors import AuthError, ClusterChanged, ConnectionFailed, ReMeESError, RequestFailed

from .scripted_server import ScriptedServer

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "behaviour_cases.json").read_text())
DIALECTS = {"opensearch": OpenSearchDialect, "elasticsearch": ElasticsearchDialect}
POLICY_KEYS = {
    "deadline_s": "deadline",
    "base_s": "base",
    "max_s": "cap",
    "tries": "tries",
    "try_timeout_s": "try_timeout",
}
SEARCH = {"query": {"match_all": {}}}


class FakeClock(Clock):
    """A clock that moves only when slept (or told to), recording each sleep; random() is fixed."""

    def __init__(self, rand: float):
        self.t, self.rand, self.sleeps = 1000.0, rand, []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.t += seconds

    def random(self) -> float:
        return self.rand


def steps_of(case: dict) -> list[dict]:
    """A case's steps (a one-step case keeps its answers and expectations at the top)."""
    return case.get("steps") or [{"idle_s": 0, "answers": case["answers"], "expect": case["expect"]}]


def outcome_of(error: ReMeESError | None) -> dict:
    """The outcome of a call as the golden file names it."""
    if error is None:
        return {"outcome": "ok"}
    if isinstance(error, ClusterChanged):
        return {"outcome": "cluster_changed"}
    status = {"status": error.status} if isinstance(error, (RequestFailed, AuthError)) else {}
    if "(the call deadline)" in str(error):
        return {"outcome": "deadline", **status}
    if isinstance(error, ConnectionFailed):
        return {"outcome": "unreachable"}
    return {"outcome": "status", **status}


async def play(dialect, port: IndexPort, case: dict) -> dict:
    """Run the case's operation once; its outcome (and for bulk, the failed items)."""
    try:
        if case["op"] == "bulk":
            actions = [{"_op_type": "index", "_index": "golden", "_id": i, "_source": {"n": i}} for i in case["ids"]]
            outcome = await dialect.transport.bulk(actions)
            return {"outcome": "ok", "failed": [[f.id, f.status] for f in outcome.failures]}
        if case["op"] == "guarded":
            await port.search("golden", SEARCH)
        else:
            await dialect.transport.request("POST", "/golden/_search", SEARCH)
    except ReMeESError as exc:
        return outcome_of(exc)
    return outcome_of(None)


@pytest.mark.parametrize("engine", sorted(DIALECTS))
@pytest.mark.parametrize("case", GOLDEN["cases"], ids=[c["name"] for c in GOLDEN["cases"]])
async def test_golden_behaviour(case, engine):
    with ScriptedServer(elasticsearch=engine == "elasticsearch") as server:
        dialect = DIALECTS[engine](ClientSettings([server.url]))
        clock = FakeClock(GOLDEN["random"])
        transport = dialect.transport
        transport.clock = clock
        if "policy" in case:
            changes = {POLICY_KEYS[k]: v for k, v in case["policy"].items()}
            kind = BULK if case["op"] == "bulk" else REQUEST
            transport.policies[kind] = transport.policies[kind].but(**changes)
        port = IndexPort(dialect)
        try:
            if case["op"] == "guarded":
                server.answers = [case.get("open", {"uuid": case["open_uuid"]})]
                await port.identity.record("golden-*")
                assert port.identity.uuid == case["open_uuid"]
            for n, step in enumerate(steps_of(case)):
                server.asked.clear()
                clock.sleeps.clear()
                clock.t += step["idle_s"]
                server.answers = list(step["answers"])
                got = await play(dialect, port, case)
                got["requests"] = [kind for kind, _, _ in server.asked]
                got["sleeps"] = clock.sleeps
                expected = {**step["expect"], **case.get("except", {}).get(f"python-{engine}", {})}
                expected.pop("why", None)
                assert {k: got.get(k) for k in expected} == expected, f"step {n}"
                assert server.answers == [], f"step {n}: answers left unused"
        finally:
            await dialect.transport.close()
