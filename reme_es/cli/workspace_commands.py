"""`reme-es drop` and `migrate`: commands that act on one workspace of an index set (or, with `drop --set`, on the
whole set)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.errors import ConfigError, MappingError
from .app import _chosen_set, _client, _err, _open, _run, _settings, common

if TYPE_CHECKING:
    from ..core.options import Options
    from ..store import MemoryStore


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
    from ..sync.state import state_path

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
        state_path(_chosen_set(settings), cs.hosts).unlink(missing_ok=True)
    return code


async def _drop_workspace(
    settings: Options, store: MemoryStore, yes: bool, expunge: bool, as_json: bool, take_over: bool
) -> int:
    """Forget one workspace of a shared set (`MemoryStore.drop_workspace`): only from the folder that writes it (as
    sync), and a workspace with nothing stored is said to be so."""
    from ..store.workspaces import writer_identity
    from ..sync.state import state_path

    counts = await store.inspect.health_counts()
    what = f"workspace {store.workspace} of index set {store.prefix}"
    record = await store.inspect.workspace_record()
    if record is None and not any(counts.values()):
        click.echo(f"nothing to drop: {what} holds no document and has no record (never synced, or dropped already)")
        return 0
    folder = str(settings.folder.resolve()) if settings.folder is not None else None
    held = {k: record.get(k) for k in ("folder", "host")} if record else None
    others = bool(held and folder and held != writer_identity(folder))
    writer = (
        f"written from {held['folder']} on {held['host']} since {record.get('since')}"
        if others and held and record
        else ""
    )
    if others and not take_over:
        raise ConfigError(
            f"{what} is {writer}, not from {folder}: nothing was deleted. Drop it from there, or pass --take-over to "
            "drop it from here"
        )
    if not yes:
        _err(
            f"error: drop would delete {what}{f' ({writer}; --take-over)' if others else ''}: {counts['files']} files, "
            f"{counts['chunks']} chunks, "
            f"{counts['links']} links (other workspaces of the set are untouched; --set drops the whole set). "
            "Nothing was deleted: run again with --yes to delete them."
        )
        return 2
    started = time.monotonic()
    result = await store.drop_workspace(expunge)
    result["seconds"] = round(time.monotonic() - started, 3)
    state_path(store.prefix, store.hosts, store.workspace).unlink(missing_ok=True)
    held = await _held_in_snapshots(store) if expunge else None
    if held is not None:
        result["snapshots"] = held
    if as_json:
        click.echo(json.dumps({"index_prefix": store.prefix, **result}))
    else:
        merged = ""
        if expunge:
            x = result["expunged"]
            merged = f"; merged {', '.join(x['merged']) or 'nothing'} in {x['seconds']:.1f} s" + (
                f", {sum(x['left'].values())} deleted docs still held in {', '.join(sorted(x['left']))} (the shards' "
                "retention leases): run `reme-es optimize --deleted-ratio 0` later"
                if x["left"]
                else f", no deleted document left in {', '.join(x['checked'])} (the workspace registry included)"
            )
        click.echo(f"dropped {what}: {result['deleted']} documents in {result['seconds']:.1f} s{merged}")
        if held is not None:
            click.echo(_snapshots_line(store.prefix, held))
    return 0


async def _held_in_snapshots(store: MemoryStore) -> dict:
    """The snapshots, in every registered repository, of the set's indices: each may still hold the dropped
    workspace (a snapshot is never changed). `error` instead when the caller may not list them."""
    from ..adapters.snapshots import Snapshots
    from ..core.errors import AuthError, RequestFailed

    snaps = Snapshots(store.port)
    try:
        repositories = await snaps.repositories()
        held = await snaps.holding(store.prefix)
    except (AuthError, RequestFailed) as exc:
        return {"error": str(exc)}
    return {"repositories": repositories, "held": [{"repo": r, "snapshot": s.name, "start": s.start} for r, s in held]}


def _snapshots_line(prefix: str, held: dict) -> str:
    """What `drop --expunge` says of the snapshots that may still hold the dropped workspace."""
    if "error" in held:
        return (
            f"snapshots: could not list them ({held['error']}); an admin sees which still hold index set {prefix} "
            "with `reme-es snapshot list --repo REPO`"
        )
    if not held["held"]:
        where = ", ".join(held["repositories"]) or "none is registered"
        return f"snapshots: none of index set {prefix} in the registered repositories ({where})"
    names = ", ".join(f"{h['repo']}/{h['snapshot']}" for h in held["held"])
    return (
        f"snapshots that still hold index set {prefix} as it was when each was taken, this workspace included if it "
        f"had documents then: {names}. A snapshot is never changed: age them out with `reme-es snapshot delete NAME "
        "--repo REPO` (docs/cluster-and-backups.md, Forgetting a workspace and the backups)"
    )


async def _drop_set(settings: Options, cs, engine, yes: bool, as_json: bool) -> int:
    """Delete a whole index set: its indices, aliases and pipelines."""
    from ..store.connect import open_cluster

    store = (await open_cluster(cs, engine)).store(_chosen_set(settings))
    try:
        plan = await store.admin.drop_plan()
        found = any(plan.values())
        if not yes:
            _err(
                f"error: drop would delete, for prefix {store.prefix}: indices {', '.join(plan['indices']) or 'none'}; "
                f"aliases {', '.join(plan['aliases']) or 'none'}; pipelines {', '.join(plan['pipelines']) or 'none'}. "
                "Nothing was deleted: run again with --yes to delete them."
            )
            return 2
        if found:
            await store.admin.drop_prefix(plan)
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
@click.option(
    "--from",
    "source",
    help="The index set to move from (default: the folder's own set from before shared "
    "sets, reme-<folder name>-<hash>).",
)
@click.option("--from-key", help="The workspace key in --from, when it is a shared set (default: this workspace's).")
@click.option("--keep-source", is_flag=True, help="Copy only: leave the source as it is.")
@click.option("--json", "as_json", is_flag=True)
@common()
def migrate(source, from_key, keep_source, as_json, workspace, config_file, **flags):
    """Move the workspace into a shared index set (default: reme) without loss: copy its files, chunks, vectors and
    links, check the counts, then drop the source. Stop other writers (sync --watch, ReMe) while it runs."""
    _run(
        lambda: _migrate(_settings(workspace, config_file, **flags), workspace, source, from_key, keep_source, as_json)
    )


async def _migrate(settings: Options, workspace: Path, source: str | None, from_key, keep_source, as_json) -> int:
    from ..core.options import SHARED_SET, default_prefix
    from ..store.connect import open_store

    source = source or default_prefix(workspace)
    settings = settings.with_index(index_prefix=settings.index.index_prefix or SHARED_SET)
    key = settings.index.workspace_key
    if source == settings.index.index_prefix and (from_key or key) == key:
        raise ConfigError(f"the workspace is in index set {source} already; name another set with --index-prefix")
    cs, engine = await _client(settings)
    try:
        old = await open_store(cs, source, engine, create=False, workspace=from_key or settings.index.workspace_key)
    except MappingError as exc:
        raise ConfigError(f"nothing to move: {exc}") from None
    try:
        if old.workspace is not None and not (await old.inspect.health_counts())["files"]:
            raise ConfigError(f"nothing to move: workspace {old.workspace} of index set {source} holds no file")
        new = await _open(settings, dims=old.dims, client=(cs, engine))
        try:
            await new.claim(str(workspace.resolve()))
            model = await old.admin.vectors_model() if old.dims else None
            if model and await new.admin.vectors_model() is None:
                await new.admin.record_vectors_model(model)
            started = time.monotonic()
            copied = await old.admin.migrate_to(new)
            seconds = round(time.monotonic() - started, 2)
        finally:
            await new.close()
        if not keep_source:
            await (old.drop() if old.legacy else old.drop_workspace())
    finally:
        await old.close()
    result = {
        "from": source,
        "to": settings.index.index_prefix,
        "workspace": settings.index.workspace_key,
        "copied": copied,
        "seconds": seconds,
        "source_dropped": not keep_source,
    }
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(
            f"moved {copied['files']} files, {copied['chunks']} chunks, {copied['links']} links from {source} into "
            f"{settings.index.index_prefix} (workspace {settings.index.workspace_key}) in {seconds:.1f} s; "
            + ("the source is kept" if keep_source else f"{source} dropped")
        )
    return 0
