"""The index port's calls on indices, aliases, search pipelines and the cluster's health (`IndexPort` inherits them):
the REST paths of an index set's upkeep, apart from the document calls of `port.py`."""

from __future__ import annotations

from ..core.errors import RequestFailed
from .dialect import Dialect
from .documents import or_none
from .transport import Transport


class IndexCalls:
    """Index, alias, pipeline and health calls over one dialect's transport (the port's `transport` and `dialect`)."""

    transport: Transport
    dialect: Dialect

    # --- indices --------------------------------------------------------------------------------
    async def mapping(self, index: str) -> dict | None:
        """The mappings of an index or alias, None when it does not exist."""
        resp = await or_none(self.transport.request("GET", f"/{index}/_mapping"))
        return None if resp is None else next(iter(resp.values()))["mappings"]

    async def index_settings(self, index: str) -> dict:
        """The settings of an index or alias (of its one concrete index: `{"index": {...}}`), {} when it is missing."""
        resp = await or_none(self.transport.request("GET", f"/{index}/_settings"))
        return next(iter(resp.values()))["settings"] if resp else {}

    async def cluster_health(self) -> dict | None:
        """The cluster's health (status, nodes, unassigned shards), None where the service has no such API."""
        try:
            return await or_none(self.transport.request("GET", "/_cluster/health"))
        except RequestFailed as exc:
            if exc.status in (400, 401, 403, 405):
                return None
            raise

    async def unassigned_shards(self, pattern: str) -> list[dict]:
        """The shards of the indices matching `pattern` that no node holds: index, shard, primary or replica, why."""
        params = {"format": "json", "h": "index,shard,prirep,state,unassigned.reason"}
        try:
            rows = await or_none(self.transport.request("GET", f"/_cat/shards/{pattern}", params=params)) or []
        except RequestFailed:
            return []
        return [r for r in rows if r.get("state") == "UNASSIGNED"]

    async def put_settings(self, index: str, settings: dict) -> None:
        """Change dynamic settings of an index (or the indices behind an alias)."""
        await self.transport.request("PUT", f"/{index}/_settings", settings)

    async def field_caps(self, index: str) -> dict:
        """Every field's capabilities in an index."""
        return await self.transport.request("GET", f"/{index}/_field_caps", params={"fields": "*"})

    async def create_index(self, name: str, body: dict) -> bool:
        """Create an index; False when it exists already (another writer made it first)."""
        try:
            await self.transport.request("PUT", f"/{name}", body)
        except RequestFailed as exc:
            if exc.type == "resource_already_exists_exception":
                return False
            raise
        return True

    async def delete_index(self, name: str, missing_ok: bool = False) -> None:
        """Delete a concrete index."""
        call = self.transport.request("DELETE", f"/{name}")
        await (or_none(call) if missing_ok else call)

    async def concrete(self, alias: str) -> list[str]:
        """The concrete indices behind an alias (sorted; [] when the alias does not exist)."""
        return sorted(await or_none(self.transport.request("GET", f"/_alias/{alias}")) or [])

    async def swap_alias(self, alias: str, old: str, new: str) -> None:
        """Point `alias` from `old` to `new` in one atomic request."""
        actions = [{"remove": {"index": old, "alias": alias}}, {"add": {"index": new, "alias": alias}}]
        await self.transport.request("POST", "/_aliases", {"actions": actions})

    async def stats(self, index: str) -> dict:
        """Primaries of an index or alias: docs, deleted docs, segments, bytes, and the concrete index names."""
        resp = await self.transport.request("GET", f"/{index}/_stats/docs,segments,store")
        total = resp["_all"]["primaries"]
        return {
            "index": ",".join(sorted(resp.get("indices", {}))),
            "docs": total["docs"]["count"],
            "deleted": total["docs"]["deleted"],
            "segments": total["segments"]["count"],
            "bytes": total["store"]["size_in_bytes"],
        }

    async def merges_running(self, index: str) -> int:
        """How many merges run on the primaries of an index or alias now."""
        resp = await self.transport.request("GET", f"/{index}/_stats/merge")
        return int(resp["_all"]["primaries"]["merges"]["current"])

    async def forcemerge(self, index: str, max_segments: int | None = None) -> None:
        """Force-merge: down to `max_segments`, or (None) only expunging deleted docs."""
        params = (
            {"max_num_segments": str(max_segments)} if max_segments is not None else {"only_expunge_deletes": "true"}
        )
        await self.transport.request("POST", f"/{index}/_forcemerge", None, params)

    # --- search pipelines -----------------------------------------------------------------------
    async def put_pipeline(self, name: str, body: dict) -> None:
        """Create or replace a search pipeline (idempotent)."""
        await self.transport.request("PUT", f"/_search/pipeline/{name}", body)

    async def get_pipeline(self, name: str) -> dict | None:
        """The body of a search pipeline (None: there is none of this name)."""
        found = await or_none(self.transport.request("GET", f"/_search/pipeline/{name}"))
        return (found or {}).get(name)

    async def pipeline_exists(self, name: str) -> bool:
        """Whether a search pipeline of this name exists."""
        return await or_none(self.transport.request("GET", f"/_search/pipeline/{name}")) is not None

    async def delete_pipeline(self, name: str) -> None:
        """Delete a search pipeline; a missing one is fine."""
        await or_none(self.transport.request("DELETE", f"/_search/pipeline/{name}"))

    async def pipelines(self) -> list[str]:
        """Names of every search pipeline on the cluster ([] where the engine has none)."""
        if not self.dialect.uses_search_pipeline:
            return []
        return sorted(await or_none(self.transport.request("GET", "/_search/pipeline")) or {})

    # --- prefix upkeep (reme-es drop, the recorded embedding model) ------------------------------
    async def indices_like(self, pattern: str) -> list[str]:
        """Concrete indices (open, closed or hidden) whose names match a wildcard pattern."""
        found = await or_none(self.transport.request("GET", f"/{pattern}/_alias", params={"expand_wildcards": "all"}))
        return sorted(found or {})

    async def add_fields(self, index: str, properties: dict) -> None:
        """Add fields to an index's (or alias's) mapping (a mapping only grows: existing documents lack them)."""
        await self.transport.request("PUT", f"/{index}/_mapping", {"properties": properties})

    async def put_meta(self, index: str, meta: dict) -> None:
        """Replace the `_meta` of an index's (or alias's) mapping."""
        await self.transport.request("PUT", f"/{index}/_mapping", {"_meta": meta})
