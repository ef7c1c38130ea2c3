"""The second-round options of bench/quality/heldout.py, each applied to the drop-in's fused candidates of one question.

Every option starts from the same pool: `SearchStore.ranked` at the drop-in's depth (50 per branch, z-score 0.55,
feedback, collapse), fetched with its text: what `es_search_step` ranks before it cuts to the limit. An option
re-ranks that pool or adds to it, and says how many more round trips it costs:
  proximity b, top N     the existing term-proximity re-score of the pool's head (fusion.proximity_rescore): 0 trips
  late interaction w, N  MaxSim of MiniLM's token vectors (question tokens against each candidate's), min-max fused
                         with the pool's score at weight w: 0 trips, but the N candidates are run through the encoder
                         at search time (measured apart: `late_cost`)
  neighbours k           the turns just before and after each of the top k hits in their note, placed right after
                         that hit: 1 trip (one range query over the hits' notes)
  entities w             a second keyword round seeded by the capitalised names of the top 3 hits that the question
                         does not hold, z-score fused into the pool at weight w: 1 trip
  dates, past questions b  the store's `date_boost` (SearchStore.by_dates): the date window of a question about the
                         past ("what did ... last May?"; reme_es.store.dates) adds its own candidates (both branches
                         inside it) and lifts hits dated inside by b; a window relative to an event ("two weeks after
                         the move") is dated first by a keyword search of the event's words and the question's names:
                         1 trip when a date is named, 2 for a relative one, none otherwise
  dates, every question b  the same for every question that names a date, whatever its tense (the boost before
                         this round: "what is happening on 21 June?" lifts the notes of June 20-22)
  relation weight w      the pool fused again at vector weight w for a question naming someone through a named
                         person ("Kwame's stepsister"; reme_es.store.fusion.names_relation), the rest as it was: 0 trips
                         in a store (the bench searches again)
"""

from __future__ import annotations

import datetime as dt
import re
import time

import numpy as np

from reme_es.core.models import Hit
from reme_es.store.fusion import convex

GRID = {
    "proximity": [(b, n) for b in (0.1, 0.3, 0.5) for n in (20, 50)],
    "late interaction": [(w, n) for w in (0.2, 0.35, 0.5) for n in (20, 50)],
    "neighbours": [1, 2, 3],
    "entities": [0.15, 0.3, 0.5],
    "dates, every question": [0.1, 0.2, 0.3, 0.6, 1.0],
    "dates, past questions": [0.1, 0.2, 0.3, 0.6, 1.0],
    "relation weight": [0.45, 0.3, 0.2, 0.1, 0.0],
}
TRIPS = {
    "proximity": 0,
    "late interaction": 0,
    "neighbours": 1,
    "entities": 1,
    "dates, every question": "1-2 when dated, else 0",
    "dates, past questions": "1-2 when a past question is dated",
    "relation weight": 0,
}
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_SPEAKER = re.compile(r"^\s*-\s*(?:\[\d\d:\d\d\]\s*)?(?:\*\*)?([^:*]+?)(?:\*\*)?:")
_COMMON = frozenset(
    "The This That What When Where Which Who How Did Does Still Back Home Finally Spent Hosted "
    "Picked Booked Signed Bumped Ran Saw Got Just Honestly Good Loved Reminder Running Can Has "
    "Ugh Sorry Let Long Sounds Pretty Anything Work Traffic Two Ha No Yes Mum Dad".split()
)


def label(family: str, param) -> str:
    """An option's row name."""
    if family in ("proximity", "late interaction"):
        return f"{family} {param[0]}, top {param[1]}"
    return f"{family} {param}"


class Encoder:
    """MiniLM's token vectors (the shipped int8 model, one thread), cached per text for the bench's speed."""

    def __init__(self):
        from reme_es.embeddings.minilm import LocalMiniLM

        self.model = LocalMiniLM(max_length=128)
        self.cache: dict[str, np.ndarray] = {}

    def tokens(self, texts: list[str], cache: bool = True) -> list[np.ndarray]:
        """Unit token vectors (no padding, no [CLS]/[SEP]) of each text."""
        todo = [t for t in dict.fromkeys(texts) if not cache or t not in self.cache]
        if todo:
            m = self.model
            m._load()
            enc = m._tokenizer.encode_batch(todo)
            ids = np.asarray([e.ids for e in enc], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = m._session.run(None, {k: v for k, v in feeds.items() if k in m._input_names})[0]
            for t, h, k in zip(todo, hidden, mask):
                v = h[1 : max(2, int(k.sum()) - 1)]
                self.cache[t] = v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)
        return [self.cache[t] for t in texts]


def maxsim(q: np.ndarray, d: np.ndarray) -> float:
    """Mean over the question's tokens of their best cosine with the candidate's tokens."""
    return float((q @ d.T).max(axis=1).mean())


def late_rescore(hits: list[Hit], query: str, encoder: Encoder, weight: float, top: int) -> list[Hit]:
    """The head re-ranked by min-max(fused) + weight x min-max(MaxSim)."""
    head, tail = hits[:top], hits[top:]
    if not head:
        return hits
    q = encoder.tokens([query])[0]
    sims = [maxsim(q, d) for d in encoder.tokens([h.chunk.text for h in head])]
    lo, hi = min(sims), max(sims)
    f_lo, f_hi = min(h.score for h in head), max(h.score for h in head)
    scored = [
        ((h.score - f_lo) / ((f_hi - f_lo) or 1) + weight * (s - lo) / ((hi - lo) or 1), h) for h, s in zip(head, sims)
    ]
    return [h for _, h in sorted(scored, key=lambda x: x[0], reverse=True)] + tail


def late_cost(encoder: Encoder, queries: list[str], pools: list[list[Hit]], top: int, n: int = 30) -> float:
    """Median ms to encode a question and its top candidates at search time (no cache), over `n` questions."""
    times = []
    for q, pool in list(zip(queries, pools))[:n]:
        t0 = time.perf_counter()
        encoder.tokens([q] + [h.chunk.text for h in pool[:top]], cache=False)
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times)) if times else float("nan")


def with_neighbours(hits: list[Hit], k: int, lines: dict[str, dict[int, str]]) -> list[str]:
    """Chunk ids: each of the top k hits followed by the turns just before and after it in its note."""
    out: list[str] = []
    for i, h in enumerate(hits):
        out.append(h.chunk.id)
        if i < k:
            path, _, line = h.chunk.id.rpartition("#")
            note = lines.get(path, {})
            out += [f"{path}#{n}" for n in (int(line) - 1, int(line) + 1) if n in note]
    return list(dict.fromkeys(out))


def names_in(hits: list[Hit], query: str) -> list[str]:
    """Capitalised names in the hits' texts (speaker labels and sentence openers left out) the query lacks."""
    asked = set(re.findall(r"\w+", query))
    found: list[str] = []
    for h in hits:
        m = _SPEAKER.match(h.chunk.text)
        speaker = set(m[1].split()) if m else set()
        found += [w for w in _NAME.findall(h.chunk.text) if w not in asked | speaker | _COMMON]
    return list(dict.fromkeys(found))


async def entity_round(searches, query: str, pool: list[Hit], weight: float) -> list[Hit]:
    """The pool z-score fused with a keyword round on the top 3 hits' new names (and the question)."""
    names = names_in(pool[:3], query)
    if not names:
        return pool
    second = await searches.keyword(" ".join(names) + " " + query, 50)
    return convex(pool, second, 1.0 - weight, "zscore")


async def dated(
    searches, query: str, vector, pool: list[Hit], boost: float, today: dt.date, every: bool = False
) -> list[Hit]:
    """The pool re-ranked by the store's date boost (SearchStore.by_dates: the window's own candidates added; one
    round trip when a past question names a date, two when it counts from an event); `every`: whatever the tense."""
    from reme_es.store import search

    ix = searches.indices
    saved = ix.date_boost, ix.today, search.about_the_past
    ix.date_boost, ix.today = boost, today
    if every:
        search.about_the_past = lambda q: True
    try:
        return await searches.by_dates(query, vector, pool, ix.filter(None), len(pool))
    finally:
        ix.date_boost, ix.today, search.about_the_past = saved
