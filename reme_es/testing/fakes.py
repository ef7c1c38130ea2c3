"""Fakes for unit tests of the store's planning code: no server, no monkeypatching of a client.

`MemoryPort` stands in for `IndexPort` where the writer uses it (bulk, get, scan, refresh): documents live in
dicts, every write bumps the doc's `_seq_no`, conditional writes and `create` give the 409 a real node gives,
and each bulk call's actions are recorded. `fail` makes chosen ids fail with a status (a faulty port);
`before_bulk` runs a callback before the n-th bulk call (another writer stepping in). Item outcomes go through
the real `retry.book_round`, so they are booked exactly as a node's answers are. It is a fake of the
protocol's surface, not an engine: it matches `terms`/`term` queries only and never scores anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from ..adapters.port import Action, StoredDoc
from ..adapters.retry import book_round
from ..adapters.transport import BulkOutcome


class MemoryPort:
    """An in-memory stand-in for the writer's part of `IndexPort` that records every bulk round."""

    def __init__(
        self, fail: dict[str, int] | None = None, before_bulk: dict[int, Callable[[MemoryPort], None]] | None = None
    ):
        self.docs: dict[str, dict[str, dict]] = {}  # index -> id -> {"_source", "_seq_no", "_primary_term"}
        self.fail = dict(fail or {})
        self.before_bulk = dict(before_bulk or {})
        self.rounds: list[list[Action]] = []
        self.refreshes = 0
        self._seq = 0

    # --- direct access for tests ---------------------------------------------------------------
    def put(self, index: str, id: str, source: dict) -> tuple[int, int]:
        """Store a doc as another writer would; returns its new (seq_no, primary_term)."""
        self._seq += 1
        self.docs.setdefault(index, {})[id] = {"_source": source, "_seq_no": self._seq, "_primary_term": 1}
        return self._seq, 1

    def ids(self, index: str) -> list[str]:
        """Sorted ids of the docs in an index."""
        return sorted(self.docs.get(index, {}))

    # --- the port's surface ---------------------------------------------------------------------
    async def bulk(self, actions: list[Action], require_alias: bool = True) -> BulkOutcome:
        """Apply actions in order, as a node would; the round is recorded."""
        hook = self.before_bulk.pop(len(self.rounds), None)
        if hook is not None:
            hook(self)
        self.rounds.append(list(actions))
        results = [self._apply(a) for a in actions]
        outcome = BulkOutcome()
        book_round(outcome, [a.to_bulk() for a in actions], results, statuses=frozenset())
        return outcome

    def _apply(self, a: Action) -> tuple[bool, dict]:
        index = self.docs.setdefault(a.index, {})
        have = index.get(a.id)
        info: dict[str, Any] = {"_index": a.index, "_id": a.id}
        if a.id in self.fail:
            status = self.fail[a.id]
            error = {"type": "injected", "reason": f"injected {status}"}
            return False, {a.op: {**info, "status": status, "error": error}}
        if (a.op == "create" and have) or (
            a.version is not None and (have is None or (have["_seq_no"], have["_primary_term"]) != a.version)
        ):
            return False, {
                a.op: {
                    **info,
                    "status": 409,
                    "error": {"type": "version_conflict_engine_exception", "reason": "version conflict"},
                }
            }
        if a.op == "delete":
            if have is None:
                return False, {a.op: {**info, "status": 404}}
            del index[a.id]
            return True, {a.op: {**info, "status": 200}}
        if a.op == "update":
            if have is None:
                return False, {
                    a.op: {**info, "status": 404, "error": {"type": "document_missing_exception", "reason": "missing"}}
                }
            source = {**have["_source"], **(a.source or {})}
        else:
            source = dict(a.source or {})
        seq, term = self.put(a.index, a.id, source)
        return True, {a.op: {**info, "status": 201 if have is None else 200, "_seq_no": seq, "_primary_term": term}}

    async def get(self, index: str, ids: list[str], source: bool = True) -> list[StoredDoc]:
        """The found docs of these ids, with their versions (and sources unless `source` is False)."""
        docs = self.docs.get(index, {})
        return [
            StoredDoc(i, docs[i]["_source"] if source else None, (docs[i]["_seq_no"], docs[i]["_primary_term"]))
            for i in ids
            if i in docs
        ]

    async def scan(self, index: str, query: dict, source: Any, sort: list[str]) -> AsyncIterator[dict]:
        """Sources of the docs matching a `terms` or `term` query, sorted by the `sort` fields."""
        kind, spec = next(iter(query.items()))
        field, wanted = next(iter(spec.items()))
        values = set(wanted) if kind == "terms" else {wanted}
        hits = [d["_source"] for d in self.docs.get(index, {}).values() if d["_source"].get(field) in values]
        for src in sorted(hits, key=lambda s: [str(s.get(f, "")) for f in sort]):
            yield src

    async def refresh(self, names: list[str] | None = None) -> None:
        """Count refreshes (the fake's writes are visible at once)."""
        self.refreshes += 1
