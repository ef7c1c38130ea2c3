"""Client-side fusion of ranked lists: pure functions, no I/O.

`weighted_rrf` is ReMe's `SearchStep._rrf_merge`: score = w_v / (k + rank_v) + (1 - w_v) / (k + rank_k), ranks
from 1, hits found by one branch only keep that branch's contribution, ties keep first-seen order (vector
list first). Given the same two lists it produces the same order and scores as ReMe.
"""

from __future__ import annotations

import math
import re
import statistics

from ..core.checks import FUSION_METHODS
from ..core.models import RRF_K, Hit


def weighted_rrf(vector: list[Hit], keyword: list[Hit], vector_weight: float, k: int = RRF_K) -> list[Hit]:
    """Fuse a vector and a keyword ranking with ReMe's weighted reciprocal rank fusion."""
    keyword_weight = 1.0 - vector_weight
    merged: dict[str, Hit] = {}
    for rank, hit in enumerate(vector, start=1):
        scores = {**hit.scores, "vector": hit.scores.get("vector", hit.score), "score": vector_weight / (k + rank)}
        merged[hit.chunk.id] = hit.model_copy(update={"scores": scores})
    for rank, hit in enumerate(keyword, start=1):
        contribution = keyword_weight / (k + rank)
        existing = merged.get(hit.chunk.id)
        keyword_score = hit.scores.get("keyword", hit.score)
        if existing is not None:
            existing.scores = {
                **existing.scores,
                "keyword": keyword_score,
                "score": existing.scores["score"] + contribution,
            }
        else:
            scores = {**hit.scores, "keyword": keyword_score, "score": contribution}
            merged[hit.chunk.id] = hit.model_copy(update={"scores": scores})
    return sorted(merged.values(), key=lambda h: h.score, reverse=True)


MAX_CANDIDATES = 200  # ReMe's cap on each branch's candidates


def candidate_depth(limit: int, multiplier: int, cap: int = MAX_CANDIDATES) -> int:
    """How many candidates each branch fetches, as ReMe does: min(cap, limit x multiplier)."""
    return max(limit, min(cap, limit * multiplier))


def collapse_repeats(hits: list[Hit]) -> list[Hit]:
    """The ranking with each repeated text kept once: a hit whose chunk text hash a better-ranked hit already has
    is dropped, and the kept hit counts the copies dropped in `scores["repeats"]`. Copies that tie on score (the
    same text scores the same) are shown by the one with the latest path, so a daily note's copy is its newest.
    Hits without a hash all stay.

    A line said again in many notes ("Long day, talk tomorrow?") has the same vector and nearly the same BM25
    score in each, so without this its copies fill the top of a ranking and push distinct memories out."""
    kept: dict[str, int] = {}  # hash -> position in out
    copied: set[int] = set()  # positions whose hit is already a copy (the input hits are never changed)
    out: list[Hit] = []
    for hit in hits:
        key = hit.chunk.hash
        if not key:
            out.append(hit)
        elif key in kept:
            at = kept[key]
            if at not in copied:
                out[at] = out[at].model_copy(update={"scores": dict(out[at].scores)})
                copied.add(at)
            first = out[at]
            first.scores = {**first.scores, "repeats": first.scores.get("repeats", 0.0) + 1.0}
            if hit.score == first.score and hit.chunk.path > first.chunk.path:
                first.chunk = hit.chunk
        else:
            kept[key] = len(out)
            out.append(hit)
    return out


def apply_min_score(hits: list[Hit], min_score: float) -> list[Hit]:
    """Drop hits whose fused score is below `min_score` (0 keeps all)."""
    if min_score <= 0:
        return hits
    return [h for h in hits if h.score >= min_score]


# ------------------------------------------------------------------------------ convex combination, proximity

# The proximity re-score looks at the fused head's top PROXIMITY_TOP hits; it costs one more request (their texts),
# so it is opt-in (`SearchOptions.proximity`).
PROXIMITY_TOP = 20
# Pseudo-relevance feedback (`SearchOptions.feedback`): a second pass of both branches, each expanded by its own top
# hit(s): the k-NN query moved toward the top vector hit (Rocchio, FEEDBACK_BETA), the BM25 query OR-ed with a
# more_like_this of the top keyword hit (FEEDBACK_TERMS terms at FEEDBACK_BOOST). docs/decisions.md says how each
# value was chosen.
FEEDBACK_BETA, FEEDBACK_TERMS, FEEDBACK_BOOST = 0.2, 10, 0.5
# A hit feeds back only with at least this many terms (`terms`): a dialog turn or a one-line note is too short to
# expand a query from.
FEEDBACK_MIN_TERMS = 30
# When the copies leave fewer hits than asked for, the branches are asked again deeper, up to this many each.
COLLAPSE_MAX_DEPTH = 1000


def _normalised(hits: list[Hit], method: str) -> dict[str, float]:
    """Each hit's score mapped to a common scale: min-max to [0, 1], or z-scores (a list of one scores 1 / 0)."""
    scores = [h.score for h in hits]
    if not scores:
        return {}
    if method == "minmax":
        low, high = min(scores), max(scores)
        span = high - low
        return {h.chunk.id: (h.score - low) / span if span > 0 else 1.0 for h in hits}
    mean = sum(scores) / len(scores)
    sd = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
    return {h.chunk.id: (h.score - mean) / sd if sd > 0 else 0.0 for h in hits}


def convex(vector: list[Hit], keyword: list[Hit], vector_weight: float, method: str = "minmax") -> list[Hit]:
    """Fuse by a weighted sum of per-branch normalised scores (min-max or z-score); a hit one branch missed gets
    that branch's lowest normalised score (0 under min-max, as OpenSearch's normalization processor does)."""
    if method not in ("minmax", "zscore"):
        raise ValueError(f"convex fusion normalises by 'minmax' or 'zscore', got {method!r}")
    norm_v, norm_k = _normalised(vector, method), _normalised(keyword, method)
    floor_v, floor_k = min(norm_v.values(), default=0.0), min(norm_k.values(), default=0.0)
    first: dict[str, Hit] = {}  # the hit each chunk is shown by (its first branch's), and its scores, copied once
    scores: dict[str, dict[str, float]] = {}
    for branch, hits in (("vector", vector), ("keyword", keyword)):
        for hit in hits:
            cid = hit.chunk.id
            if cid not in first:
                first[cid], scores[cid] = hit, dict(hit.scores)
            scores[cid][branch] = hit.scores.get(branch, hit.score)
    out = []
    for cid, hit in first.items():
        fused = vector_weight * norm_v.get(cid, floor_v) + (1.0 - vector_weight) * norm_k.get(cid, floor_k)
        scores[cid]["score"] = fused
        out.append(hit.model_copy(update={"scores": scores[cid]}))
    return sorted(out, key=lambda h: h.score, reverse=True)


def fuse(vector: list[Hit], keyword: list[Hit], method: str, vector_weight: float) -> list[Hit]:
    """Fuse two rankings by `method`: 'rrf' (ReMe's weighted RRF), 'minmax' or 'zscore' (convex combination)."""
    if method == "rrf":
        return weighted_rrf(vector, keyword, vector_weight)
    if method in ("minmax", "zscore"):
        return convex(vector, keyword, vector_weight, method)
    raise ValueError(f"fusion must be one of {', '.join(FUSION_METHODS)}, got {method!r}")


# A person named through another ("Kwame's stepsister", "Maya's optician"): a capitalised possessive that is not a
# question word or pronoun ("What's", "It's").
_POSSESSIVE = re.compile(r"\b([A-Z][\w-]*)['\u2019]s\b")
_NOT_NAMES = frozenset(
    {"It", "What", "Who", "Where", "When", "How", "Why", "That", "There", "Here", "Let", "He", "She", "This", "Today"}
)


def names_relation(query: str) -> bool:
    """Whether a question names someone or something through a named person ("Kwame's stepsister")."""
    return any(m[1] not in _NOT_NAMES for m in _POSSESSIVE.finditer(query))


def query_weight(query: str, vector_weight: float, relation_weight: float | None) -> float:
    """The vector weight client fusion uses for a question: `relation_weight` for one that names someone through a
    named person (`names_relation`), whose answer is often two turns that share only the words (the relation said
    on one day, a fact about that person on another), which BM25 finds and the question's vector does not;
    `vector_weight` for any other, or when `relation_weight` is None."""
    return relation_weight if relation_weight is not None and names_relation(query) else vector_weight


_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_STOP = frozenset(
    "a an and are as at be but by did do does for from had has have he her his how i in is it its me my of on or our "
    "she so that the their them they this to was we were what when where which who why will with you your".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased word tokens without English stop words; each CJK character is a token of its own."""
    out = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            out.extend(_CJK.findall(word))
        elif word not in _STOP:
            out.append(word)
    return out


def proximity(query_terms: list[str], text: str, window: int = 4) -> float:
    """How closely `text` holds the query's terms, in [0, 1]: the share of query terms it contains, averaged with
    the share of consecutive query-term pairs found within `window` tokens of each other."""
    if not query_terms:
        return 0.0
    tokens = terms(text)
    positions: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        positions.setdefault(t, []).append(i)
    coverage = sum(1 for t in set(query_terms) if t in positions) / len(set(query_terms))
    pairs = list(zip(query_terms, query_terms[1:]))
    if not pairs:
        return coverage
    near = sum(
        1 for a, b in pairs if any(abs(i - j) <= window for i in positions.get(a, ()) for j in positions.get(b, ()))
    )
    return (coverage + near / len(pairs)) / 2


def proximity_rescore(hits: list[Hit], query: str, top: int = 20, boost: float = 0.2) -> list[Hit]:
    """Re-rank the first `top` fused hits by fused score (min-max over those) + `boost` x term proximity, which
    becomes their score (the proximity is kept as `scores["proximity"]`); the rest keep their order below. Hits need
    their text."""
    head, tail = hits[:top], hits[top:]
    if not head or boost <= 0:
        return hits
    q = terms(query)
    low, high = min(h.score for h in head), max(h.score for h in head)
    span = (high - low) or 1.0
    rescored = []
    for h in head:
        prox = proximity(q, h.chunk.text)
        base = (h.score - low) / span
        score = base + boost * prox
        rescored.append((score, h.model_copy(update={"scores": {**h.scores, "proximity": prox, "score": score}})))
    rescored.sort(key=lambda x: x[0], reverse=True)
    return [h for _, h in rescored] + tail


_CAPITALISED = re.compile(r"\b[^\W\d_][\w-]*")
_QUESTION_WORDS = frozenset(
    "what when where which who whom whose why how did does do was were is are has have had can "
    "could will would should i in on at the a an and or if".split()
)


def query_names(query: str) -> set[str]:
    """The capitalised words of a question, lower-cased, possessives cut ("Caroline's" -> "caroline"), question words
    and "I" left out: who the question may name."""
    return {
        w.lower()
        for w in _CAPITALISED.findall(query.replace("\u2019", "'"))
        if w[0].isupper() and w.lower() not in _QUESTION_WORDS
    }


# Who a person is named through ("Rafa's stepsister", "Melanie's kids"): the question is about someone else, whom any
# speaker may talk about.
_RELATIVE = re.compile(
    r"\b([^\W\d_][\w-]*)['\u2019]s\s+(?:\w+\s+)?(?:mother|father|mom|mum|dad|parents?|(?:step|half-?)?(?:sister|brother)s?|"
    r"siblings?|sons?|daughters?|kids?|child(?:ren)?|wife|husband|partner|(?:boy|girl)friend|friends?|roommates?|"
    r"colleagues?|co-?workers?|boss|neighbou?rs?|cousins?|aunt|uncle|niece|nephew|grand\w+|god\w+|family|in-laws?)\b",
    re.IGNORECASE,
)


def speaker_rescore(hits: list[Hit], query: str, boost: float) -> list[Hit]:
    """The fused hits re-ranked by score (min-max over them) + `boost` for each hit said by the one speaker the
    question names (its speaker's name, or its first word, among `query_names`; kept as `scores["speaker"]`). A
    question naming no speaker of the hits, or two of them ("How do Jon and Gina both destress?"), or naming someone
    through a speaker ("Rafa's stepsister": `_RELATIVE`), changes nothing."""
    if boost <= 0 or len(hits) < 2:
        return hits
    names = query_names(query) - {m[1].lower() for m in _RELATIVE.finditer(query.replace("\u2019", "'"))}
    named = {s for s in {h.chunk.speaker for h in hits} if s and (s in names or s.split()[0] in names)}
    if len(named) != 1:
        return hits
    (speaker,) = named
    low, high = min(h.score for h in hits), max(h.score for h in hits)
    span = (high - low) or 1.0
    rescored = []
    for h in hits:
        said = 1.0 if h.chunk.speaker == speaker else 0.0
        score = (h.score - low) / span + boost * said
        rescored.append(h.model_copy(update={"scores": {**h.scores, "speaker": said, "score": score}}))
    rescored.sort(key=lambda h: h.score, reverse=True)
    return rescored


# The note boost (`SearchOptions.note_boost`) reads the fused ranking's first NOTE_TOP hits.
NOTE_TOP = 20


def note_rescore(hits: list[Hit], boost: float, top: int = NOTE_TOP) -> list[Hit]:
    """The fused hits re-ranked by score (min-max over all of them) + `boost` x their note's share of the head: the
    sum of the normalised scores of the note's hits among the first `top`, over the best note's sum (kept as
    `scores["note"]`). A dialog turn that answers a question rarely holds all of its words; the turns around it in
    the same note (a session of a conversation, a day's note) often hold the rest, so a hit whose note ranks well as
    a whole is lifted above a lone hit of similar score. 0 (or fewer than two hits) changes nothing."""
    if boost <= 0 or len(hits) < 2:
        return hits
    low, high = min(h.score for h in hits), max(h.score for h in hits)
    span = (high - low) or 1.0
    base = [(h.score - low) / span for h in hits]
    mass: dict[str, float] = {}
    for h, b in zip(hits[:top], base[:top]):
        mass[h.chunk.path] = mass.get(h.chunk.path, 0.0) + b
    best = max(mass.values()) or 1.0
    rescored = []
    for h, b in zip(hits, base):
        share = mass.get(h.chunk.path, 0.0) / best
        score = b + boost * share
        rescored.append(h.model_copy(update={"scores": {**h.scores, "note": share, "score": score}}))
    rescored.sort(key=lambda h: h.score, reverse=True)
    return rescored


def feeds_back(text: str) -> bool:
    """Whether a hit's text is long enough to feed a query back (FEEDBACK_MIN_TERMS terms, stop words left out)."""
    return len(terms(text)) >= FEEDBACK_MIN_TERMS


def rocchio(query: list[float], feedback: list[list[float]], beta: float = FEEDBACK_BETA) -> list[float]:
    """The query vector moved toward its feedback vectors: unit(unit(q) + beta x mean of unit(v)); with no feedback
    (or beta 0) the query itself."""

    def unit(v: list[float]) -> list[float]:
        n = sum(x * x for x in v) ** 0.5
        return [x / n for x in v] if n > 0 else list(v)

    usable = [unit(v) for v in feedback if v and len(v) == len(query)]
    if not usable or beta <= 0:
        return list(query)
    q = unit(query)
    moved = [x + beta * sum(v[i] for v in usable) / len(usable) for i, x in enumerate(q)]
    return unit(moved)


def question_rescore(hits: list[Hit], factor: float) -> list[Hit]:
    """The ranked hits with the score of each hit that is itself a question (`Chunk.question`) times `factor` (above
    the lowest score, where that is below 0), sorted again (marked `scores["question"]`). In a conversation the
    question asked is found by the words of a question about it, while the answer is in the turn after (whose
    `context` holds the question's words): 11.8% of LoCoMo's evidence turns end with a question mark, against 25.5%
    of all its turns (docs/quality.md)."""
    if factor >= 1 or not any(h.chunk.question for h in hits):
        return hits
    floor = min(0.0, *(h.score for h in hits))  # scores below 0 (z-score fusion) shifted first, so a cut lowers them
    rescored = [
        h.model_copy(update={"scores": {**h.scores, "question": 1.0, "score": floor + (h.score - floor) * factor}})
        if h.chunk.question
        else h
        for h in hits
    ]
    rescored.sort(key=lambda h: h.score, reverse=True)
    return rescored


MIN_LENGTH_FACTOR = 0.1  # the least share of its score a short dialog turn keeps under `turn_length`


def turn_length_rescore(hits: list[Hit], weight: float) -> list[Hit]:
    """The ranked hits with the score of each dialog turn (a hit with a `speaker`) times
    1 + `weight` x ln(its words / the median words of the turns among the hits), at least MIN_LENGTH_FACTOR (above the
    lowest score, where that is below 0), sorted again (the factor kept as `scores["length"]`). In a conversation a
    short turn ("Wow, that's great!") seldom holds what a question asks about: LoCoMo's evidence turns hold 31.6
    words on average, its turns 23.1. Chunks without a speaker (notes, sections, abstracts), and turns written
    before the `words` field, are left as they are: on Cranfield's abstracts the same factor lost nDCG@10
    (docs/quality.md)."""
    turns = [h.chunk.words for h in hits if h.chunk.speaker and h.chunk.words > 0]
    if weight <= 0 or len(turns) < 2:
        return hits
    median = statistics.median(turns)
    floor = min(0.0, *(h.score for h in hits))
    rescored = []
    for h in hits:
        if not (h.chunk.speaker and h.chunk.words > 0):
            rescored.append(h)
            continue
        factor = max(MIN_LENGTH_FACTOR, 1 + weight * math.log(h.chunk.words / median))
        score = floor + (h.score - floor) * factor
        rescored.append(h.model_copy(update={"scores": {**h.scores, "length": factor, "score": score}}))
    rescored.sort(key=lambda h: h.score, reverse=True)
    return rescored
