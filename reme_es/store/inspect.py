"""The door's reading namespace, `store.inspect` (as opensearch-py gives `client.cat`): what `reme-es status`, the
doctor, the UI and the tests read of an index set beside its searches: counts, health, the workspaces recorded, and
the UI's aggregations over the set and over Memorie's indices of its prefix. Every call reads; none writes.
Each plain name is the part's own bound method: no signature is restated here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..adapters import lookups as q
from ..adapters.port import IndexPort
from ..adapters.transport import SENT, Sent
from .indices import IndexSet
from .workspaces import Registry


class Inspect:
    """`store.inspect`: reads of one store's index set (counts, health, workspaces, mappings, the UI's figures)."""

    def __init__(self, indices: IndexSet, port: IndexPort, registry: Registry):
        self._indices, self._port, self._registry = indices, port, registry
        self.cluster_health = port.cluster_health  # None where the service has no such API
        self.workspaces = registry.workspaces  # every workspace recorded in the set (key, folder, host, since)
        self.mapping = port.mapping
        self.index_settings = port.index_settings
        self.indices_like = port.indices_like
        self.scan = port.scan  # the sources of every matching doc of one index (tests read whole indices with it)

    async def count(self, kind: str) -> int:
        """Documents of one index kind (as of the last refresh)."""
        return await self._port.count(self._indices.index(kind))

    async def health_counts(self) -> dict[str, int]:
        """Files, chunks, chunks with a vector and links (as of the last refresh), in one request."""
        ix = self._indices.ix
        return await self._port.health_counts(ix.files, ix.chunks, ix.links)

    async def unassigned_shards(self) -> list[dict]:
        """The shards of this set's indices that no node holds: index, shard, primary or replica, why."""
        return await self._port.unassigned_shards(f"{self._indices.prefix}-*")

    async def workspace_record(self) -> dict | None:
        """This workspace's record in the set (folder, host, since), or None when nobody claimed it."""
        return await self._registry.record(None if self._indices.legacy else self._indices.workspace)

    async def workspace_stats(self) -> tuple[dict, dict]:
        """The aggregations of the set's files and chunks per workspace (files, bytes, last write; chunks, vectors),
        in one `_msearch` whatever the number of workspaces (`lookups.workspace_stats`)."""
        files_body, chunks_body = q.workspace_stats()
        ix = self._indices.ix
        files, chunks = await self._port.aggregations([(ix.files, files_body), (ix.chunks, chunks_body)])
        return files, chunks

    async def tenant_counts(self, indices_fields: list[tuple[str, str, str | None]]) -> list[dict]:
        """Per (index, tenant field, include: the regular expression of the field's tenant terms, or None): the terms
        aggregation of its documents per tenant, in one `_msearch`."""
        bodies = [(index, q.tenant_counts(field=f, include=inc)) for index, f, inc in indices_fields]
        return await self._port.aggregations(bodies)

    async def tenant_docs(self, memories: str, relations: str | None, tenant: str, cap: int) -> list[tuple]:
        """A tenant's memories (newest first) and, with `relations`, its relations: (hits, exact total) per index, each
        capped at `cap`, in one `_msearch`."""
        searches = [(memories, q.tenant_memories(tenant, cap))]
        if relations is not None:
            searches.append((relations, q.tenant_relations(tenant, cap)))
        return await self._port.hits_and_totals(searches)

    async def tenant_search(self, memories: str, tenant: str, text: str, limit: int) -> tuple[list[dict], int]:
        """A BM25 search of a tenant's memories: its hits and their exact total."""
        [answer] = await self._port.hits_and_totals([(memories, q.tenant_match(tenant, text, limit))])
        return answer


@contextmanager
def recording() -> Iterator[list[Sent]]:
    """Every request answered inside the block, appended to the list it yields (method, path, body, answer, ms)."""
    sent: list[Sent] = []
    token = SENT.set(sent)
    try:
        yield sent
    finally:
        SENT.reset(token)


__all__ = ["Inspect", "Sent", "recording"]
