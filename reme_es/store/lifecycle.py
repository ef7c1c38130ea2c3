"""Index maintenance, a part of the store that callers reach through `MemoryStore`'s methods: blue/green reindex
behind the aliases, and template diffs.

Reindex copies documents with a scroll + bulk through the store's port (no `_reindex`: the OpenSearch 2.19
test node lacks the reindex module), checks the counts, swaps the alias in one atomic request and only then
deletes the old index. Stop writers (sync --watch, ReMe) while it runs: writes to the old index after its
copy are lost with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..adapters.port import Action
from ..adapters.templates import INDEX_KINDS, REGISTRY_KIND, SET_KINDS, render_index, replica_settings, template_shards
from ..core.errors import ConfigError, MappingError, RequestFailed
from ..core.models import Link, doc_id
from ..core.options import IndexOptions

if TYPE_CHECKING:
    from . import MemoryStore

PAGE = 1000


async def concrete_indices(store: MemoryStore, kind: str) -> list[str]:
    """The concrete indices behind one alias of the store (sorted; [] when the alias does not exist)."""
    return await store.port.concrete(store.index(kind))


async def live_options(store: MemoryStore, dims: int | None) -> IndexOptions:
    """The shards and replicas the set's chunks index has now (so a rebuild keeps them), with `dims`."""
    index = (await store.port.index_settings(store.index("chunks"))).get("index", {})
    auto = str(index.get("auto_expand_replicas", "false")).lower()
    replicas = None if auto == "0-1" else int(index.get("number_of_replicas", 0))
    return store.options.model_copy(
        update={"dims": dims, "shards": int(index.get("number_of_shards", 1)), "replicas": replicas}
    )


async def _copy(
    store: MemoryStore, old: str, new: str, kind: str, keep_vectors: bool, progress: Callable[[int], None] | None
) -> int:
    copied, port = 0, store.port.unscoped()  # every workspace of the set, ids and routing as stored
    async for hits in port.scroll(old, PAGE, with_vectors=keep_vectors):
        actions = []
        for doc in hits:
            src = doc.sourced
            if not keep_vectors:
                src.pop("embedding", None)
            routing = (doc.routing or src["path"]) if kind == "chunks" else doc.routing
            actions.append(Action("index", new, doc.id, src, routing=routing))
        # `new` is not behind the alias yet: written by its own name
        (await port.bulk(actions, require_alias=False)).raise_for_failures()
        copied += len(actions)
        if progress:
            progress(copied)
    return copied


def _next_name(alias: str, old: str) -> str:
    m = re.fullmatch(re.escape(alias) + r"-(\d+)", old)
    new = f"{alias}-{int(m.group(1)) + 1 if m else 1}"
    return f"{alias}-2" if new == old else new


async def _rebuild(
    store: MemoryStore, kind: str, target: IndexOptions, progress: Callable[[str, int], None] | None
) -> dict:
    """Rebuild one index kind behind its alias (see `reindex`)."""
    alias, port = store.index(kind), store.port.unscoped()
    olds = await concrete_indices(store, kind)
    if len(olds) != 1:
        raise MappingError(
            f"alias {alias} points to {len(olds)} indices ({', '.join(olds) or 'none'}); expected exactly one. "
            "Run `reme-es sync` to create the indices, or fix the alias by hand."
        )
    old = olds[0]
    new = _next_name(alias, old)
    await port.delete_index(new, missing_ok=True)  # a leftover of an interrupted reindex: not behind the alias
    keep_vectors = kind != "chunks" or (target.dims is not None and target.dims == store.dims)
    await port.create_index(new, render_index(kind, store.dialect, store.indices.connected(), target))
    try:
        copied = await _copy(store, old, new, kind, keep_vectors, (lambda n: progress(kind, n)) if progress else None)
        await port.refresh([new])
        await port.refresh([old])
        before, after = await port.count(old), await port.count(new)
        if before != after:
            raise RequestFailed(
                f"reindex of {alias}: {old} holds {before} docs but {new} got {after}; nothing "
                "was swapped. Stop other writers and run `reme-es reindex` again.",
                type="count_mismatch",
            )
    except BaseException:
        await port.delete_index(new)
        raise
    await port.swap_alias(alias, old, new)
    await port.delete_index(old)
    vectors = "none" if kind != "chunks" or not store.dims else "kept" if keep_vectors else "dropped"
    return {"kind": kind, "alias": alias, "old": old, "new": new, "docs": copied, "vectors": vectors}


async def reindex(
    store: MemoryStore,
    target: IndexOptions,
    kinds: tuple[str, ...] = INDEX_KINDS,
    progress: Callable[[str, int], None] | None = None,
) -> list[dict]:
    """Rebuild each index kind as `<prefix>-<kind>-<n+1>` with the current template and `target` options.

    Vectors are copied when the dimension stays the same and dropped otherwise (`sync` embeds them again). Every
    workspace of the set is rebuilt. A set from before workspaces is refused: `migrate` moves it into one with them.
    """
    store.indices.connected()
    if store.legacy:
        raise ConfigError(
            f"index set {store.prefix} predates workspaces: a rebuild would lose track of its documents. Move it into "
            "a set with workspaces with `reme-es migrate` (it rebuilds the indices on the way)"
        )
    rebuilt = [await _rebuild(store, kind, target, progress) for kind in kinds]
    # The registry is small and rebuilt never; its replicas follow the set's (a dynamic setting).
    await store.port.put_settings(store.index(REGISTRY_KIND), replica_settings(target))
    return rebuilt


def _flatten(props: dict, prefix: str = "") -> dict[str, dict]:
    out = {}
    for name, spec in props.items():
        key = prefix + name
        out[key] = {k: v for k, v in spec.items() if k not in ("properties", "fields")}
        out.update(_flatten(spec.get("properties", {}), key + "."))
        out.update(_flatten(spec.get("fields", {}), key + "."))
    return out


def _norm(value: object) -> object:
    """A mapping value in a comparable form: dicts compared without their key order, scalars as lowercase text
    (the server may give back `64` or `"64"`, `True` or `"true"`)."""
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    return None if value is None else str(value).lower()


def _replica_diff(live: dict, options: IndexOptions) -> list[str]:
    """How an index's live shard and replica settings differ from `options`."""
    index, problems = live.get("index", {}), []
    shards = options.shards or template_shards()
    want = {"number_of_shards": shards, **replica_settings(options)}
    if options.replicas is None:
        want["number_of_replicas"] = None  # decided by the node count
    have_auto = str(index.get("auto_expand_replicas", "false")).lower()
    if have_auto != str(want["auto_expand_replicas"]).lower():
        wanted = want["auto_expand_replicas"]
        problems.append(f"~ settings.auto_expand_replicas: index has {have_auto}, wanted {wanted}")
    if want["number_of_replicas"] is not None and _norm(index.get("number_of_replicas")) != _norm(
        want["number_of_replicas"]
    ):
        have, wanted = index.get("number_of_replicas"), want["number_of_replicas"]
        problems.append(f"~ settings.number_of_replicas: index has {have}, wanted {wanted}")
    if _norm(index.get("number_of_shards")) != _norm(shards):
        problems.append(f"~ settings.number_of_shards: index has {index.get('number_of_shards')}, wanted {shards}")
    return problems


async def template_diff(store: MemoryStore, options: IndexOptions) -> dict[str, list[str]]:
    """Per index kind, how the live mapping and shard/replica settings differ from what the current templates and
    `options` would create."""
    caps = store.indices.connected()
    out: dict[str, list[str]] = {}
    for kind in INDEX_KINDS:
        alias = store.index(kind)
        actual = await store.port.mapping(alias)
        if actual is None:
            out[kind] = [f"index {alias} does not exist"]
            continue
        settings_problems = _replica_diff(await store.port.index_settings(alias), options)
        expected = render_index(kind, store.dialect, caps, options)["mappings"]
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
        out[kind] = problems + settings_problems
    return out


# ------------------------------------------------------------------------------- drop a prefix


async def drop_plan(store: MemoryStore) -> dict[str, list[str]]:
    """What dropping the prefix deletes: the indices behind its aliases (with leftovers of an interrupted
    reindex, `<prefix>-<kind>-<n>`), those aliases, and every hybrid search pipeline made for it."""
    aliases, indices = [], set()
    for kind in SET_KINDS:
        behind = await concrete_indices(store, kind)
        if behind:
            aliases.append(store.index(kind))
            indices.update(behind)
    own = re.compile(re.escape(store.prefix) + r"-(" + "|".join(SET_KINDS) + r")-\d+")
    indices.update(name for name in await store.port.indices_like(f"{store.prefix}-*") if own.fullmatch(name))
    mine = re.compile(re.escape(store.prefix) + r"-hybrid-(rrf|minmax)(-w\d+)?-v\d+")
    pipelines = [name for name in await store.port.pipelines() if mine.fullmatch(name)]
    return {"indices": sorted(indices), "aliases": aliases, "pipelines": pipelines}


async def drop_prefix(store: MemoryStore, plan: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Delete what `drop_plan` lists (an index takes its aliases with it); returns what was deleted."""
    plan = plan or await drop_plan(store)
    for index in plan["indices"]:
        await store.port.delete_index(index, missing_ok=True)
    for name in plan["pipelines"]:
        await store.port.delete_pipeline(name)
    return plan


# ------------------------------------------------------------------ which model made the vectors


async def vectors_model(store: MemoryStore) -> dict | None:
    """The embedding model recorded in the chunks index `_meta` (`provider`, `model`, `dims`, ...), or None."""
    mapping = await store.port.mapping(store.index("chunks"))
    return (((mapping or {}).get("_meta") or {}).get("reme_es") or {}).get("embedding")


async def record_vectors_model(store: MemoryStore, model: dict) -> None:
    """Record in the chunks index `_meta` which embedding model makes its vectors (the rest of `_meta` is kept)."""
    mapping = await store.port.mapping(store.index("chunks"))
    if mapping is None:
        raise MappingError(f"index {store.index('chunks')} does not exist; run `reme-es sync` first")
    meta = mapping.get("_meta") or {}
    meta.setdefault("reme_es", {})["embedding"] = model
    await store.port.put_meta(store.index("chunks"), meta)


# ------------------------------------------------------------------ move a workspace into a shared set


def _id_of(kind: str, src: dict) -> tuple[str, str | None]:
    """A document's id and routing as a workspace gives them, from its source (ids are derived from the content)."""
    if kind == "chunks":
        return doc_id(src["chunk_id"]), src["path"]
    if kind == "files":
        return doc_id(src["path"]), None
    return Link(source=src["source"], target=src["target"], anchor=src.get("anchor", "")).id, None


async def migrate(
    source: MemoryStore, target: MemoryStore, progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Copy every file, chunk (with its vector) and link of `source`'s workspace (a whole set from before workspaces,
    or one workspace of a shared set) into `target`'s workspace, then check that the target holds exactly as many of
    each. The source is left as it is: the caller drops it once this returns. Returns the documents copied per kind."""
    source.indices.connected()
    target.indices.connected()
    if source.dims != target.dims:
        raise ConfigError(
            f"index set {source.prefix} holds {source.dims or 'no'} vectors but {target.prefix} holds "
            f"{target.dims or 'no'}: move the workspace into a set made for the same embedding model"
        )
    copied: dict[str, int] = {}
    for kind in INDEX_KINDS:
        copied[kind] = 0
        async for page in source.port.scroll(source.index(kind), PAGE, with_vectors=bool(source.dims)):
            actions = []
            for d in page:
                key, routing = _id_of(kind, d.sourced)
                actions.append(Action("index", target.index(kind), key, d.sourced, routing=routing))
            (await target.port.bulk(actions)).raise_for_failures()
            copied[kind] += len(actions)
            if progress:
                progress(kind, copied[kind])
    await target.refresh()
    before, after = await source.inspect.health_counts(), await target.inspect.health_counts()
    if before != after:
        raise RequestFailed(
            f"migrate: {source.prefix} holds {before} but {target.prefix} (workspace {target.workspace}) got {after}; "
            "the source was kept. Stop other writers (sync --watch, ReMe) and run `reme-es migrate` again",
            type="count_mismatch",
        )
    return copied
