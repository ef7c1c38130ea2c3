"""bench/perf/probe.py's split of a call: the parts add up to its wall time, and concurrent requests count once."""

from __future__ import annotations

import pytest

from bench.perf.probe import Probe, Request, _took


def test_took_is_read_from_the_head_of_a_raw_answer():
    assert _took('{"took":12,"timed_out":false,"hits":{}}') == 12.0
    assert _took(b'{"took": 7, "responses": []}') == 7.0
    assert _took('{"name":"node"}') == 0.0


@pytest.mark.parametrize("concurrent", [False, True])
def test_the_parts_of_a_call_add_up_to_its_wall_time(concurrent):
    probe = Probe()
    probe.begin()
    t0 = probe.t0
    if concurrent:  # two requests in flight together (hybrid's gather): one group, the longer took
        probe.requests += [Request(t0 + 0.001, t0 + 0.006, 3.0), Request(t0 + 0.002, t0 + 0.005, 2.0)]
    else:  # two round trips one after the other
        probe.requests += [Request(t0 + 0.001, t0 + 0.004, 2.0), Request(t0 + 0.006, t0 + 0.010, 1.0)]
    call = probe.end()
    assert call.trips == 2
    assert call.build == pytest.approx(1.0)
    assert call.took == (3.0 if concurrent else 3.0)
    assert call.between == pytest.approx(0.0 if concurrent else 2.0)
    assert call.wire == pytest.approx(5.0 - 3.0 if concurrent else 7.0 - 3.0)
    assert call.build + call.between + call.wire + call.took + call.parse == pytest.approx(call.wall)
