"""Request bodies of the store's own scans and look-ups (not user searches): pure, and the same on every engine.

The store pages through whole indices with `search_after` (no 10,000-hit window), fetches docs by id with
`_mget`, and expands links with one `_msearch`. Keeping these bodies here keeps every query DSL in `adapters/`;
tests/unit/test_builders.py compares them with golden JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

SCAN_PAGE = 1000


def scan_body(
    query: dict, source: list[str] | dict | bool, sort: list[str], after: list | None = None, size: int = SCAN_PAGE
) -> dict:
    """One page of a sorted scan; `after` is the previous page's last `sort` value."""
    body: dict[str, Any] = {"size": size, "query": query, "_source": source, "sort": [{s: "asc"} for s in sort]}
    if after is not None:
        body["search_after"] = after
    return body


def scroll_body(size: int = SCAN_PAGE, source: bool | dict | None = None, query: dict | None = None) -> dict:
    """The first request of a scroll over every doc (`query`: every one it matches) in index order (the cheapest
    order: `_doc`); `source` filters what each hit's `_source` carries (see `without_vectors` and
    `Dialect.source_with_vectors`)."""
    body: dict[str, Any] = {"size": size, "sort": ["_doc"], "query": query or match_all()}
    if source is not None:
        body["_source"] = source
    return body


def without_vectors() -> dict:
    """A `_source` filter that leaves the embedding out."""
    return {"excludes": ["embedding"]}


def match_all() -> dict:
    """Every document."""
    return {"match_all": {}}


def any_of(field: str, values: list[str]) -> dict:
    """Documents whose keyword `field` equals one of `values` (paths of chunks, sources of links, ...)."""
    return {"terms": {field: values}}


def equals(field: str, value: str) -> dict:
    """Documents whose keyword `field` equals `value`."""
    return {"term": {field: value}}


def links_touching(paths: list[str]) -> dict:
    """Links from or to any of `paths` (one level of a traversal)."""
    return {"bool": {"should": [any_of("source", paths), any_of("target", paths)]}}


def with_field(name: str) -> dict:
    """Documents that have a value for `name` (chunks with an embedding)."""
    return {"exists": {"field": name}}


def without_field(name: str) -> dict:
    """Documents that have no value for `name` (chunks without an embedding)."""
    return {"bool": {"must_not": [{"exists": {"field": name}}]}}


def with_vector_among(ids: list[str]) -> dict:
    """Documents among these ids that have an embedding (found from the index, no vector read)."""
    return {"bool": {"filter": [{"ids": {"values": ids}}, {"exists": {"field": "embedding"}}]}}


def mget_ids(ids: list[str]) -> dict:
    """An `_mget` body by id (the index is in the path)."""
    return {"ids": ids}


def mget_routed(docs: list[tuple[str, str]]) -> dict:
    """An `_mget` body of routed docs, (id, routing) pairs; the answer keeps this order."""
    return {"docs": [{"_id": i, "routing": r} for i, r in docs]}


def link_expansion_msearch(
    index: str,
    paths: list[str],
    per_direction: int,
    scoped: Callable[[dict], dict] | None = None,
    routing: str | None = None,
) -> bytes:
    """The `_msearch` body of link expansion: for each path its first outlinks (by position), then for each path
    its first inlinks (by source, then position). Responses come back in that order. `scoped` narrows each query
    to a workspace, `routing` sends each search to its shard."""
    searches = []
    for field in ("source", "target"):
        sort = [{"position": "asc"}] if field == "source" else [{"source": "asc"}, {"position": "asc"}]
        for path in paths:
            query = equals(field, path)
            searches.append((index, {"size": per_direction, "query": scoped(query) if scoped else query, "sort": sort}))
    return msearch_body(searches, routing)


def msearch_body(searches: list[tuple[str, dict]], routing: str | None = None) -> bytes:
    """An `_msearch` body of (index, search body) pairs, each routed by `routing` if given; responses come back in
    this order."""
    header: dict[str, Any] = {"routing": routing} if routing else {}
    lines: list[bytes] = []
    for index, body in searches:
        lines.append(orjson.dumps({"index": index, **header}))
        lines.append(orjson.dumps(body))
    return b"\n".join(lines) + b"\n"


def count_body(query: dict | None) -> dict:
    """A search that only counts the documents `query` (None: every one) matches, exactly."""
    return {"size": 0, "track_total_hits": True, "query": query or match_all()}


def lean(body: dict) -> dict:
    """A search that counts no hits beyond those it returns (`track_total_hits: false` lets BM25 skip blocks)."""
    return {**body, "track_total_hits": False}


def ids_and_scores(body: dict) -> dict:
    """The same search answering its hits' ids and scores only (no `_source`, no hit totals)."""
    return {**body, "_source": False, "track_total_hits": False}


def chunks_by_ids(ids: list[str], excludes: list[str]) -> dict:
    """The chunk docs of these ids (at the searched refresh point), their `_source` without `excludes`."""
    return lean({"size": len(ids), "query": {"ids": {"values": ids}}, "_source": {"excludes": excludes}})


def files_by_path(paths: list[str]) -> dict:
    """The file docs of these paths."""
    return lean({"size": len(paths), "query": any_of("path", paths)})


def links_into(paths: list[str], size: int) -> dict:
    """Link docs whose target is one of `paths`, by target, source, position (the inlinks of each, in order)."""
    sort = [{"target": "asc"}, {"source": "asc"}, {"position": "asc"}]
    return lean({"size": size, "query": any_of("target", paths), "sort": sort})


def files_linked_from(files_index: str, ids: list[str], size: int, routing: str | None = None) -> dict:
    """The file docs that the file docs `ids` (stored ids, routed by `routing`) link to (a terms lookup of each one's
    `links.target`): the indexed targets of their outlinks, with their front matter."""
    where = {"routing": routing} if routing else {}
    lookups = [{"terms": {"path": {"index": files_index, "id": i, "path": "links.target", **where}}} for i in ids]
    return lean({"size": size, "query": {"bool": {"should": lookups, "minimum_should_match": 1}}})


def workspace_stats(size: int = 10_000) -> tuple[dict, dict]:
    """The bodies of a set's overview, one per index (files, chunks), each one terms aggregation by workspace: files
    with their bytes and latest mtime; chunks with how many hold a vector. Size 0: no document is read."""
    by_workspace = {"terms": {"field": "workspace", "size": size, "order": {"_key": "asc"}}}
    files = {
        "size": 0,
        "track_total_hits": True,
        "aggs": {
            "ws": {
                **by_workspace,
                "aggs": {"bytes": {"sum": {"field": "size"}}, "last": {"max": {"field": "st_mtime"}}},
            }
        },
    }
    chunks = {
        "size": 0,
        "track_total_hits": True,
        "aggs": {"ws": {**by_workspace, "aggs": {"vectors": {"filter": {"exists": {"field": "embedding"}}}}}},
    }
    return files, chunks


def tenant_counts(size: int = 10_000, field: str = "tenant_id", include: str | None = None) -> dict:
    """The body counting a Memorie index's documents per tenant (`field`: `tenant_id` of memories, `from_tenant_id`
    of relations, `meta_kv` of vector entries with `include` the regular expression of the tenant's terms), reading
    none."""
    terms: dict = {"field": field, "size": size}
    if include is not None:
        terms["include"] = include
    return {"size": 0, "track_total_hits": True, "aggs": {"t": {"terms": terms}}}


MEMORY_FIELDS = ["id", "type", "state", "content", "importance", "namespace", "subject_id", "created_at", "updated_at"]
RELATION_FIELDS = ["id", "from_id", "to_id", "type", "weight", "created_at", "from_tenant_id", "to_tenant_id"]


def of_tenant(tenant: str) -> dict:
    """Memorie memories of one tenant (the `tenant_id` the TypeScript package writes, memorie/src/dialect.ts)."""
    return equals("tenant_id", tenant)


def tenant_memories(tenant: str, size: int) -> dict:
    """A tenant's memories, newest first (then by id), their total counted exactly; the whole `record` left out."""
    sort = [{"created_at": {"order": "desc", "missing": "_last"}}, {"id": "asc"}]
    return {"size": size, "track_total_hits": True, "query": {"bool": {"filter": [of_tenant(tenant)]}},
            "_source": MEMORY_FIELDS, "sort": sort}  # fmt: skip


def tenant_relations(tenant: str, size: int) -> dict:
    """The relations with either end in a tenant (the scope each end keeps, as Memorie's `forget` finds them), in
    creation order (then id), their total counted exactly."""
    ends = [equals("from_tenant_id", tenant), equals("to_tenant_id", tenant)]
    return {"size": size, "track_total_hits": True, "query": {"bool": {"should": ends, "minimum_should_match": 1}},
            "_source": RELATION_FIELDS, "sort": [{"created_at": "asc"}, {"id": "asc"}]}  # fmt: skip


def tenant_match(tenant: str, text: str, size: int) -> dict:
    """BM25 over a tenant's memories' `content`: the match scores, the tenant is a filter (no score of its own)."""
    query = {"bool": {"must": [{"match": {"content": text}}], "filter": [of_tenant(tenant)]}}
    return {"size": size, "track_total_hits": True, "query": query, "_source": MEMORY_FIELDS}
