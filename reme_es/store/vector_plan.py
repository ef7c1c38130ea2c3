"""Which chunks of a write need a vector: the one planner the ReMe file store and the workspace sync share.

    unchanged  stored exactly as given, with a vector: not written again, its vector not even read
    reusable   stored under the same id and text with a vector, something else changed (its lines moved): the
               stored vector is read back and written with it
    to_embed   the rest: the caller embeds them (or stores them without a vector)

`plan_vectors` is pure (stored sources in, plan out); `VectorStore.plan` reads what it needs from the index and
reads the reusable vectors back, so a caller only embeds `to_embed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.models import Chunk
from .sources import chunk_contexts, dialog_speakers, stored_chunk_source


@dataclass
class VectorPlan:
    """The chunks of one write, by what their vector needs (chunk objects are the caller's, not copies)."""

    unchanged: set[str] = field(default_factory=set)
    reusable: list[Chunk] = field(default_factory=list)
    to_embed: list[Chunk] = field(default_factory=list)


def plan_vectors(chunks: list[Chunk], stored: dict[str, dict], with_vector: set[str]) -> VectorPlan:
    """Sort chunks by what their vector needs, given their stored sources (no vectors) and which ids have one."""
    plan = VectorPlan()
    context = chunk_contexts(chunks)  # as the writer computes them: `chunks` are whole files
    speakers = dialog_speakers(chunks)
    for chunk in chunks:
        old = stored.get(chunk.id) if chunk.id in with_vector else None
        if old is not None and old.get("text") == chunk.text:
            content = {k: v for k, v in old.items() if k != "written"}  # the storing call's token is not content
            if content == stored_chunk_source(chunk, context.get(chunk.id, ""), speakers.get(chunk.id, "")):
                plan.unchanged.add(chunk.id)
            else:
                plan.reusable.append(chunk)
        else:
            plan.to_embed.append(chunk)
    return plan
