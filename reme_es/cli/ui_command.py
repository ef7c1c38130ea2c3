"""`reme-es ui`: a local web page over the cluster the CLI is configured for (reme_es/ui, docs/ui.md)."""

from __future__ import annotations

import ipaddress
import secrets
import sys

import click

from ..core.errors import ConfigError
from .app import _chosen_set, _client, _err, _run, _settings, common


def loopback(address: str) -> bool:
    """Whether `address` (an IP or `localhost`) is a loopback address."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


@click.command()
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --bind; every page then needs the token.")
@click.option("--allow-writes", is_flag=True, help="Allow forgetting files and workspaces (read-only otherwise).")
@click.option("--token", envvar="REME_ES_UI_TOKEN", help="The run's token (default: a new random one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@common(with_workspace=False)
def ui(port, bind, allow_remote, allow_writes, token, open_browser, config_file, **flags):
    """Browse the index set in a web page: workspaces, files, chunks, links, and searches explained stage by stage."""
    if not loopback(bind) and not allow_remote:
        _err(
            f"error: --bind {bind} is not a loopback address: add --allow-remote to serve other machines (every page "
            "then needs the run's token)"
        )
        sys.exit(2)
    _run(lambda: _serve(_settings(None, config_file, **flags), port, bind, allow_writes, token, open_browser))


async def _serve(settings, port: int, bind: str, allow_writes: bool, token: str | None, open_browser: bool) -> int:
    try:
        import uvicorn

        from ..ui.app import UiConfig, build_app
    except ImportError as exc:
        raise ConfigError(f"reme-es ui needs the ui extra ({exc.name} is missing): pip install 'reme-es[ui]'") from exc
    client = await _client(settings)
    config = UiConfig(
        settings=settings,
        client=client,
        prefix=_chosen_set(settings),
        token=token or secrets.token_urlsafe(24),
        allow_writes=allow_writes,
        remote=not loopback(bind),
    )
    server = uvicorn.Server(uvicorn.Config(build_app(config), host=bind, port=port, log_level="warning"))
    host = f"[{bind}]" if ":" in bind else bind

    async def announce() -> None:
        while not server.started:
            await __import__("asyncio").sleep(0.05)
        bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
        url = f"http://{host}:{bound}/?token={config.token}"
        _err(f"reme-es ui on index set {config.prefix} ({'writes allowed' if allow_writes else 'read-only'}): {url}")
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    import asyncio

    waiter = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        waiter.cancel()
    return 0
