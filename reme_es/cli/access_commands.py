"""`reme-es access grant|revoke|list`: per-workspace read access on a shared index set, enforced by the cluster
through document-level security (`reme_es.adapters.security` builds the roles and mappings and says what they
allow). Run them with an admin's credentials (`REME_ES_USERNAME`/`REME_ES_PASSWORD`, `username`/`password` in
`reme-es.yaml`, or an API key) on a cluster with the OpenSearch security plugin, or on Elasticsearch with a licence
that has document-level security. `--memorie-tenant T` grants one tenant of the Memorie stores of the prefix
(`<prefix>-memorie-*`) instead of a workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.errors import ConfigError
from .app import _chosen_set, _client, _run, _settings, common

if TYPE_CHECKING:
    from ..adapters.security import Target
    from ..adapters.security_admin import SecurityAdmin
    from ..core.options import Options


@click.group()
def access() -> None:
    """Grant a workspace of an index set to users or backend roles, enforced by the cluster (document-level
    security)."""


def _target(f):
    f = common(with_workspace=False)(f)
    f = click.option(
        "--memorie-tenant",
        help="A tenant of the Memorie stores of the prefix (<prefix>-memorie-*) instead of a workspace.",
    )(f)
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


def _options(workspace: Path | None, tenant: str | None, config_file: Path | None, flags: dict) -> Options:
    named = workspace is not None or bool(flags.get("workspace_key"))
    if tenant is not None and named:
        raise ConfigError("name a workspace (-w, --workspace-key) or a Memorie tenant (--memorie-tenant), not both")
    if tenant is None and not named:
        raise ConfigError("name the workspace: -w FOLDER (its key) or --workspace-key KEY (or --memorie-tenant T)")
    if tenant is not None and not flags.get("index_prefix"):
        raise ConfigError("name the Memorie stores' indexPrefix with --index-prefix to grant a Memorie tenant")
    return _settings(workspace, config_file, **flags)


def _chosen(admin: SecurityAdmin, settings: Options, tenant: str | None) -> Target:
    """The grant's target: the Memorie tenant when one is named, else the command's workspace."""
    if tenant is not None:
        return admin.memorie_tenant(tenant)
    assert settings.index.workspace_key is not None, "_options required one"
    return admin.workspace(settings.index.workspace_key)


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
    what = grant.workspace if grant.memorie_tenant is None else f"memorie tenant {grant.memorie_tenant}"
    return f"{what}\t{access}\t{grant.role}\t{', '.join(who) or '(nobody)'}"


@access.command("grant")
@click.option(
    "--create-mapping-only",
    "mapping_only",
    is_flag=True,
    help="Map --user names the security plugin does not hold (users of an external realm: LDAP, SAML, ...).",
)
@click.option(
    "--write",
    is_flag=True,
    help="Also let them index and delete documents in the set (document-level "
    "security does not confine writes: any workspace of the set, by id).",
)
@_who
@_target
def grant(write, mapping_only, users, backend_roles, workspace, memorie_tenant, config_file, **flags):
    """Let users or backend roles read one workspace of the set, and nothing else of it (a role with
    document-level security on the `workspace` field, `reme-es-<set>-<workspace>`, and its mapping; with --write,
    `reme-es-write.<set>-<workspace>`: one role per level, so a grant changes no other user's access); or, with
    --memorie-tenant, one tenant of the prefix's Memorie stores (`reme-es-memorie.<prefix>.<tenant>`). The set and
    workspace (tenant) must exist, and each user must be known to the security plugin (or --create-mapping-only)."""

    async def go() -> int:
        settings = _options(workspace, memorie_tenant, config_file, flags)
        cluster, admin = await _admin(settings)
        try:
            target = _chosen(admin, settings, memorie_tenant)
            done = await admin.grant(target, list(users), list(backend_roles), write, mapping_only)
        finally:
            await cluster.close()
        click.echo(f"granted: {_line(done)}")
        return 0

    _run(go)


@access.command("revoke")
@_who
@_target
def revoke(users, backend_roles, workspace, memorie_tenant, config_file, **flags):
    """Take users or backend roles out of a workspace's (or a Memorie tenant's) grant; with none named, delete the
    grant (its role and mapping)."""

    async def go() -> int:
        settings = _options(workspace, memorie_tenant, config_file, flags)
        cluster, admin = await _admin(settings)
        try:
            target = _chosen(admin, settings, memorie_tenant)
            left = await admin.revoke(target, list(users), list(backend_roles))
        finally:
            await cluster.close()
        what = f"workspace {target.key}" if memorie_tenant is None else f"memorie tenant {target.key}"
        for grant in left:
            click.echo(f"left: {_line(grant)}")
        if not left:
            click.echo(f"revoked: {what} is granted to nobody")
        return 0

    _run(go)


@access.command("list")
@click.option("--json", "as_json", is_flag=True)
@common(with_workspace=False)
def list_grants(as_json, config_file, **flags):
    """The prefix's grants: workspace (or `memorie tenant T`), access, role, and the users and backend roles it is
    mapped to (JSON: `workspace` or `memorie_tenant` set, the other null)."""

    async def go() -> int:
        cluster, admin = await _admin(_settings(None, config_file, **flags))
        try:
            grants = await admin.list()
        finally:
            await cluster.close()
        if as_json:
            click.echo(json.dumps([g.__dict__ for g in grants]))
        elif not grants:
            click.echo(f"no workspace of index set {admin.prefix} and no Memorie tenant of it is granted")
        for g in grants if not as_json else []:
            click.echo(_line(g))
        return 0

    _run(go)
