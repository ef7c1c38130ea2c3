"""ReMe's own Application, jobs and search step on the `opensearch` backend, compared with ReMe's `local` store.

The same workspace is indexed twice by ReMe's `init_changes_step` + `update_index_step`: once with the reme-es
plugin's `opensearch` file store against the test node, once with ReMe's `local` store. Embeddings come from a
deterministic hashing model registered as an `as_embedding` backend (no network), with ReMe's embedding cache
off so every provider call is counted. Node lists, links, filters, tags and branch scores must agree exactly;
only BM25 scores differ (ReMe tokenises with a regex, OpenSearch with the english analyzer), so keyword
*membership* is compared, not keyword scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

import numpy as np
from reme.application import Application
from reme.components.as_embedding import BaseAsEmbedding
from reme.components.component_registry import R
from reme.enumeration import LinkScopeEnum

from tests.integration.reme_app import index_once_job, quiet_config

pytestmark = pytest.mark.asyncio

DIMS = 64


class HashAsEmbedding(BaseAsEmbedding):
    """Hashed bag of words, L2-normalised: deterministic, offline; counts the texts it embeds."""

    texts: list[str] = []
    fail = False

    def initialize_model(self) -> None:
        """Nothing to construct."""

    async def __call__(self, inputs, **kwargs):
        """Embed each input."""
        if HashAsEmbedding.fail:
            raise RuntimeError("embedding provider is down")
        out = []
        for text in inputs:
            HashAsEmbedding.texts.append(str(text))
            v = np.zeros(self.dimensions, dtype=np.float32)
            for tok in str(text).lower().split():
                v[int(hashlib.md5(tok.encode()).hexdigest(), 16) % self.dimensions] += 1.0
            n = np.linalg.norm(v)
            out.append((v / n if n else v).tolist())
        return out


FILES = {
    "daily/2026-05-18/standup.md": """\
        ---
        name: standup
        description: Daily standup notes
        ---
        # Standup

        Discussed the opensearch migration plan with Alice.
        See [[digest/opensearch.md#Plan]] and [[digest/missing.md]].
        """,
    "daily/2026-05-20/retro.md": """\
        # Retro

        The kibana dashboards were slow; ranking needs work.
        Related: [[digest/ranking.md]] and [[digest/opensearch.md]].
        """,
    "daily/2026-06-02.md": """\
        # June

        Quiet day. Read about kibana alerting.
        """,
    "digest/opensearch.md": """\
        ---
        name: OpenSearch
        description: Notes about the OpenSearch file store backend
        memory_tags: [search, infra]
        ---
        # OpenSearch

        ## Plan

        Use hybrid BM25 plus kNN vector search; fuse with reciprocal rank fusion.
        Related: [[daily/2026-05-18/standup.md]] and [[digest/ranking.md|ranking notes]].

        ## Risks

        Mapping changes need a reindex.
        """,
    "digest/ranking.md": """\
        ---
        name: Ranking
        description: How results are ranked
        memory_tags: [search]
        ---
        # Ranking

        Reciprocal rank fusion weights the vector branch at 0.7.
        Back to [[digest/opensearch.md#Plan]].
        """,
    "resource/2026-05-19/events.jsonl": '{"event": "deploy", "service": "opensearch"}\n'
    '{"event": "rollback", "service": "kibana"}\n',
}
PATHS = sorted(FILES)


def write_workspace(root: Path) -> None:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text) if rel.endswith(".md") else text)


def app_config(ws: Path, backend: str, url: str, prefix: str) -> dict:
    store: dict = {"backend": backend, "embedding_store": "default"}
    if backend != "local":
        store.update(hosts=url, index_prefix=prefix)
    jobs = {"index_once": index_once_job(["daily_dir", "digest_dir", "resource_dir"], ["md", "jsonl"])}
    if backend != "local":
        # The same job answered by the reme-es step (one hybrid request); `search` keeps ReMe's search_step.
        jobs["search_native"] = {"backend": "base", "steps": [{"backend": "es_search_step"}]}
    components = {
        "as_embedding": {"default": {"backend": "hash", "dimensions": DIMS}},
        "embedding_store": {"default": {"backend": "local", "as_embedding": "default", "enable_cache": False}},
        "file_store": {"default": store},
        # Small chunks, so an edited file keeps some chunks unchanged (their vectors must be reused).
        "file_chunker": {"markdown": {"chunk_byte_size": 160}},
    }
    return quiet_config(ws, components, jobs)


def make_app(cfg: dict) -> Application:
    with R.preserve(allow_mutation=True):
        if R.get("as_embedding", "hash") is None:
            R.register(HashAsEmbedding, "hash")
        return Application(**cfg)


def disk_mtimes(ws: Path) -> dict[str, float]:
    return {rel: (ws / rel).stat().st_mtime for rel in PATHS if (ws / rel).exists()}


def link_tuples(links) -> list[tuple]:
    return [(x.source_path, x.target_path, x.target_anchor) for x in links]


async def observe(app: Application, ws: Path) -> dict:
    """Everything ReMe can see through the file store and the search job, in comparable form."""
    fs = app.context.components["file_store"]["default"]
    nodes = sorted(await fs.get_nodes(), key=lambda n: n.path)
    obs: dict = {
        "nodes": [(n.path, n.chunk_ids, link_tuples(n.links), n.front_matter.model_dump()) for n in nodes],
        "mtimes_match_disk": {n.path: n.st_mtime for n in nodes} == disk_mtimes(ws),
        "links": {},
    }
    for path in [*PATHS, "digest/missing.md"]:
        for scope in LinkScopeEnum:
            obs["links"][(path, scope.value)] = (
                link_tuples(await fs.get_outlinks(path, scope)),
                link_tuples(await fs.get_inlinks(path, scope)),
            )

    async def search(**kw) -> dict:
        resp = await app.run_job("search", **kw)
        assert resp.success, resp.answer
        return resp.metadata

    hybrid = await search(query="opensearch migration plan", limit=20)
    obs["hybrid_ids"] = sorted(r["id"] for r in hybrid["results"])
    obs["hybrid_counts"] = hybrid["counts"]
    obs["hybrid_vector_scores"] = {r["id"]: r["scores"]["vector"] for r in hybrid["results"]}
    obs["link_expansion"] = hybrid["link_expansion"]
    vector = await search(query="kibana dashboards", limit=20, vector_weight=1.0)
    # Order among equal similarities (here the zero ones) is storage order, which differs between stores.
    similar = [r for r in vector["results"] if r["scores"]["vector"] > 1e-3]
    obs["vector_ranking"] = [(r["path"], r["start_line"]) for r in similar]
    obs["vector_scores"] = [r["scores"]["vector"] for r in similar]
    obs["vector_unrelated"] = sorted((r["path"], r["start_line"]) for r in vector["results"] if r not in similar)
    keyword = await search(query="kibana", limit=20, vector_weight=0.0)
    obs["keyword_paths"] = sorted(r["path"] for r in keyword["results"])
    dated = await search(query="kibana", limit=20, vector_weight=0.0, start_date="2026-05-19", end_date="2026-06-01")
    obs["date_paths"] = sorted(r["path"] for r in dated["results"])
    window = await search(query="opensearch", limit=20, start_date="2026-05-18", end_date="2026-05-19")
    obs["date_window_paths"] = sorted({r["path"] for r in window["results"]})
    strict = await search(
        query="opensearch", limit=20, start_date="2026-05-18", end_date="2026-05-19", strict_date_filter=True
    )
    obs["strict_date_paths"] = sorted({r["path"] for r in strict["results"]})
    tagged = await search(query="fusion", limit=20, tags=["infra"])
    obs["tag_paths"] = sorted({r["path"] for r in tagged["results"]})
    obs["tag_filter"] = tagged["tag_filter"]
    return obs


async def index_once(app: Application, ws: Path) -> tuple[dict, list[str], dict]:
    """Run ReMe's index job: its counts, the texts embedded since `HashAsEmbedding.texts` was last emptied (read
    before `observe`, whose searches embed their queries), and what ReMe then sees."""
    indexed = await app.run_job("index_once")
    assert indexed.success, indexed.answer
    embedded = list(HashAsEmbedding.texts)
    return indexed.metadata["counts"], embedded, await observe(app, ws)


async def run_scenario(backend: str, ws: Path, url: str, prefix: str) -> dict:
    """Index, search, edit + delete + re-index, restart; what ReMe saw at each stage."""
    write_workspace(ws)
    cfg = app_config(ws, backend, url, prefix)
    out: dict = {}
    HashAsEmbedding.texts = []
    app = make_app(cfg)
    await app.start()
    try:
        out["first_counts"], embedded, out["initial"] = await index_once(app, ws)
        out["first_embedded"] = len(embedded)
        if backend != "local":
            native = await app.run_job("search_native", query="opensearch migration plan", limit=20)
            assert native.success, native.answer
            out["native"] = native.metadata
            out["native_answer"] = native.answer
            own = await app.run_job("search", query="opensearch migration plan", limit=20)  # ReMe's own step
            out["reme_answer"] = own.answer
            out["native_available"] = app.context.components["file_store"]["default"].store.native_hybrid_available()

        # Edit one file (append a paragraph), delete another, re-index.
        await asyncio.sleep(0.05)
        standup = ws / "daily/2026-05-18/standup.md"
        standup.write_text(standup.read_text() + "\n## Followup\n\nAlice will benchmark kibana queries.\n")
        (ws / "daily/2026-05-20/retro.md").unlink()
        HashAsEmbedding.texts = []
        out["second_counts"], embedded, out["edited"] = await index_once(app, ws)
        out["second_embedded"] = sorted(embedded)
    finally:
        await app.close()

    HashAsEmbedding.texts = []
    app = make_app(cfg)
    await app.start()
    try:
        fs = app.context.components["file_store"]["default"]
        if backend != "local":
            await fs.wait_backfill()
        out["restart_counts"], embedded, out["restarted"] = await index_once(app, ws)
        out["restart_embedded"] = len(embedded)
    finally:
        await app.close()
    return out


def _branch_scores(answer: str) -> dict[str, str]:
    """Per hit header of a search answer (path:lines), its branch scores (`vector=… keyword=…`)."""
    header = r"^========== (\S+) \[score=\S+ (vector=\S+ keyword=\S+)\] ==========$"
    return dict(re.findall(header, answer, re.MULTILINE))


async def test_reme_application_on_the_cluster_matches_local(server, es_prefix, tmp_path):
    es = await run_scenario(server.engine, tmp_path / "es", server.url, es_prefix)
    local = await run_scenario("local", tmp_path / "local", server.url, es_prefix)

    # --- what ReMe indexed, exactly ----------------------------------------------------------------
    assert es["first_counts"] == {"added": 6, "modified": 0, "deleted": 0}
    initial = es["initial"]
    assert [n[0] for n in initial["nodes"]] == PATHS
    assert initial["mtimes_match_disk"] is True
    nodes = {n[0]: n for n in initial["nodes"]}
    assert nodes["daily/2026-05-18/standup.md"][2] == [
        ("daily/2026-05-18/standup.md", "digest/opensearch.md", "Plan"),
        ("daily/2026-05-18/standup.md", "digest/missing.md", None),
    ]
    assert nodes["digest/opensearch.md"][3] == {
        "name": "OpenSearch",
        "description": "Notes about the OpenSearch file store backend",
        "memory_tags": ["search", "infra"],
    }
    assert nodes["resource/2026-05-19/events.jsonl"][2] == []
    links = initial["links"]
    assert links[("digest/opensearch.md", "real")][1] == [
        ("daily/2026-05-18/standup.md", "digest/opensearch.md", "Plan"),
        ("daily/2026-05-20/retro.md", "digest/opensearch.md", None),
        ("digest/ranking.md", "digest/opensearch.md", "Plan"),
    ]
    assert links[("daily/2026-05-18/standup.md", "real")][0] == [
        ("daily/2026-05-18/standup.md", "digest/opensearch.md", "Plan")
    ]
    assert links[("daily/2026-05-18/standup.md", "virtual")][0] == [
        ("daily/2026-05-18/standup.md", "digest/missing.md", None)
    ]
    assert links[("digest/missing.md", "virtual")] == ([], [("daily/2026-05-18/standup.md", "digest/missing.md", None)])
    assert links[("digest/missing.md", "real")] == ([], [])

    assert es["first_embedded"] == 9  # 4 chunks for opensearch.md, 1 for each other file
    assert [len(n[1]) for n in initial["nodes"]] == [1, 1, 1, 4, 1, 1]

    # --- search through ReMe's own search step ----------------------------------------------------
    assert initial["vector_ranking"] == [
        ("daily/2026-05-20/retro.md", 1),
        ("daily/2026-06-02.md", 1),
        ("digest/opensearch.md", 10),
    ]
    assert initial["hybrid_counts"]["hybrid"] is True
    assert initial["keyword_paths"] == [
        "daily/2026-05-20/retro.md",
        "daily/2026-06-02.md",
        "resource/2026-05-19/events.jsonl",
    ]
    assert initial["date_paths"] == ["daily/2026-05-20/retro.md", "resource/2026-05-19/events.jsonl"]
    assert initial["date_window_paths"] == [
        "daily/2026-05-18/standup.md",
        "digest/opensearch.md",
        "digest/ranking.md",
        "resource/2026-05-19/events.jsonl",
    ]
    assert initial["strict_date_paths"] == ["daily/2026-05-18/standup.md", "resource/2026-05-19/events.jsonl"]
    assert initial["tag_paths"] == ["digest/opensearch.md"]
    assert initial["tag_filter"] == {"requested": True, "applied": True, "tags": ["infra"], "matched_paths": 1}
    standup_exp = initial["link_expansion"]["daily/2026-05-18/standup.md"]
    assert standup_exp == {
        "outlinks": [
            {
                "path": "digest/opensearch.md",
                "meta": {"name": "OpenSearch", "description": "Notes about the OpenSearch file store backend"},
                "anchors": ["Plan"],
            }
        ],
        "inlinks": [
            {
                "path": "digest/opensearch.md",
                "meta": {"name": "OpenSearch", "description": "Notes about the OpenSearch file store backend"},
                "anchors": [],
            }
        ],
    }

    # --- the reme-es search step: the store's default fusion (z-score at vector weight 0.55 after pseudo-relevance
    # feedback), client-side on every engine; each hit shows the original query's branch scores -------------------
    native = es["native"]
    assert native["counts"]["fusion"] == "client" and es["native_available"] is False
    assert sorted(r["id"] for r in native["results"]) == initial["hybrid_ids"]
    assert native["link_expansion"] == initial["link_expansion"]
    # the answer header of each hit shows the branch scores as ReMe's own step prints them: the same vector score;
    # the keyword branch of hybrid search also matches the text of a chunk's neighbours (`context_boost`), so its score
    # is ReMe's text-only BM25 score or more, and a chunk only its neighbours' words find shows one where ReMe has none
    mine, reme = _branch_scores(es["native_answer"]), _branch_scores(es["reme_answer"])
    assert sorted(mine) == sorted(reme) and len(mine) == len(native["results"])
    for hit, scores in mine.items():
        (vector, keyword), (reme_vector, reme_keyword) = scores.split(), reme[hit].split()
        assert vector == reme_vector
        assert reme_keyword == "keyword=-" or float(keyword[8:]) >= float(reme_keyword[8:]) > 0
    assert any(mine[h].split()[1] != reme[h].split()[1] for h in mine)  # the neighbours' text counted somewhere
    assert any("=-" not in scores for scores in mine.values())  # hits both branches found show both scores

    # --- edit + delete: only the changed chunks are embedded --------------------------------------
    assert es["second_counts"] == {"added": 0, "modified": 1, "deleted": 1}
    # standup.md's first chunk is unchanged (same id and text): its stored vector is reused
    assert es["second_embedded"] == ["# Standup\n\n## Followup\n\nAlice will benchmark kibana queries."]
    edited = es["edited"]
    assert [n[0] for n in edited["nodes"]] == [p for p in PATHS if p != "daily/2026-05-20/retro.md"]
    assert edited["mtimes_match_disk"] is True
    assert edited["keyword_paths"] == [
        "daily/2026-05-18/standup.md",
        "daily/2026-06-02.md",
        "resource/2026-05-19/events.jsonl",
    ]
    # retro.md is gone: its link to digest/ranking.md no longer counts; opensearch.md lost one inlink
    assert edited["links"][("digest/ranking.md", "real")][1] == [("digest/opensearch.md", "digest/ranking.md", None)]
    assert edited["links"][("daily/2026-05-20/retro.md", "virtual")][1] == []

    # --- restart: nothing re-indexed, nothing re-embedded, same view -------------------------------
    assert es["restart_counts"] == {"added": 0, "modified": 0, "deleted": 0}
    assert es["restart_embedded"] == 0
    assert es["restarted"] == es["edited"]

    # --- ReMe's local store sees the same thing ---------------------------------------------------
    for key in (
        "first_counts",
        "first_embedded",
        "second_counts",
        "second_embedded",
        "restart_counts",
        "restart_embedded",
    ):
        assert es[key] == local[key], key
    for stage in ("initial", "edited", "restarted"):
        mine, theirs = es[stage], local[stage]
        # Equal everywhere except BM25 score values (regex tokenizer vs english analyzer), which the
        # observations do not include; the vector branch uses the same float16 vectors on both.
        for key in mine:
            if key == "hybrid_counts":
                continue  # candidate counts per branch depend on how many chunks each BM25 matches
            if key in ("hybrid_vector_scores", "vector_scores"):
                # ReMe computes cosine on float16 arrays, the k-NN plugin in float32 from the same float16 values
                assert mine[key] == pytest.approx(theirs[key], abs=2e-3), (stage, key)
                continue
            assert mine[key] == theirs[key], (stage, key)


async def test_embedding_failure_keeps_keyword_search_and_backfills_from_the_index(server, es_prefix, tmp_path):
    ws = tmp_path / "ws"
    write_workspace(ws)
    cfg = app_config(ws, server.engine, server.url, es_prefix)
    cfg["components"]["embedding_store"]["default"]["max_retries"] = 1
    HashAsEmbedding.texts = []
    HashAsEmbedding.fail = True
    app = make_app(cfg)
    await app.start()
    try:
        fs = app.context.components["file_store"]["default"]
        indexed = await app.run_job("index_once")
        assert indexed.success, indexed.answer
        assert indexed.metadata["counts"] == {"added": 6, "modified": 0, "deleted": 0}
        assert fs.embedding_store.is_healthy is False
        missing = [c.id async for page in fs.store.vectors.without_vectors() for c in page]
        assert len(missing) == 9  # every chunk stored, none with a vector

        resp = await app.run_job("search", query="kibana", limit=20)
        assert resp.success, resp.answer
        assert resp.metadata["counts"] == {"vector": 0, "keyword": 3, "returned": 3, "hybrid": False}
        assert sorted(r["path"] for r in resp.metadata["results"]) == [
            "daily/2026-05-20/retro.md",
            "daily/2026-06-02.md",
            "resource/2026-05-19/events.jsonl",
        ]

        # The provider recovers: the backfill reads the chunks from the index and embeds each once.
        HashAsEmbedding.fail = False
        assert await fs.resume_embedding(verified=True) is True
        await fs.wait_backfill()
        assert fs.embedding_store.is_healthy is True
        assert len(HashAsEmbedding.texts) == 9
        assert [c.id async for page in fs.store.vectors.without_vectors() for c in page] == []
        resp = await app.run_job("search", query="kibana", limit=20)
        assert resp.metadata["counts"] == {"vector": 9, "keyword": 3, "returned": 9, "hybrid": True}
    finally:
        HashAsEmbedding.fail = False
        await app.close()
