"""What every contract module shares: the asyncio mark each class carries, and small readers of hits."""

from __future__ import annotations

import pytest

ASYNC = [pytest.mark.asyncio]


def ids(hits) -> list[str]:
    """Chunk ids of hits, in order."""
    return [h.chunk.id for h in hits]


def paths(hits) -> set[str]:
    """Paths of hits."""
    return {h.chunk.path for h in hits}
