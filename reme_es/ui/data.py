"""What the pages of `reme-es ui` show, read through the store's door: its searches, `store.links`, `store.vectors`,
`store.admin`'s figures and `store.inspect` (the aggregations, mappings and settings the pages read; no query DSL
here). Every function reads; none writes, so browsing leaves the cluster as it was."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import TYPE_CHECKING, Any

from ..core.errors import AuthError, ReMeESError
from ..core.models import LinkScope, SearchFilter
from ..store.explain import explain
from ..store.inspect import recording

if TYPE_CHECKING:
    from ..store import MemoryStore
    from ..store.inspect import Sent


def _when(mtime: float | None) -> str:
    """A file's mtime as a UTC date and time ('' when none)."""
    if not mtime:
        return ""
    return dt.datetime.fromtimestamp(mtime, dt.UTC).strftime("%Y-%m-%d %H:%M")


async def overview(store: MemoryStore) -> dict:
    """A set's overview: its settings (vectors model, k-NN width, template version, replicas, health) and one row per
    workspace (files, chunks, vectors, bytes, last write) from two aggregations in one `_msearch`, whatever the number
    of workspaces."""
    files, chunks = await store.inspect.workspace_stats()
    rows: dict[str, dict[str, Any]] = {}
    for b in files["ws"]["buckets"]:
        rows[b["key"]] = {
            "workspace": b["key"],
            "files": b["doc_count"],
            "bytes": int(b["bytes"]["value"] or 0),
            "last_write": _when(b["last"]["value"]),
            "chunks": 0,
            "vectors": 0,
        }
    for b in chunks["ws"]["buckets"]:
        row = rows.setdefault(b["key"], {"workspace": b["key"], "files": 0, "bytes": 0, "last_write": ""})
        row.update(chunks=b["doc_count"], vectors=b["vectors"]["doc_count"])
    return {
        "prefix": store.prefix,
        "other_sets": [p for p in await index_sets(store) if p != store.prefix],
        "tenants": await memorie_tenants(store),
        "workspaces": sorted(rows.values(), key=lambda r: r["workspace"]),
        "totals": {"files": files["_total"], "chunks": chunks["_total"]},
        "settings": await _set_settings(store),
    }


MEMORIE_KINDS = ("memories", "vectors", "relations")
# Where each Memorie index keeps the tenant: memories their `tenant_id`, relations their source's; a vector entry only
# in its metadata, as a `meta_kv` term "tenantId" + U+001F + the value as JSON (memorie/src/metadata.ts `metadataTerms`)
TENANT_META = "tenantId\x1f"
TENANT_FIELD: dict[str, tuple[str, str | None]] = {
    "memories": ("tenant_id", None),
    "vectors": ("meta_kv", TENANT_META + ".*"),
    "relations": ("from_tenant_id", None),
}


def _tenant_of(key: str) -> str:
    """The tenant a terms bucket names: a `meta_kv` term's JSON value (a string tenant unquoted), else the key."""
    if not key.startswith(TENANT_META):
        return key
    raw = key[len(TENANT_META) :]
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, str) else json.dumps(value)


_CHUNKS_INDEX = re.compile(r"^(.+)-chunks-\d+$")


async def index_sets(store: MemoryStore) -> list[str]:
    """The prefixes of every index set on the cluster the credentials may see (from their chunks indices' names)."""
    try:
        names = await store.inspect.indices_like("*-chunks-*")
    except ReMeESError:
        return []
    return sorted({m[1] for n in names if (m := _CHUNKS_INDEX.match(n)) and not n.startswith(".")})


async def memorie_tenants(store: MemoryStore) -> list[dict]:
    """The Memorie tenants of the set's prefix (`<prefix>-memorie-<kind>`, written by the TypeScript package) with
    their memories, vectors and relations: one terms aggregation per index that exists, in one `_msearch`."""
    try:  # a grantee of one workspace may not read Memorie's indices at all (403): then there is nothing to show
        kinds = [k for k in MEMORIE_KINDS if await store.inspect.mapping(f"{store.prefix}-memorie-{k}") is not None]
        if not kinds:
            return []
        answers = await store.inspect.tenant_counts([(f"{store.prefix}-memorie-{k}", *TENANT_FIELD[k]) for k in kinds])
    except AuthError:
        return []
    rows: dict[str, dict] = {}
    for kind, answer in zip(kinds, answers):
        for b in answer["t"]["buckets"]:
            tenant = _tenant_of(b["key"])
            rows.setdefault(tenant, {"tenant": tenant, **dict.fromkeys(MEMORIE_KINDS, 0)})[kind] = b["doc_count"]
    return sorted(rows.values(), key=lambda r: r["tenant"])


async def _set_settings(store: MemoryStore) -> dict:
    """The set's vectors model, calibrated k-NN width, template version, replicas, health and bytes on disk; each
    part the credentials may not read (a grantee's, under document-level security) or the engine lacks is left out."""
    from ..embeddings.embedders import describe_model

    async def read(call, default=None):
        try:
            return await call
        except ReMeESError:
            return default

    model = await read(store.admin.vectors_model())
    stats = await read(store.admin.stats(), {})
    health = await read(store.inspect.cluster_health(), {}) or {}
    mapping = await read(store.inspect.mapping(store.index("chunks")), {}) or {}
    settings = await read(store.inspect.index_settings(store.index("chunks")), {})
    return {
        "model": describe_model(model) if model else "no vectors",
        "dims": store.dims,
        "width": store.vectors.width(50),
        "template_version": mapping.get("_meta", {}).get("reme_es", {}).get("template_version"),
        "replicas": _setting(settings, "number_of_replicas"),
        "health": health.get("status", "?"),
        "engine": f"{store.caps.engine} {store.caps.version}" if store.caps else "?",
        "bytes": sum(int(s.get("bytes") or 0) for s in stats.values()),
    }


def _setting(settings: dict, name: str) -> Any:
    """An index setting from `IndexPort.index_settings` (`{"index": {...}}`)."""
    return settings.get("index", {}).get(name)


async def files(store: MemoryStore, contains: str = "") -> list[dict]:
    """A workspace's files (path, date, chunks, links), those whose path contains `contains` when given."""
    docs = await store.links.get_files()
    rows = [
        {
            "path": d.path,
            "date": _when(d.st_mtime),
            "chunks": len(d.chunk_ids),
            "links": len(d.links),
            "bytes": d.size,
        }
        for d in docs
        if contains.lower() in d.path.lower()
    ]
    return sorted(rows, key=lambda r: r["path"])


async def file_page(store: MemoryStore, path: str) -> dict | None:
    """One file: front matter, its chunks as stored (text, speaker, date, words, question, whether it has a vector),
    links out and in, and its link neighbourhood (files one link away, either direction)."""
    found = await store.links.get_files([path])
    if not found:
        return None
    doc = found[0]
    stored = await store.vectors.get_chunks({path: doc.chunk_ids})
    with_vectors = await store.vectors.vector_ids({path: doc.chunk_ids})
    chunks = []
    for cid in doc.chunk_ids:
        src = stored.get(cid) or {}
        chunks.append(
            {
                "id": cid,
                "lines": f"{src.get('start_line', '')}-{src.get('end_line', '')}",
                "text": src.get("text", ""),
                "speaker": src.get("speaker", ""),
                "date": src.get("date", ""),
                "words": src.get("words", 0),
                "question": bool(src.get("question")),
                "vector": cid in with_vectors,
            }
        )
    inlinks = await store.links.inlinks(path, LinkScope.ALL)
    outlinks = await store.links.outlinks(path, LinkScope.ALL)
    return {
        "path": path,
        "date": _when(doc.st_mtime),
        "front_matter": doc.front_matter,
        "chunks": chunks,
        "outlinks": [{"path": link.target, "anchor": link.anchor} for link in outlinks],
        "inlinks": [{"path": link.source, "anchor": link.anchor} for link in inlinks],
    }


async def search(
    store: MemoryStore,
    query: str,
    vector: list[float] | None,
    mode: str,
    limit: int,
    search_filter: SearchFilter,
) -> dict:
    """A search as the drop-in's default path runs it (`MemoryStore.search`), explained stage by stage
    (`store.explain`), with the requests it sent and their `took`."""
    with recording() as sent:
        result = await store.search(query, vector, limit, search_filter, mode=mode)
    out = explain(result)
    texts = {h.chunk.id: h.chunk for h in result.hits}
    for h in out["ranked"]:
        h["text"] = texts[h["id"]].text
    out["requests"] = [
        {"method": s.method, "path": s.path, "body": s.body, "took": s.took, "ms": round(s.ms, 1)} for s in sent
    ]
    out["took_total"] = sum(sum(s.took) for s in sent)
    return out


async def access(config_client: tuple, prefix: str, repo: str) -> dict:
    """The set's grants (which role lets whom read which workspace or Memorie tenant) and the snapshots of `repo`
    (none asked: no snapshot listed), read-only; what the cluster refuses or lacks is said instead."""
    from ..adapters.snapshots import Snapshots
    from ..store.connect import open_cluster

    cs, engine = config_client
    cluster = await open_cluster(cs, engine)
    out: dict = {"grants": [], "snapshots": [], "repo": repo}
    try:
        try:
            out["grants"] = [
                {
                    "what": g.workspace if g.memorie_tenant is None else f"memorie tenant {g.memorie_tenant}",
                    "access": "read+write" if g.write else "read",
                    "role": g.role,
                    "who": [f"user {u}" for u in g.users] + [f"backend role {r}" for r in g.backend_roles],
                }
                for g in await cluster.security(prefix).list()
            ]
        except ReMeESError as exc:
            out["grants_error"] = str(exc)
        if repo:
            try:
                snaps = Snapshots(cluster.port)
                await snaps.require(repo)
                out["snapshots"] = [s.as_dict() for s in await snaps.snapshots(repo)]
            except ReMeESError as exc:
                out["snapshots_error"] = str(exc)
    finally:
        await cluster.close()
    return out


MEMORIE_CAP = 100


async def memorie_tenant(store: MemoryStore, tenant: str, text: str = "", limit: int = 10) -> dict:
    """One Memorie tenant of the set's prefix: its memories (newest first) and relations (either end in the tenant),
    each capped at `MEMORIE_CAP` with the exact count, and with `text` a BM25 search of its memories (score, the
    requests sent and their `took`). Raises AuthError when the credentials may not read Memorie's indices."""
    memories, relations = (f"{store.prefix}-memorie-{k}" for k in ("memories", "relations"))
    if await store.inspect.mapping(memories) is None:
        return {"tenant": tenant, "missing": memories}
    has_relations = await store.inspect.mapping(relations) is not None
    answers = await store.inspect.tenant_docs(memories, relations if has_relations else None, tenant, MEMORIE_CAP)
    (mem_hits, mem_total), (rel_hits, rel_total) = answers[0], (answers[1] if len(answers) > 1 else ([], 0))
    out: dict = {
        "tenant": tenant,
        "memories": [h["_source"] for h in mem_hits],
        "memories_total": mem_total,
        "relations": [h["_source"] for h in rel_hits],
        "relations_total": rel_total,
        "cap": MEMORIE_CAP,
        "search": None,
    }
    if text.strip():
        with recording() as sent:
            hits, total = await store.inspect.tenant_search(memories, tenant, text, limit)
        out["search"] = {
            "hits": [{**h["_source"], "score": h["_score"]} for h in hits],
            "total": total,
            "requests": [_shown(s) for s in sent],
            "took_total": sum(sum(s.took) for s in sent),
        }
    return out


def _shown(s: Sent) -> dict:
    """A request sent, its body as text (an `_msearch` body is NDJSON bytes)."""
    body = s.body.decode() if isinstance(s.body, bytes) else s.body
    return {"method": s.method, "path": s.path, "body": body, "took": s.took, "ms": round(s.ms, 1)}
