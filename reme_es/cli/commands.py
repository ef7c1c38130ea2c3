"""The commands of `reme-es` and the lazy group that lists them without importing them: `reme-es --help` reads the
first sentences written here, and a command's module is imported only when that command runs."""

from __future__ import annotations

from importlib import import_module

import click

# Each command of `main`: where it is defined, and the first sentence of its help (what `reme-es --help` lists;
# tests/unit/test_cli_imports.py checks it against the command's docstring).
COMMANDS: dict[str, tuple[str, str]] = {
    "access": (
        "reme_es.cli.access_commands:access",
        "Grant a workspace of an index set to users or backend roles, enforced by the cluster (document-level "
        "security).",
    ),
    "sync": (
        "reme_es.cli.sync_command:sync",
        "Index the workspace's Markdown files as ReMe's file store does (only what changed since the last sync).",
    ),
    "search": (
        "reme_es.cli.search_command:search",
        "Search the indexed workspace; prints each hit as ReMe does, with its file's links.",
    ),
    "doctor": (
        "reme_es.cli.doctor_command:doctor",
        "Check the memory server and say what to fix: health, replicas, templates, vectors, calibration, optimize, "
        "shards, snapshots, security.",
    ),
    "metrics": (
        "reme_es.cli.metrics_command:metrics",
        "Serve Prometheus metrics on /metrics: this process's and the memory server's state (doctor's figures).",
    ),
    "status": (
        "reme_es.cli.admin_commands:status",
        "Server version and capabilities, per-index docs/deleted/segments, and the last sync.",
    ),
    "optimize": (
        "reme_es.cli.admin_commands:optimize",
        "Merge the indices to the segments search wants, then measure the k-NN width (--deleted-ratio: expunge only).",
    ),
    "templates": (
        "reme_es.cli.admin_commands:templates",
        "Install the index templates, or compare the live indices with them.",
    ),
    "reindex": (
        "reme_es.cli.admin_commands:reindex",
        "Rebuild every index as <prefix>-<kind>-<n+1> from the current templates and swap the aliases.",
    ),
    "drop": (
        "reme_es.cli.workspace_commands:drop",
        (
            "Forget the workspace: delete its files, chunks and links from its index set (other workspaces are "
            "untouched), and the local sync state."
        ),
    ),
    "migrate": (
        "reme_es.cli.workspace_commands:migrate",
        (
            "Move the workspace into a shared index set (default: reme) without loss: copy its files, chunks, "
            "vectors and links, check the counts, then drop the source."
        ),
    ),
    "snapshot": (
        "reme_es.cli.snapshot_commands:snapshot",
        "Back up an index set into the cluster's snapshot repository, list and delete the backups, restore one "
        "workspace.",
    ),
    "ui": (
        "reme_es.cli.ui_command:ui",
        "Browse the index set in a web page: workspaces, files, chunks, links, and searches explained stage by stage.",
    ),
    "server": (
        "reme_es.cli.server_commands:server",
        "Run a local OpenSearch / Elasticsearch node (fetched from Maven Central, no Docker).",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when one is asked for: its own --help lists them from their first
    sentences in `commands_at` (name -> ("module:attribute", first sentence)) without importing any."""

    def __init__(self, *args, commands_at: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.commands_at = commands_at

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted (none imported)."""
        return sorted({*self.commands, *self.commands_at})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command of that name, its module imported on first use; None for an unknown name."""
        if cmd_name not in self.commands and cmd_name in self.commands_at:
            module, _, attribute = self.commands_at[cmd_name][0].partition(":")
            self.add_command(getattr(import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """click's, with every command loaded first for an unknown name: its "Did you mean" looks at loaded ones."""
        if args and args[0] not in self.list_commands(ctx):
            for name in self.commands_at:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The Commands section of --help as click writes it, from the first sentences: no command is imported."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            command = self.commands.get(name) or click.Command(name, help=self.commands_at[name][1])
            rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
