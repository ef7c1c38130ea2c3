"""Which stored paths a sync may delete: only those its own walk could have found."""

from __future__ import annotations

from pathlib import Path

from reme_es.sync.scan import LocalFile, diff, in_scope


def test_hidden_paths_that_remes_watcher_indexed_are_not_deleted_by_sync():
    dirs, suffixes = ["daily", "digest"], ["md"]
    assert in_scope("daily/2026-05-18.md", dirs, suffixes)
    assert not in_scope("daily/.drafts/x.md", dirs, suffixes)
    assert not in_scope("digest/.hidden.md", dirs, suffixes)
    assert not in_scope("resource/x.md", dirs, suffixes)
    local = {"daily/a.md": LocalFile("daily/a.md", Path("/ws/daily/a.md"), 1.0, 3)}
    stored = {"daily/a.md": 1.0, "daily/gone.md": 1.0, "daily/.drafts/x.md": 1.0, "resource/r.md": 1.0}
    changes = diff(local, stored, dirs, suffixes)
    assert (changes.deleted, changes.unchanged) == (["daily/gone.md"], 1)
