"""The calibration's pace (issue 53, item 3; `reme_es.store.pace`): its probe searches go in parts of at most
`knn_calibration.pace.probes_per_request`, never two parts at once, with a pause after each part in proportion to the
part's time (`duty`), and the answers come back in order. A fake port counts the searches in flight; a fake clock
and sleep record the pauses. Then the store's own calibration (`VectorStore.calibrate`) is run against a fake port
to show its searches are sent so."""

from __future__ import annotations

import asyncio

import pytest

from reme_es.store.pace import PACE, paced, pause_after


class FakePort:
    """Answers each body with its own number after a while, counting the requests in flight and their sizes."""

    def __init__(self, clock: list[float], took: float = 0.2):
        self.clock, self.took = clock, took
        self.in_flight = self.most_in_flight = 0
        self.sizes: list[int] = []

    async def send(self, bodies: list[dict]) -> list[int]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.sizes.append(len(bodies))
        await asyncio.sleep(0)  # another send may start here if the caller does not wait
        self.clock[0] += self.took
        self.in_flight -= 1
        return [b["n"] for b in bodies]


def test_the_rule_sends_few_probes_at_a_time_and_pauses():
    assert 1 <= PACE["probes_per_request"] < 128 and 0 < PACE["duty"] < 1


def test_probes_go_in_parts_of_the_limit_one_at_a_time_with_a_pause_after_each():
    clock, pauses = [0.0], []

    async def sleep(s: float) -> None:
        pauses.append(round(s, 6))
        clock[0] += s

    port = FakePort(clock)
    bodies = [{"n": i} for i in range(37)]
    out = asyncio.run(paced(port.send, bodies, per_request=10, duty=0.25, sleep=sleep, clock=lambda: clock[0]))
    assert out == list(range(37))  # in order
    assert port.sizes == [10, 10, 10, 7]
    assert port.most_in_flight == 1
    assert pauses == [0.6, 0.6, 0.6]  # 0.2 s x (1 - 0.25) / 0.25 after each part but the last
    assert clock[0] == pytest.approx(4 * 0.2 + 3 * 0.6)  # busy 0.8 of 2.6 s: ~0.25 once the last part is counted


def test_the_default_limit_is_the_rules():
    clock = [0.0]
    port = FakePort(clock, took=0.0)

    async def sleep(s: float) -> None:
        return None

    n = 3 * PACE["probes_per_request"] + 1
    asyncio.run(paced(port.send, [{"n": i} for i in range(n)], sleep=sleep, clock=lambda: clock[0]))
    assert port.sizes == [PACE["probes_per_request"]] * 3 + [1]


def test_no_pause_at_full_duty_and_none_for_an_instant_part():
    assert pause_after(0.3, 1.0) == 0.0
    assert pause_after(0.0, 0.5) == 0.0
    assert pause_after(0.3, 0.5) == pytest.approx(0.3)


class _Timed:
    def __init__(self, ranked):
        self.took_ms, self.ranked = 1.0, ranked


class CalibrationPort:
    """The port a calibration talks to: every k-NN answer is the exact one (recall 1.0 at the first width)."""

    def __init__(self, vectors: list[list[float]]):
        self.vectors, self.sizes, self.in_flight, self.most_in_flight = vectors, [], 0, 0

    async def ranked_sources(self, index, body):
        return [(1.0, {"embedding": v}) for v in self.vectors]

    async def timed_searches(self, index, bodies, what):
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.sizes.append(len(bodies))
        await asyncio.sleep(0)
        self.in_flight -= 1
        return [_Timed([(f"d{i}", 1.0 - i / 100) for i in range(20)]) for _ in bodies]

    async def stats(self, index):
        return {"docs": 5000, "segments": 3}


def test_the_store_calibration_sends_its_probes_paced(monkeypatch):
    from reme_es.adapters.opensearch import OpenSearchDialect
    from reme_es.adapters.transport import ClientSettings
    from reme_es.core.models import Capabilities
    from reme_es.store.vectors import VectorStore

    monkeypatch.setitem(PACE, "duty", 1.0)  # no pauses: the test counts parts, not time
    port = CalibrationPort([[float(i), 1.0, 0.5] for i in range(40)])

    class Indices:  # what VectorStore reads of its index set
        dims, port_ = 3, None
        dialect = OpenSearchDialect(ClientSettings(hosts=["http://x:9200"]))
        caps = Capabilities(engine="opensearch", version="3.0.0", knn=True, knn_ef_search=True)
        knn_calibration = None

        class ix:
            chunks = "t-chunks"

        def filter(self, f):
            from reme_es.core.models import SearchFilter

            return SearchFilter(workspace="w")

    indices = Indices()
    indices.port = port  # type: ignore[attr-defined]
    store = VectorStore(indices)  # type: ignore[arg-type]
    record = asyncio.run(store.calibrate(record=False))
    limit = PACE["probes_per_request"]
    assert record.sample == 40 and record.width == 50  # the exact answers: the first width reaches the target
    assert port.sizes == [limit, limit, 40 - 2 * limit] * 2  # the exact reference, then the one width, in parts
    assert port.most_in_flight == 1
    assert record.requests == 2 + 6  # the stats and the sample, then every part
