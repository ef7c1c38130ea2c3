"""The optimize job's rule (issue 53, item 2; engine_settings.json `optimize_job`, `reme_es.store.optimize_job`): a
large load (at least `min_docs` entries in at least `min_segments` segments, more than search wants) is due; a small
index, or a merged one that a few writes gave a segment or two, is not. The option that turns it off defaults to the
rule's `enabled`, and REME_ES_OPTIMIZE_AFTER_LOAD sets it."""

from __future__ import annotations

from reme_es.core.options import SearchOptions, build_options, from_environment
from reme_es.store.optimize_job import RULE, optimize_due


def test_a_large_load_in_many_segments_is_due():
    assert optimize_due(RULE["min_docs"], RULE["min_segments"])
    assert optimize_due(100_000, 14)


def test_a_small_index_or_a_few_segments_is_not_due():
    assert not optimize_due(RULE["min_docs"] - 1, 14)
    assert not optimize_due(100_000, RULE["min_segments"] - 1)
    assert not optimize_due(100_000, RULE["segments"])


def test_the_wanted_segments_bound_the_rule():
    rule = {**RULE, "segments": 5, "min_segments": 2}
    assert not optimize_due(100_000, 5, rule) and optimize_due(100_000, 6, rule)


def test_a_wide_calibrated_width_says_no_structure_and_no_merge():
    # uniform vectors: the loaded segments needed a width over max_width, one merged graph would need a wider one
    assert optimize_due(100_000, 14, width=RULE["max_width"])
    assert not optimize_due(100_000, 14, width=RULE["max_width"] + 1)
    assert optimize_due(100_000, 14, width=None)  # nothing recorded yet: the load's size and segments decide


def test_the_option_defaults_to_the_rule_and_the_environment_turns_it_off():
    assert SearchOptions().optimize_after_load is RULE["enabled"] is True
    env = from_environment({"REME_ES_OPTIMIZE_AFTER_LOAD": "false"})
    assert env == {"optimize_after_load": "false"}
    assert build_options([("environment", env)]).search.optimize_after_load is False


class _Admin:
    chunks_index = "t-chunks"
    calibration = None  # no width recorded yet

    def __init__(self, store):
        self.store = store

    async def chunks_merging(self) -> int:
        self.store.polls += 1
        return 1 if self.store.polls < 3 else 0  # the node merges on for two polls after the request gave up

    def calibratable(self) -> bool:
        return True

    # the door's maintenance namespace (store.admin): the fake store's own methods, so a test can swap one
    async def stats(self) -> dict:
        return await self.store.stats()

    async def optimize(self, max_segments=None, calibrate=True):
        return await self.store.optimize(max_segments, calibrate)

    async def calibrate(self):
        return await self.store.calibrate()


class _Record:
    def to_meta(self) -> dict:
        return {"width": 400}


class _Store:
    """A store whose force merge outlives the request's deadline (the node goes on merging)."""

    def __init__(self):
        from types import SimpleNamespace

        self.segments, self.polls, self.calls = 14, 0, []
        self.admin = _Admin(self)
        self.caps = SimpleNamespace(knn_merge_pays=True)  # as OpenSearch's dialect says

    async def stats(self) -> dict:
        return {k: {"docs": 100_000, "deleted": 0, "segments": self.segments} for k in ("chunks", "files", "links")}

    async def optimize(self, max_segments=None, calibrate=True):
        from reme_es.core.errors import ConnectionFailed

        self.calls.append(("optimize", max_segments, calibrate))
        raise ConnectionFailed("POST /t-chunks/_forcemerge: timed out", kind="timeout")

    async def refresh(self) -> None:
        if self.polls >= 3:
            self.segments = 1

    async def calibrate(self):
        self.calls.append(("calibrate",))
        return _Record()


def test_a_merge_longer_than_the_request_is_waited_for_then_calibrated(monkeypatch):
    import asyncio

    from reme_es.store import optimize_job

    monkeypatch.setitem(optimize_job.RULE, "poll_s", 0.0)
    store = _Store()
    result = asyncio.run(optimize_job.optimize_for_search(store))  # type: ignore[arg-type]
    assert store.calls == [("optimize", RULE["segments"], False), ("calibrate",)]
    assert result["after"]["chunks"]["segments"] == 1 and result["before"]["chunks"]["segments"] == 14
    assert result["knn_width"] == {"width": 400} and store.polls == 3


def test_a_connection_failure_other_than_a_timeout_is_raised(monkeypatch):
    import asyncio

    import pytest

    from reme_es.core.errors import ConnectionFailed
    from reme_es.store import optimize_job

    store = _Store()

    async def refused(max_segments=None, calibrate=True):
        raise ConnectionFailed("refused", kind="refused")

    store.optimize = refused  # type: ignore[method-assign]
    with pytest.raises(ConnectionFailed, match="refused"):
        asyncio.run(optimize_job.optimize_for_search(store))  # type: ignore[arg-type]


def test_the_job_leaves_an_index_whose_width_says_no_structure(monkeypatch):
    import asyncio
    from types import SimpleNamespace

    from reme_es.store import optimize_job

    monkeypatch.setitem(optimize_job.RULE, "poll_s", 0.0)
    store = _Store()
    store.admin.calibration = SimpleNamespace(width=RULE["max_width"] + 1)  # type: ignore[assignment]
    assert asyncio.run(optimize_job.optimize_for_search(store)) is None  # type: ignore[arg-type]
    assert store.calls == []
    asyncio.run(optimize_job.optimize_for_search(store, force=True))  # type: ignore[arg-type]
    assert store.calls == [("optimize", RULE["segments"], False), ("calibrate",)]  # `reme-es optimize` merges anyway


def test_the_job_leaves_an_engine_whose_merged_graph_searches_slower_unless_forced(monkeypatch):
    import asyncio

    from reme_es.adapters.elasticsearch import ElasticsearchDialect
    from reme_es.adapters.opensearch import OpenSearchDialect
    from reme_es.store import optimize_job

    es = ElasticsearchDialect.capabilities({"version": "9.3.2", "build_flavor": "default"}, {})
    os_ = OpenSearchDialect.capabilities({"version": "3.5.0", "plugins": [{"name": "opensearch-knn"}]}, {})
    assert (es.knn_merge_pays, os_.knn_merge_pays) == (False, True)
    monkeypatch.setitem(optimize_job.RULE, "poll_s", 0.0)
    store = _Store()
    store.caps = es  # type: ignore[assignment]
    assert asyncio.run(optimize_job.optimize_for_search(store)) is None  # type: ignore[arg-type]
    assert store.calls == []
    asyncio.run(optimize_job.optimize_for_search(store, force=True))  # type: ignore[arg-type]
    assert store.calls == [("optimize", RULE["segments"], False), ("calibrate",)]  # `reme-es optimize` merges anyway
