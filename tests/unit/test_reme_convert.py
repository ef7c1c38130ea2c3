"""The ReMe <-> reme-es conversions of the file store, without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("reme.schema", reason="ReMe is not installed: pip install 'reme-es[reme]'")

import numpy as np
from reme.schema import FileChunk, FileFrontMatter, FileLink, FileNode

from reme_es.core.checks import validate_prefix
from reme_es.core.models import Hit
from reme_es.core.options import default_prefix as default_index_prefix
from reme_es.reme.convert import (
    as_vector,
    file_chunk_from_source,
    to_chunk,
    to_file_chunk,
    to_file_doc,
    to_file_node,
)
from reme_es.store.sources import hit_from_source


def test_node_round_trip_keeps_mtime_links_anchors_and_front_matter():
    node = FileNode(
        path="daily/2026-05-18/a.md",
        st_mtime=1779091200.123456789,
        links=[
            FileLink(source_path="daily/2026-05-18/a.md", target_path="digest/x.md", target_anchor="Plan"),
            FileLink(source_path="daily/2026-05-18/a.md", target_path="digest/missing.md"),
        ],
        front_matter=FileFrontMatter(name="a", description="d", memory_tags=["t1"], extra={"k": 1}),
    )
    chunks = [FileChunk(path=node.path, start_line=1, end_line=3, text="hi").set_hash_id()]
    doc = to_file_doc(node, chunks)
    assert doc.chunk_ids == [chunks[0].id]
    assert [(x.target, x.anchor) for x in doc.links] == [("digest/x.md", "Plan"), ("digest/missing.md", "")]
    back = to_file_node(doc)
    assert back.st_mtime == node.st_mtime
    assert back.links == node.links
    assert back.front_matter.model_dump() == node.front_matter.model_dump()
    assert back.chunk_ids == [chunks[0].id]


def test_chunk_conversion_and_hit_scores():
    chunk = FileChunk(path="digest/x.md", start_line=2, end_line=4, text="body", metadata={"k": "v"}).set_hash_id()
    chunk.embedding = np.array([0.5, -0.25], dtype=np.float16)
    vector = as_vector(chunk.embedding)
    assert vector == [0.5, -0.25]
    stored = to_chunk(chunk, vector)
    assert (stored.id, stored.path, stored.start_line, stored.end_line, stored.metadata) == (
        chunk.id,
        "digest/x.md",
        2,
        4,
        {"k": "v"},
    )
    hit = to_file_chunk(Hit(chunk=stored.model_copy(update={"embedding": None}), scores={"keyword": 1.5, "score": 1.5}))
    assert hit.scores == {"keyword": 1.5, "score": 1.5}
    assert hit.embedding is None and hit.id == chunk.id and hit.text == "body"


def test_default_prefix_is_valid_and_differs_per_workspace(tmp_path: Path):
    a = default_index_prefix(tmp_path / "My Workspace")
    b = default_index_prefix(tmp_path / "other" / "My Workspace")
    assert a != b
    assert a.startswith("reme-my-workspace-")
    assert validate_prefix(a) == a and validate_prefix(b) == b
    assert default_index_prefix(tmp_path / "My Workspace") == a


@pytest.mark.parametrize(
    "src",
    [
        {
            "chunk_id": "c1",
            "path": "daily/2026-01-02.md",
            "date": "2026-01-02",
            "start_line": 3,
            "end_line": 9,
            "hash": "h",
            "text": "the ferry left at dawn",
            "metadata": {"section": "Morning"},
        },
        {"chunk_id": "c2", "path": "digest/notes.md", "text": "no lines stored"},  # what older indices hand back
    ],
)
def test_a_search_hit_read_straight_from_its_source_is_the_file_chunk_of_the_store_s_hit(src):
    for branch, score in (("keyword", 7.25), ("vector", 0.81)):
        direct = file_chunk_from_source(branch, score, src)
        assert direct == to_file_chunk(hit_from_source(branch, score, src))
        assert direct.scores == {branch: score, "score": score} and direct.text == src["text"]
