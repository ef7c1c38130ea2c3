"""The `reme-es` command line: sync a workspace, search it, maintain its indices, run a local node.

Exit codes: 0 ok; 1 a reme-es error (server, mapping, a file that failed to sync) or differences found by
`templates diff`; 2 bad usage or configuration; 130 interrupted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import signal
import sys
from pathlib import Path

import click

from .adapters.base import redact_host
from .adapters.registry import engine_names
from .config import Settings, load_settings
from .errors import ConfigError, InvalidFilter, MappingError, ReMeESError
from .store import MemoryStore
from .templates import IndexOptions


class Exit(Exception):
    """Leave with an exit code after the store is closed."""

    def __init__(self, code: int):
        self.code = code


def _err(message: str) -> None:
    click.echo(message, err=True)


def _run(make) -> None:
    """Build (settings are loaded here) and run a command coroutine; reme-es errors become one line on stderr
    and an exit code, no traceback."""
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
    sys.exit(code or 0)


def common(with_workspace: bool = True):
    """Options every command takes: --config, --hosts, --aws-region, --aws-service, --engine, --index-prefix (and
    --workspace)."""

    def decorate(f):
        f = click.option("--index-prefix", help="Index prefix (default: from the workspace folder).")(f)
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
                help="Workspace folder (names the default index prefix).",
            )(f)
        return f

    return decorate


def _settings(workspace: Path | None, config_file: Path | None, **flags) -> Settings:
    return load_settings(workspace, config_file, flags)


async def _client(settings: Settings):
    """Client settings and engine; with no hosts, the managed local node (started if needed)."""
    cs = settings.client_settings()
    engine = settings.engine
    if not cs.hosts:
        if cs.aws_region:
            raise ConfigError("aws_region is set but no hosts: give the Amazon OpenSearch endpoint with --hosts")
        from .server import node

        info = await asyncio.to_thread(node.start, settings.flavour, "default")
        _err(
            f"no hosts configured: using the managed local {info.flavour} node at {info.url} "
            "(stop it with `reme-es server stop`)"
        )
        cs.hosts = [info.url]
        engine = info.engine
    return cs, engine


def _embedder(settings: Settings):
    from .sync.embed import make_embedder

    key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
    return make_embedder(settings.embedding, settings.embedding_model, settings.embedding_base_url, key, settings.dims)


def _embedding_given(settings: Settings) -> bool:
    """Whether the embedding was chosen (flag, environment or config file) rather than left at its default."""
    return "embedding" in settings.model_fields_set


def _api_key(settings: Settings) -> str | None:
    return settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None


async def _check_model(store: MemoryStore, embedder, what: str) -> None:
    """Refuse an embedder other than the one that made the index's vectors; record it when none is recorded."""
    from .maintenance import record_vectors_model, vectors_model
    from .sync.embed import describe_model, same_model

    recorded = await vectors_model(store)
    if recorded is None:
        await record_vectors_model(store, embedder.identity)
    elif not same_model(recorded, embedder.identity):
        raise ConfigError(
            f"index {store.index('chunks')} holds vectors made by {describe_model(recorded)}; {what} would mix in "
            f"{describe_model(embedder.identity)} vectors. Leave --embedding out to use the recorded model, or "
            "`reme-es drop --yes` and sync again with the new one"
        )


async def _recorded_embedder(settings: Settings, store: MemoryStore):
    """The embedder of the model the index records for its vectors (None when the index has no vectors)."""
    from .maintenance import vectors_model
    from .sync.embed import embedder_for

    if not store.dims:
        return None
    recorded = await vectors_model(store)
    if recorded is None:
        return None
    embedder = await asyncio.to_thread(embedder_for, recorded, _api_key(settings))
    if embedder.dimensions != store.dims:
        raise MappingError(
            f"index {store.index('chunks')} holds {store.dims}-d vectors but records a {embedder.dimensions}-d model; "
            "`reme-es drop --yes` and sync again"
        )
    return embedder


async def _open(settings: Settings, dims: int | None = None, create: bool = True, client=None) -> MemoryStore:
    from .connect import open_store

    cs, engine = client or await _client(settings)
    return await open_store(
        cs,
        settings.index_prefix,
        engine,
        IndexOptions(dims=dims),
        create=create,
        hybrid=settings.hybrid,
        vector_weight=settings.vector_weight,
    )


def _stop_on_signals(event: asyncio.Event) -> None:
    """First Ctrl-C (or SIGTERM) asks to stop between batches; a second one stops at once."""
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reme-es")
def main() -> None:
    """OpenSearch / Elasticsearch as the file store of ReMe: sync, search and maintain a memory workspace."""


# -------------------------------------------------------------------------------------------- sync


@main.command()
@click.argument("workspace", default=".", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--watch", is_flag=True, help="After the sync, follow changes until Ctrl-C.")
@click.option("--dirs", help="Comma-separated folders to sync (default: daily,digest, as ReMe's file store).")
@click.option("--suffix", "suffixes", help="Comma-separated suffixes (default: md; jsonl too on request).")
@click.option("--full", is_flag=True, help="Re-read every file, not only those whose mtime changed.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option(
    "--embedding",
    type=click.Choice(["none", "local", "openai"]),
    help="Embed chunks (default: the model the index records, else none).",
)
@click.option(
    "--chunker",
    type=click.Choice(["auto", "reme", "builtin"]),
    help="auto (default): ReMe's own chunkers when reme-ai is installed, else the built-in ones.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@common(with_workspace=False)
def sync(workspace: Path, watch: bool, dirs, suffixes, full, dry_run, embedding, chunker, as_json, config_file, **flags):
    """Index the workspace's Markdown files as ReMe's file store does (only what changed since the last sync)."""
    _run(
        lambda: _sync(
            workspace,
            watch,
            full,
            dry_run,
            as_json,
            _settings(
                workspace, config_file, dirs=dirs, suffixes=suffixes, embedding=embedding, chunker=chunker, **flags
            ),
        )
    )


def _reporter(as_json: bool):
    from .sync.sync import Reporter

    echo = (lambda msg: None) if as_json else click.echo
    warn = lambda msg: _err(f"warning: {msg}")
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


def _reme_chunkers(settings: Settings, workspace: Path):
    """ReMe's own chunkers when reme-ai is installed (`chunker: auto`) or asked for (`reme`); None: built-in."""
    from .sync.reme_chunkers import ReMeChunkers, reme_available

    if settings.chunker == "builtin" or (settings.chunker == "auto" and not reme_available()):
        return None
    return ReMeChunkers(workspace)  # `reme` without reme-ai: a ConfigError with the install hint


async def _sync(workspace: Path, watch: bool, full: bool, dry_run: bool, as_json: bool, settings: Settings) -> int:
    from .connect import detect_engine, make_dialect
    from .sync.scan import MB
    from .sync.sync import State, WorkspaceSync, state_path

    if watch and dry_run:
        raise ConfigError("--watch and --dry-run cannot be combined")
    embedder = None
    if dry_run:
        cs, engine = await _client(settings)
        try:
            store = await _open(settings, create=False, client=(cs, engine))
        except MappingError:  # no indices yet: everything would be added
            engine = await detect_engine(cs) if engine == "auto" else engine
            store = MemoryStore(make_dialect(engine, cs), settings.index_prefix)
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
                "written now get no vector: pass --embedding local|openai"
            )
    reporter = _reporter(as_json)
    syncer = WorkspaceSync(
        store,
        workspace,
        settings.dirs,
        settings.suffixes,
        embedder,
        reporter,
        settings.batch_files,
        int(settings.max_file_mb * MB),
        settings.chunk_chars,
        State(None if dry_run else state_path(store.prefix, store.dialect.settings.hosts)),
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
                f"syncing {workspace.resolve()} into {store.prefix}-* ({', '.join(settings.dirs)}; "
                f"{', '.join(settings.suffixes)})"
            )
        summary = await (syncer.run_retrying(full) if watch else syncer.run(full=full, dry_run=dry_run))
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


# ------------------------------------------------------------------------------------------ search


@main.command()
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
    type=click.Choice(["none", "local", "openai"]),
    help="Query embedder (default: the model the index records for its vectors).",
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
    as_json,
    workspace,
    config_file,
    **flags,
):
    """Search the indexed workspace; prints each hit as ReMe does, with its file's links."""
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
        )
    )


def _format_scores(scores: dict[str, float]) -> str:
    parts = [f"score={scores.get('score', 0.0):.4f}"]
    parts += [f"{k}={scores[k]:.4f}" for k in ("keyword", "vector") if k in scores]
    return " ".join(parts)


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


async def _query_vector(settings: Settings, store: MemoryStore, query: str, mode: str, asked: bool):
    """The query's vector from the model that made the index's vectors; None (with a note) when the index has
    none and hybrid was the default; ConfigError when the asked mode cannot run."""
    chunks = store.index("chunks")
    if not store.dims:
        reason = f"index {chunks} has no vectors"
        fix = "`reme-es reindex --embedding local`, then `reme-es sync --embedding local`"
    elif _embedding_given(settings):
        embedder = _embedder(settings)
        if embedder is not None:
            await _check_model(store, embedder, "this search")
            return (await asyncio.to_thread(embedder.embed, [query]))[0]
        reason, fix = "--embedding none was given", "leave --embedding out to use the index's model"
    else:
        embedder = await _recorded_embedder(settings, store)
        if embedder is not None:
            return (await asyncio.to_thread(embedder.embed, [query]))[0]
        raise ConfigError(
            f"index {chunks} holds {store.dims}-d vectors but does not record which model made them: pass "
            "--embedding local|openai (the model you synced with), or --mode keyword"
        )
    if asked:
        raise ConfigError(f"--mode {mode} needs vectors, but {reason}: run {fix}, or use --mode keyword")
    _err(f"note: {reason}, so this search is BM25 only; for hybrid search run {fix}")
    return None


async def _search(settings: Settings, query, limit, mode, start_date, end_date, prefixes, min_score, links, as_json):
    from .models import SearchFilter

    search_filter = SearchFilter.parse({"start_date": start_date, "end_date": end_date, "path_prefix": prefixes})
    asked, mode = mode, mode or "hybrid"
    store = await _open(settings, create=False)
    try:
        vector = None
        if mode != "keyword":
            vector = await _query_vector(settings, store, query, mode, asked is not None)
            if vector is None:
                mode = "keyword"
        result = await store.search(query, vector, limit, search_filter, mode=mode, min_score=min_score)
        paths = list(dict.fromkeys(h.chunk.path for h in result.hits))
        expansion = {p: _group_links(n) for p, n in (await store.expand(paths)).items()} if links and paths else {}
    finally:
        await store.close()
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
        click.echo(
            json.dumps({"query": query, "mode": mode, "fusion": result.fusion, "hits": hits}, ensure_ascii=False)
        )
        return 0
    if not result.hits:
        click.echo("no results")
    for h in result.hits:
        c = h.chunk
        click.echo(f"========== {c.path}:{c.start_line}-{c.end_line} [{_format_scores(h.scores)}] ==========")
        click.echo(c.text)
        for line in _render_links(expansion.get(c.path, {})):
            click.echo(line)
    return 0


# ------------------------------------------------------------------------------------- maintenance


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
    from .connect import detect_engine, make_dialect
    from .sync.sync import State, state_path

    cs, engine = await _client(settings)
    stats = None
    try:
        store = await _open(settings, create=False, client=(cs, engine))
    except MappingError:
        engine = await detect_engine(cs) if engine == "auto" else engine
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
    from .maintenance import concrete_indices

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
    from .maintenance import template_diff

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
    type=click.Choice(["none", "local", "openai"]),
    help="Rebuild for this embedder's dimension (vectors are dropped when it changes).",
)
@common()
def reindex(embedding, workspace, config_file, **flags):
    """Rebuild every index as <prefix>-<kind>-<n+1> from the current templates and swap the aliases."""
    _run(lambda: _reindex(_settings(workspace, config_file, embedding=embedding, **flags)))


async def _reindex(settings: Settings) -> int:
    from .maintenance import record_vectors_model, vectors_model
    from .maintenance import reindex as run_reindex
    from .sync.embed import describe_model, same_model

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
        click.echo("run `reme-es sync` to embed chunks that have no vector yet")
    return 0


@main.command()
@click.option("--yes", is_flag=True, help="Really delete (without it, drop lists what it would delete and exits 2).")
@click.option("--json", "as_json", is_flag=True)
@common()
def drop(yes, as_json, workspace, config_file, **flags):
    """Delete the prefix's indices, aliases and hybrid search pipelines, and the local sync state."""
    _run(lambda: _drop(_settings(workspace, config_file, **flags), yes, as_json))


async def _drop(settings: Settings, yes: bool, as_json: bool) -> int:
    from .connect import detect_engine, make_dialect
    from .maintenance import drop_plan, drop_prefix
    from .sync.sync import state_path

    cs, engine = await _client(settings)
    engine = await detect_engine(cs) if engine == "auto" else engine
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


# ------------------------------------------------------------------------------------------ server


@main.group()
def server() -> None:
    """Run a local OpenSearch / Elasticsearch node (fetched from Maven Central, no Docker)."""


_FLAVOURS = click.Choice(["opensearch-2.19", "opensearch-3", "elasticsearch-9"])


def _server_cmd(f):
    f = click.option("--name", default="default", show_default=True, help="Node name (one folder per node).")(f)
    return f


def _node_view(name: str) -> dict:
    """What `server start --json` and `server status --json` print: one shape (`url`, `http_port`, `running`,
    version, health, modules, plugins, capabilities)."""
    from .server import node

    view = node.status(name)
    info = node.read_node(name)
    if info is not None and view.get("running"):
        view["http_port"] = info.http_port
    return view


@server.command("start")
@click.option("--flavour", type=_FLAVOURS, default="opensearch-2.19", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), help="HTTP port (default: first free from 9200).")
@click.option("--heap", default="512m", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@_server_cmd
def server_start(flavour, port, heap, as_json, name):
    """Install (once) and start a node; waits until it is healthy."""

    async def go() -> int:
        from .server import node

        info = await asyncio.to_thread(node.start, flavour, name, port, heap)
        if as_json:
            click.echo(json.dumps(await asyncio.to_thread(_node_view, name)))
        else:
            click.echo(f"{info.flavour} node {info.name!r} running at {info.url} (pid {info.pid})")
        for line in info.red_index_advice():
            click.echo(f"warning: {line}", err=True)
        return 0

    _run(go)


@server.command("stop")
@_server_cmd
def server_stop(name):
    """Stop a node."""

    async def go() -> int:
        from .server import node

        stopped = await asyncio.to_thread(node.stop, name)
        click.echo(f"node {name!r} stopped" if stopped else f"node {name!r} was not running")
        return 0

    _run(go)


@server.command("status")
@click.option("--json", "as_json", is_flag=True)
@_server_cmd
def server_status(as_json, name):
    """Version, modules, plugins and capabilities of a node."""

    async def go() -> int:
        st = await asyncio.to_thread(_node_view, name)
        if as_json:
            click.echo(json.dumps(st))
            return 0 if st.get("running") else 1
        if not st.get("running"):
            click.echo(f"node {name!r}: not running ({st.get('reason', '')})")
            return 1
        if "version" not in st:
            click.echo(f"node {name!r}: running at {st['url']} but not answering ({st.get('reason', '')})")
            return 1
        click.echo(
            f"node {name!r}: {st['engine']} {st['version']} ({st['flavour']}) at {st['url']}, "
            f"health {st['health']}, pid {st['pid']}"
        )
        click.echo(f"modules: {', '.join(st['modules']) or 'none'}")
        click.echo(f"plugins: {', '.join(f'{k} {v}' for k, v in st['plugins'].items()) or 'none'}")
        click.echo(f"capabilities: {', '.join(k for k, v in st['capabilities'].items() if v) or 'none'}")
        return 0

    _run(go)


if __name__ == "__main__":
    main()
