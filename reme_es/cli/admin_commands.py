"""`reme-es optimize`, `status`, `templates install|diff`, `reindex` and `drop`."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.errors import ConfigError, MappingError
from .app import _check_model, _client, _embedder, _err, _open, _run, _settings, common, hint

if TYPE_CHECKING:
    from ..core.options import Options
    from ..store import MemoryStore


@click.command()
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


async def _optimize(settings: Options, deleted_ratio, max_segments, as_json) -> int:
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


@click.command()
@click.option("--json", "as_json", is_flag=True)
@common()
def status(as_json, workspace, config_file, **flags):
    """Server version and capabilities, per-index docs/deleted/segments, and the last sync."""
    _run(lambda: _status(_settings(workspace, config_file, **flags), as_json))


async def _cluster(store: MemoryStore) -> dict:
    """The cluster's health and the unassigned shards of this index set (what a lost node leaves behind)."""
    health = await store.port.cluster_health() or {}
    unassigned = await store.port.unassigned_shards(f"{store.prefix}-*") if health.get("status") != "green" else []
    return {
        "status": health.get("status"), "nodes": health.get("number_of_nodes"),
        "unassigned_shards": health.get("unassigned_shards"), "set_unassigned": unassigned,
    }


def _echo_cluster(cluster: dict) -> None:
    if cluster.get("status") is None:
        return
    click.echo(
        f"cluster: {cluster['status']}, {cluster['nodes']} node(s), {cluster['unassigned_shards']} unassigned shard(s)"
    )
    for row in cluster["set_unassigned"]:
        kind = "primary" if row.get("prirep") == "p" else "replica"
        click.echo(f"  unassigned {kind} {row.get('index')}[{row.get('shard')}] ({row.get('unassigned.reason')})")
    if any(r.get("prirep") == "p" for r in cluster["set_unassigned"]):
        click.echo("  an index with an unassigned primary cannot answer: restart the node that held it, or restore "
                   "the index from a snapshot")


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


async def _status(settings: Options, as_json: bool) -> int:
    from ..core.checks import redact_host
    from ..store import MemoryStore
    from ..store.connect import make_dialect, resolve_engine
    from ..sync.workspace import State, state_path

    cs, engine = await _client(settings)
    stats = counts = workspace = None
    try:
        store = await _open(settings, create=False, client=(cs, engine))
    except MappingError:
        engine = await resolve_engine(cs, engine)
        store = MemoryStore(make_dialect(engine, cs), settings.index.index_prefix)
        try:
            caps = await store.dialect.probe()
            cluster = await _cluster(store)
        finally:
            await store.close()
    else:
        try:
            caps, workspace = store.caps, store.workspace
            cluster = await _cluster(store)
            stats = await store.stats()
            counts = await store.health_counts()
            cluster["workspaces_in_set"] = None if store.legacy else len(await store.workspaces())
            recorded = store.legacy or await store.registry.record(store.workspace) is not None
            if not recorded and not as_json:
                _err(f"note: workspace {workspace} is not recorded in index set {store.prefix} (never synced there, "
                     "or dropped): name a synced folder with -w FOLDER")
        finally:
            await store.close()
    state = State(state_path(settings.index.index_prefix, cs.hosts, workspace)).data
    info = {
        "hosts": cs.hosts,
        "engine": caps.engine,
        "version": caps.version,
        "capabilities": caps.model_dump(exclude={"engine", "version"}),
        "index_prefix": settings.index.index_prefix,
        "workspace": workspace,
        "workspace_counts": counts,
        "cluster": cluster,
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
    _echo_cluster(info["cluster"])
    if workspace:
        others = info["cluster"].get("workspaces_in_set")
        click.echo(f"index set: {settings.index.index_prefix} (workspace {workspace}; {others} workspace(s) recorded in the set)")
    else:
        click.echo(f"index prefix: {settings.index.index_prefix}")
        if stats is not None:
            click.echo("  (a set from before shared sets: `reme-es migrate` moves it into a shared one)")
    if counts is not None:
        click.echo(
            f"this workspace: {counts['files']} files, {counts['chunks']} chunks, {counts['vectors']} with vectors, "
            f"{counts['links']} links"
        )
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


@click.group()
def templates() -> None:
    """Install the index templates, or compare the live indices with them."""


@templates.command("install")
@common()
def templates_install(workspace, config_file, **flags):
    """Create missing indices and the hybrid pipeline (idempotent); existing ones are checked."""
    _run(lambda: _templates_install(_settings(workspace, config_file, **flags)))


async def _templates_install(settings: Options) -> int:
    from ..store.lifecycle import concrete_indices

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


async def _templates_diff(settings: Options) -> int:
    from ..store.lifecycle import template_diff

    store = await _open(settings, create=False)
    try:
        diffs = await template_diff(store, settings.index.model_copy(update={"dims": store.dims}))
    finally:
        await store.close()
    for kind, problems in diffs.items():
        click.echo(f"{store.index(kind)}: {'up to date' if not problems else f'{len(problems)} difference(s)'}")
        for p in problems:
            click.echo(f"  {p}")
    return 1 if any(diffs.values()) else 0


@click.command()
@click.option(
    "--embedding",
    type=click.Choice(["none", "local", "e5", "openai"]),
    help="Rebuild for this embedder's dimension (vectors are dropped when it changes).",
)
@common()
def reindex(embedding, workspace, config_file, **flags):
    """Rebuild every index as <prefix>-<kind>-<n+1> from the current templates and swap the aliases."""
    _run(lambda: _reindex(_settings(workspace, config_file, embedding=embedding, **flags), workspace))


async def _reindex(settings: Options, workspace=None) -> int:
    from ..embeddings.embedders import describe_model, same_model
    from ..store.lifecycle import live_options, record_vectors_model, vectors_model
    from ..store.lifecycle import reindex as run_reindex

    embedder = _embedder(settings)
    store = await _open(settings, create=False)
    try:
        recorded = await vectors_model(store) if store.dims else None
        target = await live_options(store, embedder.dimensions if embedder else store.dims)  # shards, replicas kept
        given = {k: getattr(settings.index, k) for k in ("shards", "replicas") if k in settings.index.model_fields_set}
        target = target.model_copy(update=given)
        kept = target.dims == store.dims
        if embedder and recorded and kept and not same_model(recorded, embedder.identity):
            raise ConfigError(
                f"index {store.index('chunks')} holds vectors made by {describe_model(recorded)} of the same dimension "
                f"as {describe_model(embedder.identity)}: reindex would keep them. `reme-es drop --yes` and sync again"
            )
        if not store.legacy:
            _err(f"rebuilding index set {store.prefix}: every one of its {len(await store.workspaces())} recorded "
                 "workspace(s), not only this one")
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


@click.command()
@click.option("--yes", is_flag=True, help="Really delete (without it, drop lists what it would delete and exits 2).")
@click.option("--set", "whole_set", is_flag=True, help="Drop the whole index set: every workspace in it.")
@click.option("--expunge", is_flag=True, help="Then force-merge so the deleted text leaves the disk too.")
@click.option("--json", "as_json", is_flag=True)
@common()
@click.option("--take-over", is_flag=True, help="Drop a workspace another folder or host writes.")
def drop(yes, whole_set, expunge, take_over, as_json, workspace, config_file, **flags):
    """Forget the workspace: delete its files, chunks and links from its index set (other workspaces are untouched),
    and the local sync state. With --set: delete the set's indices, aliases and hybrid search pipelines."""
    _run(lambda: _drop(_settings(workspace, config_file, **flags), yes, whole_set, expunge, as_json, take_over))


async def _drop(
    settings: Options, yes: bool, whole_set: bool, expunge: bool, as_json: bool, take_over: bool = False
) -> int:
    from ..sync.workspace import state_path

    cs, engine = await _client(settings)
    try:
        store = await _open(settings, create=False, client=(cs, engine))
    except MappingError:
        store = None  # no indices: only a whole-set drop has anything (leftovers) to do
    if store is not None and not whole_set and not store.legacy:
        try:
            return await _drop_workspace(settings, store, yes, expunge, as_json, take_over)
        finally:
            await store.close()
    if store is not None:
        await store.close()
    code = await _drop_set(settings, cs, engine, yes, as_json)
    if code == 0:
        state_path(settings.index.index_prefix, cs.hosts).unlink(missing_ok=True)
    return code


async def _drop_workspace(
    settings: Options, store: MemoryStore, yes: bool, expunge: bool, as_json: bool, take_over: bool
) -> int:
    """Forget one workspace of a shared set (`MemoryStore.drop_workspace`): only from the folder that writes it (as
    sync), and a workspace with nothing stored is said to be so."""
    from ..store.workspaces import writer_identity
    from ..sync.workspace import state_path

    counts = await store.health_counts()
    what = f"workspace {store.workspace} of index set {store.prefix}"
    record = await store.registry.record(store.workspace)
    if record is None and not any(counts.values()):
        click.echo(f"nothing to drop: {what} holds no document and has no record (never synced, or dropped already)")
        return 0
    folder = str(settings.folder.resolve()) if settings.folder is not None else None
    held = {k: record.get(k) for k in ("folder", "host")} if record else None
    if held and folder and held != writer_identity(folder) and not take_over:
        raise ConfigError(
            f"{what} is written from {held['folder']} on {held['host']}, not from {folder}: nothing was deleted. "
            "Drop it from there, or pass --take-over to drop it from here"
        )
    if not yes:
        _err(
            f"error: drop would delete {what}: {counts['files']} files, {counts['chunks']} chunks, "
            f"{counts['links']} links (other workspaces of the set are untouched; --set drops the whole set). "
            "Nothing was deleted: run again with --yes to delete them."
        )
        return 2
    started = time.monotonic()
    result = await store.drop_workspace(expunge)
    result["seconds"] = round(time.monotonic() - started, 3)
    state_path(store.prefix, store.dialect.settings.hosts, store.workspace).unlink(missing_ok=True)
    if as_json:
        click.echo(json.dumps({"index_prefix": store.prefix, **result}))
    else:
        merged = ""
        if expunge:
            x = result["expunged"]
            merged = f"; merged {', '.join(x['merged']) or 'nothing'} in {x['seconds']:.1f} s" + (
                f", {sum(x['left'].values())} deleted docs still held (the shards' retention leases): run "
                "`reme-es optimize --deleted-ratio 0` later" if x["left"] else ", no deleted text left on disk")
        click.echo(f"dropped {what}: {result['deleted']} documents in {result['seconds']:.1f} s{merged}")
    return 0


async def _drop_set(settings: Options, cs, engine, yes: bool, as_json: bool) -> int:
    """Delete a whole index set: its indices, aliases and pipelines."""
    from ..store import MemoryStore
    from ..store.connect import make_dialect, resolve_engine
    from ..store.lifecycle import drop_plan, drop_prefix

    engine = await resolve_engine(cs, engine)
    store = MemoryStore(make_dialect(engine, cs), settings.index.index_prefix)
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
    if as_json:
        click.echo(json.dumps({"index_prefix": settings.index.index_prefix, "dropped": found, **plan}))
    elif not found:
        click.echo(f"nothing to drop: no indices, aliases or pipelines for prefix {settings.index.index_prefix}")
    else:
        for label in ("indices", "aliases", "pipelines"):
            click.echo(f"dropped {label}: {', '.join(plan[label]) or 'none'}")
    return 0


@click.command()
@click.option("--from", "source", help="The index set to move from (default: the folder's own set from before shared "
              "sets, reme-<folder name>-<hash>).")
@click.option("--from-key", help="The workspace key in --from, when it is a shared set (default: this workspace's).")
@click.option("--keep-source", is_flag=True, help="Copy only: leave the source as it is.")
@click.option("--json", "as_json", is_flag=True)
@common()
def migrate(source, from_key, keep_source, as_json, workspace, config_file, **flags):
    """Move the workspace into a shared index set (default: reme) without loss: copy its files, chunks, vectors and
    links, check the counts, then drop the source. Stop other writers (sync --watch, ReMe) while it runs."""
    _run(lambda: _migrate(_settings(workspace, config_file, **flags), workspace, source, from_key, keep_source,
                          as_json))


async def _migrate(settings: Options, workspace: Path, source: str | None, from_key, keep_source, as_json) -> int:
    from ..core.options import SHARED_SET, default_prefix
    from ..store.connect import open_store
    from ..store.lifecycle import migrate as run_migrate
    from ..store.lifecycle import record_vectors_model, vectors_model

    source = source or default_prefix(workspace)
    settings = settings.with_index(index_prefix=settings.index.index_prefix or SHARED_SET)
    if source == settings.index.index_prefix and (from_key or settings.index.workspace_key) == settings.index.workspace_key:
        raise ConfigError(f"the workspace is in index set {source} already; name another set with --index-prefix")
    cs, engine = await _client(settings)
    try:
        old = await open_store(cs, source, engine, create=False, workspace=from_key or settings.index.workspace_key)
    except MappingError as exc:
        raise ConfigError(f"nothing to move: {exc}") from None
    try:
        if old.workspace is not None and not (await old.health_counts())["files"]:
            raise ConfigError(f"nothing to move: workspace {old.workspace} of index set {source} holds no file")
        new = await _open(settings, dims=old.dims, client=(cs, engine))
        try:
            await new.claim(str(workspace.resolve()))
            model = await vectors_model(old) if old.dims else None
            if model and await vectors_model(new) is None:
                await record_vectors_model(new, model)
            started = time.monotonic()
            copied = await run_migrate(old, new)
            seconds = round(time.monotonic() - started, 2)
        finally:
            await new.close()
        if not keep_source:
            await (old.drop() if old.legacy else old.drop_workspace())
    finally:
        await old.close()
    result = {"from": source, "to": settings.index.index_prefix, "workspace": settings.index.workspace_key, "copied": copied,
              "seconds": seconds, "source_dropped": not keep_source}
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(
            f"moved {copied['files']} files, {copied['chunks']} chunks, {copied['links']} links from {source} into "
            f"{settings.index.index_prefix} (workspace {settings.index.workspace_key}) in {seconds:.1f} s; "
            + ("the source is kept" if keep_source else f"{source} dropped")
        )
    return 0
