"""Per-workspace access on a shared index set, enforced by the cluster: the security APIs' bodies (pure; the calls
that put, read and delete them are `security_admin.SecurityAdmin`).

A grant of workspace W of set S is one role per access level, `reme-es-S-W` (read) and `reme-es-write.S-W` (read and
write documents), each mapped to its own users and backend roles, so granting one user a level never changes another
user's (a `.` no set name has keeps the write role apart from any read role). A role is mapped to users and backend
roles (OpenSearch: `_plugins/_security/api/roles|rolesmapping`; Elasticsearch: `_security/role|role_mapping`, and
the roles of a native user). The role reads S's four indices through document-level security: a query on the
`workspace` field, term W. The engine adds it to every read of those indices (search, get and `_mget`, `_msearch`,
count, scroll), so the grantee never reads another workspace's documents, whatever key it asks for.

Document-level security does not confine writes (both engines' documentation say so): a role that may index or
delete in S may do it to any workspace's documents by id. So a grant is read-only unless `write` is asked, and a
write grant gives document writes only (index, delete, bulk): never creating, deleting, re-mapping or merging the
set's indices, which stay with the admin. The write boundary is the set; reads are private per workspace.

A grant of Memorie tenant T of Memorie index prefix P (`reme-es access grant --memorie-tenant`) is the same machinery
on Memorie's three indices, `P-memorie-memories|vectors|relations` (aliases over versioned indices, `...-v<n>`; the
role names both): one role, `reme-es-memorie.P.T` (a `.` no set name or workspace key has, so the two kinds of role
never share a name), whose query is one bool/should over the three kinds' clauses: a memory whose `tenant_id` is T,
a vector whose metadata holds `tenantId` T (`meta_kv`, as Memorie's `forgetQuery` matches it; `has_meta` keeps a
memory's own metadata out, which may hold a `tenantId` key of any value), a relation with either end in T (the scope
of Memorie's `forget`: a relation between two tenants' memories is read by both). A term on a field an index lacks
matches nothing there. Writes follow the workspace policy: the prefix is the write boundary.

Elasticsearch offers document-level security with a platinum, enterprise or trial licence only
(`check_licence`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import ClassVar

from ..core.checks import validate_prefix, validate_workspace_key
from ..core.errors import CapabilityError, ConfigError
from .scope import WORKSPACE_FIELD
from .templates import SET_KINDS

ROLE_PREFIX = "reme-es-"  # every role (and role mapping) `reme-es access` makes starts with it
DLS_LICENCES = ("platinum", "enterprise", "trial")  # Elasticsearch licences with document-level security
MEMORIE_ROLE_PREFIX = f"{ROLE_PREFIX}memorie."  # a Memorie tenant's grant: `reme-es-memorie.<prefix>.<tenant>`
MEMORIE_KINDS = ("memories", "vectors", "relations")  # `<prefix>-memorie-<kind>` (memorie/src/dialect.ts indexNames)
META_SEP = "\u001f"  # between a metadata key and its value's canonical JSON in `meta_kv` (memorie/src/metadata.ts)
# A tenant id a grant may name: it is part of the role's name, which is part of a URL path.
_TENANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")

WRITE_ROLE_PREFIX = f"{ROLE_PREFIX}write."  # the read+write level's role: `reme-es-write.<the read role's rest>`
# The document reads a grantee's store makes, by action name (both engines), instead of the `read` group: the group
# also holds term vectors (`_termvectors`/`_mtermvectors`: with `term_statistics` they count every workspace's terms,
# measured on both engines) and `_explain`. Search itself (suggesters, significant_text, BM25 statistics) still
# reads the whole shard's term statistics: docs/GUARANTEES.md names them and the strict workspaces that close them.
DOC_READ_ACTIONS = [
    "indices:data/read/search*",  # search, count, knn; their shard phases
    "indices:data/read/msearch*",
    "indices:data/read/get*",
    "indices:data/read/mget*",
    "indices:data/read/scroll*",
    "indices:data/read/field_caps*",
]
# OpenSearch security: what a grantee's store needs beyond document reads (connect: node info, the cluster UUID,
# the analyzer probe; reading the hybrid search pipeline the admin put). No cluster write action of any kind: a
# grantee's store opens on the admin's pipeline and never puts one (store/indices.py `ensure_pipeline`).
OS_CLUSTER_READ = [
    "indices:data/read/msearch*",  # _msearch (a cluster action too)
    "indices:data/read/mget*",
    "indices:data/read/scroll*",  # scroll and clear scroll
    "cluster_monitor",  # node info (probe), cluster state (the cluster UUID)
    "cluster:admin/search/pipeline/get",  # the admin's hybrid pipeline, read at connect
]
OS_CLUSTER_WRITE = ["indices:data/write/bulk"]
# No index stats (`indices:monitor/stats`): they count every workspace's documents.
OS_INDEX_READ = [*DOC_READ_ACTIONS, "indices:admin/mappings/get", "indices:admin/refresh*"]
# Document writes only: the bulk's shard requests and its index/create/delete items. Update (a vector set in place)
# is refused by OpenSearch for any role under document-level security.
OS_INDEX_WRITE = ["indices:data/write/index", "indices:data/write/delete", "indices:data/write/bulk*"]
# Checked against every index, whatever the call names: the analyzer probe and the alias look-up.
OS_ANY_INDEX = ["indices:admin/analyze", "indices:admin/aliases/get"]

ES_CLUSTER = ["monitor", "cluster:admin/analyze"]
ES_INDEX_READ = [*DOC_READ_ACTIONS, "view_index_metadata", "indices:admin/refresh*"]
# Document writes only, by action name: the named privileges `index`, `create`, `create_doc` and `write` also let
# their holder put mappings on indices and aliases (Elasticsearch keeps that for old clients; measured on 9.3: a
# grantee added a field to the set's mapping). The set's mappings are strict, so no dynamic update is needed. Update
# is refused by Elasticsearch under document-level security whatever the privileges.
ES_INDEX_WRITE = ["indices:data/write/index*", "indices:data/write/delete*", "indices:data/write/bulk*"]


def validate_tenant(tenant: object) -> str:
    """Refuse a Memorie tenant id a grant cannot name: 1-128 letters, digits, '.', '_', '@' and '-', starting with a
    letter or digit (it becomes part of the role's name)."""
    if not isinstance(tenant, str) or not _TENANT_RE.fullmatch(tenant):
        raise ConfigError(
            f"Memorie tenant {tenant!r} cannot be granted: use 1-128 characters of letters, digits, '.', '_', '@' "
            "and '-', starting with a letter or digit"
        )
    return tenant


@dataclass(frozen=True)
class Workspace:
    """What a grant confines reads to: one workspace of a ReMe index set (the `workspace` field of its four
    indices)."""

    prefix: str
    key: str
    kind: ClassVar[str] = "workspace"

    def __post_init__(self) -> None:
        validate_prefix(self.prefix)
        validate_workspace_key(self.key)

    @property
    def role(self) -> str:
        """The role (and role mapping) of the read grant."""
        return role_name(self.prefix, self.key)

    def role_for(self, write: bool) -> str:
        """The role of the grant's level: read (`role`), or read+write (`reme-es-write.<set>-<workspace>`)."""
        return write_role(self.role) if write else self.role

    def indices(self) -> list[str]:
        """The index names (aliases and concrete indices) the role reads through its query."""
        return set_indices(self.prefix)

    def query(self) -> dict:
        """The document-level security query."""
        return dls_query(self.key)

    def described(self) -> str:
        """What is granted, for the role's description."""
        return f"workspace {self.key} of index set {self.prefix}"


@dataclass(frozen=True)
class MemorieTenant:
    """What a grant confines reads to: one tenant of a Memorie index prefix (its three indices; module docstring)."""

    prefix: str
    key: str
    kind: ClassVar[str] = "memorie_tenant"

    def __post_init__(self) -> None:
        validate_prefix(self.prefix)
        validate_tenant(self.key)

    @property
    def role(self) -> str:
        """The role (and role mapping) of the read grant: `reme-es-memorie.<prefix>.<tenant>`."""
        return f"{MEMORIE_ROLE_PREFIX}{self.prefix}.{self.key}"

    def role_for(self, write: bool) -> str:
        """The role of the grant's level: read (`role`), or read+write (`reme-es-write.memorie.<prefix>.<tenant>`)."""
        return write_role(self.role) if write else self.role

    def indices(self) -> list[str]:
        """Memorie's three aliases and their versioned indices (`<alias>-v<n>`), and no other prefix's."""
        return [
            n for kind in MEMORIE_KINDS for n in (f"{self.prefix}-memorie-{kind}", f"{self.prefix}-memorie-{kind}-v*")
        ]

    def query(self) -> dict:
        """The tenant's memories, vectors and relations (either end) as one query over the three indices."""
        return memorie_dls_query(self.key)

    def described(self) -> str:
        """What is granted, for the role's description."""
        return f"Memorie tenant {self.key} of index prefix {self.prefix}"


Target = Workspace | MemorieTenant


@dataclass
class Grant:
    """One workspace of one set, or one Memorie tenant of one prefix (`memorie_tenant`, `workspace` None), granted to
    users and backend roles (Elasticsearch: groups), through `role`."""

    role: str
    prefix: str
    workspace: str | None
    write: bool
    users: list[str] = field(default_factory=list)
    backend_roles: list[str] = field(default_factory=list)
    memorie_tenant: str | None = None

    @classmethod
    def of(cls, target: Target, write: bool, users: list[str], backend_roles: list[str]) -> Grant:
        """The grant of `target` to these users and backend roles."""
        tenant = target.key if isinstance(target, MemorieTenant) else None
        workspace = target.key if isinstance(target, Workspace) else None
        return cls(target.role_for(write), target.prefix, workspace, write, users, backend_roles, tenant)


def write_role(read_role: str) -> str:
    """The read+write level's role beside a read role: `reme-es-write.` and the read role's name after `reme-es-`."""
    return WRITE_ROLE_PREFIX + read_role.removeprefix(ROLE_PREFIX)


def _named(name: str, target: Target, write: bool) -> bool:
    """Whether a role named `name` is `target`'s grant at this level (a role of one level for both, made before the
    levels had roles of their own, keeps the read role's name)."""
    return name in (target.role_for(write), target.role)


def role_name(prefix: str, workspace: str) -> str:
    """The role (and role mapping) that grants `workspace` of set `prefix`: `reme-es-<set>-<workspace>`."""
    return f"{ROLE_PREFIX}{validate_prefix(prefix)}-{validate_workspace_key(workspace)}"


def set_indices(prefix: str) -> list[str]:
    """The names a grant covers: the set's four aliases and their concrete indices (`<set>-<kind>-<n>`), and no
    other set's (a pattern `<set>-*` would also cover a set named `<set>-x`)."""
    return [name for kind in SET_KINDS for name in (f"{prefix}-{kind}", f"{prefix}-{kind}-*")]


def dls_query(workspace: str) -> dict:
    """The document-level security query of a grant: the workspace's documents only."""
    return {"term": {WORKSPACE_FIELD: validate_workspace_key(workspace)}}


def memorie_dls_query(tenant: str) -> dict:
    """The document-level security query of a Memorie tenant's grant, one clause per kind of index (a term on a field
    an index lacks matches nothing there): memories by `tenant_id`; vectors by the `tenantId` metadata Memorie's
    engine writes (`has_meta` as well: memories index their metadata in `meta_kv` too); relations by either end. The
    clauses are the stores' own (memorie/test/access-query.test.ts compares them with the golden roles)."""
    tenant = validate_tenant(tenant)
    vector = [{"term": {"meta_kv": f"tenantId{META_SEP}{json.dumps(tenant)}"}}, {"term": {"has_meta": True}}]
    return {
        "bool": {
            "should": [
                {"term": {"tenant_id": tenant}},
                {"bool": {"filter": vector}},
                {"term": {"from_tenant_id": tenant}},
                {"term": {"to_tenant_id": tenant}},
            ],
            "minimum_should_match": 1,
        }
    }


def _description(target: Target, write: bool) -> str:
    access = "reads and writes documents of" if write else "reads"
    return f"reme-es access: {access} {target.described()} (document-level security)"


# ------------------------------------------------------------------------------------------------- OpenSearch
def opensearch_role(target: Target, write: bool = False) -> dict:
    """The body of `PUT _plugins/_security/api/roles/<role>`: the target's indices read through its DLS query (the
    query is a string in this API), plus document writes when `write`."""
    actions = OS_INDEX_READ + (OS_INDEX_WRITE if write else [])
    return {
        "description": _description(target, write),
        "cluster_permissions": OS_CLUSTER_READ + (OS_CLUSTER_WRITE if write else []),
        "index_permissions": [
            {
                "index_patterns": target.indices(),
                "dls": json.dumps(target.query(), separators=(",", ":")),
                "allowed_actions": actions,
            },
            {"index_patterns": ["*"], "allowed_actions": OS_ANY_INDEX},
        ],
    }


def mapping_with(existing: dict | None, users: list[str], backend_roles: list[str]) -> dict:
    """The body of `PUT _plugins/_security/api/rolesmapping/<role>`: the mapping as stored (None: none yet) with
    `users` and `backend_roles` added."""
    existing = existing or {}
    return {
        "users": _merged(existing.get("users"), users),
        "backend_roles": _merged(existing.get("backend_roles"), backend_roles),
        "hosts": list(existing.get("hosts") or []),
    }


def mapping_without(existing: dict, users: list[str], backend_roles: list[str]) -> dict:
    """A stored role mapping with `users` and `backend_roles` taken out."""
    return {
        "users": [u for u in existing.get("users") or [] if u not in users],
        "backend_roles": [r for r in existing.get("backend_roles") or [] if r not in backend_roles],
        "hosts": list(existing.get("hosts") or []),
    }


def _merged(old: list[str] | None, new: list[str]) -> list[str]:
    return list(dict.fromkeys([*(old or []), *new]))


def _target_of_permission(perm: dict) -> Target | None:
    """The grant target an index permission `opensearch_role` made reads, or None."""
    try:
        query = json.loads(perm.get("dls") or "null")
        patterns = perm.get("index_patterns") or []
        if "term" in query:
            target: Target = Workspace(patterns[0].removesuffix(f"-{SET_KINDS[0]}"), query["term"][WORKSPACE_FIELD])
        else:
            tenant = query["bool"]["should"][0]["term"]["tenant_id"]
            target = MemorieTenant(patterns[0].removesuffix(f"-memorie-{MEMORIE_KINDS[0]}"), tenant)
    except (TypeError, KeyError, IndexError, ValueError, AttributeError, ConfigError):
        return None
    return target if target.indices() == patterns and target.query() == query else None


def grant_of_opensearch_role(name: str, role: dict) -> tuple[Target, bool] | None:
    """(target, write) of a role `reme-es access` made, read from its index permissions (which must be those the
    role's name stands for); None for any other role."""
    if not name.startswith(ROLE_PREFIX):
        return None
    for perm in role.get("index_permissions") or []:
        target = _target_of_permission(perm)
        write = "indices:data/write/index" in (perm.get("allowed_actions") or [])
        if target is not None and _named(name, target, write):
            return target, write
    return None


# ------------------------------------------------------------------------------------------------- Elasticsearch
def elasticsearch_role(target: Target, write: bool = False) -> dict:
    """The body of `PUT _security/role/<role>`: the target's indices read through its DLS query, plus document writes
    when `write`; its metadata names the target (read back by `target_of_elasticsearch_role`)."""
    return {
        "description": _description(target, write),
        "cluster": list(ES_CLUSTER),
        "indices": [
            {
                "names": target.indices(),
                "privileges": ES_INDEX_READ + (ES_INDEX_WRITE if write else []),
                "query": target.query(),
            }
        ],
        "metadata": {"reme_es": {"index_prefix": target.prefix, target.kind: target.key, "write": write}},
    }


def target_of_elasticsearch_role(name: str, role: dict) -> tuple[Target, bool] | None:
    """(target, write) of a role `elasticsearch_role` made, read from its metadata; None for any other role."""
    meta = (role.get("metadata") or {}).get("reme_es") or {}
    for kind in (Workspace, MemorieTenant):
        try:
            target: Target = kind(meta.get("index_prefix"), meta.get(kind.kind))  # type: ignore[arg-type]
        except ConfigError:
            continue
        if _named(name, target, bool(meta.get("write"))):
            return target, bool(meta.get("write"))
    return None


def elasticsearch_role_mapping(role: str, users: list[str], groups: list[str]) -> dict:
    """The body of `PUT _security/role_mapping/<role>`: users (by name) and groups of the realms that use role
    mappings (LDAP, SAML, PKI, JWT, ...). Native and file-realm users get the role in their own roles instead."""
    rules = [{"field": {"username": u}} for u in users] + [{"field": {"groups": g}} for g in groups]
    return {"enabled": True, "roles": [role], "rules": {"any": rules}, "metadata": {"reme_es": True}}


def mapped_of_elasticsearch(mapping: dict) -> tuple[list[str], list[str]]:
    """(users, groups) of a role mapping `elasticsearch_role_mapping` made."""
    users: list[str] = []
    groups: list[str] = []
    for rule in (mapping.get("rules") or {}).get("any") or []:
        one = rule.get("field") or {}
        for key, into in (("username", users), ("groups", groups)):
            value = one.get(key)
            into.extend(value if isinstance(value, list) else [value] if value else [])
    return users, groups


def check_licence(answer: dict) -> None:
    """Refuse (CapabilityError) an Elasticsearch licence without document-level security (`GET _license`)."""
    licence = answer.get("license") or {}
    kind, status = licence.get("type", "?"), licence.get("status", "?")
    if kind in DLS_LICENCES and status == "active":
        return
    raise CapabilityError(
        f"document-level security needs a platinum, enterprise or trial licence; this cluster's licence is {kind} "
        f"({status}). Nothing was granted. Start a 30-day trial with `POST _license/start_trial?acknowledge=true`, "
        "or install a licence that has it; on a basic licence, give each workspace an index set of its own "
        "(--index-prefix) and grant the set's indices instead"
    )
