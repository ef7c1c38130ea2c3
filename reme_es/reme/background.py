"""Background tasks of the file store (calibration, backfill, refresh): how one is stopped."""

from __future__ import annotations

import asyncio

# chunks indices the optimize job merges now in this process (`optimize.py`): it calibrates the width itself after the
# merge, so the background width calibration (`width.py`) does not start beside it
OPTIMIZING: set[str] = set()


async def cancel(task: asyncio.Task | None) -> Exception | None:
    """Cancel `task` and wait until it has ended; what it raised besides the cancellation (for the caller to log).

    A task that had already ended is awaited too, so an error it ended with is returned rather than lost."""
    if task is None:
        return None
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return None
    except Exception as exc:  # noqa: BLE001 - handed to the caller, which logs it
        return exc
    return None
