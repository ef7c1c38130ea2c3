"""`reme-es snapshot create | list | delete | restore`: backups of an index set in the cluster's snapshot repository,
their deletion, and the restore of one workspace (or of the whole set) from one (`reme_es.store.restore`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from .app import _chosen_set, _client, _confirm, _err, _run, _settings, _workspace_key, common

if TYPE_CHECKING:
    from ..core.options import Options


def _repo_options(f):
    f = click.option(
        "--location",
        help="Register the repository first, as an `fs` repository at this folder (below the nodes' path.repo: "
        "`reme-es server start --snapshot-repo DIR`). Without it, the repository must be registered already.",
    )(f)
    f = click.option("--repo", required=True, help="The cluster's snapshot repository (its registered name).")(f)
    return f


@click.group()
def snapshot() -> None:
    """Back up an index set into the cluster's snapshot repository, list and delete the backups, restore one
    workspace."""


async def _connect(settings: Options):
    """The index port of the cluster the settings name (no index needed) and its snapshot API."""
    from ..adapters.snapshots import Snapshots
    from ..store.connect import open_cluster

    cs, engine = await _client(settings)
    port = (await open_cluster(cs, engine)).port
    return port, Snapshots(port)


async def _repository(snaps, repo: str, location: str | None) -> None:
    """Register `repo` at `location` when given; otherwise it must be registered (ConfigError saying how)."""
    if location:
        await snaps.register_fs(repo, location)
    else:
        await snaps.require(repo)


async def _live_indices(port, prefix: str) -> list[str]:
    """The concrete indices behind the set's aliases (every kind it has)."""
    from ..adapters.templates import SET_KINDS

    return sorted({i for kind in SET_KINDS for i in await port.concrete(f"{prefix}-{kind}")})


def _default_name(prefix: str) -> str:
    import datetime as dt

    return f"{prefix}-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S')}"


@snapshot.command("create")
@click.argument("name", required=False)
@_repo_options
@click.option("--timeout", type=float, default=1800.0, show_default=True, help="Seconds to wait for the snapshot.")
@click.option("--json", "as_json", is_flag=True)
@common()
def snapshot_create(name, repo, location, timeout, as_json, workspace, config_file, **flags):
    """Snapshot the index set's indices (every workspace of it) into the repository, and wait until it has ended.
    NAME defaults to <index prefix>-<UTC date>-<time>."""
    _run(lambda: _create(_settings(workspace, config_file, **flags), name, repo, location, timeout, as_json))


async def _create(
    settings: Options, name: str | None, repo: str, location: str | None, timeout: float, as_json: bool
) -> int:
    from ..core.errors import ConfigError

    port, snaps = await _connect(settings)
    prefix = _chosen_set(settings)
    try:
        await _repository(snaps, repo, location)
        indices = await _live_indices(port, prefix)
        if not indices:
            raise ConfigError(f"index set {prefix} has no index on this cluster: nothing to snapshot")
        info = await snaps.create(repo, name or _default_name(prefix), indices, timeout)
    finally:
        await port.close()
    if as_json:
        click.echo(json.dumps({"repo": repo, "index_prefix": prefix, **info.as_dict()}))
    else:
        shards = info.shards
        click.echo(
            f"snapshot {info.name} of index set {prefix} in repository {repo}: {info.state}, "
            f"{', '.join(info.indices)} ({shards.get('successful', 0)} of {shards.get('total', 0)} shards) "
            f"in {info.seconds:.2f} s"
        )
        for failure in info.failures:
            click.echo(f"  failed: {failure}", err=True)
    return 0 if info.state == "SUCCESS" else 1


@snapshot.command("list")
@_repo_options
@click.option("--json", "as_json", is_flag=True)
@common(with_workspace=False)
def snapshot_list(repo, location, as_json, config_file, **flags):
    """List the repository's snapshots: name, state, start, seconds and indices, oldest first."""
    _run(lambda: _list(_settings(None, config_file, **flags), repo, location, as_json))


async def _list(settings: Options, repo: str, location: str | None, as_json: bool) -> int:
    port, snaps = await _connect(settings)
    try:
        await _repository(snaps, repo, location)
        found = await snaps.snapshots(repo)
    finally:
        await port.close()
    if as_json:
        click.echo(json.dumps([s.as_dict() for s in found]))
    elif not found:
        click.echo(f"repository {repo} holds no snapshot")
    for s in [] if as_json else found:
        click.echo(f"{s.name}  {s.state}  {s.start}  {s.seconds:.2f}s  {','.join(s.indices)}")
    return 0


@snapshot.command("delete")
@click.argument("names", nargs=-1, required=True)
@click.option("--repo", required=True, help="The cluster's snapshot repository (its registered name).")
@click.option("--yes", is_flag=True, help="Really delete (without it: what it would delete, and exit 2).")
@common(with_workspace=False)
def snapshot_delete(names, repo, yes, config_file, **flags):
    """Delete snapshots NAMES of the repository (how a dropped workspace's last copies are aged out): the files no
    remaining snapshot shares leave the repository."""
    _run(lambda: _delete(_settings(None, config_file, **flags), list(names), repo, yes))


async def _delete(settings: Options, names: list[str], repo: str, yes: bool) -> int:
    port, snaps = await _connect(settings)
    try:
        await snaps.require(repo)
        found = [await snaps.snapshot(repo, name) for name in names]  # a missing one: ConfigError, nothing deleted
        if not yes:
            listed = ", ".join(f"{s.name} ({s.start}, {','.join(s.indices)})" for s in found)
            _err(f"error: would delete from {repo}: {listed}. Nothing was deleted: run again with --yes.")
            return 2
        for s in found:
            await snaps.delete(repo, s.name)
            click.echo(f"deleted snapshot {s.name} of repository {repo}")
    finally:
        await port.close()
    return 0


@snapshot.command("restore")
@click.argument("name")
@_repo_options
@click.option(
    "--all",
    "whole_set",
    is_flag=True,
    help="Restore the whole index set (every workspace of it, rolled back to the snapshot).",
)
@click.option("--yes", is_flag=True, help="Really restore (without it: what it would replace, and exit 2).")
@click.option("--timeout", type=float, default=1800.0, show_default=True, help="Seconds to wait for the restore.")
@click.option("--json", "as_json", is_flag=True)
@common()
def snapshot_restore(name, repo, location, whole_set, yes, timeout, as_json, workspace, config_file, **flags):
    """Restore one workspace (-w FOLDER or --workspace-key KEY) from snapshot NAME: its documents in the set are
    replaced by the snapshot's, every other workspace and its later writes are untouched. --all restores the set."""
    _run(
        lambda: _restore(
            _settings(workspace, config_file, **flags), name, repo, location, whole_set, yes, timeout, as_json
        )
    )


async def _restore(
    settings: Options,
    name: str,
    repo: str,
    location: str | None,
    whole_set: bool,
    yes: bool,
    timeout: float,
    as_json: bool,
) -> int:
    from ..store.restore import restore_set, restore_workspace
    from ..sync.state import state_path

    port, snaps = await _connect(settings)
    prefix, key = _chosen_set(settings), _workspace_key(settings)
    try:
        await _repository(snaps, repo, location)
        await snaps.snapshot(repo, name)  # exists, before asking anything
        if whole_set:
            live = await _live_indices(port, prefix)
            _confirm(
                f"restore would delete index set {prefix} ({', '.join(live) or 'no index'}): every workspace of "
                f"it goes back to snapshot {name}",
                "restore it",
                yes,
            )
            result = await restore_set(port, snaps, repo, name, prefix, live, timeout)
        else:
            _confirm(
                f"restore would replace workspace {key} of index set {prefix} by its state in snapshot {name} "
                "(other workspaces are untouched)",
                "restore it",
                yes,
            )
            result = await restore_workspace(port, snaps, repo, name, prefix, key, timeout)
        # the local sync state describes what the index held before: the next sync compares with the index instead
        hosts = port.hosts
        for state in {state_path(prefix, hosts, key), *([state_path(prefix, hosts)] if whole_set else [])}:
            state.unlink(missing_ok=True)
    finally:
        await port.close()
    if as_json:
        click.echo(json.dumps(result))
    elif whole_set:
        click.echo(
            f"restored index set {prefix} from snapshot {name} of {repo}: {', '.join(result['restored'])} "
            f"with their aliases in {result['seconds']:.2f} s"
        )
    else:
        r, d = result["restored"], result["replaced"]
        kinds = ", ".join(f"{n} {kind}" for kind, n in r.items())
        click.echo(
            f"restored workspace {key} of index set {prefix} from snapshot {name} of {repo}: {kinds} "
            f"(replacing {sum(d.values())} current documents) in {result['seconds']:.2f} s; other workspaces "
            "untouched"
        )
    return 0
