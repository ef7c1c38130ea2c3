"""Which folder writes each workspace of an index set, so a sync never deletes another workspace's files.

`<set>-workspaces` holds one doc per workspace: its key, the folder it was first synced from and the host. A writer
claims its workspace before it writes: the first claim records the folder; a claim from another folder (or host) is
refused with an error that says how to give the workspace its own key, or to take it over when it really is the same
workspace moved. A set from before workspaces holds one workspace, so its one record is its whole set's.
"""

from __future__ import annotations

import datetime as dt
import logging
import socket

from ..adapters import lookups as q
from ..adapters.port import Action, IndexPort
from ..core.errors import WorkspaceConflict

LEGACY_KEY = "_set"  # the record of a set from before workspaces: the one workspace it holds

logger = logging.getLogger(__name__)


def writer_identity(folder: str) -> dict:
    """The record of a workspace written from `folder` on this host."""
    return {"folder": folder, "host": socket.gethostname()}


class Registry:
    """The workspaces of one index set and who writes them."""

    def __init__(self, port: IndexPort, index: str, prefix: str):
        self.port, self.index, self.prefix = port.unscoped(), index, prefix

    async def claim(self, workspace: str | None, folder: str, take_over: bool = False) -> dict:
        """Record that `folder` on this host writes `workspace` (None: the one workspace of a set from before
        workspaces); refuse when another folder or host has claimed it, unless `take_over`. Returns the record."""
        key = workspace or LEGACY_KEY
        mine = {"workspace": key, **writer_identity(folder), "since": dt.datetime.now(dt.UTC).isoformat()}
        outcome = await self.port.bulk([Action("create", self.index, key, mine, routing=key)])
        if not outcome.failures:
            return mine
        if outcome.failures[0].status != 409:
            outcome.raise_for_failures()
        held = await self.port.get_one(self.index, key, routing=key) or {}
        what = f"workspace {workspace!r} of index set {self.prefix!r}" if workspace else f"index set {self.prefix!r}"
        if {k: held.get(k) for k in ("folder", "host")} == writer_identity(folder):
            return held
        if take_over:  # the caller asked (the CLI names the writer and what goes first; ReMe's `take_over: true`)
            (await self.port.bulk([Action("index", self.index, key, mine, routing=key)])).raise_for_failures()
            logger.warning(
                f"{what} taken over: it was written from {held.get('folder')} on {held.get('host')} since "
                f"{held.get('since')}; now from {folder} on {mine['host']}, whose files replace that folder's"
            )
            return mine
        raise WorkspaceConflict(
            f"{what} is written from {held.get('folder')} on {held.get('host')}; this is {folder} on "
            f"{socket.gethostname()}. Nothing was written. Give this folder its own workspace key (--workspace-key / "
            f"`workspace_key`), or, if it is the same workspace moved, take it over (--take-over / `take_over: true`)"
        )

    async def record(self, workspace: str | None) -> dict | None:
        """The record of `workspace` (None: of a set from before workspaces), or None when nobody claimed it."""
        key = workspace or LEGACY_KEY
        return await self.port.get_one(self.index, key, routing=key)

    async def release(self, workspace: str | None) -> None:
        """Forget who writes `workspace` (it was dropped)."""
        key = workspace or LEGACY_KEY
        (await self.port.bulk([Action("delete", self.index, key, routing=key)])).raise_for_failures()

    async def workspaces(self) -> list[dict]:
        """Every recorded workspace of the set: key, folder, host, since (sorted by key)."""
        await self.port.refresh([self.index])
        return [src async for src in self.port.scan(self.index, q.match_all(), True, ["workspace"])]
