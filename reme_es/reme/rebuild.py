"""ReMe's `reindex(scope)` on reme-es: derived state rebuilt without rescanning files. BM25 is computed by the
cluster from the stored text, so `bm25` only reports what is indexed; `embedding` re-embeds every chunk (the
file store's `Embeddings`, backfill.py); `tag` rebuilds the tag index (tags.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..store import MemoryStore
from .backfill import Embeddings
from .tags import TagIndexSync

SCOPES = ("all", "bm25", "embedding", "tag")


async def rebuild_derived(
    scope: str, store: MemoryStore, vectors: Embeddings, tags: TagIndexSync, tagged: Callable[[], int]
) -> dict:
    """One scope's answer (`all`: every scope's, keyed by scope); a scope that could not finish raises."""
    if scope not in SCOPES:
        raise ValueError(f"reindex scope must be one of: {', '.join(SCOPES)}")
    out: dict[str, Any] = {"scope": scope}
    if scope in ("all", "bm25"):
        stats = await store.admin.stats()
        out["bm25"] = {"indexed": stats["chunks"]["docs"], "scope": "bm25"}
    if scope in ("all", "embedding"):
        vectors.rebuild_pending = False
        filled = await vectors.backfill(rebuild=True)
        out["embedding"] = {"indexed": filled["filled"], "scope": "embedding"}
        if filled["missing"]:
            raise RuntimeError(f"embedding reindex incomplete: {filled['missing']} chunks failed")
    if scope in ("all", "tag"):
        if not await tags.rebuild("explicit reindex"):
            raise RuntimeError("tag index reindex failed")
        out["tag"] = {"indexed": tagged(), "scope": "tag"}
    return out if scope == "all" else out[scope]
