"""The local sync state: last sync and summary, files skipped as binary, and what the store holds per file."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..core.home import reme_es_home


@dataclass
class _Known:
    st_mtime: float
    chunk_ids: list[str]


class State:
    """Small local record per index prefix: last sync time and summary, and files skipped as binary."""

    def __init__(self, path: Path | None):
        self.path = path
        self.data: dict = {"skipped": {}}
        if path and path.is_file():
            try:
                self.data = json.loads(path.read_text()) | {}
                self.data.setdefault("skipped", {})
            except (OSError, ValueError):
                pass

    def save(self) -> None:
        """Write the state atomically (ignored when there is no path)."""
        if not self.path:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)


def state_path(prefix: str, hosts: list[str], workspace: str | None = None) -> Path:
    """Where the local sync state of a workspace of an index set (None: a set from before workspaces) on a cluster
    lives (below the reme-es home)."""
    cluster = hashlib.sha256(",".join(sorted(hosts)).encode()).hexdigest()[:8]
    name = f"{prefix}.{workspace}" if workspace else prefix
    return reme_es_home() / "state" / f"{name}@{cluster}.json"
