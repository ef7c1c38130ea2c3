"""`reme-es access grant|revoke|list`: per-workspace read access on a shared index set, enforced by the cluster
through document-level security (`reme_es.adapters.security` builds the roles and mappings and says what they
allow). Run them with an admin's credentials (`REME_ES_USERNAME`/`REME_ES_PASSWORD`, `username`/`password` in
`reme-es.yaml`, or an API key) on a cluster with the OpenSearch security plugin, or on Elasticsearch with a licence
that has document-level security."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.errors import ConfigError
from .app import _chosen_set, _client, _run, _settings, common

if TYPE_CHECKING:
    from ..core.options import Options


@click.group()
def access() -> None:
    """Grant a workspace of an index set to users or backend roles, enforced by the cluster (document-level
    security)."""


def _target(f):
    f = common(with_workspace=False)(f)
    return click.option(
        "-w",
        "--workspace",
        type=click.Path(file_okay=False, path_type=Path),
        help="Workspace folder whose key to grant (or give the key with --workspace-key).",
    )(f)


def _who(f):
    f = click.option(
        "--backend-role",
        "backend_roles",
        multiple=True,
        help="A backend role (Elasticsearch: a realm's group); repeat for several.",
    )(f)
    return click.option("--user", "users", multiple=True, help="A user name; repeat for several.")(f)


def _options(workspace: Path | None, config_file: Path | None, flags: dict) -> Options:
    if workspace is None and not flags.get("workspace_key"):
        raise ConfigError("name the workspace: -w FOLDER (its key) or --workspace-key KEY")
    return _settings(workspace, config_file, **flags)


async def _admin(settings: Options):
    """The command's cluster and the security admin of its set (the caller closes the cluster)."""
    from ..core.options import SHARED_SET
    from ..store.connect import open_cluster

    if settings.index.index_prefix is None:
        settings.index = settings.index.model_copy(update={"index_prefix": SHARED_SET})
    cs, engine = await _client(settings)
    cluster = await open_cluster(cs, engine)
    return cluster, cluster.security(_chosen_set(settings))


def _line(grant) -> str:
    access = "read+write" if grant.write else "read"
    who = [f"user {u}" for u in grant.users] + [f"backend role {r}" for r in grant.backend_roles]
    return f"{grant.workspace}\t{access}\t{grant.role}\t{', '.join(who) or '(nobody)'}"


@access.command("grant")
@click.option(
    "--write",
    is_flag=True,
    help="Also let them index and delete documents in the set (document-level "
    "security does not confine writes: any workspace of the set, by id).",
)
@_who
@_target
def grant(write, users, backend_roles, workspace, config_file, **flags):
    """Let users or backend roles read one workspace of the set, and nothing else of it (a role with
    document-level security on the `workspace` field, `reme-es-<set>-<workspace>`, and its mapping)."""

    async def go() -> int:
        settings = _options(workspace, config_file, flags)
        cluster, admin = await _admin(settings)
        try:
            done = await admin.grant(settings.index.workspace_key, list(users), list(backend_roles), write)
        finally:
            await cluster.close()
        click.echo(f"granted: {_line(done)}")
        return 0

    _run(go)


@access.command("revoke")
@_who
@_target
def revoke(users, backend_roles, workspace, config_file, **flags):
    """Take users or backend roles out of a workspace's grant; with none named, delete the grant (its role and
    mapping)."""

    async def go() -> int:
        settings = _options(workspace, config_file, flags)
        cluster, admin = await _admin(settings)
        try:
            left = await admin.revoke(settings.index.workspace_key, list(users), list(backend_roles))
        finally:
            await cluster.close()
        key = settings.index.workspace_key
        click.echo(f"left: {_line(left)}" if left else f"revoked: workspace {key} is granted to nobody")
        return 0

    _run(go)


@access.command("list")
@click.option("--json", "as_json", is_flag=True)
@common(with_workspace=False)
def list_grants(as_json, config_file, **flags):
    """The set's grants: workspace, access, role, and the users and backend roles it is mapped to."""

    async def go() -> int:
        cluster, admin = await _admin(_settings(None, config_file, **flags))
        try:
            grants = await admin.list()
        finally:
            await cluster.close()
        if as_json:
            click.echo(json.dumps([g.__dict__ for g in grants]))
        elif not grants:
            click.echo(f"no workspace of index set {admin.prefix} is granted")
        for g in grants if not as_json else []:
            click.echo(_line(g))
        return 0

    _run(go)
