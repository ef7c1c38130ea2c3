"""Index maintenance above the store: blue/green reindex behind the aliases, and template diffs.

Reindex copies documents with a scroll + bulk through the store's dialect (no `_reindex`: the OpenSearch 2.19
test node lacks the reindex module), checks the counts, swaps the alias in one `POST /_aliases` and only then
deletes the old index. Stop writers (sync --watch, ReMe) while it runs: writes to the old index after its
copy are lost with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .adapters.lookups import scroll_body, without_vectors
from .errors import MappingError, RequestFailed
from .store import MemoryStore
from .templates import INDEX_KINDS, IndexOptions, render_index

SCROLL = "5m"
PAGE = 1000


async def concrete_indices(store: MemoryStore, kind: str) -> list[str]:
    """The concrete indices behind one alias of the store (sorted; [] when the alias does not exist)."""
    try:
        return sorted(await store.dialect.request("GET", f"/_alias/{store.index(kind)}"))
    except RequestFailed as exc:
        if exc.status == 404:
            return []
        raise


async def _count(store: MemoryStore, index: str) -> int:
    return (await store.dialect.request("GET", f"/{index}/_count"))["count"]


async def _copy(
    store: MemoryStore, old: str, new: str, kind: str, keep_vectors: bool, progress: Callable[[int], None] | None
) -> int:
    source = store.dialect.source_with_vectors() if keep_vectors else without_vectors()
    resp = await store.dialect.request("POST", f"/{old}/_search", scroll_body(PAGE, source), {"scroll": SCROLL})
    scroll_id = resp.get("_scroll_id")
    copied = 0
    try:
        while hits := resp["hits"]["hits"]:
            actions = []
            for hit in hits:
                src = hit["_source"]
                if not keep_vectors:
                    src.pop("embedding", None)
                action = {"_op_type": "index", "_index": new, "_id": hit["_id"], "_source": src}
                if kind == "chunks":
                    action["_routing"] = hit.get("_routing") or src["path"]
                actions.append(action)
            (await store.dialect.bulk(actions)).raise_for_failures()
            copied += len(actions)
            if progress:
                progress(copied)
            resp = await store.dialect.request("POST", "/_search/scroll", {"scroll": SCROLL, "scroll_id": scroll_id})
            scroll_id = resp.get("_scroll_id", scroll_id)
    finally:
        if scroll_id:
            try:
                await store.dialect.request("DELETE", "/_search/scroll", {"scroll_id": [scroll_id]})
            except RequestFailed:
                pass
    return copied


async def reindex(
    store: MemoryStore,
    target: IndexOptions,
    kinds: tuple[str, ...] = INDEX_KINDS,
    progress: Callable[[str, int], None] | None = None,
) -> list[dict]:
    """Rebuild each index kind as `<prefix>-<kind>-<n+1>` with the current template and `target` options.

    Vectors are copied when the dimension stays the same and dropped otherwise (`sync` embeds them again).
    """
    assert store.caps is not None, "connect the store first"
    results = []
    for kind in kinds:
        alias = store.index(kind)
        olds = await concrete_indices(store, kind)
        if len(olds) != 1:
            raise MappingError(
                f"alias {alias} points to {len(olds)} indices ({', '.join(olds) or 'none'}); expected exactly one. "
                "Run `reme-es sync` to create the indices, or fix the alias by hand."
            )
        old = olds[0]
        m = re.fullmatch(re.escape(alias) + r"-(\d+)", old)
        new = f"{alias}-{int(m.group(1)) + 1 if m else 1}"
        if new == old:
            new = f"{alias}-2"
        try:  # a leftover of an interrupted reindex: not behind the alias, safe to drop
            await store.dialect.request("DELETE", f"/{new}")
        except RequestFailed as exc:
            if exc.status != 404:
                raise
        keep_vectors = kind != "chunks" or (target.dims is not None and target.dims == store.dims)
        await store.dialect.request("PUT", f"/{new}", render_index(kind, store.dialect, store.caps, target))
        try:
            copied = await _copy(
                store, old, new, kind, keep_vectors, (lambda n, k=kind: progress(k, n)) if progress else None
            )
            await store.dialect.request("POST", f"/{new}/_refresh")
            await store.dialect.request("POST", f"/{old}/_refresh")
            before, after = await _count(store, old), await _count(store, new)
            if before != after:
                raise RequestFailed(
                    f"reindex of {alias}: {old} holds {before} docs but {new} got {after}; nothing "
                    "was swapped. Stop other writers and run `reme-es reindex` again."
                )
        except BaseException:
            await store.dialect.request("DELETE", f"/{new}")
            raise
        actions = [{"remove": {"index": old, "alias": alias}}, {"add": {"index": new, "alias": alias}}]
        await store.dialect.request("POST", "/_aliases", {"actions": actions})
        await store.dialect.request("DELETE", f"/{old}")
        vectors = "none" if kind != "chunks" or not store.dims else "kept" if keep_vectors else "dropped"
        results.append({"kind": kind, "alias": alias, "old": old, "new": new, "docs": copied, "vectors": vectors})
    return results


def _flatten(props: dict, prefix: str = "") -> dict[str, dict]:
    out = {}
    for name, spec in props.items():
        key = prefix + name
        out[key] = {k: v for k, v in spec.items() if k not in ("properties", "fields")}
        out.update(_flatten(spec.get("properties", {}), key + "."))
        out.update(_flatten(spec.get("fields", {}), key + "."))
    return out


def _norm(value: object) -> str:
    return str(value).lower()


async def template_diff(store: MemoryStore, options: IndexOptions) -> dict[str, list[str]]:
    """Per index kind, how the live mapping differs from what the current templates would create."""
    assert store.caps is not None, "connect the store first"
    out: dict[str, list[str]] = {}
    for kind in INDEX_KINDS:
        alias = store.index(kind)
        try:
            resp = await store.dialect.request("GET", f"/{alias}/_mapping")
        except RequestFailed as exc:
            if exc.status == 404:
                out[kind] = [f"index {alias} does not exist"]
                continue
            raise
        actual = next(iter(resp.values()))["mappings"]
        expected = render_index(kind, store.dialect, store.caps, options)["mappings"]
        have, want = _flatten(actual.get("properties", {})), _flatten(expected.get("properties", {}))
        problems = []
        for field in sorted(set(have) | set(want)):
            if field not in have:
                problems.append(f"+ {field}: {want[field]} (missing in the index)")
            elif field not in want:
                problems.append(f"- {field}: {have[field]} (not in the template)")
            else:
                changed = sorted(
                    k
                    for k in set(have[field]) | set(want[field])
                    if _norm(have[field].get(k)) != _norm(want[field].get(k))
                )
                for k in changed:
                    problems.append(f"~ {field}.{k}: index has {have[field].get(k)}, template has {want[field].get(k)}")
        v_have = actual.get("_meta", {}).get("reme_es", {}).get("template_version")
        v_want = expected["_meta"]["reme_es"]["template_version"]
        if v_have != v_want:
            problems.append(f"~ template_version: index has {v_have}, template has {v_want}")
        out[kind] = problems
    return out
