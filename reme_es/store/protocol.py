"""The write protocol, as pure functions: given what is stored and what is wanted, the actions of each round.

An upsert of some files runs up to four bulk rounds; `reme_es.store.writer` sends them through the port and
feeds each round's outcome into the next plan. Nothing here does I/O.

1. Placeholder. A file not stored before gets a placeholder file doc first (`create`, st_mtime -1, no links),
   so chunks that a crash between the rounds leaves behind still belong to a file doc: the next sync sees its
   mtime differ and re-indexes the file, or deletes all its chunks if the file is gone. `create` lets only one
   of two writers adding the same file go on; a 409 whose stored doc is this writer's own (a resend after a
   dropped answer) counts as written (`settle_conflicts`).
2. Chunks. Every new chunk of the remaining files, routed by path, except those the caller names `unchanged`
   (stored exactly as given, vector included) that are still stored when the write starts: they are not sent
   again (no vector to send, no HNSW insert). Old chunks are still there. A large round goes out as two
   concurrent bulk streams (`writer.STREAM_MIN_ACTIONS`); each stream's failures are booked like any others.
3. Commit and take-backs. For each file whose chunks were all stored: its stale chunks and links are deleted,
   its new links written, and last its file doc, only if it is still the version this writer read
   (`if_seq_no`/`if_primary_term`). For each other file, the new chunks that landed are taken back (unless
   they were stored before) and so is the placeholder of a new file: every take-back is conditional on this
   writer's own write, and a 409 there means another writer has rewritten the doc since, so it is left alone
   (`forgive_conflicts`). A failed item therefore never loses what was stored before.
4. Repair, only after a lost conditional write. When the file doc of round 3 came back 409 and the stored doc
   is another writer's, this writer's chunks and links that the winner's doc does not list are taken back;
   if this writer deleted a chunk or link the winner lists (or moved a link), the winner's doc is marked stale
   (st_mtime -1, conditional on its version) so the next sync re-indexes the file.

Delete runs two rounds: chunks and links first, then the file docs of the paths whose parts all went, so a
crash in between leaves a file doc whose chunks are partly gone (the next sync deletes it again), never
chunks without a file doc that nothing would find.

Nothing becomes visible before the writer's one refresh at the end (the indices do not refresh on their own).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..adapters.port import Action, StoredDoc
from ..adapters.transport import BulkOutcome
from ..core.errors import BulkItemFailure
from ..core.models import Chunk, FileDoc, Link, doc_id
from .sources import as_stored, link_from_file, link_source

LOST_REASON = (
    "another writer changed this file in the index after this writer read it (version conflict); the other "
    "writer's version was kept. Run the sync again to store the file as it is now"
)


@dataclass(frozen=True)
class Indices:
    """The alias of each index kind."""

    chunks: str
    files: str
    links: str


@dataclass
class Stored:
    """What the index holds for some paths: chunk ids, link ids, and the version of each path's file doc."""

    chunks: dict[str, set[str]]
    links: dict[str, set[str]]
    versions: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (_seq_no, _primary_term)

    @classmethod
    def empty(cls, paths: list[str]) -> Stored:
        """Nothing stored for these paths."""
        return cls({p: set() for p in paths}, {p: set() for p in paths}, {})


@dataclass
class Wanted:
    """One file as the writer wants it stored: the models and their checked sources."""

    file: FileDoc
    chunks: list[Chunk]
    chunk_sources: list[dict]
    source: dict

    def link_positions(self) -> dict[str, tuple[int, Link]]:
        """link id -> (position, link) of the file's own outlinks."""
        return {link.id: (pos, link) for pos, link in enumerate(self.file.links) if link.source == self.file.path}


@dataclass
class Commit:
    """Round 3: the commit actions, the take-backs (sent in the same bulk, after them), and per committed path
    its stale (chunk ids, link ids)."""

    actions: list[Action]
    takebacks: list[Action]
    stale: dict[str, tuple[set[str], set[str]]]


# --------------------------------------------------------------------------------------- upsert rounds


def placeholders(wanted: dict[str, Wanted], stored: Stored) -> dict[str, dict]:
    """path -> placeholder source of every wanted file without a stored file doc."""
    return {p: {**w.source, "st_mtime": -1.0, "links": []} for p, w in wanted.items() if p not in stored.versions}


def placeholder_round(placeheld: dict[str, dict], ix: Indices) -> list[Action]:
    """Round 1: `create` of each placeholder file doc."""
    return [Action("create", ix.files, doc_id(p), s) for p, s in placeheld.items()]


def written_versions(outcome: BulkOutcome, written: dict[str, dict], ix: Indices) -> dict[str, tuple[int, int]]:
    """path -> (seq_no, primary_term) of the file docs a bulk wrote."""
    return {p: outcome.versions[(ix.files, doc_id(p))] for p in written if (ix.files, doc_id(p)) in outcome.versions}


def conflicted(outcome: BulkOutcome, written: dict[str, dict]) -> list[str]:
    """Paths of `written` file docs that came back 409."""
    by_id = {doc_id(p): p for p in written}
    return [by_id[f.id] for f in outcome.failures if f.status == 409 and f.id in by_id]


def settle_conflicts(
    outcome: BulkOutcome,
    written: dict[str, dict],
    current: dict[str, StoredDoc],
    ix: Indices,
    final: dict[str, dict] | None = None,
) -> tuple[dict[str, StoredDoc | None], set[str]]:
    """Sort out the file docs of `written` that came back 409, given the `current` stored docs by id.

    A doc whose stored source is exactly what this writer sent is its own write, acknowledged before a retry
    (a dropped connection): it counts as written. A doc equal to this writer's `final` source (another writer
    stored the same version first) counts as done, and its path is returned in the second value. The others
    are lost to another writer: their failures get a reason that says so, and they are returned as path -> the
    stored doc (None if it is gone). `outcome` is updated in place."""
    paths = conflicted(outcome, written)
    lost: dict[str, StoredDoc | None] = {}
    done: set[str] = set()
    for path in paths:
        doc = current.get(doc_id(path))
        stored = doc.source if doc is not None else None
        if doc is not None and stored is not None and stored == as_stored(written[path]):
            outcome.versions[(ix.files, doc_id(path))] = doc.known_version
            outcome.succeeded += 1
        elif stored is not None and final is not None and stored == as_stored(final[path]):
            done.add(path)
            outcome.succeeded += 1
        else:
            lost[path] = doc
    settled = {doc_id(p) for p in paths}
    outcome.failures = [f for f in outcome.failures if f.id not in settled or f.status != 409] + [
        BulkItemFailure(ix.files, doc_id(p), 409, f"{p}: {LOST_REASON}") for p in lost
    ]
    return lost, done


def chunk_round(
    wanted: dict[str, Wanted], ix: Indices, stored: Stored | None = None, unchanged: set[str] | frozenset = frozenset()
) -> list[Action]:
    """Round 2: every new chunk, routed by its path; not the `unchanged` chunk ids that are `stored` for the path."""
    keep = {doc_id(c) for c in unchanged}
    skip = {path: keep & stored.chunks[path] for path in wanted} if stored is not None and keep else {}
    return [
        Action("index", ix.chunks, doc_id(src["chunk_id"]), src, routing=path)
        for path, w in wanted.items()
        for src in w.chunk_sources
        if doc_id(src["chunk_id"]) not in skip.get(path, ())
    ]


def failed_paths(actions: list[Action], outcome: BulkOutcome) -> set[str]:
    """Routing paths of the actions that failed."""
    failed = {f.id for f in outcome.failures}
    return {a.routing for a in actions if a.id in failed and a.routing is not None}


def takebacks(index: str, ids: list[str], written: BulkOutcome, routing: str | None = None) -> list[Action]:
    """Deletes of docs this writer wrote, each only if nobody has rewritten it since (its seq_no/term)."""
    return [
        Action("delete", index, i, routing=routing, version=written.versions[(index, i)])
        for i in ids
        if (index, i) in written.versions  # else this writer's write of it failed: nothing to take back
    ]


def commit_round(
    wanted: dict[str, Wanted],
    stored: Stored,
    versions: dict[str, tuple[int, int]],
    placeheld: dict[str, dict],
    first: BulkOutcome,
    chunks: BulkOutcome,
    chunk_actions: list[Action],
    ix: Indices,
) -> Commit:
    """Round 3: commit each file whose chunks were all stored; take back what the others wrote."""
    failed_ids = {f.id for f in chunks.failures}
    failed = failed_paths(chunk_actions, chunks)
    commit = Commit([], [], {})
    for path, w in wanted.items():
        new_ids = {doc_id(c.id) for c in w.chunks}
        if path in failed:
            commit.takebacks += takebacks(ix.chunks, sorted(new_ids - failed_ids - stored.chunks[path]), chunks, path)
            if path in placeheld:
                commit.takebacks += takebacks(ix.files, [doc_id(path)], first)
            continue
        new_links = w.link_positions()
        stale = commit.stale[path] = (stored.chunks[path] - new_ids, stored.links[path] - set(new_links))
        commit.actions += [Action("delete", ix.chunks, i, routing=path) for i in sorted(stale[0])]
        commit.actions += [Action("delete", ix.links, i) for i in sorted(stale[1])]
        commit.actions += [
            Action("index", ix.links, link_id, link_source(link, pos)) for link_id, (pos, link) in new_links.items()
        ]
        commit.actions.append(Action("index", ix.files, doc_id(path), w.source, version=versions[path]))
    return commit


def forgive_conflicts(outcome: BulkOutcome, conditional: list[Action]) -> None:
    """Drop the 409s of conditional take-backs: another writer rewrote that doc since, so it is not ours to undo."""
    ids = {a.id for a in conditional}
    kept = [f for f in outcome.failures if not (f.status == 409 and f.id in ids)]
    outcome.succeeded += len(outcome.failures) - len(kept)
    outcome.failures = kept


def repair_round(
    lost: dict[str, StoredDoc | None],
    wanted: dict[str, Wanted],
    stale: dict[str, tuple[set[str], set[str]]],
    chunks: BulkOutcome,
    commit: BulkOutcome,
    ix: Indices,
) -> list[Action]:
    """Round 4: undo what this writer did to the files it lost to another writer (`lost`: path -> the stored doc)."""
    actions: list[Action] = []
    for path, current in lost.items():
        src = current.sourced if current else {}
        keep_chunks = {doc_id(c) for c in src.get("chunk_ids") or []}
        keep_links = {link_from_file(path, x).id: pos for pos, x in enumerate(src.get("links") or [])}
        w = wanted[path]
        actions += takebacks(ix.chunks, sorted({doc_id(c.id) for c in w.chunks} - keep_chunks), chunks, path)
        my_links = {i: pos for i, (pos, _) in w.link_positions().items()}
        actions += takebacks(ix.links, sorted(set(my_links) - set(keep_links)), commit)
        stale_chunks, stale_links = stale[path]
        harmed = (
            bool(stale_chunks & keep_chunks)
            or bool(stale_links & set(keep_links))
            or any(keep_links.get(i, pos) != pos for i, pos in my_links.items())
        )
        if current is not None and harmed:
            actions.append(Action("index", ix.files, doc_id(path), {**src, "st_mtime": -1.0}, version=current.version))
    return actions


# --------------------------------------------------------------------------------------- delete rounds


def delete_parts_round(paths: list[str], stored: Stored, ix: Indices) -> list[Action]:
    """Delete round 1: every stored chunk and outgoing link of the paths."""
    actions: list[Action] = []
    for path in paths:
        actions += [Action("delete", ix.chunks, i, routing=path) for i in sorted(stored.chunks[path])]
        actions += [Action("delete", ix.links, i) for i in sorted(stored.links[path])]
    return actions


def delete_files_round(
    paths: list[str], stored: Stored, parts: list[Action], done: BulkOutcome, ix: Indices
) -> list[Action]:
    """Delete round 2: the file docs of the stored paths none of whose chunk deletes failed."""
    untouched = failed_paths(parts, done)
    return [
        Action("delete", ix.files, doc_id(path)) for path in paths if path in stored.versions and path not in untouched
    ]
