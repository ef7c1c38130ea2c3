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

    async def claim(self, workspace: str | None, folder: str, take_over: bool = False, blind: bool = False) -> dict:
        """Record that `folder` on this host writes `workspace` (None: the one workspace of a set from before
        workspaces); refuse when another folder or host has claimed it, unless `take_over`. A record the caller
        cannot read (a grant's document-level security hides it) is taken over only when `blind` too (the CLI's
        --yes): its holder cannot be named. Returns the record."""
        key = workspace or LEGACY_KEY
        mine = {"workspace": key, **writer_identity(folder), "since": dt.datetime.now(dt.UTC).isoformat()}
        outcome = await self.port.bulk([Action("create", self.index, key, mine, routing=key)])
        if not outcome.failures:
            return mine
        if outcome.failures[0].status != 409:
            outcome.raise_for_failures()
        seen = await self.port.get_one(self.index, key, routing=key)
        what = f"workspace {workspace!r} of index set {self.prefix!r}" if workspace else f"index set {self.prefix!r}"
        if seen is None:  # recorded (the create met it), but out of this caller's reads
            return await self._claim_unseen(what, key, mine, take_over, blind)
        held = seen
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

    async def _claim_unseen(self, what: str, key: str, mine: dict, take_over: bool, blind: bool) -> dict:
        """Claim a workspace whose record exists but is out of the caller's reads: refused unless `take_over` and
        `blind` (its holder cannot be named, so nothing can be shown before it is taken over)."""
        if not (take_over and blind):
            go_on = "with --take-over --yes" if take_over else "with --take-over --yes, if it is yours"
            raise WorkspaceConflict(
                f"{what} is recorded, but this grant cannot see who holds this workspace (its record is outside "
                f"what these credentials may read). Nothing was written. Take it over {go_on} (the holder's files "
                "may be deleted), or give this folder its own workspace key (--workspace-key)"
            )
        (await self.port.bulk([Action("index", self.index, key, mine, routing=key)])).raise_for_failures()
        logger.warning(f"{what} taken over from a holder these credentials cannot see; now from {mine['folder']}")
        return mine

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
