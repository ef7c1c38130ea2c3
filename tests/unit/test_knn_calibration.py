"""The k-NN width calibration's pure parts (issue 40): the climb over the ladder, recall with ties, the due rule, the
width a record gives for other depths and shapes, the record's round trip through `_meta`, and the probe groups (a
light and a heavy dropout, the worst group deciding)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.transport import ClientSettings
from reme_es.core.models import SearchFilter
from reme_es.store.calibration import (
    RULE,
    Calibration,
    Step,
    calibration_due,
    climb,
    group_recalls,
    ladder,
    probe_queries,
    recall_at,
)


def _record(**kw) -> Calibration:
    base = dict(
        width=400, recall=0.98, target=0.97, reached=True, stopped="target", depth=50, at=10, docs=10000,
        segments=4, sample=64, reference="exact", measured_at="2026-12-04T08:00:00Z",
    )  # fmt: skip
    return Calibration(**{**base, **kw})


def _measure(table: dict[int, tuple[float, float]]):
    async def measure(width: int) -> Step:
        recall, took = table[width]
        return Step(width, recall, took)

    return measure


def test_the_climb_stops_at_the_first_width_reaching_the_target():
    table = {50: (0.9, 1), 75: (0.95, 1), 100: (0.975, 2), 150: (0.99, 3)}
    chosen, stopped, steps = asyncio.run(climb([50, 75, 100, 150], _measure(table), 0.97, None))
    assert (chosen.width, stopped, [s.width for s in steps]) == (100, "target", [50, 75, 100])
    # each step keeps the recall its measurement gave (a climb reporting 1.0 unmeasured would stop at 50)
    assert [(s.recall, s.took_ms) for s in steps] == [(0.9, 1), (0.95, 1), (0.975, 2)] and chosen.recall == 0.975


def test_recall_at_is_the_share_of_the_brute_force_ten_found():
    """recall_at against the test's own count: exact top-10 by brute force over random vectors, answers missing some."""
    rng = random.Random(4)
    vectors = {f"v{i}": [rng.gauss(0, 1) for _ in range(16)] for i in range(300)}
    query = [rng.gauss(0, 1) for _ in range(16)]
    scored = sorted(((k, sum(a * b for a, b in zip(v, query))) for k, v in vectors.items()), key=lambda p: -p[1])
    exact, others = scored[:10], [k for k, _ in scored[10:]]
    for missing in (0, 3, 10):
        answer = [k for k, _ in exact[missing:]] + others[:missing]  # `missing` of the ten replaced by farther ones
        assert recall_at(answer, exact, 10) == (10 - missing) / 10


def test_out_of_reach_the_best_width_is_kept_and_said():
    table = {50: (0.9, 1), 75: (0.93, 1), 100: (0.93, 2)}
    chosen, stopped, _ = asyncio.run(climb([50, 75, 100], _measure(table), 0.97, None))
    assert (chosen.width, chosen.recall, stopped) == (75, 0.93, "max_width")  # the narrower of equal recalls


def test_a_width_over_the_latency_budget_stops_the_climb_at_the_best_width_within_it():
    table = {50: (0.9, 4), 75: (0.94, 8), 100: (0.99, 12)}
    chosen, stopped, steps = asyncio.run(climb([50, 75, 100], _measure(table), 0.97, 10))
    assert (chosen.width, stopped, len(steps)) == (75, "latency_budget", 3)


def test_recall_counts_ties_with_the_last_exact_neighbour():
    exact = [("a", 0.9), ("b", 0.8), ("c", 0.8)]
    assert recall_at(["a", "c"], exact[:3], 2) == 1.0  # c ties with b: interchangeable
    assert recall_at(["a", "x"], exact, 2) == 0.5
    assert recall_at([], [], 10) == 1.0


def test_the_record_width_grows_with_depth_and_entries_per_segment():
    r = _record()
    assert r.width_for(50) == 400 and r.width_for(10) == 400 and r.width_for(100) == 800
    assert r.width_for(50, docs=20000, segments=4) == 800  # twice the entries per segment: twice the width
    assert r.width_for(50, docs=5000, segments=4) == 400  # never narrower than measured
    assert r.width_for(5000) == RULE["max_width"]


def test_due_when_unrecorded_and_large_enough_or_when_the_shape_moved():
    assert not calibration_due(None, RULE["min_docs"] - 1, 1) and calibration_due(None, RULE["min_docs"], 1)
    r = _record()
    assert not calibration_due(r, 12000, 4) and not calibration_due(r, 10000, 3)
    assert calibration_due(r, 15000, 4) and calibration_due(r, 10000, 1) and calibration_due(r, 6000, 4)


def test_the_record_round_trips_through_meta():
    r = _record(steps=[Step(50, 0.9, 1.0), Step(400, 0.98, 3.5)])
    assert Calibration.from_meta({RULE["meta_key"]: r.to_meta()}) == r
    assert Calibration.from_meta({}) is None and Calibration.from_meta({RULE["meta_key"]: {"width": "x"}}) is None


def test_the_ladder_starts_at_the_depth_and_ends_at_the_max_width():
    assert ladder(50)[0] == 50 and ladder(50)[-1] == RULE["max_width"] and ladder(60)[0] == 75
    assert ladder(50, 75) == [50, 75]


def test_probes_are_perturbed_copies_of_the_stored_vectors():
    v = [1.0] + [0.0] * 15
    (q,) = probe_queries([v], seed=1)
    assert q != v and len(q) == 16


BODIES = json.loads((Path(__file__).parent / "golden" / "calibration_bodies.json").read_text())


@pytest.mark.parametrize("dialect", [OpenSearchDialect, ElasticsearchDialect], ids=["opensearch", "elasticsearch"])
def test_each_dialect_builds_the_golden_calibration_bodies(dialect):
    """The sample and exact-search bodies, as memorie's dialects build them too (memorie/test/golden-bodies.test.ts)."""
    given, d = BODIES["input"], dialect(ClientSettings(["http://127.0.0.1:1"]))
    f = SearchFilter(workspace="w")
    assert [given["filter"]] == [{"term": {"workspace": f.workspace}}]
    assert d.sample_body(f, given["sample"], given["seed"]) == BODIES[d.engine]["sample"]
    assert d.exact_body(given["vector"], f, given["exact_size"]) == BODIES[d.engine]["exact"]
    assert given["exact_size"] == RULE["bodies"]["exact_per_at"] * RULE["at"]


def test_probes_are_dealt_to_a_light_and_a_heavy_group_in_turn():
    groups = RULE["probes"]
    assert len(groups) >= 2 and len({g["dropout"] for g in groups}) == len(groups)  # dropout levels that differ
    dims = 4000
    probes = probe_queries([[1.0] * dims] * (2 * len(groups)), seed=3)
    for i, q in enumerate(probes):
        kept = sum(q) / dims  # noise is centred: the mean coordinate is the share kept (about +-0.01 here)
        assert kept == pytest.approx(1.0 - groups[i % len(groups)]["dropout"], abs=0.05), i


def test_the_worst_probe_group_decides_the_step():
    # the mean of all probes (0.975) reaches 0.97, the heavy group (0.95) does not: the width is not enough
    recalls = [1.0, 0.9, 1.0, 1.0] * 4
    worst, means = group_recalls(recalls, 2)
    assert worst == pytest.approx(0.95) and means == pytest.approx([1.0, 0.95])
    assert group_recalls(recalls, 1)[0] == pytest.approx(0.975)  # the callers' own queries: one group
    table = {50: ([1.0, 0.9] * 4, 1), 75: ([1.0, 0.95] * 4, 1), 100: ([1.0, 1.0] * 4, 1)}

    async def measure(width: int) -> Step:
        found, took = table[width]
        worst, means = group_recalls(found, 2)
        return Step(width, worst, took, means)

    chosen, stopped, _ = asyncio.run(climb(list(table), measure, 0.97, None))
    assert (chosen.width, stopped, chosen.groups) == (100, "target", [1.0, 1.0])


# The same decisions as the TypeScript side (memorie/test/knn-width.test.ts reads these cases too).
CASES = json.loads((Path(__file__).parent / "golden" / "engine_settings.json").read_text())["knn_calibration_cases"]


@pytest.mark.parametrize("k,docs,segments,expected", CASES["widths"])
def test_golden_widths(k, docs, segments, expected):
    assert _record(**CASES["record"]).width_for(k, docs, segments) == expected


@pytest.mark.parametrize("recorded,docs,segments,expected", CASES["due"])
def test_golden_due(recorded, docs, segments, expected):
    assert calibration_due(_record(**CASES["record"]) if recorded else None, docs, segments) is expected


@pytest.mark.parametrize("case", CASES["climb"])
def test_golden_climb(case):
    table = {w: (r, t) for w, r, t in case["steps"]}
    chosen, stopped, steps = asyncio.run(climb(list(table), _measure(table), case["target"], case["budget_ms"]))
    assert [chosen.width, stopped, len(steps)] == case["expect"]  # width, why, widths measured


@pytest.mark.parametrize("depth,top,expected", CASES["ladder"])
def test_golden_ladder(depth, top, expected):
    assert ladder(depth, top) == expected


@pytest.mark.parametrize("recalls,groups,worst,means", CASES["groups"]["cases"])
def test_golden_groups(recalls, groups, worst, means):
    got_worst, got_means = group_recalls(recalls, groups)
    assert round(got_worst, 4) == worst and [round(m, 4) for m in got_means] == means
