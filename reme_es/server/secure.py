"""A secured managed node: TLS on HTTP and transport, an admin user with a random password, the engine's security.

`reme-es server start --secure` (and `server cluster start --secure`) and the secured-node tests start through
`start`. What a secured node needs is made once, when the node is first started secured, and kept in the node
folder's `secret/` (mode 0700; the launcher hands the JVM its own copies in `config/`):

    secret/ca.crt           the CA that signed the node certificate: the client's `ca_certs`
    secret/admin.password   the admin's password (0600), printed once by `server start --secure`
    secret/security.json    the admin's name, the node settings and the config files (password hashes, not passwords)

Every later start of the node (`server start --name N`, with or without `--secure`) starts it with the same files.

Engines: OpenSearch through its security plugin (the `opensearch-2.19-security` and `opensearch-3.4-security`
flavours: internal users with bcrypt hashes made by the plugin's own Hasher, the admin mapped to `all_access`, the
security REST API open to it); Elasticsearch 9 with the security its distribution carries (file-realm users with
`{PBKDF2}` hashes, the admin a `superuser`) and the 30-day trial licence started once (document-level security,
which `reme-es access` needs, is not in the basic licence).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import ServerError
from . import certs, node
from .flavours import Flavour, get_flavour
from .info import NodeInfo, NodeSecurity, credentials, is_secured, node_dir, read_node, secret_dir
from .info import describe as describe  # `server status` and the cluster read it here
from .probe import _http_json
from .process import _keep_private

ADMIN = "admin"
# `--secure` with `--flavour F`: the secured flavour of F (OpenSearch needs its security plugin installed)
SECURED_FLAVOURS = {
    "opensearch-2.19": "opensearch-2.19-security",
    "opensearch-3": "opensearch-3.4-security",
    "elasticsearch-9": "elasticsearch-9",
}
DEFAULT_SECURED = "opensearch-2.19"  # k-NN and neural-search (hybrid) beside the security plugin


@dataclass(frozen=True)
class Extra:
    """Users and roles a secured node starts with besides its admin (the tests' prefix-limited writer): `users` name
    -> password, `roles` name -> the engine's role body, `members` role -> user names."""

    users: dict[str, str] = field(default_factory=dict)
    roles: dict[str, dict] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)


def secured_flavour(flavour: str | None) -> str:
    """The flavour `--secure` starts for `--flavour flavour` (None: the default)."""
    asked = flavour or DEFAULT_SECURED
    if asked in SECURED_FLAVOURS.values():
        return asked
    if asked not in SECURED_FLAVOURS:
        raise ServerError(f"no secured flavour of {asked!r}; choose one of {', '.join(SECURED_FLAVOURS)}")
    return SECURED_FLAVOURS[asked]


def start(
    flavour: str | None,
    name: str,
    http_port: int | None = None,
    heap: str = node.DEFAULT_HEAP,
    *,
    snapshot_repo: str | os.PathLike | None = None,
    settings: dict | None = None,
    admin_password: str | None = None,
    extra: Extra | None = None,
    trial: bool = True,
    timeout: float = node.START_TIMEOUT_S,
) -> NodeInfo:
    """Start node `name` secured (made so on its first start; later starts reuse its material) and wait for the
    admin's authenticated answer over TLS. `settings` are extra node settings (a cluster member's); `admin_password`
    and `extra` apply when the material is made (default: a random password, no other user). On Elasticsearch the
    trial licence is started once unless `trial` is False."""
    current = read_node(name)
    if not is_secured(name):
        if current is not None and (node_dir(name) / "data").is_dir() and any((node_dir(name) / "data").iterdir()):
            raise ServerError(
                f"node {name!r} holds the data of an unsecured node; start the secured node under another --name "
                f"(or remove {node_dir(name)} to start afresh: its indices are lost)"
            )
        wanted = get_flavour(secured_flavour(flavour))
        _make(wanted, name, admin_password or _password(), extra or Extra())
    kept = json.loads((secret_dir(name) / "security.json").read_text())
    if flavour is not None and secured_flavour(flavour) != kept["flavour"]:
        raise ServerError(f"node {name!r} is a secured {kept['flavour']} node; start it without --flavour")
    files = {rel: base64.b64decode(b64) for rel, b64 in kept["files"].items()}
    security = credentials(name)
    try:
        info = node.start(
            kept["flavour"],
            name=name,
            http_port=http_port,
            heap=heap,
            timeout=timeout,
            settings={**kept["settings"], **(settings or {})},
            config_files=files,
            security=security,
            snapshot_repo=snapshot_repo,
        )
    finally:
        _keep_private(secret_dir(name))  # the launch gave the node folder to the run user
    if info.engine == "elasticsearch" and trial:
        start_trial(info.url, security)
    return info


def share(flavour: str, names: list[str]) -> None:
    """Secured cluster members `names`: the first one's material (made now if missing) copied to each other one that
    has none, so that all present one certificate (the nodes' DN the security config names) and one admin password."""
    first = secret_dir(names[0])
    if not is_secured(names[0]):
        _make(get_flavour(secured_flavour(flavour)), names[0], _password(), Extra())
    for name in names[1:]:
        if not is_secured(name):
            secret_dir(name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(first, secret_dir(name), dirs_exist_ok=True)
            _keep_private(secret_dir(name))


def _password() -> str:
    """A random admin password with every character class (OpenSearch refuses weak passwords)."""
    return f"Rk{secrets.token_urlsafe(18)}-9q"


def _make(flavour: Flavour, name: str, password: str, extra: Extra) -> None:
    """Generate the TLS material and security config of a new secured node and keep them in `secret/`."""
    material = certs.generate(name)
    files = {
        "certs/ca.crt": material.ca_cert,
        "certs/node.crt": material.node_cert,
        "certs/node.key": material.node_key,
    }
    users = {ADMIN: password, **extra.users}
    if flavour.engine == "opensearch":
        settings = _opensearch(flavour, name, users, extra, files)
    else:
        settings = _elasticsearch(users, extra, files)
    folder = secret_dir(name)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    fd = os.open(folder / "admin.password", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    (folder / "ca.crt").write_bytes(material.ca_cert)
    kept = {
        "flavour": flavour.name,
        "admin": ADMIN,
        "settings": settings,
        "files": {rel: base64.b64encode(content).decode() for rel, content in files.items()},
    }
    fd = os.open(folder / "security.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(kept, fh, indent=2)


def _yml(kind: str, body: dict) -> bytes:
    return json.dumps({"_meta": {"type": kind, "config_version": 2}, **body}).encode()  # JSON is YAML


def _opensearch(flavour: Flavour, name: str, users: dict[str, str], extra: Extra, files: dict[str, bytes]) -> dict:
    """The security plugin's config files (into `files`) and the node settings."""
    home = node.install(flavour)
    hashes = dict(zip(users, _bcrypt(flavour, home, list(users.values())), strict=True))
    shipped = home / "plugins" / "opensearch-security" / "config"
    for shipped_file in ("action_groups.yml", "tenants.yml", "nodes_dn.yml", "allowlist.yml", "audit.yml"):
        files[f"opensearch-security/{shipped_file}"] = (shipped / shipped_file).read_bytes()
    basic = {
        "http_enabled": True,
        "transport_enabled": True,
        "order": 0,
        "http_authenticator": {"type": "basic", "challenge": True},
        "authentication_backend": {"type": "intern"},
    }
    files["opensearch-security/config.yml"] = _yml(
        "config", {"config": {"dynamic": {"http": {"anonymous_auth_enabled": False}, "authc": {"basic": basic}}}}
    )
    files["opensearch-security/internal_users.yml"] = _yml(
        "internalusers", {user: {"hash": h} for user, h in hashes.items()}
    )
    files["opensearch-security/roles.yml"] = _yml("roles", extra.roles)
    mapping = {"all_access": {"users": [ADMIN]}, **{r: {"users": u} for r, u in extra.members.items()}}
    files["opensearch-security/roles_mapping.yml"] = _yml("rolesmapping", mapping)
    pem = {
        "pemcert_filepath": "certs/node.crt",
        "pemkey_filepath": "certs/node.key",
        "pemtrustedcas_filepath": "certs/ca.crt",
    }
    settings = {
        "plugins.security.ssl.http.enabled": True,
        "plugins.security.ssl.transport.enforce_hostname_verification": False,
        "plugins.security.allow_default_init_securityindex": True,
        "plugins.security.nodes_dn": [f"CN={name}"],
        "plugins.security.authcz.admin_dn": ["CN=reme-es-admin"],
        "plugins.security.audit.type": "noop",
        # the security REST API (`reme-es access`: roles, role mappings, users) for the admin's all_access role
        "plugins.security.restapi.roles_enabled": ["all_access"],
    }
    for layer in ("http", "transport"):
        settings.update({f"plugins.security.ssl.{layer}.{k}": v for k, v in pem.items()})
    return settings


def _bcrypt(flavour: Flavour, home: Path, passwords: list[str]) -> list[str]:
    """bcrypt hashes made by the security plugin's Hasher tool (no bcrypt package needed)."""
    java, _ = node.find_java(flavour.java_min, flavour.java_max)
    plugin = home / "plugins" / "opensearch-security"
    classpath = f"{plugin}/*:{plugin}/deps/*:{home}/lib/*"
    out = []
    for password in passwords:
        proc = subprocess.run(
            [f"{java}/bin/java", "-cp", classpath, "org.opensearch.security.tools.Hasher", "-env", "REME_ES_PW"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "REME_ES_PW": password},
        )
        if proc.returncode != 0:
            raise ServerError(f"the security plugin's Hasher failed: {proc.stderr.strip()[-500:]}")
        out.append(proc.stdout.strip().splitlines()[-1])
    return out


def _pbkdf2(password: str, cost: int = 10000) -> str:
    """The file realm's `{PBKDF2}` hash: PBKDF2-HMAC-SHA512, 32-byte salt, 256-bit key, base64."""
    salt = os.urandom(32)
    key = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, cost, dklen=32)
    return f"{{PBKDF2}}{cost}${base64.b64encode(salt).decode()}${base64.b64encode(key).decode()}"


def _elasticsearch(users: dict[str, str], extra: Extra, files: dict[str, bytes]) -> dict:
    """File-realm users, roles and role members (into `files`) and the x-pack security settings."""
    files["users"] = "".join(f"{user}:{_pbkdf2(pw)}\n" for user, pw in users.items()).encode()
    members = {"superuser": [ADMIN], **extra.members}
    files["users_roles"] = "".join(f"{role}:{','.join(names)}\n" for role, names in members.items()).encode()
    files["roles.yml"] = json.dumps(extra.roles).encode()  # JSON is YAML
    tls = {"key": "certs/node.key", "certificate": "certs/node.crt", "certificate_authorities": ["certs/ca.crt"]}
    settings: dict = {"xpack.security.enabled": True}
    for layer in ("http", "transport"):
        settings[f"xpack.security.{layer}.ssl.enabled"] = True
        settings.update({f"xpack.security.{layer}.ssl.{k}": v for k, v in tls.items()})
    settings["xpack.security.transport.ssl.verification_mode"] = "certificate"
    return settings


def start_trial(url: str, security: NodeSecurity) -> None:
    """Start the 30-day trial licence (document-level security) of the Elasticsearch node at `url`, unless it has left
    basic already."""
    if _licence(url, security) != "basic":
        return
    token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
    request = urllib.request.Request(
        f"{url}/_license/start_trial?acknowledge=true", method="POST", headers={"Authorization": f"Basic {token}"}
    )  # no body: the API refuses one
    context = ssl.create_default_context(cafile=security.ca_certs)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        answer = {"status": exc.code, "error": exc.read().decode(errors="replace")[:500]}
    if not answer.get("trial_was_started"):
        raise ServerError(
            f"the trial licence of the secured node at {url} did not start ({answer}); document-level security "
            "(`reme-es access grant`) needs it: POST _license/start_trial?acknowledge=true"
        )


def _licence(url: str, security: NodeSecurity, timeout: float = 60.0) -> str:
    """The node's licence type; a new cluster answers 404 until it has generated its basic licence: wait for it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _http_json(f"{url}/_license", security=security)["license"]["type"]
        except urllib.error.HTTPError as exc:
            if exc.code != 404 or time.monotonic() > deadline:
                raise
        time.sleep(0.5)
