"""The k-NN width measured on the index itself (issue 40): which HNSW width (candidates per segment) gives the recall
target on this data, recorded in the index's `_meta` and read by search.

A width rule fitted to one data shape does not hold on another (docs/benchmarks.md, "k-NN width calibration"). So
stored vectors of the index are sampled and turned into probe queries (`probe_queries`: part of each vector kept,
noise added, since real queries are not stored vectors; a light and a heavy group, as how much of a stored entry a
real query names differs from one use to another), their exact neighbours come from an exact scoring query on the
node, and the approximate k-NN at the callers' depth runs at widths of a ladder until recall@10 reaches the target in
every group (the worst group decides).
The rule and its numbers are shared with Memorie (`engine_settings.json` `knn_calibration`; TypeScript:
`memorie/src/knn-calibration.ts`). Decisions are pure functions here; the request bodies are the dialects'
(`sample_body`, `exact_body`, `knn_body`), and `VectorStore.calibrate` does the I/O through the port
(`timed_searches`).
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.engine_settings import SETTINGS

RULE: dict[str, Any] = SETTINGS["knn_calibration"]
META_KEY: str = RULE["meta_key"]


@dataclass
class Step:
    """One width tried: recall@`at` of the worst probe group and of each, and the median server time of one search
    (ms)."""

    width: int
    recall: float  # the worst probe group's (what the climb compares with the target)
    took_ms: float
    groups: list[float] = field(default_factory=list)  # recall@`at` of each probe group (`knn_calibration.probes`)


@dataclass
class Calibration:
    """A measured width and what it was measured on (the record kept in the index's `_meta`)."""

    width: int
    recall: float
    target: float
    reached: bool
    stopped: str  # "target", "max_width" or "latency_budget"
    depth: int
    at: int
    docs: int
    segments: int
    sample: int
    reference: str  # "exact" (an exact scoring query) or "widest" (the widest k-NN search, no scripts on the node)
    measured_at: str
    seconds: float = 0.0
    requests: int = 0
    steps: list[Step] = field(default_factory=list)
    groups: list[float] = field(default_factory=list)  # each probe group's recall at the chosen width

    def to_meta(self) -> dict:
        """The record as stored in `_meta` (steps included: what each width reached)."""
        out = asdict(self)
        out["steps"] = [[s.width, round(s.recall, 4), round(s.took_ms, 1)] for s in self.steps]
        out["recall"] = round(self.recall, 4)
        out["groups"] = [round(g, 4) for g in self.groups]
        return out

    @classmethod
    def from_meta(cls, meta: dict | None) -> Calibration | None:
        """The record of a mapping's `_meta.reme_es` (None when there is none, or it is not a record of this shape)."""
        raw = (meta or {}).get(META_KEY)
        if not isinstance(raw, dict) or not isinstance(raw.get("width"), int) or raw["width"] < 1:
            return None
        try:
            steps = [Step(int(w), float(r), float(t)) for w, r, t in raw.get("steps", [])]
            fields = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw and k != "steps"}
            return cls(**fields, steps=steps)
        except (TypeError, ValueError):
            return None

    @property
    def per_segment(self) -> float:
        """Entries per segment when measured."""
        return self.docs / max(1, self.segments)

    def width_for(self, k: int, docs: int | None = None, segments: int | None = None) -> int:
        """The width for the `k` nearest: the recorded one (measured for `depth`), scaled by k / depth above it and
        in proportion to the growth of entries per segment since the measurement (when the shape is known: a merge
        into larger segments needs about proportionally more, docs/benchmarks.md; wider only costs time)."""
        width = self.width * max(1.0, k / max(1, self.depth))
        if docs is not None and segments is not None and self.docs > 0:
            grown = (docs / max(1, segments)) / max(1.0, self.per_segment)
            width *= max(1.0, grown)
        return max(k, min(RULE["max_width"], math.ceil(width)))


def calibration_due(record: Calibration | None, docs: int, segments: int) -> bool:
    """Whether the index should be calibrated (again): `knn_calibration.due_rule`."""
    if record is None:
        return docs >= RULE["min_docs"]
    ratio = RULE["recalibrate_ratio"]

    def moved(now: float, then: float) -> bool:
        return max(now, then) >= ratio * max(min(now, then), 1e-9)

    return moved(docs, record.docs) or moved(docs / max(1, segments), record.per_segment)


def probe_queries(
    vectors: Sequence[Sequence[float]], seed: int | None = None, groups: Sequence[dict] | None = None
) -> list[list[float]]:
    """Probe queries from stored vectors, dealt in turn to the groups of `knn_calibration.probes` (vector i to group
    i mod groups): each coordinate kept with probability 1 - the group's dropout, then Gaussian noise of the group's
    `noise` x the vector's norm spread over the coordinates. A light group (a query naming half of a memory) and a
    heavy one (a few words of it): which of them is harder depends on the data, so each must reach the target.
    `groups` other than the rule's: for measuring probe sets."""
    rng = random.Random(RULE["seed"] if seed is None else seed)
    groups = RULE["probes"] if groups is None else groups
    out = []
    for i, vec in enumerate(vectors):
        group = groups[i % len(groups)]
        keep = 1.0 - group["dropout"]
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        sigma = group["noise"] * norm / math.sqrt(max(1, len(vec)))
        out.append([(x if rng.random() < keep else 0.0) + rng.gauss(0.0, sigma) for x in vec])
    return out


def group_recalls(recalls: Sequence[float], groups: int) -> tuple[float, list[float]]:
    """The mean recall of each group of queries (query i in group i mod `groups`, as `probe_queries` deals them) and
    the worst of them, which is what must reach the target (the callers' own queries: one group)."""
    means = []
    for g in range(max(1, groups)):
        mine = recalls[g :: max(1, groups)]
        if mine:
            means.append(sum(mine) / len(mine))
    return (min(means) if means else 1.0), means


def recall_at(approx_ids: Sequence[str], exact: Sequence[tuple[str, float]], at: int) -> float:
    """Share of the exact top `at` found in the approximate top `at`; entries tied with the `at`-th exact score count
    as found (equal vectors are interchangeable)."""
    if not exact:
        return 1.0
    n = min(at, len(exact))
    floor = exact[n - 1][1] - 1e-6 * max(1.0, abs(exact[n - 1][1]))
    good = {doc for doc, score in exact if score >= floor}
    return min(n, sum(1 for doc in approx_ids[:at] if doc in good)) / n


async def climb(
    widths: Sequence[int],
    measure: Callable[[int], Awaitable[Step]],
    target: float,
    budget_ms: float | None,
) -> tuple[Step, str, list[Step]]:
    """Try `widths` in order until one reaches `target` ("target"); a width whose median took passes `budget_ms`
    stops the climb ("latency_budget"), as does the end of the ladder ("max_width"). Returns the chosen step (the
    first reaching the target, else the best recall within the budget), why the climb stopped, and every step."""
    steps: list[Step] = []
    for width in widths:
        step = await measure(width)
        if budget_ms is not None and step.took_ms > budget_ms and steps:
            steps.append(step)
            return max(steps[:-1], key=lambda s: s.recall), "latency_budget", steps
        steps.append(step)
        if step.recall >= target:
            return step, "target", steps
        if budget_ms is not None and step.took_ms > budget_ms:
            return step, "latency_budget", steps
    best = max(steps, key=lambda s: (s.recall, -s.width))
    return best, "max_width", steps


def ladder(depth: int, max_width: int | None = None) -> list[int]:
    """The widths to try for the callers' depth (none below it: the engines need width >= k)."""
    top = RULE["max_width"] if max_width is None else max_width
    widths = [w for w in RULE["widths"] if depth <= w <= top]
    return widths or [max(depth, min(top, RULE["max_width"]))]


def now_iso() -> str:
    """The time of a measurement, UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def median_took(took_ms: Sequence[float]) -> float:
    """The median server time of a step's searches (ms)."""
    return float(statistics.median(took_ms)) if took_ms else 0.0


__all__ = [
    "META_KEY",
    "RULE",
    "Calibration",
    "Step",
    "calibration_due",
    "climb",
    "group_recalls",
    "ladder",
    "median_took",
    "now_iso",
    "probe_queries",
    "recall_at",
]
