"""Contract mixin for the date boost: a question that names a month or an offset from an event lifts the notes
dated there (see `reme_es.store.dates`)."""

from __future__ import annotations

import datetime as dt

from ._common import ASYNC
from ._common import ids as _ids
from .data import chunk, file_with, unit_vector


class DateContract:
    """Hybrid search with `date_boost`: the ranking changes only by the notes' dates, as claimed."""

    pytestmark = ASYNC

    async def _notes(self, store_factory):
        # A repair in each of three months (March the best match by both branches by far), a move,
        # and a dinner two weeks after it; questions are asked on 2026-12-01.
        store = await store_factory(hybrid="client", fusion="zscore", vector_weight=0.55, date_boost=0.0)
        store.admin.tune(today=dt.date(2026, 12, 1))  # `plain` searches without the boost; each case sets its own
        said = [
            ("2026-03-10", "Rafa fixed the boiler himself last weekend", unit_vector(1, 0.1)),
            ("2026-06-14", "Rafa repaired the gate, took a while", unit_vector(1, 0.6)),
            ("2026-09-02", "Rafa got the tap working again", unit_vector(1, 0.8)),
            ("2026-04-01", "Rafa says the move is done, living in the new flat now", unit_vector(0, 1)),
            ("2026-04-15", "Rafa hosted a paella dinner for the neighbours", unit_vector(0.6, 0, 1)),
            (
                "2026-08-20",
                "Rafa hosted a curry dinner for the neighbours, two weeks of planning",
                unit_vector(0.2, 0, 1),
            ),
        ]
        pairs = []
        for day, text, vector in said:
            path = f"daily/{day}/rafa.md"
            pairs.append(file_with(path, [chunk(path, text, vector=vector)]))
        await store.upsert(pairs)
        return store, {day: f"daily/{day}/rafa.md" for day, *_ in said}

    async def test_a_named_month_lifts_its_notes(self, store_factory):
        store, path = await self._notes(store_factory)
        query, vector = "What did Rafa fix himself last June?", unit_vector(1, 0.1)
        plain = await store.search(query, vector, 3, candidates=6)
        assert plain.hits[0].chunk.path == path["2026-03-10"]
        store.admin.tune(date_boost=1.5)  # more than the fused range: the month's notes first
        boosted = await store.search(query, vector, 3, candidates=6)
        assert boosted.hits[0].chunk.path == path["2026-06-14"]
        assert boosted.hits[0].scores["in_dates"] == 1.0
        assert sorted(_ids(boosted.hits)) == sorted(_ids(plain.hits))  # re-ranked, nothing added or dropped

    async def test_an_offset_from_an_event_is_dated_by_the_event(self, store_factory):
        store, path = await self._notes(store_factory)
        query, vector = "What did Rafa host for the neighbours two weeks after the move?", unit_vector(0.2, 0, 1)
        plain = await store.search(query, vector, 2, candidates=6)
        assert plain.hits[0].chunk.path == path["2026-08-20"]  # more of the question's words
        from ..store.search import ANCHORED_SHARE

        store.admin.tune(date_boost=0.6 / ANCHORED_SHARE)  # a window counted from an event gets that share: 0.6
        boosted = await store.search(query, vector, 2, candidates=6)
        assert boosted.hits[0].chunk.path == path["2026-04-15"]  # the move (04-01) + 14 days

    async def test_a_named_month_brings_its_notes_into_the_candidates(self, store_factory):
        store, path = await self._notes(store_factory)
        query, vector = "What did Rafa fix himself last September?", unit_vector(1, 0.1)
        plain = await store.search(query, vector, 1, candidates=1)
        assert plain.hits[0].chunk.path == path["2026-03-10"]
        store.admin.tune(date_boost=1.5)
        boosted = await store.search(query, vector, 1, candidates=1)
        assert boosted.hits[0].chunk.path == path["2026-09-02"]  # beyond the one candidate asked for: the window's

    async def test_a_question_about_a_planned_date_is_not_lifted(self, store_factory):
        # "What is ... on the 14th of June?" names when a plan falls (said weeks before): no window, no lift; the same
        # question about the past is lifted (the question's form decides, not the window)
        store, path = await self._notes(store_factory)
        vector = unit_vector(1, 0.1)
        plain = await store.search("What is Rafa fixing himself on the 14th of June?", vector, 3, candidates=6)
        assert plain.hits[0].chunk.path == path["2026-03-10"]
        store.admin.tune(date_boost=1.5)
        planned = await store.search("What is Rafa fixing himself on the 14th of June?", vector, 3, candidates=6)
        assert _ids(planned.hits) == _ids(plain.hits)
        assert "in_dates" not in planned.hits[0].scores
        said = await store.search("What did Rafa fix himself on the 14th of June?", vector, 3, candidates=6)
        assert said.hits[0].chunk.path == path["2026-06-14"]
