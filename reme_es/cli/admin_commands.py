"""`reme-es optimize`, `status`, `templates install|diff` and `reindex`: commands on an index set (`drop` and
`migrate`, which act on a workspace, are in `workspace_commands.py`)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..core.errors import AuthError, ConfigError, MappingError
from .app import _check_model, _chosen_set, _client, _embedder, _err, _open, _run, _settings, common, hint

if TYPE_CHECKING:
    from ..core.models import Capabilities
    from ..core.options import Options
    from ..store import MemoryStore


@click.command()
@click.option(
    "--deleted-ratio",
    type=click.FloatRange(0, 1),
    help="Only expunge deletes, in indices with at least this share of deleted docs, instead of merging for search "
    "(ReMe's optimize_index, when no merge is due, uses store.admin.optimize's, 0.1).",
)
@click.option(
    "--max-segments",
    type=click.IntRange(1),
    help="Merge down to this many segments (default: engine_settings.json optimize_job.segments).",
)
@click.option(
    "--calibrate",
    is_flag=True,
    help="Measure the k-NN width on the index even when not due (it is measured after a merge that changed the "
    "segment count, and when due; docs/benchmarks.md).",
)
@click.option("--json", "as_json", is_flag=True)
@common()
def optimize(deleted_ratio, max_segments, calibrate, as_json, workspace, config_file, **flags):
    """Merge the indices to the segments search wants, then measure the k-NN width (--deleted-ratio: expunge only).

    The optimize job at once (docs/operations.md): segments before and after, the merge's time, the width after it."""
    _run(lambda: _optimize(_settings(workspace, config_file, **flags), deleted_ratio, max_segments, calibrate, as_json))


async def _optimize(settings: Options, deleted_ratio, max_segments, calibrate, as_json) -> int:
    from ..store.optimize_job import optimize_for_search

    store = await _open(settings, create=False)
    try:
        if deleted_ratio is not None and max_segments is None:
            result = await store.admin.optimize(deleted_ratio=deleted_ratio, calibrate=not calibrate)
        else:  # the optimize job, at once: merged whatever the shape (no --max-segments: the rule's segment count)
            job = await optimize_for_search(store, segments=max_segments, force=True, calibrate=not calibrate)
            # None: no index stats here (a managed service, a grantee): the plain merge raises what it cannot do
            result = job if job is not None else await store.admin.optimize(max_segments=max_segments)
        if calibrate:
            result["knn_width"] = (await store.admin.calibrate()).to_meta()
    finally:
        await store.close()
    if as_json:
        click.echo(json.dumps(result))
        return 0
    _print_optimized(store, result)
    return 0


def _print_optimized(store: MemoryStore, result: dict) -> None:
    """What `optimize` did: per index the deleted docs and segments before and after; the merge's time; the width."""
    for kind, before in result["before"].items():
        after = result["after"][kind]
        verb = "merged " if kind in result["merged"] else "left   "
        click.echo(
            f"{verb}{store.index(kind)}: deleted {before['deleted']} -> {after['deleted']}, "
            f"segments {before['segments']} -> {after['segments']}"
        )
    if "seconds" in result:
        click.echo(f"merge: {result['seconds']} s (wall)")
    if width := result.get("knn_width"):
        reached = "reached" if width["reached"] else f"not reached ({width['stopped']})"
        click.echo(
            f"k-NN width {width['width']}: recall@{width['at']} {width['recall']:.3f} at depth {width['depth']}, "
            f"target {width['target']} {reached}; measured on {width['docs']} docs in {width['segments']} segments, "
            f"{width['sample']} probes, {width['seconds']} s, {width['requests']} requests"
        )


@click.command()
@click.option(
    "--workspaces",
    "list_workspaces",
    is_flag=True,
    help="Also list every workspace the index set records: key, folder, host, since (an admin's view: it shows other "
    "users' folders).",
)
@click.option("--json", "as_json", is_flag=True)
@common()
def status(list_workspaces, as_json, workspace, config_file, **flags):
    """Server version and capabilities, per-index docs/deleted/segments, and the last sync."""
    _run(lambda: _status(_settings(workspace, config_file, **flags), as_json, list_workspaces))


async def _cluster(store: MemoryStore) -> dict:
    """The cluster's health and the unassigned shards of this index set (what a lost node leaves behind)."""
    health = await store.inspect.cluster_health() or {}
    unassigned = await store.inspect.unassigned_shards() if health.get("status") != "green" else []
    return {
        "status": health.get("status"),
        "nodes": health.get("number_of_nodes"),
        "unassigned_shards": health.get("unassigned_shards"),
        "set_unassigned": unassigned,
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
        click.echo(
            "  an index with an unassigned primary cannot answer: restart the node that held it, or restore "
            "the index from a snapshot"
        )


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


async def _status(settings: Options, as_json: bool, list_workspaces: bool = False) -> int:
    from ..sync.state import State, state_path

    cs, engine = await _client(settings)
    caps, workspace, cluster, stats, counts, records = await _status_parts(settings, cs, engine, as_json)
    state = State(state_path(_chosen_set(settings), cs.hosts, workspace)).data
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
    if list_workspaces:
        info["workspaces"] = records
    if as_json:
        click.echo(json.dumps(info))
    else:
        _echo_status(info, state)
    return 0


async def _status_parts(settings: Options, cs, engine, as_json: bool) -> tuple:
    """Capabilities, workspace, cluster health, index stats, the workspace's counts and the set's workspace records
    (the last four None-ish when the set has no indices yet)."""
    from ..store.connect import open_cluster

    stats = counts = workspace = records = None
    caps: Capabilities | None
    try:
        store = await _open(settings, create=False, client=(cs, engine))
    except MappingError:
        on = await open_cluster(cs, engine)
        store = on.store(_chosen_set(settings))
        try:
            caps = await on.probe()
            cluster = await _cluster(store)
        finally:
            await store.close()
        return caps, workspace, cluster, stats, counts, records
    try:
        caps, workspace = store.caps, store.workspace
        cluster = await _cluster(store)
        try:
            stats = await store.admin.stats()
        except AuthError:  # a grant (`reme-es access`) reads no index statistics: they count every workspace's docs
            stats = {}
        counts = await store.inspect.health_counts()
        records = None if store.legacy else await store.inspect.workspaces()
        cluster["workspaces_in_set"] = None if records is None else len(records)
        recorded = store.legacy or await store.inspect.workspace_record() is not None
        if not recorded and not as_json:
            _err(
                f"note: workspace {workspace} is not recorded in index set {store.prefix} (never synced there, "
                "or dropped): name a synced folder with -w FOLDER (--workspaces lists the recorded ones)"
            )
    finally:
        await store.close()
    return caps, workspace, cluster, stats, counts, records


def _echo_status(info: dict, state: dict) -> None:
    """`reme-es status` for a reader: `info` is what `--json` prints, `state` the local sync state."""
    from ..core.checks import redact_host

    caps, prefix, workspace = info["capabilities"], info["index_prefix"], info["workspace"]
    stats, counts = info["indices"], info["workspace_counts"]
    flags = [k for k, v in caps.items() if v is True]
    click.echo(f"server: {info['engine']} {info['version']} at {', '.join(redact_host(h) for h in info['hosts'])}")
    click.echo(f"capabilities: {', '.join(flags) or 'none'}")
    if caps.get("knn_engines"):
        click.echo(f"k-NN engines: {', '.join(caps['knn_engines'])}")
    _echo_cluster(info["cluster"])
    if workspace:
        others = info["cluster"].get("workspaces_in_set")
        click.echo(f"index set: {prefix} (workspace {workspace}; {others} workspace(s) recorded in the set)")
    else:
        click.echo(f"index prefix: {prefix}")
        if stats is not None:
            click.echo("  (a set from before shared sets: `reme-es migrate` moves it into a shared one)")
    if info.get("workspaces") is not None:
        for w in info["workspaces"]:
            mark = "*" if w.get("workspace") == workspace else " "
            click.echo(f"  {mark} {w.get('workspace')}: {w.get('folder')} on {w.get('host')}, since {w.get('since')}")
    if counts is not None:
        click.echo(
            f"this workspace: {counts['files']} files, {counts['chunks']} chunks, {counts['vectors']} with vectors, "
            f"{counts['links']} links"
        )
    if stats == {}:
        click.echo(
            "indices: no statistics for these credentials (they need `indices:monitor/stats` on the set, which a "
            "workspace grant does not give: they count every workspace's documents)"
        )
    elif stats is None:
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


@click.group()
def templates() -> None:
    """Install the index templates, or compare the live indices with them."""


@templates.command("install")
@common()
def templates_install(workspace, config_file, **flags):
    """Create missing indices and the hybrid pipeline (idempotent); existing ones are checked."""
    _run(lambda: _templates_install(_settings(workspace, config_file, **flags)))


async def _templates_install(settings: Options) -> int:
    embedder = _embedder(settings)
    store = await _open(settings, dims=embedder.dimensions if embedder else None)
    try:
        if embedder:
            await _check_model(store, embedder, "these templates")
        for kind in ("chunks", "files", "links"):
            click.echo(f"{store.index(kind)} -> {', '.join(await store.admin.concrete_indices(kind))}")
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
    store = await _open(settings, create=False)
    try:
        diffs = await store.admin.template_diff(settings.index.model_copy(update={"dims": store.dims}))
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

    embedder = _embedder(settings)
    store = await _open(settings, create=False)
    try:
        recorded = await store.admin.vectors_model() if store.dims else None
        target = await store.admin.live_options(
            embedder.dimensions if embedder else store.dims
        )  # shards, replicas kept
        given: dict[str, Any] = {
            k: getattr(settings.index, k) for k in ("shards", "replicas") if k in settings.index.model_fields_set
        }
        target = target.model_copy(update=given)
        kept = target.dims == store.dims
        if embedder and recorded and kept and not same_model(recorded, embedder.identity):
            raise ConfigError(
                f"index {store.index('chunks')} holds vectors made by {describe_model(recorded)} of the same dimension "
                f"as {describe_model(embedder.identity)}: reindex would keep them. `reme-es drop --yes` and sync again"
            )
        if not store.legacy:
            _err(
                f"rebuilding index set {store.prefix}: every one of its {len(await store.inspect.workspaces())} "
                "recorded workspace(s), not only this one"
            )
        for r in await store.admin.reindex(target):
            vectors = "" if r["vectors"] == "none" else f", vectors {r['vectors']}"
            click.echo(f"{r['alias']}: {r['old']} -> {r['new']} ({r['docs']} docs{vectors})")
    finally:
        await store.close()
    store = await _open(settings, dims=target.dims)  # checks the new indices, creates the pipeline if needed
    try:
        model = embedder.identity if embedder else recorded if kept else None
        if target.dims and model:  # the new index's _meta comes from the template: carry the model over
            await store.admin.record_vectors_model(model)
    finally:
        await store.close()
    if target.dims and embedder:
        sync = hint("sync", workspace or Path("."), positional=True)
        click.echo(f"run `{sync}` to embed chunks that have no vector yet")
    return 0
