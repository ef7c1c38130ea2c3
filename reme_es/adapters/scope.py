"""One workspace's view of a shared index set: stored ids, routing and the workspace filter.

An index set (`<set>-chunks`, `-files`, `-links`) holds many workspaces. Every document carries its workspace key
in the `workspace` field, is routed by it (a workspace's reads touch one shard when an index has several) and has
its id namespaced as `<workspace>:<id>`, so two workspaces with the same paths never collide. The port applies a
`Scope` to every id, routing and look-up query it sends; user searches carry the workspace in their `SearchFilter`,
so a dialect puts it inside the k-NN clause (a filter outside it would cut the k nearest after the fact).

A set created before workspaces existed (no `workspace` field in its mapping) is read with `Scope(None)`: ids,
routing and queries pass unchanged, as they were written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

from ..core.models import doc_id

WORKSPACE_FIELD = "workspace"


@dataclass(frozen=True)
class Scope:
    """The workspace a port reads and writes (None: a set made before workspaces, used as it was written)."""

    workspace: str | None = None

    def stored_id(self, key: str) -> str:
        """The document id under which `key` (already a valid id) is stored for this workspace."""
        return doc_id(f"{self.workspace}:{key}") if self.workspace else key

    @overload
    def routing(self, given: str) -> str: ...
    @overload
    def routing(self, given: None = None) -> str | None: ...
    def routing(self, given: str | None = None) -> str | None:
        """The routing of a document of this workspace (a set made before workspaces: as given)."""
        return self.workspace or given

    def term(self) -> dict:
        """The query clause that matches this workspace's documents."""
        return {"term": {WORKSPACE_FIELD: self.workspace}}

    def query(self, query: dict | None) -> dict:
        """`query` (None: every document) narrowed to this workspace's documents."""
        if not self.workspace:
            return query or {"match_all": {}}
        return {"bool": {"filter": [self.term()], **({"must": [query]} if query else {})}}

    def source(self, source: dict) -> dict:
        """A document's `_source` with its workspace key."""
        return {**source, WORKSPACE_FIELD: self.workspace} if self.workspace else source

    @overload
    def unsource(self, source: dict) -> dict: ...
    @overload
    def unsource(self, source: dict | None) -> dict | None: ...
    def unsource(self, source: dict | None) -> dict | None:
        """A stored `_source` as its writer gave it: without the workspace key this scope added."""
        if self.workspace and source is not None and WORKSPACE_FIELD in source:
            source = {k: v for k, v in source.items() if k != WORKSPACE_FIELD}
        return source

    def params(self, params: dict | None = None) -> dict | None:
        """URL parameters of a read of this workspace: its routing added."""
        if not self.workspace:
            return params
        return {**(params or {}), "routing": self.workspace}
