"""Snapshot repositories, snapshots and restores: the REST calls of `reme-es snapshot`, typed, over a port's transport.

Above `adapters/` nothing names a snapshot path or reads a snapshot answer's layout: `reme_es.store.restore` and the
CLI speak in `SnapshotInfo` and in the errors raised here. Errors a user can act on become `ConfigError`s that say
what to do (a repository that is not registered, a location outside every node's `path.repo`, a snapshot that does
not exist); they are told apart by the answer's error `type`, never by its words.

Calls that may outlast one request's try timeout (taking a snapshot, restoring one) are started without waiting and
then polled. The registration and the restore are sent once (`Transport.send_once`): the nodes answer a refusal of
either with a 500, which the shared policy would retry for a minute.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import time
import urllib.parse
from dataclasses import dataclass, field

from ..core.errors import ConfigError, RequestFailed
from .documents import or_none
from .port import IndexPort
from .templates import SET_KINDS

POLL = 0.25  # seconds between two looks at a running snapshot (doubling up to POLL_MAX)
POLL_MAX = 2.0

SERVER_START = "reme-es server start --snapshot-repo DIR"


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot of a repository as the cluster describes it."""

    name: str
    state: str  # SUCCESS, PARTIAL, FAILED, IN_PROGRESS, INCOMPATIBLE
    indices: list[str]
    start: str = ""  # ISO time the snapshot started
    seconds: float = 0.0
    shards: dict = field(default_factory=dict)  # total, successful, failed
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """A plain description (the CLI's --json)."""
        return {
            "snapshot": self.name,
            "state": self.state,
            "indices": self.indices,
            "start": self.start,
            "seconds": self.seconds,
            "shards": self.shards,
            "failures": self.failures,
        }


def _info(answer: dict) -> SnapshotInfo:
    failures = [f"{f.get('index')}[{f.get('shard_id')}]: {f.get('reason')}" for f in answer.get("failures") or []]
    return SnapshotInfo(
        name=answer["snapshot"],
        state=answer.get("state", ""),
        indices=sorted(answer.get("indices") or []),
        start=answer.get("start_time", ""),
        seconds=round((answer.get("duration_in_millis") or 0) / 1000, 3),
        shards=answer.get("shards") or {},
        failures=failures,
    )


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def under(location: str, folders: list[str]) -> bool:
    """Whether an `fs` repository at `location` lies in one of the `path.repo` folders (a relative location is
    resolved by the node against its first one)."""
    if not folders:
        return False
    if not posixpath.isabs(location):
        return ".." not in location.split("/")
    path = posixpath.normpath(location)
    return any(path == (f := posixpath.normpath(d)) or path.startswith(f.rstrip("/") + "/") for d in folders)


class Snapshots:
    """The snapshot API of the cluster a port talks to."""

    def __init__(self, port: IndexPort):
        self.port = port
        self.transport = port.transport

    # --- repositories ---------------------------------------------------------------------------
    async def repository(self, name: str) -> dict | None:
        """The registration of repository `name` (type, settings), None when it is not registered."""
        found = await or_none(self.transport.request("GET", f"/_snapshot/{_q(name)}"))
        return (found or {}).get(name)

    async def path_repo(self) -> dict[str, list[str]]:
        """Each node's `path.repo` folders (node name -> folders; [] for a node without one)."""
        answer = await self.transport.request(
            "GET", "/_nodes/settings", params={"filter_path": "nodes.*.name,nodes.*.settings.path.repo"}
        )
        out = {}
        for node in (answer.get("nodes") or {}).values():
            repo = ((node.get("settings") or {}).get("path") or {}).get("repo") or []
            out[node.get("name", "?")] = [repo] if isinstance(repo, str) else list(repo)
        return out

    async def register_fs(self, name: str, location: str) -> None:
        """Register (or re-register) an `fs` repository at `location`, after checking that every node lists a folder
        above it in `path.repo`; the nodes then verify that each of them can write there."""
        folders = await self.path_repo()
        without = sorted(n for n, f in folders.items() if not f)
        if without:
            raise ConfigError(
                f"cannot register snapshot repository {name!r}: node(s) {', '.join(without)} have no path.repo, so no "
                f"`fs` repository can live anywhere. Start the node(s) with `{SERVER_START}` (or set path.repo in "
                "their configuration) and give a --location below that folder. Nothing was registered"
            )
        outside = sorted(n for n, f in folders.items() if not under(location, f))
        if outside:
            listed = "; ".join(f"{n}: {', '.join(folders[n])}" for n in outside)
            raise ConfigError(
                f"cannot register snapshot repository {name!r} at {location}: it is not below the path.repo of "
                f"node(s) {listed}. Give a --location below that folder, or start the node(s) with `{SERVER_START}`. "
                "Nothing was registered"
            )
        body = {"type": "fs", "settings": {"location": location}}
        try:
            await self.transport.send_once("PUT", f"/_snapshot/{_q(name)}", body)
        except RequestFailed as exc:
            raise ConfigError(
                f"the cluster refused snapshot repository {name!r} at {location}: {exc.reason or exc}. Every node "
                "must be able to write there (a folder shared by all of them). Nothing was registered"
            ) from exc

    async def require(self, name: str) -> dict:
        """The registration of repository `name`; ConfigError saying how to register it when there is none."""
        found = await self.repository(name)
        if found is None:
            raise ConfigError(
                f"snapshot repository {name!r} is not registered on this cluster. Register it with --repo {name} "
                f"--location DIR (DIR below the nodes' path.repo: `{SERVER_START}`). Nothing was changed"
            )
        return found

    async def repositories(self) -> list[str]:
        """The names of every registered snapshot repository, sorted."""
        return sorted(await or_none(self.transport.request("GET", "/_snapshot")) or {})

    async def holding(self, prefix: str) -> list[tuple[str, SnapshotInfo]]:
        """(repository, snapshot) of every snapshot, in every registered repository, that holds an index of set
        `prefix` (`<prefix>-<kind>` or a concrete index of it, `<prefix>-<kind>-...`), oldest first per repository."""
        own = re.compile(rf"{re.escape(prefix)}-(?:{'|'.join(map(re.escape, SET_KINDS))})(?:-.+)?")
        return [
            (repo, snap)
            for repo in await self.repositories()
            for snap in await self.snapshots(repo)
            if any(own.fullmatch(index) for index in snap.indices)
        ]

    async def delete(self, repo: str, name: str) -> None:
        """Delete snapshot `name` of `repo` (the files no other snapshot shares leave the repository)."""
        await self.snapshot(repo, name)  # ConfigError naming the repository or the snapshot when missing
        await self.transport.request("DELETE", f"/_snapshot/{_q(repo)}/{_q(name)}")

    # --- snapshots ------------------------------------------------------------------------------
    async def snapshots(self, repo: str) -> list[SnapshotInfo]:
        """Every snapshot of the repository, oldest first."""
        await self.require(repo)
        answer = await self.transport.request("GET", f"/_snapshot/{_q(repo)}/_all")
        return sorted((_info(s) for s in answer.get("snapshots") or []), key=lambda s: (s.start, s.name))

    async def snapshot(self, repo: str, name: str) -> SnapshotInfo:
        """One snapshot; ConfigError when the repository or the snapshot does not exist."""
        await self.require(repo)
        try:
            answer = await self.transport.request("GET", f"/_snapshot/{_q(repo)}/{_q(name)}")
        except RequestFailed as exc:
            if exc.status == 404:
                raise ConfigError(
                    f"repository {repo!r} holds no snapshot {name!r} (`reme-es snapshot list --repo {repo}` lists "
                    "them). Nothing was changed"
                ) from None
            raise
        return _info(answer["snapshots"][0])

    async def create(self, repo: str, name: str, indices: list[str], timeout: float) -> SnapshotInfo:
        """Snapshot `indices` (without the cluster's global state) and wait until it has ended, up to `timeout` s."""
        await self.require(repo)
        body = {"indices": ",".join(indices), "include_global_state": False}
        try:
            await self.transport.request(
                "PUT", f"/_snapshot/{_q(repo)}/{_q(name)}", body, params={"wait_for_completion": "false"}
            )
        except RequestFailed as exc:
            if exc.type == "invalid_snapshot_name_exception":
                raise ConfigError(f"cannot take snapshot {name!r} in {repo!r}: {exc.reason or exc}") from None
            raise
        until, delay = time.monotonic() + timeout, POLL
        while True:
            info = await self.snapshot(repo, name)
            if info.state not in ("IN_PROGRESS", "STARTED", "INIT"):
                return info
            if time.monotonic() > until:
                raise RequestFailed(
                    f"snapshot {name!r} of {repo!r} still running after {timeout:g} s; it goes on in "
                    f"the cluster: `reme-es snapshot list --repo {repo}` shows when it has ended",
                    type="timeout",
                )
            await asyncio.sleep(delay)
            delay = min(POLL_MAX, delay * 2)

    async def restore(
        self,
        repo: str,
        name: str,
        indices: list[str],
        rename: tuple[str, str] | None,
        aliases: bool,
        settings: dict | None = None,
        ignore_settings: list[str] | None = None,
    ) -> None:
        """Start restoring `indices` of a snapshot (their global state left out), under new names when `rename`
        (rename_pattern, rename_replacement), with their aliases when `aliases`; `settings` replace index settings of
        the copies, `ignore_settings` are left out of them. Returns once the restore is accepted: `wait_restored`."""
        body: dict = {"indices": ",".join(indices), "include_global_state": False, "include_aliases": aliases}
        if rename:
            body["rename_pattern"], body["rename_replacement"] = rename
        if settings:
            body["index_settings"] = settings
        if ignore_settings:
            body["ignore_index_settings"] = ignore_settings
        try:
            await self.transport.send_once(
                "POST", f"/_snapshot/{_q(repo)}/{_q(name)}/_restore", body, params={"wait_for_completion": "false"}
            )
        except RequestFailed as exc:
            raise RequestFailed(
                f"restore of snapshot {name!r} from {repo!r} refused: {exc.reason or exc}",
                status=exc.status,
                reason=exc.reason,
                type=exc.type,
            ) from exc

    async def wait_restored(self, indices: list[str], timeout: float) -> None:
        """Wait until every primary shard of `indices` is restored (health yellow or green), up to `timeout` s."""
        until = time.monotonic() + timeout
        names = ",".join(indices)
        while True:
            left = max(1, min(20, int(until - time.monotonic())))
            health = await self.transport.request(
                "GET", f"/_cluster/health/{names}", params={"wait_for_status": "yellow", "timeout": f"{left}s"}
            )
            if not health.get("timed_out"):
                return
            if time.monotonic() > until:
                raise RequestFailed(
                    f"the restore of {names} had not ended after {timeout:g} s (health "
                    f"{health.get('status')}); `GET _cat/recovery/{names}` shows where it is",
                    type="timeout",
                )
