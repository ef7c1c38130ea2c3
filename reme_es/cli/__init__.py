"""The `reme-es` command line: sync a workspace, search it, maintain its indices, run a local node.

Exit codes: 0 ok; 1 a reme-es error (server, mapping, a file that failed to sync) or differences found by
`templates diff`; 2 bad usage or configuration; 130 interrupted.
"""

from __future__ import annotations

from . import maintenance, search, server, sync  # noqa: F401  (each registers its commands on `main`)
from .base import Exit, common, main

__all__ = ["Exit", "common", "main"]
