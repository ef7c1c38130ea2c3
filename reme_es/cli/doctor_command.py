"""`reme-es doctor [--json]`: one line per check of the memory server, each with what to do (`reme_es.store.doctor`
names the checks); exit 1 when a check fails, 0 when every check passes or only warns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .app import _client, _embedding_given, _run, _settings, common

if TYPE_CHECKING:
    from ..core.options import Options

MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
DELETED_MIN = 1000  # reme_es.store.doctor.DELETED_MIN (not imported: --help imports no store module)


def configured_model(settings: Options) -> dict | None:
    """The identity of the embedding the settings name (flag, environment or config file), None when they name none;
    no model is loaded."""
    if not _embedding_given(settings):
        return None
    sync = settings.sync
    if sync.embedding == "local":
        from ..embeddings.minilm import local_identity

        return local_identity()
    if sync.embedding == "e5":
        from ..embeddings.e5 import e5_identity

        return e5_identity()
    if sync.embedding == "openai":
        from ..embeddings.embedders import OpenAIEmbedder

        return OpenAIEmbedder(sync.embedding_model, sync.embedding_base_url, None, settings.index.dims).identity
    return None


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the checks and the exit status.")
@click.option(
    "--embedding",
    type=click.Choice(["none", "local", "e5", "openai"]),
    help="The embedding your syncs use (default: REME_ES_EMBEDDING or reme-es.yaml), compared with the recorded one.",
)
@click.option(
    "--deleted-min",
    type=click.IntRange(1),
    default=DELETED_MIN,
    show_default=True,
    help="Deleted documents an index must hold before an optimize is due (beside 10% of its documents).",
)
@common(with_workspace=False)
@click.option(
    "-w",
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    help="Workspace folder whose settings (reme-es.yaml: hosts, embedding) to use.",
)
def doctor(as_json, embedding, deleted_min, workspace, config_file, **flags):
    """Check the memory server and say what to fix: health, replicas, templates, vectors, calibration, optimize,
    shards, snapshots, security."""
    _run(lambda: _doctor(_settings(workspace, config_file, embedding=embedding, **flags), as_json, deleted_min))


async def _doctor(settings: Options, as_json: bool, deleted_min: int) -> int:
    from ..store.connect import open_cluster
    from ..store.doctor import gather, run_checks

    named = settings.index.index_prefix  # None: every index reme-es made on the cluster
    cs, engine = await _client(settings)
    cluster = await open_cluster(cs, engine)
    try:
        facts = await gather(cluster.port, named, named, configured_model(settings), deleted_min)
    finally:
        await cluster.close()
    checks = run_checks(facts)
    code = 1 if any(c.status == "fail" for c in checks) else 0
    if as_json:
        click.echo(json.dumps({"checks": [c.as_dict() for c in checks], "exit": code}))
        return code
    for c in checks:
        click.echo(f"{MARKS[c.status]} {c.name}: {c.message}" + (f"\n     -> {c.fix}" if c.fix else ""))
    return code
