"""Shared pieces of the CLI: the `main` group, the common options, settings, client, store and embedder helpers,
and `_run`, which turns reme-es errors into exit codes.

`reme-es --help` and `reme-es <command> --help` import only click and this package's CLI modules: `main` imports a
command's module when that command is asked for (`COMMANDS`), and the CLI modules import settings (pydantic), the
store, the clients and asyncio inside the functions that use them. tests/unit/test_cli_imports.py keeps it so.
"""

from __future__ import annotations

import shlex
import signal
import sys
from typing import TYPE_CHECKING

import click

from ..core.errors import ConfigError, InvalidFilter, ReMeESError
from .commands import COMMANDS, LazyGroup

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from ..core.options import Options
    from ..store import MemoryStore


class Exit(Exception):
    """Leave with an exit code after the store is closed."""

    def __init__(self, code: int):
        self.code = code


def _err(message: str) -> None:
    click.echo(message, err=True)


def _run(make) -> None:
    """Build (settings are loaded here) and run a command coroutine; reme-es errors become one line on stderr
    and an exit code, no traceback."""
    import asyncio

    try:
        code = asyncio.run(make())
    except Exit as exc:
        code = exc.code
    except (ConfigError, InvalidFilter) as exc:
        _err(f"error: {exc}")
        code = 2
    except ReMeESError as exc:
        _err(f"error: {exc}")
        code = 1
    except KeyboardInterrupt:
        _err("interrupted")
        code = 130
    except Exception as exc:  # a bug rather than an error reme-es knows: still one line (REME_ES_DEBUG=1: traceback)
        from ..core.runtime import runtime

        if runtime().debug:
            raise
        _err(f"error: unexpected {type(exc).__name__}: {exc} (REME_ES_DEBUG=1 shows the traceback; please report it)")
        code = 1
    sys.exit(code or 0)


# The options of `common` that say which cluster and prefix a command works on, in the order a hint prints them.
_TARGET_OPTIONS = {
    "config_file": "--config",
    "hosts": "--hosts",
    "aws_region": "--aws-region",
    "aws_service": "--aws-service",
    "engine": "--engine",
    "index_prefix": "--index-prefix",
    "workspace_key": "--workspace-key",
}


def hint(command: str, workspace: Path | None = None, positional: bool = False) -> str:
    """A `reme-es <command>` line that works as printed where this command was run: the same program path, the
    same workspace (`-w`, or the argument of `sync` when `positional`) and the same target options it was given."""
    from pathlib import Path

    from ..core.checks import redact_host

    program = sys.argv[0] if Path(sys.argv[0]).name == "reme-es" else "reme-es"
    words = [program, *command.split()]
    if workspace is not None and (positional or str(workspace) != "."):
        words += [str(workspace)] if positional else ["-w", str(workspace)]
    ctx = click.get_current_context(silent=True)
    params = ctx.params if ctx else {}
    for name, flag in _TARGET_OPTIONS.items():
        if params.get(name) is not None:
            value = params[name]
            words += [flag, redact_host(value) if name == "hosts" else str(value)]
    return " ".join(shlex.quote(w) for w in words)


def common(with_workspace: bool = True):
    """Options every command takes: --config, --hosts, --aws-region, --aws-service, --engine, --index-prefix (and
    --workspace)."""

    from pathlib import Path

    from ..adapters.engines import engine_names

    def decorate(f):
        f = click.option("--shards", type=click.IntRange(1, 1024), help="Primary shards of new indices (default 1).")(f)
        f = click.option(
            "--replicas",
            type=click.IntRange(0),
            help="Replicas of new indices (default: 1 where a second node exists).",
        )(f)
        f = click.option(
            "--workspace-key",
            help="The workspace's key in the index set (default: <folder name>-<hash of its path>).",
        )(f)
        f = click.option(
            "--index-prefix",
            help="Index set (default: reme, shared by every workspace; a folder's own set from before shared sets "
            "where it exists).",
        )(f)
        f = click.option(
            "--strict",
            is_flag=True,
            default=None,
            help="A strict workspace: alone in an index set of its own (<set>-only-<key>), so no other workspace's "
            "terms reach its searches' statistics (docs/GUARANTEES.md). Costs a set's shards per workspace.",
        )(f)
        f = click.option("--engine", type=click.Choice(["auto", *engine_names()]), help="Engine.")(f)
        f = click.option(
            "--aws-service", type=click.Choice(["es", "aoss"]), help="SigV4 service: es or aoss (Serverless)."
        )(f)
        f = click.option("--aws-region", help="Sign requests with AWS SigV4 for Amazon OpenSearch in this region.")(f)
        f = click.option("--hosts", help="Comma-separated cluster URLs (none: the managed local node).")(f)
        f = click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="YAML settings file (default: <workspace>/reme-es.yaml if present).",
        )(f)
        if with_workspace:
            f = click.option(
                "-w",
                "--workspace",
                default=".",
                show_default=True,
                type=click.Path(file_okay=False, path_type=Path),
                help="Workspace folder (names the workspace key in the index set).",
            )(f)
        return f

    return decorate


def _settings(workspace: Path | None, config_file: Path | None, **flags) -> Options:
    """The command's options (`reme_es.core.options.load_options`), with the engine and the managed node's flavour
    checked against the registered ones."""
    from ..core.options import load_options

    options = load_options(workspace, config_file, flags)
    engine, flavour = options.connection.engine, options.connection.flavour
    if engine != "auto":
        from ..adapters.engines import engine_names

        if engine not in engine_names():
            names = ", ".join(engine_names())
            raise ConfigError(f"invalid settings: engine must be auto or one of {names}, got {engine!r}")
    if flavour is not None:
        from ..server.flavours import LOCAL_FLAVOURS

        if flavour not in LOCAL_FLAVOURS:
            raise ConfigError(f"invalid settings: flavour must be one of {', '.join(LOCAL_FLAVOURS)}, got {flavour!r}")
    return options


async def _client(settings: Options):
    """Client settings and engine; with no hosts, the managed local node (started if needed)."""
    import asyncio

    from ..adapters.transport import ClientSettings

    cs = ClientSettings.from_options(settings.connection)
    engine = settings.connection.engine
    if not cs.hosts:
        if cs.aws_region:
            raise ConfigError("aws_region is set but no hosts: give the Amazon OpenSearch endpoint with --hosts")
        from ..server import node, secure

        if secure.is_secured("default"):  # started secured again, reached as its admin unless credentials are given
            info = await asyncio.to_thread(secure.start, None, "default")
            admin = secure.credentials("default")
            cs.ca_certs = cs.ca_certs or admin.ca_certs
            if not (cs.username or cs.api_key):
                cs.username, cs.password = admin.username, admin.password
        else:
            flavour = node.flavour_of("default", settings.connection.flavour)
            info = await asyncio.to_thread(node.start, flavour, "default")
        _err(
            f"no hosts configured: using the managed local {info.flavour} node at {info.url} "
            "(stop it with `reme-es server stop`)"
        )
        cs.hosts = [info.url]
        engine = info.engine
    if settings.index.index_prefix is None:
        from ..store.connect import open_cluster

        cluster = await open_cluster(cs, engine)
        engine = cluster.engine
        try:
            chosen = await cluster.choose_set(settings.folder)
            settings.index = settings.index.model_copy(update={"index_prefix": chosen})
        finally:
            await cluster.close()
    return cs, engine


def _chosen_set(settings: Options) -> str:
    """The command's index set once `_client` has run (it chooses one when none was given)."""
    prefix = settings.index.index_prefix
    assert prefix is not None, "_client chooses the index set before a command reads it"
    return prefix


def _workspace_key(settings: Options) -> str:
    """The workspace key of a command with a workspace folder (`-w` defaults to the current one, which names it)."""
    key = settings.index.workspace_key
    assert key is not None, "load_options names the workspace key after the workspace folder"
    return key


def _embedder(settings: Options):
    from ..embeddings.embedders import make_embedder

    key = settings.sync.embedding_api_key.get_secret_value() if settings.sync.embedding_api_key else None
    sync = settings.sync
    return make_embedder(sync.embedding, sync.embedding_model, sync.embedding_base_url, key, settings.index.dims)


def _embedding_given(settings: Options) -> bool:
    """Whether the embedding was chosen (flag, environment or config file) rather than left at its default."""
    return "embedding" in settings.sync.model_fields_set


def _api_key(settings: Options) -> str | None:
    return settings.sync.embedding_api_key.get_secret_value() if settings.sync.embedding_api_key else None


async def _check_model(store: MemoryStore, embedder, what: str) -> None:
    """Refuse an embedder other than the one that made the index's vectors; record it when none is recorded."""
    from ..embeddings.embedders import describe_model, same_model

    recorded = await store.admin.vectors_model()
    if recorded is None:
        await store.admin.record_vectors_model(embedder.identity)
    elif not same_model(recorded, embedder.identity):
        raise ConfigError(
            f"index {store.index('chunks')} holds vectors made by {describe_model(recorded)}; {what} would mix in "
            f"{describe_model(embedder.identity)} vectors. Leave --embedding out to use the recorded model, or "
            "`reme-es drop --yes` and sync again with the new one"
        )


async def _recorded_embedder(settings: Options, store: MemoryStore):
    """The embedder of the model the index records for its vectors (None when the index has no vectors)."""
    from ..embeddings.embedders import recorded_embedder

    return await recorded_embedder(store, _api_key(settings))


async def _open(settings: Options, dims: int | None = None, create: bool = True, client=None) -> MemoryStore:
    from ..store.connect import open_store

    cs, engine = client or await _client(settings)
    return await open_store(
        cs,
        settings.index.index_prefix,
        engine,
        settings.index.model_copy(update={"dims": dims}),
        create=create,
        workspace=settings.index.workspace_key,
        search=settings.search,
    )


async def _known_workspace(store: MemoryStore, folder: Path | None = None) -> None:
    """Refuse to read a workspace the set has no record of while it records others (the command was run for another
    folder, `-w`, or with another key): an empty answer would look like an empty workspace. The error counts the
    other workspaces but names none of them nor their folders (anyone with the set's credentials runs this); it says
    how to list them (`status --workspaces`)."""
    if store.workspace is None or await store.inspect.workspace_record() is not None:
        return
    others = await store.inspect.workspaces()
    if not others:
        return  # written by the library without claims: nothing to point to
    named, this = (f" (folder {folder})", "this folder") if folder else ("", "it")
    raise ConfigError(
        f"workspace {store.workspace}{named} has nothing in index set {store.prefix}: it was never "
        f"synced there, or it was dropped. Sync {this} first, or name the folder that was synced with -w FOLDER "
        f"(or its key with --workspace-key KEY). The set records {len(others)} other workspace(s); "
        f"`{hint('status --workspaces', folder)}` lists their keys, folders and hosts"
    )


def _interactive() -> bool:
    """Whether a person can be asked: stdin is a terminal."""
    return sys.stdin.isatty()


def _confirm(plan: str, action: str, yes: bool) -> None:
    """Go on when `yes`, or when the person at the terminal answers yes to `plan` + "<action>?"; otherwise stop
    (ConfigError, exit 2) before anything is written, saying how to go on."""
    if yes:
        return
    if not _interactive():
        raise ConfigError(
            f"{plan}. Nothing was written or deleted: run again with --yes to {action} (stdin is not a "
            "terminal, so reme-es cannot ask)"
        )
    if not click.confirm(f"{plan}.\n{action[0].upper()}{action[1:]}?", default=False, err=True):
        raise ConfigError(f"not confirmed: nothing was written or deleted (--yes would {action} without asking)")


def _stop_on_signals(event: asyncio.Event) -> None:
    """First Ctrl-C (or SIGTERM) asks to stop between batches; a second one stops at once."""
    import asyncio

    loop = asyncio.get_running_loop()

    def handler(sig: int) -> None:
        if event.is_set():
            loop.remove_signal_handler(sig)
            raise KeyboardInterrupt
        _err("stopping after the current batch (Ctrl-C again to abort)")
        event.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, handler, sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass


@click.group(cls=LazyGroup, commands_at=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reme-es")
def main() -> None:
    """OpenSearch / Elasticsearch as the file store of ReMe: sync, search and maintain a memory workspace."""
