"""What each contract case needs from a store, read from its capabilities: a case whose need is not met is
skipped with the reason (engine, version, what is missing), never failed and never silently passed.

    require(store, "native_hybrid")

Needs are named here once; a dialect author sees in one table what their engine must offer for each case.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..store import MemoryStore

NEEDS: dict[str, tuple[Callable[[MemoryStore], bool], str]] = {
    "vectors": (lambda s: bool(s.caps and s.caps.knn and s.dims), "k-NN vectors"),
    "native_hybrid": (lambda s: s.native_hybrid_available(), "native hybrid search for the configured fusion"),
    "search_pipeline": (
        lambda s: s.native_hybrid_available() and s.dialect.uses_search_pipeline,
        "a hybrid search pipeline",
    ),
    "refresh_point": (
        lambda s: not s.dialect.refreshes_itself,
        "explicit refreshes (searches that see only what existed at the last refresh)",
    ),
    "force_merge": (lambda s: not s.dialect.merges_itself, "force-merge and segment statistics"),
}


def unmet(store: MemoryStore, *needs: str) -> list[str]:
    """The needs of `needs` this store does not meet (unknown names raise)."""
    missing = [n for n in needs if n not in NEEDS]
    if missing:
        raise KeyError(f"unknown contract needs {missing}; known: {', '.join(NEEDS)}")
    return [NEEDS[n][1] for n in needs if not NEEDS[n][0](store)]


def require(store: MemoryStore, *needs: str) -> None:
    """Skip the running case, saying why, when the store lacks one of `needs`."""
    if lacking := unmet(store, *needs):
        caps = store.caps
        engine = f"{caps.engine} {caps.version}" if caps else store.dialect.engine
        pytest.skip(f"{engine} lacks {'; '.join(lacking)}")
