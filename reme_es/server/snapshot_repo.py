"""A node's snapshot repository folder (`path.repo`): created, and writable by the user the JVM runs as.

An `fs` snapshot repository can only be registered at a location below one of the node's `path.repo` entries. The
launcher creates the folder, and as root hands it to the unprivileged run user (and lets that user reach it through
its parents), so `PUT _snapshot/<repo>` with `{"type": "fs", "settings": {"location": "<path>"}}` verifies. Members of
a local cluster share one folder: each of them must see the same files there.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..core.errors import ServerError
from .process import _make_traversable, _run_user


def prepare_snapshot_repo(path: str | os.PathLike) -> Path:
    """Create the snapshot repository folder `path` (absolute) and make it writable by the node's run user."""
    repo = Path(path).expanduser().resolve()
    if repo.exists() and not repo.is_dir():
        raise ServerError(f"snapshot repository path {repo} exists and is not a folder; choose another --snapshot-repo")
    try:
        repo.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ServerError(
            f"cannot create the snapshot repository folder {repo}: {exc.strerror or exc}; choose a path this user can "
            "create, or create it first"
        ) from exc
    user = _run_user()
    if user is None:
        if not os.access(repo, os.W_OK | os.X_OK):
            raise ServerError(f"snapshot repository folder {repo} is not writable by this user; fix its permissions")
        return repo
    proc = subprocess.run(
        ["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(repo)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise ServerError(
            f"cannot hand the snapshot repository folder {repo} to the node's user {user.pw_name!r}: "
            f"{proc.stderr.strip()}"
        )
    _make_traversable(repo)
    return repo


def repo_settings(settings: dict | None, snapshot_repo: str | os.PathLike | None) -> dict | None:
    """Node settings with `path.repo` set to the prepared `snapshot_repo` (unchanged without one)."""
    if snapshot_repo is None:
        return settings
    return {**(settings or {}), "path.repo": [str(prepare_snapshot_repo(snapshot_repo))]}
