"""What the index port speaks in: write `Action`s, stored documents (`StoredDoc`) and ranked `Candidate`s, and how
cluster answers become them. Pure: no I/O."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from ..core import telemetry
from ..core.errors import IndexUnavailable, RequestFailed
from .scope import Scope

log = logging.getLogger("reme_es.adapters.port")  # the port's logger: its warnings keep their name

Op = Literal["create", "index", "delete", "update"]


@dataclass(frozen=True)
class Action:
    """One bulk item, engine-neutral: `version` = (seq_no, primary_term) makes it conditional on that version."""

    op: Op
    index: str
    id: str
    source: dict | None = None
    routing: str | None = None
    version: tuple[int, int] | None = None

    def as_dict(self) -> dict:
        """A plain description for golden tests and logs."""
        out: dict[str, Any] = {"op": self.op, "index": self.index, "id": self.id}
        if self.routing is not None:
            out["routing"] = self.routing
        if self.version is not None:
            out["if_version"] = list(self.version)
        if self.source is not None:
            out["source"] = self.source
        return out

    def to_bulk(self) -> dict:
        """The client helpers' bulk item."""
        item: dict[str, Any] = {"_op_type": self.op, "_index": self.index, "_id": self.id}
        if self.routing is not None:
            item["_routing"] = self.routing
        if self.source is not None:
            item["doc" if self.op == "update" else "_source"] = self.source
        if self.version is not None:
            item["if_seq_no"], item["if_primary_term"] = self.version
        return item


class Candidate(NamedTuple):
    """One hit of a candidates-only search: its score, chunk id, path, text hash, speaker ("" where it has none),
    whether it is a question (`sources.chunk_asks`) and its words (0 where not stored)."""

    score: float
    chunk_id: str
    path: str
    hash: str = ""
    speaker: str = ""
    question: bool = False
    words: int = 0


class Timed(NamedTuple):
    """One search of a timed `_msearch` (`IndexPort.timed_searches`): its server time (ms) and its hits' (stored id,
    score), best first."""

    took_ms: float
    ranked: list[tuple[str, float]]


def _candidate(hit: dict) -> Candidate:
    fields = hit["fields"]
    return Candidate(
        float(hit["_score"]),
        fields["chunk_id"][0],
        fields["path"][0],
        (fields.get("hash") or [""])[0],
        (fields.get("speaker") or [""])[0],
        bool((fields.get("question") or [False])[0]),
        int((fields.get("words") or [0])[0]),
    )


@dataclass(frozen=True)
class StoredDoc:
    """One stored document as the port hands it up: its id, its source (None when not asked for), its version
    (seq_no, primary_term) where the read reports one, and its routing where the doc has one."""

    id: str
    source: dict | None
    version: tuple[int, int] | None = None
    routing: str | None = None

    @property
    def sourced(self) -> dict:
        """The source of a doc read with it (ValueError for one read with `source=False`)."""
        if self.source is None:
            raise ValueError(f"{self.id} was read without its source")
        return self.source

    @property
    def known_version(self) -> tuple[int, int]:
        """The version, for a read that reports one (a real-time get does; a conditional write needs it)."""
        if self.version is None:
            raise ValueError(f"{self.id} was read without its version")
        return self.version


def _named_scores(hit: dict) -> dict[str, float]:
    matched = hit.get("matched_queries")
    return {name: float(score) for name, score in matched.items()} if isinstance(matched, dict) else {}


def _stored(doc: dict, given: dict[str, str] | None = None, scope: Scope | None = None) -> StoredDoc:
    """A `_mget` doc or search hit as a StoredDoc (`given`: stored id -> the id the caller asked for; `scope`: its
    source without the workspace key the scope added)."""
    version = (doc["_seq_no"], doc["_primary_term"]) if "_seq_no" in doc else None
    source = scope.unsource(doc.get("_source")) if scope else doc.get("_source")
    return StoredDoc((given or {}).get(doc["_id"], doc["_id"]), source, version, doc.get("_routing"))


def _note_partial(index: str, answer: dict) -> None:
    """Log a search that only some of its shards answered (a lost node leaves shards unassigned, or a shard failed):
    the hits are partial, and the log says so."""
    shards = answer.get("_shards") or {}
    total, answered = shards.get("total", 0), shards.get("successful", 0)
    if answered < total:
        telemetry.record("reme_es.partial_answers", 1, {"db.collection.name": index})
        telemetry.stage(
            "partial_answer",
            {"db.collection.name": index, "reme_es.shards.total": total, "reme_es.shards.failed": total - answered},
        )
        log.warning(
            "search of %s answered by %s of %s shards (%s failed or unassigned): results are partial until the "
            "missing shards are assigned again (`reme-es status` shows the cluster's health)",
            index,
            answered,
            total,
            total - answered,
        )


def unavailable(health: dict) -> IndexUnavailable | None:
    """From a `_cluster/health?level=indices` answer: the error naming the red indices and what to do, or None."""
    red = {
        i: h.get("unassigned_shards", 0) for i, h in (health.get("indices") or {}).items() if h.get("status") == "red"
    }
    if not red:
        return None
    listed = ", ".join(f"{i} ({n} shard(s) unassigned)" for i, n in sorted(red.items()))
    return IndexUnavailable(
        f"index {listed} has primary shards that no node holds: the node that held them is down and they have no "
        f"replica. Reads and writes of it fail until that node is back: restart it, or restore the index from a "
        f"snapshot. `reme-es status` lists the unassigned shards; the cluster has {health.get('number_of_nodes')} "
        "node(s) now. Indices with a replica (the default `replicas` on two or more nodes) keep answering.",
        red,
    )


async def or_none(call: Awaitable[Any]) -> Any:
    """The call's answer, or None when the server says 404 (missing index, alias, pipeline)."""
    try:
        return await call
    except RequestFailed as exc:
        if exc.status == 404:
            return None
        raise
