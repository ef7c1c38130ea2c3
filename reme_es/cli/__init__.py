"""The `reme-es` command line: sync a workspace, search it, maintain its indices, run a local node.

Exit codes: 0 ok; 1 a reme-es error (server, mapping, a file that failed to sync) or differences found by
`templates diff`; 2 bad usage or configuration; 130 interrupted.

Each command's module is imported when the command runs (`commands.COMMANDS`), so `reme-es --help` imports none.
"""

from __future__ import annotations

from .app import Exit, common, main

__all__ = ["Exit", "common", "main"]
