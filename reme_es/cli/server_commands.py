"""`reme-es server start|stop|status`: the managed local node; `reme-es server cluster start|stop|status`: a local
multi-node cluster of managed nodes (reme_es/server/cluster.py)."""

from __future__ import annotations

import functools
import json

import click

from ..server.flavours import DEFAULT_FLAVOUR, DEFAULT_HEAP, LOCAL_FLAVOURS
from .app import _run


@click.group()
def server() -> None:
    """Run a local OpenSearch / Elasticsearch node (fetched from Maven Central, no Docker)."""


_FLAVOURS = click.Choice(LOCAL_FLAVOURS)


def _server_cmd(f):
    f = click.option("--name", default="default", show_default=True, help="Node name (one folder per node).")(f)
    return f


def _node_view(name: str) -> dict:
    """What `server start --json` and `server status --json` print: one shape (`url`, `http_port`, `running`,
    version, health, modules, plugins, capabilities)."""
    from ..server import node

    view = node.status(name)
    info = node.read_node(name)
    if info is not None and view.get("running"):
        view["http_port"] = info.http_port
    return view


@server.command("start")
@click.option(
    "--flavour",
    type=_FLAVOURS,
    help=f"Default: the node's own flavour if it was started before, else {DEFAULT_FLAVOUR}.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="HTTP port (default: the node's port of its last start, kept so clients keep its URL; else first free from "
    "9200).",
)
@click.option("--heap", default=DEFAULT_HEAP, show_default=True)
@click.option(
    "--snapshot-repo",
    type=click.Path(file_okay=False),
    help="Folder for snapshots (the node's path.repo, "
    "where `fs` snapshot repositories may be registered); created and made writable for the node. Default: "
    "the node's folder of its last start, if any.",
)
@click.option(
    "--secure",
    is_flag=True,
    help="A secured node: TLS, an admin user with a random password (printed once, kept 0600 in the node folder), "
    "the engine's security (OpenSearch: the security plugin, default flavour opensearch-2.19; Elasticsearch 9: its "
    "own, with the trial licence started). A node made secured stays secured on every later start.",
)
@click.option("--json", "as_json", is_flag=True)
@_server_cmd
def server_start(flavour, port, heap, snapshot_repo, secure, as_json, name):
    """Install (once) and start a node; waits until it is healthy."""

    async def go() -> int:
        import asyncio

        from ..server import node
        from ..server import secure as secured

        made = secure and not secured.is_secured(name)
        if secure or secured.is_secured(name):
            start = functools.partial(secured.start, flavour, name, port, heap, snapshot_repo=snapshot_repo)
        else:
            start = functools.partial(
                node.start, node.flavour_of(name, flavour), name, port, heap, snapshot_repo=snapshot_repo
            )
        info = await asyncio.to_thread(start)
        if as_json:
            view = await asyncio.to_thread(_node_view, name)
            if made:  # shown once: kept in the password file afterwards
                view["security"]["password"] = secured.credentials(name).password
            click.echo(json.dumps(view))
        else:
            click.echo(f"{info.flavour} node {info.name!r} running at {info.url} (pid {info.pid})")
            _echo_security(name, made)
        for line in info.red_index_advice():
            click.echo(f"warning: {line}", err=True)
        return 0

    _run(go)


def _echo_security(name: str, made: bool, env: str = "server env", env_name: str | None = None) -> None:
    """A secured node's admin, password (only when `made`: the start that made it), password file and CA file."""
    from ..server import secure

    about = secure.describe(name)
    if about is None:
        return
    click.echo(f"secured: user {about['username']}, CA certificate {about['ca_certs']}")
    if made:
        password = secure.credentials(name).password
        click.echo(f"password of {about['username']}: {password} (shown once; kept in {about['password_file']}, 0600)")
    else:
        click.echo(f"password of {about['username']}: in {about['password_file']} (0600)")
    click.echo(f'connect: eval "$(reme-es {env} --name {env_name or name})"')


@server.command("env")
@_server_cmd
def server_env(name):
    """Shell lines that point reme-es at a node: REME_ES_HOSTS, and for a secured node REME_ES_CA_CERTS,
    REME_ES_USERNAME and REME_ES_PASSWORD (read from its password file). Use: eval "$(reme-es server env)"."""
    from ..server import node

    info = node.read_node(name)
    if info is None:
        raise click.ClickException(f"node {name!r} was never started: reme-es server start --name {name}")
    _echo_env([info.url], name)


def _echo_env(urls: list[str], name: str) -> None:
    """The `export` lines of `server env` for these URLs; the credentials of node `name` if it is secured."""
    import shlex

    from ..server import secure

    click.echo(f"export REME_ES_HOSTS={shlex.quote(','.join(urls))}")
    about = secure.describe(name)
    if about is not None:
        click.echo(f"export REME_ES_CA_CERTS={shlex.quote(about['ca_certs'])}")
        click.echo(f"export REME_ES_USERNAME={shlex.quote(about['username'])}")
        click.echo(f'export REME_ES_PASSWORD="$(cat {shlex.quote(about["password_file"])})"')


@server.command("stop")
@_server_cmd
def server_stop(name):
    """Stop a node."""

    async def go() -> int:
        import asyncio

        from ..server import node

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
        import asyncio

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
        if st.get("snapshot_repo"):
            click.echo(f"snapshot repository folder (path.repo): {st['snapshot_repo']}")
        _echo_security(name, made=False)
        click.echo(f"modules: {', '.join(st['modules']) or 'none'}")
        click.echo(f"plugins: {', '.join(f'{k} {v}' for k, v in st['plugins'].items()) or 'none'}")
        click.echo(f"capabilities: {', '.join(k for k, v in st['capabilities'].items() if v) or 'none'}")
        return 0

    _run(go)


# ------------------------------------------------------------------------------------------------------ cluster


@server.group("cluster")
def cluster() -> None:
    """Run a local multi-node cluster on 127.0.0.1 (managed nodes `<name>-1`, `<name>-2`, ...)."""


def _cluster_cmd(f):
    return click.option("--name", default="cluster", show_default=True, help="Cluster name (members <name>-1...).")(f)


def _echo_cluster(view: dict, made: bool = False) -> None:
    """The text form of a cluster's status: health, then one line per member, then a secured cluster's admin
    (its password only when `made`: the start that made it secured)."""
    health = view.get("health")
    state = view.get("reason", "not running")
    if health:
        state = f"health {health['status']}, {health['number_of_nodes']} nodes"
    click.echo(f"cluster {view['name']!r} ({view['flavour']}, cluster.name {view['cluster_name']}): {state}")
    for m in view["nodes"]:
        state = f"pid {m['pid']}, {m['url']}" if m["running"] else f"not running ({m['url']})"
        click.echo(f"  {m['name']}: {state}")
    if view.get("snapshot_repo"):
        click.echo(f"snapshot repository folder (path.repo of every member): {view['snapshot_repo']}")
    if view.get("security"):
        _echo_security(view["nodes"][0]["name"], made, "server cluster env", view["name"])


@cluster.command("start")
@click.option(
    "--flavour",
    type=_FLAVOURS,
    help=f"Default: the cluster's own flavour if it was started before, else {DEFAULT_FLAVOUR}.",
)
@click.option("--nodes", type=click.IntRange(1, 9), default=3, show_default=True, help="Members of a new cluster.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="HTTP port of the first member (the others follow it; "
    "default: the cluster's ports of its last start, else the first free run from 9200).",
)
@click.option("--heap", help=f"Heap of each member (default: as last started, else {DEFAULT_HEAP}).")
@click.option(
    "--snapshot-repo",
    type=click.Path(file_okay=False),
    help="Folder for snapshots shared by every member "
    "(their path.repo); created and made writable for the nodes. Default: the cluster's folder of its last "
    "start, if any.",
)
@click.option(
    "--secure",
    is_flag=True,
    help="A secured cluster, as `server start --secure` makes a node (one CA, certificate and admin password for "
    "every member). A cluster made secured stays secured.",
)
@click.option("--json", "as_json", is_flag=True)
@_cluster_cmd
def cluster_start(flavour, nodes, port, heap, snapshot_repo, secure, as_json, name):
    """Install (once) and start every member; waits until they have formed the cluster."""

    async def go() -> int:
        import asyncio

        from ..server import cluster as local
        from ..server import secure as secured

        made = secure and not secured.is_secured(f"{name}-1")
        start = functools.partial(local.start_local, name, flavour, nodes, heap, port, snapshot_repo, secured=secure)
        await asyncio.to_thread(start)
        view = await asyncio.to_thread(local.local_status, name)
        if as_json:
            if made:  # shown once: kept in the password file afterwards
                view["security"]["password"] = secured.credentials(f"{name}-1").password
            click.echo(json.dumps(view))
        else:
            _echo_cluster(view, made)
        return 0

    _run(go)


@cluster.command("env")
@_cluster_cmd
def cluster_env(name):
    """Shell lines that point reme-es at every member of a cluster (and its admin, if secured), as `server env`."""
    from ..server import cluster as local

    found = local.load_cluster(name)
    if found is None:
        raise click.ClickException(f"no cluster {name!r} was started here (reme-es server cluster start --name {name})")
    _echo_env(found.urls, found.names[0])


@cluster.command("stop")
@_cluster_cmd
def cluster_stop(name):
    """Stop every member (their data is kept for the next start)."""

    async def go() -> int:
        import asyncio

        from ..server import cluster as local

        stopped = await asyncio.to_thread(local.stop_local, name)
        if stopped:
            click.echo(f"cluster {name!r}: stopped {', '.join(stopped)}")
        else:
            click.echo(f"cluster {name!r} was not running")
        return 0

    _run(go)


@cluster.command("status")
@click.option("--json", "as_json", is_flag=True)
@_cluster_cmd
def cluster_status(as_json, name):
    """Each member's pid and port, and the cluster health; exit 1 unless every member runs."""

    async def go() -> int:
        import asyncio

        from ..server import cluster as local

        view = await asyncio.to_thread(local.local_status, name)
        if as_json:
            click.echo(json.dumps(view))
        elif "nodes" not in view:
            click.echo(f"cluster {name!r}: not running ({view['reason']})")
        else:
            _echo_cluster(view)
        return 0 if view.get("nodes") and all(m["running"] for m in view["nodes"]) else 1

    _run(go)
