"""The calibration's pace (issue 53, item 3): a calibration's searches share the node with the users' searches, so
they go in small parts, one part at a time, with a pause after each.

Measured before: while a calibration ran, searches took ~2x longer (every probe of a width in one `_msearch`, the
exact scoring queries over every vector among them, kept one search thread busy for seconds). Now at most
`knn_calibration.pace.probes_per_request` probes go in one request, never two requests at once, and after a part
that took t seconds the calibration waits t x (1 - duty) / duty, so it holds the node at most `duty` of the time it
runs (a slower calibration in the background, searches beside it as fast as the pause allows). Pure but for the
injected `sleep` and `clock`: tests/unit/test_calibration_pace.py counts the parts and pauses with a fake port.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from .calibration import RULE

PACE: dict[str, Any] = RULE["pace"]

T = TypeVar("T")


def pause_after(took_s: float, duty: float) -> float:
    """Seconds to wait after a part that took `took_s`, so the calibration keeps the node busy at most `duty` of the
    time (1: no pause)."""
    if duty >= 1.0:
        return 0.0
    return max(0.0, took_s) * (1.0 - duty) / max(duty, 1e-3)


async def paced(
    send: Callable[[list[dict]], Awaitable[list[T]]],
    bodies: Sequence[dict],
    per_request: int | None = None,
    duty: float | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[T]:
    """The answers of `bodies`, in order, sent by `send` in parts of at most `per_request` (default: the rule's), one
    part at a time, with `pause_after` the part's time between parts (none after the last)."""
    size = max(1, PACE["probes_per_request"] if per_request is None else per_request)
    duty = PACE["duty"] if duty is None else duty
    out: list[T] = []
    pause = 0.0
    for start in range(0, len(bodies), size):
        if start:
            await sleep(pause)
        began = clock()
        out += await send(list(bodies[start : start + size]))
        pause = pause_after(clock() - began, duty)
    return out


__all__ = ["PACE", "pause_after", "paced"]
