"""Pure conversions between the models and stored `_source`s, with the checks a document passes before it is
written (size, vector dimension, JSON-serialisable values)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from ..core.errors import DimensionMismatch, InvalidInput
from ..core.models import Chunk, FileDoc, Hit, Link, date_from_path

# What a branch search builds from each hit: (branch, score, stored source) -> the caller's hit. The default is a
# `Hit`; a caller with a model of its own (ReMe's FileChunk) builds that straight from the source, one model per hit.
HitBuilder = Callable[[str, float, dict], Any]

MAX_TEXT_BYTES = 8 << 20
# How much of each neighbouring chunk a chunk's `context` field holds (the end of the one before, the start of the
# one after): a dialog turn whole, a long note's chunk only where it meets this one.
CONTEXT_CHARS = 400


# A dialog turn's opening: `Name: `, `- **Name:** `, `- [19:42] Name: ` (one to three capitalised words).
_SPEAKER = re.compile(
    r"\s*(?:[-*]\s+)?(?:\[\d{1,2}:\d{2}\]\s*)?(?:\*\*)?([^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2})"
    r"(?:\*\*)?:(?:\*\*)?\s"
)


def chunk_speaker(text: str) -> str:
    """Who says a chunk, lower-cased, where it opens as a dialog turn (`Caroline: ...`, `- **Sam:** ...`); else ""."""
    m = _SPEAKER.match(text)
    if not m or not all(word[0].isupper() for word in m[1].split()):
        return ""
    return m[1].lower()


# A trailing bracketed aside (` [shares a photo of ...]`, `(laughs)`) left out before asking whether a chunk asks.
_ASIDE = re.compile(r"\s*(?:\[[^\[\]]*\]|\([^()]*\))\s*$")
_ASIDE_ENDS = ("]", ")")


def chunk_asks(text: str) -> bool:
    """Whether a chunk is a question: its text, a trailing bracketed aside left out, ends with a question mark
    (`Melanie: What did you paint?`). A question kept in memory seldom holds the answer to one: the search weighs
    such hits by `question_factor`."""
    text = text.rstrip()
    # The aside pattern can only match a text that ends with a bracket: any other text is answered without running
    # it (it tries every position of the text, the cost of this function on a bulk load).
    while text.endswith(_ASIDE_ENDS) and (cut := _ASIDE.sub("", text)) != text:
        text = cut
    return text.endswith("?")


def chunk_contexts(chunks: list[Chunk]) -> dict[str, str]:
    """Each chunk's `context`: the text of the chunks just before and after it in its file (by start line), cut to
    CONTEXT_CHARS each; a chunk alone in its file has none. The words a turn answers (a question asked just before it,
    the name of what it speaks about) are often in its neighbours: BM25 over this field finds the turn by them."""
    by_path: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk)
    out: dict[str, str] = {}
    for siblings in by_path.values():
        siblings = sorted(siblings, key=lambda c: (c.start_line, c.end_line))
        for i, chunk in enumerate(siblings):
            before = siblings[i - 1].text[-CONTEXT_CHARS:] if i > 0 else ""
            after = siblings[i + 1].text[:CONTEXT_CHARS] if i + 1 < len(siblings) else ""
            if before or after:
                out[chunk.id] = f"{before}\n{after}".strip()
    return out


# Openings that label a line of a note rather than name who says it (`Note: ...`, `TODO: ...`): never a speaker.
LABELS = frozenset(
    "note notes todo to-do fixme done decision decisions action actions summary status update owner question "
    "answer q a tip tips warning important example result results goal goals context problem solution idea ideas "
    "date time title tags tag source sources link links see re subject from to cc bcc next why what how when where "
    "who step steps outcome reason risk risks plan agenda attendees follow-up followup nb ps".split()
)
MAX_SPEAKERS = 8  # a dialog's turns alternate between a few names; more distinct openings are a list of labels


def _turns(chunks: list[Chunk]) -> list[str]:
    """Who opens each line of a file's chunks that opens as a dialog turn, in order (label words left out)."""
    out = []
    for chunk in sorted(chunks, key=lambda c: (c.start_line, c.end_line)):
        for line in chunk.text.splitlines():
            if (name := chunk_speaker(line)) and name not in LABELS:
                out.append(name)
    return out


def is_dialog(turns: list[str]) -> bool:
    """Whether a file's turn openings (`_turns`) are a dialog: 2 to MAX_SPEAKERS names, the speaker changes from
    one turn to the next at least once, and some name speaks again (a list of fields, `Budget: ... Venue: ...`, names
    each once)."""
    names = set(turns)
    changes = sum(a != b for a, b in zip(turns, turns[1:]))
    return 2 <= len(names) <= MAX_SPEAKERS and changes >= 1 and len(turns) > len(names)


def dialog_speakers(chunks: list[Chunk]) -> dict[str, str]:
    """Each chunk's `speaker` (`chunk_speaker`), where its file is a dialog (`is_dialog`); chunks of a file that is
    not (a note whose lines open `Note:`, `TODO:`, `Decision:`, a list of fields) have none. `chunks` are whole
    files, as for `chunk_contexts`: the turn-length and speaker stages weigh dialog turns only."""
    by_path: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk)
    out: dict[str, str] = {}
    for siblings in by_path.values():
        if not is_dialog(_turns(siblings)):
            continue
        for chunk in siblings:
            if (name := chunk_speaker(chunk.text)) and name not in LABELS:
                out[chunk.id] = name
    return out


def chunk_source(chunk: Chunk, context: str = "", written: str = "", speaker: str = "") -> dict:
    """The `_source` of a chunk doc as the chunks template maps it (pure; the store validates before writing), with
    its neighbours' text as `context` where it has any (`chunk_contexts`), who says it as `speaker` where its file is
    a dialog (`dialog_speakers`), and the token of the write call that stores it as `written`
    (`reme_es.store.one_version`: hits one call wrote are of one version)."""
    src: dict[str, Any] = {
        "chunk_id": chunk.id,
        "path": chunk.path,
        "date": date_from_path(chunk.path),
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "hash": chunk.hash,
        "text": chunk.text,
        "metadata": chunk.metadata,
    }
    if context:
        src["context"] = context
    if speaker:
        src["speaker"] = speaker
    if chunk_asks(chunk.text):
        src["question"] = True
    src["words"] = len(chunk.text.split())
    if written:
        src["written"] = written
    if chunk.embedding is not None:
        src["embedding"] = chunk.embedding
    return src


def stored_chunk_source(chunk: Chunk, context: str = "", speaker: str = "") -> dict:
    """A chunk's `_source` as the index hands it back without its vector (to tell an unchanged chunk)."""
    src = chunk_source(chunk, context, speaker=speaker)
    src.pop("embedding", None)
    return as_stored(src)


def chunk_from_source(src: dict) -> Chunk:
    """A chunk read back from its stored source (without its vector)."""
    return Chunk(
        id=src["chunk_id"],
        path=src["path"],
        start_line=src.get("start_line", 0),
        end_line=src.get("end_line", 0),
        text=src.get("text", ""),
        hash=src.get("hash", ""),
        metadata=src.get("metadata") or {},
    )


def hit_from_source(branch: str, score: float, src: dict) -> Hit:
    """A branch's hit read back from its stored source: the chunk, scored `score` under the branch and as `score`."""
    return Hit(chunk=chunk_from_source(src), scores={branch: score, "score": score})


def file_source(file: FileDoc) -> dict:
    """The `_source` of a file doc; refuses values JSON cannot carry."""
    src = {
        "path": file.path,
        "st_mtime": file.st_mtime,
        "size": file.size,
        "hash": file.hash,
        "chunk_ids": file.chunk_ids,
        "front_matter": file.front_matter,
        "links": [{"target": link.target, "anchor": link.anchor} for link in file.links],
    }
    check_serialisable(f"file {file.path}", src)
    return src


def file_from_source(src: dict) -> FileDoc:
    """A file doc read back from its stored source."""
    path = src["path"]
    return FileDoc(
        path=path,
        st_mtime=src.get("st_mtime", 0.0),
        chunk_ids=src.get("chunk_ids") or [],
        front_matter=src.get("front_matter") or {},
        links=[link_from_file(path, x) for x in src.get("links") or []],
        size=src.get("size", 0),
        hash=src.get("hash", ""),
    )


def link_from_file(path: str, entry: dict) -> Link:
    """One outlink of a file doc's `links` list."""
    return Link(source=path, target=entry["target"], anchor=entry.get("anchor", ""))


def link_from_source(src: dict) -> Link:
    """A link read back from its stored link doc."""
    return Link(source=src["source"], target=src["target"], anchor=src.get("anchor", ""))


def link_source(link: Link, position: int) -> dict:
    """The `_source` of a link doc: the edge and its position among the file's outlinks."""
    return {"source": link.source, "target": link.target, "anchor": link.anchor, "position": position}


def as_stored(source: dict) -> dict:
    """A source as the server hands it back (JSON round trip: tuples become lists, dates strings)."""
    return orjson.loads(orjson.dumps(source))


def check_serialisable(what: str, value: Any) -> None:
    """Refuse a value that cannot be written as JSON, naming what it belongs to."""
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInput(
            f"{what} cannot be stored: {exc}. Decode it as UTF-8 text and pass plain JSON values."
        ) from exc


def check_vector(dims: int | None, vector: list[float] | None, what: str) -> None:
    """Refuse a vector the index cannot hold (no embedding field, or another dimension)."""
    if vector is None:
        return
    if not dims:
        raise DimensionMismatch(f"{what} carries a vector but the index has no embedding field")
    if len(vector) != dims:
        raise DimensionMismatch(f"{what} has a {len(vector)}-d vector; the index expects {dims}-d")


def checked_chunk_source(
    chunk: Chunk, dims: int | None, context: str = "", written: str = "", speaker: str = ""
) -> dict:
    """A chunk's source (with its `context`, `written` token and `speaker`) after the size, vector and JSON checks."""
    if len(chunk.text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise InvalidInput(
            f"chunk {chunk.id} of {chunk.path} has more than {MAX_TEXT_BYTES >> 20} MiB of text; split it"
        )
    check_vector(dims, chunk.embedding, f"chunk {chunk.id} of {chunk.path}")
    src = chunk_source(chunk, context, written, speaker)
    check_serialisable(f"chunk {chunk.id} of {chunk.path}", src)
    return src
