"""The client stages of bench/quality/locomo_stages.py (step 2): LoCoMo's development half in memory (turns, their
vectors, sentence and token vectors, per-session digests, a BM25 per conversation) and each stage's re-ranking of the
default path's 50 fused candidates. What each stage is: locomo_stages.py's docstring."""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from typing import Any

import numpy as np

from bench.quality import memory_quality as mq

DEPTH, LIMIT = 50, 10
_SENT = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z][a-z']+")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
STOP = set(
    "the a an and or but to of in on at for with is are was were be been being it its this that these those i you he "
    "she we they me my your his her our their them what when where who how why which did do does done have has had "
    "not no yes so just really very too also can could would should will about from as by up out if then than there "
    "here oh wow yeah hey hi thanks thank that's it's i'm you're don't im get got like know think one some all".split()
)


def minmax(xs: list[float]) -> list[float]:
    lo, hi = min(xs), max(xs)
    return [(x - lo) / (hi - lo) if hi > lo else 0.0 for x in xs]


def sentences(text: str) -> list[str]:
    """A turn's sentences (the `Name: ` opening kept on the first); the turn itself when it has one."""
    parts = [s for s in _SENT.split(text) if len(s.split()) >= 2]
    return parts or [text]


class Half:
    """The half's turns with their vectors, sentence vectors and per-session digests, for the client stages."""

    def __init__(self, sets: dict[str, mq.Dataset]):
        self.sets = sets
        self.text = {cid: t for d in sets.values() for cs in d.files.values() for cid, _, t in cs}
        self.path = {cid: p for d in sets.values() for p, cs in d.files.items() for cid, _, _ in cs}
        self.order = {p: [cid for cid, _, _ in cs] for d in sets.values() for p, cs in d.files.items()}
        sents = {cid: sentences(t) for cid, t in self.text.items()}
        mq.embed_all([s for ss in sents.values() for s in ss], side="passage")
        self.sent_vecs = {cid: np.asarray([mq.PASSAGE_VECTORS[s] for s in ss]) for cid, ss in sents.items()}
        self.turn_vec = {cid: np.asarray(mq.PASSAGE_VECTORS[t]) for cid, t in self.text.items()}
        self.digests = {name: self._digests(d) for name, d in sets.items()}
        self.encoder: Any = None
        self.order_of = {n: [c for cs in d.files.values() for c, _, _ in cs] for n, d in sets.items()}
        self.words = {c: [x for x in _WORD.findall(t.lower()) if x not in STOP] for c, t in self.text.items()}
        self.bm25s = {n: BM25({c: self.words[c] for cs in d.files.values() for c, _, _ in cs}) for n, d in sets.items()}
        self.token_vecs: dict[str, np.ndarray] = {}

    def tokens(self, keys: list[str]) -> list[np.ndarray]:
        """MiniLM's unit token vectors of turns (by chunk id) or questions (by text), batches of 64."""
        if self.encoder is None:
            from bench.quality.heldout_options import Encoder

            self.encoder = Encoder()
        todo = [k for k in dict.fromkeys(keys) if k not in self.token_vecs]
        for i in range(0, len(todo), 64):
            part = todo[i : i + 64]
            vecs = self.encoder.tokens([self.text.get(k, k) for k in part], cache=False)
            self.token_vecs.update(zip(part, vecs))
        return [self.token_vecs[k] for k in keys]

    def _digests(self, d: mq.Dataset) -> dict[str, Counter]:
        """Each session's digest as a bag of words: its top 30 TF-IDF terms, its names, its 3 densest sentences."""
        bags = {
            p: Counter(w for _, _, t in cs for w in _WORD.findall(t.lower()) if w not in STOP)
            for p, cs in d.files.items()
        }
        df = Counter(w for bag in bags.values() for w in bag)
        n = len(bags)
        out = {}
        for p, bag in bags.items():
            tfidf = {w: c * math.log(n / df[w]) for w, c in bag.items()}
            terms = [w for w, _ in sorted(tfidf.items(), key=lambda kv: -kv[1])[:30]]
            names = {m.lower() for _, _, t in d.files[p] for m in _NAME.findall(t)}
            ss = [s for _, _, t in d.files[p] for s in sentences(t)]
            dense = sorted(ss, key=lambda s: -sum(tfidf.get(w, 0) for w in _WORD.findall(s.lower())))[:3]
            out[p] = Counter(terms) + Counter(names) + Counter(w for s in dense for w in _WORD.findall(s.lower()))
        return out

    def digest_scores(self, conv: str, q: str) -> dict[str, float]:
        """BM25 (k1 1.2, b 0.75) of the question's words over the conversation's session digests."""
        digests = self.digests[conv]
        n, avg = len(digests), statistics.fmean(sum(b.values()) for b in digests.values())
        words = [w for w in _WORD.findall(q.lower()) if w not in STOP]
        df = Counter(w for b in digests.values() for w in set(b) if w in words)
        out = {}
        for p, b in digests.items():
            size = sum(b.values())
            s = 0.0
            for w in words:
                if b[w]:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    s += idf * b[w] * 2.2 / (b[w] + 1.2 * (0.25 + 0.75 * size / avg))
            out[p] = s
        return out


def maxsim(h: Half, q: np.ndarray, cid: str, ctx: bool) -> float:
    best = float(np.max(h.sent_vecs[cid] @ q))
    if ctx:
        turns = h.order[h.path[cid]]
        i = turns.index(cid)
        for j in (i - 1, i + 1):
            if 0 <= j < len(turns):
                best = max(best, 0.5 * float(np.max(h.sent_vecs[turns[j]] @ q)))
    return best


def rerank(h: Half, conv: str, q: str, cands: list[tuple[str, float]], stage: str, w: float) -> list[str]:
    """The candidates re-ranked by `stage` at weight `w`."""
    ids = [c for c, _ in cands]
    base = minmax([s for _, s in cands]) if cands else []
    qv = np.asarray(mq.VECTORS[q])
    if stage == "late":
        qt = h.tokens([q])[0]
        extra = minmax([float((qt @ d.T).max(axis=1).mean()) for d in h.tokens(ids)])
        new = [b + w * e for b, e in zip(base, extra)]
    elif stage in ("maxsim", "maxsim-ctx"):
        extra = minmax([maxsim(h, qv, c, stage == "maxsim-ctx") for c in ids])
        new = [b + w * e for b, e in zip(base, extra)]
    elif stage.startswith("digest"):
        ds = h.digest_scores(conv, q)
        top = sorted(ds, key=lambda p: -ds[p])[:3]
        hi = max(ds.values()) or 1.0
        if stage == "digest+turns" and top and ds[top[0]] > 0:
            near = sorted(h.order[top[0]], key=lambda c: -float(h.turn_vec[c] @ qv))[:3]
            for c in near:
                if c not in ids:
                    ids.append(c)
                    base.append(0.0)
        new = [b + (w * ds[h.path[c]] / hi if h.path[c] in top else 0.0) for b, c in zip(base, ids)]
    elif stage == "names out":
        new, ids = names_out(h, conv, q, ids, base, w)
    elif stage == "rm3 session":
        new, ids = rm3_session(h, conv, q, ids, base, w)
    elif stage == "session lift":
        best: dict[str, list[float]] = {}
        for c, b in zip(ids, base):
            best.setdefault(h.path[c], []).append(b)
        new = []
        for c, b in zip(ids, base):
            others = sorted(best[h.path[c]], reverse=True)
            other = (
                others[1] if others and others[0] == b and len(others) > 1 else (others[0] if others[0] != b else 0.0)
            )
            new.append(b + w * other)
    else:
        raise ValueError(stage)
    return [c for _, c in sorted(zip(new, ids), key=lambda t: -t[0])]


def without_names(h: Half, conv: str, q: str) -> str:
    """The question without the conversation's speakers' names (and their possessive `'s`)."""
    names = {n for c in h.order_of[conv] for n in [h.text[c].split(":", 1)[0]]}
    pattern = r"\b(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?:'s)?\b\s*"
    return re.sub(pattern, "", q).strip()


def names_out(h: Half, conv: str, q: str, ids: list[str], base: list[float], w: float):
    """A second k-NN round with the question's vector made without the speakers' names (what the question asks
    about, not who: "What video games does Nate play?" -> "What video games does play?"), exact cosine over the
    conversation's turns (simulated); its top 20 join the candidates and every candidate gets w x its min-max cosine."""
    stripped = without_names(h, conv, q)
    if stripped == q:
        return base, ids
    qv = np.asarray(mq.VECTORS[stripped])
    turns = h.order_of[conv]
    cos = {c: float(h.turn_vec[c] @ qv) for c in turns}
    top = sorted(turns, key=lambda c: -cos[c])[:DEPTH]
    lo, hi = cos[top[-1]], cos[top[0]]
    ids, base = list(ids), list(base)
    for c in top[:20]:
        if c not in ids:
            ids.append(c)
            base.append(0.0)
    return [b + w * max(0.0, (cos[c] - lo) / ((hi - lo) or 1)) for c, b in zip(ids, base)], ids


def rm3_session(h: Half, conv: str, q: str, ids: list[str], base: list[float], w: float):
    """Feedback from the top session only: the 10 terms of highest TF-IDF in the top 10's best session (by the sum of
    its hits' normalised scores) that the question lacks, added at half weight to the question's words; BM25 of that
    over every turn of the conversation (a second keyword round, simulated); its top 20 join the candidates and every
    candidate gets w x its normalised score."""
    mass: dict[str, float] = {}
    for c, b in zip(ids[:LIMIT], base[:LIMIT]):
        mass[h.path[c]] = mass.get(h.path[c], 0.0) + b
    if not mass:
        return base, ids
    top = max(mass, key=lambda p: mass[p])
    bm = h.bm25s[conv]
    qwords = [x for x in _WORD.findall(q.lower()) if x not in STOP]
    bag = Counter(x for c in h.order[top] for x in h.words[c])
    terms = sorted((x for x in bag if x not in qwords), key=lambda x: -bag[x] * bm.idf(x))[:10]
    scores = bm.scores({**{x: 1.0 for x in qwords}, **{x: 0.5 for x in terms}})
    hi = max(scores.values()) or 1.0
    ids = list(ids)
    base = list(base)
    for c in sorted(scores, key=lambda c: -scores[c])[:20]:
        if c not in ids:
            ids.append(c)
            base.append(0.0)
    return [b + w * scores.get(c, 0.0) / hi for c, b in zip(ids, base)], ids


class BM25:
    """BM25 (k1 1.2, b 0.75) over a conversation's turns: lower-cased words, stop words out, no stemming."""

    def __init__(self, docs: dict[str, list[str]]):
        self.docs = {c: Counter(ws) for c, ws in docs.items()}
        self.len = {c: len(ws) for c, ws in docs.items()}
        self.avg = statistics.fmean(self.len.values())
        self.df = Counter(x for ws in self.docs.values() for x in ws)
        self.n = len(docs)

    def idf(self, x: str) -> float:
        return math.log(1 + (self.n - self.df[x] + 0.5) / (self.df[x] + 0.5))

    def scores(self, query: dict[str, float]) -> dict[str, float]:
        out = {}
        for c, tf in self.docs.items():
            s = sum(
                qw * self.idf(x) * tf[x] * 2.2 / (tf[x] + 1.2 * (0.25 + 0.75 * self.len[c] / self.avg))
                for x, qw in query.items()
                if tf[x]
            )
            if s:
                out[c] = s
        return out
