"""Per-workspace access on a shared index set, enforced by the cluster: the security APIs' bodies (pure) and the
calls that put, read and delete them (`SecurityAdmin`).

A grant of workspace W of set S is one role, `reme-es-S-W`, and the mapping of that role to users and backend roles
(OpenSearch: `_plugins/_security/api/roles|rolesmapping`; Elasticsearch: `_security/role|role_mapping`, and the
roles of a native user). The role reads S's four indices through document-level security: a query on the
`workspace` field, term W. The engine adds it to every read of those indices (search, get and `_mget`, `_msearch`,
count, scroll), so the grantee never reads another workspace's documents, whatever key it asks for.

Document-level security does not confine writes (both engines' documentation say so): a role that may index or
delete in S may do it to any workspace's documents by id. So a grant is read-only unless `write` is asked, and a
write grant gives document writes only (index, delete, bulk): never creating, deleting, re-mapping or merging the
set's indices, which stay with the admin. The write boundary is the set; reads are private per workspace.

Elasticsearch offers document-level security with a platinum, enterprise or trial licence only
(`check_licence`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.checks import validate_prefix, validate_workspace_key
from ..core.errors import CapabilityError, ConfigError, RequestFailed
from .scope import WORKSPACE_FIELD
from .templates import SET_KINDS

ROLE_PREFIX = "reme-es-"  # every role (and role mapping) `reme-es access` makes starts with it
DLS_LICENCES = ("platinum", "enterprise", "trial")  # Elasticsearch licences with document-level security

# OpenSearch security: what a grantee's store needs beyond document reads (connect: node info, the cluster UUID,
# the analyzer probe; the hybrid search pipeline, put at connect where the set has vectors).
OS_CLUSTER_READ = [
    "cluster_composite_ops_ro",  # _mget, _msearch, scroll
    "cluster_monitor",  # node info (probe), cluster state (the cluster UUID)
    "cluster:admin/search/pipeline/put",  # the hybrid pipeline, put (idempotently) at connect
]
OS_CLUSTER_WRITE = ["indices:data/write/bulk"]
# No index stats (`indices:monitor/stats`): they count every workspace's documents.
OS_INDEX_READ = ["read", "indices:admin/mappings/get", "indices:admin/refresh*"]
# Document writes only: the bulk's shard requests and its index/create/delete items. Update (a vector set in place)
# is refused by OpenSearch for any role under document-level security.
OS_INDEX_WRITE = ["indices:data/write/index", "indices:data/write/delete", "indices:data/write/bulk*"]
# Checked against every index, whatever the call names: the analyzer probe and the alias look-up.
OS_ANY_INDEX = ["indices:admin/analyze", "indices:admin/aliases/get"]

ES_CLUSTER = ["monitor", "cluster:admin/analyze"]
ES_INDEX_READ = ["read", "view_index_metadata", "indices:admin/refresh*"]
# Document writes only, by action name: the named privileges `index`, `create`, `create_doc` and `write` also let
# their holder put mappings on indices and aliases (Elasticsearch keeps that for old clients; measured on 9.3: a
# grantee added a field to the set's mapping). The set's mappings are strict, so no dynamic update is needed. Update
# is refused by Elasticsearch under document-level security whatever the privileges.
ES_INDEX_WRITE = ["indices:data/write/index*", "indices:data/write/delete*", "indices:data/write/bulk*"]


@dataclass
class Grant:
    """One workspace of one set granted to users and backend roles (Elasticsearch: groups), through `role`."""

    role: str
    prefix: str
    workspace: str
    write: bool
    users: list[str] = field(default_factory=list)
    backend_roles: list[str] = field(default_factory=list)


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


def _description(prefix: str, workspace: str, write: bool) -> str:
    access = "reads and writes documents of" if write else "reads"
    return f"reme-es access: {access} workspace {workspace} of index set {prefix} (document-level security)"


# ------------------------------------------------------------------------------------------------- OpenSearch
def opensearch_role(prefix: str, workspace: str, write: bool = False) -> dict:
    """The body of `PUT _plugins/_security/api/roles/<role>`: the set's indices read through the workspace's DLS
    query (the query is a string in this API), plus document writes when `write`."""
    actions = OS_INDEX_READ + (OS_INDEX_WRITE if write else [])
    return {
        "description": _description(prefix, workspace, write),
        "cluster_permissions": OS_CLUSTER_READ + (OS_CLUSTER_WRITE if write else []),
        "index_permissions": [
            {
                "index_patterns": set_indices(prefix),
                "dls": json.dumps(dls_query(workspace), separators=(",", ":")),
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


def grant_of_opensearch_role(name: str, role: dict) -> tuple[str, str, bool] | None:
    """(set, workspace, write) of a role `reme-es access` made, read from its index permissions; None for any
    other role."""
    if not name.startswith(ROLE_PREFIX):
        return None
    for perm in role.get("index_permissions") or []:
        try:
            term = json.loads(perm.get("dls") or "null")["term"][WORKSPACE_FIELD]
        except (TypeError, KeyError, ValueError):
            continue
        patterns = perm.get("index_patterns") or []
        prefix = patterns[0].removesuffix(f"-{SET_KINDS[0]}") if patterns else ""
        if role_name_or_none(prefix, term) == name:
            return prefix, term, "indices:data/write/index" in (perm.get("allowed_actions") or [])
    return None


def role_name_or_none(prefix: str, workspace: object) -> str | None:
    """`role_name`, or None where the set or workspace is not a valid one (`workspace` as read back: any JSON value)."""
    if not isinstance(workspace, str):
        return None
    try:
        return role_name(prefix, workspace)
    except ConfigError:
        return None


# ------------------------------------------------------------------------------------------------- Elasticsearch
def elasticsearch_role(prefix: str, workspace: str, write: bool = False) -> dict:
    """The body of `PUT _security/role/<role>`: the set's indices read through the workspace's DLS query, plus
    document writes when `write`."""
    return {
        "description": _description(prefix, workspace, write),
        "cluster": list(ES_CLUSTER),
        "indices": [
            {
                "names": set_indices(prefix),
                "privileges": ES_INDEX_READ + (ES_INDEX_WRITE if write else []),
                "query": dls_query(workspace),
            }
        ],
        "metadata": {"reme_es": {"index_prefix": prefix, "workspace": workspace, "write": write}},
    }


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


# ------------------------------------------------------------------------------------------------- the calls
class SecurityAdmin:
    """Grants of one set's workspaces on one cluster, through its security API (the caller closes the transport)."""

    def __init__(self, transport: Any, engine: str, prefix: str):
        self.transport, self.engine, self.prefix = transport, engine, validate_prefix(prefix)
        self.opensearch = engine != "elasticsearch"

    async def _get(self, path: str) -> dict | None:
        try:
            return await self.transport.request("GET", path)
        except RequestFailed as exc:
            if exc.status == 404:
                return None
            raise

    async def _delete(self, path: str) -> bool:
        try:
            await self.transport.request("DELETE", path)
        except RequestFailed as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def check(self) -> None:
        """Refuse a cluster whose security or licence has no document-level security (Elasticsearch: the licence)."""
        if not self.opensearch:
            check_licence(await self.transport.request("GET", "/_license"))

    async def grant(self, workspace: str, users: list[str], backend_roles: list[str], write: bool) -> Grant:
        """Put the workspace's role (replacing an earlier one: `write` as now asked) and add the users and backend
        roles to its mapping."""
        if not users and not backend_roles:
            raise ConfigError("name at least one --user or --backend-role to grant the workspace to")
        await self.check()
        role = role_name(self.prefix, workspace)
        if self.opensearch:
            await self.transport.request(
                "PUT", f"/_plugins/_security/api/roles/{role}", opensearch_role(self.prefix, workspace, write)
            )
            stored = (await self._get(f"/_plugins/_security/api/rolesmapping/{role}") or {}).get(role)
            body = mapping_with(stored, users, backend_roles)
            await self.transport.request("PUT", f"/_plugins/_security/api/rolesmapping/{role}", body)
            return Grant(role, self.prefix, workspace, write, body["users"], body["backend_roles"])
        await self.transport.request(
            "PUT", f"/_security/role/{role}", elasticsearch_role(self.prefix, workspace, write)
        )
        stored = (await self._get(f"/_security/role_mapping/{role}") or {}).get(role) or {}
        old_users, old_groups = mapped_of_elasticsearch(stored)
        all_users, groups = _merged(old_users, users), _merged(old_groups, backend_roles)
        await self.transport.request(
            "PUT", f"/_security/role_mapping/{role}", elasticsearch_role_mapping(role, all_users, groups)
        )
        for user in users:  # a native user's roles are its own: role mappings do not reach it
            await self._native_roles(user, add=role)
        return Grant(role, self.prefix, workspace, write, all_users, groups)

    async def _native_roles(self, user: str, add: str | None = None, remove: str | None = None) -> None:
        found = (await self._get(f"/_security/user/{user}") or {}).get(user)
        if not found:
            return  # not a native user: the role mapping reaches it
        roles = [r for r in found.get("roles") or [] if r != remove] + ([add] if add else [])
        body = {k: found[k] for k in ("full_name", "email", "metadata", "enabled") if found.get(k) is not None}
        await self.transport.request("PUT", f"/_security/user/{user}", {**body, "roles": _merged([], roles)})

    async def revoke(self, workspace: str, users: list[str], backend_roles: list[str]) -> Grant | None:
        """Take the users and backend roles out of the workspace's grant; with none named, or none left, delete the
        role and its mapping. Returns what is left (None: the grant is gone, or never was)."""
        role = role_name(self.prefix, workspace)
        grants = {g.role: g for g in await self.list()}
        grant = grants.get(role)
        if grant is None:
            return None
        everyone = not users and not backend_roles
        left_users = [] if everyone else [u for u in grant.users if u not in users]
        left_roles = [] if everyone else [r for r in grant.backend_roles if r not in backend_roles]
        if not self.opensearch:
            for user in grant.users if everyone else users:
                await self._native_roles(user, remove=role)
        if not left_users and not left_roles:
            base = "/_plugins/_security/api" if self.opensearch else "/_security"
            await self._delete(f"{base}/{'rolesmapping' if self.opensearch else 'role_mapping'}/{role}")
            await self._delete(f"{base}/{'roles' if self.opensearch else 'role'}/{role}")
            return None
        if self.opensearch:
            stored = (await self._get(f"/_plugins/_security/api/rolesmapping/{role}") or {}).get(role) or {}
            body = mapping_without(stored, users, backend_roles)
            await self.transport.request("PUT", f"/_plugins/_security/api/rolesmapping/{role}", body)
        else:
            await self.transport.request(
                "PUT", f"/_security/role_mapping/{role}", elasticsearch_role_mapping(role, left_users, left_roles)
            )
        return Grant(role, self.prefix, workspace, grant.write, left_users, left_roles)

    async def list(self) -> list[Grant]:
        """Every grant of this set's workspaces, by role name."""
        grants: list[Grant] = []
        if self.opensearch:
            roles = await self.transport.request("GET", "/_plugins/_security/api/roles") or {}
            mappings = await self.transport.request("GET", "/_plugins/_security/api/rolesmapping") or {}
            for name, role in sorted(roles.items()):
                found = grant_of_opensearch_role(name, role)
                if found is None or found[0] != self.prefix:
                    continue
                mapped = mappings.get(name) or {}
                grants.append(
                    Grant(name, *found, list(mapped.get("users") or []), list(mapped.get("backend_roles") or []))
                )
            return grants
        roles = await self._get("/_security/role") or {}
        mappings = await self._get("/_security/role_mapping") or {}
        for name, role in sorted(roles.items()):
            meta = (role.get("metadata") or {}).get("reme_es") or {}
            if meta.get("index_prefix") != self.prefix or role_name_or_none(self.prefix, meta.get("workspace")) != name:
                continue
            users, groups = mapped_of_elasticsearch(mappings.get(name) or {})
            grants.append(Grant(name, self.prefix, meta["workspace"], bool(meta.get("write")), users, groups))
        return grants
