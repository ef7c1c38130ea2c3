"""`reme-es doctor`: what to fix on a memory server, one check per line, each saying what to do.

The facts come from `reme_es.adapters.diagnostics` (every read there); the checks here are pure functions of them, so
each can be read and tested alone. A check is `ok`, `warn` (worth doing, nothing is wrong yet, or a single node's
nature) or `fail` (something is wrong now: the command exits 1). Memorie's indices (`<prefix>-memorie-*`) are
checked beside ReMe's index sets wherever a check applies to them (health, replicas, templates, calibration,
deleted documents).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ..adapters.diagnostics import ClusterFacts, Diagnostics, IndexFacts, SecurityFacts, SnapshotFacts
from ..adapters.port import IndexPort
from ..adapters.templates import load_template
from .calibration import Calibration, calibration_due

OK, WARN, FAIL = "ok", "warn", "fail"
DELETED_RATIO = 0.1  # store.admin.optimize's default: an index past it is merged by `reme-es optimize`
DELETED_MIN = 1000  # fewer deleted documents cost nothing worth a merge (Lucene's own merges reclaim them)
SHARDS_WARN = 0.8  # share of the cluster's shard limit that warns
SNAPSHOT_MAX_AGE = dt.timedelta(days=1)  # a last snapshot older than this warns
# Memorie's template versions (memorie/templates/*.json; tests/unit/test_doctor.py checks this table against them).
MEMORIE_TEMPLATE_VERSIONS = {"memorie-memories": 1, "memorie-vectors": 1, "memorie-relations": 2}


@dataclass
class Check:
    """One line of the doctor: which check, its state, what it found and what to do."""

    name: str
    status: str  # ok, warn, fail
    message: str
    fix: str = ""

    def as_dict(self) -> dict:
        """A plain description (the --json output)."""
        return asdict(self)


@dataclass
class Facts:
    """Everything the checks read (`gather` collects it)."""

    cluster: ClusterFacts
    indices: list[IndexFacts]
    repositories: list[str]
    snapshots: list[SnapshotFacts]
    security: SecurityFacts
    grants: dict[str, list[str]]  # set or Memorie prefix -> workspaces (tenants) with a grant
    model_set: str | None = None  # the set whose vectors model is compared with `configured_model` (None: all)
    configured_model: dict | None = None
    now: dt.datetime | None = None
    deleted_min: int = DELETED_MIN


def set_of(index: IndexFacts) -> str:
    """The index set (ReMe) or prefix (Memorie, `<prefix>-memorie`) an index belongs to, from its alias."""
    alias = index.alias.split(",")[0] if index.alias else index.name
    suffix = f"-{index.kind}"
    return alias[: -len(suffix)] if alias.endswith(suffix) else alias


def code_version(kind: str) -> int | None:
    """The template version this code writes for an index kind (None: a kind it does not know)."""
    if kind in MEMORIE_TEMPLATE_VERSIONS:
        return MEMORIE_TEMPLATE_VERSIONS[kind]
    try:
        return int(load_template(kind)["version"])
    except FileNotFoundError:
        return None


def _names(items: list[str], most: int = 4) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def check_health(f: Facts) -> Check:
    """Cluster health and the unassigned shards of the indices looked at."""
    c = f.cluster
    if c.status is None:
        return Check("cluster-health", OK, "the service has no health API (a managed service): nothing to check")
    primaries = [u for u in c.unassigned if u["prirep"] == "p"]
    replicas = [u for u in c.unassigned if u["prirep"] != "p"]
    where = _names([f"{u['index']}[{u['shard']}] ({u['reason']})" for u in c.unassigned])
    if c.status == "red" or primaries:
        return Check(
            "cluster-health",
            FAIL,
            f"cluster {c.status}, unassigned primaries: {where or 'of other indices'}",
            "an index without its primary cannot answer: restart the node that held it, or restore the index from "
            "a snapshot (`reme-es snapshot restore`)",
        )
    if c.status == "yellow":
        mine = f"unassigned replicas: {where}" if replicas else "of other indices than reme-es'"
        return Check(
            "cluster-health",
            WARN,
            f"cluster yellow, {c.unassigned_shards} unassigned shard(s), {mine}",
            "replicas with no node to hold them: add a node, or lower the replicas (`reme-es reindex --replicas 0` "
            "for an index set, or leave --replicas out for one copy wherever a second node exists)",
        )
    return Check("cluster-health", OK, f"cluster green, {c.nodes} node(s), {c.active_shards} shard(s)")


def check_replicas(f: Facts) -> Check:
    """Replicas against the nodes there are."""
    nodes, indices = f.cluster.data_nodes, f.indices
    fixed = [i for i in indices if i.auto_expand == "false"]
    too_many = [i.name for i in fixed if i.replicas > nodes - 1]
    if too_many:
        return Check(
            "replicas",
            FAIL,
            f"{len(too_many)} index(es) want more replicas than {nodes} node(s) can hold: {_names(too_many)}",
            "`reme-es reindex --replicas N` with N below the nodes (or without --replicas: one copy wherever a "
            "second node exists), or add nodes",
        )
    if nodes == 1:
        return Check(
            "replicas",
            WARN,
            "single node: no index has a copy on another node (a lost disk loses them)",
            "add a node (the indices made without --replicas get a copy by themselves), and take snapshots",
        )
    bare = [i.name for i in indices if i.replicas == 0 and i.auto_expand == "false"]
    if bare:
        return Check(
            "replicas",
            WARN,
            f"{len(bare)} index(es) keep no copy on {nodes} nodes: {_names(bare)}",
            "`reme-es reindex` without --replicas (one copy wherever a second node exists)",
        )
    return Check("replicas", OK, f"every index keeps a copy on another of the {nodes} nodes")


def check_templates(f: Facts) -> Check:
    """Template versions of the live indices against this code's."""
    old, new = [], []
    for i in f.indices:
        want = code_version(i.kind)
        if want is None or i.template_version is None:
            continue
        if i.template_version < want:
            old.append(f"{i.name} (v{i.template_version}, code v{want})")
        elif i.template_version > want:
            new.append(f"{i.name} (v{i.template_version}, code v{want})")
    if new:
        return Check(
            "templates",
            FAIL,
            f"made by a newer reme-es: {_names(new)}",
            "upgrade reme-es (or memorie) to the version that made them before writing to them",
        )
    if old:
        return Check(
            "templates",
            FAIL,
            f"older templates than this code writes: {_names(old)}",
            "`reme-es reindex --index-prefix SET` rebuilds a set from the current templates (Memorie upgrades its "
            "indices when a store opens them)",
        )
    return Check("templates", OK, f"{len(f.indices)} index(es) on this code's template versions")


def check_model(f: Facts) -> Check:
    """The vectors model each index set records against the configured one (compared for `model_set`, the set the
    configuration's workspace uses; every set when None)."""
    from ..embeddings.embedders import describe_model, same_model

    found, unrecorded, other = [], [], []
    for i in f.indices:
        if i.kind != "chunks" or not i.has_vectors:
            continue
        recorded, name = i.meta.get("embedding") or None, set_of(i)
        if recorded is None:
            unrecorded.append(name)
        elif f.configured_model is not None and f.model_set in (None, name):
            if not same_model(recorded, f.configured_model):
                other.append(f"{name} holds {describe_model(recorded)}")
        if recorded is not None:
            found.append(f"{name}: {describe_model(recorded)}")
    if other:
        return Check(
            "vectors-model",
            FAIL,
            f"the configuration asks for {describe_model(f.configured_model or {})}, but {_names(other)}",
            "leave --embedding (REME_ES_EMBEDDING, reme-es.yaml) out to use the recorded model, or `reme-es drop "
            "--yes` and sync again with the new one",
        )
    if unrecorded:
        return Check(
            "vectors-model",
            WARN,
            f"vector field but no model recorded: {_names(unrecorded)}",
            "sync once with the embedding that made the vectors (`reme-es sync --embedding ...`): it records it",
        )
    return Check("vectors-model", OK, _names(found) if found else "no index set keeps vectors")


def check_calibration(f: Facts) -> Check:
    """The k-NN width's calibration: measured, how long ago, with what recall, and whether it is due again."""
    now = f.now or dt.datetime.now(dt.UTC)
    due, low, fine = [], [], []
    for i in f.indices:
        if not i.has_vectors or i.kind not in ("chunks", "memorie-vectors"):
            continue
        vectors = i.with_vectors if i.with_vectors is not None else i.docs
        record = Calibration.from_meta(i.meta)
        if calibration_due(record, vectors, i.segments):
            due.append(f"{set_of(i)} ({'never measured' if record is None else 'the index changed since'})")
        elif record is not None and not record.reached:
            low.append(f"{set_of(i)} (recall@{record.at} {record.recall:.3f} < {record.target})")
        elif record is not None:
            age = _age(record.measured_at, now)
            fine.append(f"{set_of(i)}: width {record.width}, recall@{record.at} {record.recall:.3f}, {age} ago")
    if due:
        return Check(
            "calibration",
            WARN,
            f"k-NN width due: {_names(due)}",
            "`reme-es optimize --calibrate --index-prefix SET` measures it (Memorie: `store.calibrate()`)",
        )
    if low:
        return Check(
            "calibration",
            WARN,
            f"k-NN width short of its recall target: {_names(low)}",
            "raise knn_calibration's max_width or latency_budget_ms, or merge the index (`reme-es optimize "
            "--max-segments 1`), then `reme-es optimize --calibrate`",
        )
    return Check("calibration", OK, _names(fine) if fine else "no index with enough vectors to measure")


def check_missing_vectors(f: Facts) -> Check:
    """Chunks without vectors in the sets that keep vectors."""
    counted = [(set_of(i), i.docs, i.with_vectors) for i in f.indices if i.with_vectors is not None]
    missing = [(name, docs - vectors) for name, docs, vectors in counted if docs > vectors]
    if missing:
        return Check(
            "missing-vectors",
            WARN,
            "chunks without a vector: " + _names([f"{s}: {n}" for s, n in missing]),
            "`reme-es sync -w FOLDER` with the recorded embedding embeds them (ReMe's file store does at its start); "
            "until then vector search misses them",
        )
    return Check("missing-vectors", OK, "every chunk of the sets with vectors has one")


def check_deleted(f: Facts) -> Check:
    """Deleted documents' share of each index (an optimize is due past `DELETED_RATIO`)."""
    due = []
    for i in f.indices:
        total = i.docs + i.deleted
        if i.deleted >= f.deleted_min and i.deleted / total >= DELETED_RATIO:
            due.append(f"{i.name} ({i.deleted / total:.0%} deleted)")
    if due:
        return Check(
            "deleted-docs",
            WARN,
            f"optimize due: {_names(due)}",
            "`reme-es optimize --index-prefix SET` expunges them (Memorie: its store's optimize)",
        )
    text = f"deleted documents under {DELETED_RATIO:.0%} (or fewer than {f.deleted_min}) in every index"
    return Check("deleted-docs", OK, text)


def check_shards(f: Facts) -> Check:
    """Shards against the cluster's limit (`cluster.max_shards_per_node` per data node)."""
    c = f.cluster
    limit = c.max_shards_per_node * max(1, c.data_nodes)
    used = c.active_shards + c.unassigned_shards
    text = f"{used} of {limit} shards ({c.max_shards_per_node} per node, {c.data_nodes} data node(s))"
    fix = (
        "keep workspaces in shared index sets (the default `reme`), drop sets nobody uses (`reme-es drop --set`), "
        "add nodes, or raise cluster.max_shards_per_node"
    )
    if used >= limit:
        return Check("shard-limit", FAIL, f"{text}: no new index can be created", fix)
    if used >= SHARDS_WARN * limit:
        return Check("shard-limit", WARN, f"{text}: near the limit", fix)
    return Check("shard-limit", OK, text)


def check_snapshots(f: Facts) -> Check:
    """A snapshot repository, and the age of the last snapshot of the indices looked at."""
    now = f.now or dt.datetime.now(dt.UTC)
    if not f.repositories:
        return Check(
            "snapshots",
            WARN,
            "no snapshot repository registered: nothing to restore after a lost disk",
            "`reme-es snapshot create --repo NAME --location DIR` (DIR below the nodes' path.repo: `reme-es server "
            "start --snapshot-repo DIR` for a managed node)",
        )
    if not f.snapshots:
        return Check(
            "snapshots",
            WARN,
            f"repositories {_names(f.repositories)} hold no snapshot of these indices",
            f"`reme-es snapshot create --repo {f.repositories[0]}`",
        )
    last = max(f.snapshots, key=lambda s: s.start or dt.datetime.min.replace(tzinfo=dt.UTC))
    age = now - last.start if last.start else None
    text = f"last snapshot {last.repository}/{last.name}: {last.state}, {_age_text(age)} ago"
    fix = f"`reme-es snapshot create --repo {last.repository}` (and schedule it)"
    if last.state not in ("SUCCESS", "IN_PROGRESS"):
        return Check("snapshots", FAIL, text, fix)
    if age is None or age > SNAPSHOT_MAX_AGE:
        return Check("snapshots", WARN, text, fix)
    return Check("snapshots", OK, text)


def check_security(f: Facts) -> Check:
    """Document-level security, and which workspaces (Memorie tenants) have grants."""
    s = f.security
    if not s.enabled or not s.dls:
        return Check(
            "security",
            WARN,
            f"no document-level security ({s.detail}): anyone reaching the node reads every workspace",
            "run the cluster with its security plugin (OpenSearch) or a licence with document-level security "
            "(Elasticsearch), then `reme-es access grant` each workspace (docs/team-server.md)",
        )
    granted = [f"{prefix}: {_names(keys)}" for prefix, keys in sorted(f.grants.items()) if keys]
    return Check("security", OK, f"document-level security on; grants: {'; '.join(granted) or 'none yet'}")


CHECKS: list[Callable[[Facts], Check]] = [
    check_health,
    check_replicas,
    check_templates,
    check_model,
    check_calibration,
    check_missing_vectors,
    check_deleted,
    check_shards,
    check_snapshots,
    check_security,
]


async def gather(
    port: IndexPort,
    prefix: str | None = None,
    model_set: str | None = None,
    configured_model: dict | None = None,
    deleted_min: int = DELETED_MIN,
) -> Facts:
    """The facts of every check, read from the cluster `port` reaches: the indices of index set (and Memorie
    prefix) `prefix`, or every index reme-es made when None; `configured_model` is compared with what `model_set`
    records (every set when None)."""
    d = Diagnostics(port)
    pattern = f"{prefix}-*" if prefix else "*"
    indices = await d.indices(pattern)
    if prefix:  # `<prefix>-*` also matches a set named `<prefix>-x`: keep this prefix's own
        indices = [i for i in indices if set_of(i) == prefix]
    cluster = await d.cluster(pattern)
    names = {i.name for i in indices}
    cluster.unassigned = [u for u in cluster.unassigned if u["index"] in names]
    repositories, snapshots = await d.last_snapshots(sorted(names))
    security = await d.security()
    grants = await d.grants(sorted({set_of(i) for i in indices})) if security.enabled else {}
    return Facts(
        cluster, indices, repositories, snapshots, security, grants, model_set, configured_model, None, deleted_min
    )


def run_checks(facts: Facts) -> list[Check]:
    """Every check, in order."""
    return [check(facts) for check in CHECKS]


def _age(measured_at: str, now: dt.datetime) -> str:
    try:
        then = dt.datetime.fromisoformat(measured_at)
    except (TypeError, ValueError):
        return "?"
    return _age_text(now - (then if then.tzinfo else then.replace(tzinfo=dt.UTC)))


def _age_text(age: dt.timedelta | None) -> str:
    if age is None:
        return "?"
    seconds = max(0, int(age.total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
