"""`reme-es search`: hybrid, keyword or vector search of the indexed workspace, with each hit's links."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.errors import ConfigError
from .app import (
    _check_model,
    _embedder,
    _embedding_given,
    _err,
    _known_workspace,
    _open,
    _recorded_embedder,
    _run,
    _settings,
    common,
    hint,
)

if TYPE_CHECKING:
    from ..core.models import SearchResult
    from ..core.options import Options
    from ..store import MemoryStore


@click.command()
@click.argument("query")
@click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 1000))
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "keyword", "vector"]),
    help="Default: hybrid when the index has vectors, else keyword (with a note).",
)
@click.option("--start-date", help="Only files dated on/after YYYY-MM-DD (undated files pass).")
@click.option("--end-date", help="Only files dated on/before YYYY-MM-DD (undated files pass).")
@click.option("--path-prefix", multiple=True, help="Only paths starting with this (repeatable).")
@click.option("--min-score", default=0.0, type=float)
@click.option("--links/--no-links", default=True, help="Show outlinks/inlinks of each hit's file.")
@click.option(
    "--embedding",
    type=click.Choice(["none", "local", "e5", "openai"]),
    help="Query embedder (default: the model the index records for its vectors).",
)
@click.option(
    "--date-boost",
    type=click.FloatRange(0, 10),
    help='Lift hits whose note is dated where the question points ("last June", "two weeks after the move") by '
    'this much of the fused score range, for a question about the past ("what did ..."; setting date_boost; '
    "default 0.5, 0.4 of it for a window counted from an event; 0: off).",
)
@click.option(
    "--relation-vector-weight",
    type=click.FloatRange(0, 1),
    help="Vector weight of client fusion for a question naming someone through a named person (\"Kwame's "
    'stepsister"; setting relation_vector_weight; default 0.1, the vector_weight: off).',
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show each hit's rank and score after every stage of the search (BM25, k-NN, fusion, collapse, speaker, "
    "date, ...) and which stages moved it; with --json, an `explain` object.",
)
@click.option("--json", "as_json", is_flag=True)
@common()
def search(
    query,
    limit,
    mode,
    start_date,
    end_date,
    path_prefix,
    min_score,
    links,
    embedding,
    explain,
    as_json,
    workspace,
    config_file,
    **flags,
):
    """Search the indexed workspace; prints each hit as ReMe does, with its file's links.

    Hybrid search fuses BM25 and k-NN by the settings `fusion`, `vector_weight`, `feedback` and `collapse`
    (reme-es.yaml, or REME_ES_FUSION, REME_ES_VECTOR_WEIGHT, REME_ES_FEEDBACK, REME_ES_COLLAPSE). With `collapse`
    (default true) a chunk text stored more than once is shown once, marked repeats=N."""
    _run(
        lambda: _search(
            _settings(workspace, config_file, embedding=embedding, **flags),
            query,
            limit,
            mode,
            start_date,
            end_date,
            list(path_prefix),
            min_score,
            links,
            as_json,
            workspace,
            explain,
        )
    )


def _format_scores(scores: dict[str, float]) -> str:
    parts = [f"score={scores.get('score', 0.0):.4f}"]
    parts += [f"{k}={scores[k]:.4f}" for k in ("keyword", "vector") if k in scores]
    if scores.get("repeats"):  # the same text in that many more chunks, left out (`collapse`)
        parts.append(f"repeats={int(scores['repeats'])}")
    return " ".join(parts)


def _explained(result) -> dict[str, list[str]]:
    """Each hit's explanation lines (`--explain`): its rank and score after every stage, then what moved it; the
    stages and their notes, printed once before the hits, under the key `""`."""
    from ..store.explain import explain, moved_text

    out = explain(result)
    named = "; ".join(f"{s['name']} ({s['note']})" if s["note"] else s["name"] for s in out["stages"])
    lines = {"": [f"stages: {named}"]}
    for h in out["ranked"]:
        cells = []
        for r in h["stages"]:
            cells.append(f"{r['stage']} #{r['rank']} {r['score']:.4f}" if r["rank"] is not None else f"{r['stage']} -")
        moved = ", ".join(moved_text(m) for m in h["moved_by"]) or "nothing"
        lines[h["id"]] = [f"  stages: {' | '.join(cells)}", f"  moved by: {moved}"]
    return lines


def _group_links(neighbours) -> dict[str, list[dict]]:
    out: dict[str, dict[str, dict]] = {"out": {}, "in": {}}
    for n in neighbours:
        item = out[n.direction].setdefault(
            n.path, {"path": n.path, "real": n.real, "name": n.name, "description": n.description, "anchors": []}
        )
        if n.anchor and n.anchor not in item["anchors"]:
            item["anchors"].append(n.anchor)
    return {"outlinks": list(out["out"].values()), "inlinks": list(out["in"].values())}


def _render_links(grouped: dict[str, list[dict]]) -> list[str]:
    lines = []
    for direction, arrow in (("outlinks", "→"), ("inlinks", "←")):
        items = grouped.get(direction) or []
        if not items:
            continue
        lines.append(f"  {direction} ({len(items)}):")
        for item in items:
            meta = "  ".join(f'{k}="{item[k]}"' for k in ("name", "description") if item[k])
            if not item["real"]:
                meta = "(virtual: not indexed)"
            lines.append(f"    {arrow} {item['path']}  {meta or '(no meta)'}")
            lines += [f"        via anchor=#{a}" for a in item["anchors"]]
    return lines


async def _query_vector(
    settings: Options, store: MemoryStore, query: str, mode: str, asked: bool, workspace: Path | None = None
):
    """The query's vector from the model that made the index's vectors; None (with a note) when the index has
    none and hybrid was the default; ConfigError when the asked mode cannot run."""
    import asyncio

    chunks = store.index("chunks")
    if not store.dims:
        reason = f"index {chunks} has no vectors"
        reindex = hint("reindex --embedding local", workspace)
        fix = f"`{reindex}`, then `{hint('sync --embedding local', workspace or Path('.'), positional=True)}`"
    elif _embedding_given(settings):
        embedder = _embedder(settings)
        if embedder is not None:
            await _check_model(store, embedder, "this search")
            return (await asyncio.to_thread(embedder.embed_queries, [query]))[0]
        reason, fix = "--embedding none was given", "leave --embedding out to use the index's model"
    else:
        embedder = await _recorded_embedder(settings, store)
        if embedder is not None:
            return (await asyncio.to_thread(embedder.embed_queries, [query]))[0]
        raise ConfigError(
            f"index {chunks} holds {store.dims}-d vectors but does not record which model made them: pass "
            "--embedding local|e5|openai (the model you synced with), or --mode keyword"
        )
    if asked:
        raise ConfigError(f"--mode {mode} needs vectors, but {reason}: run {fix}, or use --mode keyword")
    _err(f"note: {reason}, so this search is BM25 only; for hybrid search run {fix}")
    return None


def _folder_of_key(settings: Options, workspace: Path | None) -> Path | None:
    """The folder the command's workspace key is the key of (`-w`'s, by default the current one); None when the key
    is another's, given alone (--workspace-key, REME_ES_WORKSPACE_KEY, reme-es.yaml): that folder is not the one."""
    from ..core.options import default_workspace_key

    folder = workspace or settings.folder
    if folder is None:
        return None
    return folder.resolve() if default_workspace_key(folder) == settings.index.workspace_key else None


async def _search(
    settings: Options,
    query,
    limit,
    mode,
    start_date,
    end_date,
    prefixes,
    min_score,
    links,
    as_json,
    workspace=None,
    explain=False,
):
    from ..core.errors import InvalidFilter
    from ..core.models import SearchFilter

    # An empty value would filter nothing (a "" prefix matches every path, a "" date is no bound): refused, not dropped
    for option, value in (("--start-date", start_date), ("--end-date", end_date)):
        if value is not None and not value.strip():
            raise InvalidFilter(f"{option} is empty: give a date written YYYY-MM-DD, or leave the option out")
    if "" in prefixes:
        raise InvalidFilter("--path-prefix is empty: it would match every path; leave the option out to search all")
    search_filter = SearchFilter.parse({"start_date": start_date, "end_date": end_date, "path_prefix": prefixes})
    asked, mode = mode, mode or "hybrid"
    store = await _open(settings, create=False)
    try:
        await _known_workspace(store, _folder_of_key(settings, workspace))
        vector = None
        if mode != "keyword":
            vector = await _query_vector(settings, store, query, mode, asked is not None, workspace)
            if vector is None:
                mode = "keyword"
        result = await store.search(query, vector, limit, search_filter, mode=mode, min_score=min_score)
        paths = list(dict.fromkeys(h.chunk.path for h in result.hits))
        expansion = (
            {p: _group_links(n) for p, n in (await store.links.expand(paths)).items()} if links and paths else {}
        )
    finally:
        await store.close()
    _print_result(result, query, mode, expansion, as_json, explain)
    return 0


def _print_result(result: SearchResult, query: str, mode: str, expansion: dict, as_json: bool, explain: bool) -> None:
    """The hits as ReMe shows them (each with its file's links), or as one JSON object; with `explain`, each stage."""
    if as_json:
        hits = [
            {
                "path": h.chunk.path,
                "start_line": h.chunk.start_line,
                "end_line": h.chunk.end_line,
                "scores": h.scores,
                "text": h.chunk.text,
                **expansion.get(h.chunk.path, {}),
            }
            for h in result.hits
        ]
        payload: dict = {"query": query, "mode": mode, "fusion": result.fusion, "hits": hits}
        if explain:
            from ..store.explain import explain as explained

            payload["explain"] = explained(result)
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    if not result.hits:
        click.echo("no results")
    breakdown = _explained(result) if explain else {}
    for line in breakdown.get("", []):
        click.echo(line)
    for h in result.hits:
        c = h.chunk
        click.echo(f"========== {c.path}:{c.start_line}-{c.end_line} [{_format_scores(h.scores)}] ==========")
        click.echo(c.text)
        for line in breakdown.get(c.id, []):
            click.echo(line)
        for line in _render_links(expansion.get(c.path, {})):
            click.echo(line)
