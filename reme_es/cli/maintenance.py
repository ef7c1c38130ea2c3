"""`reme-es optimize`, `status`, `templates install|diff`, `reindex` and `drop`."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import click

from ..adapters.base import redact_host
from ..config import Settings
from ..errors import ConfigError, MappingError
from ..store import MemoryStore
from ..templates import IndexOptions
from .base import _check_model, _client, _embedder, _err, _open, _run, _settings, common, hint, main


@main.command()
@click.option(
    "--deleted-ratio",
    default=0.1,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Expunge deletes in indices with at least this share of deleted docs.",
)
@click.option("--max-segments", type=click.IntRange(1), help="Merge down to this many segments instead.")
@click.option("--json", "as_json", is_flag=True)
@common()
def optimize(deleted_ratio, max_segments, as_json, workspace, config_file, **flags):
    """Force-merge the indices: expunge deleted documents (or merge to --max-segments)."""
    _run(lambda: _optimize(_settings(workspace, config_file, **flags), deleted_ratio, max_segments, as_json))


async def _optimize(settings: Settings, deleted_ratio, max_segments, as_json) -> int:
    store = await _open(settings, create=False)
    try:
        result = await store.optimize(deleted_ratio, max_segments)
    finally:
        await store.close()
    if as_json:
        click.echo(json.dumps(result))
        return 0
    for kind, before in result["before"].items():
        after = result["after"][kind]
        verb = "merged " if kind in result["merged"] else "left   "
        click.echo(
            f"{verb}{store.index(kind)}: deleted {before['deleted']} -> {after['deleted']}, "
            f"segments {before['segments']} -> {after['segments']}"
        )
    return 0


@main.command()
@click.option("--json", "as_json", is_flag=True)
@common()
def status(as_json, workspace, config_file, **flags):
    """Server version and capabilities, per-index docs/deleted/segments, and the last sync."""
    _run(lambda: _status(_settings(workspace, config_file, **flags), as_json))


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


async def _status(settings: Settings, as_json: bool) -> int:
    from ..connect import make_dialect, resolve_engine
    from ..sync.sync import State, state_path

    cs, engine = await _client(settings)
    stats = None
    try:
        store = await _open(settings, create=False, client=(cs, engine))
    except MappingError:
        engine = await resolve_engine(cs, engine)
        dialect = make_dialect(engine, cs)
        try:
            caps = await dialect.probe()
        finally:
            await dialect.close()
    else:
        try:
            caps = store.caps
            stats = await store.stats()
        finally:
            await store.close()
    state = State(state_path(settings.index_prefix, cs.hosts)).data
    info = {
        "hosts": cs.hosts,
        "engine": caps.engine,
        "version": caps.version,
        "capabilities": caps.model_dump(exclude={"engine", "version"}),
        "index_prefix": settings.index_prefix,
        "indices": stats,
        "last_sync": state.get("last_sync"),
        "last_summary": state.get("summary"),
    }
    if as_json:
        click.echo(json.dumps(info))
        return 0
    flags = [k for k, v in info["capabilities"].items() if v is True]
    click.echo(f"server: {caps.engine} {caps.version} at {', '.join(redact_host(h) for h in cs.hosts)}")
    click.echo(f"capabilities: {', '.join(flags) or 'none'}")
    if caps.knn_engines:
        click.echo(f"k-NN engines: {', '.join(caps.knn_engines)}")
    click.echo(f"index prefix: {settings.index_prefix}")
    if stats is None:
        click.echo("indices: none yet (run `reme-es sync`)")
    else:
        for kind, s in stats.items():
            click.echo(
                f"  {kind:<7} {s['index']}: {s['docs']} docs, {s['deleted']} deleted, "
                f"{s['segments']} segments, {_size(s['bytes'])}"
            )
    if info["last_sync"]:
        when = dt.datetime.fromtimestamp(info["last_sync"]).strftime("%Y-%m-%d %H:%M:%S")
        s = info["last_summary"] or {}
        click.echo(
            f"last sync: {when} from {state.get('workspace', '?')} ({s.get('added', 0)} added, "
            f"{s.get('modified', 0)} modified, {s.get('deleted', 0)} deleted, {len(s.get('failed', []))} failed)"
        )
    else:
        click.echo("last sync: none recorded on this machine")
    return 0


@main.group()
def templates() -> None:
    """Install the index templates, or compare the live indices with them."""


@templates.command("install")
@common()
def templates_install(workspace, config_file, **flags):
    """Create missing indices and the hybrid pipeline (idempotent); existing ones are checked."""
    _run(lambda: _templates_install(_settings(workspace, config_file, **flags)))


async def _templates_install(settings: Settings) -> int:
    from ..maintenance import concrete_indices

    embedder = _embedder(settings)
    store = await _open(settings, dims=embedder.dimensions if embedder else None)
    try:
        if embedder:
            await _check_model(store, embedder, "these templates")
        for kind in ("chunks", "files", "links"):
            click.echo(f"{store.index(kind)} -> {', '.join(await concrete_indices(store, kind))}")
        if store.native_hybrid_available():
            click.echo(f"search pipeline: {store.pipeline_name()}")
    finally:
        await store.close()
    return 0


@templates.command("diff")
@common()
def templates_diff(workspace, config_file, **flags):
    """Show how the live mappings differ from the templates (exit 1 when they differ)."""
    _run(lambda: _templates_diff(_settings(workspace, config_file, **flags)))


async def _templates_diff(settings: Settings) -> int:
    from ..maintenance import template_diff

    store = await _open(settings, create=False)
    try:
        diffs = await template_diff(store, IndexOptions(dims=store.dims))
    finally:
        await store.close()
    for kind, problems in diffs.items():
        click.echo(f"{store.index(kind)}: {'up to date' if not problems else f'{len(problems)} difference(s)'}")
        for p in problems:
            click.echo(f"  {p}")
    return 1 if any(diffs.values()) else 0


@main.command()
@click.option(
    "--embedding",
    type=click.Choice(["none", "local", "e5", "openai"]),
    help="Rebuild for this embedder's dimension (vectors are dropped when it changes).",
)
@common()
def reindex(embedding, workspace, config_file, **flags):
    """Rebuild every index as <prefix>-<kind>-<n+1> from the current templates and swap the aliases."""
    _run(lambda: _reindex(_settings(workspace, config_file, embedding=embedding, **flags), workspace))


async def _reindex(settings: Settings, workspace=None) -> int:
    from ..maintenance import record_vectors_model, vectors_model
    from ..maintenance import reindex as run_reindex
    from ..sync.embed import describe_model, same_model

    embedder = _embedder(settings)
    store = await _open(settings, create=False)
    try:
        recorded = await vectors_model(store) if store.dims else None
        target = IndexOptions(dims=embedder.dimensions if embedder else store.dims)
        kept = target.dims == store.dims
        if embedder and recorded and kept and not same_model(recorded, embedder.identity):
            raise ConfigError(
                f"index {store.index('chunks')} holds vectors made by {describe_model(recorded)} of the same dimension "
                f"as {describe_model(embedder.identity)}: reindex would keep them. `reme-es drop --yes` and sync again"
            )
        for r in await run_reindex(store, target):
            vectors = "" if r["vectors"] == "none" else f", vectors {r['vectors']}"
            click.echo(f"{r['alias']}: {r['old']} -> {r['new']} ({r['docs']} docs{vectors})")
    finally:
        await store.close()
    store = await _open(settings, dims=target.dims)  # checks the new indices, creates the pipeline if needed
    try:
        model = embedder.identity if embedder else recorded if kept else None
        if target.dims and model:  # the new index's _meta comes from the template: carry the model over
            await record_vectors_model(store, model)
    finally:
        await store.close()
    if target.dims and embedder:
        sync = hint("sync", workspace or Path("."), positional=True)
        click.echo(f"run `{sync}` to embed chunks that have no vector yet")
    return 0


@main.command()
@click.option("--yes", is_flag=True, help="Really delete (without it, drop lists what it would delete and exits 2).")
@click.option("--json", "as_json", is_flag=True)
@common()
def drop(yes, as_json, workspace, config_file, **flags):
    """Delete the prefix's indices, aliases and hybrid search pipelines, and the local sync state."""
    _run(lambda: _drop(_settings(workspace, config_file, **flags), yes, as_json))


async def _drop(settings: Settings, yes: bool, as_json: bool) -> int:
    from ..connect import make_dialect, resolve_engine
    from ..maintenance import drop_plan, drop_prefix
    from ..sync.sync import state_path

    cs, engine = await _client(settings)
    engine = await resolve_engine(cs, engine)
    store = MemoryStore(make_dialect(engine, cs), settings.index_prefix)
    try:
        plan = await drop_plan(store)
        found = any(plan.values())
        if not yes:
            _err(
                f"error: drop would delete, for prefix {store.prefix}: indices {', '.join(plan['indices']) or 'none'}; "
                f"aliases {', '.join(plan['aliases']) or 'none'}; pipelines {', '.join(plan['pipelines']) or 'none'}. "
                "Nothing was deleted: run again with --yes to delete them."
            )
            return 2
        if found:
            await drop_prefix(store, plan)
    finally:
        await store.close()
    state_path(settings.index_prefix, cs.hosts).unlink(missing_ok=True)
    if as_json:
        click.echo(json.dumps({"index_prefix": settings.index_prefix, "dropped": found, **plan}))
    elif not found:
        click.echo(f"nothing to drop: no indices, aliases or pipelines for prefix {settings.index_prefix}")
    else:
        for label in ("indices", "aliases", "pipelines"):
            click.echo(f"dropped {label}: {', '.join(plan[label]) or 'none'}")
    return 0
