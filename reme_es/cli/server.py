"""`reme-es server start|stop|status`: the managed local node."""

from __future__ import annotations

import asyncio
import json

import click

from ..server.flavours import DEFAULT_FLAVOUR, LOCAL_FLAVOURS
from .base import _run, main


@main.group()
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
@click.option("--flavour", type=_FLAVOURS, help="Default: the node's own flavour if it was started before, else "
              f"{DEFAULT_FLAVOUR}.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="HTTP port (default: the node's port of its last start, kept so clients keep its URL; else first free from "
    "9200).",
)
@click.option("--heap", default="512m", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@_server_cmd
def server_start(flavour, port, heap, as_json, name):
    """Install (once) and start a node; waits until it is healthy."""

    async def go() -> int:
        from ..server import node

        info = await asyncio.to_thread(node.start, node.flavour_of(name, flavour), name, port, heap)
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
