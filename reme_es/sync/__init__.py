"""Workspace sync: scan (mtime diff), chunkers (Markdown, JSONL), batched writes, watch mode."""

from .scan import Changes, LocalFile, diff, walk
from .workspace import Failure, Reporter, Summary, WorkspaceSync

__all__ = ["Changes", "Failure", "LocalFile", "Reporter", "Summary", "WorkspaceSync", "diff", "walk"]
