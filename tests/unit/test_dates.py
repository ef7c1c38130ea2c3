"""The dates a question names (reme_es.store.dates): parsing against a fixed today, and the re-rank by note date."""

import datetime as dt

import pytest

from reme_es.core.models import Chunk, Hit
from reme_es.store.dates import DateHint, about_the_past, date_rescore, note_date, query_dates, with_window

TODAY = dt.date(2026, 12, 1)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did Rafa repair last June?", dt.date(2026, 6, 1), dt.date(2026, 6, 30)),
        ("What did Rafa repair last December?", dt.date(2025, 12, 1), dt.date(2025, 12, 31)),
        ("what was said in december", dt.date(2026, 12, 1), dt.date(2026, 12, 31)),
        ("Where did Sam go in March 2025?", dt.date(2025, 3, 1), dt.date(2025, 3, 31)),
        ("What is happening on the 21st of June?", dt.date(2026, 6, 20), dt.date(2026, 6, 22)),
        ("plans for July 4th", dt.date(2026, 7, 3), dt.date(2026, 7, 5)),
        ("what happened three weeks ago", dt.date(2026, 11, 7), dt.date(2026, 11, 13)),
        ("what did we decide last week", dt.date(2026, 11, 17), dt.date(2026, 11, 30)),
    ],
)
def test_absolute_windows(query, start, end):
    assert query_dates(query, TODAY) == DateHint(start, end)


def test_an_offset_from_an_event_waits_for_the_event_date():
    hint = query_dates("What did Kwame host for the neighbours two weeks after the move?", TODAY)
    assert (hint.offset_days, hint.anchor, hint.start) == (14, "move", None)
    assert hint.around(dt.date(2026, 4, 1)) == DateHint(dt.date(2026, 4, 12), dt.date(2026, 4, 18))
    before = query_dates("what did she buy the week before the wedding", TODAY)
    assert (before.offset_days, before.anchor) == (-7, "wedding")


@pytest.mark.parametrize(
    "query",
    ["May I ask what Sam named the dog?", "How long until Sam can jog again?", "they march on the 40th of nothing", ""],
)
def test_no_date_named(query):
    assert query_dates(query, TODAY) is None


def test_note_date_from_the_path():
    assert note_date("daily/2026-06-03/sam-alex.md") == dt.date(2026, 6, 3)
    assert note_date("memory/2026-02-30.md") is None
    assert note_date("people/lena.md") is None


def _hit(path: str, score: float) -> Hit:
    return Hit(chunk=Chunk(id=f"{path}#1", path=path, text=""), scores={"score": score})


def test_date_rescore_lifts_notes_inside_the_window_and_keeps_the_rest():
    hits = [
        _hit("daily/2026-05-02/a.md", 3.0),
        _hit("daily/2026-06-10/a.md", 2.0),
        _hit("notes/x.md", 1.0),
        _hit("daily/2026-06-20/a.md", 0.0),
    ]
    hint = DateHint(dt.date(2026, 6, 1), dt.date(2026, 6, 30))
    out = date_rescore(hits, hint, boost=0.6)
    assert [h.chunk.path for h in out] == [
        "daily/2026-06-10/a.md",
        "daily/2026-05-02/a.md",
        "daily/2026-06-20/a.md",
        "notes/x.md",
    ]
    assert [h.scores["in_dates"] for h in out] == [1.0, 0.0, 1.0, 0.0]
    assert out[0].score == pytest.approx(2 / 3 + 0.6)
    assert date_rescore(hits, None, 0.6) == hits
    assert date_rescore(hits, hint, 0.0) == hits
    assert date_rescore(hits, DateHint(offset_days=7, anchor="move"), 0.6) == hits  # not dated yet: unchanged


def test_the_window_candidates_come_after_the_ranked_hits_once():
    ranked = [_hit("daily/2026-05-02/a.md", 3.0), _hit("daily/2026-06-10/a.md", 2.0)]
    inside = [_hit("daily/2026-06-10/a.md", 9.0), _hit("daily/2026-06-20/a.md", 1.0)]
    merged = with_window(ranked, inside)
    assert [(h.chunk.path, h.score) for h in merged] == [
        ("daily/2026-05-02/a.md", 3.0),
        ("daily/2026-06-10/a.md", 2.0),
        ("daily/2026-06-20/a.md", 1.0),
    ]


@pytest.mark.parametrize(
    ("query", "past"),
    [
        ("What did Rafa repair last June?", True),
        ("what was said in december", True),
        ("what happened three weeks ago", True),
        ("What did Hugo host for the neighbours a week after the wedding?", True),
        ("What is happening on the 21st of June?", False),  # when a plan falls: said weeks before
        ("plans for July 4th", False),
        ("Where will Sam be in March?", False),
    ],
)
def test_only_a_question_about_the_past_names_when_it_was_said(query, past):
    assert about_the_past(query) is past
