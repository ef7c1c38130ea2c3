"""The reme-es home folder: managed-node installs and folders (`server/`) and the sync state (`sync/`) live below it."""

from __future__ import annotations

import os
from pathlib import Path


def reme_es_home() -> Path:
    """Root folder of the cache, installs, node folders and sync state (`REME_ES_HOME` overrides it)."""
    from .runtime import runtime

    if home := runtime().home:
        return home.expanduser().resolve()
    if os.geteuid() == 0:
        return Path("/var/cache/reme-es")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "reme-es"
