"""Dates named in a question, and a re-rank of fused hits by their note's date: pure functions, no I/O.

A question may name when something was said: a month ("last June", "in March 2026"), a day ("on 12 May", "May
12th"), a span back from today ("three weeks ago", "last week"), or a span after or before another event ("two
weeks after the move", "the week after the trip"). `query_dates` reads these into a `DateHint`; `date_rescore`
moves the fused hits whose note date (the `YYYY-MM-DD` in their path, as ReMe's daily notes carry it) falls inside
the hint's window up by `boost`. This is a boost, never a filter: ReMe's `start_date`/`end_date` keep their own
meaning, and a hit outside the window stays in the ranking.

Only a question about the past is boosted (`about_the_past`: "What did Rafa repair last May?"): its date is when the
thing was said, so its notes are the ones to lift. A question in the present or future tense ("What is happening on
the 21st of June?") names when a planned event falls, which was said weeks before; lifting the notes of June 20-22
would push the right one out.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ..core.models import Hit

MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items()) if m != "may"})
MONTHS["sept"] = 9
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "few": 3,
}
UNITS = {"day": 1, "week": 7, "fortnight": 14, "month": 30}
SLACK = 3  # days either side of a day that an offset from an event lands on
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUM = r"\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True))
_UNIT = r"day|week|fortnight|month"
_RELATIVE = re.compile(
    rf"\b(?:(?P<n>{_NUM})\s+(?P<unit>{_UNIT})s?|the\s+(?P<the>{_UNIT}))\s+"
    rf"(?P<dir>after|before|since)\s+(?P<anchor>[^?.!,;]+)",
    re.I,
)
_AGO = re.compile(rf"\b(?P<n>{_NUM})\s+(?P<unit>{_UNIT})s?\s+ago\b", re.I)
_LAST_SPAN = re.compile(rf"\blast\s+(?P<unit>{_UNIT})\b", re.I)
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_DAY_MONTH = re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH})\b\.?{_YEAR}", re.I)
_MONTH_DAY = re.compile(rf"\b(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b{_YEAR}", re.I)
_MONTH_ONLY = re.compile(rf"\b(?P<last>last\s+)?(?P<month>{_MONTH})\b\.?(?:\s+(?P<year>\d{{4}}))?", re.I)
_PATH_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


@dataclass(frozen=True)
class DateHint:
    """When a question asks about: a window of note dates, or an offset from an event still to be dated."""

    start: dt.date | None = None
    end: dt.date | None = None
    offset_days: int = 0  # with `anchor`: the window is the anchor's date + offset, +- SLACK days
    anchor: str = ""  # the event the offset counts from ("the move"); empty for an absolute window

    def around(self, anchor_date: dt.date) -> DateHint:
        """The absolute window this relative hint names once its anchor event is dated."""
        day = anchor_date + dt.timedelta(days=self.offset_days)
        return DateHint(day - dt.timedelta(days=SLACK), day + dt.timedelta(days=SLACK))


def _count(raw: str | None) -> int:
    """A spelled or written number."""
    raw = (raw or "").lower().strip()
    return int(raw) if raw.isdigit() else NUMBERS.get(raw, 1)


def _month_window(month: int, year: int) -> tuple[dt.date, dt.date]:
    """The first and last day of a month."""
    first = dt.date(year, month, 1)
    following = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first, following - dt.timedelta(days=1)


def _latest_year(month: int, today: dt.date, strictly_before: bool) -> int:
    """The year of the latest such month up to today (`strictly_before`: before today's month, as "last June")."""
    if month < today.month or (month == today.month and not strictly_before):
        return today.year
    return today.year - 1


def query_dates(query: str, today: dt.date | None = None) -> DateHint | None:
    """The date window a question names (see the module's docstring), or None when it names none; `today` (default:
    the current date) dates "last June" and "three weeks ago"."""
    today = today or dt.date.today()
    if m := _RELATIVE.search(query):
        days = UNITS[(m["unit"] or m["the"]).lower()] * _count(m["n"])
        sign = -1 if m["dir"].lower() == "before" else 1
        anchor = re.sub(r"^(?:the|my|our|his|her|their)\s+", "", m["anchor"].strip(), flags=re.I)
        return DateHint(offset_days=sign * days, anchor=anchor) if anchor else None
    if m := _AGO.search(query):
        days = UNITS[m["unit"].lower()] * _count(m["n"])
        day = today - dt.timedelta(days=days)
        half = max(SLACK, UNITS[m["unit"].lower()] // 2)
        return DateHint(day - dt.timedelta(days=half), day + dt.timedelta(days=half))
    if m := _LAST_SPAN.search(query):
        days = UNITS[m["unit"].lower()]
        return DateHint(today - dt.timedelta(days=2 * days), today - dt.timedelta(days=1))
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        if (m := pattern.search(query)) and 1 <= int(m["day"]) <= 31:
            month = MONTHS[m["month"].lower()]
            year = int(m["year"]) if m["year"] else _latest_year(month, today, False)
            try:
                day = dt.date(year, month, int(m["day"]))
            except ValueError:
                continue
            return DateHint(day - dt.timedelta(days=1), day + dt.timedelta(days=1))
    for m in _MONTH_ONLY.finditer(query):
        word = m["month"].lower()
        if (
            word in ("may", "mar", "march")
            and not (m["last"] or m["year"])
            and (m.start() == 0 or not m["month"][0].isupper())
        ):
            continue  # "may" and "march" the verbs: a month only when capitalised inside the question, or dated
        month = MONTHS[word]
        year = int(m["year"]) if m["year"] else _latest_year(month, today, bool(m["last"]))
        return DateHint(*_month_window(month, year))
    return None


def note_date(path: str) -> dt.date | None:
    """The date in a note's path (`daily/2026-06-03/x.md`, `2026-06-03.md`), or None."""
    m = _PATH_DATE.search(path)
    if not m:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


_PAST = re.compile(r"\b(?:did|was|were|had|ago|happened|said|told|mentioned|yesterday)\b", re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][\w'-]{2,}")
_ASKING = frozenset(
    "What When Where Which Who Whom Whose Why How Did Does Do Was Were Is Are Has Have Had Can Could "
    "Will Would Should".split()
)


def about_the_past(query: str) -> bool:
    """Whether a question asks about the past ("did", "was", "ago", ...): then a date it names is when it was said."""
    return _PAST.search(query) is not None


def anchor_query(query: str, hint: DateHint) -> str:
    """What dates a relative hint's event: its words and the question's capitalised names ("move Kwame")."""
    names = [w for w in _NAME.findall(query) if w not in _ASKING and w.lower() not in MONTHS]
    return " ".join([hint.anchor, *dict.fromkeys(names)])


def validate_date_boost(value) -> float:
    """A date boost >= 0 (0: off), or ConfigError."""
    from ..core.errors import ConfigError

    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 10:
        raise ConfigError(f"date_boost must be a number from 0 (off) to 10, got {value!r}")
    return float(value)


def anchor_date(hint: DateHint, hits: list[Hit]) -> dt.date | None:
    """The date of the best-ranked dated hit: the anchor event's note, for hits ranked on the anchor's words."""
    for h in hits:
        if (d := note_date(h.chunk.path)) is not None:
            return d
    return None


def with_window(hits: list[Hit], inside: list[Hit]) -> list[Hit]:
    """The ranked hits followed by the window's candidates they lack, each keeping its own fused score (the window
    was fused on its own: its candidates come after, and the date boost sorts them among the rest)."""
    seen = {h.chunk.id for h in hits}
    return hits + [h for h in inside if h.chunk.id not in seen]


def date_rescore(hits: list[Hit], hint: DateHint | None, boost: float, top: int = 50) -> list[Hit]:
    """The first `top` hits re-ranked by fused score (min-max over them) + `boost` for a note dated inside the hint's
    window (kept as `scores["in_dates"]`, 1 or 0); the rest after, in their order. No window, no change."""
    if hint is None or hint.start is None or hint.end is None or boost <= 0 or not hits:  # both ends or none
        return hits
    head, tail = hits[:top], hits[top:]
    low, high = min(h.score for h in head), max(h.score for h in head)
    span = (high - low) or 1.0
    rescored = []
    for h in head:
        d = note_date(h.chunk.path)
        inside = 1.0 if d is not None and hint.start <= d <= hint.end else 0.0
        score = (h.score - low) / span + boost * inside
        rescored.append(h.model_copy(update={"scores": {**h.scores, "in_dates": inside, "score": score}}))
    rescored.sort(key=lambda h: h.score, reverse=True)
    return rescored + tail
