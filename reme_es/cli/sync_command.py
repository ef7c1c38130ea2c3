"""`reme-es sync`: index a workspace (once, or following changes with --watch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.errors import AuthError, BulkError, ConfigError, MappingError, RequestFailed
from .app import (
    _check_model,
    _chosen_set,
    _client,
    _confirm,
    _embedder,
    _embedding_given,
    _err,
    _open,
    _recorded_embedder,
    _run,
    _settings,
    _stop_on_signals,
    common,
)

if TYPE_CHECKING:
    from ..core.options import Options
    from ..store import MemoryStore


@click.command()
@click.argument("workspace", default=".", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--watch", is_flag=True, help="After the sync, follow changes until Ctrl-C.")
@click.option("--dirs", help="Comma-separated folders to sync (default: daily,digest, as ReMe's file store).")
@click.option("--suffix", "suffixes", help="Comma-separated suffixes (default: md; jsonl too on request).")
@click.option("--full", is_flag=True, help="Re-read every file, not only those whose mtime changed.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option(
    "--embedding",
    type=click.Choice(["none", "local", "e5", "openai"]),
    help="Embed chunks (default: the model the index records, else none).",
)
@click.option(
    "--chunker",
    type=click.Choice(["auto", "reme", "builtin"]),
    help="auto (default): ReMe's own chunkers when reme-ai is installed, else the built-in ones.",
)
@click.option(
    "--take-over",
    is_flag=True,
    help="Write this workspace key even though another folder or host wrote it (the same workspace, moved): names "
    "its writer and what this folder's sync would delete of it, then asks (--yes: without asking).",
)
@click.option(
    "--yes", is_flag=True, help="With --take-over: take the workspace over without asking (needed without a terminal)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@common(with_workspace=False)
def sync(
    workspace: Path,
    watch: bool,
    dirs,
    suffixes,
    full,
    dry_run,
    embedding,
    chunker,
    take_over,
    yes,
    as_json,
    config_file,
    **flags,
):
    """Index the workspace's Markdown files as ReMe's file store does (only what changed since the last sync)."""
    _run(
        lambda: _sync(
            workspace,
            watch,
            full,
            dry_run,
            as_json,
            take_over,
            yes,
            _settings(
                workspace, config_file, dirs=dirs, suffixes=suffixes, embedding=embedding, chunker=chunker, **flags
            ),
        )
    )


def _where(store: MemoryStore) -> str:
    """Where a store's documents live, for messages: the index set, and the workspace in it."""
    return f"{store.prefix}-* (workspace {store.workspace})" if store.workspace else f"{store.prefix}-*"


def _reporter(as_json: bool):
    from ..sync.workspace import Reporter

    echo = (lambda msg: None) if as_json else click.echo

    def warn(msg: str) -> None:
        _err(f"warning: {msg}")

    if as_json or not sys.stdout.isatty():

        class Plain(Reporter):
            def start(self, total: int) -> None:
                self.total, self.done = total, 0

            def advance(self, files: int, chunks: int) -> None:
                self.done += files
                if self.total > 200:
                    self.info(f"synced {self.done}/{self.total} files")

        return Plain(echo, warn)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    class Rich(Reporter):
        progress: Progress | None = None

        def start(self, total: int) -> None:
            if total:
                self.progress = Progress(TextColumn("sync"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
                self.task = self.progress.add_task("sync", total=total)
                self.progress.start()

        def advance(self, files: int, chunks: int) -> None:
            if self.progress:
                self.progress.advance(self.task, files)

        def finish(self) -> None:
            if self.progress:
                self.progress.stop()
                self.progress = None

    return Rich(echo, warn)


def _reme_chunkers(settings: Options, workspace: Path):
    """ReMe's own chunkers when reme-ai is installed (`chunker: auto`) or asked for (`reme`); None: built-in."""
    from ..sync.reme_chunkers import ReMeChunkers, reme_available

    if settings.sync.chunker == "builtin" or (settings.sync.chunker == "auto" and not reme_available()):
        return None
    return ReMeChunkers(workspace)  # `reme` without reme-ai: a ConfigError with the install hint


async def _sync_store(settings: Options, dry_run: bool):
    """The store a sync writes to and its embedder: for a dry run a store that may have no indices yet; else the
    embedder asked for (checked against the index's recorded model), or the model the index records."""
    from ..store.connect import open_cluster

    embedder = None
    if dry_run:
        cs, engine = await _client(settings)
        try:
            store = await _open(settings, create=False, client=(cs, engine))
        except MappingError:  # no indices yet: everything would be added
            prefix, key = _chosen_set(settings), settings.index.workspace_key
            store = (await open_cluster(cs, engine)).store(prefix, workspace=key)
    elif _embedding_given(settings):
        embedder = _embedder(settings)
        store = await _open(settings, dims=embedder.dimensions if embedder else None)
        if embedder:
            try:
                await _check_model(store, embedder, "this sync")
            except BaseException:
                await store.close()
                raise
    else:  # the model the index records for its vectors, so a plain `reme-es sync` keeps embedding new chunks
        store = await _open(settings)
        try:
            embedder = await _recorded_embedder(settings, store)
        except BaseException:
            await store.close()
            raise
        if store.dims and embedder is None:
            _err(
                f"warning: index {store.index('chunks')} holds {store.dims}-d vectors but records no model; chunks "
                "written now get no vector: pass --embedding local|e5|openai"
            )
    return store, embedder


async def _take_over(store: MemoryStore, workspace: Path, settings: Options, full: bool, yes: bool) -> None:
    """Before `--take-over` writes a workspace another folder or host writes: name that writer (folder, host, since)
    and what this folder's sync would delete and rewrite of it; go on with --yes or when asked on a terminal, else
    refuse (ConfigError) with nothing written."""
    from ..store.workspaces import writer_identity
    from ..sync.scan import MB, diff, walk

    folder = str(workspace.resolve())
    held = await store.inspect.workspace_record()
    if held is None or {k: held.get(k) for k in ("folder", "host")} == writer_identity(folder):
        return  # nobody else writes it: there is nothing to take over
    stored = {f.path: f for f in await store.links.get_files()}
    dirs, suffixes = settings.sync.dirs, settings.sync.suffixes
    local, skipped = walk(workspace, dirs, suffixes, int(settings.sync.max_file_mb * MB), lambda msg: None)
    changes = diff(local, {p: f.st_mtime for p, f in stored.items()}, dirs, suffixes, full)
    deleted = [p for p in changes.deleted if p not in skipped]
    rewritten = [f.path for f in changes.modified]
    chunks = sum(len(f.chunk_ids) for f in stored.values())
    plan = (
        f"workspace {store.workspace} of index set {store.prefix} is written from {held.get('folder')} on "
        f"{held.get('host')} since {held.get('since')}, and holds {len(stored)} files, {chunks} chunks. Taking it "
        f"over from {folder} on {writer_identity(folder)['host']} deletes {len(deleted)} of those files "
        f"({sum(len(stored[p].chunk_ids) for p in deleted)} chunks) that this folder does not have and rewrites "
        f"{len(rewritten)} ({sum(len(stored[p].chunk_ids) for p in rewritten)} chunks) with this folder's copies"
    )
    _confirm(plan, "take it over", yes)


async def _claim(store: MemoryStore, workspace: Path, settings: Options, full: bool, take_over: bool, yes: bool):
    """Claim the workspace for this folder before anything is written or deleted (another folder's workspace is never
    touched; `take_over` takes it over); the store is closed when the claim fails."""
    try:
        if take_over:
            await _take_over(store, workspace, settings, full, yes)
        await store.claim(str(workspace.resolve()), take_over, blind=take_over and yes)
    except BaseException:
        await store.close()
        raise


async def _sync(
    workspace: Path,
    watch: bool,
    full: bool,
    dry_run: bool,
    as_json: bool,
    take_over: bool,
    yes: bool,
    settings: Options,
) -> int:
    from ..sync.workspace import State, WorkspaceSync, state_path

    if watch and dry_run:
        raise ConfigError("--watch and --dry-run cannot be combined")
    store, embedder = await _sync_store(settings, dry_run)
    if not dry_run:
        await _claim(store, workspace, settings, full, take_over, yes)
    reporter = _reporter(as_json)
    syncer = WorkspaceSync(
        store,
        workspace,
        settings.sync,
        embedder,
        reporter,
        State(None if dry_run else state_path(store.prefix, store.hosts, store.workspace)),
        reme_chunkers=_reme_chunkers(settings, workspace),
    )
    _stop_on_signals(syncer.stop)
    failed = False

    def show(summary) -> None:
        nonlocal failed
        if as_json:
            click.echo(json.dumps(summary.to_dict()))
        else:
            click.echo(summary.line())
        for f in summary.failed:
            _err(f"failed: {f.path}: {f.reason}")
        failed = failed or bool(summary.failed)

    try:
        if not as_json:
            click.echo(
                f"syncing {workspace.resolve()} into {_where(store)} ({', '.join(settings.sync.dirs)}; "
                f"{', '.join(settings.sync.suffixes)})"
            )
        try:
            summary = await (syncer.run_retrying(full) if watch else syncer.run(full=full, dry_run=dry_run))
        except (AuthError, BulkError, RequestFailed) as exc:  # a refusal for good: one line naming the grant
            raise await store.explained(exc) from None
        if summary is None:  # stopped while waiting for the server
            return 130
        show(summary)
        if summary.interrupted:
            return 130
        if watch and not syncer.stop.is_set():
            await syncer.watch(show)
    finally:
        await store.close()
    return 1 if failed else 0
