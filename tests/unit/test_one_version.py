"""Which hits a search answer keeps so that each file shows one version (`reme_es.store.one_version`), without a
server: the keep rule, and the deeper searches that replace the hits left out."""

from __future__ import annotations

from reme_es.store.one_version import REFILLS, filled, kept, shared_paths

A, B = "a.md", "b.md"


def test_only_files_with_two_or_more_hits_without_one_common_token_are_checked():
    # no tokens (hits that do not carry them, chunks from before the field): every file with two hits
    assert shared_paths([("1", A, None), ("2", B, None), ("3", A, None), ("4", A, None)]) == [A]
    assert shared_paths([("1", A, None), ("2", B, None)]) == []
    # one write call's chunks are of one version: no file doc to read, whatever the number of hits
    assert shared_paths([("1", A, "w1"), ("2", A, "w1"), ("3", B, "w2"), ("4", B, "w2")]) == []
    # two calls' chunks (a write half done beside the old version, or unchanged chunks beside rewritten ones), or
    # one hit without a token among them: read the file doc
    assert shared_paths([("1", A, "w1"), ("2", B, "w1"), ("3", A, "w2"), ("4", B, None), ("5", B, "w1")]) == [A, B]


def test_a_hit_is_kept_when_its_file_doc_lists_it_or_there_is_none_to_ask():
    keys = [("new", A, "w2"), ("old", A, "w1"), ("same", A, "w1"), ("x", B, None), ("y", "c.md", None)]
    listed = {A: {"old", "same"}, B: None}  # B has no file doc; c.md was not read (a single hit)
    assert kept(keys, listed) == [False, True, True, True, True]


def _search(ranked: list[str], asked: list[int]):
    async def search(depth: int) -> list[str]:
        asked.append(depth)
        return ranked[:depth]

    return search


def _drop(*left_out: str):
    async def keep(found: list[str]) -> list[str]:
        return [x for x in found if x not in left_out]

    return keep


async def test_hits_left_out_are_replaced_by_the_next_ones_from_a_deeper_search():
    asked: list[int] = []
    ranked = [f"h{i}" for i in range(10)]
    answer = await filled(_search(ranked, asked), _drop("h0", "h1", "h2"), 3)
    assert answer == ["h3", "h4", "h5"] and asked == [3, 6]


async def test_nothing_left_out_costs_one_search():
    asked: list[int] = []
    answer = await filled(_search(["h0", "h1", "h2"], asked), _drop(), 2)
    assert answer == ["h0", "h1"] and asked == [2]


async def test_an_exhausted_index_or_the_refill_bound_stops_the_search():
    asked: list[int] = []
    answer = await filled(_search(["h0", "h1", "h2"], asked), _drop("h0"), 3)
    assert answer == ["h1", "h2"] and asked == [3, 6]  # the second search came back short: no more to ask for
    asked = []
    ranked = [f"h{i}" for i in range(100)]
    answer = await filled(_search(ranked, asked), _drop(*ranked[:90]), 2)
    assert answer == [] and asked == [2 << i for i in range(REFILLS + 1)]
