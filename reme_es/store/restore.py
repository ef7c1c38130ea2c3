"""Restore from a snapshot: one workspace of an index set without touching the others, or the whole set.

One workspace (`restore_workspace`), the set's other workspaces and their later writes untouched:

1. The snapshot's indices of the set (`<set>-chunks-<n>`, `-files-<n>`, `-links-<n>`, `-workspaces-<n>`) are restored
   under temporary names outside the set (`restore-<token>-<index>`), without their aliases (they would join the live
   aliases) and without replicas.
2. The workspace's documents are counted in each copy. A snapshot that holds nothing of the workspace, or whose
   vectors have another dimension than the live set's, stops here: nothing of the live set has been changed.
3. The workspace's current documents are deleted from every index of the live set, its record in `<set>-workspaces`
   included (a scan of the workspace, routed, and bulk deletes), then the copies' documents of the workspace are
   written into the live aliases with the same ids, routing and sources (vectors included): a scroll and bulk through
   the port, so it works on every flavour (the OpenSearch 2.19 managed node has no `_reindex`).
4. The live indices are refreshed, and each one must hold exactly as many documents of the workspace as its copy.
5. The copies are deleted, whether the restore succeeded or not.

The live indices are refreshed only at the end (they are created with `refresh_interval: -1`), so a search of the
workspace sees it as it was before or as the snapshot had it, unless another workspace's refresh comes in between.
A writer of the workspace (sync --watch, ReMe) must be stopped while it runs: its writes would be deleted or would
make the counts differ. If a step fails after step 3 began, the workspace may be half restored: run the restore again.

The decisions (which snapshot indices form the set, the temporary names, the rename rule, the check of the counts)
are pure functions below, tested without a server (tests/unit/test_restore_plan.py).
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass

from ..adapters.port import Action, IndexPort
from ..adapters.scope import Scope
from ..adapters.snapshots import SnapshotInfo, Snapshots
from ..adapters.templates import INDEX_KINDS, SET_KINDS
from ..core.errors import ConfigError, RequestFailed

PAGE = 1000
TEMP_PREFIX = "restore"  # temporary copies: restore-<token>-<snapshot index>, outside every set's `<set>-*`
DEFAULT_TIMEOUT = 1800.0


# ------------------------------------------------------------------------------------------------ pure plans


def set_indices(snapshot_indices: list[str], prefix: str) -> dict[str, str]:
    """The snapshot's concrete index of each kind of the set `prefix` (kind -> index). ConfigError when the snapshot
    holds none of the set's content indices, or two of one kind (an interrupted reindex was snapshotted)."""
    own = re.compile(re.escape(prefix) + r"-(" + "|".join(SET_KINDS) + r")-(\d+)")
    found: dict[str, list[str]] = {}
    for name in snapshot_indices:
        if m := own.fullmatch(name):
            found.setdefault(m.group(1), []).append(name)
    twice = {kind: names for kind, names in found.items() if len(names) > 1}
    if twice:
        listed = "; ".join(f"{kind}: {', '.join(sorted(names))}" for kind, names in sorted(twice.items()))
        raise ConfigError(
            f"the snapshot holds more than one index of a kind of set {prefix} ({listed}): restore it "
            "with the snapshot API by index name"
        )
    missing = [kind for kind in INDEX_KINDS if kind not in found]
    if missing:
        held = ", ".join(snapshot_indices) or "no index"
        raise ConfigError(
            f"the snapshot holds no {', '.join(f'{prefix}-{k}' for k in missing)} index of set "
            f"{prefix} (it holds {held}). Nothing was changed"
        )
    return {kind: names[0] for kind, names in sorted(found.items(), key=lambda kv: SET_KINDS.index(kv[0]))}


@dataclass(frozen=True)
class WorkspaceRestorePlan:
    """What a one-workspace restore reads and writes: per kind, the snapshot's index, its temporary copy and the
    live alias the workspace's documents go back into."""

    prefix: str
    workspace: str
    token: str
    sources: dict[str, str]  # kind -> index in the snapshot
    temps: dict[str, str]  # kind -> temporary copy
    aliases: dict[str, str]  # kind -> live alias

    @property
    def rename(self) -> tuple[str, str]:
        """The restore's rename_pattern and rename_replacement: every restored index gets the temporary prefix."""
        return "(.+)", f"{TEMP_PREFIX}-{self.token}-$1"


def plan_workspace_restore(
    snapshot_indices: list[str], prefix: str, workspace: str, token: str | None = None
) -> WorkspaceRestorePlan:
    """The plan of restoring `workspace` of set `prefix` from a snapshot holding `snapshot_indices`."""
    token = token or secrets.token_hex(4)
    if not re.fullmatch(r"[a-z0-9]+", token):
        raise ValueError(f"a restore token is lowercase letters and digits, not {token!r}")
    sources = set_indices(snapshot_indices, prefix)
    return WorkspaceRestorePlan(
        prefix=prefix,
        workspace=workspace,
        token=token,
        sources=sources,
        temps={kind: f"{TEMP_PREFIX}-{token}-{index}" for kind, index in sources.items()},
        aliases={kind: f"{prefix}-{kind}" for kind in sources},
    )


def count_mismatches(wanted: dict[str, int], got: dict[str, int]) -> list[str]:
    """The kinds whose live count of the workspace differs from the snapshot's, described; [] when all agree."""
    return [f"{kind}: {got.get(kind, 0)} live, {n} in the snapshot" for kind, n in wanted.items() if got.get(kind) != n]


def vector_dims_differ(snapshot_dims: int | None, live_dims: int | None) -> bool:
    """Whether the snapshot's chunks cannot go into the live chunks index as they are (another vector dimension)."""
    return snapshot_dims is not None and live_dims is not None and snapshot_dims != live_dims


# ------------------------------------------------------------------------------------------------------- I/O


async def _workspace_docs(port: IndexPort, index: str, with_vectors: bool):
    """Pages of the workspace's documents in `index` (the port's scope: its filter and routing)."""
    async for page in port.scroll(index, PAGE, with_vectors=with_vectors):
        yield page


async def _dims(port: IndexPort, index: str) -> int | None:
    mapping = await port.mapping(index) or {}
    field = (mapping.get("properties") or {}).get("embedding")
    return port.dialect.vector_dims(field) if field else None


async def restore_workspace(
    port: IndexPort,
    snaps: Snapshots,
    repo: str,
    snapshot: str,
    prefix: str,
    workspace: str,
    timeout: float = DEFAULT_TIMEOUT,
    token: str | None = None,
) -> dict:
    """Restore one workspace of set `prefix` from `snapshot` of repository `repo` (see the module's docstring);
    `port` reaches the cluster (its scope is replaced). Returns what was restored: per kind the documents written
    back (`restored`) and the documents of the workspace deleted first (`replaced`), and the seconds it took."""
    started = time.monotonic()
    info = await snaps.snapshot(repo, snapshot)
    _require_success(info, repo)
    plan = plan_workspace_restore(info.indices, prefix, workspace, token)
    scope = Scope(workspace)
    mine, raw = port.unscoped(), port.unscoped()
    mine.scope = scope
    await _require_aliases(raw, plan, prefix, f"{snapshot} --repo {repo}")
    temps = list(plan.temps.values())
    try:
        await snaps.restore(
            repo,
            snapshot,
            list(plan.sources.values()),
            plan.rename,
            aliases=False,
            settings={"index.auto_expand_replicas": "false", "index.number_of_replicas": 0},
        )
        await snaps.wait_restored(temps, timeout)
        await raw.refresh(temps)
        wanted = await _restorable(mine, raw, plan, snapshot, prefix, workspace)
        # what any writer acknowledged must be seen by the scans (the indices refresh only when asked)
        await raw.refresh(list(plan.aliases.values()))
        replaced, restored = await _put_back(mine, raw, plan, scope, workspace)
        await raw.refresh(list(plan.aliases.values()))
        got = {kind: await mine.count(alias) for kind, alias in plan.aliases.items()}
        if wrong := count_mismatches(wanted, got):
            raise RequestFailed(
                f"restore of workspace {workspace} from snapshot {snapshot}: the counts differ ({'; '.join(wrong)}): "
                "another writer of this workspace (sync --watch, ReMe) wrote during the restore. Stop it and run the "
                "restore again",
                type="count_mismatch",
            )
    finally:
        for temp in temps:
            await raw.delete_index(temp, missing_ok=True)
    return {
        "snapshot": snapshot,
        "repo": repo,
        "index_prefix": prefix,
        "workspace": workspace,
        "from_indices": plan.sources,
        "restored": restored,
        "replaced": replaced,
        "seconds": round(time.monotonic() - started, 3),
    }


async def _require_aliases(raw: IndexPort, plan: WorkspaceRestorePlan, prefix: str, source: str) -> None:
    """Refuse a restore into a set that lacks one of its aliases here (nothing is changed)."""
    for alias in plan.aliases.values():
        if not await raw.concrete(alias):
            raise ConfigError(
                f"index set {prefix} has no {alias} alias here: restore the whole set first (`reme-es snapshot restore "
                f"{source} --all`) or sync the workspace once. Nothing was changed"
            )


async def _restorable(
    mine: IndexPort, raw: IndexPort, plan: WorkspaceRestorePlan, snapshot: str, prefix: str, workspace: str
) -> dict[str, int]:
    """The workspace's documents per kind in the restored copies; refused (nothing changed) when there are none or
    their vectors' dimension is not the live set's."""
    wanted = {kind: await mine.count(temp) for kind, temp in plan.temps.items()}
    if not any(wanted[kind] for kind in INDEX_KINDS):
        raise ConfigError(
            f"snapshot {snapshot} holds no document of workspace {workspace} in index set {prefix} (it was synced "
            f"there after the snapshot, or under another key: `reme-es status --workspaces` lists the keys). "
            "Nothing was changed"
        )
    snap_dims, live_dims = await _dims(raw, plan.temps["chunks"]), await _dims(raw, plan.aliases["chunks"])
    if vector_dims_differ(snap_dims, live_dims):
        raise ConfigError(
            f"snapshot {snapshot} holds {snap_dims}-d vectors but {plan.aliases['chunks']} now holds {live_dims}-d "
            "ones: the workspace cannot go back into this set as it was. Nothing was changed"
        )
    return wanted


async def _put_back(
    mine: IndexPort, raw: IndexPort, plan: WorkspaceRestorePlan, scope: Scope, workspace: str
) -> tuple[dict[str, int], dict[str, int]]:
    """Delete the workspace's current documents, then write back the restored copies' (vectors included): the counts
    per kind of each."""
    replaced = {}
    for kind, alias in plan.aliases.items():  # the workspace's current documents go first
        replaced[kind] = 0
        async for page in _workspace_docs(mine, alias, with_vectors=False):
            deletes = [Action("delete", alias, d.id, routing=d.routing or workspace) for d in page]
            (await raw.bulk(deletes)).raise_for_failures()
            replaced[kind] += len(deletes)
    restored = {}
    for kind, temp in plan.temps.items():
        restored[kind] = 0
        async for page in _workspace_docs(mine, temp, with_vectors=kind == "chunks"):
            writes = [
                Action("index", plan.aliases[kind], d.id, scope.source(d.source or {}), routing=d.routing or workspace)
                for d in page
            ]
            (await raw.bulk(writes)).raise_for_failures()
            restored[kind] += len(writes)
    return replaced, restored


def _require_success(info: SnapshotInfo, repo: str) -> None:
    if info.state != "SUCCESS":
        raise ConfigError(
            f"snapshot {info.name} of {repo} is {info.state}, not SUCCESS: restore from a complete one "
            f"(`reme-es snapshot list --repo {repo}`). Nothing was changed"
        )


async def restore_set(
    port: IndexPort,
    snaps: Snapshots,
    repo: str,
    snapshot: str,
    prefix: str,
    live: list[str],
    timeout: float = DEFAULT_TIMEOUT,
) -> dict:
    """Restore the whole set `prefix` (every workspace in it) from `snapshot`: the `live` indices of the set are
    deleted, then the snapshot's indices of the set are restored with their aliases. Returns what was restored."""
    started = time.monotonic()
    info = await snaps.snapshot(repo, snapshot)
    _require_success(info, repo)
    indices = list(set_indices(info.indices, prefix).values())
    raw = port.unscoped()
    for index in sorted({*live, *indices}):
        await raw.delete_index(index, missing_ok=True)
    await snaps.restore(repo, snapshot, indices, None, aliases=True)
    await snaps.wait_restored(indices, timeout)
    return {
        "snapshot": snapshot,
        "repo": repo,
        "index_prefix": prefix,
        "deleted": sorted(live),
        "restored": indices,
        "seconds": round(time.monotonic() - started, 3),
    }
