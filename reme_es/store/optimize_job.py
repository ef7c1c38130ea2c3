"""The optimize job (issue 53): after a large load, merge the chunks index down to the segment count search wants,
then calibrate the k-NN width again on the merged graph.

A load leaves the chunks index in many segments (a tiered merge policy keeps ~10-14 after 100k entries); a k-NN
search walks one HNSW graph per segment, so one large graph answers with fewer candidates for the same recall on data
with structure (docs/benchmarks.md, "Where the vector milliseconds go"). The merge changes the graphs the recorded
width was measured on, so the width is measured again after it. The rule is engine_settings.json `optimize_job`:
`optimize_due` is pure, `optimize_for_search` does the I/O through the store's own methods (`MemoryStore.optimize`,
`calibrate`). ReMe's file store runs it in the background once idle (`reme_es.reme.optimize`) and in its
`optimize_index` step; `reme-es optimize` runs it at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ..core.engine_settings import SETTINGS
from ..core.errors import AuthError, CapabilityError, ConnectionFailed

if TYPE_CHECKING:
    from . import MemoryStore

RULE: dict[str, Any] = SETTINGS["optimize_job"]

log = logging.getLogger(__name__)


def optimize_due(docs: int, segments: int, rule: dict[str, Any] | None = None, width: int | None = None) -> bool:
    """Whether the chunks index is worth merging for search: a large load left it with at least `min_docs` entries in
    at least `min_segments` segments, more than the `segments` search wants, and the width calibrated on those
    segments (`width`, None while none is recorded) is at most `max_width`: above it the vectors have no structure a
    merged graph could use, and one graph needs a wider, slower search than the segments did."""
    rule = RULE if rule is None else rule
    structured = width is None or width <= rule["max_width"]
    return structured and docs >= rule["min_docs"] and segments >= max(rule["min_segments"], rule["segments"] + 1)


async def _chunk_stats(store: MemoryStore) -> dict:
    return (await store.admin.stats())["chunks"]


async def _wait_merged(store: MemoryStore, wanted: int) -> None:
    """Wait until the node has no merge running on the chunks index and it holds at most `wanted` segments (a force
    merge the request's deadline cut short goes on on the node), polling every `poll_s`, at most `max_wait_s`."""
    waited = 0.0
    while waited < RULE["max_wait_s"]:
        if not await store.admin.chunks_merging():
            await store.refresh()
            if (await _chunk_stats(store))["segments"] <= wanted:
                return
        await asyncio.sleep(RULE["poll_s"])
        waited += RULE["poll_s"]


async def optimize_for_search(
    store: MemoryStore,
    *,
    segments: int | None = None,
    force: bool = False,
    calibrate: bool = True,
) -> dict | None:
    """Merge the set's indices down to `segments` (default: the rule's) when the engine's merged graphs search faster
    (`Capabilities.knn_merge_pays`) and `optimize_due` holds (always with `force`), then, with `calibrate`, measure
    the k-NN width on the merged graph where the index has one (where the merge left the segment count as it was:
    when `calibration_due`).

    Returns None when not due, else `MemoryStore.optimize`'s answer (merged, before, after) with `seconds` (the merge's
    wall time) and `knn_width` (the record measured after it, or None). None also where the engine has no force merge
    or the credentials may not read index stats."""
    wanted = RULE["segments"] if segments is None else segments
    try:
        before = await _chunk_stats(store)
    except (CapabilityError, AuthError) as exc:
        log.info("optimize job skipped: %s", exc)
        return None
    if not force and not (store.caps is not None and store.caps.knn_merge_pays):
        log.info("optimize job skipped: on this engine a merged graph does not search faster (optimize_job.about)")
        return None
    record = store.admin.calibration
    width = record.width if record is not None else None
    if not force and not optimize_due(before["docs"], before["segments"], {**RULE, "segments": wanted}, width):
        return None
    started = time.monotonic()
    try:
        result = await store.admin.optimize(max_segments=wanted, calibrate=False)
    except AuthError as exc:  # a role without the force-merge right: the segments stay as they are
        log.info("optimize job skipped: %s", exc)
        return None
    except ConnectionFailed as exc:
        if exc.kind != "timeout":
            raise
        # the request's deadline passed, the node merges on
        log.info("force merge of %s still running (%s): waiting for it", store.admin.chunks_index, exc)
        await _wait_merged(store, wanted)
        result = {"merged": ["chunks"], "before": {"chunks": before}, "after": await store.admin.stats()}
    result["seconds"] = round(time.monotonic() - started, 2)
    result["knn_width"] = None
    if calibrate and store.admin.calibratable():  # on the merged graph; where the merge changed nothing, when due
        changed = result["after"]["chunks"]["segments"] != before["segments"]
        record = await (store.admin.calibrate() if changed else store.admin.calibrate_if_due())
        result["knn_width"] = record.to_meta() if record is not None else None
    return result


__all__ = ["RULE", "optimize_due", "optimize_for_search"]
