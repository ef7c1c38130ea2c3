"""The held-out bench's sets: the second and third generated conversation sets and the fixed tuning/reporting split
(the third set is reported whole, never tuned on)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("reme", reason="the bench runs ReMe: pip install 'reme-es[reme]'")
    from bench.data import memory2
    from bench.quality import heldout

    return heldout, memory2


def test_second_set_evidence_is_what_its_questions_need(bench):
    heldout, data2 = bench
    data = data2.generate()
    text = {cid: t for cid, _, _, t in data.chunks}
    assert len({t for t in text.values()}) > 0.8 * len(text)  # few texts repeat word for word
    for q in data.questions:
        days = {cid.split("/")[1] for cid in q["evidence"]}
        assert all(cid in text for cid in q["evidence"]), q
        if q["kind"] == "multi-hop":  # two turns on two days, the second naming whom the first introduced
            first, second = (text[c] for c in sorted(q["evidence"]))
            name = first.split(" is staying with us")[0].split()[-1]
            assert len(days) == 2 and name in data2.BRIDGE_NAMES and name in second
        if q["kind"] == "month":
            month = q["question"].rstrip("?").split()[-1]
            assert len(q["evidence"]) == 1 and data2.MONTHS.index(month) + 1 == int(next(iter(days)).split("-")[1])
    assert data2.generate().questions == data.questions  # fixed by its seed


def test_halves_split_by_conversation(bench):
    heldout, memory2 = bench
    from bench.quality import memory_quality as mq

    d = mq.memory_set()
    halves = heldout.halves(d)
    conv = [next(iter(g)).split("#")[0].rsplit("/", 1)[1] for g in d.gains]
    by_half = {h: {c for c, x in zip(conv, halves) if x == h} for h in ("tune", "report")}
    assert len(by_half["tune"]) == len(by_half["report"]) == 6
    assert not by_half["tune"] & by_half["report"]
    second = heldout.generated_set("memory2", memory2)
    group = [next(iter(g)).split("#")[0].rsplit("/", 1)[1] for g in second.gains]
    by_half = {h: {c for c, x in zip(group, heldout.halves(second)) if x == h} for h in ("tune", "report")}
    assert len(by_half["tune"]) == len(by_half["report"]) > 0 and not by_half["tune"] & by_half["report"]


def test_the_third_set_is_reported_whole_and_its_evidence_is_there(bench):
    heldout, _ = bench
    from bench.data import memory3

    data = memory3.generate()
    text = {cid: t for cid, _, _, t in data.chunks}
    kinds = {q["kind"] for q in data.questions}
    assert {"multi-hop", "update", "relative"} <= kinds
    for q in data.questions:
        assert q["evidence"] and all(cid in text for cid in q["evidence"]), q
        if q["kind"] == "multi-hop":  # two turns from notes of two different days
            assert len({cid.split("/")[1] for cid in q["evidence"]}) == 2, q
    third = heldout.generated_set("memory3", memory3)
    assert set(heldout.halves(third)) == {"report"} and len(third.queries) == len(data.questions)
    assert memory3.generate().questions == data.questions  # fixed by its seed
