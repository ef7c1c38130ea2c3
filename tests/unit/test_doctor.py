"""`reme-es doctor`'s checks as pure functions of the facts (reme_es.store.doctor): each state of each check, and the
table of Memorie's template versions against memorie/templates. The real-node side: tests/integration/test_doctor.py."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from reme_es.adapters.diagnostics import ClusterFacts, IndexFacts, SecurityFacts, SnapshotFacts
from reme_es.store import doctor
from reme_es.store.doctor import Facts, run_checks

NOW = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)
TEMPLATES = Path(__file__).resolve().parents[2] / "memorie" / "templates"


def index(kind: str = "chunks", **kw) -> IndexFacts:
    version = doctor.code_version(kind)
    base = dict(
        name=f"s-{kind}-1",
        alias=f"s-{kind}",
        kind=kind,
        template_version=version,
        meta={},
        has_vectors=False,
        auto_expand="0-1",
        docs=10,
    )
    base.update(kw)
    return IndexFacts(**base)  # type: ignore[arg-type]


def facts(*indices: IndexFacts, **kw) -> Facts:
    cluster = ClusterFacts("opensearch", "green", 1, 1, 4, 0, 1000)
    base = dict(
        cluster=cluster,
        indices=list(indices) or [index()],
        repositories=["backups"],
        snapshots=[SnapshotFacts("backups", "daily", "SUCCESS", NOW - dt.timedelta(hours=2))],
        security=SecurityFacts(True, True, "security plugin"),
        grants={"s": ["ana-1"]},
        model_set="s",
        now=NOW,
    )
    base.update(kw)
    return Facts(**base)  # type: ignore[arg-type]


def states(f: Facts) -> dict[str, str]:
    return {c.name: c.status for c in run_checks(f)}


def test_memorie_template_versions_are_the_ones_memorie_writes() -> None:
    found = {f"memorie-{p.stem}": json.loads(p.read_text())["version"] for p in TEMPLATES.glob("*.json")}
    assert found == doctor.MEMORIE_TEMPLATE_VERSIONS


def test_a_single_node_warns_only_about_what_one_node_cannot_have() -> None:
    got = states(facts(repositories=[], snapshots=[], security=SecurityFacts(False, False, "no security plugin")))
    assert got == {
        "cluster-health": "ok",
        "replicas": "warn",
        "templates": "ok",
        "vectors-model": "ok",
        "calibration": "ok",
        "missing-vectors": "ok",
        "deleted-docs": "ok",
        "shard-limit": "ok",
        "snapshots": "warn",
        "security": "warn",
    }


def test_health_fails_on_an_unassigned_primary_and_warns_on_a_replica() -> None:
    red = ClusterFacts(
        "opensearch", "red", 1, 1, 3, 1, 1000, [dict(index="s-chunks-1", shard="0", prirep="p", reason="NODE_LEFT")]
    )
    check = doctor.check_health(facts(cluster=red))
    assert (check.status, "s-chunks-1[0] (NODE_LEFT)" in check.message) == ("fail", True)
    yellow = ClusterFacts(
        "opensearch",
        "yellow",
        1,
        1,
        3,
        1,
        1000,
        [dict(index="s-chunks-1", shard="0", prirep="r", reason="INDEX_CREATED")],
    )
    assert doctor.check_health(facts(cluster=yellow)).status == "warn"


def test_replicas_fail_when_more_than_the_nodes_can_hold() -> None:
    two = ClusterFacts("opensearch", "green", 2, 2, 4, 0, 1000)
    assert doctor.check_replicas(facts(index(auto_expand="false", replicas=2), cluster=two)).status == "fail"
    assert doctor.check_replicas(facts(index(auto_expand="false", replicas=0), cluster=two)).status == "warn"
    assert doctor.check_replicas(facts(index(auto_expand="0-1", replicas=1), cluster=two)).status == "ok"


def test_templates_fail_older_and_newer_versions_and_know_memorie_kinds() -> None:
    assert doctor.check_templates(facts(index(template_version=1))).status == "fail"
    assert "newer reme-es" in doctor.check_templates(facts(index(template_version=99))).message
    memorie = index("memorie-relations", alias="p-memorie-relations", template_version=1)
    assert doctor.set_of(memorie) == "p"
    assert doctor.check_templates(facts(memorie)).status == "fail"


def test_vectors_model_fails_on_another_configured_model() -> None:
    recorded = {"provider": "local", "model": "all-MiniLM-L6-v2", "dims": 384}
    chunks = index(has_vectors=True, meta={"embedding": recorded}, with_vectors=10)
    assert doctor.check_model(facts(chunks, configured_model=recorded)).status == "ok"
    other = {"provider": "openai", "model": "text-embedding-3-small", "dims": 1536}
    assert doctor.check_model(facts(chunks, configured_model=other)).status == "fail"
    assert doctor.check_model(facts(chunks, configured_model=other, model_set="another")).status == "ok"
    assert doctor.check_model(facts(index(has_vectors=True, with_vectors=10))).status == "warn"


def test_calibration_is_due_without_a_record_past_min_docs_and_fine_with_one() -> None:
    chunks = index(has_vectors=True, docs=5000, with_vectors=5000, segments=4)
    assert doctor.check_calibration(facts(chunks)).status == "warn"
    record = dict(
        width=100,
        recall=0.99,
        target=0.97,
        reached=True,
        stopped="target",
        depth=50,
        at=10,
        docs=5000,
        segments=4,
        sample=128,
        reference="exact",
        measured_at="2026-12-03T12:00:00+00:00",
    )
    chunks.meta = {"knn_width": record}
    check = doctor.check_calibration(facts(chunks))
    assert (check.status, check.message) == ("ok", "s: width 100, recall@10 0.990, 1 d ago")
    chunks.meta = {"knn_width": {**record, "recall": 0.9, "reached": False}}
    assert doctor.check_calibration(facts(chunks)).status == "warn"


def test_missing_vectors_deleted_docs_and_shards() -> None:
    assert doctor.check_missing_vectors(facts(index(has_vectors=True, with_vectors=7))).message == (
        "chunks without a vector: s: 3"
    )
    assert doctor.check_deleted(facts(index(docs=9000, deleted=1000))).status == "warn"
    assert doctor.check_deleted(facts(index(docs=10000, deleted=1000))).status == "ok"  # 9.1 %
    assert doctor.check_deleted(facts(index(docs=9, deleted=9))).status == "ok"  # too few to merge for
    assert doctor.check_deleted(facts(index(docs=9, deleted=9), deleted_min=5)).status == "warn"
    full = ClusterFacts("opensearch", "green", 1, 1, 10, 0, 10)
    assert doctor.check_shards(facts(cluster=full)).status == "fail"
    assert doctor.check_shards(facts(cluster=ClusterFacts("opensearch", "green", 1, 1, 8, 0, 10))).status == "warn"


def test_snapshots_warn_when_old_and_fail_when_the_last_failed() -> None:
    old = [SnapshotFacts("backups", "weekly", "SUCCESS", NOW - dt.timedelta(days=3))]
    check = doctor.check_snapshots(facts(snapshots=old))
    assert (check.status, check.message) == ("warn", "last snapshot backups/weekly: SUCCESS, 3 d ago")
    failed = [SnapshotFacts("backups", "x", "PARTIAL", NOW)]
    assert doctor.check_snapshots(facts(snapshots=failed)).status == "fail"
    assert doctor.check_snapshots(facts(snapshots=[])).status == "warn"


def test_security_names_the_workspaces_with_grants() -> None:
    check = doctor.check_security(facts(grants={"s": ["ana-1", "bo-2"], "p": []}))
    assert (check.status, check.message) == ("ok", "document-level security on; grants: s: ana-1, bo-2")


def test_the_commands_default_minimum_is_the_checks() -> None:
    from reme_es.cli import doctor_command

    assert doctor_command.DELETED_MIN == doctor.DELETED_MIN
