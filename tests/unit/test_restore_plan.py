"""The pure decisions of `reme-es snapshot restore` (reme_es/store/restore.py) and of the repository check
(reme_es/adapters/snapshots.py), without a server: which snapshot indices form the set, the temporary names and the
rename rule, the count check, and whether a location lies below a node's path.repo."""

from __future__ import annotations

import re

import pytest

from reme_es.adapters.snapshots import under
from reme_es.core.errors import ConfigError
from reme_es.store.restore import count_mismatches, plan_workspace_restore, set_indices, vector_dims_differ

SNAPSHOT = [
    "team-chunks-2",
    "team-files-1",
    "team-links-1",
    "team-workspaces-1",
    "team-b-chunks-1",
    "teamapp-memorie-memories-v1",
    "other-chunks-1",
]


def test_the_set_is_its_own_kinds_only_whatever_else_the_snapshot_holds():
    assert set_indices(SNAPSHOT, "team") == {
        "chunks": "team-chunks-2",
        "files": "team-files-1",
        "links": "team-links-1",
        "workspaces": "team-workspaces-1",
    }
    # a set whose name begins another's: team-b is not a kind of team, and team's indices are not team-b's
    assert set_indices(SNAPSHOT + ["team-b-files-1", "team-b-links-1"], "team-b") == {
        "chunks": "team-b-chunks-1",
        "files": "team-b-files-1",
        "links": "team-b-links-1",
    }


def test_a_snapshot_without_the_sets_content_or_with_two_of_a_kind_is_refused():
    with pytest.raises(ConfigError, match=r"no team-files, team-links index of set team .*Nothing was changed"):
        set_indices(["team-chunks-1"], "team")
    with pytest.raises(
        ConfigError,
        match=r"more than one index of a kind of set team \(chunks: team-chunks-1, "
        r"team-chunks-2\)",
    ):
        set_indices(["team-chunks-1", "team-chunks-2", "team-files-1", "team-links-1"], "team")


def test_the_copies_are_renamed_outside_every_set_and_go_back_into_the_live_aliases():
    plan = plan_workspace_restore(SNAPSHOT, "team", "ana-1234", token="ab12")
    assert plan.temps == {
        "chunks": "restore-ab12-team-chunks-2",
        "files": "restore-ab12-team-files-1",
        "links": "restore-ab12-team-links-1",
        "workspaces": "restore-ab12-team-workspaces-1",
    }
    assert plan.aliases == {
        "chunks": "team-chunks",
        "files": "team-files",
        "links": "team-links",
        "workspaces": "team-workspaces",
    }
    pattern, replacement = plan.rename
    # the node applies rename_pattern/rename_replacement (Java's $1) to each restored index
    renamed = {k: re.sub(pattern, replacement.replace("$1", r"\1"), v, count=1) for k, v in plan.sources.items()}
    assert renamed == plan.temps
    assert not any(t.startswith("team-") for t in plan.temps.values())
    tokens = {plan_workspace_restore(SNAPSHOT, "team", "ana").token for _ in range(3)}
    assert len(tokens) == 3  # a fresh token per restore: two restores never share copies
    with pytest.raises(ValueError):
        plan_workspace_restore(SNAPSHOT, "team", "ana", token="Bad-Token")


def test_counts_and_dimensions():
    wanted = {"chunks": 5, "files": 5, "links": 11, "workspaces": 1}
    assert count_mismatches(wanted, dict(wanted)) == []
    assert count_mismatches(wanted, {**wanted, "chunks": 6, "workspaces": 0}) == [
        "chunks: 6 live, 5 in the snapshot",
        "workspaces: 0 live, 1 in the snapshot",
    ]
    assert vector_dims_differ(384, 256) and not vector_dims_differ(384, 384)
    assert not vector_dims_differ(None, 384) and not vector_dims_differ(384, None)


def test_a_location_must_lie_below_path_repo():
    assert under("/srv/snaps/backups", ["/srv/snaps"]) and under("/srv/snaps", ["/srv/snaps/"])
    assert under("backups", ["/srv/snaps"])  # relative: resolved against the first path.repo folder
    assert not under("/srv/snapshots-other", ["/srv/snaps"]) and not under("/srv/snaps/../etc", ["/srv/snaps"])
    assert not under("../up", ["/srv/snaps"]) and not under("/srv/snaps/x", [])
