"""The calls of per-workspace access (`reme-es access`): put, read and delete the roles and mappings `security`
builds, one role per target and access level, after checking that the cluster has a security plugin, that the set
(or Memorie prefix), the workspace (or tenant) and the users named exist; and who the caller is and which grants it
holds (`caller`), for the one-line refusal of a write its grant does not allow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.checks import validate_prefix
from ..core.errors import AuthError, BulkError, CapabilityError, ConfigError, IndexMissing, RequestFailed
from .security import (
    MEMORIE_KINDS,
    ROLE_PREFIX,
    WRITE_ROLE_PREFIX,
    Grant,
    MemorieTenant,
    Target,
    Workspace,
    _merged,
    check_licence,
    elasticsearch_role,
    elasticsearch_role_mapping,
    grant_of_opensearch_role,
    mapped_of_elasticsearch,
    mapping_with,
    mapping_without,
    opensearch_role,
    target_of_elasticsearch_role,
)

NO_SECURITY = (
    "this cluster has no security plugin: `reme-es access` needs the OpenSearch security plugin or Elasticsearch "
    "security. Nothing was changed"
)


@dataclass(frozen=True)
class Caller:
    """Who the credentials are and the `reme-es access` roles they hold (`roles`: every role the cluster gives)."""

    user: str
    roles: tuple[str, ...]

    def level(self, target: Target) -> str | None:
        """`read+write`, `read` or None: the caller's grant of `target`."""
        if target.role_for(True) in self.roles:
            return "read+write"
        return "read" if target.role in self.roles else None


async def caller(transport: Any, engine: str) -> Caller | None:
    """Who the transport's credentials are (None: the cluster has no security, or does not say)."""
    path = "/_security/_authenticate" if engine == "elasticsearch" else "/_plugins/_security/authinfo"
    try:
        me = await transport.request("GET", path) or {}
    except (RequestFailed, AuthError):
        return None
    return Caller(str(me.get("username") or me.get("user_name") or "?"), tuple(me.get("roles") or ()))


def refused_for_good(error: BaseException) -> str | None:
    """The cluster's reason when `error` is a refusal no retry mends (403, `security_exception`), else None."""
    if isinstance(error, AuthError) and error.status == 403:
        return str(error)
    if isinstance(error, RequestFailed) and error.type == "security_exception":
        return error.reason or str(error)
    if isinstance(error, BulkError) and error.failures:
        if all(f.status in (401, 403) or f.type == "security_exception" for f in error.failures):
            return f"{error.failures[0].status} {error.failures[0].reason}"
    return None


async def explain_refusal(transport: Any, engine: str, target: Target, error: BaseException) -> AuthError | None:
    """One line for a write the cluster refused for good, naming the caller's grant of `target` ("ana has read-only
    access to workspace X of index set S"); None when `error` is no such refusal or the cluster names no user."""
    reason = refused_for_good(error)
    me = await caller(transport, engine) if reason else None
    if reason is None or me is None:
        return None
    what, level = target.described(), me.level(target)
    if level == "read":
        return AuthError(
            f"{me.user} has read-only access to {what}: it may search it, not write it (the cluster answered 403). "
            "Nothing was written. An admin grants writes with `reme-es access grant --write`",
            status=403,
        )
    if level == "read+write":
        return AuthError(
            f"{me.user} has read+write access to {what}, and the cluster refused this write for good: {reason}. "
            "Document-level security refuses in-place updates; a document another grantee planted under this "
            "workspace's id needs the admin to delete it",
            status=403,
        )
    return AuthError(
        f"{me.user} holds no grant to write {what}: the cluster refused ({reason}). Nothing was written. Ask an "
        "admin for `reme-es access grant --write`, or use credentials that may write the set",
        status=403,
    )


class SecurityAdmin:
    """Grants of one set's workspaces on one cluster, through its security API (the caller closes the transport)."""

    def __init__(self, transport: Any, engine: str, prefix: str):
        self.transport, self.engine, self.prefix = transport, engine, validate_prefix(prefix)
        self.opensearch = engine != "elasticsearch"
        self.base = "/_plugins/_security/api" if self.opensearch else "/_security"
        self.roles_path = f"{self.base}/{'roles' if self.opensearch else 'role'}"
        self.mappings_path = f"{self.base}/{'rolesmapping' if self.opensearch else 'role_mapping'}"

    async def _get(self, path: str, params: dict | None = None) -> dict | None:
        try:
            return await self.transport.request("GET", path, None, params)
        except IndexMissing:
            raise
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

    async def check_security(self) -> None:
        """Refuse (CapabilityError, one line) a cluster without a security plugin."""
        path = "/_security/_authenticate" if not self.opensearch else "/_plugins/_security/authinfo"
        try:
            await self.transport.request("GET", path)
        except RequestFailed as exc:
            raise CapabilityError(NO_SECURITY) from exc

    async def check(self) -> None:
        """Refuse a cluster without security, or whose licence has no document-level security (Elasticsearch)."""
        await self.check_security()
        if not self.opensearch:
            check_licence(await self.transport.request("GET", "/_license"))

    async def check_target(self, target: Target) -> None:
        """Refuse (ConfigError) a grant of a set or workspace, or a Memorie prefix or tenant, that does not exist."""
        if isinstance(target, Workspace):
            index = f"{target.prefix}-workspaces"
            try:
                found = await self._get(f"/{index}/_doc/{target.key}", {"routing": target.key})
            except IndexMissing as exc:
                raise ConfigError(
                    f"index set {target.prefix} does not exist on this cluster ({index} is missing): nothing was "
                    "granted. Check --index-prefix, or sync a workspace into the set first"
                ) from exc
            if not (found or {}).get("found"):
                raise ConfigError(
                    f"workspace {target.key} is not recorded in index set {target.prefix}: nothing was granted. Check "
                    "the key (`reme-es status --workspaces` lists the set's), or sync the workspace first"
                )
            return
        index = f"{target.prefix}-memorie-{MEMORIE_KINDS[0]}"
        query = {"query": {"term": {"tenant_id": target.key}}}
        try:
            counted = await self.transport.request("POST", f"/{index}/_count", query)
        except IndexMissing as exc:
            raise ConfigError(
                f"Memorie stores of index prefix {target.prefix} do not exist on this cluster ({index} is missing): "
                "nothing was granted. Check --index-prefix"
            ) from exc
        if not counted.get("count"):
            raise ConfigError(
                f"Memorie tenant {target.key} has no memory in index prefix {target.prefix}: nothing was granted. "
                "Check the tenant id, or write its memories first"
            )

    async def check_users(self, users: list[str]) -> None:
        """Refuse (ConfigError) users the security plugin's own user store does not hold."""
        path = f"{self.base}/{'internalusers' if self.opensearch else 'user'}"
        unknown = [u for u in users if await self._get(f"{path}/{u}") is None]
        if unknown:
            raise ConfigError(
                f"user {', '.join(unknown)} is not known to this cluster's security plugin: nothing was granted. "
                "Create the user first, or, for a user of an external realm (LDAP, SAML, ...), pass "
                "--create-mapping-only to map the name anyway"
            )

    def workspace(self, key: str) -> Workspace:
        """Workspace `key` of this set, as a grant's target."""
        return Workspace(self.prefix, key)

    def memorie_tenant(self, tenant: str) -> MemorieTenant:
        """Memorie tenant `tenant` of this prefix (`<prefix>-memorie-*`), as a grant's target."""
        return MemorieTenant(self.prefix, tenant)

    async def grant(
        self, target: Target, users: list[str], backend_roles: list[str], write: bool, mapping_only: bool = False
    ) -> Grant:
        """Put the role of the target's level `write` and add the users and backend roles to its mapping; take them
        out of the other level's mapping (a user holds one level). Other users' grants are left as they are.
        `mapping_only`: users the security plugin does not hold are mapped by name (an external realm's)."""
        if not users and not backend_roles:
            raise ConfigError(f"name at least one --user or --backend-role to grant {target.described()} to")
        await self.check()
        await self._get(f"{self.roles_path}/{target.role}")  # a caller who may not administer security: 403 here
        await self.check_target(target)
        if not mapping_only:
            await self.check_users(users)
        await self._split_legacy(target)
        role = target.role_for(write)
        body = opensearch_role(target, write) if self.opensearch else elasticsearch_role(target, write)
        await self.transport.request("PUT", f"{self.roles_path}/{role}", body)
        mapped = await self._mapped(role)
        all_users, all_roles = _merged(mapped[0], users), _merged(mapped[1], backend_roles)
        await self._put_mapping(role, all_users, all_roles, add_native=users)
        await self._take_out(target.role_for(not write), users, backend_roles)
        return Grant.of(target, write, all_users, all_roles)

    async def _split_legacy(self, target: Target) -> None:
        """A read role that grants writes (made before the levels had roles of their own) becomes the write role,
        with its users, so that putting the read level's role takes no user's write away."""
        stored = (await self._get(f"{self.roles_path}/{target.role}") or {}).get(target.role)
        if stored is None:
            return
        found = (
            grant_of_opensearch_role(target.role, stored)
            if self.opensearch
            else target_of_elasticsearch_role(target.role, stored)
        )
        if found is None or not found[1]:
            return
        users, groups = await self._mapped(target.role)
        write = target.role_for(True)
        body = opensearch_role(target, True) if self.opensearch else elasticsearch_role(target, True)
        await self.transport.request("PUT", f"{self.roles_path}/{write}", body)
        await self._put_mapping(write, _merged((await self._mapped(write))[0], users), groups, add_native=users)
        await self._take_out(target.role, [], [])

    async def _mapped(self, role: str) -> tuple[list[str], list[str]]:
        """(users, backend roles) of a role's mapping ([] and []: none)."""
        stored = (await self._get(f"{self.mappings_path}/{role}") or {}).get(role) or {}
        if self.opensearch:
            return list(stored.get("users") or []), list(stored.get("backend_roles") or [])
        return mapped_of_elasticsearch(stored)

    async def _put_mapping(self, role: str, users: list[str], groups: list[str], add_native: list[str]) -> None:
        if self.opensearch:
            stored = (await self._get(f"{self.mappings_path}/{role}") or {}).get(role)
            body = mapping_with({**(stored or {}), "users": [], "backend_roles": []}, users, groups)
            await self.transport.request("PUT", f"{self.mappings_path}/{role}", body)
            return
        body = elasticsearch_role_mapping(role, users, groups)
        await self.transport.request("PUT", f"{self.mappings_path}/{role}", body)
        for user in add_native:  # a native user's roles are its own: role mappings do not reach it
            await self._native_roles(user, add=role)

    async def _take_out(self, role: str, users: list[str], backend_roles: list[str]) -> bool:
        """Take users and backend roles out of `role`'s mapping (none named: everyone); delete the role and its
        mapping when nobody is left. Whether anyone named was in it."""
        if await self._get(f"{self.roles_path}/{role}") is None:
            return False
        old_users, old_roles = await self._mapped(role)
        everyone = not users and not backend_roles
        gone_users = old_users if everyone else [u for u in old_users if u in users]
        gone_roles = old_roles if everyone else [r for r in old_roles if r in backend_roles]
        if not self.opensearch:
            for user in old_users if everyone else users:
                await self._native_roles(user, remove=role)
        left_users = [u for u in old_users if u not in gone_users]
        left_roles = [r for r in old_roles if r not in gone_roles]
        if not left_users and not left_roles:
            await self._delete(f"{self.mappings_path}/{role}")
            await self._delete(f"{self.roles_path}/{role}")
        elif gone_users or gone_roles:
            if self.opensearch:
                stored = (await self._get(f"{self.mappings_path}/{role}") or {}).get(role) or {}
                body = mapping_without(stored, gone_users, gone_roles)
                await self.transport.request("PUT", f"{self.mappings_path}/{role}", body)
            else:
                body = elasticsearch_role_mapping(role, left_users, left_roles)
                await self.transport.request("PUT", f"{self.mappings_path}/{role}", body)
        return bool(gone_users or gone_roles) or everyone

    async def _native_roles(self, user: str, add: str | None = None, remove: str | None = None) -> None:
        found = (await self._get(f"/_security/user/{user}") or {}).get(user)
        if not found:
            return  # not a native user: the role mapping reaches it
        roles = [r for r in found.get("roles") or [] if r != remove] + ([add] if add else [])
        body = {k: found[k] for k in ("full_name", "email", "metadata", "enabled") if found.get(k) is not None}
        await self.transport.request("PUT", f"/_security/user/{user}", {**body, "roles": _merged([], roles)})

    async def revoke(self, target: Target, users: list[str], backend_roles: list[str]) -> list[Grant]:
        """Take the users and backend roles out of the target's grants (both levels); with none named, delete them.
        Returns what is left. Refuses (ConfigError) a revoke that takes nothing away."""
        await self.check_security()
        before = [g for g in await self.list() if g.role in (target.role_for(False), target.role_for(True))]
        if not before:
            raise ConfigError(f"{target.described()} is granted to nobody: nothing was revoked")
        held = {u for g in before for u in g.users} | {f"backend role {r}" for g in before for r in g.backend_roles}
        named = set(users) | {f"backend role {r}" for r in backend_roles}
        if named and not named & held:
            who = ", ".join(sorted(users) + [f"backend role {r}" for r in sorted(backend_roles)])
            raise ConfigError(f"{who} holds no grant of {target.described()}: nothing was revoked")
        for grant in before:
            await self._take_out(grant.role, users, backend_roles)
        return [g for g in await self.list() if g.role in (target.role_for(False), target.role_for(True))]

    async def list(self) -> list[Grant]:
        """Every grant of this prefix, one per role (a target's read and read+write levels apart): its set's
        workspaces and its Memorie tenants."""
        await self.check_security()
        grants: list[Grant] = []
        roles = await self._get(self.roles_path) or {}
        mappings = await self._get(self.mappings_path) or {}
        for name, role in sorted(roles.items()):
            if not name.startswith((ROLE_PREFIX, WRITE_ROLE_PREFIX)):
                continue
            found = (
                grant_of_opensearch_role(name, role) if self.opensearch else target_of_elasticsearch_role(name, role)
            )
            if found is None or found[0].prefix != self.prefix:
                continue
            mapped = mappings.get(name) or {}
            if self.opensearch:
                users, backend_roles = list(mapped.get("users") or []), list(mapped.get("backend_roles") or [])
            else:
                users, backend_roles = mapped_of_elasticsearch(mapped)
            grant = Grant.of(found[0], found[1], users, backend_roles)
            grant.role = name  # a role of one level for both, made before the levels had roles of their own
            grants.append(grant)
        return grants
