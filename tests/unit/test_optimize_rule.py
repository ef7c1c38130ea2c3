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


def test_the_option_defaults_to_the_rule_and_the_environment_turns_it_off():
    assert SearchOptions().optimize_after_load is RULE["enabled"] is True
    env = from_environment({"REME_ES_OPTIMIZE_AFTER_LOAD": "false"})
    assert env == {"optimize_after_load": "false"}
    assert build_options([("environment", env)]).search.optimize_after_load is False
