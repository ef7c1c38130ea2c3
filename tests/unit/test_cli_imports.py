"""`reme-es --help` and `reme-es <command> --help` stay fast: they import click and the CLI modules, not settings
(pydantic), the store, the engine clients or asyncio; and the command list `--help` prints without importing the
commands is the one click prints from the commands themselves."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from reme_es.cli import main
from reme_es.cli.app import COMMANDS, LazyGroup

# What none of the --help runs may import (a package and its submodules).
HEAVY = (
    "pydantic",
    "yaml",
    "rich",
    "asyncio",
    "opensearchpy",
    "elasticsearch",
    "aiohttp",
    "requests",
    "urllib3",
    "botocore",
    "watchfiles",
    "reme_es.core.options",
    "reme_es.core.models",
    "reme_es.store",
    "reme_es.store.connect",
    "reme_es.store.lifecycle",
    "reme_es.adapters.dialect",
    "reme_es.adapters.transport",
    "reme_es.sync",
    "reme_es.server.node",
)
# What `import reme_es.cli` and `reme-es --help` may not import either: the commands and the entry points.
COMMAND_MODULES = (
    "reme_es.cli.sync_command",
    "reme_es.cli.search_command",
    "reme_es.cli.admin_commands",
    "reme_es.cli.server_commands",
    "reme_es.cli.workspace_commands",
    "importlib.metadata",
)

# Prints the modules a fresh interpreter imported for `import reme_es.cli` and then, given arguments, `reme-es ARGS`.
PROBE = """
import json, sys
before = set(sys.modules)
from reme_es.cli import main
args = json.loads(sys.argv[1])
if args is not None:
    try:
        main(args, prog_name="reme-es")
    except SystemExit:
        pass
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _imported(args: list[str] | None) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(run.stdout.splitlines()[-1])


def _within(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


@pytest.mark.parametrize("args", [None, ["--help"]], ids=["import", "--help"])
def test_the_group_imports_no_command(args):
    assert _within(_imported(args), HEAVY + COMMAND_MODULES) == []


@pytest.mark.parametrize(
    "args",
    [
        ["sync", "--help"],
        ["search", "--help"],
        ["status", "--help"],
        ["templates", "diff", "--help"],
        ["drop", "--help"],
        ["server", "start", "--help"],
        ["server", "cluster", "start", "--help"],
    ],
    ids=" ".join,
)
def test_a_command_help_imports_nothing_heavy(args):
    imported = _imported(args)
    assert COMMANDS[args[0]][0].partition(":")[0] in imported  # the command's module, and nothing heavy
    assert _within(imported, HEAVY) == []


@pytest.mark.parametrize("width", [52, 80, 200])
def test_the_lazy_command_list_is_the_one_click_prints(width):
    def listing(group: click.Group) -> str:
        with click.Context(group, info_name="reme-es", terminal_width=width, max_content_width=width) as ctx:
            formatter = ctx.make_formatter()
            group.format_commands(ctx, formatter)
            return formatter.getvalue()

    lazy = LazyGroup(commands_at=COMMANDS)
    loaded = click.Group(commands={name: main.get_command(click.Context(main), name) for name in COMMANDS})
    assert lazy.commands == {}
    assert listing(lazy) == listing(loaded)
    assert lazy.commands == {}


def test_every_command_is_where_the_map_says():
    for name, (target, _) in COMMANDS.items():
        command = main.get_command(click.Context(main), name)
        assert isinstance(command, click.Command) and command.name == name, target
